"""ONNX control flow with static shapes: If, Loop and Scan.

With static shapes, many models branch and loop on values the importer already knows: an
If on a condition computed from shapes or constants (what the TorchScript exporter writes
for Python `if`s on sizes), a Loop over a constant trip count, a Scan over a sequence
axis of static length. Each is imported as the graph ops of what it runs:

- If: the nodes of the branch its condition takes, when the condition is known at import
  time. On a condition known only at run time, when both branches give tensors of one
  type and shape: both branches and a Where that picks each output (if-conversion) when
  they are small (`IF_CONVERT_MAX_NODES`, no costly operator) and neither holds an
  operator that can fault on the data it reads (an integer division by a run-time
  divisor, a gather or scatter at run-time positions), since computing the other branch
  then changes nothing but a little time; else a `graph.if` whose regions hold the
  branches' nodes, of which only the one taken runs.
- Loop: its body once per iteration, each iteration's nodes taking the loop-carried
  values of the one before, while the trip count (known) and the body's condition (known
  after each iteration) allow; the scan outputs stacked along a new first axis. A Loop
  without scan outputs whose trip count or condition is known only at run time is a
  `graph.loop` whose body region holds the body's nodes (its arguments the iteration
  number, the condition and the carried values, which must keep their types and
  shapes). A Loop of known trip count that would unroll into more than `UNROLLED_NODES`
  nodes (and reads something known only at run time) is converted once: a `graph.loop`
  when it has no scan outputs, a `graph.scan` over the iteration numbers when it has
  some and its body never stops it (its condition always true); else it is unrolled.
- Scan: its body once per position of the scan axis (static), reading that position of
  each scan input (in the input's direction); scan outputs stacked along their axes.
  One that would unroll into more than `UNROLLED_NODES` nodes (and reads something known
  only at run time) is a `graph.scan`, its scan inputs' axes moved first (and reversed
  when scanned backwards), its outputs moved back. Scan-8 (opsets before 9) scans each
  element of its batch axis alone and stacks them.

A trip count or loop condition computed at run time for a Loop with scan outputs (or
whose carried values change shape) is refused, naming the node and the value, as is an
If on a run-time condition whose branches differ in type or shape,
or give sequences (a `RuntimeBranchError`), and a loop with scan outputs whose body may
stop it that would unroll beyond `MAX_UNROLLED_NODES` nodes.
`strato.compile` runs such a Loop or If of the model's graph on the host, its body or
branches compiled alone (`strato.staged`); in a subgraph they stay refused.

Body values are renamed per use (`<output>::<op>::<iteration>::<name>`), nested bodies
included, so that iterations and branches never share a name or a cached constant; a
body reads the enclosing graph's values by their own names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.ir import SSAValue

from strato.diagnostics import ModelImportError, RuntimeBranchError
from strato.dialects.tensor_types import numpy_dtype, row_type, stacked_type
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of
from strato.frontends.onnx.expansion import Expansion

if TYPE_CHECKING:
    from strato.dialects.graph import ScanOp

MAX_UNROLLED_NODES = 20_000
"""The most nodes a Loop or Scan may unroll into (iterations times body nodes): a longer
one that is no `graph.loop` or `graph.scan` either (a body that may stop a loop with
scan outputs) is refused."""

UNROLLED_NODES = 32
"""The most nodes a Scan, or a Loop of known trip count, is unrolled into (iterations
times body nodes) unless all it reads is known at import time; a longer one is a
`graph.scan` or `graph.loop`, its body converted once (which also compiles faster and
runs as fast: an RNN cell scanned 50 times compiles in 0.18 s instead of 1.17 s)."""


IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {"If": (0,), "Loop": (0, 1)}
"""The inputs each operator needs known at import time to decide (an If on a run-time
condition is imported as a `graph.if`, or if-converted, when its branches allow)."""

_UNROLL_LIMIT: ContextVar[int] = ContextVar("unroll_limit", default=MAX_UNROLLED_NODES)
"""The most nodes this import unrolls a loop into (`unroll_limit`)."""


@contextmanager
def unroll_limit(nodes: int) -> Iterator[None]:
    """Within the block, a Loop or Scan that would unroll into more than `nodes` nodes
    (fewer than `MAX_UNROLLED_NODES`) is refused unless it compiles as a `graph.loop` or
    `graph.scan`: for a compile that must stay cheap."""
    token = _UNROLL_LIMIT.set(min(nodes, MAX_UNROLLED_NODES))
    try:
        yield
    finally:
        _UNROLL_LIMIT.reset(token)


_PADDED_LOOP: ContextVar[str | None] = ContextVar("padded_loop", default=None)


@contextmanager
def padded_loop_rows(loop: str | None) -> Iterator[None]:
    """Within the block, the Loop whose first output is `loop`, of known trip count and
    a body that may stop it, converts as `strato.staged.PADDED_ROWS_KEY` asks: a
    `graph.scan` that `stops`, each scan output the trip count's rows, zeros past the
    last iteration run."""
    token = _PADDED_LOOP.set(loop)
    try:
        yield
    finally:
        _PADDED_LOOP.reset(token)


_SPECULATING: ContextVar[bool] = ContextVar("speculating", default=False)
"""Set while the branches of an If on a run-time condition are converted: both run, so
no node of theirs (nested bodies included) may fault on the data it reads."""


def _locals(graph: onnx.GraphProto, names: set[str] | None = None) -> set[str]:
    """The names `graph` defines (its inputs, initializers and node outputs), those of
    the bodies nested in its nodes included."""
    names = set() if names is None else names
    names.update(value.name for value in graph.input)
    names.update(init.name for init in graph.initializer)
    for node in graph.node:
        names.update(name for name in node.output if name)
        for body in node_bodies(node):
            _locals(body, names)
    return names


def node_bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The subgraphs of `node` (a Loop's body, an If's branches, ...)."""
    bodies = []
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            bodies.append(attribute.g)
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            bodies.extend(attribute.graphs)
    return bodies


