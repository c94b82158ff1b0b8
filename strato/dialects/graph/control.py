"""Control flow compiled with the model: `graph.if`, `graph.loop` and `graph.scan`, and
the calls they are outlined to.

`graph.if` runs one of two regions by a boolean condition known only when the model
runs (one element, of any shape). Each region ends with `graph.yield` of the values the
op returns; both give the same types and static shapes. The regions read the enclosing
function's values directly, as `scf.if`'s do:

    %r = graph.if %c -> (tensor<4xf32>) {
      %a = graph.relu %x : tensor<4xf32>
      graph.yield %a : tensor<4xf32>
    } else {
      graph.yield %x : tensor<4xf32>
    }

Only the region the condition takes runs, so a region may hold what would fault on the
other's data (a gather at positions only valid when the condition holds), and a costly
region costs nothing when it is not taken.

graph-outline-branches moves each region into a private function of its own (the values
it reads from outside become the function's arguments, constants are copied in) and
replaces the op by `graph.cond_call`, which every later pass treats as one opaque op:
the branch functions are planned, fused and lowered like any function, and the call
writes the taken function's results into the buffers the caller planned for them.

    %r = graph.cond_call %c, @main_if0_then, @main_if0_else(%x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>

`graph.loop` runs its body while the iteration number is below a run-time trip count
and the condition its body gives holds (ONNX Loop without scan outputs), and
`graph.scan` runs its body once per position along the first axis of static-length
tensors, stacking a row of each scan output per position (ONNX Scan, and a Loop of known
trip count that its body never stops); a scan that `stops` runs while its first carried
value, a condition, holds (a Loop of known trip count whose body may stop it, each scan
output padded with zero rows to the trip count). Outlined, they become `graph.loop_call` and
`graph.scan_call` of a body function; the carried values live in the call's result
buffers, so an iteration copies only its own rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FlatSymbolRefAttrConstr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import RecursiveMemoryEffect, SymbolTable
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import AnyTensor
from strato.dialects.tensor_types import row_type


def _check_one_element(op: Operation, value: SSAValue, element: Attribute, what: str) -> None:
    type_ = value.type
    if (
        not isinstance(type_, TensorType)
        or type_.element_type != element
        or any(d < 0 for d in type_.get_shape())
        or int(np.prod(type_.get_shape())) != 1
    ):
        raise VerifyException(
            f"'{op.name}' {what} must be a tensor of {element} holding one element, got {type_}"
        )


def check_condition(op: Operation, condition: SSAValue) -> None:
    """A condition is a tensor of i1 holding one element."""
    _check_one_element(op, condition, i1, "condition")


def check_trip_count(op: Operation, value: SSAValue) -> None:
    """A trip count is a tensor of i64 holding one element."""
    _check_one_element(op, value, i64, "trip count")


def _check_static(op: Operation, types: Sequence[Attribute], what: str) -> None:
    for type_ in types:
        if not isinstance(type_, TensorType) or any(d < 0 for d in type_.get_shape()):
            raise VerifyException(f"'{op.name}' {what} must be tensors of static shape, got {type_}")


def condition_holds(array: np.ndarray) -> bool:
    """The value of a condition tensor (one element)."""
    return bool(np.asarray(array).reshape(-1)[0])


@irdl_op_definition
class IfOp(IRDLOperation):
    """Runs `then` or `else` by a run-time condition; see the module docstring."""

    name = "graph.if"

    condition = operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    then_region = region_def("single_block")
    else_region = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        condition: SSAValue | Operation,
        result_types: Sequence[Attribute],
        then_region: Region,
        else_region: Region,
    ):
        super().__init__(
            operands=[condition],
            result_types=[result_types],
            regions=[then_region, else_region],
        )

    def branch(self, taken: bool) -> Block:
        return (self.then_region if taken else self.else_region).block

    def yielded(self, taken: bool) -> list[SSAValue]:
        from strato.dialects.graph.core import YieldOp

        last = self.branch(taken).last_op
        assert isinstance(last, YieldOp)
        return list(last.values)

    def verify_(self) -> None:
        from strato.dialects.graph.core import YieldOp

        check_condition(self, self.condition)
        _check_static(self, self.result_types, "results")
        for name, region in (("then", self.then_region), ("else", self.else_region)):
            block = region.block
            if block.args:
                raise VerifyException(f"'graph.if' {name} region takes no arguments")
            last = block.last_op
            if not isinstance(last, YieldOp):
                raise VerifyException(f"'graph.if' {name} region must end with graph.yield")
            types = [v.type for v in last.values]
            if types != list(self.result_types):
                raise VerifyException(
                    f"'graph.if' {name} region yields {_types(types)}, but the op "
                    f"returns {_types(self.result_types)}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.condition)
        printer.print_string(" : ")
        printer.print_attribute(self.condition.type)
        printer.print_string(" -> (")
        printer.print_list(self.result_types, printer.print_attribute)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.then_region, print_entry_block_args=False)
        printer.print_string(" else ")
        printer.print_region(self.else_region, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> IfOp:
        pos = parser.pos
        condition = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        condition_type = parser.parse_type()
        (value,) = parser.resolve_operands([condition], [condition_type], pos)
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_type
        )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        then_region = parser.parse_region()
        parser.parse_keyword("else")
        else_region = parser.parse_region()
        op = cls(value, result_types, then_region, else_region)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class CondCallOp(IRDLOperation):
    """Calls `then_callee` or `else_callee` with `inputs` by a run-time condition: the
    outlined form of `graph.if` (see the module docstring)."""

    name = "graph.cond_call"

    condition = operand_def(AnyTensor)
    inputs = var_operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    then_callee = prop_def(FlatSymbolRefAttrConstr)
    else_callee = prop_def(FlatSymbolRefAttrConstr)

    def __init__(
        self,
        condition: SSAValue | Operation,
        then_callee: str,
        else_callee: str,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[condition, inputs],
            result_types=[result_types],
            properties={
                "then_callee": SymbolRefAttr(then_callee),
                "else_callee": SymbolRefAttr(else_callee),
            },
        )

    def callee(self, taken: bool) -> str:
        return (self.then_callee if taken else self.else_callee).string_value()

    def verify_(self) -> None:
        check_condition(self, self.condition)
        _check_static(self, self.result_types, "results")
        for taken in (True, False):
            check_callee(
                self, self.callee(taken), [v.type for v in self.inputs], list(self.result_types)
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.condition)
        printer.print_string(", ")
        printer.print_attribute(self.then_callee)
        printer.print_string(", ")
        printer.print_attribute(self.else_callee)
        printer.print_string("(")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(
            [self.condition.type, *(v.type for v in self.inputs)], self.result_types
        )

    @classmethod
    def parse(cls, parser: Parser) -> CondCallOp:
        pos = parser.pos
        condition = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        then_callee = parser.parse_symbol_name().data
        parser.parse_punctuation(",")
        else_callee = parser.parse_symbol_name().data
        inputs = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands([condition, *inputs], function_type.inputs.data, pos)
        op = cls(values[0], then_callee, else_callee, values[1:], function_type.outputs.data)
        op.attributes |= attrs
        return op


@irdl_op_definition
class LoopOp(IRDLOperation):
    """Runs its body while the iteration number is below `max_trip` and the condition
    holds, with ONNX Loop's semantics (see the module docstring):

        %r = graph.loop %m, %c inits(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {
        ^bb0(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>):
          ...
          graph.yield %go_next, %s_next : tensor<i1>, tensor<4xf32>
        }

    The body takes the iteration number (from 0), the condition it runs under and the
    carried values; it gives the next condition and the next carried values, whose types
    are the carried values' own. The results are the carried values after the last
    iteration (the initial ones when no iteration runs). The body reads the enclosing
    values directly."""

    name = "graph.loop"

    max_trip = operand_def(AnyTensor)
    condition = operand_def(AnyTensor)
    inits = var_operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    body = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        max_trip: SSAValue | Operation,
        condition: SSAValue | Operation,
        inits: Sequence[SSAValue | Operation],
        body: Region,
    ):
        super().__init__(
            operands=[max_trip, condition, inits],
            result_types=[[SSAValue.get(v).type for v in inits]],
            regions=[body],
        )

    def verify_(self) -> None:
        from strato.dialects.graph.core import YieldOp

        carried = _check_loop_operands(self)
        block = self.body.block
        expected = [ITERATION_TYPE, CONDITION_TYPE, *carried]
        if [a.type for a in block.args] != expected:
            raise VerifyException(
                f"'{self.name}' body takes {_types(expected)} (iteration, condition, carried "
                f"values), got {_types([a.type for a in block.args])}"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"'{self.name}' body must end with graph.yield")
        if [v.type for v in last.values] != expected[1:]:
            raise VerifyException(
                f"'{self.name}' body yields {_types([v.type for v in last.values])}, "
                f"expected {_types(expected[1:])} (condition, carried values)"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.max_trip, self.condition], printer.print_operand)
        printer.print_string(" inits(")
        printer.print_list(self.inits, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type(
            [o.type for o in self.operands], self.result_types
        )
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> LoopOp:
        pos = parser.pos
        bounds = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        bounds.append(parser.parse_unresolved_operand())
        parser.parse_keyword("inits")
        inits = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands([*bounds, *inits], function_type.inputs.data, pos)
        body = parser.parse_region()
        op = cls(values[0], values[1], values[2:], body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class LoopCallOp(IRDLOperation):
    """`graph.loop` outlined: calls `body` once per iteration, while the iteration number
    is below `max_trip` and the condition holds, with the iteration number, the
    condition, the carried values and then `captured` (the values the body reads from
    outside); the results are the carried values after the last iteration.

        %r = graph.loop_call %m, %c, @main_loop0_body inits(%x) captured(%w) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.loop_call"

    max_trip = operand_def(AnyTensor)
    condition = operand_def(AnyTensor)
    inits = var_operand_def(AnyTensor)
    captured = var_operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    body = prop_def(FlatSymbolRefAttrConstr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        max_trip: SSAValue | Operation,
        condition: SSAValue | Operation,
        body: str,
        inits: Sequence[SSAValue | Operation],
        captured: Sequence[SSAValue | Operation],
    ):
        super().__init__(
            operands=[max_trip, condition, inits, captured],
            result_types=[[SSAValue.get(v).type for v in inits]],
            properties={"body": SymbolRefAttr(body)},
        )

    @property
    def callee(self) -> str:
        return self.body.string_value()

    def verify_(self) -> None:
        carried = _check_loop_operands(self)
        inputs = [ITERATION_TYPE, CONDITION_TYPE, *carried, *(v.type for v in self.captured)]
        check_callee(self, self.callee, inputs, [CONDITION_TYPE, *carried])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.max_trip, self.condition], printer.print_operand)
        printer.print_string(", ")
        printer.print_attribute(self.body)
        printer.print_string(" inits(")
        printer.print_list(self.inits, printer.print_operand)
        printer.print_string(") captured(")
        printer.print_list(self.captured, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], self.result_types)

    @classmethod
    def parse(cls, parser: Parser) -> LoopCallOp:
        pos = parser.pos
        bounds = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        bounds.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(",")
        body = parser.parse_symbol_name().data
        parser.parse_keyword("inits")
        inits = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_keyword("captured")
        captured = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands(
            [*bounds, *inits, *captured], function_type.inputs.data, pos
        )
        op = cls(values[0], values[1], body, values[2 : 2 + len(inits)], values[2 + len(inits) :])
        op.attributes |= attrs
        return op


