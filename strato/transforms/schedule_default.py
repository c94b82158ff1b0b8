"""schedule-default: schedule every kernel with its stages' default templates.

Requires: loop-level kernels (`func.func` with `loop.kernel`, as convert-te-to-loops
emits them). Leaves illegal: nothing new; kernels stay at the loop level.

Each stage of each kernel gets the first template of the target's schedule context that
matches it (by operator kind: dense, conv2d, pooling, reduction, injective, ...), applied
with its knobs' default values, or with those the context's knob source chooses (the
best record of the kernel's task in a tuning log: `tuning_log`). The options say which
context: `target` names the target whose templates schedule (the CPU's, `llvm`, by
default), `lanes` gives the fp32 lanes of a vector register (0: those of the target's
machine, for the llvm target the host's), `registers` the vector registers (0: the
machine's; a FileCheck test of register tiles pins both, as the host changes) and
`threads` the threads parallel loops are made for (0: the cores available); a target's
stages give all three explicitly
(`strato targets --stages llvm`). A template whose primitives refuse a stage (a
ScheduleError: a shape the template cannot tile, a body that is not straight-line) is
undone for that stage, which keeps its canonical loops; schedules never change results,
only speed. The kernel records what it got:

    schedule.template = {"dense" = "dense", "relu" = "injective"}
    schedule.knobs    = {"dense" = {kc = 256, mr = 8, nr = 32, pack_b = true}, "relu" = {..}}

and a stage left as it was is listed under `schedule.unscheduled` with the reason.

Then, when the kernels run on more than one thread (`threads`), the outermost loop of every
stage at the root of the kernel whose work pays for a parallel region
(`PARALLEL_MIN_ITERATIONS`) is made `parallel`: its leading data-parallel loops (from
the first with more than one iteration), fused while the loop has fewer than
`PARALLEL_CHUNKS_PER_THREAD` iterations per thread. A stage
that refuses (a reduction outermost, a stage computed at the loop to fuse) keeps what it
can; the kernel records the loop of each stage under `schedule.parallel`:

    schedule.parallel = {"conv" = "n.c.h.fused", "relu" = "n"}

A kernel of run-time sizes (`index` arguments: a te primitive with `te.size`) is not
scheduled (schedules need static extents; a primitive that computes its rows apart
runs as blocks of rows of static sizes instead: convert-graph-to-te's `row_blocks`).
Its canonical loops get a default for run-time extents. A product's update nest (rows,
columns along which its accesses step by one, then reductions) runs as register tiles
with guards for the partial ones, absorbing its init nest and the element-wise stage
after it (`strato.schedule.run_time_tiles`; the kernel records each stage's tile
under `schedule.run_time_tiles`). An element-wise nest whose accesses are all
contiguous over its loops runs as one loop over every element, strip-mined into
vectors (`strato.schedule.run_time_coalesce`). Then an innermost reduction swaps
with the spatial loop around it when more accesses step by one along that loop, the
innermost loop over a result axis is made `vectorized` (one to a run-time bound
strip-mined into vectors and a serial tail), and on more than one thread the outermost
loop of each of its stages' nests that runs to a run-time bound (fused with the loops
right inside it that run to one too, or to a few static iterations around a reduction
or a run-time loop) is made `parallel` (its iterations are a result dimension's, and the
thread pool splits their run-time count, on one thread when they are too little work).

Before:

    func.func @relu(%a: memref<64xf32>, %o: memref<64xf32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 64 axis "i" attributes {stage = "relu"} { ... }
    }

After:

    func.func @relu(...) attributes {loop.kernel, schedule.template = {relu = "injective"}, ..} {
      loop.for %i_outer = 0 to 4 axis "i.outer" attributes {stage = "relu"} {
        loop.for %i_inner = 0 to 16 vectorized axis "i.inner" attributes {stage = "relu"} { ... }
      }
    }
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from math import prod
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    BoolAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from strato.dialects.loop import (
    KERNEL_ATTR,
    LANES_ATTR,
    ForOp,
    LoopKind,
    LoopKindAttr,
    YieldOp,
    is_reduction_loop,
    loop_stage,
)
from strato.schedule import Schedule, ScheduleError, StageHandle
from strato.schedule.knobs import TuningLog
from strato.schedule.run_time_coalesce import coalesce_contiguous_nests, product_loop
from strato.schedule.run_time_tiles import (
    defined_outside,
    only_loop_in,
    plain_loop,
    tile_run_time_products,
)
from strato.schedule.templates import ScheduleContext, schedule_context
from strato.schedule.trace import Trace

TEMPLATE_ATTR = "schedule.template"
PARALLEL_ATTR = "schedule.parallel"

PARALLEL_MIN_ITERATIONS = 1 << 15
"""Fewest innermost iterations (the product of a stage's loop extents, plus those of the
stages computed at its loops) worth a parallel region. benchmarks/parallel_overhead.py
measured a region at 2-3 us when both threads take part (empty body), and 0.1-0.2 us
added to its caller when the worker wakes too late to take a chunk (the caller then runs
them all and does not wait for it). 32K iterations of a vectorized body take ~10-30 us on
one core, so the second thread saves more than the region costs, and a region too small
to share costs its caller next to nothing."""

PARALLEL_CHUNKS_PER_THREAD = 4
"""Iterations per thread the parallel loop should have at least, so that a thread slowed
by other work hands chunks to the others; shorter loops are fused with the next."""
KNOBS_ATTR = "schedule.knobs"
UNSCHEDULED_ATTR = "schedule.unscheduled"


def _knob_attr(value: Any) -> Attribute:
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    return StringAttr(str(value))


def schedule_kernel(module: ModuleOp, name: str, context: ScheduleContext) -> Trace | None:
    """Apply the default template of every stage of kernel `name` in `module` (with the
    knob values `context.knobs` chooses), then parallelize its outer loops for
    `context.threads` threads; the trace of the primitives applied (None when the kernel
    cannot be scheduled at all)."""
    try:
        sch = Schedule(module, kernel=name)
    except ScheduleError as error:
        _mark_unscheduled(module, name, {"*": error.message})
        kernel = _run_time_kernel(module, name)
        if kernel is not None:
            tile_run_time_products(kernel, context.lanes, context.vector_registers)
            for loop in coalesce_contiguous_nests(kernel.body.block):
                if context.lanes >= 2:
                    _strip_mine_run_time_loop(loop, context.lanes)
        _interchange_run_time_reductions(module, name, context.lanes)
        _vectorize_run_time_innermost(module, name, context.lanes)
        _parallelize_run_time_nests(module, name, context.threads)
        return None
    # the kernel is rebuilt once at the end, not after every primitive of the templates
    sch.deferred = True
    chosen = context.knobs.config(module, name, context) if context.knobs is not None else {}
    templates: dict[str, Attribute] = {}
    knobs: dict[str, Attribute] = {}
    unscheduled: dict[str, str] = {}
    matched = [(stage, context.template_for(sch, stage)) for stage in sch.get_stages()]
    # templates checked at every rebuild go last: applied first, they would make every
    # later primitive of the kernel rebuild it (an LSTM kernel's 38 gate stages after
    # its input GEMM: 57 s instead of 1 s)
    matched.sort(key=lambda pair: pair[1] is not None and pair[1].checked_at_build)
    for stage, template in matched:
        if template is None:
            continue
        if stage.name not in {s.name for s in sch.get_stages()}:
            continue  # folded into another stage by that stage's template
        snapshot = sch.state.copy()
        trace_length = len(sch.trace.steps)
        values = template.defaults(context) | chosen.get(stage.name, {})
        try:
            template.apply(sch, stage, values, context)
        except ScheduleError as error:
            sch.restore(snapshot, trace_length)
            unscheduled[stage.name] = f"{template.name}: {error.message}"
            continue
        templates[stage.name] = StringAttr(template.name)
        knobs[stage.name] = DictionaryAttr({k: _knob_attr(v) for k, v in values.items()})
    parallel = parallelize_outer_loops(sch, context.threads)
    kernel = sch.kernel
    kernel.attributes[TEMPLATE_ATTR] = DictionaryAttr(templates)
    kernel.attributes[KNOBS_ATTR] = DictionaryAttr(knobs)
    if parallel:
        kernel.attributes[PARALLEL_ATTR] = DictionaryAttr(
            {stage: StringAttr(axis) for stage, axis in parallel.items()}
        )
    if unscheduled:
        kernel.attributes[UNSCHEDULED_ATTR] = DictionaryAttr(
            {stage: StringAttr(reason) for stage, reason in unscheduled.items()}
        )
    return sch.trace


def parallelize_outer_loops(sch: Schedule, threads: int) -> dict[str, str]:
    """Make the outer loop of each root stage of `sch` with enough work parallel (see
    the module docstring); returns the parallel loop's axis by stage.

    The primitives are deferred and the kernel rebuilt once at the end; only when that
    rebuild refuses (a fuse the tensorized stage of the kernel cannot take) are they
    applied again one by one, each rebuild checked. An LSTM kernel with a tensorized
    input GEMM and 38 gate stages was rebuilt 72 times here (35 s of its compile)."""
    if threads <= 1:
        return {}
    snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
    try:
        with sch.deferring_all():
            chosen = _parallelize_roots(sch, threads)
        sch.materialize()
        return chosen
    except ScheduleError:
        sch.restore(snapshot, trace_length)
    return _parallelize_roots(sch, threads)


def _parallelize_roots(sch: Schedule, threads: int) -> dict[str, str]:
    # stages computed at another stage's loop run inside it (and in its region)
    roots = [stage for stage in sch.get_stages() if sch.state.stage(stage.name).attach is None]
    worth = [stage for stage in roots if _iterations(sch, stage.name) >= PARALLEL_MIN_ITERATIONS]
    chosen: dict[str, str] = {}
    for stage in worth:
        axis = _parallelize_stage(sch, stage, threads)
        if axis is not None:
            chosen[stage.name] = axis
    return chosen


def _iterations(sch: Schedule, stage: str) -> int:
    """Innermost iterations of `stage` per run of the kernel, those of the stages
    computed at its loops included (their whole extents: read from the schedule state,
    so that the estimate needs no rebuild of the kernel)."""
    state = sch.state.stage(stage)
    extents = state.extents()
    count = prod(extents[var] for var in state.leaves)
    for other in sch.state.stages:
        if other.attach is not None and other.attach.stage == stage:
            count += _iterations(sch, other.name)
    return count


def _parallelize_stage(sch: Schedule, stage: StageHandle, threads: int) -> str | None:
    state = sch.state.stage(stage.name)
    loops = sch.get_loops(stage)
    if not loops:
        return None
    # a loop of one iteration is no loop: start at the first that has more
    first = next((n for n, loop in enumerate(loops) if loop.extent > 1), 0)
    outer = loops[first]
    if state.is_reduction_var(outer.axis) or outer.kind != LoopKind.SERIAL:
        return None
    for following in loops[first + 1 :]:
        if outer.extent >= threads * PARALLEL_CHUNKS_PER_THREAD:
            break
        if state.is_reduction_var(following.axis) or following.kind != LoopKind.SERIAL:
            break
        snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
        try:
            outer = sch.fuse(outer, following)
        except ScheduleError:
            sch.restore(snapshot, trace_length)
            break
    if outer.extent < 2:
        return None
    snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
    try:
        sch.parallel(outer)
    except ScheduleError:
        sch.restore(snapshot, trace_length)
        return None
    return outer.axis


def _parallelize_run_time_nests(module: ModuleOp, name: str, threads: int) -> None:
    """In a kernel of run-time sizes (which schedules do not take), make `parallel` the
    outermost loop of each stage's nest at the kernel's root when it runs to a run-time
    bound: it iterates over a result dimension (a stage's loops over reduction axes are
    innermost, and marked), so its iterations write apart, and the pool splits however
    many there are at run time. The loops perfectly nested in it that run to a run-time
    bound too (a batch of one, then a sequence), or to a short static one around a
    reduction or a run-time loop (the heads around their products' blocks of rows, or
    around rows of a run-time length), are fused with it into
    one loop over their product first, so that the threads share the rows whatever the
    batch. Loops without a stage (hand-written) are left alone."""
    if threads <= 1:
        return
    kernel = _run_time_kernel(module, name)
    if kernel is None:
        return
    chosen: dict[str, Attribute] = {}
    for op in list(kernel.body.block.ops):
        if not isinstance(op, ForOp) or not op.is_dynamic or op.loop_kind != LoopKind.SERIAL:
            continue
        stage = loop_stage(op)
        if stage is None or is_reduction_loop(op):
            continue
        nest = [op]
        while (inner := only_loop_in(nest[-1])) is not None and _fusible_run_time_loop(nest[0], inner):
            nest.append(inner)
        if len(nest) > 1:
            op = _fuse_run_time_loops(nest)
        op.kind = LoopKindAttr(LoopKind.PARALLEL)
        chosen.setdefault(stage, StringAttr(op.axis.data if op.axis is not None else "?"))
    if chosen:
        kernel.attributes[PARALLEL_ATTR] = DictionaryAttr(chosen)


FUSED_STATIC_TRIP_COUNT = 64
"""Longest static loop fused into a parallel loop of run-time count: the heads of an
attention, not the features of a row."""


def _fusible_run_time_loop(outer: ForOp, inner: ForOp) -> bool:
    """Whether `inner`, perfectly nested in the loops from `outer`, may run as one loop
    with them: a loop over a result axis of the same stage, from 0 by 1, to a bound
    from outside `outer`, and worth a division per iteration: to a run-time bound, or to
    a short static one around a reduction or a loop to a run-time bound (the heads
    around a product's blocks of rows, or around rows of a run-time length)."""
    if not plain_loop(inner) or is_reduction_loop(inner) or loop_stage(inner) != loop_stage(outer):
        return False
    if inner.is_dynamic:
        bound = inner.bound
        assert isinstance(bound, SSAValue)
        return defined_outside(bound, outer)
    return inner.trip_count <= FUSED_STATIC_TRIP_COUNT and any(
        isinstance(op, ForOp) and op is not inner and (is_reduction_loop(op) or op.is_dynamic)
        for op in inner.walk()
    )


def _fuse_run_time_loops(nest: list[ForOp]) -> ForOp:
    """The perfectly nested loops `nest` (see `_fusible_run_time_loop`), outermost
    first, as one loop over the product of their bounds, each induction variable a
    quotient or a remainder of its (a loop of one iteration, index 0, takes no part:
    its quotient and remainder would be divisions of the fused index, which the loop
    over a task's iterations could not carry); the loop, which replaces them."""
    outer = nest[0]
    block = outer.parent_block()
    assert block is not None
    innermost = nest[-1].body.block
    for loop in [loop for loop in nest[1:] if loop.bound == 1]:
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        innermost.insert_op_before(zero, innermost.first_op)
        loop.induction_var.replace_all_uses_with(zero.result)
    kept = [outer] + [loop for loop in nest[1:] if loop.bound != 1]
    fused, body, bounds = product_loop(nest, kept, "fused")
    terminator = body.last_op
    assert terminator is not None
    rest: SSAValue = fused.induction_var
    for loop, bound in reversed(list(zip(kept[1:], bounds[1:], strict=True))):
        index = arith.RemUIOp(rest, bound)
        quotient = arith.DivUIOp(rest, bound)
        body.insert_ops_before([index, quotient], terminator)
        index.result.name_hint = loop.induction_var.name_hint
        loop.induction_var.replace_all_uses_with(index.result)
        rest = quotient.result
    if rest is not fused.induction_var:
        rest.name_hint = outer.induction_var.name_hint
    outer.induction_var.replace_all_uses_with(rest)
    for op in [op for op in nest[-1].body.block.ops if not isinstance(op, YieldOp)]:
        op.detach()
        body.insert_op_before(op, terminator)
    block.insert_op_before(fused, outer)
    outer.detach()
    outer.erase()
    return fused


def _interchange_run_time_reductions(module: ModuleOp, name: str, lanes: int) -> None:
    """In a kernel of run-time sizes (which schedules do not take), swap the innermost
    reduction loop of an update nest with the (static) spatial loop around it when more
    of the elements the body accesses step through memory by one along the spatial
    axis: a product
    contracting a run-time dimension, w[i, k] * v[k, j] into acc[i, j], then runs j
    innermost, which LLVM vectorizes, instead of k, which strides through v. Each
    element still accumulates its terms in the same order (the loops are rectangular
    and the reduction axis keeps its order), so the results are unchanged. A spatial
    loop shorter than a vector (`lanes` fp32) stays outside, and so does the outermost
    loop of a nest when it runs to a run-time bound (the one made parallel); an inner
    one may move in (`_vectorize_run_time_innermost` strip-mines it)."""
    kernel = _run_time_kernel(module, name)
    if kernel is None:
        return
    for reduction in [op for op in kernel.walk() if isinstance(op, ForOp)]:
        spatial = reduction.parent_op()
        if (
            not is_reduction_loop(reduction)
            or not isinstance(spatial, ForOp)
            or is_reduction_loop(spatial)
            or loop_stage(spatial) != loop_stage(reduction)
            or (spatial.is_dynamic and not isinstance(spatial.parent_op(), ForOp))  # parallel
            or (not spatial.is_dynamic and spatial.trip_count < lanes)  # too short for a vector
            or spatial.loop_kind != LoopKind.SERIAL
            or reduction.loop_kind != LoopKind.SERIAL
            or only_loop_in(spatial) is not reduction
            or any(isinstance(op, ForOp) for op in reduction.body.walk())
        ):
            continue
        if _unit_stride_accesses(reduction, spatial.induction_var) > _unit_stride_accesses(
            reduction, reduction.induction_var
        ):
            _swap_loop_headers(spatial, reduction)


def _vectorize_run_time_innermost(module: ModuleOp, name: str, lanes: int) -> None:
    """In a kernel of run-time sizes (which schedules do not take), make the innermost
    loop of each nest `vectorized` when it iterates over a result axis (not a
    reduction, whose lanes would write one accumulator) and its body is straight-line:
    a static one of more than a vector is annotated to run as vectors of `lanes`
    (`vector_lanes`) and one of the rest; one to a run-time bound is strip-mined here,
    a serial loop over vectors of `lanes` iterations, then a serial loop over the
    iterations left over (fewer than `lanes`). Code generation makes each vectorized
    loop whose lanes are independent vector code (exp, log, erf and tanh included) and runs
    any other serially, so the values never change. The outermost loop of a nest stays
    as it is: it is the one made parallel."""
    kernel = _run_time_kernel(module, name)
    if kernel is None or lanes < 2:
        return
    for loop in [op for op in kernel.walk() if isinstance(op, ForOp)]:
        if (
            not isinstance(loop.parent_op(), ForOp)  # outermost: made parallel
            or is_reduction_loop(loop)
            or not plain_loop(loop)
            or any(op.regions for op in loop.body.block.ops)
        ):
            continue
        if not loop.is_dynamic:
            if loop.trip_count >= 2:
                loop.kind = LoopKindAttr(LoopKind.VECTORIZED)
                if loop.trip_count > lanes:
                    loop.attributes[LANES_ATTR] = IntegerAttr(lanes, i64)
            continue
        _strip_mine_run_time_loop(loop, lanes)


def _strip_mine_run_time_loop(loop: ForOp, lanes: int) -> None:
    """`loop.for %j = 0 to %n` as vectors of `lanes` iterations, then at most one
    vector of each narrower width down to a quarter of them, then the rest:

        %whole = %n / lanes, %done = %whole * lanes
        loop.for %o = 0 to %whole { loop.for %v = 0 to lanes vectorized { j = o * lanes + v } }
        %half = (%n - %done) / (lanes / 2)                               (0 or 1)
        loop.for %h = 0 to %half { loop.for %v = 0 to lanes / 2 vectorized { j = %done + v } }
        %done2 = %done + %half * (lanes / 2), ... (a quarter likewise)
        loop.for %t = 0 to %n - %done4 { j = %done4 + t }

    so that fewer than `lanes` iterations left (a row of 200 by 16) still run as
    vectors, and at most lanes / 4 - 1 serially."""
    block = loop.parent_block()
    assert block is not None
    bound = loop.bound
    assert isinstance(bound, SSAValue)
    axis = loop.axis.data if loop.axis is not None else "j"
    hint = loop.induction_var.name_hint or "j"
    # the counts are computed once, before the outermost loop the bound comes from
    # outside of (so that the parallel loop's work is known before it runs)
    counts_at: Operation = loop
    while isinstance(parent := counts_at.parent_op(), ForOp) and defined_outside(bound, parent):
        counts_at = parent
    counts_block = counts_at.parent_block()
    assert counts_block is not None

    def copy_body(into: Block, index: Operation) -> None:
        terminator = into.last_op
        assert terminator is not None
        into.insert_op_before(index, terminator)
        mapping: dict[SSAValue, SSAValue] = {loop.induction_var: index.results[0]}
        for op in loop.body.block.ops:
            if not isinstance(op, YieldOp):
                into.insert_op_before(op.clone(value_mapper=mapping), terminator)

    def piece(bound: int | SSAValue, kind: LoopKind, suffix: str) -> tuple[ForOp, Block]:
        new, body = ForOp.build(0, bound, 1, kind, f"{axis}.{suffix}")
        new.attributes.update(loop.attributes)
        new.induction_var.name_hint = f"{hint}_{suffix}"
        return new, body

    done: SSAValue | None = None
    widths = [lanes] + [w for w in (lanes // 2, lanes // 4) if w >= 2]
    for position, width in enumerate(widths):
        size = arith.ConstantOp(IntegerAttr(width, IndexType()))
        ops: list[Operation] = [size]
        left: SSAValue = bound
        if done is not None:
            difference = arith.SubiOp(bound, done)
            ops.append(difference)
            left = difference.result
        count = arith.DivUIOp(left, size.result)
        covered = arith.MuliOp(count.result, size.result)
        ops += [count, covered]
        first = done
        if done is None:
            done = covered.result
        else:
            total = arith.AddiOp(done, covered.result)
            ops.append(total)
            done = total.result
        counts_block.insert_ops_before(ops, counts_at)
        names = ("outer", "inner") if position == 0 else (f"by{width}", f"lanes{width}")
        outer, outer_body = piece(count.result, LoopKind.SERIAL, names[0])
        inner, inner_body = piece(width, LoopKind.VECTORIZED, names[1])
        assert outer_body.last_op is not None
        outer_body.insert_op_before(inner, outer_body.last_op)
        start = arith.MuliOp(outer.induction_var, size.result)
        outer_body.insert_op_before(start, inner)
        offset: Operation = start
        if first is not None:
            offset = arith.AddiOp(first, start.result)
            outer_body.insert_op_before(offset, inner)
        copy_body(inner_body, arith.AddiOp(offset.results[0], inner.induction_var))
        block.insert_op_before(outer, loop)
    assert done is not None
    left = arith.SubiOp(bound, done)
    counts_block.insert_op_before(left, counts_at)
    tail, tail_body = piece(left.result, LoopKind.SERIAL, "tail")
    copy_body(tail_body, arith.AddiOp(done, tail.induction_var))
    block.insert_op_before(tail, loop)
    loop.detach()
    loop.erase()


def _run_time_kernel(module: ModuleOp, name: str) -> func.FuncOp | None:
    """Kernel `name` of `module` when it takes run-time sizes (`index` arguments)."""
    kernel = next(
        (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name), None
    )
    if kernel is None or not any(isinstance(arg.type, IndexType) for arg in kernel.args):
        return None
    return kernel


def _unit_stride_accesses(loop: ForOp, index: SSAValue) -> int:
    """The elements `loop`'s body loads or stores (an accumulator's load and store
    count once) whose last index is `index` (row-major buffers: consecutive elements
    as `index` steps by one)."""
    accessed = set()
    for op in loop.body.walk():
        if isinstance(op, memref.LoadOp | memref.StoreOp) and op.indices and op.indices[-1] is index:
            accessed.add((op.memref, tuple(op.indices)))
    return len(accessed)


def _swap_loop_headers(outer: ForOp, inner: ForOp) -> None:
    """Exchange the bounds, kinds, axes and attributes of two perfectly nested loops,
    and the induction variables' uses in the body: the nest then runs the inner loop's
    iterations outermost."""
    outer_iv, inner_iv = outer.induction_var, inner.induction_var
    outer_uses = [(use.operation, use.index) for use in outer_iv.uses]
    inner_uses = [(use.operation, use.index) for use in inner_iv.uses]
    for user, position in outer_uses:
        user.operands[position] = inner_iv
    for user, position in inner_uses:
        user.operands[position] = outer_iv
    outer_operands, inner_operands = list(outer.operands), list(inner.operands)
    outer.operands, inner.operands = inner_operands, outer_operands
    outer.properties, inner.properties = dict(inner.properties), dict(outer.properties)
    outer.attributes, inner.attributes = dict(inner.attributes), dict(outer.attributes)
    outer_iv.name_hint, inner_iv.name_hint = inner_iv.name_hint, outer_iv.name_hint


def _mark_unscheduled(module: ModuleOp, name: str, reasons: dict[str, str]) -> None:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            op.attributes[UNSCHEDULED_ATTR] = DictionaryAttr(
                {stage: StringAttr(reason) for stage, reason in reasons.items()}
            )


def enabled_features(features: str) -> frozenset[str]:
    """The features an LLVM feature list enables ("+avx2,-avx512f"): the last mention
    of a feature wins."""
    enabled: set[str] = set()
    for item in features.split(","):
        item = item.strip()
        if item.startswith("+"):
            enabled.add(item[1:])
        elif item.startswith("-"):
            enabled.discard(item[1:])
    return frozenset(enabled)


def schedule_default(module: ModuleOp, context: ScheduleContext) -> None:
    """Schedule every kernel of `module` with the templates of `context`, in place, and
    parallelize their outer loops for `context.threads` threads."""
    names = [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    for name in names:
        schedule_kernel(module, name, context)


@dataclass(frozen=True)
class ScheduleDefaultPass(ModulePass):
    """Schedule every kernel with its stages' default templates (see the module docstring)."""

    name = "schedule-default"

    target: str = "llvm"
    """The target whose templates schedule the kernels."""

    lanes: int = 0
    """fp32 lanes of a vector register (0: those of the target's machine)."""

    threads: int = 0
    """Threads the outer loops are parallelized for (1: none; 0: the available cores)."""

    registers: int = 0
    """Vector registers of the machine scheduled for (0: the target's machine's): with
    `lanes`, what sizes the micro-kernels' register tiles."""

    tuning_log: str = ""
    """A tuning log (strato tune --db): each kernel gets its task's best record."""

    features: str = ""
    """The CPU features of the machine scheduled for, as LLVM lists them
    (`+avx512f,-avx512vnni,...`; the last mention wins); empty: the target's default
    machine's. Templates whose intrinsics need a feature read them (`cpu.dot_i8`)."""

    def context(self) -> ScheduleContext:
        """The schedule context these options describe."""
        context = schedule_context(self.target, lanes=self.lanes, threads=self.threads)
        if self.features:
            context = dataclasses.replace(context, features=enabled_features(self.features))
        if self.registers:
            context = dataclasses.replace(context, vector_registers=self.registers)
        return context.with_knobs(TuningLog(self.tuning_log) if self.tuning_log else None)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        schedule_default(op, self.context())
