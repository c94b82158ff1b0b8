"""The `graph` dialect: deep-learning operators on ranked tensors with value semantics.

Every operator declares its fusion pattern kind (`PatternKind`), which the fusion pass
reads to decide what may be merged into one kernel, and knows its own reference
semantics in numpy (`evaluate`), which the graph interpreter and the constant folder use.

Operators are built from a few families so that adding one is a few lines:

- `UnaryElementwiseOp`: one tensor in, same type out (relu, ...);
- `BroadcastBinaryOp`: two tensors in, numpy broadcasting (add, mul, ...);
- dedicated classes where the shape rule is special (matmul, dense, ...).

Example:

    func.func @mlp(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
      %w = graph.constant dense<0.5> : tensor<2x4xf32>
      %b = graph.constant dense<0.1> : tensor<2xf32>
      %y = graph.dense %x, %w, %b : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<1x2xf32>
      %r = graph.relu %y : tensor<1x2xf32>
      func.return %r : tensor<1x2xf32>
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar

import numpy as np

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
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
    NoMemoryEffect,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from strato.dialects.tensor_types import numpy_dtype, tensor_type_like


class PatternKind(StrEnum):
    """How an operator may take part in fusion (the four kinds of the TVM paper, plus opaque).

    - injective: each output element depends on one input element (add, relu, reshape);
    - broadcast: injective with broadcasting of some inputs (bias add);
    - reduction: reduces along axes (sum, max pooling);
    - out_elemwise_fusable: complex-out-fusable, element-wise ops may fuse into its
      output (conv2d, dense, matmul);
    - opaque: never fused (sort, lstm).
    """

    INJECTIVE = "injective"
    BROADCAST = "broadcast"
    REDUCTION = "reduction"
    OUT_ELEMWISE_FUSABLE = "out_elemwise_fusable"
    OPAQUE = "opaque"


def pattern_kind_of(op: Operation) -> PatternKind:
    """The fusion pattern kind of `op`; ops that do not declare one are opaque."""
    if isinstance(op, GraphOp):
        return op.PATTERN_KIND
    return PatternKind.OPAQUE


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    """The numpy broadcast of two static shapes, or None when they do not broadcast."""
    result: list[int] = []
    for i in range(1, max(len(lhs), len(rhs)) + 1):
        a = lhs[-i] if i <= len(lhs) else 1
        b = rhs[-i] if i <= len(rhs) else 1
        if a != b and a != 1 and b != 1:
            return None
        result.append(a if b == 1 else b)
    return tuple(reversed(result))


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


FloatTensor = base(TensorType)


class GraphOp(IRDLOperation):
    """Base of every graph operator.

    Subclasses set `PATTERN_KIND` and implement `evaluate`, the operator's reference
    semantics on numpy arrays. Shape rules live in `infer_shape` so the verifier, the
    builders and the importer share one definition.
    """

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError(f"{self.name} has no reference semantics")

    def infer_shape(self) -> tuple[int, ...] | None:
        """The result shape implied by the operands, or None where it is not defined."""
        return None

    def verify_(self) -> None:
        for operand in self.operands:
            if not isinstance(operand.type, TensorType) or not isinstance(
                operand.type.element_type, AnyFloat
            ):
                raise VerifyException(
                    f"'{self.name}' expects float tensors, got {operand.type}"
                )
        for result in self.results:
            self._check_static(result.type)
        for operand in self.operands:
            self._check_static(operand.type)
        if not self.results:
            return
        result_type = self.results[0].type
        assert isinstance(result_type, TensorType)
        for operand in self.operands:
            assert isinstance(operand.type, TensorType)
            if operand.type.element_type != result_type.element_type:
                raise VerifyException(
                    f"'{self.name}' operand element type {operand.type.element_type} "
                    f"differs from result element type {result_type.element_type}"
                )
        expected = self.infer_shape()
        if expected is not None and tuple(expected) != result_type.get_shape():
            raise VerifyException(
                f"'{self.name}' result shape {list(result_type.get_shape())} does not "
                f"match the inferred shape {list(expected)}"
            )

    def _check_static(self, type_: Attribute) -> None:
        assert isinstance(type_, TensorType)
        if any(dim < 0 for dim in type_.get_shape()):
            raise VerifyException(f"'{self.name}' requires static shapes, got {type_}")


# ---------------------------------------------------------------------------
# constant
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# element-wise families
# ---------------------------------------------------------------------------


class UnaryElementwiseOp(GraphOp):
    """One tensor in, a tensor of the same type out, element by element."""

    T: ClassVar = VarConstraint("T", FloatTensor)
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[SSAValue.get(input).type])

    def infer_shape(self) -> tuple[int, ...] | None:
        return _shape(self.input)


class BroadcastBinaryOp(GraphOp):
    """Two tensors in, combined element by element with numpy broadcasting."""

    lhs = operand_def(FloatTensor)
    rhs = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.BROADCAST

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = broadcast_shapes(_shape(lhs), _shape(rhs))
        if shape is None:
            raise ValueError(f"shapes {lhs.type} and {rhs.type} do not broadcast")
        super().__init__(
            operands=[lhs, rhs], result_types=[tensor_type_like(lhs.type, shape)]
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = broadcast_shapes(_shape(self.lhs), _shape(self.rhs))
        if shape is None:
            raise VerifyException(
                f"'{self.name}' operand shapes {list(_shape(self.lhs))} and "
                f"{list(_shape(self.rhs))} do not broadcast"
            )
        return shape

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        dtype = numpy_dtype(self.result.type)
        return [np.asarray(self.compute(inputs[0], inputs[1]), dtype=dtype)]

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@irdl_op_definition
class AddOp(BroadcastBinaryOp):
    """Element-wise sum with numpy broadcasting: result[i] = lhs[i'] + rhs[i''].

        %r = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.add"

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs + rhs


@irdl_op_definition
class MulOp(BroadcastBinaryOp):
    """Element-wise product with numpy broadcasting: result[i] = lhs[i'] * rhs[i''].

        %r = graph.mul %a, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.mul"

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs * rhs


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """Rectified linear unit: result[i] = max(input[i], 0).

        %r = graph.relu %a : tensor<4x8xf32>
    """

    name = "graph.relu"

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.maximum(inputs[0], 0).astype(inputs[0].dtype)]


# ---------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permutes dimensions: result.shape[d] = input.shape[perm[d]], and
    result[i_0, .., i_n] = input[j] with j[perm[d]] = i_d.

        %t = graph.transpose %a [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

    name = "graph.transpose"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE

    input = operand_def(FloatTensor)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input $perm attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, perm: Sequence[int]):
        input = SSAValue.get(input)
        shape = _shape(input)
        super().__init__(
            operands=[input],
            properties={"perm": DenseArrayBase.from_list(i64, list(perm))},
            result_types=[tensor_type_like(input.type, [shape[p] for p in perm])],
        )

    @property
    def permutation(self) -> tuple[int, ...]:
        return tuple(self.perm.get_values())

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = _shape(self.input)
        perm = self.permutation
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(
                f"'graph.transpose' perm {list(perm)} is not a permutation of "
                f"{len(shape)} dimensions"
            )
        return tuple(shape[p] for p in perm)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.transpose(inputs[0], self.permutation))]


# ---------------------------------------------------------------------------
# linear algebra
# ---------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(GraphOp):
    """Matrix product with numpy `matmul` semantics on tensors of rank >= 2.

    The last two dimensions are multiplied, [.., M, K] x [.., K, N] -> [.., M, N];
    leading (batch) dimensions broadcast.

        %c = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    """

    name = "graph.matmul"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    lhs = operand_def(FloatTensor)
    rhs = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = matmul_shape(_shape(lhs), _shape(rhs))
        if shape is None:
            raise ValueError(f"cannot multiply {lhs.type} by {rhs.type}")
        super().__init__(
            operands=[lhs, rhs], result_types=[tensor_type_like(lhs.type, shape)]
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        lhs, rhs = _shape(self.lhs), _shape(self.rhs)
        if len(lhs) < 2 or len(rhs) < 2:
            raise VerifyException("'graph.matmul' operands must have rank >= 2")
        if lhs[-1] != rhs[-2]:
            raise VerifyException(
                f"'graph.matmul' contraction dimensions differ: {lhs[-1]} and {rhs[-2]}"
            )
        shape = matmul_shape(lhs, rhs)
        if shape is None:
            raise VerifyException(
                f"'graph.matmul' batch dimensions {list(lhs[:-2])} and "
                f"{list(rhs[:-2])} do not broadcast"
            )
        return shape

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.matmul(inputs[0], inputs[1]).astype(inputs[0].dtype)]


def matmul_shape(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    if len(lhs) < 2 or len(rhs) < 2 or lhs[-1] != rhs[-2]:
        return None
    batch = broadcast_shapes(lhs[:-2], rhs[:-2])
    if batch is None:
        return None
    return (*batch, lhs[-2], rhs[-1])


@irdl_op_definition
class DenseOp(GraphOp):
    """Fully connected layer: result = input x weight^T (+ bias).

    input is [.., K], weight is [N, K] (one row per output unit), the optional bias
    is [N]; the result is [.., N]:
    result[.., n] = sum_k input[.., k] * weight[n, k] + bias[n].

        %y = graph.dense %x, %w, %b : (tensor<1x784xf32>, tensor<10x784xf32>, tensor<10xf32>) -> tensor<1x10xf32>
    """

    name = "graph.dense"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    input = operand_def(FloatTensor)
    weight = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        shape = (*_shape(input)[:-1], _shape(weight)[0])
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[tensor_type_like(input.type, shape)],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        x, w = _shape(self.input), _shape(self.weight)
        if len(x) < 1:
            raise VerifyException("'graph.dense' input must have rank >= 1")
        if len(w) != 2:
            raise VerifyException(
                f"'graph.dense' weight must have rank 2, got rank {len(w)}"
            )
        if x[-1] != w[1]:
            raise VerifyException(
                f"'graph.dense' input features {x[-1]} differ from weight features {w[1]}"
            )
        if self.bias is not None and _shape(self.bias) != (w[0],):
            raise VerifyException(
                f"'graph.dense' bias must have shape [{w[0]}], got {list(_shape(self.bias))}"
            )
        return (*x[:-1], w[0])

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = np.matmul(inputs[0], inputs[1].T)
        if len(inputs) > 2:
            out = out + inputs[2]
        return [out.astype(inputs[0].dtype)]


# ---------------------------------------------------------------------------
# fused groups
# ---------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends the body of a `graph.fused` group with the tensors the group returns.

        graph.yield %r : tensor<1x10xf32>
    """

    name = "graph.yield"

    values = var_operand_def(FloatTensor)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp), Pure()))
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


Graph = Dialect(
    "graph",
    [ConstantOp, AddOp, MulOp, ReluOp, TransposeOp, MatmulOp, DenseOp, FusedOp, YieldOp],
    [],
)
