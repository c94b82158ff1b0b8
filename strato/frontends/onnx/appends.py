"""Lists built by a Loop, one tensor appended per iteration, as the Loop's scan outputs.

What the TorchScript exporter writes for a Python list filled in a loop and stacked or
concatenated after it,

    outs = []
    for i in range(n):
        h = step(h)
        outs.append(h)
    y = torch.stack(outs)            # or torch.cat(outs, dim=a)

is a Loop carrying a sequence, started by SequenceEmpty, to which each iteration's body
appends one tensor (SequenceInsert without a position), read after the loop by
ConcatFromSequence only. That is a scan output with extra steps: the rewrite here drops
the carried sequence and gives the appended tensor as a scan output of the Loop, which
stacks them along a new first axis, then moves that axis where ConcatFromSequence puts
it (a Transpose, and for a concatenation a Reshape merging it with the next axis). The
loop then carries tensors only: the importer compiles it (unrolled, a `graph.scan`, or,
with a trip count known only at run time, on the host and then compiled whole for a trip
count that comes back, `strato.staged`) instead of refusing a sequence whose length is
known only at run time.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


def appends_as_scan_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every Loop of its graph that appends to a list made to give the list
    as a scan output (see the module docstring): a copy, or `model` itself when it has
    no such Loop."""
    if not any(node.op_type == "Loop" for node in model.graph.node):
        return model
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    changed = False
    while _rewrite_one(rewritten):
        changed = True
    return rewritten if changed else model


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [
        graph
        for attr in node.attribute
        for graph in ([attr.g] if attr.HasField("g") else list(attr.graphs))
    ]


