"""Latency of the built-in models: strato's LLVM target vs onnxruntime, in one run.

    python benchmarks/zoo.py                       # every zoo model, full size
    python benchmarks/zoo.py resnet18 dqn --repeat 20

For each model: compile time, the median latency of strato and of onnxruntime on the
same inputs in the same process (after a warm-up), their ratio, the max relative error,
the number of kernels, and the memory plan (arena bytes against the sum of all
intermediate tensors). onnxruntime runs with its default threads unless --threads says.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import strato
from strato import zoo
from strato.runtime.timing import median_latency_ms


def random_inputs(compiled, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in compiled.inputs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind in "iu":
            arrays.append(rng.integers(0, 100, size=spec.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(spec.shape).astype(dtype))
    return arrays


def kernel_and_memory_figures(stages: dict[str, object]) -> tuple[int, int, int]:
    from xdsl.dialects import func

    from strato.dialects import te

    te_module = stages.get("te-inline-stages") or stages.get("convert-graph-to-te")
    kernels = sum(isinstance(op, te.PrimitiveOp) for op in te_module.walk())  # type: ignore[union-attr]
    graph_module = stages["graph-plan-memory"]  # the last graph pass: the memory plan
    entry = next(op for op in graph_module.walk() if isinstance(op, func.FuncOp))  # type: ignore[union-attr]
    arena = entry.attributes.get("arena_bytes")
    total = entry.attributes.get("intermediate_bytes")
    return kernels, arena.value.data if arena else -1, total.value.data if total else -1


def bench(name: str, repeat: int, threads: int, seed: int) -> None:
    import onnxruntime

    model = zoo.build_model(name, seed=seed)
    stages: dict[str, object] = {}

    def keep(stage: str, module) -> None:
        if stage in ("graph-plan-memory", "convert-graph-to-te", "te-inline-stages"):
            stages[stage] = module.clone()

    start = time.perf_counter()
    compiled = strato.compile(model, target="llvm", after_stage=keep)
    compile_seconds = time.perf_counter() - start
    kernels, arena, total = kernel_and_memory_figures(stages)

    inputs = random_inputs(compiled, seed)
    ours = compiled(*inputs)
    strato_ms = median_latency_ms(lambda: compiled(*inputs), repeat, warmup=2)

    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    # idle onnxruntime worker threads must not spin while the other side is timed
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feed = dict(zip(compiled.input_names, inputs))
    theirs = session.run(None, feed)
    error = max(
        float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
        for a, b in zip(ours, theirs)
    )
    ort_ms = median_latency_ms(lambda: session.run(None, feed), repeat, warmup=2)
    print(
        f"{name:13s} compile {compile_seconds:6.1f} s | strato {strato_ms:9.3f} ms | "
        f"onnxruntime {ort_ms:8.3f} ms | ratio {strato_ms / ort_ms:6.2f}x | "
        f"max rel err {error:.1e} | kernels {kernels:3d} | "
        f"arena {arena / 2**20:7.2f} MiB of {total / 2**20:7.2f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="zoo names (default: all)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in args.models or zoo.zoo_names():
        bench(name, args.repeat, args.threads, args.seed)


if __name__ == "__main__":
    main()
