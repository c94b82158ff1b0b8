"""The padding tail of a non-dividing split: the loops run over the padded extent, so
the stage writes and reads beyond the iteration variable's extent; the local buffers it
indexes with that variable grow to the padded extent. Only a data-parallel variable of a
stage at the kernel's root, used as a plain index of local buffers, can be padded."""

from __future__ import annotations

from xdsl.dialects import memref

from strato.schedule.access import access_of
from strato.schedule.primitives.checks import fail
from strato.schedule.state import ScheduleState, Split, Stage


def _root(stage: Stage, var: str) -> str | None:
    roots = stage.roots_of(var)
    if len(roots) != 1:
        return None
    # only a chain of splits keeps a variable a plain function of one root
    for rel in stage.relations:
        if not isinstance(rel, Split) and roots & stage.roots_of(rel.parents[0]):
            return None
    return next(iter(roots))


def _covered(stage: Stage, var: str, ext: dict[str, int]) -> int:
    """One past the greatest value `var` takes when every loop runs in full."""
    for rel in stage.relations:
        if isinstance(rel, Split) and rel.parent == var:
            top = 0
            for i, child in enumerate(rel.children):
                stride = 1
                for c in rel.children[i + 1 :]:
                    stride *= ext[c]
                top += (_covered(stage, child, ext) - 1) * stride
            return top + 1
    return ext[var]


def pad_for_split(state: ScheduleState, stage: Stage, var: str) -> None:
    """Pad what the stage indexes with `var`, just split with tail="pad"."""
    if stage.is_reduction_var(var):
        raise fail("split", f"loop {var} of stage {stage.name} is a reduction loop; padding would change the result, use tail=\"guard\"")
    root = _root(stage, var)
    if root is None or stage.attach is not None:
        raise fail("split", f"loop {var} of stage {stage.name} cannot be padded; use tail=\"guard\"")
    padded_root = _covered(stage, root, stage.extents())
    names = dict(zip(stage.body.vars, stage.root_vars))
    pads: dict[int, dict[int, int]] = {}
    for op in stage.body.block.walk():
        access = access_of(op, lambda v: v in names) if isinstance(op, memref.LoadOp | memref.StoreOp) else None
        if access is None:
            continue
        buffer = stage.body.buffer_of(access.buffer)
        assert buffer is not None
        for d, index in enumerate(access.indices):
            uses = index is None or any(names[v] == root for v in index.variables)  # type: ignore[index]
            if not uses:
                continue
            plain = index is not None and index.terms == ((index.terms[0][0], 1),) and index.constant == 0
            if not plain or state.is_output(buffer):
                what = state.buffers[buffer].name
                raise fail(
                    "split",
                    f"stage {stage.name} indexes buffer {what} with {root} in a way padding cannot "
                    "extend (an argument of the kernel, or not the variable itself); use tail=\"guard\"",
                )
            pads.setdefault(buffer, {})[d] = padded_root
    for buffer, dims in pads.items():
        b = state.buffers[buffer]
        shape = list(b.logical_shape)
        for d, size in dims.items():
            shape[d] = max(shape[d], size)
        b.padded = tuple(shape)
