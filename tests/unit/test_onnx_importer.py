"""The ONNX importer: each operator against onnxruntime (or numpy) through the graph
interpreter, Gemm's attribute combinations, and every diagnostic."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.parser import Parser

import strato
from strato.context import make_context
from strato.diagnostics import ModelImportError, StratoError
from strato.dialects import graph
from strato.frontends.onnx import import_model, import_onnx
from strato.frontends.onnx.conversion import ssa_name
from strato.frontends.onnx.op_table import ONNX_CONVERTERS
from strato.interpreters.graph import run_graph
from strato.onnx_backend import prepare
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

OPSET = 17


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, list],
    outputs: dict[str, list],
    initializers: dict[str, np.ndarray] | None = None,
    *,
    elem_type: int = TensorProto.FLOAT,
    opset: int = OPSET,
) -> onnx.ModelProto:
    graph_proto = helper.make_graph(
        nodes,
        "test_graph",
        [helper.make_tensor_value_info(n, elem_type, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, elem_type, s) for n, s in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    arrays = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        arrays.append(rng.standard_normal(shape).astype(np.float32))
    return arrays


def run_onnxruntime(model: onnx.ModelProto, arrays: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    return session.run(None, dict(zip(names, arrays, strict=True)))


def assert_matches_onnxruntime(model: onnx.ModelProto, seed: int = 0) -> None:
    arrays = random_inputs(model, seed)
    expected = run_onnxruntime(model, arrays)
    actual = run_graph(import_model(model), arrays)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def ops_of(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def matmul_shape(a_shape: list[int], b_shape: list[int]) -> list[int]:
    return list(np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape)


def rand(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Add", "Mul"])
@pytest.mark.parametrize(
    "lhs, rhs",
    [([2, 3], [2, 3]), ([2, 3], [3]), ([4, 1, 3], [2, 1]), ([1], [2, 3]), ([3, 2], [])],
)
def test_broadcast_binary(op_type, lhs, rhs):
    model = make_model(
        [helper.make_node(op_type, ["a", "b"], ["y"])],
        {"a": lhs, "b": rhs},
        {"y": list(np.broadcast_shapes(tuple(lhs), tuple(rhs)))},
    )
    assert_matches_onnxruntime(model)


@pytest.mark.parametrize("op_type", ["Add", "Mul"])
def test_binary_with_initializer(op_type):
    model = make_model(
        [helper.make_node(op_type, ["a", "c"], ["y"])],
        {"a": [2, 5]},
        {"y": [2, 5]},
        {"c": rand(5)},
    )
    assert_matches_onnxruntime(model)
    assert ops_of(import_model(model)) == ["graph.constant", f"graph.{op_type.lower()}"]


def test_relu():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [3, 7]}, {"y": [3, 7]})
    assert_matches_onnxruntime(model)
    assert ops_of(import_model(model)) == ["graph.relu"]


def test_constants_fold_at_import_time():
    """Ops on values known at import time are computed by the importer."""
    model = make_model(
        [
            helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(rand(4))),
            helper.make_node("Mul", ["k", "w"], ["kw"]),
            helper.make_node("Relu", ["kw"], ["r"]),
            helper.make_node("Add", ["x", "r"], ["y"]),
        ],
        {"x": [2, 4]},
        {"y": [2, 4]},
        {"w": rand(4, seed=2)},
    )
    assert_matches_onnxruntime(model)
    assert ops_of(import_model(model)) == ["graph.constant", "graph.add"]


@pytest.mark.parametrize("a_shape, b_shape", [([3, 4], [4, 5]), ([2, 3, 4], [2, 4, 5]), ([2, 3, 4], [4, 5]), ([3, 4], [2, 4, 5])])
def test_matmul_of_inputs(a_shape, b_shape):
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": a_shape, "b": b_shape},
        {"y": matmul_shape(a_shape, b_shape)},
    )
    assert_matches_onnxruntime(model)
    assert ops_of(import_model(model)) == ["graph.matmul"]


@pytest.mark.parametrize("a_shape", [[3, 4], [2, 3, 4], [4]])
def test_matmul_with_constant_weight_is_dense(a_shape):
    model = make_model(
        [helper.make_node("MatMul", ["a", "w"], ["y"])],
        {"a": a_shape},
        {"y": matmul_shape(a_shape, [4, 6])},
        {"w": rand(4, 6)},
    )
    assert_matches_onnxruntime(model)
    module = import_model(model)
    assert ops_of(module) == ["graph.constant", "graph.dense"]
    dense = next(op for op in module.walk() if isinstance(op, graph.DenseOp))
    assert dense.weight.type.get_shape() == (6, 4)


GEMM_M, GEMM_K, GEMM_N = 3, 5, 4


@pytest.mark.parametrize(
    "trans_a, trans_b, alpha, beta",
    list(itertools.product([0, 1], [0, 1], [1.0, 0.25], [1.0, -2.0])),
)
@pytest.mark.parametrize("c_shape", [None, [GEMM_N], [1, GEMM_N], [GEMM_M, GEMM_N], [GEMM_M, 1], [1], []])
def test_gemm_with_constant_b(trans_a, trans_b, alpha, beta, c_shape):
    a_shape = [GEMM_K, GEMM_M] if trans_a else [GEMM_M, GEMM_K]
    b = rand(GEMM_N, GEMM_K) if trans_b else rand(GEMM_K, GEMM_N)
    inits = {"b": b}
    inputs = ["a", "b"]
    if c_shape is not None:
        inits["c"] = rand(*c_shape, seed=3)
        inputs.append("c")
    node = helper.make_node(
        "Gemm", inputs, ["y"], transA=trans_a, transB=trans_b, alpha=alpha, beta=beta
    )
    model = make_model([node], {"a": a_shape}, {"y": [GEMM_M, GEMM_N]}, inits)
    assert_matches_onnxruntime(model)
    module = import_model(model)
    ops = ops_of(module)
    assert "graph.dense" in ops and "graph.matmul" not in ops
    assert ops.count("graph.mul") == 0  # alpha and beta folded into constants


@pytest.mark.parametrize(
    "trans_a, trans_b, alpha, beta", [(0, 0, 1.0, 1.0), (1, 1, 0.5, 2.0), (0, 1, 1.0, 0.0), (1, 0, 3.0, 1.0)]
)
@pytest.mark.parametrize("c_kind", ["none", "input", "constant"])
def test_gemm_of_inputs(trans_a, trans_b, alpha, beta, c_kind):
    a_shape = [GEMM_K, GEMM_M] if trans_a else [GEMM_M, GEMM_K]
    b_shape = [GEMM_N, GEMM_K] if trans_b else [GEMM_K, GEMM_N]
    inputs = {"a": a_shape, "b": b_shape}
    inits = {}
    names = ["a", "b"]
    if c_kind == "input":
        inputs["c"] = [GEMM_M, 1]
        names.append("c")
    elif c_kind == "constant":
        inits["c"] = rand(GEMM_N, seed=4)
        names.append("c")
    node = helper.make_node(
        "Gemm", names, ["y"], transA=trans_a, transB=trans_b, alpha=alpha, beta=beta
    )
    model = make_model([node], inputs, {"y": [GEMM_M, GEMM_N]}, inits)
    assert_matches_onnxruntime(model)
    assert "graph.matmul" in ops_of(import_model(model))


def test_gemm_with_constant_a():
    model = make_model(
        [helper.make_node("Gemm", ["a", "b"], ["y"], transA=1, alpha=2.0)],
        {"b": [GEMM_K, GEMM_N]},
        {"y": [GEMM_M, GEMM_N]},
        {"a": rand(GEMM_K, GEMM_M)},
    )
    assert_matches_onnxruntime(model)


def test_mlp_shape_and_order_of_arguments():
    """Arguments are the non-initializer inputs in ONNX order, results the outputs."""
    w1, b1, w2 = rand(8, 4), rand(8), rand(8, 3)
    model = make_model(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1, name="fc1"),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["m"]),
            helper.make_node("Add", ["m", "bias2"], ["logits"]),
        ],
        {"x": [2, 4], "bias2": [3]},
        {"logits": [2, 3], "r": [2, 8]},
        {"w1": w1, "b1": b1, "w2": w2},
    )
    # Old exporters also list initializers among the graph inputs.
    model.graph.input.append(helper.make_tensor_value_info("w1", TensorProto.FLOAT, [8, 4]))
    assert_matches_onnxruntime(model)
    imported = import_onnx(model)
    assert imported.input_names == ["x", "bias2"]
    assert imported.output_names == ["logits", "r"]
    function = imported.function
    assert isinstance(function, func.FuncOp) and function.sym_name.data == "main"
    assert [t.get_shape() for t in function.function_type.inputs.data] == [(2, 4), (3,)]
    assert [t.get_shape() for t in function.function_type.outputs.data] == [(2, 3), (2, 8)]


def test_import_from_file_and_input_shapes(tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], {"x": ["batch", 3]}, {"y": ["batch", 3]}
    )
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    module = import_model(path, input_shapes={"x": [5, 3]})
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert function.function_type.outputs.data[0].get_shape() == (5, 3)
    assert import_model(str(path), input_shapes={"x": [2, 3]}) is not None


# ---------------------------------------------------------------------------
# diagnostics
# ---------------------------------------------------------------------------


def import_error(model, **kwargs) -> str:
    with pytest.raises(ModelImportError) as info:
        import_model(model, **kwargs)
    assert isinstance(info.value, StratoError)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_op_names_node_and_op():
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("FancyOp", ["r"], ["y"], name="fancy1"),
        ],
        {"x": [2]},
        {"y": [2]},
    )
    message = import_error(model)
    assert "node 'fancy1' (FancyOp)" in message
    assert "unknown operator" in message


def test_unsupported_standard_op_uses_index_when_unnamed(monkeypatch):
    # A standard operator without a converter (Relu's is taken out of the table).
    monkeypatch.delitem(ONNX_CONVERTERS, "Relu")
    model = make_model(
        [helper.make_node("Add", ["x", "x"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
        {"x": [2]},
        {"y": [2]},
    )
    message = import_error(model)
    assert "node #1 (Relu)" in message and "not supported" in message


def test_missing_initializer():
    model = make_model(
        [helper.make_node("Gemm", ["x", "W"], ["y"], name="fc")], {"x": [2, 4]}, {"y": [2, 3]}
    )
    message = import_error(model)
    assert "node 'fc' (Gemm)" in message and "'W'" in message and "missing" in message


def test_dynamic_shape():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], {"x": ["batch", 4]}, {"y": ["batch", 4]}
    )
    message = import_error(model)
    assert "graph input 'x'" in message and "dynamic dimension 'batch'" in message


def test_non_numeric_graph_input():
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])], {"x": [4]}, {"y": [4]}, elem_type=TensorProto.STRING
    )
    message = import_error(model)
    assert "graph input 'x'" in message and "STRING" in message and "numeric" in message


def test_mixed_element_types_name_node():
    model = make_model(
        [helper.make_node("Add", ["x", "c"], ["y"], name="add0")],
        {"x": [4]},
        {"y": [4]},
        {"c": np.arange(4, dtype=np.int64)},
    )
    message = import_error(model)
    assert "node 'add0' (Add)" in message and "i64" in message and "f32" in message


def test_unsupported_attribute_value():
    model = make_model(
        [helper.make_node("Gemm", ["x", "w"], ["y"], transB=2, name="fc")],
        {"x": [2, 4]},
        {"y": [2, 3]},
        {"w": rand(3, 4)},
    )
    message = import_error(model)
    assert "node 'fc' (Gemm)" in message and "transB=2" in message


def test_shape_mismatch_names_node():
    model = make_model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add0")],
        {"a": [2, 3], "b": [4]},
        {"y": [2, 4]},
    )
    message = import_error(model)
    assert "add0" in message and "Add" in message


def test_wrong_domain():
    node = helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")
    model = make_model([node], {"x": [2]}, {"y": [2]})
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    message = import_error(model)
    assert "node 'r' (Relu)" in message and "com.example" in message


def test_old_opset():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])],
        {"x": [2]},
        {"y": [2]},
        opset=6,
    )
    message = import_error(model)
    assert "opset 6" in message and "Add differ from opset 7" in message and "Relu" not in message


def test_old_opset_of_operators_unchanged_since_imports():
    """Not is defined once, in opset 1: a model of opset 1 means what it means at 7."""
    model = make_model(
        [helper.make_node("Not", ["x"], ["n"]), helper.make_node("Not", ["n"], ["y"])],
        {"x": [3]},
        {"y": [3]},
        elem_type=TensorProto.BOOL,
        opset=1,
    )
    assert ops_of(import_model(model)) == ["graph.not", "graph.not"]


def test_malformed_file(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x08\x07this is not a protobuf\xff\xfe\x00")
    message = import_error(path)
    assert str(path) in message and "ONNX" in message


def test_text_file_is_not_a_model(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("hello")
    message = import_error(path)
    assert str(path) in message


def test_missing_file(tmp_path):
    path = tmp_path / "absent.onnx"
    message = import_error(path)
    assert str(path) in message and "no such file" in message


def test_unknown_input_shape_override():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]})
    assert "'z'" in import_error(model, input_shapes={"z": [3]})


def test_wrong_argument_type():
    with pytest.raises(TypeError):
        import_model(42)  # type: ignore[arg-type]


def test_every_unsupported_operator_in_one_diagnostic(monkeypatch):
    monkeypatch.delitem(ONNX_CONVERTERS, "Relu")
    monkeypatch.delitem(ONNX_CONVERTERS, "Sigmoid")
    nodes = [helper.make_node("Relu", ["x"], [f"r{n}"], name=f"relu{n}") for n in range(5)]
    nodes += [
        helper.make_node("Sigmoid", ["r0"], ["s"]),
        helper.make_node("FancyOp", ["s"], ["f"], name="fancy1"),
        helper.make_node("Add", ["f", "r1"], ["y"]),
    ]
    message = import_error(make_model(nodes, {"x": [2]}, {"y": [2]}))
    assert message == (
        "error: operators not supported by strato yet: "
        "Relu (5 nodes: 'relu0', 'relu1', 'relu2', ...), Sigmoid (1 node: #5); "
        "unknown operators (not in the ONNX standard): FancyOp (1 node: 'fancy1')"
    )


# ---------------------------------------------------------------------------
# value names as exporters write them
# ---------------------------------------------------------------------------


def exported_names_model() -> onnx.ModelProto:
    """Names as torch.onnx's TorchScript exporter writes them: `input.1`, `onnx::Conv_12`,
    `/c/Conv_output_0`, bare numbers, plus names that differ only in what SSA names
    cannot hold."""
    weight = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node(
            "Conv", ["input.1", "onnx::Conv_12"], ["/c/Conv_output_0"], name="/c/Conv", pads=[1] * 4
        ),
        helper.make_node("Relu", ["/c/Conv_output_0"], ["1"], name="/r/Relu"),
        helper.make_node("Neg", ["1"], ["a/b"]),
        helper.make_node("Abs", ["1"], ["a:b"]),
        helper.make_node("Add", ["a/b", "a:b"], ["2"]),
        helper.make_node("Add", ["2", "/c/Conv_output_0"], ["output:0"]),
    ]
    graph_proto = helper.make_graph(
        nodes,
        "torch_jit",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, 5, 5])],
        [
            helper.make_tensor_value_info("output:0", TensorProto.FLOAT, [1, 4, 5, 5]),
            helper.make_tensor_value_info("1", TensorProto.FLOAT, [1, 4, 5, 5]),
        ],
        [numpy_helper.from_array(weight, "onnx::Conv_12")],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize(
    "onnx_name, hint",
    [
        ("/c/Conv_output_0", "c_Conv_output_0"),
        ("onnx::Conv_12", "onnx_Conv_12"),
        ("1", "v1"),
        ("::", "v"),
        ("input.1", "input.1"),
        ("x y\u00e9z", "x_y_z"),
    ],
)
def test_ssa_names_of_onnx_names(onnx_name, hint):
    assert ssa_name(onnx_name) == hint


def test_exported_value_names_import_print_and_parse_back():
    model = exported_names_model()
    imported = import_onnx(model)
    assert imported.input_names == ["input.1"]
    assert imported.output_names == ["output:0", "1"]
    text = str(imported.module)
    assert "%input.1: tensor<1x3x5x5xf32>" in text
    assert "%onnx_Conv = graph.constant" in text and "%c_Conv_output = graph.conv" in text
    # `a/b` and `a:b` share a hint; the printer numbers the second
    assert "%a_b = graph.neg" in text and "%a_b_1 = graph.abs" in text
    reparsed = Parser(make_context(), text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    x = random_inputs(model)
    expected = run_onnxruntime(model, x)
    for actual, wanted in zip(run_graph(reparsed, x), expected, strict=True):
        np.testing.assert_allclose(actual, wanted, rtol=1e-5, atol=1e-5)


def test_exported_value_names_compile_and_keep_onnx_names():
    model = exported_names_model()
    compiled = strato.compile(model)
    assert compiled.input_names == ["input.1"]
    assert compiled.output_names == ["output:0", "1"]
    x = random_inputs(model, seed=3)
    expected = run_onnxruntime(model, x)
    for actual, wanted in zip(compiled(*x), expected, strict=True):
        np.testing.assert_allclose(actual, wanted, rtol=1e-5, atol=1e-5)
    outputs = prepare(model).run({"input.1": x[0]})
    np.testing.assert_allclose(outputs["output:0"], expected[0], rtol=1e-5, atol=1e-5)


def test_split_halves_through_their_own_ops_into_concat_compile():
    """Split -> Relu on each half -> Concat: each half is read by an op outside the
    split's kernel, which the concat then reads back."""
    nodes = [
        helper.make_node("Split", ["x", "sizes"], ["/s/a", "/s/b"], axis=1),
        helper.make_node("Relu", ["/s/a"], ["ra"]),
        helper.make_node("Sigmoid", ["/s/b"], ["rb"]),
        helper.make_node("Concat", ["rb", "ra"], ["y"], axis=1),
    ]
    model = make_model(
        nodes, {"x": [2, 6, 3]}, {"y": [2, 6, 3]}, {"sizes": np.array([2, 4], np.int64)}
    )
    x = random_inputs(model)
    (actual,) = strato.compile(model)(*x)
    np.testing.assert_allclose(actual, run_onnxruntime(model, x)[0], rtol=1e-5, atol=1e-6)


def test_size_is_the_static_element_count():
    model = make_model(
        [
            helper.make_node("Size", ["x"], ["n"]),
            helper.make_node("Cast", ["n"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["x", "f"], ["y"]),
        ],
        {"x": [2, 3, 4]},
        {"y": [2, 3, 4]},
    )
    assert ops_of(import_model(model)) == ["graph.constant", "graph.mul"]
    assert_matches_onnxruntime(model)


def test_outputs_declared_without_a_shape_get_the_inferred_one():
    # legal for onnxruntime, refused by ONNX's checker: outputs typed but not shaped
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])
    model = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
            [
                helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                helper.make_tensor_value_info("i", TensorProto.INT64, None),
            ],
        ),
        opset_imports=[helper.make_opsetid("", 19)],
    )
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    values, indices = strato.compile(model)(x)
    assert values.shape == indices.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(values[0, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(indices[0, 1], [[21, 23], [29, 31]])


def test_other_checker_errors_stay_diagnostics():
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", 19)],
    )
    model.graph.node[0].input[0] = "nowhere"
    with pytest.raises(ModelImportError, match="nowhere"):
        import_onnx(model)
