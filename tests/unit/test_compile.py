"""`strato.compile` end to end on the LLVM target, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato import zoo
from strato.diagnostics import ModelImportError, StratoError
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.signature import InputMismatchError
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")


def small_mlp(batch: int = 2, seed: int = 0) -> onnx.ModelProto:
    """x[batch, 16] -> Gemm(transB) -> Relu -> MatMul + Add -> Relu -> Gemm -> [batch, 5]."""
    rng = np.random.default_rng(seed)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / shape[-1])).astype(np.float32)

    initializers = {
        "w1": weight(32, 16),
        "b1": rng.standard_normal(32).astype(np.float32) * 0.1,
        "w2": weight(24, 32).T.copy(),
        "b2": rng.standard_normal(24).astype(np.float32) * 0.1,
        "w3": weight(5, 24),
        "b3": rng.standard_normal(5).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], transB=1, name="fc1"),
        helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="fc2"),
        helper.make_node("Add", ["m2", "b2"], ["h2"], name="bias2"),
        helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
        helper.make_node("Gemm", ["r2", "w3", "b3"], ["y"], transB=1, alpha=0.5, name="fc3"),
    ]
    graph = helper.make_graph(
        nodes,
        "small_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def run_onnxruntime(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs, strict=True)))


def assert_close(actual: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype
        # rtol 1e-4, with an absolute floor relative to the output's scale so that
        # entries near zero are not judged by their own tiny magnitude.
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6 * max(1.0, float(np.abs(e).max())))


def test_small_mlp_matches_onnxruntime():
    model = small_mlp()
    compiled = strato.compile(model)
    assert isinstance(compiled, CompiledModel)
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    assert_close(compiled(x), run_onnxruntime(model, [x]))
    # A second call with other inputs reuses the compiled code.
    x2 = np.random.default_rng(2).standard_normal((2, 16)).astype(np.float32)
    assert_close(compiled(x2), run_onnxruntime(model, [x2]))


def test_compile_from_file(tmp_path):
    model = small_mlp(batch=3)
    path = tmp_path / "small_mlp.onnx"
    onnx.save(model, path)
    compiled = strato.compile(str(path), target="llvm")
    x = np.random.default_rng(3).standard_normal((3, 16)).astype(np.float32)
    assert_close(compiled(x), run_onnxruntime(model, [x]))


def test_builtin_mlp_matches_onnxruntime():
    model = zoo.build_model("mlp", batch=1, seed=0)
    compiled = strato.compile(model)
    assert compiled.input_names == ["input"] and compiled.output_names == ["logits"]
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    (logits,) = compiled(x)
    assert logits.shape == (1, 10)
    assert_close([logits], run_onnxruntime(model, [x]))


def test_inputs_and_outputs_keep_onnx_order():
    """Two inputs and two outputs: arguments and results follow the ONNX order."""
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["b", "a"], ["p"]),
            helper.make_node("Relu", ["p"], ["r"]),
            helper.make_node("Add", ["a", "r"], ["s"]),
        ],
        "two_by_two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [4]),
        ],
        [
            helper.make_tensor_value_info("s", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [3, 4]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = strato.compile(model)
    assert compiled.input_names == ["a", "b"] and compiled.output_names == ["s", "r"]
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    assert_close(compiled(a, b), run_onnxruntime(model, [a, b]))


def test_llvm_ir_text_and_save(tmp_path):
    compiled = strato.compile(small_mlp())
    assert "define" in compiled.llvm_ir
    path = tmp_path / "model.ll"
    compiled.save_llvm_ir(path)
    assert path.read_text() == compiled.llvm_ir


@pytest.fixture(scope="module")
def compiled_small_mlp() -> CompiledModel:
    return strato.compile(small_mlp(batch=2))


def test_wrong_input_count(compiled_small_mlp):
    with pytest.raises(InputMismatchError, match=r"takes 1 input\(s\).*got 2"):
        x = np.zeros((2, 16), np.float32)
        compiled_small_mlp(x, x)


def test_wrong_input_shape(compiled_small_mlp):
    with pytest.raises(InputMismatchError, match=r"'x'.*shape is \[3, 16\], expected \[2, 16\]"):
        compiled_small_mlp(np.zeros((3, 16), np.float32))


def test_wrong_input_dtype(compiled_small_mlp):
    with pytest.raises(InputMismatchError, match="dtype is float64, expected float32"):
        compiled_small_mlp(np.zeros((2, 16)))


def test_non_contiguous_input_is_accepted(compiled_small_mlp):
    x = np.random.default_rng(5).standard_normal((16, 2)).astype(np.float32).T
    assert not x.flags.c_contiguous
    expected = compiled_small_mlp(np.ascontiguousarray(x))
    np.testing.assert_array_equal(compiled_small_mlp(x)[0], expected[0])


def test_unknown_target():
    with pytest.raises(StratoError, match="unknown target 'tpu'"):
        strato.compile(small_mlp(), target="tpu")


def test_import_errors_surface_from_compile():
    model = small_mlp()
    model.graph.node[1].op_type = "NotAnOnnxOperator"
    with pytest.raises(ModelImportError, match=r"node 'relu1' \(NotAnOnnxOperator\)"):
        strato.compile(model)


# -- integer division never traps: defined results, as numpy's ---------------------------


def _binary_model(op_type: str, dtype: np.dtype, divisor: np.ndarray | None = None, **attrs) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = [helper.make_tensor_value_info("a", elem, [6])]
    initializers = []
    if divisor is None:
        inputs.append(helper.make_tensor_value_info("b", elem, [6]))
    else:
        initializers.append(numpy_helper.from_array(divisor.astype(dtype), "b"))
    graph = helper.make_graph(
        [helper.make_node(op_type, ["a", "b"], ["y"], **attrs)],
        "division",
        inputs,
        [helper.make_tensor_value_info("y", elem, [6])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_division_by_zero_and_overflow_are_defined(dtype):
    """x / 0 = 0, x % 0 = 0, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0 (numpy's values;
    onnxruntime raises instead, C traps with SIGFPE)."""
    info = np.iinfo(dtype)
    signed = info.min < 0
    a = np.array([7, -7 if signed else 9, info.min, info.min, 5, info.max], dtype)
    b = np.array([0, 2, -1 if signed else 3, 0, -3 if signed else 3, 0], dtype)

    def wrap(value: int) -> int:
        return (value - info.min) % (1 << info.bits) + info.min

    def truncated(x: int, y: int) -> tuple[int, int]:
        if y == 0:
            return 0, 0
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return wrap(q), x - q * y

    pairs = [truncated(int(x), int(y)) for x, y in zip(a, b)]
    quotient = np.array([q for q, _ in pairs], dtype)
    remainder = np.array([r for _, r in pairs], dtype)
    div = strato.compile(_binary_model("Div", dtype))(a, b)[0]
    np.testing.assert_array_equal(div, quotient)
    mod = strato.compile(_binary_model("Mod", dtype, fmod=1))(a, b)[0]
    np.testing.assert_array_equal(mod, remainder)
    if signed:
        assert div[2] == info.min and mod[2] == 0


def test_division_by_a_zero_initializer_is_zero():
    a = np.array([1, -2, 3, 0, 2**31 - 1, -(2**31)], np.int32)
    for divisor in (np.zeros(6), np.array([0, 1, 0, 2, 0, -1])):
        model = strato.compile(_binary_model("Div", np.int32, divisor=divisor))
        expected = np.where(divisor == 0, 0, np.trunc(a / np.where(divisor == 0, 1, divisor)))
        np.testing.assert_array_equal(model(a)[0], expected.astype(np.int64).astype(np.int32))


def test_compile_takes_a_zoo_name_as_strato_run_does():
    model = strato.compile("mlp")
    assert model.entry_symbol == "mlp_run"
    assert model.inputs[0].shape == (1, 784)
    expected = run_onnxruntime(zoo.build_model("mlp"), [np.ones((1, 784), np.float32)])
    assert_close(model(np.ones((1, 784), np.float32)), expected)
    with pytest.raises(StratoError, match="unknown model 'mlp2': not a file and not a zoo model"):
        strato.compile("mlp2")
    with pytest.raises(StratoError, match="no such file"):
        strato.compile("missing/model.onnx")
