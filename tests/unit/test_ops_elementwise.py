"""Element-wise operators: ONNX import against onnxruntime through the graph
interpreter, the strategies through the te and loop interpreters and the LLVM JIT,
import-time folding, Clip's bound forms, the variadic Max/Min/Sum chains, integer
tensors at the graph and te levels, verifier errors and pattern kinds."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import strato
from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

OPSET = 17


def one_node_model(
    op_type: str,
    inputs: dict[str, np.ndarray],
    initializers: dict[str, np.ndarray] | None = None,
    *,
    node_inputs: list[str] | None = None,
    opset: int = OPSET,
    out_shape: tuple[int, ...] | None = None,
    **attributes,
) -> onnx.ModelProto:
    """A model of one `op_type` node reading `inputs` (graph inputs) and
    `initializers`, in that order unless `node_inputs` says otherwise; its output has
    the broadcast shape of the inputs."""
    initializers = initializers or {}
    names = node_inputs if node_inputs is not None else [*inputs, *initializers]
    if out_shape is None:
        out_shape = np.broadcast_shapes(*(a.shape for a in {**inputs, **initializers}.values()))
    node = helper.make_node(op_type, names, ["y"], name="node", **attributes)
    onnx_graph = helper.make_graph(
        [node],
        "one_node",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def assert_close(actual, expected, rtol: float = 1e-5, atol: float = 1e-6, what: str = "") -> None:
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype, what
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def normal(*shape: int, seed: int = 0, scale: float = 1.5) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def positive(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.1, 4.0, shape).astype(np.float32)


def unit_interval(*shape: int, seed: int = 0) -> np.ndarray:
    """Inside (-1, 1), where asin, acos and atanh are defined."""
    return np.random.default_rng(seed).uniform(-0.99, 0.99, shape).astype(np.float32)


def at_least_one(*shape: int, seed: int = 0) -> np.ndarray:
    """From 1 up, where acosh is defined."""
    return np.random.default_rng(seed).uniform(1.0, 6.0, shape).astype(np.float32)


def halves(*shape: int, seed: int = 0) -> np.ndarray:
    """Values at and between halves: Round's ties go to even."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-12, 12, shape) / 2 + rng.choice([0.0, 0.25], shape)).astype(np.float32)


def with_zeros(*shape: int, seed: int = 0) -> np.ndarray:
    x = normal(*shape, seed=seed)
    x.reshape(-1)[::3] = 0.0
    return x


def wide(*shape: int, seed: int = 0) -> np.ndarray:
    """Across the bends of the saturating activations (+/-3 for HardSwish) and far out
    (softplus of 100 without overflow)."""
    x = normal(*shape, seed=seed, scale=4.0)
    x.reshape(-1)[:4] = [-100.0, 100.0, -3.0, 3.0]
    return x


# op type, attributes, opset, input generator: each against onnxruntime
UNARY_CASES = {
    "relu": ("Relu", {}, OPSET, normal),
    "leaky_relu": ("LeakyRelu", {"alpha": 0.2}, OPSET, normal),
    "leaky_relu_default": ("LeakyRelu", {}, OPSET, normal),
    "sigmoid": ("Sigmoid", {}, OPSET, normal),
    "tanh": ("Tanh", {}, OPSET, normal),
    "erf": ("Erf", {}, OPSET, normal),
    "gelu": ("Gelu", {}, 20, normal),
    "gelu_tanh": ("Gelu", {"approximate": "tanh"}, 20, normal),
    "sqrt": ("Sqrt", {}, OPSET, positive),
    "exp": ("Exp", {}, OPSET, normal),
    "log": ("Log", {}, OPSET, positive),
    "neg": ("Neg", {}, OPSET, normal),
    "abs": ("Abs", {}, OPSET, normal),
    "clip_attributes": ("Clip", {"min": -0.5, "max": 1.0}, 10, normal),
    "floor": ("Floor", {}, OPSET, normal),
    "ceil": ("Ceil", {}, OPSET, normal),
    "round": ("Round", {}, OPSET, halves),
    "sign": ("Sign", {}, OPSET, with_zeros),
    "sin": ("Sin", {}, OPSET, normal),
    "cos": ("Cos", {}, OPSET, normal),
    "tan": ("Tan", {}, OPSET, normal),
    "asin": ("Asin", {}, OPSET, unit_interval),
    "acos": ("Acos", {}, OPSET, unit_interval),
    "atan": ("Atan", {}, OPSET, normal),
    "sinh": ("Sinh", {}, OPSET, normal),
    "cosh": ("Cosh", {}, OPSET, normal),
    "asinh": ("Asinh", {}, OPSET, normal),
    "acosh": ("Acosh", {}, OPSET, at_least_one),
    "atanh": ("Atanh", {}, OPSET, unit_interval),
    "reciprocal": ("Reciprocal", {}, OPSET, positive),
    "softplus": ("Softplus", {}, OPSET, wide),
    "softsign": ("Softsign", {}, OPSET, normal),
    "mish": ("Mish", {}, 18, wide),
    "hard_swish": ("HardSwish", {}, OPSET, wide),
    "hard_sigmoid": ("HardSigmoid", {}, OPSET, wide),
    "hard_sigmoid_attributes": ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, OPSET, normal),
    "elu": ("Elu", {}, OPSET, normal),
    "elu_alpha": ("Elu", {"alpha": 0.5}, OPSET, normal),
    "selu": ("Selu", {}, OPSET, normal),
    "selu_attributes": ("Selu", {"alpha": 2.0, "gamma": 3.0}, OPSET, normal),
    "celu": ("Celu", {}, OPSET, normal),
    "celu_alpha": ("Celu", {"alpha": 2.5}, OPSET, normal),
    "thresholded_relu": ("ThresholdedRelu", {}, OPSET, normal),
    "thresholded_relu_alpha": ("ThresholdedRelu", {"alpha": -0.5}, OPSET, normal),
}


