"""strato's ONNX backend API (`strato.onnx_backend`) on small models: prepare
and run, run_model, run_node, devices, diagnostics, and the hook-up to ONNX's backend
test runner (constructed here; the node tests themselves run in test_onnx_node_tests)."""

from __future__ import annotations

import unittest
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test import BackendTest

import strato.compiler
from strato import onnx_backend as backend
from strato.diagnostics import ModelImportError, StratoError
from strato.frontends.onnx import import_onnx
from strato.onnx_backend import StratoBackend, StratoBackendRep
from strato.runtime.signature import InputMismatchError

OPSET = 17


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, list[int]],
    outputs: dict[str, list[int]],
    initializers: dict[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "backend_test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def dense_relu_model() -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """y = relu(x @ w.T + b) and, as a second output, z = y * x2 (x2 a second input)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    model = make_model(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
            helper.make_node("Relu", ["h"], ["y"]),
            helper.make_node("Mul", ["y", "x2"], ["z"]),
        ],
        {"x": [3, 4], "x2": [3, 5]},
        {"y": [3, 5], "z": [3, 5]},
        {"w": w, "b": b},
    )
    return model, w, b


def reference(x: np.ndarray, x2: np.ndarray, w: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    y = np.maximum(x @ w.T + b, 0.0)
    return [y, y * x2]


def inputs(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((3, 4)).astype(np.float32),
        rng.standard_normal((3, 5)).astype(np.float32),
    )


def assert_outputs(actual, expected: list[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert isinstance(a, np.ndarray)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


# -- prepare and run ------------------------------------------------------------------


def test_prepare_compiles_once_and_runs_repeatedly():
    model, w, b = dense_relu_model()
    rep = backend.prepare(model)
    assert isinstance(rep, StratoBackendRep)
    assert rep.input_names == ["x", "x2"]
    assert rep.output_names == ["y", "z"]
    for seed in (1, 2):
        x, x2 = inputs(seed)
        outputs = rep.run([x, x2])
        assert isinstance(outputs, tuple)
        assert_outputs(outputs, reference(x, x2, w, b))


def test_run_accepts_a_tuple_or_a_dict_and_outputs_index_by_name():
    model, w, b = dense_relu_model()
    rep = StratoBackend.prepare(model, "CPU")
    x, x2 = inputs()
    expected = reference(x, x2, w, b)
    assert_outputs(rep.run((x, x2)), expected)
    outputs = rep.run({"x2": x2, "x": x})
    assert_outputs(outputs, expected)
    np.testing.assert_array_equal(outputs["z"], outputs[1])


def test_run_with_one_array_for_a_one_input_model():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, {"y": [2, 3]})
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    (y,) = backend.prepare(model).run(x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_run_model_compiles_and_runs_once():
    model, w, b = dense_relu_model()
    x, x2 = inputs()
    assert_outputs(backend.run_model(model, [x, x2]), reference(x, x2, w, b))


def test_prepare_forwards_input_shapes():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "symbolic_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    rep = backend.prepare(model, input_shapes={"x": [4, 3]})
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    (y,) = rep.run([x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_prepare_ignores_the_tolerances_the_onnx_runner_passes():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]})
    rep = backend.prepare(model, "CPU", rtol=1e-3, atol=1e-7)
    (y,) = rep.run([np.array([-1, 1], dtype=np.float32)])
    np.testing.assert_array_equal(y, [0, 1])


# -- run_node -----------------------------------------------------------------------


def test_run_node_add_with_broadcasting():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([10, 20, 30], dtype=np.float32)
    outputs = backend.run_node(node, [a, b])
    assert len(outputs) == 1
    np.testing.assert_array_equal(outputs[0], a + b)
    np.testing.assert_array_equal(outputs["c"], a + b)


def test_run_node_with_a_dict_outputs_info_and_an_opset():
    node = helper.make_node("Mul", ["a", "b"], ["c"])
    a = np.full((2, 2), 3, dtype=np.float32)
    b = np.full((2, 2), 0.5, dtype=np.float32)
    (c,) = StratoBackend.run_node(
        node, {"a": a, "b": b}, "CPU", outputs_info=[(np.float32, (2, 2))], opset_version=13
    )
    np.testing.assert_array_equal(c, a * b)


def test_one_node_model_types_outputs_with_the_input_values_known():
    node = helper.make_node("Reshape", ["data", "shape"], ["reshaped"])
    data = np.arange(6, dtype=np.float32)
    shape = np.array([2, 3], dtype=np.int64)
    model, feeds = backend.one_node_model(node, [data, shape])
    onnx.checker.check_model(model)
    assert [value.name for value in model.graph.input] == ["data", "shape"]
    assert not model.graph.initializer
    (output,) = model.graph.output
    assert [d.dim_value for d in output.type.tensor_type.shape.dim] == [2, 3]
    assert feeds[0] is data and feeds[1] is shape


def test_run_node_reshape_with_its_shape_as_an_input():
    node = helper.make_node("Reshape", ["data", "shape"], ["reshaped"])
    data = np.arange(6, dtype=np.float32)
    (reshaped,) = backend.run_node(node, [data, np.array([3, -1], dtype=np.int64)])
    np.testing.assert_array_equal(reshaped, data.reshape(3, 2))


def test_run_node_checks_the_number_of_inputs():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    with pytest.raises(StratoError, match=r"the Add node takes 2 input\(s\) \(a, b\), got 1"):
        backend.run_node(node, [np.zeros(2, np.float32)])


# -- inputs needed at compile time ---------------------------------------------------------


def reshape_model() -> onnx.ModelProto:
    """y = reshape(x, shape) * 2, with the target shape a graph input (int64)."""
    graph = helper.make_graph(
        [
            helper.make_node("Reshape", ["x", "shape"], ["r"]),
            helper.make_node("Mul", ["r", "two"], ["y"]),
        ],
        "reshape_by_input",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", "columns"])],
        [numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def test_compile_time_inputs_are_found_through_the_nodes_computing_them():
    model = reshape_model()
    assert backend.compile_time_inputs(model) == ["shape"]
    # The shape computed from an input by an Add: still that input.
    model.graph.node.insert(0, helper.make_node("Add", ["delta", "delta"], ["doubled"]))
    model.graph.node[1].input[1] = "doubled"
    model.graph.input[1].name = "delta"
    assert backend.compile_time_inputs(model) == ["delta"]
    # Through Shape only the input's shape matters, which is static.
    model.graph.node[0].CopyFrom(helper.make_node("Shape", ["delta"], ["doubled"]))
    assert backend.compile_time_inputs(model) == []


def test_bind_inputs_turns_graph_inputs_into_initializers():
    model = reshape_model()
    bound = backend.bind_inputs(model, {"shape": np.array([3, 4], dtype=np.int64)})
    onnx.checker.check_model(bound)
    assert [value.name for value in bound.graph.input] == ["x"]
    shape = next(init for init in bound.graph.initializer if init.name == "shape")
    np.testing.assert_array_equal(numpy_helper.to_array(shape), [3, 4])
    assert [value.name for value in model.graph.input] == ["x", "shape"]


def test_a_shape_given_as_an_input_compiles_once_per_value():
    rep = backend.prepare(reshape_model())
    assert isinstance(rep, backend.SpecializingBackendRep)
    assert rep.input_names == ["x", "shape"] and rep.output_names == ["y"]
    assert rep.variants == 0
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    (y,) = rep.run([x, np.array([3, 4], dtype=np.int64)])
    np.testing.assert_array_equal(y, x.reshape(3, 4) * 2)
    (y,) = rep.run({"shape": np.array([3, 4], dtype=np.int64), "x": -x})
    np.testing.assert_array_equal(y, -x.reshape(3, 4) * 2)
    assert rep.variants == 1
    (y,) = rep.run([x, np.array([-1, 2], dtype=np.int64)])
    np.testing.assert_array_equal(y, x.reshape(6, 2) * 2)
    assert rep.variants == 2


def test_a_compile_time_input_is_checked_against_its_declared_type():
    rep = backend.prepare(reshape_model())
    x = np.zeros((2, 6), dtype=np.float32)
    with pytest.raises(InputMismatchError, match="input 'shape': dtype is int32, expected int64"):
        rep.run([x, np.array([3, 4], dtype=np.int32)])
    with pytest.raises(InputMismatchError, match=r"input 'shape': shape is \[3\]"):
        rep.run([x, np.array([3, 4, 1], dtype=np.int64)])
    with pytest.raises(InputMismatchError, match="takes 2 input"):
        rep.run([x])


def test_a_bad_value_of_a_compile_time_input_is_a_diagnostic_when_it_runs():
    rep = backend.prepare(reshape_model())
    with pytest.raises(StratoError, match="Reshape"):
        rep.run([np.zeros((2, 6), dtype=np.float32), np.array([5, 5], dtype=np.int64)])


# -- devices and diagnostics ------------------------------------------------------------


def test_supports_only_the_cpu():
    assert backend.supports_device("CPU")
    assert StratoBackend.supports_device("CPU:0")
    assert not backend.supports_device("CUDA")
    assert not backend.supports_device("CUDA:1")


def test_prepare_on_another_device_is_a_diagnostic():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]})
    with pytest.raises(StratoError, match="device 'CUDA' is not supported"):
        backend.prepare(model, "CUDA")


def test_unsupported_operator_fails_before_any_code_is_generated(monkeypatch):
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="first"),
            helper.make_node("Bernoulli", ["r"], ["y"], name="act"),
        ],
        {"x": [2, 3]},
        {"y": [2, 3]},
    )

    def must_not_lower(*args, **kwargs):
        raise AssertionError("code was generated for an unsupported model")

    monkeypatch.setattr(strato.compiler, "run_stages", must_not_lower)
    with pytest.raises(StratoError) as raised:
        backend.prepare(model)
    assert isinstance(raised.value, ModelImportError)
    message = str(raised.value)
    assert "\n" not in message
    assert "node 'act' (Bernoulli)" in message
    assert "not supported" in message
    # The same one-line diagnostic the importer gives.
    with pytest.raises(ModelImportError) as imported:
        import_onnx(model)
    assert str(imported.value) == message
    assert not backend.is_compatible(model)


