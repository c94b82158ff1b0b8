"""Schedule templates: a schedule with knobs, for one kind of stage.

A knob is a named choice with a finite domain and a default; a template applies its
primitives to one stage of a `Schedule` given a value for each knob. The defaults make a
fast untuned kernel; the domains are the autotuner's search space. A template belongs to
a target (the CPU's live in strato.targets.llvm.templates) and schedules for the machine
a `ScheduleContext` describes: its vector lanes and registers, the threads parallel
loops run on, and where knob values other than the defaults come from.

Tile-size knobs are preferred sizes: a template uses the largest size up to the knob's
value that divides the loop (`fit`), so every value of a domain is valid on every
workload, and the exact tiles an intrinsic needs always divide.

    template = context.template_for(sch, stage)
    template.apply(sch, stage, template.defaults(context), context)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.dialects import memref

from strato.dialects.loop import LANES_ATTR
from strato.schedule import LoopHandle, Schedule, StageHandle
from strato.schedule.access import linear_coefficients, row_major_strides

if TYPE_CHECKING:
    from strato.schedule.knobs import KnobSource


@dataclass(frozen=True)
class Knob:
    """A named choice: its default is one of `domain`. `initial` is the default, or a
    function of the `ScheduleContext` computing it (from the machine scheduled for,
    e.g. `machine_lanes`)."""

    name: str
    domain: tuple[Any, ...]
    initial: Any

    def __post_init__(self) -> None:
        if not callable(self.initial):
            assert self.initial in self.domain, f"knob {self.name}: default not in domain"

    def default(self, context: ScheduleContext) -> Any:
        value = self.initial(context) if callable(self.initial) else self.initial
        assert value in self.domain, f"knob {self.name}: default {value!r} not in domain"
        return value


def machine_lanes(context: ScheduleContext) -> int:
    """fp32 lanes of a vector register of the machine scheduled for (a knob's initial)."""
    return context.lanes


ScheduleFunction = Callable[[Schedule, StageHandle, dict[str, Any], "ScheduleContext"], None]
"""`(sch, stage, knob values, context)`: applies a template's primitives to a stage."""


@dataclass(frozen=True)
class Template:
    """A schedule with knobs for the stages `matches` accepts."""

    name: str
    knobs: tuple[Knob, ...]
    matches: Callable[[Schedule, StageHandle], bool] = field(compare=False)
    schedule: ScheduleFunction = field(compare=False)
    checked_at_build: bool = field(default=False, compare=False)
    """Whether the schedule tensorizes or computes a stage after its producer's loop:
    the kernel is then checked at every rebuild, so each later primitive on any of its
    stages rebuilds it; schedule-default applies such templates after the others."""

    def defaults(self, context: ScheduleContext) -> dict[str, Any]:
        return {knob.name: knob.default(context) for knob in self.knobs}

    def apply(
        self, sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
    ) -> None:
        unknown = set(knobs) - {k.name for k in self.knobs}
        assert not unknown, f"template {self.name}: unknown knobs {sorted(unknown)}"
        values = self.defaults(context) | knobs
        for knob in self.knobs:
            assert values[knob.name] in knob.domain, (
                f"template {self.name}: {knob.name}={values[knob.name]!r} is outside "
                f"{knob.domain}"
            )
        self.schedule(sch, stage, values, context)


@dataclass(frozen=True)
class ScheduleContext:
    """What the default schedules of a target read: its templates (the first that
    matches a stage schedules it), the machine (fp32 lanes of a vector register, vector
    registers), the threads parallel loops are made for, and the source of knob values
    other than the defaults (tuning records, a candidate's config). A target makes one
    for its stages (`strato.targets.registry.Target`); nothing is read from elsewhere.

        context = ScheduleContext("llvm", templates, lanes=16, vector_registers=32, threads=2)
        schedule_default(module, context)                    # strato.transforms.schedule_default
    """

    target: str
    templates: tuple[Template, ...]
    lanes: int
    vector_registers: int
    threads: int = 1
    knobs: KnobSource | None = None
    device: str = ""
    """The machine scheduled for when it is not this host (`KernelBuilder.device`): the
    tuning records that apply are the ones measured on it."""
    features: frozenset[str] = frozenset()
    """The machine's enabled CPU features (LLVM's names: avx512vnni, avxvnni, ...), for
    the templates whose intrinsics depend on them."""

    def template_for(self, sch: Schedule, stage: StageHandle) -> Template | None:
        """The first template that matches `stage`, if any."""
        for template in self.templates:
            if template.matches(sch, stage):
                return template
        return None

    def with_knobs(self, knobs: KnobSource | None) -> ScheduleContext:
        return dataclasses.replace(self, knobs=knobs)

    def with_threads(self, threads: int) -> ScheduleContext:
        return dataclasses.replace(self, threads=threads)


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
    lanes: its inner part of `fit(extent, width)` lanes, or the whole loop when that is
    all of it, or when no divisor of 4 lanes or more divides a loop of at most
    `max_lanes`. A loop longer than `max_lanes` that `width` does not divide is
    vectorized whole, annotated to run as vectors of `width` lanes and one vector of the
    lanes left over (`LANES_ATTR`), rather than as vectors of a smaller divisor (softmax
    over 4 x 399 x 399, one thread: 0.37 ms against 0.61 with vectors of 7 lanes, 399
    being 3 x 7 x 19; over 4 x 196 x 196, 0.076 against 0.132 with vectors of 14). The
    vectorized loop, if any."""
    if width <= 1 or loop.extent <= 1:
        return None
    lanes = fit(loop.extent, width)
    if lanes == loop.extent:
        sch.vectorize(loop)
        return loop
    if lanes < min(4, width) and loop.extent <= max_lanes:
        sch.vectorize(loop)
        return loop
    if lanes < width and loop.extent > max_lanes:
        sch.vectorize(loop)
        sch.annotate(loop, LANES_ATTR, width)
        return loop
    if lanes < 2:
        return None
    _, inner = sch.split(loop, [None, lanes])
    sch.vectorize(inner)
    return inner


def read_strides(sch: Schedule, stage: StageHandle) -> dict[str, dict[str, int | None]]:
    """For each buffer the stage reads or writes (by name): the elements its linearized
    address moves per step of each root loop variable (None when not affine)."""
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
        coefficients = linear_coefficients(
            op.indices,
            row_major_strides(info.logical_shape),
            lambda v: v in variables,
            ranges=lambda v: None,  # casts seen through; no division is exact
        )
        per_var: dict[str, int | None] = {
            name: None if coefficients is None else coefficients.get(var, 0)
            for var, name in zip(variables, names, strict=True)
        }
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