def unary_model(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    op_type, attributes, opset, make = UNARY_CASES[name]
    inputs = {"x": make(3, 4, 5)}
    return one_node_model(op_type, inputs, opset=opset, **attributes), inputs


@pytest.mark.parametrize("name", UNARY_CASES)
def test_unary_graph_interpreter_matches_onnxruntime(name):
    model, inputs = unary_model(name)
    actual = run_graph(import_onnx(model).module, list(inputs.values()))
    assert_close(actual, onnxruntime_outputs(model, inputs))


def three_inputs(*shapes: tuple[int, ...]) -> dict[str, np.ndarray]:
    return {name: normal(*shape, seed=n) for n, (name, shape) in enumerate(zip("abc", shapes))}


BINARY_CASES = {
    "add": ("Add", lambda: {"a": normal(2, 3, 4), "b": normal(3, 1, seed=1)}),
    "sub": ("Sub", lambda: {"a": normal(2, 3, 4), "b": normal(4, seed=1)}),
    "mul": ("Mul", lambda: {"a": normal(1, 3, 1), "b": normal(2, 1, 4, seed=1)}),
    "div": ("Div", lambda: {"a": normal(2, 3, 4), "b": positive(2, 1, 4, seed=1)}),
    "pow": ("Pow", lambda: {"a": positive(2, 3, 4), "b": normal(4, seed=1)}),
    "pow_scalar": ("Pow", lambda: {"a": normal(2, 3), "b": np.array(2.0, np.float32)}),
    "max": ("Max", lambda: {"a": normal(2, 3, 4), "b": normal(3, 4, seed=1)}),
    "min": ("Min", lambda: {"a": normal(2, 3, 4), "b": normal(3, 4, seed=1)}),
    "max_three": ("Max", lambda: three_inputs((3, 4), (1, 4), (3, 1))),
    "min_three": ("Min", lambda: three_inputs((3, 4), (1, 4), (4,))),
    "sum_three": ("Sum", lambda: three_inputs((2, 1, 4), (3, 4), (4,))),
    "sum_one": ("Sum", lambda: {"a": normal(2, 3)}),
    "max_one": ("Max", lambda: {"a": normal(2, 3)}),
    "prelu": ("PRelu", lambda: {"a": normal(2, 3, 4), "b": normal(3, 1, seed=1)}),
    "prelu_scalar": ("PRelu", lambda: {"a": normal(2, 3), "b": np.array(0.25, np.float32)}),
}


def binary_model(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    op_type, make = BINARY_CASES[name]
    inputs = make()
    return one_node_model(op_type, inputs), inputs


@pytest.mark.parametrize("name", BINARY_CASES)
def test_binary_and_variadic_graph_interpreter_matches_onnxruntime(name):
    model, inputs = binary_model(name)
    actual = run_graph(import_onnx(model).module, list(inputs.values()))
    assert_close(actual, onnxruntime_outputs(model, inputs))


# -- the strategies: te, loops, LLVM ---------------------------------------------------


def lowered_results(model: onnx.ModelProto, inputs: list[np.ndarray]) -> dict[str, list]:
    """The outputs of the te interpreter, the loop interpreter and the LLVM JIT."""
    module = import_onnx(model).module
    ctx = make_context()
    run_pipeline(ctx, module, "convert-graph-to-te")
    module.verify()
    results = {"te": run_te(module, inputs)}
    run_pipeline(ctx, module, "convert-te-to-loops")
    module.verify()
    results["loops"] = run_loops(module, inputs)
    results["llvm"] = strato.compile(model)(*inputs)
    return results


@pytest.mark.parametrize("name", UNARY_CASES)
def test_unary_strategies_match_onnxruntime(name):
    model, inputs = unary_model(name)
    expected = onnxruntime_outputs(model, inputs)
    for level, actual in lowered_results(model, list(inputs.values())).items():
        assert_close(actual, expected, what=level)


@pytest.mark.parametrize("name", ["sub", "div", "pow", "max_three", "min", "sum_three", "prelu"])
def test_binary_strategies_match_onnxruntime(name):
    model, inputs = binary_model(name)
    expected = onnxruntime_outputs(model, inputs)
    for level, actual in lowered_results(model, list(inputs.values())).items():
        assert_close(actual, expected, what=level)


def test_compiled_erf_is_accurate_to_float32():
    """erf through math.erf (inline arithmetic for f32): within 2 ulp of the exactly
    rounded value."""
    x = np.linspace(-6.0, 6.0, 4001, dtype=np.float32)
    model = one_node_model("Erf", {"x": x})
    (actual,) = strato.compile(model)(x)
    exact = np.array([math.erf(float(v)) for v in x], dtype=np.float64)
    rounded = exact.astype(np.float32)
    ulp = np.spacing(np.abs(rounded)).astype(np.float64)
    assert np.max(np.abs(actual.astype(np.float64) - exact) / ulp) <= 2.0


def test_compiled_sigmoid_saturates_without_nan():
    x = np.array([-200.0, -90.0, -20.0, 0.0, 20.0, 90.0, 200.0], np.float32)
    (actual,) = strato.compile(one_node_model("Sigmoid", {"x": x}))(x)
    assert not np.any(np.isnan(actual))
    # the exact values (onnxruntime flushes sigmoid(-20) = 2e-9 to zero)
    with np.errstate(over="ignore"):
        expected = (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-30)


def test_special_values_follow_onnxruntime():
    x = np.array([-1.0, 0.0, np.inf, -np.inf, np.nan], np.float32)
    unary = ["Sqrt", "Log", "Exp", "Tanh", "Relu", "Abs", "Neg", "LeakyRelu", "Floor", "Ceil"]
    unary += ["Round", "Sign", "Reciprocal", "Softplus", "Softsign", "HardSwish", "HardSigmoid"]
    unary += ["Elu", "Selu", "Celu", "ThresholdedRelu", "Mish"]
    for op_type in unary:
        model = one_node_model(op_type, {"x": x}, opset=18)
        expected = onnxruntime_outputs(model, {"x": x})[0]
        with np.errstate(all="ignore"):
            (actual,) = strato.compile(model)(x)
            (interpreted,) = run_graph(import_onnx(model).module, [x])
        # infinities and NaN exactly where onnxruntime has them, finite values to an ulp
        np.testing.assert_allclose(actual, expected, rtol=2e-7, atol=0, err_msg=op_type)
        np.testing.assert_allclose(interpreted, expected, rtol=2e-7, atol=0, err_msg=op_type)


def test_inverse_trigonometry_outside_its_domain_is_nan_like_onnxruntime():
    x = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan], np.float32)
    for op_type in ["Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"]:
        model = one_node_model(op_type, {"x": x})
        expected = onnxruntime_outputs(model, {"x": x})[0]
        with np.errstate(all="ignore"):
            (actual,) = strato.compile(model)(x)
            (interpreted,) = run_graph(import_onnx(model).module, [x])
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=0, err_msg=op_type)
        np.testing.assert_allclose(interpreted, expected, rtol=1e-6, atol=0, err_msg=op_type)


