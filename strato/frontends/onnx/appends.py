"""Lists built by a Loop, one tensor appended per iteration, as the Loop's scan outputs.

What the TorchScript exporter writes for a Python list filled in a loop and stacked or
concatenated after it,

    outs = []
    for i in range(n):
        h = step(h)
        outs.append(h)
    y = torch.stack(outs)            # or torch.cat(outs, dim=a)

is a Loop carrying a sequence, started by SequenceEmpty (or SequenceConstruct and
appends), to which each iteration's body appends one tensor of a static shape
(SequenceInsert without a position), read after the loop, after more appends, by
ConcatFromSequence only. That is a scan output with extra steps: the rewrite here drops
the carried sequence and gives the appended tensor as a scan output of the Loop, which
stacks them along a new first axis, then moves that axis where ConcatFromSequence puts
it (a Transpose, and for a concatenation a Reshape merging it with the next axis), and
concatenates the tensors listed before and after the loop around it. The loop then
carries tensors only: the importer compiles it (unrolled, a `graph.scan`, or,
decided at run time, on the host and then in compiled chunks of iterations,
`strato.staged`) instead of refusing a sequence whose length is known only at run time.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from strato.frontends.onnx.convert_control import node_bodies


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


def _reads(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Each name -> the nodes of `graph` that read it, directly or in a subgraph."""
    readers: dict[str, list[onnx.NodeProto]] = {}

    def names_read(graph: onnx.GraphProto) -> set[str]:
        found = set()
        for node in graph.node:
            found.update(name for name in node.input if name)
            for sub in node_bodies(node):
                found |= names_read(sub)
        found.update(value.name for value in graph.output)
        return found

    for node in graph.node:
        names = {name for name in node.input if name}
        for sub in node_bodies(node):
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
        (body,) = node_bodies(loop) or (None,)
        if body is None:
            continue
        for k in range(len(loop.input) - 2):
            before = _list_before(loop.input[2 + k], producers, readers, outputs)
            final = loop.output[k] if k < len(loop.output) else ""
            after = _list_after(final, readers, outputs)
            if before is None or after is None:
                continue
            append = _append_of(body, k)
            if append is None:
                continue
            chain, concats = after
            element = _element_type(model, body, append.input[1])
            if not element.HasField("shape") or not all(d.HasField("dim_value") for d in element.shape.dim):
                continue  # tensors whose sizes may differ: a stack cannot hold them
            rank = len(element.shape.dim)
            dtype = _attribute(before[0], "dtype", onnx.TensorProto.FLOAT)
            if before[0].op_type != "SequenceEmpty":
                dtype = element.elem_type
            if not dtype:
                continue
            declared = helper.make_tensor_value_info("", dtype, None)
            if element.HasField("shape"):
                declared.type.tensor_type.shape.CopyFrom(element.shape)
            _make_scan_output(model, loop, body, k, append, before, chain, concats, rank, declared)
            return True
    return False


_LIST_STARTS = ("SequenceEmpty", "SequenceConstruct")


def _list_before(
    name: str,
    producers: dict[str, onnx.NodeProto],
    readers: dict[str, list[onnx.NodeProto]],
    outputs: set[str],
) -> list[onnx.NodeProto] | None:
    """The nodes that build the list `name` a Loop starts from (a SequenceEmpty or
    SequenceConstruct, then appends), first to last, when each is read only by the
    next and the Loop; None otherwise."""
    chain: list[onnx.NodeProto] = []
    while True:
        node = producers.get(name)
        if node is None or len(readers.get(name, [])) != 1 or name in outputs:
            return None
        chain.append(node)
        if node.op_type in _LIST_STARTS:
            return chain[::-1]
        if node.op_type != "SequenceInsert" or len(node.input) != 2:
            return None
        name = node.input[0]


def _list_after(
    name: str, readers: dict[str, list[onnx.NodeProto]], outputs: set[str]
) -> tuple[list[onnx.NodeProto], list[onnx.NodeProto]] | None:
    """The appends to the list `name` a Loop gives (each read only by the next), and the
    ConcatFromSequence nodes that read the last; None when anything else reads them."""
    chain: list[onnx.NodeProto] = []
    while name:
        if name in outputs:
            return None
        users = readers.get(name, [])
        if len(users) == 1 and users[0].op_type == "SequenceInsert" and len(users[0].input) == 2:
            if users[0].input[0] != name:
                return None
            chain.append(users[0])
            name = users[0].output[0]
            continue
        if any(user.op_type != "ConcatFromSequence" for user in users):
            return None
        return chain, users
    return chain, []


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


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    for attr in node.attribute:
        if attr.name == name:
            return int(attr.i)
    return default


def _element_type(model: onnx.ModelProto, body: onnx.GraphProto, name: str) -> onnx.TypeProto.Tensor:
    """The tensor type of the body's value `name`: with a static shape when shape
    inference or the body's declarations give one (exporters often declare symbolic
    sizes that inference resolves from the loop's carried values), else as declared (an
    empty one when nothing says)."""
    found = [value.type.tensor_type for value in (*body.value_info, *body.output, *body.input) if value.name == name]
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - best effort: the declarations stand
        inferred = None
    if inferred is not None:
        for node in inferred.graph.node:
            for sub in node_bodies(node):
                found += [value.type.tensor_type for value in (*sub.value_info, *sub.output) if value.name == name]
    typed = [tensor for tensor in found if tensor.elem_type]
    for tensor in typed:
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            return tensor
    return typed[0] if typed else onnx.TypeProto.Tensor()


