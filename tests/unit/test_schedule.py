"""The Schedule facade: handles, the rebuilt kernel, traces, Python schedule
functions, and tensorize's delegation to strato.schedule.tensorize."""

from __future__ import annotations

import numpy as np
import pytest

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import strato.schedule.tensorize as tensorize_module
from strato.context import make_context
from strato.dialects.loop import ForOp, LoopKind, loop_stage
from strato.interpreters.loop import run_loops
from strato.pipeline import run_pipeline
from strato.schedule import Schedule, ScheduleError, Trace
from strato.schedule.emit import rebuild_kernel
from strato.transforms.apply_schedule import apply_schedule

MATMUL = """
te.primitive @mm {
  %x = te.placeholder "x" : tensor<6x5xf32>
  %w = te.placeholder "w" : tensor<5x8xf32>
  %d = te.reduce "mm" sum (%i, %j) over (%k : 5) init 0.0 : tensor<6x8xf32> {
    %a = te.read %x[%i, %k] : tensor<6x5xf32>
    %b = te.read %w[%k, %j] : tensor<5x8xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<6x8xf32> {
    %v = te.read %d[%i, %j] : tensor<6x8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<6x8xf32>
}
"""


def lowered() -> ModuleOp:
    module = Parser(make_context(), MATMUL).parse_module()
    run_pipeline(make_context(), module, "convert-te-to-loops")
    return module


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)]


def test_an_unscheduled_kernel_rebuilds_to_itself():
    module = lowered()
    sch = Schedule(module)
    assert str(rebuild_kernel(sch.state)) == str(sch.kernel)


def test_handles():
    sch = Schedule(lowered())
    assert [s.name for s in sch.get_stages()] == ["mm", "relu"]
    mm = sch.get_stage("mm")
    assert [(l.axis, l.extent) for l in sch.get_loops(mm)] == [("i", 6), ("j", 8), ("k", 5)]
    assert sch.get_producers("relu") == [mm] and sch.get_consumers(mm) == [sch.get_stage("relu")]
    io, ii = sch.split(sch.get_loop(mm, "i"), [None, 4])
    assert (io.axis, io.extent, ii.axis, ii.extent) == ("i.outer", 2, "i.inner", 4)
    sch.parallel(io)
    assert sch.get_loop(mm, "i.outer").kind == LoopKind.PARALLEL
    owned = {loop_stage(op) for op in sch.kernel.walk() if isinstance(op, ForOp)}
    assert owned == {"mm", "relu"}


def gemm_schedule(sch: Schedule) -> None:
    """A register-tiled GEMM as a plain schedule function."""
    mm, relu = sch.get_stage("mm"), sch.get_stage("relu")
    local = sch.cache_write(mm, "local")
    i, j = sch.get_loops(mm)
    io, jo, ii, ji = sch.tile(i, j, 2, 4)
    sch.compute_at(local, jo)
    li, lj, lk = sch.get_loops(local)
    sch.reorder(lk, li, lj)
    sch.decompose_reduction(local, lk)
    sch.unroll(li)
    sch.vectorize(lj)
    sch.vectorize(ji)
    ri, rj = sch.get_loops(relu)
    sch.parallel(ri)


def test_a_schedule_function_keeps_results_and_replays():
    module = lowered()
    expected = run_loops(lowered(), inputs())
    trace = apply_schedule(module, gemm_schedule)
    np.testing.assert_allclose(run_loops(module, inputs())[0], expected[0], rtol=1e-5)
    assert [s.primitive for s in trace.steps] == [
        "cache_write", "tile", "compute_at", "reorder", "decompose_reduction",
        "unroll", "vectorize", "vectorize", "parallel",
    ]  # fmt: skip
    # the accumulator tile lives in a 2x4 local buffer
    assert "memref<2x4xf32, #loop.scope<local>>" in str(module)
    fresh = lowered()
    Trace.from_json(trace.to_json()).replay(Schedule(fresh))
    assert str(fresh) == str(module)


def test_tensorize_delegates_and_is_recorded(monkeypatch: pytest.MonkeyPatch):
    calls: list[tuple[str, str | None, str]] = []

    def fake(loop: ForOp, name: str):
        calls.append((loop_stage(loop) or "", loop.axis.data if loop.axis else None, name))

    monkeypatch.setattr(tensorize_module, "tensorize", fake)
    sch = Schedule(lowered())
    sch.tensorize(sch.get_loop("mm", "j"), "cpu.test")
    assert calls == [("mm", "j", "cpu.test")]
    assert sch.trace.steps[-1].primitive == "tensorize"
    sch.parallel(sch.get_loop("mm", "i"))  # every rebuild tensorizes again
    assert calls[-1] == ("mm", "j", "cpu.test")


