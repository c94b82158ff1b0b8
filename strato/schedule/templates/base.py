"""Schedule templates: a schedule with knobs, for one kind of stage.

A knob is a named choice with a finite domain and a default; a template applies its
primitives to one stage of a `Schedule` given a value for each knob. The defaults make a
fast untuned kernel; the domains are the autotuner's search space.

Tile-size knobs are preferred sizes: a template uses the largest size up to the knob's
value that divides the loop (`fit`), so every value of a domain is valid on every
workload, and the exact tiles an intrinsic needs always divide.

    template = template_for(sch, stage)
    template.apply(sch, stage, template.defaults())
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strato.schedule import LoopHandle, Schedule, StageHandle


@dataclass(frozen=True)
class Knob:
    """A named choice: `default` is one of `domain`. `initial` is the default, or a
    function computing it when asked (from the CPU being compiled for, e.g. `host_lanes`)."""

    name: str
    domain: tuple[Any, ...]
    initial: Any

    def __post_init__(self) -> None:
        if not callable(self.initial):
            assert self.initial in self.domain, f"knob {self.name}: default not in domain"

    @property
    def default(self) -> Any:
        value = self.initial() if callable(self.initial) else self.initial
        assert value in self.domain, f"knob {self.name}: default {value!r} not in domain"
        return value


@dataclass(frozen=True)
class Template:
    """A schedule with knobs for the stages `matches` accepts."""

    name: str
    knobs: tuple[Knob, ...]
    matches: Callable[[Schedule, StageHandle], bool] = field(compare=False)
    schedule: Callable[[Schedule, StageHandle, dict[str, Any]], None] = field(compare=False)
    checked_at_build: bool = field(default=False, compare=False)
    """Whether the schedule tensorizes or computes a stage after its producer's loop:
    the kernel is then checked at every rebuild, so each later primitive on any of its
    stages rebuilds it; schedule-default applies such templates after the others."""

    def defaults(self) -> dict[str, Any]:
        return {knob.name: knob.default for knob in self.knobs}

    def apply(self, sch: Schedule, stage: StageHandle, knobs: dict[str, Any]) -> None:
        unknown = set(knobs) - {k.name for k in self.knobs}
        assert not unknown, f"template {self.name}: unknown knobs {sorted(unknown)}"
        values = self.defaults() | knobs
        for knob in self.knobs:
            assert values[knob.name] in knob.domain, (
                f"template {self.name}: {knob.name}={values[knob.name]!r} is outside "
                f"{knob.domain}"
            )
        self.schedule(sch, stage, values)


_TEMPLATES: list[Template] = []


def register_template(template: Template) -> Template:
    """Add a template; the first registered one that matches a stage is its template."""
    _TEMPLATES.append(template)
    return template


def registered_templates() -> list[Template]:
    from strato.schedule.templates import load_templates

    load_templates()
    return list(_TEMPLATES)


def template_for(sch: Schedule, stage: StageHandle) -> Template | None:
    for template in registered_templates():
        if template.matches(sch, stage):
            return template
    return None


# -- helpers the templates share -----------------------------------------------------------


def fit(extent: int, preferred: int) -> int:
    """The largest divisor of `extent` that is at most `preferred` (at least 1)."""
    for size in range(min(extent, max(preferred, 1)), 0, -1):
        if extent % size == 0:
            return size
    return 1


def stage_kind(stage: StageHandle | str) -> str:
    """The operator a stage computes, from its name: `conv`, `blocked_conv`, `dense`,
    `lstm_gates_3` -> `lstm_gates`, `softmax_sum` -> `softmax_sum`."""
    name = stage.name if isinstance(stage, StageHandle) else stage
    base = name.split(".")[0]
    while base and base[-1].isdigit():
        base = base[:-1]
    return base.rstrip("_")


def is_reduction(sch: Schedule, stage: StageHandle) -> bool:
    return sch.state.stage(stage.name).is_reduction


def spatial_and_reduction_loops(
    sch: Schedule, stage: StageHandle
) -> tuple[list[LoopHandle], list[LoopHandle]]:
    state = sch.state.stage(stage.name)
    loops = sch.get_loops(stage)
    spatial = [loop for loop in loops if not state.is_reduction_var(loop.axis)]
    reduction = [loop for loop in loops if state.is_reduction_var(loop.axis)]
    return spatial, reduction


def vectorize_innermost(
    sch: Schedule, stage: StageHandle, loop: LoopHandle, width: int, max_lanes: int = 64
) -> LoopHandle | None:
    """Vectorize `loop` (which must be the innermost loop of its stage) by up to `width`
    lanes: the whole loop when it is at most `max_lanes` and `width` does not divide it,
    else its inner part of `fit(extent, width)` lanes. The vectorized loop, if any."""
    if width <= 1 or loop.extent <= 1:
        return None
    lanes = fit(loop.extent, width)
    if lanes == loop.extent:
        sch.vectorize(loop)
        return loop
    if lanes < min(4, width) and loop.extent <= max_lanes:
        sch.vectorize(loop)
        return loop
    if lanes < 2:
        return None
    _, inner = sch.split(loop, [None, lanes])
    sch.vectorize(inner)
    return inner


def host_lanes() -> int:
    """fp32 vector lanes of the CPU being compiled for (a knob's `initial`, so it is read
    when a schedule is built, not when the template is defined)."""
    from strato.schedule.intrinsics.cpu import host_vector_lanes

    return host_vector_lanes()


def read_strides(sch: Schedule, stage: StageHandle) -> dict[str, dict[str, int | None]]:
    """For each buffer the stage reads or writes (by name): the elements its linearized
    address moves per step of each root loop variable (None when not affine)."""
    from xdsl.dialects import memref

    from strato.targets.llvm.index_simplification import affine_index
    from strato.targets.llvm.type_conversion import row_major_strides

    state = sch.state
    s = state.stage(stage.name)
    body = s.body
    variables = list(body.vars)
    names = s.root_vars
    result: dict[str, dict[str, int | None]] = {}
    for op in body.block.ops:
        if not isinstance(op, memref.LoadOp | memref.StoreOp):
            continue
        buffer = body.buffer_of(op.memref)
        if buffer is None:
            continue
        info = state.buffers[buffer]
        strides = row_major_strides(info.logical_shape)
        per_var: dict[str, int | None] = {name: 0 for name in names}
        for index, stride in zip(op.indices, strides, strict=False):
            affine = affine_index(index, lambda v: v in variables, lambda v: None)
            for var, name in zip(variables, names, strict=True):
                if affine is None:
                    per_var[name] = None
                elif per_var[name] is not None:
                    per_var[name] += affine.coefficient(var) * stride  # type: ignore[operator]
        previous = result.setdefault(info.name, per_var)
        for name in names:
            if previous[name] != per_var[name]:
                previous[name] = previous[name] if per_var[name] == 0 else per_var[name]
    return result


def tile_for_registers(
    sch: Schedule,
    stage: StageHandle,
    lanes_axis: str,
    rows_axis: str | None,
    width: int,
    rows: int,
) -> None:
    """The register-tiling recipe for a reduction: the `lanes_axis` loop split by
    `fit(extent, width)` and vectorized, the `rows_axis` loop split by `fit(extent,
    rows)` and unrolled, both inner parts innermost (inside the reduction loops), so
    rows x lanes accumulators stay in vector registers across the reduction while each
    loaded value is reused by a whole row or column of the tile."""
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    by_axis = {loop.axis: loop for loop in spatial}
    lanes_loop = by_axis[lanes_axis]
    lanes = fit(lanes_loop.extent, width)
    outer_order: list[LoopHandle] = []
    inner_order: list[LoopHandle] = []
    for loop in spatial:
        if loop.axis == lanes_axis:
            if lanes < lanes_loop.extent:
                lo, li = sch.split(loop, [None, lanes])
                outer_order.append(lo)
            else:
                li = loop
            lanes_inner = li
        elif loop.axis == rows_axis and rows > 1:
            count = fit(loop.extent, rows)
            if count < loop.extent:
                ro, ri = sch.split(loop, [None, count])
                outer_order.append(ro)
            else:
                ri = loop
            inner_order.append(ri)
        else:
            outer_order.append(loop)
    reduction = [sch.get_loop(stage, loop.axis) for loop in reduction]
    order = [*outer_order, *reduction, *inner_order, lanes_inner]
    sch.reorder(*[sch.get_loop(stage, loop.axis) for loop in order])
    for loop in inner_order:
        sch.unroll(sch.get_loop(stage, loop.axis))
    if lanes > 1 or lanes_inner.extent > 1:
        sch.vectorize(sch.get_loop(stage, lanes_inner.axis))