@irdl_op_definition
class ScanOp(IRDLOperation):
    """Runs its body once per position along the first axis of the `scanned` tensors
    (all of one static length), threading the carried values through (ONNX Scan with
    every axis 0 and every direction forward):

        %h, %ys = graph.scan inits(%h0) over(%xs) : (tensor<4xf32>, tensor<10x4xf32>) -> (tensor<4xf32>, tensor<10x4xf32>) {
        ^bb0(%h: tensor<4xf32>, %x: tensor<4xf32>):
          %n = graph.add %h, %x : ...
          graph.yield %n, %n : tensor<4xf32>, tensor<4xf32>
        }

    The body takes the carried values, then position i of each scanned tensor (its
    first axis dropped); it gives the next carried values, then a row of each scan
    output. The results are the carried values after the last position, then each scan
    output: its rows stacked along a new first axis of the scan's length. The body reads
    the enclosing values directly.

    A scan that `stops` carries a condition first (`tensor<i1>`): a position runs only
    while it holds (the initial value decides the first position, each position's next
    value the one after), so the first position whose body gives false is the last to
    run. The carried values are those the last position run gave, and the rows of the
    positions that did not run are zeros:

        %go, %h, %ys = graph.scan stops inits(%go0, %h0) over(%xs) : ...
    """

    name = "graph.scan"

    inits = var_operand_def(AnyTensor)
    scanned = var_operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    body = region_def("single_block")
    stops = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        inits: Sequence[SSAValue | Operation],
        scanned: Sequence[SSAValue | Operation],
        body: Region,
        result_types: Sequence[Attribute],
        stops: bool = False,
    ):
        super().__init__(
            operands=[inits, scanned], result_types=[result_types], regions=[body],
            properties={"stops": UnitAttr()} if stops else {},
        )  # fmt: skip

    @property
    def length(self) -> int:
        return scan_length(self)

    def verify_(self) -> None:
        from strato.dialects.graph.core import YieldOp

        takes, gives = _check_scan_operands(self)
        block = self.body.block
        if [a.type for a in block.args] != takes:
            raise VerifyException(
                f"'{self.name}' body takes {_types(takes)} (carried values, then a position "
                f"of each scanned tensor), got {_types([a.type for a in block.args])}"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"'{self.name}' body must end with graph.yield")
        if [v.type for v in last.values] != gives:
            raise VerifyException(
                f"'{self.name}' body yields {_types([v.type for v in last.values])}, "
                f"expected {_types(gives)} (carried values, then a row of each scan output)"
            )

    def print(self, printer: Printer) -> None:
        _print_scan_operands(self, printer)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], self.result_types)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> ScanOp:
        pos = parser.pos
        stops, inits, scanned = _parse_scan_operands(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands([*inits, *scanned], function_type.inputs.data, pos)
        body = parser.parse_region()
        op = cls(values[: len(inits)], values[len(inits) :], body, function_type.outputs.data, stops)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class ScanCallOp(IRDLOperation):
    """`graph.scan` outlined: calls `body` once per position along the first axis of
    the `scanned` tensors, with the carried values, that position of each scanned
    tensor and then `captured` (the values the body reads from outside); the results
    are the carried values after the last position, then each scan output's rows
    stacked. With `stops`, as `graph.scan`'s: positions run while the first carried
    value holds.

        %h, %ys = graph.scan_call @main_scan0_body inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>, tensor<10x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<10x4xf32>)
    """

    name = "graph.scan_call"

    inits = var_operand_def(AnyTensor)
    scanned = var_operand_def(AnyTensor)
    captured = var_operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    body = prop_def(FlatSymbolRefAttrConstr)
    stops = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        body: str,
        inits: Sequence[SSAValue | Operation],
        scanned: Sequence[SSAValue | Operation],
        captured: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        stops: bool = False,
    ):
        super().__init__(
            operands=[inits, scanned, captured],
            result_types=[result_types],
            properties={"body": SymbolRefAttr(body), **({"stops": UnitAttr()} if stops else {})},
        )

    @property
    def callee(self) -> str:
        return self.body.string_value()

    @property
    def length(self) -> int:
        return scan_length(self)

    def verify_(self) -> None:
        takes, gives = _check_scan_operands(self)
        check_callee(self, self.callee, [*takes, *(v.type for v in self.captured)], gives)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.body)
        _print_scan_operands(self, printer)
        printer.print_string(" captured(")
        printer.print_list(self.captured, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], self.result_types)

    @classmethod
    def parse(cls, parser: Parser) -> ScanCallOp:
        pos = parser.pos
        body = parser.parse_symbol_name().data
        stops, inits, scanned = _parse_scan_operands(parser)
        parser.parse_keyword("captured")
        captured = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands(
            [*inits, *scanned, *captured], function_type.inputs.data, pos
        )
        n, m = len(inits), len(inits) + len(scanned)
        op = cls(body, values[:n], values[n:m], values[m:], function_type.outputs.data, stops)
        op.attributes |= attrs
        return op


