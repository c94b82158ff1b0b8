"""ONNX control flow whose decisions are known at compile time: If, Loop and Scan.

With static shapes, many models branch and loop on values the importer already knows: an
If on a condition computed from shapes or constants (what the TorchScript exporter writes
for Python `if`s on sizes), a Loop over a constant trip count, a Scan over a sequence
axis of static length. Each is imported as the graph ops of what it runs:

- If: the nodes of the branch its condition (known at import time) takes.
- Loop: its body once per iteration, each iteration's nodes taking the loop-carried
  values of the one before, while the trip count (known) and the body's condition (known
  after each iteration) allow; the scan outputs stacked along a new first axis.
- Scan: its body once per position of the scan axis (static), reading that position of
  each scan input (in the input's direction); scan outputs stacked along their axes.

A condition or trip count computed at run time is refused, naming the node and the
value; so is a loop that would unroll beyond `MAX_UNROLLED_NODES` nodes. Run-time control
flow (region ops at every level) is not imported yet.

Body values are renamed per use (`<output>::<op>::<iteration>::<name>`), nested bodies
included, so that iterations and branches never share a name or a cached constant; a
body reads the enclosing graph's values by their own names.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.expansion import Expansion

MAX_UNROLLED_NODES = 20_000
"""The most nodes a Loop or Scan may unroll into (iterations times body nodes)."""


def _locals(graph: onnx.GraphProto, names: set[str] | None = None) -> set[str]:
    """The names `graph` defines (its inputs, initializers and node outputs), those of
    the bodies nested in its nodes included."""
    names = set() if names is None else names
    names.update(value.name for value in graph.input)
    names.update(init.name for init in graph.initializer)
    for node in graph.node:
        names.update(name for name in node.output if name)
        for body in _bodies(node):
            _locals(body, names)
    return names


def _bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
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
        for body in _bodies(node):
            _rename(body, rename)


def _instance(graph: onnx.GraphProto, prefix: str) -> onnx.GraphProto:
    """A copy of `graph` whose own names (nested bodies' included) carry `prefix`."""
    names = _locals(graph)
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    _rename(copy, lambda name: prefix + name if name in names else name)
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
        raise ctx.error(
            f"{what} is known only at run time: strato compiles control flow whose "
            "decisions are known at compile time (from constants and static shapes)"
        )
    if value.size != 1:
        raise ctx.error(f"{what} must hold one value, got shape {list(value.shape)}")
    return value.reshape(-1)[0]


def convert_if(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX If -> the nodes of the branch its (known) condition takes."""
    condition = bool(_known_scalar(ctx, ctx.value(0), "its condition"))
    taken = "then_branch" if condition else "else_branch"
    branch = ctx.attr(taken)
    if not isinstance(branch, onnx.GraphProto):
        raise ctx.error(f"attribute {taken} is missing")
    prefix = f"{ctx.node.output[0]}::If::{taken}::"
    return _run_body(ctx, branch, [], prefix, taken)


def _budget(ctx: NodeContext, body: onnx.GraphProto, iterations: int) -> None:
    if iterations * max(len(body.node), 1) > MAX_UNROLLED_NODES:
        raise ctx.error(
            f"it runs its body of {len(body.node)} nodes {iterations} times: more than "
            f"the {MAX_UNROLLED_NODES} nodes strato unrolls a loop into"
        )


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
    """ONNX Loop with a known trip count and known conditions -> its body unrolled."""
    body = ctx.attr("body")
    if not isinstance(body, onnx.GraphProto):
        raise ctx.error("attribute body is missing")
    carried = [ctx.static_value(i) for i in range(2, len(ctx.node.input))]
    count = len(body.output) - 1 - len(carried)
    if count < 0:
        raise ctx.error(f"its body gives {len(body.output)} outputs for {len(carried)} loop-carried values")
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
    """ONNX Scan (opset 9 on) -> its body once per position of the (static) scan axis."""
    if ctx.opset() < 9:
        raise ctx.error("Scan of opsets before 9 (with sequence_lens) is not supported")
    body = ctx.attr("body")
    if not isinstance(body, onnx.GraphProto):
        raise ctx.error("attribute body is missing")
    scanned = ctx.attr("num_scan_inputs")
    states = len(ctx.node.input) - scanned
    if scanned is None or scanned < 1 or states < 0:
        raise ctx.error(f"num_scan_inputs={scanned} does not fit its {len(ctx.node.input)} inputs")
    outputs_scanned = len(body.output) - states
    input_axes = list(ctx.attr("scan_input_axes", [0] * scanned))
    input_directions = list(ctx.attr("scan_input_directions", [0] * scanned))
    output_axes = list(ctx.attr("scan_output_axes", [0] * outputs_scanned))
    output_directions = list(ctx.attr("scan_output_directions", [0] * outputs_scanned))
    lengths = set()
    sources = []
    for j in range(scanned):
        shape = ctx.shape(states + j)
        axis = _axis(ctx, input_axes[j], len(shape), f"scan_input_axes[{j}]")
        lengths.add(shape[axis])
        sources.append((ctx.node.input[states + j], axis, input_directions[j]))
    if len(lengths) != 1:
        raise ctx.error(f"its scan inputs have different lengths {sorted(lengths)} on their scan axes")
    (length,) = lengths
    _budget(ctx, body, length)
    values = [ctx.static_value(i) for i in range(states)]
    scans: list[list[object]] = [[] for _ in range(outputs_scanned)]
    slicer = Expansion(ctx, "::slice")
    for step in range(length):
        slices = []
        for name, axis, direction in sources:
            position = length - 1 - step if direction else step
            index = slicer.constant(np.int64(position))
            slices.append(ctx.lookup(slicer.node("Gather", [name, index], axis=axis)))
        prefix = f"{ctx.node.output[0]}::Scan::{step}::"
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


def _shape(value: object) -> tuple[int, ...]:
    if isinstance(value, np.ndarray):
        return value.shape
    return tuple(value.type.get_shape())


__all__ = ["MAX_UNROLLED_NODES", "convert_if", "convert_loop", "convert_scan"]
