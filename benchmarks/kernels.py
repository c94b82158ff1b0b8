"""Single-thread kernel speed: GEMM 1024^3 and ResNet-18's conv2d layers C1-C12.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/kernels.py
    python benchmarks/kernels.py C2 C6 --no-unscheduled --seconds 0.5
    python benchmarks/kernels.py --no-unscheduled --target-options=-winograd

Each workload is one ONNX node compiled by strato twice, in one process: the canonical
loop nest of convert-te-to-loops (`unscheduled`) and the kernel `schedule-default` makes
of it (`default`). Peers measured right after, on the same inputs: numpy's matmul for the
GEMM (OpenBLAS, OPENBLAS_NUM_THREADS=1 set before numpy is imported) and onnxruntime with
one intra-op thread for every workload. Speeds are GFLOP/s (2 flops per multiply-add) of
the median CPU time of the calling thread per call, over `--seconds` of repeats after a
warm-up (thread CPU time, because on a machine shared with other work wall time counts
the time the core spends on others); the unscheduled nest runs once (it takes seconds). Results are checked against onnxruntime (max relative error).
`%peak` is the share of one core's fp32 FMA peak, measured first on this machine
(`strato.bench.machine.fma_peak_gflops`), not computed from nominal figures.

The C1-C12 shapes (H/W, in -> out channels, kernel, stride; "same" padding) are those of
the TVM paper's ResNet-18 benchmark. OPENBLAS_CORETYPE, when the environment sets it,
slows numpy; unset it for this command as above (the script prints the BLAS kernel).
"""

from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy is imported, or it has no effect

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from statistics import median  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from resnet18_layers import CONV_LAYERS  # noqa: E402

from strato.bench.machine import fma_peak_gflops  # noqa: E402
from strato.frontends.onnx import import_onnx  # noqa: E402
from strato.runtime.signature import Signature  # noqa: E402
from strato.targets.registry import get_target, run_stages  # noqa: E402


@dataclass
class Workload:
    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    flops: float


def _model(nodes, inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "kernel", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gemm_workload(size: int, rng: np.random.Generator) -> Workload:
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [size, size])
    b = helper.make_tensor_value_info("B", TensorProto.FLOAT, [size, size])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [size, size])
    model = _model([helper.make_node("MatMul", ["A", "B"], ["Y"])], [a, b], [y], [])
    inputs = [rng.standard_normal((size, size)).astype(np.float32) for _ in range(2)]
    return Workload("GEMM", model, inputs, 2.0 * size**3)


def conv_workload(name: str, rng: np.random.Generator) -> Workload:
    size, cin, cout, kernel, stride = CONV_LAYERS[name]
    pad = kernel // 2
    out = (size + 2 * pad - kernel) // stride + 1
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, cin, size, size])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, cout, out, out])
    weight = rng.standard_normal((cout, cin, kernel, kernel)).astype(np.float32)
    weight *= 1.0 / math.sqrt(cin * kernel * kernel)
    node = helper.make_node(
        "Conv", ["X", "W"], ["Y"], kernel_shape=[kernel, kernel],
        strides=[stride, stride], pads=[pad] * 4,
    )  # fmt: skip
    model = _model([node], [x], [y], [numpy_helper.from_array(weight, "W")])
    inputs = [rng.standard_normal((1, cin, size, size)).astype(np.float32)]
    return Workload(name, model, inputs, 2.0 * cout * out * out * cin * kernel * kernel)


def compile_with(
    model: onnx.ModelProto, *, scheduled: bool, options: str = ""
) -> Callable[..., list[np.ndarray]]:
    """The model compiled by the llvm target for one thread (parallel loops run
    serially) with the target `options` (such as "-winograd"), with its default
    schedules or with the canonical loop nests as they are."""
    imported = import_onnx(model)
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names
    )
    target = get_target(f"llvm -threads=1 {options}".strip())
    stages = [s for s in target.stages() if scheduled or s.name != "schedule"]
    run_stages(stages, imported.module)
    return target.build(imported.module, imported.function_name, signature, public_name="model")


def median_seconds(run: Callable[[], object], seconds: float, once: bool) -> float:
    """Median CPU time of the calling thread per call. Every side runs single-threaded
    in this thread (strato, numpy with one OpenBLAS thread, onnxruntime with one
    intra-op thread), and thread CPU time does not count the time other processes
    take the core from it, which wall time on a shared machine does."""
    run()  # warm-up
    if once:
        start = time.thread_time()
        run()
        return time.thread_time() - start
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < 3 or time.perf_counter() < deadline:
        start = time.thread_time()
        run()
        times.append(time.thread_time() - start)
    return median(times)


def onnxruntime_session(model: onnx.ModelProto):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return float(np.max(np.abs(ours - reference))) / scale


