"""graph-outline-branches: each region of a `graph.if`, and the body of a `graph.loop`
or a `graph.scan`, becomes a private function.

A `graph.if` (a branch taken at run time) is replaced by a `graph.cond_call` of two new
functions, `@<function>_if<n>_then` and `@<function>_if<n>_else`, whose bodies are the
regions: the values a region reads from the enclosing function become the function's
arguments (the same for both, in order of first use), a `graph.constant` it reads is
copied into it instead (so the branch's weights stay constants the later passes fold and
relay), and its `graph.yield` becomes `func.return`. A `graph.if` nested in a region is
outlined in turn from the function it lands in.

A `graph.loop` is replaced by a `graph.loop_call` of `@<function>_loop<n>_body`, whose
arguments are the body's own (iteration number, condition, carried values) and then the
values it reads from outside, and whose results are what the body yields. A
`graph.scan` is replaced alike by a `graph.scan_call` of `@<function>_scan<n>_body`
(the carried values and a position of each scanned tensor, then the values read from
outside).

From then on a branch or a body is a function like any other: graph-default's passes optimize,
fuse and plan it, and `graph.cond_call` is one opaque op whose results the caller's
memory plan places (see `strato.dialects.graph.control`).

Requires: functions of graph ops. Leaves illegal: nothing (no `graph.if`, `graph.loop`
or `graph.scan` remains).

Before:
    func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
      %r = graph.if %c : tensor<i1> -> (tensor<4xf32>) {
        %a = graph.relu %x : tensor<4xf32>
        graph.yield %a : tensor<4xf32>
      } else {
        graph.yield %x : tensor<4xf32>
      }
      func.return %r : tensor<4xf32>
    }
After:
    func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
      %r = graph.cond_call %c, @main_if0_then, @main_if0_else(%x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
      func.return %r : tensor<4xf32>
    }
    func.func private @main_if0_then(%x: tensor<4xf32>) -> tensor<4xf32> {
      %a = graph.relu %x : tensor<4xf32>
      func.return %a : tensor<4xf32>
    }
    func.func private @main_if0_else(%x: tensor<4xf32>) -> tensor<4xf32> {
      func.return %x : tensor<4xf32>
    }
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from strato.dialects import graph


def _inside(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined in one of `op`'s regions."""
    parent = value.owner.parent_op()
    while parent is not None:
        if parent is op:
            return True
        parent = parent.parent_op()
    return False


def _is_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, graph.ConstantOp | arith.ConstantOp)


def captured_values(
    op: graph.IfOp | graph.LoopOp | graph.ScanOp, regions: list[Region] | None = None
) -> list[SSAValue]:
    """The values defined outside `op` that its regions (or those of `regions`) read,
    in order of first use."""
    seen: dict[SSAValue, None] = {}
    for region in op.regions if regions is None else regions:
        for inner in region.walk():
            for operand in inner.operands:
                if not _inside(operand, op):
                    seen.setdefault(operand, None)
    return list(seen)


class _Names:
    def __init__(self, module: ModuleOp):
        self.taken = {
            o.sym_name.data for o in module.ops if isinstance(o, func.FuncOp)
        }

    def fresh(self, base: str, suffixes: tuple[str, ...] = ("then", "else")) -> str:
        """`base<n>` for the first n that names no function with any of `suffixes`."""
        n = 0
        while any(f"{base}{n}_{suffix}" in self.taken for suffix in suffixes):
            n += 1
        self.taken |= {f"{base}{n}_{suffix}" for suffix in suffixes}
        return f"{base}{n}"


def _branch_function(
    name: str, region: Region, arguments: list[SSAValue], constants: list[SSAValue]
) -> func.FuncOp:
    """A private function whose body is a copy of `region`: the region's own arguments,
    then `arguments` bound to its arguments, `constants` copied in first."""
    own = list(region.block.args)
    block = Block(arg_types=[v.type for v in (*own, *arguments)])
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip((*own, *arguments), block.args, strict=True):
        mapping[value] = arg
        if value.name_hint is not None:
            arg.name_hint = value.name_hint
    for value in constants:
        copy = value.owner.clone()  # type: ignore[union-attr]
        block.add_op(copy)
        mapping[value] = copy.results[0]
    for inner in region.block.ops:
        if isinstance(inner, graph.YieldOp):
            block.add_op(func.ReturnOp(*(mapping.get(v, v) for v in inner.values)))
            break
        block.add_op(inner.clone(value_mapper=mapping))
    result_types = [v.type for v in block.last_op.operands]  # type: ignore[union-attr]
    function = func.FuncOp(name, ([a.type for a in block.args], result_types), Region(block))
    function.sym_visibility = StringAttr("private")
    return function