def test_a_refused_tensorize_leaves_the_kernel(monkeypatch: pytest.MonkeyPatch):
    def refuse(loop: ForOp, name: str):
        raise ScheduleError(f"cannot tensorize loop {loop.axis.data} with {name}: shapes differ")

    monkeypatch.setattr(tensorize_module, "tensorize", refuse)
    module = lowered()
    sch = Schedule(module)
    before = str(module)
    with pytest.raises(ScheduleError, match="shapes differ"):
        sch.tensorize(sch.get_loop("mm", "k"), "cpu.test")
    assert str(module) == before and not sch.trace.steps


def test_schedule_of_a_function_and_of_one_kernel_among_several():
    module = lowered()
    kernel = next(op for op in module.ops if "loop.kernel" in op.attributes)
    sch = Schedule(kernel)
    sch.unroll(sch.get_loop("relu", "j"))
    assert "unrolled" in str(module)
    with pytest.raises(ScheduleError, match="kernel is @mm, not @other"):
        Schedule(kernel, kernel="other")


def test_splitting_the_loop_a_stage_is_computed_at_keeps_it_there():
    module = lowered()
    expected = run_loops(lowered(), inputs())
    sch = Schedule(module)
    sch.compute_at(sch.get_stage("mm"), sch.get_loop("relu", "i"))
    outer, inner = sch.split(sch.get_loop("relu", "i"), [None, 4])
    assert sch.state.stage("mm").attach is not None and sch.state.stage("mm").attach.var == inner.axis
    np.testing.assert_allclose(run_loops(module, inputs())[0], expected[0], rtol=1e-5)


def test_a_cache_read_block_computed_per_reduction_step():
    module = lowered()
    expected = run_loops(lowered(), inputs())
    sch = Schedule(module)
    mm = sch.get_stage("mm")
    packed = sch.cache_read(mm, "w", "local")
    sch.transform_layout(packed, "k, j -> j // 4, k, j % 4")
    ko, ki = sch.split(sch.get_loop(mm, "k"), [None, 2])
    sch.reorder(ko, sch.get_loop(mm, "i"))
    sch.compute_at(packed, ko)
    # one k tile of w (2 rows of 8), packed as [j // 4, k, j % 4]
    assert "memref<2x2x4xf32, #loop.scope<local>>" in str(module)
    np.testing.assert_allclose(run_loops(module, inputs())[0], expected[0], rtol=1e-5)


BLOCKED = """
te.primitive @unblock {
  %x = te.placeholder "x" : tensor<12x3xf32>
  %y = te.compute "blocked" (%i, %j, %l) : tensor<2x3x8xf32> {
    %c8 = arith.constant 8 : index
    %b = arith.muli %i, %c8 : index
    %c = arith.addi %b, %l : index
    %c11 = arith.constant 11 : index
    %over = arith.cmpi ugt, %c, %c11 : index
    %cc = arith.select %over, %c11, %c : index
    %v = te.read %x[%cc, %j] : tensor<12x3xf32>
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %v, %two : f32
    te.yield %m : f32
  }
  %o = te.compute "unblock" (%i, %j) : tensor<12x3xf32> {
    %c8 = arith.constant 8 : index
    %b = arith.divui %i, %c8 : index
    %l = arith.remui %i, %c8 : index
    %v = te.read %y[%b, %j, %l] : tensor<2x3x8xf32>
    te.yield %v : f32
  }
  te.output %o : tensor<12x3xf32>
}
"""


def test_a_copy_out_of_blocks_computed_after_each_block_written():
    """reverse_compute_at through `c // 8`, `c % 8` reads: the copy runs over the blocks
    the loop wrote (12 channels: the second block's last 4 are the padding, guarded),
    and the blocked buffer, read only there, holds one block's row."""
    def build() -> ModuleOp:
        module = Parser(make_context(), BLOCKED).parse_module()
        run_pipeline(make_context(), module, "convert-te-to-loops")
        return module

    x = np.random.default_rng(0).standard_normal((12, 3)).astype(np.float32)
    module = build()
    sch = Schedule(module)
    sch.reverse_compute_at(sch.get_stage("unblock"), sch.get_loop("blocked", "j"))
    assert "memref<1x1x8xf32, #loop.scope<local>>" in str(module)
    np.testing.assert_array_equal(run_loops(module, [x])[0], 2 * x)
    # the place in the block outside the loop: a block is never written whole there
    sch = Schedule(build())
    sch.reorder(sch.get_loop("blocked", "l"), sch.get_loop("blocked", "j"))
    with pytest.raises(ScheduleError, match="reads blocks of 8 of stage blocked, which are not written whole"):
        sch.reverse_compute_at(sch.get_stage("unblock"), sch.get_loop("blocked", "j"))
