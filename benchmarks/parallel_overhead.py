"""Parallel loops: the cost of one parallel region, and the speedup of two threads.

    python benchmarks/parallel_overhead.py                    # everything
    python benchmarks/parallel_overhead.py --skip-models      # the region cost only
    python benchmarks/parallel_overhead.py --seconds 0.5 --models gemm

1. Region overhead: a JIT-compiled driver calls `strato_parallel_for` back to back on a
   body that does (almost) nothing, so the time per call is the region's own cost:
   claiming the pool, waking the workers, handing out chunks and joining them. The same
   driver with `threads=1` (a direct call of the body) is the baseline.
2. Elementwise crossover: a relu kernel over N floats, parallel loop on 2 threads vs 1,
   for N around `schedule_default.PARALLEL_MIN_ITERATIONS`.
3. Models: GEMM 512^3 (one MatMul node) and ResNet-18 from the zoo, compiled by
   `strato.compile(..., threads=1)` and `threads=2`, next to onnxruntime with
   `intra_op_num_threads` 1 and 2 (spinning off), all in this one run.

Times are wall-clock medians over `--seconds` of repeats after a warm-up. The machine is
shared: only ratios measured in the same run mean anything, and they are noisy.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from statistics import median  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import strato  # noqa: E402
from strato.targets.llvm.jit import JitModule  # noqa: E402
from strato.targets.llvm.parallel_runtime import PARALLEL_FOR_SYMBOL  # noqa: E402

_DRIVER = f"""
declare void @{PARALLEL_FOR_SYMBOL}(ptr, ptr, i64, i64)

define void @touch(ptr %data, i64 %begin, i64 %end) {{
  %slot = getelementptr i64, ptr %data, i64 %begin
  store volatile i64 %end, ptr %slot
  ret void
}}