def test_float16_hyperbolic_functions_compute_in_float32():
    x = np.array([-3.0, -0.5, 0.0, 0.25, 2.0], np.float16)
    for op_type, reference in (("Sinh", np.sinh), ("Asinh", np.arcsinh), ("Atan", np.arctan)):
        (actual,) = strato.compile(typed_model(op_type, {"x": x}))(x)
        expected = reference(x.astype(np.float32)).astype(np.float16)
        np.testing.assert_allclose(actual, expected, rtol=1e-3, err_msg=op_type)


def test_bfloat16_division_is_a_float_division():
    a = np.array([-3.0, 1.0, 7.0], ml_dtypes.bfloat16)
    b = np.array([2.0, 4.0, -2.0], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(graph.DivOp.compute(a, b), a / b)
    model = typed_model("Div", {"a": a, "b": b})
    (actual,) = run_graph(import_onnx(model).module, [a, b])
    assert actual.dtype == a.dtype and actual.tolist() == [-1.5, 0.25, -3.5]


def test_round_takes_halves_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 1e8 + 0.5], np.float32)
    (actual,) = strato.compile(one_node_model("Round", {"x": x}))(x)
    np.testing.assert_array_equal(actual, np.rint(x))
    np.testing.assert_array_equal(actual[:6], [0.0, 2.0, 2.0, -0.0, -2.0, -2.0])