def _rename(graph: onnx.GraphProto, rename) -> None:
    """Rename, in place, every use and definition of the names `rename` maps."""
    for value in (*graph.input, *graph.output, *graph.value_info):
        value.name = rename(value.name)
    for init in graph.initializer:
        init.name = rename(init.name)
    for node in graph.node:
        node.input[:] = [rename(name) if name else name for name in node.input]
        node.output[:] = [rename(name) if name else name for name in node.output]
        for body in node_bodies(node):
            _rename(body, rename)


def _instance(graph: onnx.GraphProto, prefix: str) -> onnx.GraphProto:
    """A copy of `graph` whose own names (nested bodies' included) carry `prefix`."""
    names = _locals(graph)
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    _rename(copy, lambda name: prefix + name if name in names else name)
    return copy


def outer_names(graph: onnx.GraphProto) -> set[str]:
    """The names `graph` (nested bodies included) reads from enclosing scopes."""
    own = _locals(graph)
    read: set[str] = set()

    def visit(body: onnx.GraphProto) -> None:
        for node in body.node:
            read.update(name for name in node.input if name)
            for nested in node_bodies(node):
                visit(nested)
        read.update(value.name for value in body.output)

    visit(graph)
    return read - own


def with_outer_names(graph: onnx.GraphProto, rename) -> onnx.GraphProto:
    """A copy of `graph` in which the names it reads from enclosing scopes are renamed by
    `rename` (its own names stay): a body inside a function body, whose values the
    importer knows under prefixed names."""
    own = _locals(graph)
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    _rename(copy, lambda name: name if name in own else rename(name))
    return copy


def _run_body(
    ctx: NodeContext, graph: onnx.GraphProto, inputs: list[object], prefix: str, what: str
) -> list[object]:
    """Convert the nodes of `graph` (renamed with `prefix`), its inputs bound to
    `inputs`; the values of its outputs."""
    from strato.frontends.onnx.convert_contrib import CONTRIB_CONVERTERS, CONTRIB_DOMAIN
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    body = _instance(graph, prefix)
    if len(inputs) != len(body.input):
        raise ctx.error(f"its {what} takes {len(body.input)} inputs, given {len(inputs)}")
    for formal, value in zip(body.input, inputs):
        ctx.bind(formal.name, value)
    for init in body.initializer:
        ctx.bind(init.name, np.require(numpy_helper.to_array(init), requirements="C"))
    for node in body.node:
        if _SPECULATING.get():
            reason = _faults_on_data(ctx, node)
            if reason is not None:
                raise ctx.error(
                    f"its condition is known only at run time and its {what} has a "
                    f"{node.op_type} that {reason}: strato computes both branches of a small "
                    f"If, {SPECULATION_REFUSED}"
                )
        table = CONTRIB_CONVERTERS if node.domain == CONTRIB_DOMAIN else ONNX_CONVERTERS
        converter = table.get(node.op_type) if node.domain in ("", "ai.onnx", CONTRIB_DOMAIN) else None
        if converter is None:
            raise ctx.error(f"its {what} uses {node.op_type}, which strato does not import")
        results = converter(ctx.nested(node, ctx.opset()))
        for name, value in zip(node.output, results):
            if name:
                ctx.bind(name, np.asarray(value) if isinstance(value, np.generic) else value)
    return [ctx.lookup(output.name) for output in body.output]


