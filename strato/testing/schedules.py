"""Hypothesis strategies for random valid schedules of random te programs.

`scheduled_programs()` draws a te program (`te_programs`), lowers it to loops and applies
a random sequence of primitives to its kernels: each step draws a primitive and
arguments from the handles the schedule has at that point, and keeps it only when it
applies (a ScheduleError leaves the kernel unchanged, so refused steps are simply not
part of the schedule). `require=` names a primitive that must be among the applied
steps; `ScheduledProgram.applied` lists what was.

    @given(case=scheduled_programs(require="compute_at"))
    def test(case):
        expected = run_loops(case.reference, inputs)
        actual = run_loops(case.module, inputs)

`DRAWERS` has one argument drawer per primitive. Tensorize needs a stage that computes
what an intrinsic describes: `require="tensorize"` draws a matmul program of random
small shapes (`matmul_programs`) instead of a random te program, and its drawer splits
and reorders a stage so that its innermost nest is an MR x NR x K tile of the
`cpu.fma_tile` micro-kernel, then tensorizes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

try:
    from hypothesis import assume
    from hypothesis import strategies as st
except ImportError as err:  # the test extra is not installed
    from strato.testing import HYPOTHESIS_MISSING

    raise ImportError(HYPOTHESIS_MISSING) from err

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.pipeline import run_pipeline
from strato.schedule import LoopHandle, Schedule, ScheduleError, Trace
from strato.schedule.schedule import PRIMITIVES
from strato.targets.llvm.intrinsics import fma_tile_name
from strato.testing.te_programs import TeProgram, te_programs

Drawer = Callable[[st.DrawFn, Schedule], None]


def _need(condition: object) -> None:
    """Refuse a step that has nothing to apply to (like a ScheduleError would)."""
    if not condition:
        raise ScheduleError("no candidate for this primitive")


def _stage(draw: st.DrawFn, sch: Schedule):
    return draw(st.sampled_from(sch.get_stages()))


def _loop(draw: st.DrawFn, sch: Schedule) -> LoopHandle:
    return draw(st.sampled_from(sch.get_loops(_stage(draw, sch))))


def _factor(draw: st.DrawFn, extent: int) -> int:
    return draw(st.integers(1, max(extent, 1) + 1))


def draw_split(draw: st.DrawFn, sch: Schedule) -> None:
    loop = _loop(draw, sch)
    tail = draw(st.sampled_from(["guard", "guard", "pad"]))
    if draw(st.integers(0, 3)) == 0:
        factors: list[int | None] = [None, _factor(draw, 3), _factor(draw, 2)]
    else:
        factors = [None, _factor(draw, loop.extent)]
        if draw(st.booleans()):
            factors = [factors[1], None]
    sch.split(loop, factors, tail=tail)


def draw_reorder(draw: st.DrawFn, sch: Schedule) -> None:
    loops = sch.get_loops(_stage(draw, sch))
    _need(len(loops) >= 2)
    chosen = draw(st.lists(st.sampled_from(loops), min_size=2, max_size=len(loops), unique=True))
    sch.reorder(*draw(st.permutations(chosen)))


def draw_tile(draw: st.DrawFn, sch: Schedule) -> None:
    loops = sch.get_loops(_stage(draw, sch))
    _need(len(loops) >= 2)
    x, y = draw(st.lists(st.sampled_from(loops), min_size=2, max_size=2, unique=True))
    sch.tile(x, y, _factor(draw, x.extent), _factor(draw, y.extent))


def draw_fuse(draw: st.DrawFn, sch: Schedule) -> None:
    loops = sch.get_loops(_stage(draw, sch))
    _need(len(loops) >= 2)
    start = draw(st.integers(0, len(loops) - 2))
    count = draw(st.integers(2, min(3, len(loops) - start)))
    sch.fuse(*loops[start : start + count])


def draw_vectorize(draw: st.DrawFn, sch: Schedule) -> None:
    loops = sch.get_loops(_stage(draw, sch))
    sch.vectorize(loops[-1] if draw(st.integers(0, 3)) else draw(st.sampled_from(loops)))


def draw_unroll(draw: st.DrawFn, sch: Schedule) -> None:
    sch.unroll(_loop(draw, sch))


def draw_parallel(draw: st.DrawFn, sch: Schedule) -> None:
    sch.parallel(_loop(draw, sch))


def draw_bind(draw: st.DrawFn, sch: Schedule) -> None:
    sch.bind(_loop(draw, sch), "vthread")


def draw_annotate(draw: st.DrawFn, sch: Schedule) -> None:
    target = _loop(draw, sch) if draw(st.booleans()) else _stage(draw, sch)
    value = draw(st.sampled_from([True, 4, 0.5, "x"]))
    sch.annotate(target, draw(st.sampled_from(["pragma", "note.a"])), value)


def draw_compute_at(draw: st.DrawFn, sch: Schedule) -> None:
    stage = _stage(draw, sch)
    consumers = sch.get_consumers(stage)
    _need(consumers)
    host = draw(st.sampled_from(consumers))
    sch.compute_at(stage, draw(st.sampled_from(sch.get_loops(host))))


def draw_reverse_compute_at(draw: st.DrawFn, sch: Schedule) -> None:
    stage = _stage(draw, sch)
    producers = sch.get_producers(stage)
    _need(producers)
    host = draw(st.sampled_from(producers))
    sch.reverse_compute_at(stage, draw(st.sampled_from(sch.get_loops(host))))


def draw_compute_inline(draw: st.DrawFn, sch: Schedule) -> None:
    sch.compute_inline(_stage(draw, sch))


def draw_reverse_compute_inline(draw: st.DrawFn, sch: Schedule) -> None:
    sch.reverse_compute_inline(_stage(draw, sch))


def draw_cache_read(draw: st.DrawFn, sch: Schedule) -> None:
    stage = _stage(draw, sch)
    new = sch.cache_read(stage, draw(st.integers(0, 2)), "local")
    if draw(st.booleans()):
        sch.compute_at(new, draw(st.sampled_from(sch.get_loops(stage))))


def draw_cache_write(draw: st.DrawFn, sch: Schedule) -> None:
    stage = _stage(draw, sch)
    new = sch.cache_write(stage, "local")
    if draw(st.booleans()):
        loops = [l for l in sch.get_loops(stage)]
        sch.compute_at(new, draw(st.sampled_from(loops)))


def draw_decompose_reduction(draw: st.DrawFn, sch: Schedule) -> None:
    stage = _stage(draw, sch)
    sch.decompose_reduction(stage, draw(st.sampled_from(sch.get_loops(stage))))


def draw_storage_align(draw: st.DrawFn, sch: Schedule) -> None:
    factor = draw(st.integers(1, 4))
    sch.storage_align(_stage(draw, sch), draw(st.integers(0, 1)), factor, draw(st.integers(0, factor - 1)))


def draw_transform_layout(draw: st.DrawFn, sch: Schedule) -> None:
    stage = _stage(draw, sch)
    rank = len(sch.get_loops(stage))  # a guess; a wrong rank is refused
    names = [f"d{n}" for n in range(draw(st.integers(1, max(rank, 1))))]
    new = draw(st.permutations(names))
    if draw(st.booleans()):
        split = draw(st.sampled_from(names))
        c = draw(st.integers(1, 3))
        new = [f"{n} // {c}" if n == split else n for n in new] + [f"{split} % {c}"]
    sch.transform_layout(stage, f"{', '.join(names)} -> {', '.join(new)}")


def _divisor(draw: st.DrawFn, extent: int) -> int:
    return draw(st.sampled_from([d for d in range(1, extent + 1) if extent % d == 0]))


def draw_tensorize(draw: st.DrawFn, sch: Schedule) -> None:
    """Split a row, a column and a reduction loop of a stage by factors that divide them
    (no guard), move the three inner parts innermost in a random order and tensorize
    them with the cpu.fma_tile of that size; a stage that is no matmul is refused."""
    loops = sch.get_loops(_stage(draw, sch))
    _need(len(loops) >= 3)
    reductions = [l for l in loops if l.axis.split(".")[0].startswith("k")]
    r = draw(st.sampled_from(reductions or loops))
    x, y = draw(st.permutations([l for l in loops if l != r]).map(lambda ls: ls[:2]))
    mr, nr, kk = _divisor(draw, x.extent), _divisor(draw, y.extent), _divisor(draw, r.extent)
    xo, xi = sch.split(x, [None, mr])
    yo, yi = sch.split(y, [None, nr])
    ro, ri = sch.split(r, [None, kk])
    others = [l for l in loops if l not in (x, y, r)]
    inner = draw(st.permutations([xi, yi, ri]))
    sch.reorder(*others, xo, yo, ro, *inner)
    sch.tensorize(inner[0], fma_tile_name(mr, nr, kk))


DRAWERS: dict[str, Drawer] = {
    "split": draw_split,
    "reorder": draw_reorder,
    "tile": draw_tile,
    "fuse": draw_fuse,
    "vectorize": draw_vectorize,
    "unroll": draw_unroll,
    "parallel": draw_parallel,
    "bind": draw_bind,
    "annotate": draw_annotate,
    "compute_at": draw_compute_at,
    "reverse_compute_at": draw_reverse_compute_at,
    "compute_inline": draw_compute_inline,
    "reverse_compute_inline": draw_reverse_compute_inline,
    "cache_read": draw_cache_read,
    "cache_write": draw_cache_write,
    "decompose_reduction": draw_decompose_reduction,
    "storage_align": draw_storage_align,
    "transform_layout": draw_transform_layout,
    "tensorize": draw_tensorize,
}
"""An argument drawer for every primitive that random schedules use."""

UNDRAWN: set[str] = set()
"""Primitives random schedules leave out (none)."""

@st.composite
def matmul_programs(draw: st.DrawFn) -> TeProgram:
    """`@main` calling a matmul c[m, n] = sum over k of a[m, k] * b[k, n] of random
    small shapes: a stage the cpu.fma_tile micro-kernel can replace a tile of."""
    m, n, k = draw(st.integers(1, 6)), draw(st.integers(1, 8)), draw(st.integers(1, 4))
    text = f"""