def typed_model(op_type: str, inputs: dict[str, np.ndarray], opset: int = OPSET, **attributes):
    """A one-node model whose inputs and output have the inputs' element type."""
    elem = helper.np_dtype_to_tensor_dtype(next(iter(inputs.values())).dtype)
    shape = np.broadcast_shapes(*(a.shape for a in inputs.values()))
    node = helper.make_node(op_type, list(inputs), ["y"], **attributes)
    onnx_graph = helper.make_graph(
        [node],
        "typed",
        [helper.make_tensor_value_info(n, elem, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", elem, shape)],
    )
    return helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)])


INTEGER_MOD_INPUTS = {
    "a": np.array([[7, -7, 7, -7, 0, 5], [9, -9, 1, -1, 6, -6]], np.int32),
    "b": np.array([3, 3, -3, -3, 4, 0], np.int32),
}


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_mod_matches_onnxruntime(fmod, dtype):
    unsigned = np.dtype(dtype).kind == "u"
    a, b = ((np.abs(v) if unsigned else v).astype(dtype) for v in INTEGER_MOD_INPUTS.values())
    inputs = {"a": a, "b": b}
    model = typed_model("Mod", inputs, fmod=fmod)
    nonzero = b != 0  # a zero divisor is undefined in ONNX (strato gives 0)
    b_safe = np.where(nonzero, b, 1).astype(dtype)
    expected = onnxruntime_outputs(model, {"a": a, "b": b_safe})[0]
    expected = np.where(nonzero, expected, 0).astype(dtype)
    (compiled,) = strato.compile(model)(a, b)
    (interpreted,) = run_graph(import_onnx(model).module, [a, b])
    np.testing.assert_array_equal(compiled, expected)
    np.testing.assert_array_equal(interpreted, expected)


def test_float16_mod_never_truncates_f64_to_f16():
    """An f64 -> f16 truncation is a call of libgcc's __truncdfhf2, which the JIT finds
    only in a process that has loaded a libgcc_s exporting it (else it calls address 0:
    the SIGSEGV of the float16 Mod node tests). The remainder is exact in f16, so it
    rounds through f32, which F16C converts in one instruction."""
    from strato.targets.llvm.emit import emit_llvm_ir

    text = """
func.func @main(%a: tensor<6xf16>, %b: tensor<6xf16>) -> tensor<6xf16> {
  %r = graph.mod %a, %b {fmod} : (tensor<6xf16>, tensor<6xf16>) -> tensor<6xf16>
  func.return %r : tensor<6xf16>
}"""
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    run_pipeline(ctx, module, "convert-graph-to-te,convert-te-to-loops,convert-loops-to-llvm")
    ir = emit_llvm_ir(module)
    assert "fpext half" in ir  # the remainder is computed in f64
    assert not [line for line in ir.splitlines() if "fptrunc double" in line and "to half" in line]