def test_unsupported_operator_fails_in_prepare_even_with_compile_time_inputs():
    model = reshape_model()
    model.graph.node.append(helper.make_node("Bernoulli", ["y"], ["z"], name="act"))
    model.graph.output[0].name = "z"
    with pytest.raises(ModelImportError, match=r"node 'act' \(Bernoulli\): operator not supported"):
        backend.prepare(model)


def test_run_node_on_an_unsupported_operator_names_it():
    node = helper.make_node("Bernoulli", ["x"], ["y"])
    with pytest.raises(ModelImportError, match=r"\(Bernoulli\): operator not supported"):
        backend.run_node(node, [np.zeros(3, np.float32)])


def test_is_compatible_for_supported_models():
    model, _, _ = dense_relu_model()
    assert backend.is_compatible(model)
    assert not backend.is_compatible(model, "CUDA")


def test_unknown_option_is_a_diagnostic():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]})
    with pytest.raises(StratoError, match="unknown backend option 'opt_level'"):
        backend.prepare(model, opt_level=2)


def test_wrong_inputs_are_diagnostics():
    model, _, _ = dense_relu_model()
    rep = backend.prepare(model)
    x, x2 = inputs()
    with pytest.raises(InputMismatchError, match="takes 2 input"):
        rep.run([x])
    with pytest.raises(InputMismatchError, match="dtype is float64"):
        rep.run([x.astype(np.float64), x2])
    with pytest.raises(StratoError, match="'w' is not an input of the model"):
        rep.run({"x": x, "x2": x2, "w": x})
    with pytest.raises(StratoError, match="no value given for input 'x2'"):
        rep.run({"x": x})


