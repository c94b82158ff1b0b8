"""Control flow decided at run time: strato's compiled model next to onnxruntime, in one run.

    python benchmarks/control_flow.py                 # every case, one thread
    python benchmarks/control_flow.py --only recurrence --threads 2 --repeat 50

Cases (ONNX models built here, seeded random weights):
- recurrence: a Loop of a run-time trip count (a graph input, called with 10 and 100)
  carrying h <- tanh(h @ W + x) over a [4, 256] state (a graph.loop);
- while: a Loop without a trip count whose body computes its condition from the data
  (halve the state while its norm is above a limit: 20 iterations);
- branches: an If on the sign of a reduction between two branches of two 3x3
  convolutions each (64 channels, 28 x 28): only the branch taken runs (a graph.if);
- scan: a Scan of 100 positions of x [100, 4, 256] carrying h <- tanh(h @ W + x_t @ U),
  each position's h a scan output (a graph.scan);
- counted: a Loop of a constant trip count 100 with a scan output (h <- tanh(h @ W),
  each iteration's h stacked), whose body never stops it (a graph.scan over the
  iteration numbers);
- growing: a generation loop whose state grows (append tanh(last row @ W) to it, a
  run-time number of times), run on the host with its body compiled per size of the
  state;
- host: a Loop of a run-time trip count with a scan output (whose length is the trip
  count), which strato stages (`strato.staged`): the first call runs the body once per
  iteration on the host, the second compiles the Loop to run in chunks of iterations
  (a graph.scan that stops), which the timed calls run (M=10 first: chunks of 16, then
  of 128 once a call of 100 took more than two);
- stopping: a generation loop of at most 100 iterations (a constant trip count) that
  stops when its state's sum passes a run-time limit (called so that it stops after 60
  and after 5), each iteration's state a scan output: staged and compiled in chunks as
  `host` is.

`--unroll-up-to N` unrolls Scans and Loops of known length up to N nodes instead (the
importer's `UNROLLED_NODES`; 20000 unrolls the scan and counted cases, as strato did
before graph.scan), to compare compile time and latency with unrolling. Compiles skip
the cache, so the compile seconds printed are a compile's.

Per case and input: the model strato built (compiled in one piece, or staged), the
largest difference from onnxruntime's outputs, and the median latency of strato and of
onnxruntime (its threads not spinning between calls), taken in turns, with the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _info(name: str, elem: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "control", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _weights(rng: np.random.Generator, name: str, shape, scale: float) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _loop_body(nodes, state, scans=()) -> onnx.GraphProto:
    return helper.make_graph(
        nodes, "body",
        [_info("i", I64, []), _info("cond_in", B, []), _info("h_in", F, list(state))],
        [_info("cond_out", B, []), _info("h_out", F, list(state)), *scans],
    )  # fmt: skip


def recurrence(rng: np.random.Generator):
    state = (4, 256)
    body = _loop_body(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["p"]),
            helper.make_node("Add", ["p", "x"], ["q"]),
            helper.make_node("Tanh", ["q"], ["h_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        state,
    )
    model = _model(
        [helper.make_node("Loop", ["M", "", "x"], ["h"], body=body)],
        [_info("x", F, list(state)), _info("M", I64, [])],
        [_info("h", F, list(state))],
        [_weights(rng, "W", (256, 256), 0.06)],
    )
    x = rng.standard_normal(state).astype(np.float32)
    return model, [(f"M={m}", {"x": x, "M": np.array(m, np.int64)}) for m in (10, 100)]


def while_loop(rng: np.random.Generator):
    state = (16, 512)
    body = _loop_body(
        [
            helper.make_node("Mul", ["h_in", "half"], ["h_out"]),
            helper.make_node("ReduceL2", ["h_out"], ["norm"], keepdims=0),
            helper.make_node("Greater", ["norm", "limit"], ["cond_out"]),
        ],
        state,
    )
    model = _model(
        [helper.make_node("Loop", ["", "go", "x"], ["h"], body=body)],
        [_info("x", F, list(state)), _info("go", B, []), _info("limit", F, [])],
        [_info("h", F, list(state))],
        [numpy_helper.from_array(np.float32(0.5), "half")],
    )
    x = rng.standard_normal(state).astype(np.float32)
    limit = float(np.linalg.norm(x)) / 2**20
    return model, [("20 iterations", {"x": x, "go": np.array(True), "limit": np.array(limit, np.float32)})]


def branches(rng: np.random.Generator):
    channels, size = 64, 28

    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph(
            [
                helper.make_node("Conv", ["x", f"{name}1"], [f"{name}_a"], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", [f"{name}_a"], [f"{name}_b"]),
                helper.make_node("Conv", [f"{name}_b", f"{name}2"], [f"{name}_out"], pads=[1, 1, 1, 1]),
            ],
            name, [], [_info(f"{name}_out", F, [1, channels, size, size])],
        )  # fmt: skip

    weights = [
        _weights(rng, f"{name}{k}", (channels, channels, 3, 3), 0.05)
        for name in ("then", "else")
        for k in (1, 2)
    ]
    model = _model(
        [
            helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["c"]),
            helper.make_node("If", ["c"], ["y"], then_branch=branch("then"), else_branch=branch("else")),
        ],
        [_info("x", F, [1, channels, size, size])],
        [_info("y", F, [1, channels, size, size])],
        [*weights, numpy_helper.from_array(np.float32(0), "zero")],
    )
    x = np.abs(rng.standard_normal((1, channels, size, size))).astype(np.float32)
    return model, [("then", {"x": x}), ("else", {"x": -x})]


def _stacking_body(state) -> onnx.GraphProto:
    """h <- tanh(h @ W), each iteration's h a scan output; the condition given back."""
    return _loop_body(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["p"]),
            helper.make_node("Tanh", ["p"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["seen"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        state,
        [_info("seen", F, list(state))],
    )


def host_loop(rng: np.random.Generator):
    state = (4, 256)
    body = _stacking_body(state)
    model = _model(
        [helper.make_node("Loop", ["M", "", "x"], ["h", "all"], body=body)],
        [_info("x", F, list(state)), _info("M", I64, [])],
        [_info("h", F, list(state)), _info("all", F, ["M", *state])],
        [_weights(rng, "W", (256, 256), 0.06)],
    )
    x = rng.standard_normal(state).astype(np.float32)
    return model, [(f"M={m}", {"x": x, "M": np.array(m, np.int64)}) for m in (10, 100)]


def stopping(rng: np.random.Generator):
    state = (4, 256)
    body = _loop_body(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["p"]),
            helper.make_node("Tanh", ["p"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["seen"]),
            helper.make_node("Add", ["i", "one"], ["ran"]),
            helper.make_node("Cast", ["ran"], ["ran_f"], to=F),
            helper.make_node("Less", ["ran_f", "limit"], ["cond_out"]),
        ],
        state,
        [_info("seen", F, list(state))],
    )
    model = _model(
        [helper.make_node("Loop", ["M", "", "x"], ["h", "all"], body=body)],
        [_info("x", F, list(state)), _info("limit", F, [])],
        [_info("h", F, list(state)), _info("all", F, ["N", *state])],
        [
            _weights(rng, "W", (256, 256), 0.06),
            numpy_helper.from_array(np.array(100, np.int64), "M"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
        ],
    )
    x = rng.standard_normal(state).astype(np.float32)
    return model, [(f"stops at {n}", {"x": x, "limit": np.array(n, np.float32)}) for n in (60, 5)]


def scan(rng: np.random.Generator):
    steps, state = 100, (4, 256)
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["p"]),
            helper.make_node("MatMul", ["x_t", "U"], ["u"]),
            helper.make_node("Add", ["p", "u"], ["q"]),
            helper.make_node("Tanh", ["q"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["seen"]),
        ],
        "body",
        [_info("h_in", F, list(state)), _info("x_t", F, list(state))],
        [_info("h_out", F, list(state)), _info("seen", F, list(state))],
    )
    model = _model(
        [helper.make_node("Scan", ["h0", "x"], ["h", "all"], body=body, num_scan_inputs=1)],
        [_info("h0", F, list(state)), _info("x", F, [steps, *state])],
        [_info("h", F, list(state)), _info("all", F, [steps, *state])],
        [_weights(rng, "W", (256, 256), 0.06), _weights(rng, "U", (256, 256), 0.06)],
    )
    h0 = rng.standard_normal(state).astype(np.float32)
    x = rng.standard_normal((steps, *state)).astype(np.float32)
    return model, [(f"T={steps}", {"h0": h0, "x": x})]


