"""onnxruntime's quantized com.microsoft operators (QOperator models): every integer output
equal to onnxruntime's, bit for bit, and clear diagnostics for what is not imported."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import StratoError
from strato.testing.int8_reference import onnxruntime_is_exact
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

F32 = np.float32


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's kernels as they are: graph optimizations off, so that no fusion
    stands in for the operators under test."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


class _Graph:
    """A model of com.microsoft nodes on 8-bit inputs, with known scales and zero points."""

    def __init__(self, dtype: type):
        self.dtype = dtype
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: dict[str, np.ndarray] = {}
        self.initializers: list[onnx.TensorProto] = []
        self.outputs: list[str] = []

    def input(self, name: str, value: np.ndarray) -> str:
        self.inputs[name] = value
        return name

    def constant(self, name: str, value) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def quant(self, name: str, scale: float, zero: int) -> list[str]:
        """The scale and zero point of `name`, as initializers."""
        return [
            self.constant(f"{name}_scale", F32(scale)),
            self.constant(f"{name}_zero", self.dtype(zero)),
        ]

    def node(self, op_type: str, inputs: list[str], output: str, **attributes) -> None:
        self.nodes.append(
            helper.make_node(op_type, inputs, [output], domain="com.microsoft", **attributes)
        )
        self.outputs.append(output)

    def model(self) -> onnx.ModelProto:
        untyped = helper.make_model(
            helper.make_graph(
                self.nodes,
                "contrib",
                [
                    helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                    for n, v in self.inputs.items()
                ],
                [helper.make_empty_tensor_value_info(o) for o in self.outputs],
                self.initializers,
            ),
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        )
        # the outputs' types and shapes, from onnxruntime (ONNX's shape inference does not
        # know these operators)
        values = _reference(untyped, self.inputs)
        del untyped.graph.output[:]
        untyped.graph.output.extend(
            helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for o, v in zip(self.outputs, values)
        )
        return untyped


def _every_pair(dtype) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1).astype(dtype)
    return np.repeat(values, 256).reshape(256, 256), np.tile(values, 256).reshape(256, 256)


# Scales that put many results exactly half-way between two steps, and ordinary ones
# (where a fixed part computed without onnxruntime's fused multiply-add differs).
SCALE_SETS = {
    "ties": {"a": 0.5, "b": 0.25, "c": 1.0, "x": 0.0625, "y": 0.25, "zero": (3, -5, 1)},
    "ordinary": {"a": 0.0132, "b": 0.0117, "c": 0.0092, "x": 0.0417, "y": 0.0291, "zero": (-40, 46, 4)},
}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["uint8", "int8"])
@pytest.mark.parametrize("scales", SCALE_SETS, ids=list(SCALE_SETS))
def test_every_operator_matches_onnxruntime_exactly(dtype, scales):
    s = SCALE_SETS[scales]
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    za, zb, zc = (int(np.clip(z, info.min, info.max)) for z in s["zero"])
    g = _Graph(dtype)
    a, b = _every_pair(dtype)
    g.input("a", a)
    g.input("b", b)
    qa, qb, qc = g.quant("a", s["a"], za), g.quant("b", s["b"], zb), g.quant("c", s["c"], zc)
    g.node("QLinearAdd", ["a", *qa, "b", *qb, *qc], "add")
    g.node("QLinearMul", ["a", *qa, "b", *qb, *qc], "mul")
    row = g.input("row", np.arange(info.min, info.max + 1).astype(dtype).reshape(16, 16))
    qx, qy = g.quant("x", s["x"], zb), g.quant("y", s["y"], zc)
    g.node("QLinearLeakyRelu", [row, *qx, *qy], "leaky", alpha=0.1)
    g.node("QLinearSigmoid", [row, *qx, g.constant("sig_scale", F32(1 / 256)), g.constant("sig_zero", dtype(info.min))], "sigmoid")
    image = g.input("image", rng.integers(info.min, info.max + 1, (2, 8, 7, 7), dtype=dtype))
    g.node("QLinearGlobalAveragePool", [image, *qx, *qy], "pool")
    g.node("QLinearAveragePool", [image, *qx, *qy], "avg", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node(
        "QLinearAveragePool", [image, *qx, *qy], "avg_ceil",
        kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, count_include_pad=1,
    )  # fmt: skip
    g.node("QLinearConcat", [*qy, row, *qx, row, *qy, row, *qa], "concat", axis=0)
    scores = g.input("scores", rng.integers(info.min, info.max + 1, (2, 3, 37), dtype=dtype))
    probs = [g.constant("p_scale", F32(1 / 256)), g.constant("p_zero", dtype(info.min))]
    g.node("QLinearSoftmax", [scores, *qx, *probs], "softmax", axis=-1, opset=13)
    g.node("QLinearSoftmax", [scores, *qx, *probs], "softmax12", axis=1, opset=12)
    g.node("QLinearSoftmax", [scores, *qx, *probs], "softmax_mid", axis=1, opset=13)
    weights = rng.integers(-127, 128, (24, 37)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 24).astype(np.int32)
    gemm = [
        g.input("rows", rng.integers(info.min, info.max + 1, (5, 37), dtype=dtype)),
        *qx,
        g.constant("w", weights),
        g.constant("w_scale", rng.uniform(0.001, 0.01, 24).astype(F32)),
        g.constant("w_zero", np.zeros(24, np.int8)),
        g.constant("bias", bias),
    ]
    g.node("QGemm", [*gemm, *qy], "gemm", transB=1)
    g.node("QGemm", gemm, "gemm_float", transB=1, alpha=0.75)
    model = g.model()
    expected = _reference(model, g.inputs)
    actual = strato.compile(model, cache=False)(*g.inputs.values())
    for name, want, got in zip(g.outputs, expected, actual, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if name.startswith("gemm") and dtype == np.uint8 and not onnxruntime_is_exact():
            continue  # onnxruntime's u8 x s8 products saturate here (int8_reference)
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_a_qoperator_model_of_the_quantization_tool_matches_onnxruntime(tmp_path):
    """The zoo's MLP quantized statically by onnxruntime's tool in the QOperator format
    (QGemm, per-channel weights): its outputs equal onnxruntime's."""
    quantization = optional_module("onnxruntime.quantization")
    from strato import zoo

    model = zoo.build_model("mlp", seed=0)
    source, target = tmp_path / "mlp.onnx", tmp_path / "mlp.qop.onnx"
    onnx.save(model, source)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)
    samples = iter([{model.graph.input[0].name: rng.standard_normal(shape).astype(F32)} for _ in range(4)])

    class Reader(quantization.CalibrationDataReader):
        def get_next(self):
            return next(samples, None)

    quantization.quantize_static(
        str(source), str(target), Reader(),
        quant_format=quantization.QuantFormat.QOperator, per_channel=True,
    )  # fmt: skip
    quantized = onnx.load(target)
    assert any(n.domain == "com.microsoft" for n in quantized.graph.node)
    x = rng.standard_normal(shape).astype(F32)
    (expected,) = _reference(quantized, {model.graph.input[0].name: x})
    (actual,) = strato.compile(quantized, cache=False)(x)
    np.testing.assert_array_equal(actual, expected)