def test_float_mod_is_fmod_or_floored_with_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([-4.3, 7.2, 5.0, 4.3, -7.2, 8.0, -3, 3, -1, 1, inf, 1, nan], np.float32)
    y = np.array([2.1, -3.4, 8.0, -2.1, 3.4, 5.0, inf, inf, -inf, -inf, 2, 0, 2], np.float32)
    for fmod, reference in ((1, np.fmod), (0, np.mod)):
        with np.errstate(all="ignore"):
            expected = reference(x, y)
        model = typed_model("Mod", {"a": x, "b": y}, opset=18, fmod=fmod)
        if fmod == 1:  # the reference is onnxruntime's result
            (peer,) = onnxruntime_outputs(model, {"a": x, "b": y})
            np.testing.assert_allclose(peer, expected, rtol=1e-6)
        model.opset_import[0].version = 28  # fmod=0 of floats is defined since opset 28
        (actual,) = strato.compile(model)(x, y)
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6, err_msg=str(fmod))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fmod_is_exact_when_the_quotient_is_large(dtype):
    # x - trunc(x / y) * y in the operands' own precision loses every digit once x / y
    # needs more bits than the significand holds
    rng = np.random.default_rng(7)
    span = 4 if dtype == np.float16 else 12
    x = (rng.standard_normal(512) * 10.0 ** rng.integers(-span // 2, span // 2, 512)).astype(dtype)
    y = (rng.standard_normal(512) * 10.0 ** rng.integers(-span // 2, span // 2, 512)).astype(dtype)
    x[:2], y[:2] = [-0.0, 3.0], [2.0, -0.0]
    with np.errstate(all="ignore"):
        expected = np.fmod(x, y)
    (actual,) = strato.compile(typed_model("Mod", {"a": x, "b": y}, fmod=1))(x, y)
    np.testing.assert_array_equal(actual, expected)


def test_integer_sign_and_prelu():
    x = np.array([[-5, 0, 3], [7, -1, 0]], np.int64)
    slope = np.array([2, -3, 4], np.int64)
    for model, inputs in (
        (typed_model("Sign", {"x": x}), [x]),
        (typed_model("PRelu", {"x": x, "s": slope}, opset=16), [x, slope]),
    ):
        expected = onnxruntime_outputs(model, dict(zip(["x", "s"], inputs)))[0]
        np.testing.assert_array_equal(strato.compile(model)(*inputs)[0], expected)


def test_prelu_slope_must_broadcast_to_the_input():
    model = one_node_model("PRelu", {"x": normal(3, 1), "s": normal(4, seed=1)}, out_shape=(3, 4))
    message = r"\(PRelu\): slope of shape \[4\] does not broadcast"
    with pytest.raises(ModelImportError, match=message):
        import_onnx(model)


def test_activations_of_constants_fold_at_import():
    x = normal(2, 3)
    node = helper.make_node("Selu", ["w"], ["t"], alpha=1.5, gamma=2.0)
    add = helper.make_node("Add", ["x", "t"], ["y"])
    onnx_graph = helper.make_graph(
        [node, add],
        "folded",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(x, "w")],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)])
    assert graph_ops(model) == ["graph.constant", "graph.add"]
    inputs = {"x": normal(2, 3, seed=3)}
    actual = run_graph(import_onnx(model).module, [inputs["x"]])
    assert_close(actual, onnxruntime_outputs(model, inputs))


def test_celu_alpha_zero_is_a_diagnostic():
    model = one_node_model("Celu", {"x": normal(3)}, alpha=0.0)
    with pytest.raises(ModelImportError, match=r"\(Celu\): attribute alpha=0 is not supported"):
        import_onnx(model)


# -- import: folding, Clip's bounds, variadic chains ------------------------------------


def graph_ops(model: onnx.ModelProto) -> list[str]:
    module = import_onnx(model).module
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def test_unary_of_an_initializer_is_folded_at_import():
    x = normal(2, 3)
    node = helper.make_node("Tanh", ["w"], ["t"])
    add = helper.make_node("Add", ["x", "t"], ["y"])
    onnx_graph = helper.make_graph(
        [node, add],
        "folded",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(x, "w")],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)])
    assert graph_ops(model) == ["graph.constant", "graph.add"]
    inputs = {"x": normal(2, 3, seed=3)}
    actual = run_graph(import_onnx(model).module, [inputs["x"]])
    assert_close(actual, onnxruntime_outputs(model, inputs))


def clip_op(model: onnx.ModelProto) -> graph.ClipOp:
    (op,) = [o for o in import_onnx(model).module.walk() if isinstance(o, graph.ClipOp)]
    return op