def blas_kernel() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(
        f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} "
        f"{i.get('num_threads')} thread(s)"
        for i in infos
    ) or "none found"


@dataclass
class Row:
    name: str
    flops: float
    unscheduled: float | None  # GFLOP/s
    default: float
    onnxruntime: float
    numpy: float | None
    error: float


def gflops(flops: float, seconds: float) -> float:
    return flops / seconds / 1e9


def bench(workload: Workload, seconds: float, unscheduled: bool, options: str = "") -> Row:
    default_model = compile_with(workload.model, scheduled=True, options=options)
    ours = default_model(*workload.inputs)[0]
    default_s = median_seconds(lambda: default_model(*workload.inputs), seconds, False)

    unscheduled_gflops = None
    if unscheduled:
        plain = compile_with(workload.model, scheduled=False)
        plain_s = median_seconds(lambda: plain(*workload.inputs), seconds, True)
        unscheduled_gflops = gflops(workload.flops, plain_s)

    session = onnxruntime_session(workload.model)
    names = [i.name for i in session.get_inputs()]
    feed = dict(zip(names, workload.inputs))
    reference = session.run(None, feed)[0]
    ort_s = median_seconds(lambda: session.run(None, feed), seconds, False)

    numpy_gflops = None
    if workload.name == "GEMM":
        a, b = workload.inputs
        numpy_s = median_seconds(lambda: a @ b, seconds, False)
        numpy_gflops = gflops(workload.flops, numpy_s)
        reference = a @ b
    return Row(
        workload.name,
        workload.flops,
        unscheduled_gflops,
        gflops(workload.flops, default_s),
        gflops(workload.flops, ort_s),
        numpy_gflops,
        relative_error(ours, reference),
    )


def print_table(rows: list[Row], peak: float) -> None:
    header = (
        f"{'kernel':7s} {'GFLOP':>6s} {'unsched':>8s} {'default':>8s} {'numpy':>8s} "
        f"{'ortrt':>8s} {'def/peer':>8s} {'def/unsch':>9s} {'%peak':>6s} {'max rel err':>11s}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        peer = row.numpy if row.numpy is not None else row.onnxruntime
        unsched = f"{row.unscheduled:8.2f}" if row.unscheduled is not None else f"{'-':>8s}"
        speedup = (
            f"{row.default / row.unscheduled:8.1f}x"
            if row.unscheduled is not None
            else f"{'-':>9s}"
        )
        numpy_text = f"{row.numpy:8.1f}" if row.numpy is not None else f"{'-':>8s}"
        print(
            f"{row.name:7s} {row.flops / 1e9:6.2f} {unsched} {row.default:8.1f} "
            f"{numpy_text} {row.onnxruntime:8.1f} {row.default / peer:7.2f}x "
            f"{speedup} {100 * row.default / peak:5.0f}% {row.error:11.1e}",
            flush=True,
        )
    convs = [r for r in rows if r.name in CONV_LAYERS]
    if convs:
        ratio = math.exp(sum(math.log(r.default / r.onnxruntime) for r in convs) / len(convs))
        print(f"conv geometric mean of default/onnxruntime over {len(convs)} layers: {ratio:.2f}x")
    for row in rows:
        if row.numpy is not None:
            print(f"GEMM default/numpy: {row.default / row.numpy:.2f}x "
                  f"(default/onnxruntime {row.default / row.onnxruntime:.2f}x); "
                  f"of the peak: default {100 * row.default / peak:.0f}%, "
                  f"numpy {100 * row.numpy / peak:.0f}%")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="GEMM, C1 .. C12 (default: all)")
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per measurement")
    parser.add_argument("--gemm-size", type=int, default=1024)
    parser.add_argument("--no-unscheduled", action="store_true",
                        help="skip the canonical loop nest (slow: seconds per kernel)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target-options", default="", metavar="OPTIONS",
                        help="llvm target options of the default column, e.g. "
                        "--target-options=-winograd")  # fmt: skip
    args = parser.parse_args()
    names = args.kernels or ["GEMM", *CONV_LAYERS]
    rng = np.random.default_rng(args.seed)
    peak = fma_peak_gflops()
    print(f"single thread; BLAS: {blas_kernel()}; one core's fp32 FMA peak, measured: "
          f"{peak:.1f} GFLOP/s (%peak); target: llvm {args.target_options}", flush=True)  # fmt: skip
    rows: list[Row] = []
    for name in names:
        if name == "GEMM":
            workload = gemm_workload(args.gemm_size, rng)
        elif name in CONV_LAYERS:
            workload = conv_workload(name, rng)
        else:
            parser.error(f"unknown kernel '{name}' (GEMM, {', '.join(CONV_LAYERS)})")
        rows.append(bench(workload, args.seconds, not args.no_unscheduled, args.target_options))
    print_table(rows, peak)


if __name__ == "__main__":
    main()