def _one_node(node: onnx.NodeProto, inputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.UINT8, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], TensorProto.UINT8, [2, 3])],
        list(initializers),
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(node.domain, 1)]
    )


def test_an_unsupported_contrib_operator_is_named_with_what_is_imported():
    node = helper.make_node("QLinearWhere", ["x"], ["y"], domain="com.microsoft")
    with pytest.raises(StratoError, match=r"com\.microsoft\.QLinearWhere is not supported.*QLinearAdd"):
        strato.compile(_one_node(node, {"x": [2, 3]}))


def test_another_domain_is_refused_naming_it():
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="org.example")
    with pytest.raises(StratoError, match=r"domain 'org\.example' is not supported"):
        strato.compile(_one_node(node, {"x": [2, 3]}))


def test_a_scale_known_only_at_run_time_is_a_diagnostic():
    node = helper.make_node(
        "QLinearSigmoid", ["x", "scale", "zero", "scale", "zero"], ["y"], domain="com.microsoft"
    )
    model = _one_node(node, {"x": [2, 3]}, [numpy_helper.from_array(np.uint8(0), "zero")])
    model.graph.input.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, []))
    with pytest.raises(StratoError, match=r"QLinearSigmoid.*X_scale must be known at import time"):
        strato.compile(model)


def test_a_constant_quantized_to_a_scalar_imports():
    """QuantizeLinear of a 0-d constant (the quantization tool writes one for a scalar
    divisor) is folded at import to a 0-d array, never a numpy scalar."""
    nodes = [
        helper.make_node("QuantizeLinear", ["c", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
        helper.make_node("Add", ["x", "d"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [
            numpy_helper.from_array(np.array(2.7, F32), "c"),
            numpy_helper.from_array(np.array(0.5, F32), "s"),
            numpy_helper.from_array(np.array(3, np.uint8), "z"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.array([1.0, -2.0], F32)
    (actual,) = strato.compile(model, cache=False)(x)
    np.testing.assert_array_equal(actual, x + F32(2.5))