def _make_scan_output(
    model: onnx.ModelProto,
    loop: onnx.NodeProto,
    body: onnx.GraphProto,
    k: int,
    append: onnx.NodeProto,
    before: list[onnx.NodeProto],
    after: list[onnx.NodeProto],
    concats: list[onnx.NodeProto],
    rank: int,
    declared: onnx.ValueInfoProto,
) -> None:
    """Make carried value k of `loop` (a list `before` builds, `append` appends to in
    the body and `after` after it, read by `concats`) a scan output of the appended
    tensors (of type `declared`)."""
    graph = model.graph
    carried = len(loop.input) - 2
    scans = len(body.output) - 1 - carried
    appended = append.input[1]
    final = loop.output[k] if k < len(loop.output) else ""
    start = before[0]
    row = f"{loop.name or loop.output[0]}::appended{k}"
    # the body: the appended tensor a scan output, the carried list gone
    lists = {body.input[2 + k].name, body.output[1 + k].name}
    body.node.remove(append)
    body.node.append(helper.make_node("Identity", [appended], [row]))
    del body.input[2 + k]
    del body.output[1 + k]
    _forget(body, lists)
    body.output.append(declared)
    body.output[-1].name = row
    # the loop: one carried value fewer, one scan output more (after the others)
    stacked = f"{row}::stacked"
    outputs = list(loop.output) + [""] * (carried + scans - len(loop.output))
    del outputs[k]
    outputs.append(stacked)
    del loop.input[2 + k]
    del loop.output[:]
    loop.output.extend(outputs)
    # the tensors listed before the loop (SequenceConstruct's, then appended) and after
    first = [name for name in start.input if name] if start.op_type == "SequenceConstruct" else []
    first += [node.input[1] for node in before[1:]]
    last = [node.input[1] for node in after]
    removed = [*before, *after]
    for node in removed:
        graph.node.remove(node)
    _forget(graph, {final, *(name for node in removed for name in node.output)} - {""})
    for concat in concats:
        _replace_concat(graph, concat, stacked, rank, first, last)


def _forget(graph: onnx.GraphProto, names: set[str]) -> None:
    """Drop the value_info of `names` (values the rewrite removed)."""
    for value in [v for v in graph.value_info if v.name in names]:
        graph.value_info.remove(value)


def _replace_concat(
    graph: onnx.GraphProto,
    concat: onnx.NodeProto,
    stacked: str,
    rank: int,
    first: list[str],
    last: list[str],
) -> None:
    """ConcatFromSequence of the tensors `first`, the appended ones (rank `rank`) and
    `last` -> the same from `stacked` (the appended ones stacked along a new first
    axis), joined with `first` and `last`."""
    axis = _attribute(concat, "axis", 0)
    new_axis = _attribute(concat, "new_axis", 0)
    (result,) = concat.output
    prefix = f"{result}::from_stack"
    joined = f"{prefix}::joined" if first or last else result
    nodes: list[onnx.NodeProto] = []
    if new_axis:  # torch.stack: the new axis goes to `axis`
        at = axis + rank + 1 if axis < 0 else axis
        if at == 0:
            nodes.append(helper.make_node("Identity", [stacked], [joined]))
        else:
            perm = [*range(1, at + 1), 0, *range(at + 1, rank + 1)]
            nodes.append(helper.make_node("Transpose", [stacked], [joined], perm=perm))
    else:  # torch.cat: the stacked axis merges with axis `axis` of the tensors
        at = axis + rank if axis < 0 else axis
        moved = stacked
        if at:
            perm = [*range(1, at + 1), 0, *range(at + 1, rank + 1)]
            moved = f"{prefix}::moved"
            nodes.append(helper.make_node("Transpose", [stacked], [moved], perm=perm))
        constants = {
            "before": np.array([0], np.int64), "at": np.array([at], np.int64),
            "after": np.array([at + 2], np.int64), "end": np.array([2**62], np.int64),
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
            helper.make_node("Reshape", [moved, f"{prefix}::target"], [joined]),
        ]
    if first or last:  # the tensors listed outside the loop, around the stacked ones
        pieces = []
        for n, name in enumerate([*first, "", *last]):
            if not name:
                pieces.append(joined)
            elif new_axis:
                axes = f"{prefix}::axes"
                if not any(node.output[0] == axes for node in nodes):
                    nodes.append(
                        helper.make_node("Constant", [], [axes], value=numpy_helper.from_array(np.array([axis], np.int64)))
                    )
                pieces.append(f"{prefix}::piece{n}")
                nodes.append(helper.make_node("Unsqueeze", [name, axes], [pieces[-1]]))
            else:
                pieces.append(name)
        nodes.append(helper.make_node("Concat", pieces, [result], axis=axis))
    position = list(graph.node).index(concat)
    graph.node.remove(concat)
    for offset, node in enumerate(nodes):
        graph.node.insert(position + offset, node)


__all__ = ["appends_as_scan_outputs"]