te.primitive @mm {{
  %a = te.placeholder "a" : tensor<{m}x{k}xf32>
  %b = te.placeholder "b" : tensor<{k}x{n}xf32>
  %c = te.reduce "mm" sum (%i, %j) over (%k : {k}) init 0.0 : tensor<{m}x{n}xf32> {{
    %x = te.read %a[%i, %k] : tensor<{m}x{k}xf32>
    %y = te.read %b[%k, %j] : tensor<{k}x{n}xf32>
    %p = arith.mulf %x, %y : f32
    te.yield %p : f32
  }}
  te.output %c : tensor<{m}x{n}xf32>
}}
func.func @main(%x0: tensor<{m}x{k}xf32>, %x1: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %y0 = te.call @mm(%x0, %x1) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  func.return %y0 : tensor<{m}x{n}xf32>
}}
"""
    return TeProgram(Parser(make_context(), text).parse_module(), [(m, k), (k, n)])


@dataclass
class ScheduledProgram:
    """A te program, its unscheduled loop-level module, the scheduled one, and the
    traces of its kernels."""

    program: TeProgram
    reference: ModuleOp
    module: ModuleOp
    traces: list[Trace] = field(default_factory=list)
    applied: set[str] = field(default_factory=set)

    def __repr__(self) -> str:
        steps = [[s.to_dict() for s in t.steps] for t in self.traces]
        return f"ScheduledProgram(steps={steps}, program={self.program!r})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(repr(self))


def lower_to_loops(module: ModuleOp) -> ModuleOp:
    module = module.clone()
    run_pipeline(make_context(), module, "convert-te-to-loops")
    return module


def _try(draw: st.DrawFn, sch: Schedule, primitive: str) -> bool:
    """Draw arguments for `primitive` and apply it; whether it applied (a refused
    primitive leaves the schedule unchanged, partly applied composites included)."""
    before = len(sch.trace.steps)
    try:
        DRAWERS[primitive](draw, sch)
    except ScheduleError:
        return len(sch.trace.steps) > before and sch.trace.steps[before].primitive == primitive
    return True


@st.composite
def scheduled_programs(
    draw: st.DrawFn,
    max_steps: int = 4,
    require: str | None = None,
    attempts: int = 6,
    max_primitives: int = 1,
) -> ScheduledProgram:
    if require == "tensorize":
        program = draw(matmul_programs())
    else:
        program = draw(te_programs(max_primitives=max_primitives))
    reference = lower_to_loops(program.module)
    module = lower_to_loops(program.module)
    kernels = [op.sym_name.data for op in module.ops if "loop.kernel" in op.attributes]
    result = ScheduledProgram(program, reference, module)
    required_kernel = draw(st.sampled_from(kernels)) if require is not None else None
    for kernel in kernels:
        sch = Schedule(module, kernel=kernel)
        count = draw(st.integers(0, max_steps))
        forced_at = draw(st.integers(0, count)) if kernel == required_kernel else None
        for n in range(count + 1):
            if n == forced_at:
                assert require is not None
                if not any(_try(draw, sch, require) for _ in range(attempts)):
                    assume(False)
                result.applied.add(require)
            elif n < count:
                primitive = draw(st.sampled_from(sorted(DRAWERS)))
                if _try(draw, sch, primitive):
                    result.applied.add(primitive)
        result.traces.append(sch.trace)
    return result


__all__ = [
    "DRAWERS",
    "PRIMITIVES",
    "ScheduledProgram",
    "UNDRAWN",
    "lower_to_loops",
    "matmul_programs",
    "scheduled_programs",
]