def test_clip_bounds_known_at_import_become_properties():
    x = normal(4, 5)
    bounds = {"lo": np.array(-0.25, np.float32), "hi": np.array(0.75, np.float32)}
    model = one_node_model("Clip", {"x": x}, bounds)
    assert clip_op(model).bounds == (-0.25, 0.75)
    assert_close(run_graph(import_onnx(model).module, [x]), onnxruntime_outputs(model, {"x": x}))


def test_clip_with_only_max_and_with_no_bounds():
    x = normal(4, 5)
    only_max = one_node_model(
        "Clip", {"x": x}, {"hi": np.array(0.5, np.float32)}, node_inputs=["x", "", "hi"]
    )
    assert clip_op(only_max).bounds == (None, 0.5)
    assert_close(
        run_graph(import_onnx(only_max).module, [x]), onnxruntime_outputs(only_max, {"x": x})
    )
    unbounded = one_node_model("Clip", {"x": x})
    assert graph_ops(unbounded) == []
    np.testing.assert_array_equal(run_graph(import_onnx(unbounded).module, [x])[0], x)


def test_clip_infinite_bound_clamps_nothing():
    x = normal(4, 5)
    model = one_node_model(
        "Clip", {"x": x}, {"lo": np.array(-np.inf, np.float32), "hi": np.array(1.0, np.float32)}
    )
    assert clip_op(model).bounds == (None, 1.0)


def test_clip_bounds_known_only_at_run_time_become_maximum_and_minimum():
    inputs = {
        "x": normal(4, 5),
        "lo": np.array(-0.5, np.float32),
        "hi": np.array(0.25, np.float32),
    }
    model = one_node_model("Clip", inputs)
    assert graph_ops(model) == ["graph.maximum", "graph.minimum"]
    expected = onnxruntime_outputs(model, inputs)
    assert_close(run_graph(import_onnx(model).module, list(inputs.values())), expected)
    assert_close(strato.compile(model)(*inputs.values()), expected)


def test_clip_min_greater_than_max_gives_max():
    x = normal(3, 3)
    model = one_node_model("Clip", {"x": x}, opset=10, min=1.0, max=-1.0)
    (actual,) = strato.compile(model)(x)
    np.testing.assert_array_equal(actual, np.full_like(x, -1.0))


def test_clip_rejects_non_scalar_bounds():
    model = one_node_model("Clip", {"x": normal(3)}, {"lo": np.zeros(3, np.float32)})
    with pytest.raises(ModelImportError, match=r"\(Clip\): min must be a scalar, got shape \[3\]"):
        import_onnx(model)


def test_variadic_ops_are_left_to_right_chains():
    _, inputs = binary_model("sum_three")
    assert graph_ops(one_node_model("Sum", inputs)) == ["graph.add", "graph.add"]
    assert graph_ops(one_node_model("Max", inputs)) == ["graph.maximum", "graph.maximum"]
    assert graph_ops(one_node_model("Min", inputs)) == ["graph.minimum", "graph.minimum"]


def test_variadic_with_one_input_is_the_identity():
    x = normal(2, 3)
    model = one_node_model("Sum", {"x": x})
    assert graph_ops(model) == []
    np.testing.assert_array_equal(strato.compile(model)(x)[0], x)


def test_variadic_folds_constant_inputs_and_keeps_the_runtime_one():
    a, b = normal(2, 3, seed=1), normal(3, seed=2)
    constants = {"a": a, "b": b}
    model = one_node_model("Sum", {"x": normal(2, 3)}, constants, node_inputs=["a", "b", "x"])
    assert graph_ops(model) == ["graph.constant", "graph.add"]
    x = normal(2, 3, seed=5)
    assert_close(run_graph(import_onnx(model).module, [x]), [a + b + x])


def test_incompatible_shapes_are_a_diagnostic():
    model = one_node_model("Sub", {"a": normal(2, 3), "b": normal(4, seed=1)}, out_shape=(2, 3))
    with pytest.raises(ModelImportError, match=r"\(Sub\): input shapes \[2, 3\] and \[4\]"):
        import_onnx(model)


def test_gelu_unknown_approximation_is_a_diagnostic():
    model = one_node_model("Gelu", {"x": normal(3)}, opset=20, approximate="tanh")
    model.graph.node[0].attribute[0].s = b"sigmoid"
    with pytest.raises(ModelImportError, match=r"approximate='sigmoid' is not supported"):
        import_onnx(model)


