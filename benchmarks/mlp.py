"""Latency of the built-in MLP (784-1024-1024-10): strato's LLVM target vs onnxruntime.

    python benchmarks/mlp.py --batch 1 --repeat 200

Both run the same model on the same inputs in the same process; each latency is the
median of `--repeat` timed calls after a warm-up. Also checks that the outputs agree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import strato
from strato import zoo
from strato.runtime.timing import median_latency_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: its default)")
    args = parser.parse_args()

    import onnxruntime

    model = zoo.build_model("mlp", batch=args.batch, seed=args.seed)
    start = time.perf_counter()
    compiled = strato.compile(model, target="llvm")
    compile_seconds = time.perf_counter() - start

    options = onnxruntime.SessionOptions()
    if args.threads:
        options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    x = np.random.default_rng(args.seed).standard_normal((args.batch, 784)).astype(np.float32)
    feed = {compiled.input_names[0]: x}

    (ours,) = compiled(x)
    (theirs,) = session.run(None, feed)
    error = float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))

    strato_ms = median_latency_ms(lambda: compiled(x), args.repeat, warmup=5)
    ort_ms = median_latency_ms(lambda: session.run(None, feed), args.repeat, warmup=5)

    print(f"mlp 784-1024-1024-10, batch {args.batch}, median of {args.repeat} runs")
    print(f"strato (llvm): {strato_ms:8.3f} ms   (compiled in {compile_seconds:.1f} s)")
    print(f"onnxruntime:   {ort_ms:8.3f} ms")
    print(f"ratio strato/onnxruntime: {strato_ms / ort_ms:.2f}x")
    print(f"max relative error: {error:.3g}")


if __name__ == "__main__":
    main()
