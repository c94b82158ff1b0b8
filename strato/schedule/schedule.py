"""The Schedule facade: primitives on stage and loop handles of one kernel.

Each method checks its handles, applies its primitive (strato/schedule/primitives/) to a
copy of the schedule state, rebuilds the kernel from that copy, and only then swaps the
new kernel into the module and records the call in the trace; a ScheduleError leaves
the kernel and the trace as they were.

A deferred schedule (`sch.deferred = True`, as schedule-default uses it) skips the
rebuild of a primitive that the rebuild cannot refuse (no tensorized loop, no stage
computed after its producer's loop, and for vectorize a body the state shows to be
straight-line): the kernel is rebuilt once, when it is observed (`sch.kernel`,
`sch.materialize()`, or `get_loops` of a stage computed at a loop or tensorized), and
is the kernel the eager rebuilds would have given. Inside `sch.deferring_all()` even the
primitives a rebuild could refuse are deferred: the caller materializes at the end and,
if that rebuild refuses, restores and goes step by step (schedule-default parallelizes
a kernel's stages this way: one rebuild instead of one per primitive).

    sch = Schedule(module, kernel="dense_relu")
    dense = sch.get_stage("dense")
    i, j, k = sch.get_loops(dense)
    io, ii = sch.split(i, factors=[None, 8])
    sch.vectorize(sch.get_loops(dense)[-1])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from math import prod
from typing import Any, TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strato.dialects.loop import KERNEL_ATTR, ForOp, LoopKind, is_init_loop, loop_stage
from strato.schedule.emit import rebuild_kernel
from strato.schedule.errors import ScheduleError
from strato.schedule.primitives import annotate as annotate_
from strato.schedule.primitives import cache, compute_at as compute_at_
from strato.schedule.primitives import decompose_reduction as decompose_
from strato.schedule.primitives import fuse as fuse_
from strato.schedule.primitives import inline, loop_kind
from strato.schedule.primitives import reorder as reorder_
from strato.schedule.primitives import split as split_
from strato.schedule.primitives import storage_align as storage_align_
from strato.schedule.primitives import tensorize_mark
from strato.schedule.primitives import tile as tile_
from strato.schedule.primitives import transform_layout as transform_layout_
from strato.schedule.state import ScheduleState, Split, Stage, lift_kernel
from strato.schedule.trace import Step, Trace
from strato.walk import ops_under

T = TypeVar("T")


@dataclass(frozen=True)
class StageHandle:
    """A stage, by name (resolved against the schedule at each use)."""

    name: str

    def to_json(self) -> dict[str, str]:
        return {"stage": self.name}


@dataclass(frozen=True)
class LoopHandle:
    """A loop of a stage, by its axis name; `extent` and `kind` as when it was taken."""

    stage: str
    axis: str
    extent: int
    kind: LoopKind = LoopKind.SERIAL

    def to_json(self) -> dict[str, str]:
        return {"stage": self.stage, "loop": self.axis}


def _to_json(value: Any) -> Any:
    if isinstance(value, StageHandle | LoopHandle):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_to_json(v) for v in value]
    return value


def find_kernel(module: ModuleOp, name: str | None) -> func.FuncOp:
    kernels = [
        op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    if name is not None:
        for k in kernels:
            if k.sym_name.data == name:
                return k
        known = ", ".join(k.sym_name.data for k in kernels) or "none"
        raise ScheduleError(f"no kernel named @{name} in the module (kernels: {known})")
    if len(kernels) != 1:
        names = ", ".join(f"@{k.sym_name.data}" for k in kernels) or "none"
        raise ScheduleError(f"the module holds {len(kernels)} kernels ({names}); name one with kernel=")
    return kernels[0]


class Schedule:
    """A schedule of one kernel (a `func.func` with `loop.kernel`)."""

    def __init__(self, target: ModuleOp | func.FuncOp, kernel: str | None = None):
        if isinstance(target, ModuleOp):
            self.module: ModuleOp | None = target
            function = find_kernel(target, kernel)
        else:
            self.module = None
            function = target
            if kernel is not None and function.sym_name.data != kernel:
                raise ScheduleError(f"the kernel is @{function.sym_name.data}, not @{kernel}")
        self.state: ScheduleState = lift_kernel(function)
        self.trace = Trace(function.sym_name.data)
        self.deferred = False
        """When set, a primitive whose rebuild cannot refuse it only updates the state;
        the kernel is rebuilt once, when it is next observed (`kernel`, `materialize`)."""
        self._stale = False
        self._defer_all = False
        self._extents: tuple[func.FuncOp, dict[str, dict[str, int]]] | None = None
        self._regions: dict[str, tuple[tuple[Any, ...], dict[str, int]]] = {}

    # -- the IR ---------------------------------------------------------------------------

    @property
    def kernel(self) -> func.FuncOp:
        """The kernel as scheduled so far."""
        self.materialize()
        return self.state.kernel

    def materialize(self) -> None:
        """Rebuild the kernel from the state if primitives were deferred since the last
        rebuild (see `deferred`), and put it in the module in place of the old one."""
        if self._stale:
            self._install(self._rebuild(self.state), self.state)

    def _rebuild(self, state: ScheduleState) -> func.FuncOp:
        """The kernel of `state`, remembering the regions of its attached stages and what
        each region was inferred from (see `_attached_extents`)."""
        regions: dict[str, dict[str, int]] = {}
        kernel = rebuild_kernel(state, regions)
        self._regions = {name: (_region_key(state, name), extents) for name, extents in regions.items()}
        return kernel

    def _attached_extents(self, stage: Stage) -> dict[str, int] | None:
        """The loop extents of a stage computed at another's loop, without rebuilding the
        kernel, when the last rebuild inferred its region from what is still there: the
        stages around it as they were (its own splits, fuses and order, and every loop's
        kind and annotations, do not move the region). None when it must be rebuilt."""
        known = self._regions.get(stage.name)
        if known is None or stage.tensorized or known[0] != _region_key(self.state, stage.name):
            return None
        return stage.extents(known[1])

    @contextmanager
    def deferring_all(self) -> Iterator[None]:
        """Within the block, defer every primitive whose own check passes, even those the
        rebuild could refuse (a tensorized loop, a reverse compute_at in the kernel): the
        caller `materialize`s after it and handles the ScheduleError of a refusal (by
        `restore` and applying the primitives one by one, each rebuild checked)."""
        deferred, self.deferred, self._defer_all = self.deferred, True, True
        try:
            yield
        finally:
            self.deferred, self._defer_all = deferred, False

    def restore(self, state: ScheduleState, trace_length: int) -> None:
        """Go back to `state` (a copy of an earlier `self.state`) and the first
        `trace_length` steps of the trace; the kernel is rebuilt when next observed."""
        state.kernel = self.state.kernel
        self.state = state
        self._stale = True
        del self.trace.steps[trace_length:]

    def _install(self, kernel: func.FuncOp, state: ScheduleState) -> None:
        old = self.state.kernel
        parent = old.parent_block()
        if parent is not None:
            parent.insert_op_before(kernel, old)
            parent.detach_op(old)
            old.erase(safe_erase=False)
        state.kernel = kernel
        self.state = state
        self._stale = False

    # -- handles ----------------------------------------------------------------------------

    def get_stage(self, name: str) -> StageHandle:
        return StageHandle(self.state.stage(name).name)

    def get_stages(self) -> list[StageHandle]:
        return [StageHandle(s.name) for s in self.state.stages]

    def get_loops(self, stage: StageHandle | str) -> list[LoopHandle]:
        """The loops of a stage (its update nest for a reduction), outermost first."""
        s = self.state.stage(_stage_name(stage))
        extents: dict[str, int] | None = None
        if self._stale and s.attach is None and not s.tensorized:
            # a stage at the root is built with its own extents: no need for the IR
            extents = {}
        elif self._stale:
            extents = self._attached_extents(s)
        if extents is None:
            extents = self._loop_extents(s.name)
        return [
            LoopHandle(s.name, var, extents.get(var, s.extents()[var]), s.kinds.get(var, LoopKind.SERIAL))
            for var in s.leaves
        ]

    def get_loop(self, stage: StageHandle | str, axis: str) -> LoopHandle:
        for loop in self.get_loops(stage):
            if loop.axis == axis:
                return loop
        from strato.schedule.primitives.checks import leaf

        leaf("get a loop", self.state.stage(_stage_name(stage)), axis)
        raise AssertionError("unreachable: leaf() raises for a loop get_loops does not list")

    def get_producers(self, stage: StageHandle | str) -> list[StageHandle]:
        s = self.state.stage(_stage_name(stage))
        return [StageHandle(p.name) for p in self.state.producers(s)]

    def get_consumers(self, stage: StageHandle | str) -> list[StageHandle]:
        s = self.state.stage(_stage_name(stage))
        return [StageHandle(c.name) for c in self.state.consumers(s)]

    def _loop_extents(self, stage: str) -> dict[str, int]:
        """Trip counts of the stage's loops in the current IR (the first of each name),
        read from one walk of each built kernel."""
        kernel = self.kernel
        if self._extents is None or self._extents[0] is not kernel:
            found: dict[str, dict[str, int]] = {}
            for op in ops_under(kernel):
                if isinstance(op, ForOp) and not is_init_loop(op) and op.axis is not None:
                    name = loop_stage(op)
                    if name is not None:
                        found.setdefault(name, {}).setdefault(op.axis.data, op.trip_count)
            self._extents = (kernel, found)
        return dict(self._extents[1].get(stage, {}))

    # -- applying a primitive -------------------------------------------------------------------

    def _apply(
        self,
        primitive: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        change: Callable[[ScheduleState], T],
        check: Callable[[func.FuncOp], None] | None = None,
        passes: Callable[[ScheduleState], bool] | None = None,
    ) -> T:
        """`check` inspects the rebuilt kernel and may refuse the primitive; `passes`, when
        it returns True, shows from the state alone that `check` would accept it."""
        state = self.state.copy()
        result = change(state)
        compute_at_.check_attachments(primitive, state)
        checked = check is None or (passes is not None and passes(state))
        if self.deferred and checked and (self._defer_all or not _may_refuse_at_rebuild(state)):
            self.state = state
            self._stale = True
        else:
            kernel = self._rebuild(state)
            if check is not None:
                check(kernel)
            self._install(kernel, state)
        self.trace.append(Step(primitive, _to_json(list(args)), _to_json(kwargs)))
        return result

    def apply_step(self, step: Step) -> Any:
        """Replay one trace step."""
        method = getattr(self, step.primitive, None)
        if step.primitive not in PRIMITIVES or method is None:
            raise ScheduleError(f"unknown schedule primitive '{step.primitive}' in the trace")
        args = [self._decode(a) for a in step.args]
        kwargs = {k: self._decode(v) for k, v in step.kwargs.items()}
        try:
            return method(*args, **kwargs)
        except TypeError as error:
            raise ScheduleError(f"bad arguments for {step.primitive} in the trace: {error}") from None

    def _decode(self, value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"stage"}:
                return self.get_stage(value["stage"])
            if set(value) == {"stage", "loop"}:
                return self.get_loop(value["stage"], value["loop"])
            raise ScheduleError(f"cannot read handle {value!r} in the trace")
        if isinstance(value, list):
            return [self._decode(v) for v in value]
        return value

    # -- primitives ----------------------------------------------------------------------------

    def split(
        self, loop: LoopHandle, factors: Sequence[int | None], tail: str = "guard"
    ) -> list[LoopHandle]:
        """Split `loop` by `factors` (outermost first; one may be None)."""
        _loop(loop, "split")
        names = self._apply(
            "split",
            [loop],
            {"factors": list(factors), "tail": tail},
            lambda s: split_.split(s, loop.stage, loop.axis, list(factors), tail),
        )
        return [self.get_loop(loop.stage, n) for n in names]

    def reorder(self, *loops: LoopHandle) -> None:
        stage = _same_stage(loops, "reorder")
        self._apply("reorder", list(loops), {}, lambda s: reorder_.reorder(s, stage, [l.axis for l in loops]))

    def tile(
        self, x: LoopHandle, y: LoopHandle, x_factor: int, y_factor: int, tail: str = "guard"
    ) -> list[LoopHandle]:
        stage = _same_stage([x, y], "tile")
        names = self._apply(
            "tile",
            [x, y, x_factor, y_factor],
            {"tail": tail},
            lambda s: tile_.tile(s, stage, x.axis, y.axis, x_factor, y_factor, tail),
        )
        return [self.get_loop(stage, n) for n in names]

    def fuse(self, *loops: LoopHandle) -> LoopHandle:
        stage = _same_stage(loops, "fuse")
        name = self._apply("fuse", list(loops), {}, lambda s: fuse_.fuse(s, stage, [l.axis for l in loops]))
        return self.get_loop(stage, name)

    def vectorize(self, loop: LoopHandle) -> None:
        _loop(loop, "vectorize")
        self._apply(
            "vectorize",
            [loop],
            {},
            lambda s: loop_kind.vectorize(s, loop.stage, loop.axis),
            check=lambda k: _straight_line(k, loop),
            passes=lambda s: _straight_line_in_state(s, loop),
        )

    def unroll(self, loop: LoopHandle) -> None:
        _loop(loop, "unroll")
        self._apply("unroll", [loop], {}, lambda s: loop_kind.unroll(s, loop.stage, loop.axis))

    def parallel(self, loop: LoopHandle) -> None:
        _loop(loop, "parallel")
        self._apply("parallel", [loop], {}, lambda s: loop_kind.parallel(s, loop.stage, loop.axis))

    def bind(self, loop: LoopHandle, thread: str) -> None:
        _loop(loop, "bind")
        self._apply("bind", [loop, thread], {}, lambda s: loop_kind.bind(s, loop.stage, loop.axis, thread))

    def annotate(self, target: LoopHandle | StageHandle, key: str, value: Any = True) -> None:
        if isinstance(target, LoopHandle):
            stage, var = target.stage, target.axis
        elif isinstance(target, StageHandle):
            stage, var = target.name, None
        else:
            raise ScheduleError(f"annotate takes a loop or a stage handle, got {target!r}")
        self._apply("annotate", [target, key, value], {}, lambda s: annotate_.annotate(s, stage, var, key, value))

    def compute_at(self, stage: StageHandle, loop: LoopHandle) -> None:
        name = _stage_name(stage)
        _loop(loop, "compute_at")
        self._apply("compute_at", [stage, loop], {}, lambda s: compute_at_.compute_at(s, name, loop.stage, loop.axis))

    def reverse_compute_at(self, stage: StageHandle, loop: LoopHandle) -> None:
        name = _stage_name(stage)
        _loop(loop, "reverse_compute_at")
        self._apply(
            "reverse_compute_at",
            [stage, loop],
            {},
            lambda s: compute_at_.reverse_compute_at(s, name, loop.stage, loop.axis),
        )

    def compute_inline(self, stage: StageHandle) -> None:
        name = _stage_name(stage)
        self._apply("compute_inline", [stage], {}, lambda s: inline.compute_inline(s, name))

    def reverse_compute_inline(self, stage: StageHandle) -> None:
        name = _stage_name(stage)
        self._apply("reverse_compute_inline", [stage], {}, lambda s: inline.reverse_compute_inline(s, name))

    def cache_read(self, stage: StageHandle, buffer: str | int, scope: str = "local") -> StageHandle:
        name = _stage_name(stage)
        new = self._apply("cache_read", [stage, buffer, scope], {}, lambda s: cache.cache_read(s, name, buffer, scope))
        return StageHandle(new)

    def cache_write(self, stage: StageHandle, scope: str = "local") -> StageHandle:
        name = _stage_name(stage)
        new = self._apply("cache_write", [stage, scope], {}, lambda s: cache.cache_write(s, name, scope))
        return StageHandle(new)

    def decompose_reduction(self, stage: StageHandle, loop: LoopHandle) -> None:
        name = _stage_name(stage)
        _loop(loop, "decompose_reduction")
        if loop.stage != name:
            raise ScheduleError(f"cannot decompose_reduction: loop {loop.axis} belongs to stage {loop.stage}, not {name}")
        self._apply(
            "decompose_reduction", [stage, loop], {}, lambda s: decompose_.decompose_reduction(s, name, loop.axis)
        )

    def storage_align(self, stage: StageHandle, axis: int, factor: int, offset: int) -> None:
        name = _stage_name(stage)
        self._apply(
            "storage_align",
            [stage, axis, factor, offset],
            {},
            lambda s: storage_align_.storage_align(s, name, axis, factor, offset),
        )

    def transform_layout(self, stage: StageHandle, index_map: str, buffer: str | int | None = None) -> None:
        """Lay out the stage's buffer (or a local buffer it reads) by `index_map`."""
        name = _stage_name(stage)
        self._apply(
            "transform_layout",
            [stage, index_map],
            {"buffer": buffer} if buffer is not None else {},
            lambda s: transform_layout_.transform_layout(s, name, buffer, index_map),
        )

    def tensorize(self, loop: LoopHandle, intrinsic: str) -> None:
        """Replace the body under `loop` by the intrinsic (see strato.schedule.tensorize)."""
        _loop(loop, "tensorize")
        self._apply(
            "tensorize", [loop, intrinsic], {}, lambda s: tensorize_mark.tensorize(s, loop.stage, loop.axis, intrinsic)
        )