# -- IR: syntax, verifier, pattern kinds, integer tensors --------------------------------


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def test_pattern_kinds():
    unary = [graph.ReluOp, graph.LeakyReluOp, graph.ClipOp, graph.SigmoidOp, graph.TanhOp]
    unary += [graph.ErfOp, graph.GeluOp, graph.SqrtOp, graph.ExpOp, graph.LogOp]
    unary += [graph.NegOp, graph.AbsOp, graph.FloorOp, graph.CeilOp, graph.RoundOp]
    unary += [graph.SignOp, graph.SinOp, graph.CosOp, graph.TanOp, graph.ReciprocalOp]
    unary += [graph.AsinOp, graph.AcosOp, graph.AtanOp, graph.SinhOp, graph.CoshOp]
    unary += [graph.AsinhOp, graph.AcoshOp, graph.AtanhOp]
    unary += [graph.SoftplusOp, graph.SoftsignOp, graph.MishOp, graph.HardSwishOp]
    unary += [graph.EluOp, graph.SeluOp, graph.CeluOp, graph.HardSigmoidOp]
    unary += [graph.ThresholdedReluOp]
    binary = [graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.PowOp]
    binary += [graph.MaximumOp, graph.MinimumOp, graph.PReluOp, graph.ModOp]
    assert {op.PATTERN_KIND for op in unary} == {graph.PatternKind.INJECTIVE}
    assert {op.PATTERN_KIND for op in binary} == {graph.PatternKind.BROADCAST}


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '%r = "graph.leaky_relu"(%a) <{alpha = 0x7FC00000 : f32}> : (tensor<4xf32>) -> tensor<4xf32>',
            "alpha must be finite",
        ),
        ("%r = graph.gelu %a approximate fast : tensor<4xf32>", "approximate must be one of"),
        (
            '%r = "graph.clip"(%a) <{max = 0x7F800000 : f32}> : (tensor<4xf32>) -> tensor<4xf32>',
            "max must be finite",
        ),
        (
            "%r = graph.pow %i, %a : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>",
            "base element type i32 differs from result element type f32",
        ),
        ("%r = graph.sigmoid %i : tensor<4xi32>", "'graph.sigmoid' expects float tensors"),
    ],
)
def test_verifier_errors(text, message):
    source = f"""
    func.func @f(%a: tensor<4xf32>, %i: tensor<4xi32>) {{
      {text}
      func.return
    }}"""
    with pytest.raises(VerifyException) as info:
        parse(source)
    assert message in str(info.value)


INTEGER_PROGRAM = """
func.func @main(%a: tensor<2x3xi32>, %b: tensor<3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>) {
  %d = graph.div %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %s = graph.sub %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %m = graph.maximum %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %n = graph.minimum %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %x = graph.abs %a : tensor<2x3xi32>
  %g = graph.neg %a : tensor<2x3xi32>
  %c = graph.clip %a min -2.0 max 3.0 : tensor<2x3xi32>
  func.return %d, %s, %m, %n, %x, %g, %c : tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>
}
"""


def test_integer_tensors_at_the_graph_and_te_levels():
    a = np.array([[7, -7, 5], [-9, 4, 0]], np.int32)
    b = np.array([2, 2, -3], np.int32)
    expected = [
        np.array([[3, -3, -1], [-4, 2, 0]], np.int32),  # division truncates toward zero
        a - b,
        np.maximum(a, b),
        np.minimum(a, b),
        np.abs(a),
        -a,
        np.clip(a, -2, 3),
    ]
    graph_results = run_graph(parse(INTEGER_PROGRAM), [a, b])
    module = parse(INTEGER_PROGRAM)
    run_pipeline(make_context(), module, "convert-graph-to-te")
    te_results = run_te(module, [a, b])
    for result in (graph_results, te_results):
        for actual, wanted in zip(result, expected, strict=True):
            np.testing.assert_array_equal(actual, wanted)
            assert actual.dtype == np.int32


MIXED_POWERS = """
func.func @main(%i: tensor<4xi32>, %k: tensor<4xi64>, %f: tensor<4xf32>, %h: tensor<f32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) {
  %a = graph.pow %i, %k : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi32>
  %b = graph.pow %i, %h : (tensor<4xi32>, tensor<f32>) -> tensor<4xi32>
  %c = graph.pow %f, %k : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  func.return %a, %b, %c : tensor<4xi32>, tensor<4xi32>, tensor<4xf32>
}
"""


