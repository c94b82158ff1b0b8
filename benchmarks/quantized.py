"""A CNN quantized to int8 by onnxruntime's quantization tool: strato int8 vs strato fp32
vs onnxruntime int8 (and fp32) latency, same process.

    python benchmarks/quantized.py                 # 64 x 64 input, width 32
    python benchmarks/quantized.py --size 112 --width 64 --format qoperator
    python benchmarks/quantized.py --model resnet18 --size 64 --width 32
    python benchmarks/quantized.py --model bert --size 64 --width 256

`--model resnet18` is strato.zoo's ResNet-18 (`--size` image, `--width` first-stage
channels, 10 classes) with its batch norms folded by onnxruntime's pre-processing, then
quantized statically like the CNN; `--model bert` is strato.zoo's transformer encoder
block (`--size` positions, `--width` hidden units, 4 heads, FFN 4 x width) quantized
dynamically (`quantize_dynamic`: int8 weights, DynamicQuantizeLinear + MatMulInteger).

The float model (seeded weights, built in code) is quantized statically with seeded
random calibration data: QDQ format with per-channel weights by default, or the
QOperator format (QLinearConv; pooling and Gemm stay float). Both sides run on one thread; the figure is the best
mean time of a call over several rounds, after the outputs were compared (the int8
outputs of strato and onnxruntime are printed as their largest difference). strato runs
the quantized convolutions and dense layers in integers: graph-fold-qdq turns each QDQ
group into graph.qconv / graph.qdense + graph.requantize (QLinearConv, MatMulInteger
and the like import as those ops), which the CPU templates tensorize with the int8 dot
product cpu.dot_i8 (vpdpbusd where the CPU has VNNI); what does not fold (pooling,
residual adds, DynamicQuantizeLinear) keeps the exact float composition.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime import quantization

import strato
from strato.zoo.onnx_graph import GraphBuilder, value_info


def cnn(size: int, width: int, seed: int = 0) -> onnx.ModelProto:
    g = GraphBuilder(seed=seed)
    x = g.conv("input", "conv1", 3, width, kernel=3, stride=2)
    x = g.node("Relu", [x], "relu1")
    x = g.conv(x, "conv2", width, width, kernel=3, stride=1)
    x = g.node("Relu", [x], "relu2")
    x = g.conv(x, "conv3", width, 2 * width, kernel=3, stride=2)
    x = g.node("Relu", [x], "relu3")
    x = g.node("GlobalAveragePool", [x], "pool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    g.gemm(x, "fc", 2 * width, 10, gain=1.0, output="output")
    return g.finish(
        "cnn",
        [value_info("input", [1, 3, size, size])],
        [value_info("output", [1, 10])],
    )


def quantized(
    model: onnx.ModelProto, shape: list[int], qdq: bool, seed: int = 1, *, prepare: bool = False
) -> onnx.ModelProto:
    """`model` quantized statically with seeded random calibration inputs of `shape`
    (after onnxruntime's pre-processing, which folds batch norms, when `prepare`)."""
    rng = np.random.default_rng(seed)
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]
    name = model.graph.input[0].name

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self._samples = iter(samples)

        def get_next(self):
            sample = next(self._samples, None)
            return None if sample is None else {name: sample}

    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, source)
        if prepare:
            prepared = Path(tmp) / "prepared.onnx"
            quantization.quant_pre_process(str(source), str(prepared))
            source = prepared
        quantization.quantize_static(
            str(source),
            str(target),
            Reader(),
            quant_format=quantization.QuantFormat.QDQ
            if qdq
            else quantization.QuantFormat.QOperator,
            per_channel=qdq,
            activation_type=quantization.QuantType.QUInt8,
            weight_type=quantization.QuantType.QInt8,
            # QOperator pooling and Gemm are com.microsoft operators (QLinearGlobalAveragePool,
            # QGemm), which strato does not import
            op_types_to_quantize=None if qdq else ["Conv"],
        )
        return onnx.load(target)


def dynamically_quantized(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with int8 weights and activations quantized at run time (MatMulInteger)."""
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, source)
        quantization.quantize_dynamic(
            str(source), str(target), weight_type=quantization.QuantType.QInt8
        )
        return onnx.load(target)


def models(args) -> tuple[onnx.ModelProto, onnx.ModelProto, list[int]]:
    """(float model, int8 model, input shape) of the command line's choice."""
    if args.model == "bert":
        from strato.zoo import build_model

        shape = [1, args.size, args.width]
        float_model = build_model(
            "transformer", seq_len=args.size, hidden=args.width, heads=4, ffn=4 * args.width
        )
        return float_model, dynamically_quantized(float_model), shape
    shape = [1, 3, args.size, args.size]
    if args.model == "resnet18":
        from strato.zoo import build_model

        float_model = build_model("resnet18", image_size=args.size, width=args.width, num_classes=10)
        return float_model, quantized(float_model, shape, args.format == "qdq", prepare=True), shape
    float_model = cnn(args.size, args.width)
    return float_model, quantized(float_model, shape, args.format == "qdq"), shape


def per_call_ms(call, calls: int, rounds: int = 5) -> float:
    call()
    means = []
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(calls):
            call()
        means.append((time.thread_time() - start) / calls * 1e3)
    return min(means)


def onnxruntime_session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="input height and width (bert: positions)")
    parser.add_argument(
        "--width", type=int, default=32, help="channels of the first conv (bert: hidden units)"
    )
    parser.add_argument("--format", choices=["qdq", "qoperator"], default="qdq")
    parser.add_argument(
        "--model", choices=["cnn", "resnet18", "bert"], default="cnn",
        help="the small CNN (default), strato.zoo's ResNet-18, or its transformer encoder "
        "block quantized dynamically",
    )
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()

    float_model, int8_model, shape = models(args)
    name = float_model.graph.input[0].name
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)

    start = time.perf_counter()
    strato_fp32 = strato.compile(float_model, threads=1)
    fp32_compile = time.perf_counter() - start
    start = time.perf_counter()
    strato_int8 = strato.compile(int8_model, threads=1)
    int8_compile = time.perf_counter() - start
    ort_fp32, ort_int8 = (
        onnxruntime_session(float_model),
        onnxruntime_session(int8_model),
    )

    expected = ort_int8.run(None, {name: x})[0]
    actual = strato_int8(x)
    actual = np.asarray(actual[0] if isinstance(actual, list | tuple) else actual)
    print(
        f"int8 outputs: largest difference {np.abs(actual - expected).max():.3g} "
        f"(output range {np.abs(expected).max():.3g})"
    )
    rows = [
        ("strato int8", lambda: strato_int8(x), int8_compile),
        ("strato fp32", lambda: strato_fp32(x), fp32_compile),
        ("onnxruntime int8", lambda: ort_int8.run(None, {name: x}), None),
        ("onnxruntime fp32", lambda: ort_fp32.run(None, {name: x}), None),
    ]
    print(f"{'':18} {'ms/call':>9} {'compile s':>10}")
    for label, call, compile_seconds in rows:
        compiled = "" if compile_seconds is None else f"{compile_seconds:10.2f}"
        print(f"{label:18} {per_call_ms(call, args.calls):9.3f} {compiled}")


if __name__ == "__main__":
    main()