def _enclosing_function(op: Operation) -> tuple[func.FuncOp, ModuleOp]:
    function = op.parent_op()
    while function is not None and not isinstance(function, func.FuncOp):
        function = function.parent_op()
    assert isinstance(function, func.FuncOp), f"{op.name} outside a function"
    module = function.parent_op()
    assert isinstance(module, ModuleOp)
    return function, module


def _replace(op: Operation, call: Operation) -> None:
    call.attributes |= op.attributes
    for old, new in zip(op.results, call.results, strict=True):
        new.name_hint = old.name_hint
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(call, op)
    for old, new in zip(op.results, call.results, strict=True):
        old.replace_all_uses_with(new)
    op.detach()
    op.erase(safe_erase=False)


def _outline_body(
    op: graph.LoopOp | graph.ScanOp,
    names: _Names,
    kind: str,
    call_of: Callable[[str, list[SSAValue]], Operation],
) -> Operation:
    """Replace `op` by `call_of(name, arguments)`, a call of its body made the function
    @`name` (inserted after the function holding it), whose arguments are the body's own
    and then the values it reads from outside (`arguments`)."""
    function, module = _enclosing_function(op)
    captured = captured_values(op)
    arguments = [v for v in captured if not _is_constant(v)]
    name = names.fresh(f"{function.sym_name.data}_{kind}", ("body",)) + "_body"
    body = _branch_function(name, op.body, arguments, [v for v in captured if _is_constant(v)])
    call = call_of(name, arguments)
    _replace(op, call)
    module.body.block.insert_op_after(body, function)
    return call


def outline_loop(op: graph.LoopOp, names: _Names) -> graph.LoopCallOp:
    """Replace `op` by a `graph.loop_call` of its body made a function: the iteration
    number, the condition and the carried values, then the values the body reads from
    outside."""
    call = _outline_body(
        op, names, "loop",
        lambda name, arguments: graph.LoopCallOp(
            op.max_trip, op.condition, name, list(op.inits), arguments
        ),
    )  # fmt: skip
    assert isinstance(call, graph.LoopCallOp)
    return call


def outline_scan(op: graph.ScanOp, names: _Names) -> graph.ScanCallOp:
    """Replace `op` by a `graph.scan_call` of its body made a function: the carried
    values and a position of each scanned tensor, then the values the body reads from
    outside."""
    call = _outline_body(
        op, names, "scan",
        lambda name, arguments: graph.ScanCallOp(
            name, list(op.inits), list(op.scanned), arguments, list(op.result_types),
            op.stops is not None,
        ),
    )  # fmt: skip
    assert isinstance(call, graph.ScanCallOp)
    return call


def outline_if(op: graph.IfOp, names: _Names) -> graph.CondCallOp:
    """Replace `op` by a `graph.cond_call` of its regions made functions (inserted after
    the function holding it)."""
    function, module = _enclosing_function(op)
    arguments = [v for v in captured_values(op) if not _is_constant(v)]
    base = names.fresh(f"{function.sym_name.data}_if")
    functions = [
        _branch_function(
            f"{base}_{which}", region, arguments,
            [v for v in captured_values(op, [region]) if _is_constant(v)],
        )
        for which, region in (("then", op.then_region), ("else", op.else_region))
    ]  # fmt: skip
    call = graph.CondCallOp(
        op.condition, f"{base}_then", f"{base}_else", arguments, list(op.result_types)
    )
    _replace(op, call)
    module.body.block.insert_ops_after(functions, function)
    return call


_REGION_OPS = (graph.IfOp, graph.LoopOp, graph.ScanOp)
_OUTLINE = {graph.IfOp: outline_if, graph.LoopOp: outline_loop, graph.ScanOp: outline_scan}


def outline_branches(module: ModuleOp) -> int:
    """Outline every `graph.if`, `graph.loop` and `graph.scan` of `module` (nested ones
    too); how many were."""
    names = _Names(module)
    count = 0
    while True:
        # the outermost ones, all of them per walk: a nested one is outlined from the
        # function it moves to, in the next round (as many rounds as levels of nesting)
        outer = [op for op in module.walk() if isinstance(op, _REGION_OPS) and not _nested(op)]
        if not outer:
            return count
        for op in outer:
            _OUTLINE[type(op)](op, names)
        count += len(outer)


def _nested(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, _REGION_OPS):
            return True
        parent = parent.parent_op()
    return False


@dataclass(frozen=True)
class GraphOutlineBranchesPass(ModulePass):
    """Make each region of every `graph.if` a private function called by a
    `graph.cond_call`, and each `graph.loop` or `graph.scan` body one called by a
    `graph.loop_call` or `graph.scan_call` (see the module docstring)."""

    name = "graph-outline-branches"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outline_branches(op)


__all__ = [
    "GraphOutlineBranchesPass",
    "captured_values",
    "outline_branches",
    "outline_if",
    "outline_loop",
    "outline_scan",
]