PRIMITIVES = (
    "split",
    "reorder",
    "tile",
    "fuse",
    "vectorize",
    "unroll",
    "parallel",
    "bind",
    "annotate",
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
    "cache_read",
    "cache_write",
    "decompose_reduction",
    "storage_align",
    "transform_layout",
    "tensorize",
)
"""Every primitive a Schedule has (and a trace may name)."""


def _stage_name(stage: StageHandle | str) -> str:
    if isinstance(stage, StageHandle):
        return stage.name
    if isinstance(stage, str):
        return stage
    raise ScheduleError(f"expected a stage handle, got {stage!r}")


def _loop(loop: Any, primitive: str) -> LoopHandle:
    if not isinstance(loop, LoopHandle):
        raise ScheduleError(f"cannot {primitive}: expected a loop handle, got {loop!r}")
    return loop


def _same_stage(loops: Sequence[Any], primitive: str) -> str:
    for loop in loops:
        _loop(loop, primitive)
    stages = {loop.stage for loop in loops}
    if len(stages) != 1:
        raise ScheduleError(f"cannot {primitive}: the loops belong to stages {', '.join(sorted(stages))}, not one")
    return stages.pop()


def _region_key(state: ScheduleState, name: str) -> tuple[Any, ...]:
    """What the region of stage `name`, computed at another stage's loop, is inferred
    from: every stage's iteration space, body (templates are replaced, never changed),
    buffer, attachment and tensorized loops, the loop structure (splits, fuses, order)
    of every stage but `name` itself, and the buffers' shapes and layouts."""
    stages = tuple(
        (
            stage.name, tuple(stage.spatial), tuple(stage.reduce), stage.body, stage.init,
            stage.buffer, stage.attach, stage.init_at, tuple(stage.tensorized.items()),
            None if stage.name == name else (tuple(stage.relations), tuple(stage.leaves)),
        )
        for stage in state.stages
    )  # fmt: skip
    buffers = tuple((b.shape, b.padded, b.layout, tuple(b.align.items())) for b in state.buffers)
    return stages, buffers, tuple(state.copies)