def test_pow_of_mixed_element_types_through_te_and_loops():
    """The result has the base's type: integer powers exactly, a float exponent of an
    integer base through f64 truncated back, an integer exponent of a float base as a
    float."""
    i = np.array([3, -2, 5, 7], np.int32)
    k = np.array([2, 3, 0, 1], np.int64)
    f = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
    h = np.array(1.5, np.float32)
    expected = [
        np.array([9, -8, 1, 7], np.int32),
        np.array([5, 0, 11, 18], np.int32),  # 3^1.5 = 5.19, (-2)^1.5 = nan -> 0 by numpy
        np.array([2.25, -8.0, 1.0, 3.0], np.float32),
    ]
    inputs = [i, k, f, h]
    with np.errstate(invalid="ignore"):
        graph_results = run_graph(parse(MIXED_POWERS), inputs)
    module = parse(MIXED_POWERS)
    ctx = make_context()
    run_pipeline(ctx, module, "convert-graph-to-te")
    with np.errstate(invalid="ignore"):
        te_results = run_te(module, inputs)
    run_pipeline(ctx, module, "convert-te-to-loops")
    with np.errstate(invalid="ignore"):
        loop_results = run_loops(module, inputs)
    for results in (graph_results, te_results, loop_results):
        for n, (actual, wanted) in enumerate(zip(results, expected, strict=True)):
            if n == 1:  # NaN to integer is undefined: compare the defined elements only
                actual, wanted = actual[[0, 2, 3]], wanted[[0, 2, 3]]
            np.testing.assert_array_equal(actual, wanted)
            assert actual.dtype == wanted.dtype


# -- property: every strategy computes what its op's reference semantics says ------------

UNARY_OPS = {
    "relu": "graph.relu %x",
    "leaky_relu": "graph.leaky_relu %x alpha 3.000000e-01",
    "clip": "graph.clip %x min -5.000000e-01 max 1.000000e+00",
    "sigmoid": "graph.sigmoid %x",
    "tanh": "graph.tanh %x",
    "erf": "graph.erf %x",
    "gelu": "graph.gelu %x",
    "gelu_tanh": "graph.gelu %x approximate tanh",
    "exp": "graph.exp %x",
    "neg": "graph.neg %x",
    "abs": "graph.abs %x",
    "floor": "graph.floor %x",
    "round": "graph.round %x",
    "sign": "graph.sign %x",
    "sin": "graph.sin %x",
    "softplus": "graph.softplus %x",
    "mish": "graph.mish %x",
    "hard_swish": "graph.hard_swish %x",
    "selu": "graph.selu %x alpha 1.500000e+00 gamma 2.000000e+00",
    "celu": "graph.celu %x alpha 5.000000e-01",
    "hard_sigmoid": "graph.hard_sigmoid %x alpha 2.000000e-01 beta 5.000000e-01",
    "thresholded_relu": "graph.thresholded_relu %x alpha 1.000000e-01",
}
BINARY_OPS = ["add", "sub", "mul", "div", "maximum", "minimum", "prelu"]


@st.composite
def broadcast_pairs(draw):
    rank = draw(st.integers(0, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    other = [draw(st.sampled_from([n, 1])) for n in shape]
    other = other[draw(st.integers(0, rank)) :]
    return (shape, other) if draw(st.booleans()) else (other, shape)


def tensor(shape) -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + "f32>"


@given(
    shapes=broadcast_pairs(),
    op=st.sampled_from(BINARY_OPS),
    unary=st.sampled_from(sorted(UNARY_OPS)),
    seed=st.integers(0, 2**16),
)
def test_strategies_agree_with_reference_semantics(shapes, op, unary, seed):
    lhs, rhs = shapes
    out = np.broadcast_shapes(tuple(lhs), tuple(rhs))
    text = f"""
    func.func @main(%a: {tensor(lhs)}, %b: {tensor(rhs)}) -> {tensor(out)} {{
      %x = graph.{op} %a, %b : ({tensor(lhs)}, {tensor(rhs)}) -> {tensor(out)}
      %y = {UNARY_OPS[unary]} : {tensor(out)}
      func.return %y : {tensor(out)}
    }}"""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(lhs).astype(np.float32)
    b = (rng.uniform(0.5, 2.0, rhs) * rng.choice([-1, 1], rhs)).astype(np.float32)
    expected = run_graph(parse(text), [a, b])
    module = parse(text)
    run_pipeline(make_context(), module, "convert-graph-to-te")
    np.testing.assert_allclose(run_te(module, [a, b])[0], expected[0], rtol=2e-6, atol=1e-6)
