"""Constants and fused groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    FloatTensor,
    GraphOp,
    PatternKind,
)


@irdl_op_definition
class ConstantOp(GraphOp):
    """A tensor constant, typically a weight.

    The value is a dense elements attribute whose type is the result type.

        %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    """

    name = "graph.constant"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(FloatTensor)

    traits = traits_def(ConstantLike(), Pure())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("'graph.constant' expects a dense elements attribute", pos)
        op = cls(value)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def from_array(array: np.ndarray, element_type: Attribute | None = None) -> ConstantOp:
        from strato.dialects.tensor_types import dense_from_array

        return ConstantOp(dense_from_array(array, element_type))

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(
                f"'graph.constant' value type {self.value.type} differs from result "
                f"type {self.result.type}"
            )
        super().verify_()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        from strato.dialects.tensor_types import array_from_dense

        return [array_from_dense(self.value)]




def _region_ops() -> tuple[type[Operation], ...]:
    from strato.dialects.graph.control import IfOp, LoopOp, ScanOp

    return (IfOp, LoopOp, ScanOp)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends the body of a `graph.fused` group, a region of `graph.if` or the body of
    `graph.loop` or `graph.scan`, with the tensors it gives.

        graph.yield %r : tensor<1x10xf32>
    """

    name = "graph.yield"

    values = var_operand_def(FloatTensor)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp, *_region_ops()), Pure()))
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, values: Sequence[SSAValue | Operation]):
        super().__init__(operands=[values])


@irdl_op_definition
class FusedOp(GraphOp):
    """A group of graph ops that becomes one kernel. The body's arguments are bound to
    the operands; `graph.yield` gives the results. `kind` is the pattern kind of the
    group (that of its anchor op) and `label` a readable name for the kernel.

        %r = graph.fused "dense_relu" out_elemwise_fusable (%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32> {
        ^bb0(%a: tensor<1x4xf32>, %b: tensor<2x4xf32>):
          %y = graph.dense %a, %b : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
          %z = graph.relu %y : tensor<1x2xf32>
          graph.yield %z : tensor<1x2xf32>
        }
    """

    name = "graph.fused"
    # its body's ops check their own dimensions
    RUN_TIME_DIMS: ClassVar[bool] = True

    inputs = var_operand_def(FloatTensor)
    outputs = var_result_def(FloatTensor)
    label = prop_def(StringAttr)
    kind = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())

    def __init__(
        self,
        label: str,
        kind: PatternKind,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"label": StringAttr(label), "kind": StringAttr(kind.value)},
            regions=[body],
        )

    @property
    def pattern_kind(self) -> PatternKind:
        return PatternKind(self.kind.data)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        from strato.dialects.graph.dims import fused_dim_sources

        return fused_dim_sources(self)

    def run_time_dim_sums(self) -> dict[tuple[int, int], tuple[list[tuple[int, int]], int]]:
        from strato.dialects.graph.dims import fused_dim_sums

        return fused_dim_sums(self)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        env: dict[SSAValue, np.ndarray] = dict(zip(self.body.block.args, inputs))
        for op in self.body.block.ops:
            if isinstance(op, YieldOp):
                return [env[v] for v in op.values]
            assert isinstance(op, GraphOp), op.name
            for result, value in zip(op.results, op.evaluate([env[v] for v in op.operands])):
                env[result] = value
        raise AssertionError("graph.fused body without graph.yield")

    @property
    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    def verify_(self) -> None:
        try:
            PatternKind(self.kind.data)
        except ValueError:
            raise VerifyException(
                f"'graph.fused' kind '{self.kind.data}' is not a pattern kind"
            ) from None
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.inputs]:
            raise VerifyException(
                "'graph.fused' body argument types must match the operand types"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("'graph.fused' body must end with graph.yield")
        if [v.type for v in last.values] != [r.type for r in self.outputs]:
            raise VerifyException(
                "'graph.fused' yielded types must match the result types"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.label.data)
        printer.print_string(f" {self.kind.data} (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type(
            [o.type for o in self.inputs], [r.type for r in self.outputs]
        )
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        label = parser.parse_str_literal("group label")
        kind = parser.parse_str_enum(PatternKind)
        pos = parser.pos
        operands = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = parser.resolve_operands(operands, function_type.inputs.data, pos)
        body = parser.parse_region()
        op = cls(label, kind, inputs, function_type.outputs.data, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


OPS = (ConstantOp, FusedOp, YieldOp,)

__all__ = ["ConstantOp", "FusedOp", "YieldOp"]