def _reads(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Each name -> the nodes of `graph` that read it, directly or in a subgraph."""
    readers: dict[str, list[onnx.NodeProto]] = {}

    def names_read(graph: onnx.GraphProto) -> set[str]:
        found = set()
        for node in graph.node:
            found.update(name for name in node.input if name)
            for sub in _subgraphs(node):
                found |= names_read(sub)
        found.update(value.name for value in graph.output)
        return found

    for node in graph.node:
        names = {name for name in node.input if name}
        for sub in _subgraphs(node):
            names |= names_read(sub)
        for name in names:
            readers.setdefault(name, []).append(node)
    return readers


def _rewrite_one(model: onnx.ModelProto) -> bool:
    """Rewrite one appending Loop of `model`'s graph; whether there was one."""
    graph = model.graph
    producers = {name: node for node in graph.node for name in node.output if name}
    readers = _reads(graph)
    outputs = {value.name for value in graph.output}
    for loop in graph.node:
        if loop.op_type != "Loop" or loop.domain not in ("", "ai.onnx"):
            continue
        (body,) = _subgraphs(loop) or (None,)
        if body is None:
            continue
        carried = len(loop.input) - 2
        for k in range(carried):
            start = producers.get(loop.input[2 + k])
            final = loop.output[k] if k < len(loop.output) else ""
            concats = readers.get(final, []) if final else []
            if (
                start is None
                or start.op_type != "SequenceEmpty"
                or len(readers.get(loop.input[2 + k], [])) != 1
                or final in outputs
                or any(node.op_type != "ConcatFromSequence" for node in concats)
            ):
                continue
            append = _append_of(body, k)
            if append is None:
                continue
            ranks = [_element_rank(model, body, append.input[1])] if concats else []
            if concats and ranks[0] is None and any(_needs_rank(c) for c in concats):
                continue
            _make_scan_output(model, loop, body, k, append, start, concats, ranks[0] if ranks else None)
            return True
    return False


def _append_of(body: onnx.GraphProto, k: int) -> onnx.NodeProto | None:
    """The SequenceInsert that appends to carried value k of a Loop body and gives the
    next one, when that is all the body does with it."""
    if len(body.input) < 3 + k or len(body.output) < 2 + k:
        return None
    given, next_value = body.input[2 + k].name, body.output[1 + k].name
    readers = _reads(body)
    users = readers.get(given, [])
    if len(users) != 1:
        return None
    (append,) = users
    if (
        append.op_type != "SequenceInsert"
        or len(append.input) != 2
        or append.input[0] != given
        or list(append.output) != [next_value]
        or readers.get(next_value)
        or sum(value.name == next_value for value in body.output) != 1
        or any(value.name == given for value in body.output)
    ):
        return None
    return append


def _needs_rank(concat: onnx.NodeProto) -> bool:
    """Whether moving the stacked axis where `concat` puts it needs the rank of the
    appended tensors (an axis other than the first, or one counted from the end)."""
    return _attribute(concat, "axis", 0) != 0


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    for attr in node.attribute:
        if attr.name == name:
            return int(attr.i)
    return default


def _element_rank(model: onnx.ModelProto, body: onnx.GraphProto, name: str) -> int | None:
    """The rank of the body's value `name`, as declared or as shape inference gives it."""
    for value in (*body.value_info, *body.output, *body.input):
        if value.name == name and value.type.tensor_type.HasField("shape"):
            return len(value.type.tensor_type.shape.dim)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - best effort: without a rank the Loop is left as it is
        return None
    for node in inferred.graph.node:
        for sub in _subgraphs(node):
            for value in (*sub.value_info, *sub.output):
                if value.name == name and value.type.tensor_type.HasField("shape"):
                    return len(value.type.tensor_type.shape.dim)
    return None


def _make_scan_output(
    model: onnx.ModelProto,
    loop: onnx.NodeProto,
    body: onnx.GraphProto,
    k: int,
    append: onnx.NodeProto,
    start: onnx.NodeProto,
    concats: list[onnx.NodeProto],
    rank: int | None,
) -> None:
    graph = model.graph
    carried = len(loop.input) - 2
    scans = len(body.output) - 1 - carried
    appended = append.input[1]
    final = loop.output[k] if k < len(loop.output) else ""
    dtype = _attribute(start, "dtype", onnx.TensorProto.FLOAT)
    row = f"{loop.name or loop.output[0]}::appended{k}"
    # the body: the appended tensor a scan output, the carried list gone
    lists = {body.input[2 + k].name, body.output[1 + k].name}
    body.node.remove(append)
    body.node.append(helper.make_node("Identity", [appended], [row]))
    del body.input[2 + k]
    del body.output[1 + k]
    _forget(body, lists)
    body.output.append(helper.make_tensor_value_info(row, dtype, None))
    # the loop: one carried value fewer, one scan output more (after the others)
    stacked = f"{row}::stacked"
    outputs = list(loop.output) + [""] * (carried + scans - len(loop.output))
    del outputs[k]
    outputs.append(stacked)
    del loop.input[2 + k]
    del loop.output[:]
    loop.output.extend(outputs)
    if not any(name in start.output for node in graph.node if node is not loop for name in node.input):
        graph.node.remove(start)
    _forget(graph, {final, *start.output} - {""})
    for concat in concats:
        _replace_concat(graph, concat, stacked, rank)


def _forget(graph: onnx.GraphProto, names: set[str]) -> None:
    """Drop the value_info of `names` (values the rewrite removed)."""
    for value in [v for v in graph.value_info if v.name in names]:
        graph.value_info.remove(value)


def _replace_concat(graph: onnx.GraphProto, concat: onnx.NodeProto, stacked: str, rank: int | None) -> None:
    """ConcatFromSequence of the appended tensors (rank `rank`) -> the same from
    `stacked` (them stacked along a new first axis)."""
    axis = _attribute(concat, "axis", 0)
    new_axis = _attribute(concat, "new_axis", 0)
    (result,) = concat.output
    prefix = f"{result}::from_stack"
    nodes: list[onnx.NodeProto] = []
    if new_axis:  # torch.stack: the new axis goes to `axis`
        if axis < 0:
            axis += rank + 1  # type: ignore[operator]
        if axis == 0:
            nodes.append(helper.make_node("Identity", [stacked], [result]))
        else:
            perm = [*range(1, axis + 1), 0, *range(axis + 1, rank + 1)]  # type: ignore[operator]
            nodes.append(helper.make_node("Transpose", [stacked], [result], perm=perm))
    else:  # torch.cat: the stacked axis merges with axis `axis` of the tensors
        if axis < 0:
            axis += rank  # type: ignore[operator]
        moved = stacked
        if axis:
            perm = [*range(1, axis + 1), 0, *range(axis + 1, rank + 1)]  # type: ignore[operator]
            moved = f"{prefix}::moved"
            nodes.append(helper.make_node("Transpose", [stacked], [moved], perm=perm))
        constants = {
            "before": np.array([0], np.int64), "at": np.array([axis], np.int64),
            "after": np.array([axis + 2], np.int64), "end": np.array([2**62], np.int64),
            "merged": np.array([-1], np.int64),
        }  # fmt: skip
        for name, value in constants.items():
            nodes.append(
                helper.make_node("Constant", [], [f"{prefix}::{name}"], value=numpy_helper.from_array(value))
            )
        shape = f"{prefix}::shape"
        nodes += [
            helper.make_node("Shape", [moved], [shape]),
            helper.make_node("Slice", [shape, f"{prefix}::before", f"{prefix}::at"], [f"{prefix}::head"]),
            helper.make_node("Slice", [shape, f"{prefix}::after", f"{prefix}::end"], [f"{prefix}::tail"]),
            helper.make_node(
                "Concat", [f"{prefix}::head", f"{prefix}::merged", f"{prefix}::tail"], [f"{prefix}::target"], axis=0
            ),
            helper.make_node("Reshape", [moved, f"{prefix}::target"], [result]),
        ]
    position = list(graph.node).index(concat)
    graph.node.remove(concat)
    for offset, node in enumerate(nodes):
        graph.node.insert(position + offset, node)


__all__ = ["appends_as_scan_outputs"]