def counted(rng: np.random.Generator):
    steps, state = 100, (4, 256)
    body = _stacking_body(state)
    trips = numpy_helper.from_array(np.array(steps, np.int64), "M")
    model = _model(
        [helper.make_node("Loop", ["M", "", "x"], ["h", "all"], body=body)],
        [_info("x", F, list(state))],
        [_info("h", F, list(state)), _info("all", F, [steps, *state])],
        [_weights(rng, "W", (256, 256), 0.06), trips],
    )
    x = rng.standard_normal(state).astype(np.float32)
    return model, [(f"M={steps}", {"x": x})]


def growing(rng: np.random.Generator):
    width = 256
    body = helper.make_graph(
        [
            helper.make_node("Slice", ["y_in", "last", "end"], ["row"]),
            helper.make_node("MatMul", ["row", "W"], ["p"]),
            helper.make_node("Tanh", ["p"], ["next"]),
            helper.make_node("Concat", ["y_in", "next"], ["y_out"], axis=0),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [_info("i", I64, []), _info("cond_in", B, []), _info("y_in", F, [None, width])],
        [_info("cond_out", B, []), _info("y_out", F, [None, width])],
    )
    model = _model(
        [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)],
        [_info("x", F, [1, width]), _info("M", I64, [])],
        [_info("y", F, [None, width])],
        [
            _weights(rng, "W", (width, width), 0.06),
            numpy_helper.from_array(np.array([-1], np.int64), "last"),
            numpy_helper.from_array(np.array([2**40], np.int64), "end"),
        ],
    )
    x = rng.standard_normal((1, width)).astype(np.float32)
    return model, [(f"M={m}", {"x": x, "M": np.array(m, np.int64)}) for m in (20,)]