def _known_scalar(ctx: NodeContext, value: object, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise ctx.error(f"{what} is known only at run time: {RUN_TIME_DECISION}")
    if value.size != 1:
        raise ctx.error(f"{what} must hold one value, got shape {list(value.shape)}")
    return value.reshape(-1)[0]


def _branch(ctx: NodeContext, name: str) -> onnx.GraphProto:
    branch = ctx.attr(name)
    if not isinstance(branch, onnx.GraphProto):
        raise ctx.error(f"attribute {name} is missing")
    return branch


def convert_if(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX If -> the nodes of the branch its condition takes when the condition is
    known; else both branches and a Where on the condition (if-conversion), when the
    branches give tensors of the same types and shapes and hold no operator that can
    fault on the data it reads."""
    condition = ctx.value(0)
    if isinstance(condition, np.ndarray):
        taken = "then_branch" if bool(_known_scalar(ctx, condition, "its condition")) else "else_branch"
        prefix = f"{ctx.node.output[0]}::If::{taken}::"
        return _run_body(ctx, _branch(ctx, taken), [], prefix, taken)
    if int(np.prod(ctx.shape(0))) != 1:
        raise ctx.error(f"its condition must hold one value, got shape {list(ctx.shape(0))}")
    branches = [_branch(ctx, name) for name in ("then_branch", "else_branch")]
    try:
        if all(_cheap(branch) for branch in branches):
            try:
                return _if_converted(ctx)
            except ModelImportError as error:
                if isinstance(error, RuntimeBranchError) or not error.message.endswith(
                    SPECULATION_REFUSED
                ):
                    raise
        return _if_op(ctx)
    except ModelImportError as error:
        if isinstance(error, RuntimeBranchError):
            raise
        # the compiler runs such an If on the host, each branch compiled alone
        raise RuntimeBranchError(error.message, ctx.node.output[0], error.location) from None


IF_CONVERT_MAX_NODES = 8
"""The most nodes a branch of an If on a run-time condition may hold to be if-converted
(both branches computed, a Where picking each output); a larger branch is a region of a
`graph.if`, which runs only the branch taken."""

_COSTLY = frozenset({
    "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MatMul", "MatMulInteger",
    "QLinearMatMul", "Gemm", "Einsum", "LSTM", "GRU", "RNN", "Attention",
})  # fmt: skip
"""Operators whose work makes computing a branch not taken worth avoiding."""

SPECULATION_REFUSED = "which only branches without such operators allow"


def _cheap(branch: onnx.GraphProto) -> bool:
    """Whether `branch` is small enough to compute when not taken (if-conversion)."""
    count = 0

    def visit(graph: onnx.GraphProto) -> bool:
        nonlocal count
        for node in graph.node:
            count += 1
            if node.op_type in _COSTLY or count > IF_CONVERT_MAX_NODES:
                return False
            if not all(visit(body) for body in node_bodies(node)):
                return False
        return True

    return visit(branch)


def _if_op(ctx: NodeContext) -> list[ImportedValue]:
    """An If on a run-time condition -> `graph.if`, each branch's nodes in its region:
    only the branch taken runs. Both give tensors of the same types and shapes."""
    from xdsl.ir import Block, Region

    from strato.dialects import graph

    condition = ctx.operand(0)
    blocks, outputs = [], []
    for name in ("then_branch", "else_branch"):
        block = Block()
        inner = ctx.in_block(block)
        values = _run_body(inner, _branch(ctx, name), [], f"{ctx.node.output[0]}::If::{name}::", name)
        for k, value in enumerate(values):
            if not (isinstance(value, np.ndarray) or hasattr(value, "type")):
                raise ctx.error(
                    f"its condition is known only at run time and output {k} of its {name} "
                    "is a sequence or an optional: strato branches between tensors only"
                )
        yielded = [
            inner.materialize(value) if isinstance(value, np.ndarray) else value
            for value in values
        ]
        blocks.append(block)
        outputs.append(yielded)
    then_values, else_values = outputs
    if len(then_values) != len(else_values):
        raise ctx.error(f"its branches give {len(then_values)} and {len(else_values)} outputs")
    for k, (a, b) in enumerate(zip(then_values, else_values)):
        if a.type != b.type:
            raise ctx.error(
                f"its condition is known only at run time and its branches give output {k} "
                f"as {_dtype(a)} {list(_shape(a))} and {_dtype(b)} {list(_shape(b))}: "
                "strato branches between values of one type and shape"
            )
    for block, values in zip(blocks, outputs):
        block.add_op(graph.YieldOp(values))
    op = graph.IfOp(condition, [v.type for v in then_values], Region(blocks[0]), Region(blocks[1]))
    ctx.emit(op)
    return list(op.results)


def _if_converted(ctx: NodeContext) -> list[ImportedValue]:
    """Both branches of an If on a run-time condition, and a Where selecting each output."""
    token = _SPECULATING.set(True)
    try:
        branches = {
            name: _run_body(ctx, _branch(ctx, name), [], f"{ctx.node.output[0]}::If::{name}::", name)
            for name in ("then_branch", "else_branch")
        }
    finally:
        _SPECULATING.reset(token)
    then_values, else_values = branches["then_branch"], branches["else_branch"]
    if len(then_values) != len(else_values):
        raise ctx.error(f"its branches give {len(then_values)} and {len(else_values)} outputs")
    body = Expansion(ctx, "::select")
    flag = body.node("Reshape", [ctx.node.input[0], body.constant(np.zeros(0, np.int64))])
    results = []
    for k, (a, b) in enumerate(zip(then_values, else_values)):
        if not all(isinstance(v, np.ndarray) or hasattr(v, "type") for v in (a, b)):
            raise ctx.error(
                f"its condition is known only at run time and output {k} is a sequence or "
                "an optional: strato selects between tensors only"
            )
        types = [(_dtype(v), _shape(v)) for v in (a, b)]
        if types[0] != types[1]:
            raise ctx.error(
                f"its condition is known only at run time and its branches give output {k} "
                f"as {types[0][0]} {list(types[0][1])} and {types[1][0]} {list(types[1][1])}: "
                "strato selects between values of one type and shape"
            )
        results.append(body.result(body.node("Where", [flag, body.bound(a), body.bound(b)])))
    return results


UNROLL_REFUSED = "nodes strato unrolls a loop into"


def _budget(ctx: NodeContext, body: onnx.GraphProto, iterations: int) -> None:
    limit = _UNROLL_LIMIT.get()
    if iterations * max(len(body.node), 1) > limit:
        raise ctx.error(
            f"it runs its body of {len(body.node)} nodes {iterations} times: more than "
            f"the {limit} {UNROLL_REFUSED}"
        )


def _unrolled_at_most(known: bool) -> int:
    """The most nodes a Loop or Scan of known length is unrolled into: any length the
    import allows when all it reads is known (unrolling computes it), else
    `UNROLLED_NODES`."""
    limit = _UNROLL_LIMIT.get()
    return limit if known else min(UNROLLED_NODES, limit)


def _stack(
    ctx: NodeContext, values: list[object], axis: int, empty: onnx.ValueInfoProto, what: str
) -> ImportedValue:
    """`values` (tensors of one shape) stacked along a new `axis`; with no values, the
    empty stack of `empty`'s declared type and shape."""
    if not values:
        tensor = empty.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        if not tensor.HasField("shape") or -1 in dims:
            raise ctx.error(f"{what} has no iterations and no static shape to be empty with")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        return np.zeros([*dims[:axis], 0, *dims[axis:]], dtype)
    if all(isinstance(v, np.ndarray) for v in values):
        return np.ascontiguousarray(np.stack(values, axis=axis))
    body = Expansion(ctx, "::stack")
    axes = body.constant(np.asarray([axis], np.int64))
    parts = [body.node("Unsqueeze", [body.bound(v), axes]) for v in values]
    return body.result(parts[0] if len(parts) == 1 else body.node("Concat", parts, axis=axis))


def convert_loop(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Loop with a known trip count and known conditions -> its body unrolled; one
    decided at run time, without scan outputs -> `graph.loop`."""
    body = ctx.attr("body")
    if not isinstance(body, onnx.GraphProto):
        raise ctx.error("attribute body is missing")
    carried = [ctx.static_value(i) for i in range(2, len(ctx.node.input))]
    count = len(body.output) - 1 - len(carried)
    if count < 0:
        raise ctx.error(f"its body gives {len(body.output)} outputs for {len(carried)} loop-carried values")
    run_time = [
        k for k in (0, 1) if ctx.has_input(k) and not isinstance(ctx.value(k), np.ndarray)
    ]
    if run_time and count == 0:
        return _loop_op(ctx, body, carried)
    padded = (
        count and ctx.node.output[0] == _PADDED_LOOP.get() and 0 not in run_time and ctx.has_input(0)
    )
    if padded:  # strato.staged asks, for a loop decided at run time
        return _loop_scan(ctx, body, carried, stops=True)
    if not run_time and _too_long_to_unroll(ctx, body, carried):
        try:
            return _loop_scan(ctx, body, carried) if count else _loop_op(ctx, body, carried)
        except ModelImportError:
            pass  # a body that needs its iteration number, or changes shapes: unrolled
    try:
        return _unrolled_loop(ctx, body, carried, count)
    except ModelImportError as error:
        if count or not error.message.endswith((RUN_TIME_DECISION, UNROLL_REFUSED)):
            raise
        # the body computes its condition from run-time values, or the loop is too long
        # to unroll: one body, run as many times as it takes
        return _loop_op(ctx, body, carried)


def _too_long_to_unroll(ctx: NodeContext, body: onnx.GraphProto, carried: list[object]) -> bool:
    """Whether a Loop of known trip count and condition runs its body more times than
    `UNROLLED_NODES` allows (unless everything it reads is known at import time, when
    unrolling computes it)."""
    if not ctx.has_input(0) or (ctx.has_input(1) and not bool(np.asarray(ctx.value(1)).all())):
        return False
    known = all(isinstance(v, np.ndarray) for v in carried) and all(
        isinstance(ctx.lookup(name), np.ndarray) for name in outer_names(body)
    )
    limit = int(np.asarray(ctx.value(0)).reshape(-1)[0])
    return limit * max(len(body.node), 1) > _unrolled_at_most(known)


def _loop_scan(
    ctx: NodeContext, body: onnx.GraphProto, carried: list[object], stops: bool = False
) -> list[ImportedValue]:
    """A Loop of known trip count M with scan outputs, whose body never stops it (its
    condition is true whatever the iteration) -> `graph.scan` over the iteration
    numbers 0..M-1, the body's nodes in the region. With `stops` (`PADDED_ROWS_KEY`), a
    body that may stop it: the scan `stops`, carrying the condition first, and each
    scan output has M rows, zeros past the last iteration run."""
    limit = int(np.asarray(ctx.value(0)).reshape(-1)[0])
    iterations = ctx.materialize(np.arange(limit, dtype=np.int64))
    inits = _carried_inputs(ctx, carried, "the Loop is compiled as a loop")
    if stops:
        first = ctx.value(1) if ctx.has_input(1) else np.array(True)
        inits = [_condition(ctx, ctx, first, "its condition"), *inits]

    def given(args: list[SSAValue]) -> list[object]:
        # the iteration number is the position scanned; the condition, always true
        # unless the loop stops (then it runs under the condition carried)
        return [args[-1], args[0] if stops else np.array(True), *args[:-1][int(stops):]]

    def taken(outputs: list[object]) -> list[object]:
        going = outputs[0]
        if stops:
            return outputs
        if not (isinstance(going, np.ndarray) and going.size == 1 and bool(going.reshape(-1)[0])):
            raise ctx.error(f"the condition its body computes is not always true: {RUN_TIME_DECISION}")
        return outputs[1:]

    op = _scan_region(
        ctx, body, inits, [iterations], "Loop::scan::", "a Loop compiled as a loop", given,
        taken, stops,
    )  # fmt: skip
    return list(op.results)[int(stops) :]


def _condition(ctx: NodeContext, emitter: NodeContext, value: object, what: str) -> SSAValue:
    """A one-element boolean `value` as a `tensor<i1>` of `emitter`'s block (a constant
    materialized, a run-time value reshaped)."""
    from strato.dialects import graph

    if int(np.prod(shape_of(value))) != 1:
        raise ctx.error(f"{what} must hold one value, got shape {list(shape_of(value))}")
    if isinstance(value, np.ndarray):
        return emitter.materialize(value.reshape(()).astype(np.bool_))
    if value.type != graph.CONDITION_TYPE:
        return emitter.emit(graph.ReshapeOp(value, [])).results[0]
    return value


def _scan_region(
    ctx: NodeContext,
    body: onnx.GraphProto,
    inits: list[SSAValue],
    scanned: list[SSAValue],
    tag: str,
    what: str,
    given: Callable[[list[SSAValue]], list[object]] = list,
    taken: Callable[[list[object]], list[object]] = list,
    stops: bool = False,
) -> ScanOp:
    """A `graph.scan` (emitted) of the ONNX `body`'s nodes over `scanned` from `inits`:
    the body takes `given(region arguments)` and its outputs are `taken(outputs)` (the
    carried values, then a row of each scan output). A scan that `stops` carries its
    condition first."""
    from xdsl.ir import Block, Region

    from strato.dialects import graph

    block = Block(arg_types=[*(v.type for v in inits), *(row_type(v.type) for v in scanned)])
    inner = ctx.in_block(block)
    outputs = taken(_run_body(inner, body, given(list(block.args)), f"{ctx.node.output[0]}::{tag}", "body"))
    if stops:
        outputs[0] = _condition(ctx, inner, outputs[0], "the condition its body computes")
    yielded = [inner.materialize(v) if isinstance(v, np.ndarray) else v for v in outputs]
    _check_carried(ctx, yielded[: len(inits)], inits, what)
    length = scanned[0].type.get_shape()[0]
    stacked = [stacked_type(v.type, length) for v in yielded[len(inits) :]]
    block.add_op(graph.YieldOp(yielded))
    op = graph.ScanOp(inits, scanned, Region(block), [*(v.type for v in inits), *stacked], stops)
    ctx.emit(op)
    return op


RUN_TIME_DECISION = (
    "strato compiles control flow whose decisions are known at compile time (from "
    "constants and static shapes), or loops without scan outputs"
)


def _loop_op(ctx: NodeContext, body: onnx.GraphProto, carried: list[object]) -> list[ImportedValue]:
    """A Loop decided at run time -> `graph.loop`, its body's nodes in the region: the
    carried values keep their types and shapes, and there are no scan outputs."""
    from xdsl.ir import Block, Region

    from strato.dialects import graph

    def scalar(index: int, default: np.ndarray, what: str) -> SSAValue:
        value = ctx.value(index) if ctx.has_input(index) else default
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise ctx.error(f"{what} must hold one value, got shape {list(value.shape)}")
            return ctx.materialize(value.reshape(()))
        return value

    max_trip = scalar(0, np.array(np.iinfo(np.int64).max), "its trip count M")
    condition = scalar(1, np.array(True), "its condition")
    for value, what in ((max_trip, "its trip count M"), (condition, "its condition")):
        if int(np.prod(shape_of(value))) != 1:
            raise ctx.error(f"{what} must hold one value, got shape {list(shape_of(value))}")
    inits = _carried_inputs(ctx, carried, "the loop is decided at run time")
    block = Block(arg_types=[graph.ITERATION_TYPE, graph.CONDITION_TYPE, *(v.type for v in inits)])
    inner = ctx.in_block(block)
    outputs = _run_body(inner, body, list(block.args), f"{ctx.node.output[0]}::Loop::body::", "body")
    yielded = [inner.materialize(v) if isinstance(v, np.ndarray) else v for v in outputs]
    going = _condition(ctx, inner, yielded[0], "its body's condition")
    _check_carried(ctx, yielded[1:], inits, "a loop decided at run time")
    block.add_op(graph.YieldOp([going, *yielded[1:]]))
    op = graph.LoopOp(max_trip, condition, inits, Region(block))
    ctx.emit(op)
    return list(op.results)


def _unrolled_loop(
    ctx: NodeContext, body: onnx.GraphProto, carried: list[object], count: int
) -> list[ImportedValue]:
    """A Loop whose trip count and conditions are known at import time -> its body once
    per iteration."""
    limit = int(_known_scalar(ctx, ctx.value(0), "its trip count M")) if ctx.has_input(0) else None
    going = bool(_known_scalar(ctx, ctx.value(1), "its condition")) if ctx.has_input(1) else True
    if limit is not None and going:
        _budget(ctx, body, limit)
    scans: list[list[object]] = [[] for _ in range(count)]
    iteration = 0
    while going and (limit is None or iteration < limit):
        _budget(ctx, body, iteration + 1)  # with no trip count, as the body goes on
        prefix = f"{ctx.node.output[0]}::Loop::{iteration}::"
        inputs = [np.array(iteration, np.int64), np.array(going), *carried]
        outputs = _run_body(ctx, body, inputs, prefix, "body")
        going = bool(_known_scalar(ctx, outputs[0], f"the condition its body computes (iteration {iteration})"))
        carried = outputs[1 : 1 + len(carried)]
        for k, value in enumerate(outputs[1 + len(carried) :]):
            scans[k].append(value)
        iteration += 1
    declared = body.output[1 + len(carried) :]
    return [
        *carried,
        *(_stack(ctx, values, 0, declared[k], f"scan output {k}") for k, values in enumerate(scans)),
    ]


def _axis(ctx: NodeContext, axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ctx.error(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def convert_scan(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Scan -> its body once per position of the (static) scan axis; Scan-8, with
    its batch axis, once per batch element and position."""
    body = ctx.attr("body")
    if not isinstance(body, onnx.GraphProto):
        raise ctx.error("attribute body is missing")
    first = 1 if ctx.opset() < 9 else 0  # Scan-8's sequence_lens
    scanned = ctx.attr("num_scan_inputs")
    states = len(ctx.node.input) - first - (scanned or 0)
    if scanned is None or scanned < 1 or states < 0:
        raise ctx.error(f"num_scan_inputs={scanned} does not fit its {len(ctx.node.input)} inputs")
    outputs_scanned = len(body.output) - states
    if first:
        return _scan_batched(ctx, body, states, scanned, outputs_scanned)
    input_axes = list(ctx.attr("scan_input_axes", [0] * scanned))
    sources = [
        (ctx.node.input[states + j], input_axes[j], direction)
        for j, direction in enumerate(ctx.attr("scan_input_directions", [0] * scanned))
    ]
    return _scan(
        ctx, body, [ctx.static_value(i) for i in range(states)], sources,
        list(ctx.attr("scan_output_axes", [0] * outputs_scanned)),
        list(ctx.attr("scan_output_directions", [0] * outputs_scanned)), "",
    )  # fmt: skip


def _scan_batched(
    ctx: NodeContext, body: onnx.GraphProto, states: int, scanned: int, outputs_scanned: int
) -> list[ImportedValue]:
    """Scan-8: states [B, ...] and scan inputs [B, T, ...], each batch element scanned
    alone (sequence_lens, when given, must be T for every element)."""
    batches = {ctx.shape(1 + i)[0] for i in range(states + scanned) if ctx.shape(1 + i)}
    if len(batches) != 1:
        raise ctx.error(f"its inputs have different batch sizes {sorted(batches)}")
    (batch,) = batches
    if batch == 0:
        raise ctx.error("its batch is empty")
    if ctx.has_input(0):
        lengths = ctx.value(0)
        full = {ctx.shape(1 + states + j)[1] for j in range(scanned)}
        if not isinstance(lengths, np.ndarray) or set(lengths.reshape(-1).tolist()) != full:
            raise ctx.error("sequence_lens must be known at import time and the full length of every sequence")
    directions = list(ctx.attr("directions", [0] * scanned))
    picker = Expansion(ctx, "::batch")
    per_batch = []
    for b in range(batch):
        index = picker.constant(np.int64(b))

        def element(position: int, index: str = index) -> str:
            return picker.node("Gather", [ctx.node.input[position], index], axis=0)

        values = [ctx.lookup(element(1 + i)) for i in range(states)]
        sources = [(element(1 + states + j), 0, directions[j]) for j in range(scanned)]
        per_batch.append(
            _scan(ctx, body, values, sources, [0] * outputs_scanned, [0] * outputs_scanned, f"{b}::")
        )
    return [
        _stack(ctx, [results[k] for results in per_batch], 0, body.output[k], f"output {k}")
        for k in range(states + outputs_scanned)
    ]


def _scan(
    ctx: NodeContext,
    body: onnx.GraphProto,
    values: list[object],
    sources: list[tuple[str, int, int]],
    output_axes: list[int],
    output_directions: list[int],
    tag: str,
) -> list[ImportedValue]:
    """The body run along the scan inputs `sources` (name, axis, reversed), the state
    starting at `values`: the final state, then each scan output stacked."""
    states = len(values)
    lengths, located = set(), []
    for j, (name, axis, direction) in enumerate(sources):
        shape = shape_of(ctx.lookup(name))
        axis = _axis(ctx, axis, len(shape), f"scan_input_axes[{j}]")
        lengths.add(shape[axis])
        located.append((name, axis, direction))
    if len(lengths) != 1:
        raise ctx.error(f"its scan inputs have different lengths {sorted(lengths)} on their scan axes")
    (length,) = lengths
    known = all(isinstance(v, np.ndarray) for v in values) and all(
        isinstance(ctx.lookup(name), np.ndarray) for name, _, _ in located
    )
    if length * max(len(body.node), 1) > _unrolled_at_most(known):
        return _scan_op(ctx, body, values, located, output_axes, output_directions, tag)
    scans: list[list[object]] = [[] for _ in output_axes]
    slicer = Expansion(ctx, f"::slice{tag}")
    for step in range(length):
        slices = []
        for name, axis, direction in located:
            position = length - 1 - step if direction else step
            index = slicer.constant(np.int64(position))
            slices.append(ctx.lookup(slicer.node("Gather", [name, index], axis=axis)))
        prefix = f"{ctx.node.output[0]}::Scan::{tag}{step}::"
        outputs = _run_body(ctx, body, [*values, *slices], prefix, "body")
        values = outputs[:states]
        for k, value in enumerate(outputs[states:]):
            scans[k].append(value)
    results = list(values)
    for k, collected in enumerate(scans):
        if output_directions[k]:
            collected = collected[::-1]
        declared = body.output[states + k]
        rank = len(declared.type.tensor_type.shape.dim) + 1 if not collected else len(_shape(collected[0])) + 1
        axis = _axis(ctx, output_axes[k], rank, f"scan_output_axes[{k}]")
        results.append(_stack(ctx, collected, axis, declared, f"scan output {k}"))
    return results


def _scan_op(
    ctx: NodeContext,
    body: onnx.GraphProto,
    values: list[object],
    located: list[tuple[str, int, int]],
    output_axes: list[int],
    output_directions: list[int],
    tag: str,
) -> list[ImportedValue]:
    """A Scan -> `graph.scan`: each scan input with its scan axis moved first (and
    reversed when it is scanned backwards), the body's nodes in the region, and each
    stacked output moved to its axis (reversed for a backward scan output)."""
    prepare = Expansion(ctx, f"::scan{tag}")
    scanned = []
    for name, axis, direction in located:
        rank = len(shape_of(ctx.lookup(name)))
        if axis:
            perm = [axis, *(d for d in range(rank) if d != axis)]
            name = prepare.node("Transpose", [name], perm=perm)
        if direction:
            name = _reversed(prepare, name, shape_of(ctx.lookup(name))[0])
        value = ctx.lookup(name)
        scanned.append(ctx.materialize(value) if isinstance(value, np.ndarray) else value)
    inits = _carried_inputs(ctx, values, "the Scan is compiled as a loop")
    op = _scan_region(ctx, body, inits, scanned, f"Scan::{tag}body::", "a Scan compiled as a loop")
    length = scanned[0].type.get_shape()[0]
    results: list[ImportedValue] = list(op.results[: len(inits)])
    finish = Expansion(ctx, f"::scanned{tag}")
    for k, value in enumerate(op.results[len(inits) :]):
        name = finish.bound(value)
        if output_directions[k]:
            name = _reversed(finish, name, length)
        rank = len(value.type.get_shape())
        axis = _axis(ctx, output_axes[k], rank, f"scan_output_axes[{k}]")
        if axis:
            perm = [*range(1, axis + 1), 0, *range(axis + 1, rank)]
            name = finish.node("Transpose", [name], perm=perm)
        results.append(finish.result(name))
    return results


def _reversed(expansion: Expansion, name: str, length: int) -> str:
    """`name` with its first axis reversed."""
    positions = expansion.constant(np.arange(length - 1, -1, -1, dtype=np.int64))
    return expansion.node("Gather", [name, positions], axis=0)


def _carried_inputs(ctx: NodeContext, values: list[object], why: str) -> list[SSAValue]:
    """The initial carried values of a loop or scan compiled as one, as graph values."""
    inits = []
    for k, value in enumerate(values):
        if not (isinstance(value, np.ndarray) or hasattr(value, "type")):
            raise ctx.error(
                f"its loop-carried value {k} is a sequence or an optional, and {why}: "
                "strato carries tensors through such a loop"
            )
        inits.append(ctx.materialize(value) if isinstance(value, np.ndarray) else value)
    return inits


def _check_carried(ctx: NodeContext, given: list[SSAValue], inits: list[SSAValue], what: str) -> None:
    for k, (value, init) in enumerate(zip(given, inits, strict=True)):
        if value.type != init.type:
            raise ctx.error(
                f"its body gives loop-carried value {k} as {_dtype(value)} "
                f"{list(_shape(value))}, having taken it as {_dtype(init)} "
                f"{list(_shape(init))}: {what} keeps each carried value's type and shape"
            )


def _dtype(value: object) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    return numpy_dtype(value.type)


_INDEX_INPUTS = {
    "Gather": 1, "GatherElements": 1, "GatherND": 1, "Scatter": 1, "ScatterElements": 1,
    "ScatterND": 1, "TensorScatter": 2,
}  # fmt: skip
"""Operators that read at positions an input gives (by input position): out of range
positions are an error ONNX leaves undefined."""


def _faults_on_data(ctx: NodeContext, node: onnx.NodeProto) -> str | None:
    """Why `node` may fault on the values it reads (an integer division by zero, a
    position out of range), None when it cannot: what an If computed on both branches
    must not hold."""
    if node.op_type in ("Div", "Mod") and len(node.input) > 1:
        divisor = ctx.lookup(node.input[1])
        if _dtype(divisor).kind in "iu" and not (isinstance(divisor, np.ndarray) and np.all(divisor != 0)):
            return "divides integers by a divisor known only at run time"
    position = _INDEX_INPUTS.get(node.op_type)
    if (
        position is not None
        and position < len(node.input)
        and not isinstance(ctx.lookup(node.input[position]), np.ndarray)
    ):
        return "reads at positions known only at run time"
    return None


def _shape(value: object) -> tuple[int, ...]:
    if isinstance(value, np.ndarray):
        return value.shape
    return tuple(value.type.get_shape())


__all__ = [
    "IMPORT_TIME_INPUTS",
    "MAX_UNROLLED_NODES",
    "convert_if",
    "convert_loop",
    "convert_scan",
    "node_bodies",
    "outer_names",
    "unroll_limit",
    "with_outer_names",
]