; ~`data[63]` steps of work per iteration: enough for both threads to take part
define void @work(ptr %data, i64 %begin, i64 %end) {{
entry:
  %steps_slot = getelementptr i64, ptr %data, i64 63
  %steps = load i64, ptr %steps_slot
  %total = mul i64 %steps, %end
  %start = mul i64 %steps, %begin
  %slot = getelementptr i64, ptr %data, i64 %begin
  br label %loop
loop:
  %k = phi i64 [%start, %entry], [%k1, %loop]
  store volatile i64 %k, ptr %slot
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %total
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}

define void @work_regions(ptr %data, i64 %trip, i64 %threads, i64 %repeats) {{
entry:
  br label %loop
loop:
  %r = phi i64 [0, %entry], [%r1, %loop]
  call void @{PARALLEL_FOR_SYMBOL}(ptr @work, ptr %data, i64 %trip, i64 %threads)
  %r1 = add i64 %r, 1
  %more = icmp slt i64 %r1, %repeats
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}

define void @regions(ptr %data, i64 %trip, i64 %threads, i64 %repeats) {{
entry:
  br label %loop
loop:
  %r = phi i64 [0, %entry], [%r1, %loop]
  call void @{PARALLEL_FOR_SYMBOL}(ptr @touch, ptr %data, i64 %trip, i64 %threads)
  %r1 = add i64 %r, 1
  %more = icmp slt i64 %r1, %repeats
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}
"""


def timed(*calls: Callable[[], object], seconds: float) -> list[float]:
    """Median wall time in seconds of each of `calls`, over `seconds` of repeats after
    a warm-up. The calls take turns, so a change in the machine's load while they are
    measured touches them all alike."""
    for call in calls:
        call()
    samples: list[list[float]] = [[] for _ in calls]
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples[0]) < 5:
        for call, times in zip(calls, samples, strict=True):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
    return [median(times) for times in samples]


def region_overhead(seconds: float) -> None:
    jit = JitModule(_DRIVER)
    regions, work_regions = jit.function("regions"), jit.function("work_regions")
    data = np.zeros(64, np.int64)
    repeats = 2000
    print("parallel region overhead, empty body (back to back, so the worker is polling")
    print("and joins each region: the cost a region adds to its caller)")
    for trip in (2, 8, 62):
        base, per = (
            t / repeats
            for t in timed(
                lambda t=trip: regions(data, t, 1, repeats),
                lambda t=trip: regions(data, t, 2, repeats),
                seconds=seconds,
            )
        )
        print(f"  {trip:3d} iterations: threads=1 (direct call) {base * 1e6:7.3f} us, "
              f"threads=2 {per * 1e6:7.3f} us per region (overhead {(per - base) * 1e6:.3f} us)")
    print("parallel region overhead, body of ~W us per thread (both threads take part:")
    print("overhead = time at 2 threads - half the time at 1 thread)")
    repeats = 200
    for steps in (20_000, 100_000):
        data[63] = steps
        one, two = (
            t / repeats
            for t in timed(
                lambda: work_regions(data, 2, 1, repeats),
                lambda: work_regions(data, 2, 2, repeats),
                seconds=seconds,
            )
        )
        print(f"  W={one / 2 * 1e6:7.1f} us   1 thread {one * 1e6:8.1f} us   2 threads "
              f"{two * 1e6:8.1f} us   overhead {(two - one / 2) * 1e6:6.1f} us   "
              f"speedup {one / two:.2f}x")


def _relu_kernel(n: int) -> str:
    rows = n // 1024
    return f"""
func.func @relu(%a: memref<{rows}x1024xf32>, %o: memref<{rows}x1024xf32> {{loop.output}}) attributes {{loop.kernel}} {{
  loop.for %i = 0 to {rows} parallel axis "i" {{
    loop.for %j = 0 to 1024 vectorized axis "j" {{
      %v = memref.load %a[%i, %j] : memref<{rows}x1024xf32>
      %z = arith.constant 0.0 : f32
      %m = arith.maximumf %v, %z : f32
      memref.store %m, %o[%i, %j] : memref<{rows}x1024xf32>
    }}
  }}
  func.return
}}
"""


def elementwise_crossover(seconds: float) -> None:
    from xdsl.parser import Parser

    from strato.context import make_context
    from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm

    print("relu over N floats: 1 thread vs 2 (parallel rows of 1024)")
    for n in (8192, 32768, 131072, 1 << 20):
        a = np.random.default_rng(0).standard_normal((n // 1024, 1024)).astype(np.float32)
        o = np.empty_like(a)
        kernels = {}
        for threads in (1, 2):
            module = Parser(make_context(), _relu_kernel(n)).parse_module()
            convert_loops_to_llvm(module, threads=threads)
            kernels[threads] = JitModule(module).function("relu")
        one, two = timed(
            lambda: kernels[1](a, o), lambda: kernels[2](a, o), seconds=seconds
        )
        times = {1: one, 2: two}
        print(f"  N={n:8d}  1 thread {times[1] * 1e6:8.1f} us   2 threads {times[2] * 1e6:8.1f} us"
              f"   speedup {times[1] / times[2]:.2f}x")


def _gemm_model(n: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    b = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
        [b],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _onnxruntime(model: onnx.ModelProto, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def compare_model(name: str, model: onnx.ModelProto, flops: float | None, seconds: float) -> None:
    print(f"{name}:")
    compiled = {}
    for threads in (1, 2):
        start = time.perf_counter()
        compiled[threads] = strato.compile(model, threads=threads)
        print(f"  strato threads={threads} compiled in {time.perf_counter() - start:.1f} s")
    inputs = [
        np.random.default_rng(1).standard_normal(spec.shape).astype(spec.dtype)
        for spec in compiled[1].inputs
    ]
    feeds = {spec.name: array for spec, array in zip(compiled[1].inputs, inputs, strict=True)}
    reference = compiled[1](*inputs)[0]
    got = compiled[2](*inputs)[0]
    if not np.array_equal(got, reference):
        print(f"  warning: threads=2 differs from threads=1 by {np.abs(got - reference).max():.3g}")
    sessions = {threads: _onnxruntime(model, threads) for threads in (1, 2)}
    s1, s2, o1, o2 = timed(
        lambda: compiled[1](*inputs),
        lambda: compiled[2](*inputs),
        lambda: sessions[1].run(None, feeds),
        lambda: sessions[2].run(None, feeds),
        seconds=seconds,
    )
    rows = [(1, s1, o1), (2, s2, o2)]
    for threads, latency, peer in rows:
        rate = f"  {flops / latency / 1e9:6.1f} GFLOP/s" if flops else ""
        peer_rate = f"  {flops / peer / 1e9:6.1f} GFLOP/s" if flops else ""
        print(f"  threads={threads}  strato {latency * 1e3:8.2f} ms{rate}   "
              f"onnxruntime {peer * 1e3:8.2f} ms{peer_rate}   strato/ort {latency / peer:.2f}")
    print(f"  speedup at 2 threads: strato {s1 / s2:.2f}x   onnxruntime {o1 / o2:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="repeats per measurement")
    parser.add_argument("--skip-models", action="store_true", help="only the region cost")
    parser.add_argument(
        "--models", nargs="*", default=["gemm", "resnet18"], choices=["gemm", "resnet18"]
    )
    args = parser.parse_args()
    print(f"cores available: {len(os.sched_getaffinity(0))}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    region_overhead(args.seconds)
    elementwise_crossover(args.seconds / 2)
    if args.skip_models:
        return
    if "gemm" in args.models:
        compare_model("GEMM 512^3", _gemm_model(512), 2 * 512**3, args.seconds)
    if "resnet18" in args.models:
        from strato import zoo

        compare_model("resnet18 (batch 1)", zoo.build_model("resnet18"), None, args.seconds)


if __name__ == "__main__":
    main()
