"""The thread pool of parallel loops: every chunk runs once, under repeated calls, calls
from two Python threads, nested regions, a fork, and models compiled twice in one
process; parallel kernels compute what serial ones do; schedule-default parallelizes
the outer loop of kernels with enough work, and only when there is more than one
thread."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import strato
from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects.loop import ForOp, LoopKind
from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
from strato.targets.llvm.emit import emit_llvm_ir
from strato.targets.llvm.jit import JitModule
from strato.targets.llvm.parallel_runtime import PARALLEL_FOR_SYMBOL, pool_workers
from strato.targets.registry import get_target
from strato.transforms.schedule_default import PARALLEL_ATTR, schedule_default

# -- the runtime on its own: a body that counts the iterations it is given ------------------

_COUNTING = f"""
declare void @{PARALLEL_FOR_SYMBOL}(ptr, ptr, i64, i64)

define void @count(ptr %counts, i64 %begin, i64 %end) {{
entry:
  %empty = icmp sge i64 %begin, %end
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [%begin, %entry], [%next, %loop]
  %slot = getelementptr i64, ptr %counts, i64 %i
  %old = load i64, ptr %slot
  %new = add i64 %old, 1
  store i64 %new, ptr %slot
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %end
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}

; `repeats` regions over [0, n)
define void @run(ptr %counts, i64 %n, i64 %threads, i64 %repeats) {{
entry:
  br label %loop
loop:
  %r = phi i64 [0, %entry], [%r1, %loop]
  call void @{PARALLEL_FOR_SYMBOL}(ptr @count, ptr %counts, i64 %n, i64 %threads)
  %r1 = add i64 %r, 1
  %more = icmp slt i64 %r1, %repeats
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}

; a region whose chunks each start a region of their own over one row of a n x n
; matrix: the inner regions find the pool busy and run in their caller
define void @row(ptr %counts, i64 %begin, i64 %end) {{
entry:
  br label %loop
loop:
  %i = phi i64 [%begin, %entry], [%next, %loop]
  %offset = mul i64 %i, 64
  %row = getelementptr i64, ptr %counts, i64 %offset
  call void @{PARALLEL_FOR_SYMBOL}(ptr @count, ptr %row, i64 64, i64 2)
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %end
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}

define void @nested(ptr %counts, i64 %rows) {{
  call void @{PARALLEL_FOR_SYMBOL}(ptr @row, ptr %counts, i64 %rows, i64 2)
  ret void
}}
"""


@pytest.fixture(scope="module")
def counting() -> JitModule:
    return JitModule(_COUNTING)


@pytest.mark.parametrize("trip", [0, 1, 2, 3, 7, 64, 1001])
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_every_iteration_runs_exactly_once(counting: JitModule, trip: int, threads: int):
    counts = np.zeros(max(trip, 1), np.int64)
    counting.function("run")(counts, trip, threads, 5)
    assert (counts[:trip] == 5).all()
    assert trip > 0 or counts[0] == 0


def test_hundreds_of_regions_reuse_the_same_workers(counting: JitModule):
    counts = np.zeros(1000, np.int64)
    counting.function("run")(counts, 1000, 3, 1)
    workers = pool_workers()
    assert 1 <= workers
    counting.function("run")(counts, 1000, 3, 499)
    assert (counts == 500).all()
    assert pool_workers() == workers  # workers persist; none is started per region


def test_a_region_inside_a_region_runs_in_its_caller(counting: JitModule):
    counts = np.zeros(64 * 64, np.int64)
    counting.function("nested")(counts, 64)
    assert (counts == 1).all()


def test_regions_from_two_python_threads_at_once(counting: JitModule):
    run = counting.function("run")
    results: dict[int, np.ndarray] = {}

    def work(index: int) -> None:
        counts = np.zeros(10_000 + index, np.int64)
        run(counts, counts.size, 2, 200)  # ctypes releases the GIL: both run at once
        results[index] = counts

    threads = [threading.Thread(target=work, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [0, 1]
    assert all((counts == 200).all() for counts in results.values())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_workers(counting: JitModule):
    run = counting.function("run")
    counts = np.zeros(100, np.int64)
    run(counts, 100, 2, 1)  # the parent's workers exist
    pid = os.fork()
    if pid == 0:  # the child: the parent's workers are not here
        child = np.zeros(1000, np.int64)
        run(child, 1000, 2, 10)
        os._exit(0 if (child == 10).all() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# -- outlined loops compute what serial ones do ------------------------------------------

_KERNEL = """
func.func @scale(%a: memref<TRIPx16xf32>, %s: f32, %o: memref<TRIPx16xf32> {loop.output}) attributes {loop.kernel} {
  %tmp = memref.alloc() : memref<16xf32, #loop.scope<local>>
  loop.for %i = LB to TRIP step STEP parallel axis "i" {
    loop.for %j = 0 to 16 axis "j" {
      %v = memref.load %a[%i, %j] : memref<TRIPx16xf32>
      %m = arith.mulf %v, %s : f32
      memref.store %m, %tmp[%j] : memref<16xf32, #loop.scope<local>>
    }
    loop.for %j2 = 0 to 16 vectorized axis "j2" {
      %w = memref.load %tmp[%j2] : memref<16xf32, #loop.scope<local>>
      %c = arith.constant 1.0 : f32
      %r = arith.addf %w, %c : f32
      memref.store %r, %o[%i, %j2] : memref<TRIPx16xf32>
    }
  }
  memref.dealloc %tmp : memref<16xf32, #loop.scope<local>>
  func.return
}
"""


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


@pytest.mark.parametrize(("lb", "trip", "step"), [(0, 64, 1), (1, 37, 2), (3, 5, 1), (0, 2, 1)])
def test_a_parallel_kernel_with_a_private_buffer_matches_numpy(lb: int, trip: int, step: int):
    module = _parse(_KERNEL.replace("LB", str(lb)).replace("TRIP", str(trip)).replace("STEP", str(step)))
    convert_loops_to_llvm(module, threads=4)
    jit = JitModule(module)
    assert f"@{PARALLEL_FOR_SYMBOL}(" in jit.llvm_ir.replace('"', "")
    scale = jit.function("scale")
    a = np.random.default_rng(trip).standard_normal((trip, 16)).astype(np.float32)
    expected = np.zeros_like(a)
    expected[lb:trip:step] = a[lb:trip:step] * np.float32(3) + np.float32(1)
    for _ in range(100):  # each call's chunks land differently on the threads
        out = np.zeros_like(a)
        scale(a, 3.0, out)
        np.testing.assert_array_equal(out, expected)


_FUSED_ROWS = """
func.func @rows(%x: memref<?xf32>, %y: memref<?xf32> {loop.output}, %b: index, %n: index) attributes {loop.kernel} {
  %heads = arith.constant 3 : index
  %per_batch = arith.muli %b, %heads : index
  %total = arith.muli %per_batch, %n : index
  loop.for %f = 0 to %total parallel axis "i.h.l.fused" {
    %l = arith.remui %f, %n : index
    %ih = arith.divui %f, %n : index
    %h = arith.remui %ih, %heads : index
    %i = arith.divui %ih, %heads : index
    %i_rows = arith.muli %i, %heads : index
    %row = arith.addi %i_rows, %h : index
    %base = arith.muli %row, %n : index
    %at = arith.addi %base, %l : index
    %v = memref.load %x[%at] : memref<?xf32>
    %hf = arith.index_cast %h : index to i32
    %hv = arith.sitofp %hf : i32 to f32
    %lf = arith.index_cast %l : index to i32
    %lv = arith.sitofp %lf : i32 to f32
    %fi = arith.index_cast %f : index to i32
    %fv = arith.sitofp %fi : i32 to f32
    %s1 = arith.addf %v, %hv : f32
    %s2 = arith.mulf %lv, %fv : f32
    %s3 = arith.addf %s1, %s2 : f32
    memref.store %s3, %y[%at] : memref<?xf32>
  }
  func.return
}
"""


@pytest.mark.parametrize("threshold", [1, None])
def test_a_fused_loop_over_rows_of_a_run_time_length_runs_as_rows_in_a_task(monkeypatch, threshold):
    """A parallel loop fused from a nest (the batch, 3 heads, rows of a run-time length
    %n) divides its index by %n: the body function runs a loop over the quotients and
    one over the remainders in its range instead, whatever range the pool gives it
    (threshold 1: every call goes to the pool, its chunks starting and ending inside
    rows) or the caller runs it all (too little work for a region)."""
    import strato.targets.llvm.parallel_outlining as outlining

    if threshold is not None:
        monkeypatch.setattr(outlining, "PARALLEL_MIN_ITERATIONS", threshold)
    module = _parse(_FUSED_ROWS)
    convert_loops_to_llvm(module, threads=2)
    body = next(op for op in module.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == "rows_parallel_0")
    divisions = [op for op in body.walk() if isinstance(op, llvm.UDivOp | llvm.URemOp)]
    by_n = [op for op in divisions if not isinstance(op.rhs.owner, llvm.ConstantOp)]
    assert len(by_n) == 4  # the range's first and last iteration, before the loops
    assert all(op.parent_block() is body.body.blocks[0] for op in by_n)
    rows = JitModule(module).function("rows")
    for b, n in [(1, 16), (2, 7), (3, 1), (0, 5), (2, 0), (1, 130)]:
        x = np.random.default_rng(n).standard_normal(b * 3 * n).astype(np.float32)
        f = np.arange(b * 3 * n, dtype=np.float32)
        h = (np.arange(b * 3 * n) // max(n, 1)) % 3
        l = np.arange(b * 3 * n) % max(n, 1)
        expected = x + h.astype(np.float32) + l.astype(np.float32) * f
        for _ in range(20):  # each call's chunks land differently on the threads
            out = np.full_like(x, np.nan)
            rows(x, out, b, n)
            np.testing.assert_array_equal(out, expected)


def test_the_outlined_body_is_never_inlined_into_its_task():
    # inlined, its noalias arguments would become scoped metadata on every access
    import re

    module = _parse(_KERNEL.replace("LB", "0").replace("TRIP", "64").replace("STEP", "1"))
    convert_loops_to_llvm(module, threads=4)
    text = emit_llvm_ir(module).replace('"', "")
    (body,) = re.findall(r"define (?:internal )?void @scale_parallel_0\(.*", text)
    assert " noinline " in body
    (task,) = re.findall(r"define internal void @scale_parallel_0_task\(.*", text)
    assert "noinline" not in task


# -- whole models ----------------------------------------------------------------------------


def _conv_model(channels: int = 32, size: int = 14) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32) * 0.1
    bias = rng.standard_normal(channels).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["y"], ["z"]),
        ],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, channels, size, size])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _inputs(model: strato.CompiledModel) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal(spec.shape).astype(spec.dtype) for spec in model.inputs]


def _calls_pool(model) -> bool:
    return f"@{PARALLEL_FOR_SYMBOL}(" in model.llvm_ir.replace('"', "")


@pytest.mark.parametrize("name", ["mlp", "conv"])
def test_one_and_two_threads_give_identical_results(name: str):
    source = _conv_model() if name == "conv" else "mlp"
    serial = strato.compile(source, threads=1, cache=False)
    parallel = strato.compile(source, threads=2, cache=False)
    assert not _calls_pool(serial) and _calls_pool(parallel)
    inputs = _inputs(serial)
    (expected,) = serial(*inputs)
    for _ in range(20):
        (got,) = parallel(*inputs)
        np.testing.assert_array_equal(got, expected)


def test_a_model_compiled_twice_shares_the_pool_and_runs_from_two_threads():
    first = strato.compile(_conv_model(), threads=2, cache=False)
    second = strato.compile(_conv_model(), threads=2, cache=False)
    inputs = _inputs(first)
    (expected,) = strato.compile(_conv_model(), threads=1, cache=False)(*inputs)
    failures: list[str] = []

    def work(model) -> None:
        for _ in range(50):
            (got,) = model(*inputs)
            if not np.array_equal(got, expected):
                failures.append("a result differs from the serial model's")
                return

    threads = [threading.Thread(target=work, args=(model,)) for model in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("threads", [0, -1, 257, 2.0, "2", True])
def test_a_bad_thread_count_is_a_diagnostic(threads):
    with pytest.raises(StratoError, match="threads must be an integer from 1 to 256"):
        strato.compile("mlp", threads=threads, cache=False)


# -- schedule-default ------------------------------------------------------------------------


_RELU = """
func.func @relu(%a: memref<SHAPE>, %o: memref<SHAPE> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to ROWS axis "i" attributes {stage = "relu"} {
    loop.for %j = 0 to 4 axis "j" attributes {stage = "relu"} {
      loop.for %k = 0 to COLS axis "k" attributes {stage = "relu"} {
        %v = memref.load %a[%i, %j, %k] : memref<SHAPE>
        %z = arith.constant 0.0 : f32
        %m = arith.maximumf %v, %z : f32
        memref.store %m, %o[%i, %j, %k] : memref<SHAPE>
      }
    }
  }
  func.return
}
"""


def _relu(rows: int, cols: int) -> ModuleOp:
    shape = f"{rows}x4x{cols}xf32"
    return _parse(_RELU.replace("SHAPE", shape).replace("ROWS", str(rows)).replace("COLS", str(cols)))


def _parallel_loops(module: ModuleOp) -> list[ForOp]:
    return [op for op in module.walk() if isinstance(op, ForOp) and op.loop_kind == LoopKind.PARALLEL]


def test_schedule_default_parallelizes_the_outer_loops_of_a_large_kernel():
    module = _relu(2, 8192)
    schedule_default(module, get_target("llvm -threads=2").schedule_context())
    (loop,) = _parallel_loops(module)
    # two rows are fewer than 4 per thread: fused with the next loop
    assert loop.axis.data == "i.j.fused" and loop.trip_count == 8
    (kernel,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert kernel.attributes[PARALLEL_ATTR].data["relu"].data == "i.j.fused"


def test_schedule_default_leaves_small_kernels_and_one_thread_serial():
    small = _relu(2, 64)
    schedule_default(small, get_target("llvm -threads=2").schedule_context())
    assert not _parallel_loops(small)
    one_thread = _relu(2, 8192)
    schedule_default(one_thread, get_target("llvm -threads=1").schedule_context())
    assert not _parallel_loops(one_thread)


def test_a_saved_parallel_model_loads_and_finds_the_pool(tmp_path):
    model = strato.compile(_conv_model(16, 16), threads=2, cache=False)
    assert _calls_pool(model)
    path = tmp_path / "conv.strato"
    model.save(path)
    loaded = strato.load(path)
    inputs = _inputs(model)
    (expected,) = model(*inputs)
    for _ in range(20):
        (got,) = loaded(*inputs)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["run", "mlp", "--threads", "0"], "--threads: must be at least 1"),
        (["run", "mlp", "--threads", "300"], "--threads: the thread count must be an integer from 1 to 256"),
        (["compile", "mlp", "--target", "llvm -threads=x"], "-threads must be an integer from 1 to 256"),
    ],
)
def test_a_bad_thread_count_on_the_command_line_is_one_line(argv, fragment, capsys):
    from strato.tools import strato_cli

    assert strato_cli.main(argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0]


# -- the runtime prepared in a thread while a compile starts ----------------------------------

_PREPARED_THEN_FORKED = """
import os, sys
import numpy as np
import strato
from strato import zoo
from strato.targets.llvm import jit
from strato.targets.registry import get_target

get_target("llvm -threads=2").prepare()  # what strato.compile does first
pid = os.fork()  # at once: the fork waits for the thread, never inherits it half done
if pid == 0:
    model = strato.compile(zoo.build_model("mlp", seed=0), threads=2)
    x = np.ones(model.signature.inputs[0].shape, np.float32)
    os._exit(0 if np.isfinite(model(x)).all() else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert not jit._PREPARING.is_alive()
model = strato.compile(zoo.build_model("mlp", seed=0), threads=2)
print("ok")
"""


def test_a_fork_right_after_prepare_waits_for_the_runtime_thread(tmp_path):
    """`LLVMTarget.prepare` compiles the runtime in a thread; a process forked while it
    runs gets it finished (the fork waits), and compiles and runs a model, as does the
    parent."""
    import subprocess
    import sys

    env = {**os.environ, "STRATO_CACHE_DIR": str(tmp_path), "STRATO_CACHE": "0"}
    result = subprocess.run(
        [sys.executable, "-c", _PREPARED_THEN_FORKED],
        check=False, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- the workspace: buffers kept between calls ----------------------------------------------


def _workspace():
    """take(size), give(buffer, size) and release() of this process's runtime."""
    import ctypes

    import llvmlite.binding as llvm

    from strato.targets.llvm.parallel_runtime import (
        WORKSPACE_GIVE,
        WORKSPACE_TAKE,
        install_parallel_runtime,
        release_workspace,
    )

    install_parallel_runtime()
    take = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)(llvm.address_of_symbol(WORKSPACE_TAKE))
    give = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(llvm.address_of_symbol(WORKSPACE_GIVE))
    return take, give, release_workspace


def test_a_buffer_given_back_is_taken_again_by_its_size():
    from strato.targets.llvm.parallel_runtime import WORKSPACE_SLOTS

    take, give, release = _workspace()
    release()
    first = take(1000)
    assert first % 64 == 0
    give(first, 1000)
    other = take(1001)  # another size: another buffer
    assert other != first
    assert take(1000) == first  # kept, and taken out of the workspace again
    assert take(1000) not in (first, other)
    give(other, 1001)
    give(first, 1000)
    # more buffers than slots: once all are kept, each one given back frees the oldest
    sizes = [64 * (i + 2) for i in range(2 * WORKSPACE_SLOTS)]
    extra = [take(size) for size in sizes]
    for buffer, size in zip(extra, sizes, strict=True):
        give(buffer, size)
    assert take(sizes[-1]) == extra[-1]  # the newest are kept
    release()


def test_threads_never_hold_the_same_buffer():
    """Eight threads taking and giving back buffers of a few sizes: a buffer is never
    held by two of them at once (each writes its id through it and finds it there)."""
    import ctypes

    take, give, release = _workspace()
    failures: list[str] = []

    def work(ident: int) -> None:
        for n in range(400):
            size = 256 * (1 + n % 3)
            buffer = take(size)
            words = (ctypes.c_int64 * (size // 8)).from_address(buffer)
            words[0] = words[-1] = ident
            if n % 7 == 0:
                time.sleep(0)  # let another thread run while this one holds the buffer
            if words[0] != ident or words[-1] != ident:
                failures.append(f"thread {ident}: buffer {buffer:#x} shared")
            give(buffer, size)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    release()
    assert not failures


def test_a_models_buffers_are_kept_between_calls():
    """A model's arena and its kernels' buffers go back to the workspace at the end of a
    call and come from it in the next: two calls give the same results, also after the
    workspace was emptied."""
    from strato.targets.llvm.parallel_runtime import release_workspace

    compiled = strato.compile("mlp", cache=False)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(spec.shape).astype(spec.dtype) for spec in compiled.inputs]
    first = compiled(*inputs)[0]
    np.testing.assert_array_equal(compiled(*inputs)[0], first)
    release_workspace()
    np.testing.assert_array_equal(compiled(*inputs)[0], first)
    assert "strato_workspace_take" in compiled.llvm_ir