def _print_scan_operands(op: ScanOp | ScanCallOp, printer: Printer) -> None:
    if op.stops is not None:
        printer.print_string(" stops")
    printer.print_string(" inits(")
    printer.print_list(op.inits, printer.print_operand)
    printer.print_string(") over(")
    printer.print_list(op.scanned, printer.print_operand)
    printer.print_string(")")


def _parse_scan_operands(parser: Parser) -> tuple[bool, list, list]:
    stops = parser.parse_optional_keyword("stops") is not None
    lists = []
    for keyword in ("inits", "over"):
        parser.parse_keyword(keyword)
        lists.append(
            parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        )
    return stops, lists[0], lists[1]


def scan_length(op: ScanOp | ScanCallOp) -> int:
    """The positions a scan runs its body for: the first dimension of its scanned
    tensors (checked equal by the verifier)."""
    return op.scanned[0].type.get_shape()[0]  # type: ignore[union-attr]


def _check_scan_operands(op: ScanOp | ScanCallOp) -> tuple[list[Attribute], list[Attribute]]:
    """The checks `graph.scan` and `graph.scan_call` share; the types the body takes
    (carried values, then a position of each scanned tensor) and gives (carried values,
    then a row of each scan output)."""
    carried = [v.type for v in op.inits]
    _check_static(op, carried, "carried values")
    if op.stops is not None and carried[:1] != [CONDITION_TYPE]:
        raise VerifyException(
            f"'{op.name}' that stops carries its condition first, a {CONDITION_TYPE}; "
            f"got {_types(carried[:1])}"
        )
    scanned = [v.type for v in op.scanned]
    _check_static(op, scanned, "scanned tensors")
    if not scanned:
        raise VerifyException(f"'{op.name}' scans at least one tensor")
    lengths = {t.get_shape()[0] if t.get_shape() else None for t in scanned}  # type: ignore[union-attr]
    if None in lengths:
        raise VerifyException(f"'{op.name}' scanned tensors must have a first axis to scan")
    if len(lengths) != 1:
        raise VerifyException(
            f"'{op.name}' scanned tensors have different lengths {sorted(lengths)} on their first axis"
        )
    (length,) = lengths
    results = list(op.result_types)
    if results[: len(carried)] != carried:
        raise VerifyException(
            f"'{op.name}' results must start with the carried values' types {_types(carried)}"
        )
    stacked = results[len(carried) :]
    _check_static(op, stacked, "scan outputs")
    for k, t in enumerate(stacked):
        if not t.get_shape() or t.get_shape()[0] != length:  # type: ignore[union-attr]
            raise VerifyException(
                f"'{op.name}' scan output {k} is {t}: it stacks one row per position, so its "
                f"first dimension must be the scan's length {length}"
            )
    return (
        [*carried, *(row_type(t) for t in scanned)],
        [*carried, *(row_type(t) for t in stacked)],
    )




