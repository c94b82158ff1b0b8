"""One recurrent layer (GRU, RNN, LSTM) compiled by strato next to onnxruntime, same process.

    python benchmarks/recurrent.py                          # GRU, RNN, LSTM: hidden 256, 35 steps
    python benchmarks/recurrent.py --ops GRU --hidden 512 --steps 10 --batch 4

Each layer is one ONNX node (forward, with a bias, input size = hidden size, Y and Y_h as
outputs) with its weights as initializers. Both sides run on one thread; the figure is
the best mean time of a call over several rounds, after the outputs were checked to
agree. Also printed: the seconds strato took to compile the layer.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import strato

GATES = {"GRU": 3, "RNN": 1, "LSTM": 4}


def layer(op_type: str, hidden: int, steps: int, batch: int, seed: int = 0):
    """The model and its input X."""
    rng = np.random.default_rng(seed)
    gates = GATES[op_type]
    scale = 1.0 / np.sqrt(hidden)
    weights = {
        "W": rng.uniform(-scale, scale, (1, gates * hidden, hidden)),
        "R": rng.uniform(-scale, scale, (1, gates * hidden, hidden)),
        "B": rng.uniform(-scale, scale, (1, 2 * gates * hidden)),
    }
    node = helper.make_node(op_type, ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden)
    graph = helper.make_graph(
        [node],
        op_type.lower(),
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [steps, batch, hidden])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, [steps, 1, batch, hidden]),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, batch, hidden]),
        ],
        [numpy_helper.from_array(a.astype(np.float32), n) for n, a in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    x = rng.standard_normal((steps, batch, hidden)).astype(np.float32)
    return model, x


def per_call_ms(call, calls: int, rounds: int = 7) -> float:
    call()
    means = []
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(calls):
            call()
        means.append((time.thread_time() - start) / calls * 1e3)
    return float(np.median(means))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="GRU,RNN,LSTM", help="comma-separated op types")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--calls", type=int, default=50, help="calls a round")
    args = parser.parse_args()

    print(f"hidden {args.hidden}, {args.steps} steps, batch {args.batch}, one thread")
    print(f"{'layer':6s} {'strato ms':>10s} {'ort ms':>10s} {'ratio':>7s} {'compile s':>10s}")
    for op_type in args.ops.split(","):
        model, x = layer(op_type, args.hidden, args.steps, args.batch)
        start = time.perf_counter()
        compiled = strato.compile(model, cache=False, threads=1)
        compile_seconds = time.perf_counter() - start
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        for ours, theirs in zip(compiled(x), session.run(None, {"X": x}), strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        ours = per_call_ms(lambda: compiled(x), args.calls)
        theirs = per_call_ms(lambda: session.run(None, {"X": x}), args.calls)
        print(
            f"{op_type:6s} {ours:10.3f} {theirs:10.3f} {ours / theirs:6.2f}x "
            f"{compile_seconds:10.1f}"
        )


if __name__ == "__main__":
    main()