CASES: dict[str, Callable] = {
    "recurrence": recurrence,
    "while": while_loop,
    "branches": branches,
    "scan": scan,
    "counted": counted,
    "growing": growing,
    "host": host_loop,
    "stopping": stopping,
}


def _median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    import onnxruntime

    import strato

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES), action="append")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--unroll-up-to", type=int, metavar="N",
        help="unroll Scans and Loops of known length up to N nodes (default: the importer's)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.unroll_up_to is not None:
        from strato.frontends.onnx import convert_control

        convert_control.UNROLLED_NODES = args.unroll_up_to
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for name in args.only or list(CASES):
        model, feeds = CASES[name](np.random.default_rng(0))
        start = time.perf_counter()
        compiled = strato.compile(model, threads=args.threads, cache=False)
        seconds = time.perf_counter() - start
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        kind = type(compiled).__name__
        print(f"{name}: {kind}, compiled in {seconds:.1f} s")
        for label, feed in feeds:
            ours = compiled(*feed.values())
            theirs = session.run(None, feed)
            error = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs, strict=True))
            strato_ms, ort_ms = [], []
            for _ in range(3):  # in turns
                strato_ms.append(_median_ms(lambda f=feed, c=compiled: c(*f.values()), args.repeat))
                ort_ms.append(_median_ms(lambda f=feed, s=session: s.run(None, f), args.repeat))
            s, o = min(strato_ms), min(ort_ms)
            print(
                f"  {label:14s} max diff {error:.1e} | strato {s:8.3f} ms | onnxruntime "
                f"{o:8.3f} ms | ratio {s / o:.2f}x"
            )


if __name__ == "__main__":
    main()