ITERATION_TYPE = TensorType(i64, [])
"""The type of a loop body's iteration number."""
CONDITION_TYPE = TensorType(i1, [])
"""The type of the condition a loop body takes and gives."""


def _check_loop_operands(op: LoopOp | LoopCallOp) -> list[Attribute]:
    """The checks `graph.loop` and `graph.loop_call` share; the carried values' types."""
    check_trip_count(op, op.max_trip)
    check_condition(op, op.condition)
    carried = [v.type for v in op.inits]
    _check_static(op, carried, "carried values")
    if list(op.result_types) != carried:
        raise VerifyException(f"'{op.name}' results must be the carried values' types")
    return carried


def check_callee(
    op: Operation, name: str, inputs: Sequence[Attribute], outputs: Sequence[Attribute]
) -> None:
    """`op` calls @`name`, a function of the module from `inputs` to `outputs` (checked
    once `op` is in a module)."""
    module = op.get_toplevel_object()
    if module is op or not isinstance(module, Operation):
        return
    function = SymbolTable.lookup_symbol(module, name)
    if not isinstance(function, func.FuncOp):
        raise VerifyException(f"'{op.name}' calls @{name}, which is not a function")
    ftype = function.function_type
    if (list(ftype.inputs.data), list(ftype.outputs.data)) != (list(inputs), list(outputs)):
        raise VerifyException(
            f"'{op.name}' calls @{name} with {_types(inputs)} for {_types(outputs)}, but "
            f"its type is {ftype}"
        )


def _types(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


OPS = (IfOp, CondCallOp, LoopOp, LoopCallOp, ScanOp, ScanCallOp)

__all__ = [
    "CONDITION_TYPE",
    "ITERATION_TYPE",
    "CondCallOp",
    "IfOp",
    "LoopCallOp",
    "LoopOp",
    "ScanCallOp",
    "ScanOp",
    "check_condition",
    "check_trip_count",
    "condition_holds",
    "scan_length",
]