def _may_refuse_at_rebuild(state: ScheduleState) -> bool:
    """Whether building the kernel from `state` may raise a ScheduleError: only a
    tensorized loop (matched against its intrinsic at every build) and a stage computed
    after a loop of its producer (whose reads are checked at every build) can."""
    return any(s.tensorized or (s.attach is not None and s.attach.reverse) for s in state.stages)


def _straight_line_in_state(state: ScheduleState, loop: LoopHandle) -> bool:
    """Whether the state alone shows that the vectorized innermost `loop` of a stage at
    the root gets a straight-line body: no op with regions in the stage's body, no stage
    computed inside it (vectorize refuses those) and no guard of a non-dividing split.
    False when it cannot tell (the rebuilt kernel is checked then)."""
    stage = state.stage(loop.stage)
    if stage.attach is not None or not stage.leaves or stage.leaves[-1] != loop.axis:
        return False
    if any(op.regions for op in stage.body.block.ops):
        return False
    ext = stage.extents(None)
    for rel in stage.relations:
        if isinstance(rel, Split) and rel.tail == "guard" and prod(ext[c] for c in rel.children) != ext[rel.parent]:
            return False
    return not any(s.attach is not None and s.attach.stage == stage.name for s in state.stages)


def _straight_line(kernel: func.FuncOp, loop: LoopHandle) -> None:
    for op in ops_under(kernel):
        if isinstance(op, ForOp) and loop_stage(op) == loop.stage and op.axis is not None and op.axis.data == loop.axis:
            if is_init_loop(op):
                continue
            inner = [o for o in op.body.block.walk() if o is not op and o.regions]
            if inner:
                raise ScheduleError(
                    f"cannot vectorize: the body of loop {loop.axis} of stage {loop.stage} is not "
                    f"straight-line (it holds '{inner[0].name}')"
                )


__all__ = ["LoopHandle", "PRIMITIVES", "Schedule", "StageHandle"]