# -- ONNX's backend test runner -------------------------------------------------------------


@pytest.fixture(scope="module")
def backend_test() -> BackendTest:
    # Building the suite evaluates every ONNX node case; their reference computations
    # warn about overflows and infinities on purpose.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BackendTest(StratoBackend, __name__)


def test_onnx_backend_test_can_be_built_with_strato(backend_test):
    cases = backend_test.test_cases
    assert "OnnxBackendNodeModelTest" in cases
    node_tests = cases["OnnxBackendNodeModelTest"]
    assert hasattr(node_tests, "test_add_cpu")
    assert hasattr(node_tests, "test_add_cuda")


def test_onnx_runner_drives_the_backend_on_one_node_test(backend_test):
    """Run only test_add (CPU and CUDA) from the generated suite: the CPU case must pass
    through prepare/run as the runner calls them; the CUDA one is skipped."""
    node_tests = backend_test.test_cases["OnnxBackendNodeModelTest"]
    suite = unittest.TestSuite([node_tests("test_add_cpu"), node_tests("test_add_cuda")])
    result = unittest.TestResult()
    suite.run(result)
    assert result.testsRun == 2
    assert not result.errors and not result.failures, result.errors + result.failures
    assert [test.id().rsplit(".", 1)[-1] for test, _ in result.skipped] == ["test_add_cuda"]
