"""Reductions: ONNX import of ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSumExp and
ArgMax/ArgMin against onnxruntime through the graph
interpreter and the LLVM JIT (axes as attribute or input, keepdims, empty axes,
noop_with_empty_axes), the strategy through the te and loop interpreters, fusion with
injective producers, empty reductions, verifier errors and ONNX's own node tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

# helpers shared with the layout tests (pytest puts this directory on sys.path)
from test_ops_layout import (
    check,
    check_node_tests,
    declare_output_shapes,
    floats,
    ints,
    model_of,
    ops_of,
)
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import strato
from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph
from strato.dialects.graph.reduce import top_k
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline

X = floats(2, 3, 4)

REDUCTIONS = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSumExp",
]

# the first opset where the axes of each reduction are an input
AXES_INPUT_OPSET = {name: 18 for name in REDUCTIONS} | {"ReduceSum": 13}

NUMPY_REDUCTIONS = {
    graph.ReduceSumOp: np.sum,
    graph.ReduceMeanOp: np.mean,
    graph.ReduceMaxOp: np.max,
    graph.ReduceMinOp: np.min,
    graph.ReduceProdOp: np.prod,
    graph.ReduceL1Op: lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims),
    graph.ReduceL2Op: lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
    graph.ReduceSumSquareOp: lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
    graph.ReduceLogSumExpOp: lambda x, axis, keepdims: np.log(
        np.sum(np.exp(x), axis=axis, keepdims=keepdims)
    ),
}


def reduce_model(op_type: str, axes: list[int] | None, *, as_input: bool, **attributes):
    if as_input:
        initializers = {} if axes is None else {"axes": ints(*axes)}
        return model_of(op_type, {"x": X}, initializers, opset=18, **attributes)
    if axes is not None:
        attributes["axes"] = axes
    return model_of(op_type, {"x": X}, opset=AXES_INPUT_OPSET[op_type] - 1, **attributes)


@pytest.mark.parametrize("op_type", REDUCTIONS)
@pytest.mark.parametrize("as_input", [False, True])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], [2, -3], None])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions(op_type: str, as_input: bool, axes: list[int] | None, keepdims: int):
    check(reduce_model(op_type, axes, as_input=as_input, keepdims=keepdims), [X], rtol=1e-6)


@pytest.mark.parametrize("op_type", REDUCTIONS)
def test_empty_axes_input_reduces_everything(op_type: str):
    model = model_of(op_type, {"x": X}, {"axes": ints()}, opset=18, keepdims=0)
    check(model, [X], rtol=1e-6)


@pytest.mark.parametrize("op_type", REDUCTIONS)
def test_noop_with_empty_axes_skips_the_combination(op_type: str):
    """The identity, or the norm's element map (|x|, x * x) as ONNX's function bodies say."""
    model = model_of(op_type, {"x": X}, opset=18, noop_with_empty_axes=1)
    maps = {"ReduceL1": ["graph.abs"], "ReduceL2": ["graph.abs"], "ReduceSumSquare": ["graph.mul"]}
    assert ops_of(model) == maps.get(op_type, [])
    check(model, [X])


def test_reductions_become_one_graph_op():
    model = reduce_model("ReduceMean", [2, 0], as_input=True, keepdims=1)
    function = import_onnx(model).function
    (op,) = [op for op in function.body.block.ops if isinstance(op, graph.ReductionOp)]
    assert isinstance(op, graph.ReduceMeanOp)
    assert op.axis_values == (0, 2) and op.keeps_dims


def test_reductions_of_constants_fold_at_import():
    model = model_of("ReduceSum", {"x": X}, {"c": X}, node_inputs=["c"], opset=13)
    assert ops_of(model) == ["graph.constant"]


def test_reduce_max_propagates_nan():
    """As ONNX's reference (numpy) does; onnxruntime skips NaN, so numpy is the oracle."""
    x = X.copy()
    x[1, 2, 3] = np.nan
    model = reduce_model("ReduceMax", [2], as_input=True, keepdims=0)
    expected = np.max(x, axis=2)
    assert np.isnan(expected[1, 2])
    np.testing.assert_array_equal(run_graph(import_onnx(model).module, [x])[0], expected)
    np.testing.assert_array_equal(strato.compile(model)(x)[0], expected)


@pytest.mark.parametrize(
    "model, message",
    [
        (reduce_model("ReduceSum", [3], as_input=True), r"axis 3 is out of range for rank 3"),
        (reduce_model("ReduceMax", [1, -2], as_input=True), r"axes \[1, -2\] repeat an axis"),
    ],
)
def test_diagnostics_name_the_node(model, message: str):
    with pytest.raises(ModelImportError, match=r"node 'node' \(\w+\): " + message):
        import_onnx(model)


# -- the strategy ---------------------------------------------------------------


def reduction_module(op_class, shape, axes, keepdims) -> ModuleOp:
    block = Block(arg_types=[TensorType(f32, shape)])
    op = op_class(block.args[0], axes, keepdims)
    block.add_ops([op, func.ReturnOp(op.result)])
    function = func.FuncOp("main", ([block.args[0].type], [op.result.type]), Region(block))
    module = ModuleOp([function])
    module.verify()
    return module


@given(
    op_class=st.sampled_from(list(NUMPY_REDUCTIONS)),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    keepdims=st.booleans(),
    data=st.data(),
)
def test_strategy_matches_numpy(op_class, shape, keepdims, data):
    """Every reduction, as the graph interpreter and the te strategy compute it."""
    axes = data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    numpy_reduction = NUMPY_REDUCTIONS[op_class]
    expected = numpy_reduction(x, axis=tuple(sorted(axes)), keepdims=keepdims)
    module = reduction_module(op_class, shape, axes, keepdims)
    np.testing.assert_allclose(run_graph(module, [x])[0], expected, rtol=1e-5, atol=1e-6)
    ctx = make_context()
    run_pipeline(ctx, module, "convert-graph-to-te")
    np.testing.assert_allclose(run_te(module, [x])[0], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "op_class, value",
    [
        (graph.ReduceSumOp, 0.0),
        (graph.ReduceMeanOp, np.nan),
        (graph.ReduceMaxOp, -np.inf),
        (graph.ReduceMinOp, np.inf),
        (graph.ReduceProdOp, 1.0),
        (graph.ReduceL1Op, 0.0),
        (graph.ReduceL2Op, 0.0),
        (graph.ReduceSumSquareOp, 0.0),
        (graph.ReduceLogSumExpOp, -np.inf),
    ],
)
def test_empty_reductions_give_the_identity(op_class, value):
    module = reduction_module(op_class, [2, 0, 3], [1], True)
    x = np.zeros((2, 0, 3), np.float32)
    expected = np.full((2, 1, 3), value, np.float32)
    np.testing.assert_array_equal(run_graph(module, [x])[0], expected)
    ctx = make_context()
    run_pipeline(ctx, module, "convert-graph-to-te,convert-te-to-loops")
    np.testing.assert_array_equal(run_loops(module, [x])[0], expected)


def test_transpose_fuses_into_the_reduction():
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
        helper.make_node("ReduceMean", ["t"], ["y0"], axes=[0], keepdims=0),
    ]
    onnx_graph = helper.make_graph(
        nodes,
        "transpose_mean",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model = declare_output_shapes(model)
    module = import_onnx(model).module
    run_pipeline(make_context(), module, "graph-fuse-ops")
    fused = [op for op in module.walk() if isinstance(op, graph.FusedOp)]
    assert [f.pattern_kind for f in fused] == [graph.PatternKind.REDUCTION]
    check(model, [X], rtol=1e-6)


def test_integer_mean_truncates_toward_zero_like_numpy():
    x = np.array([[-3, -4], [5, 2]], dtype=np.int32)
    op_class = graph.ReduceMeanOp
    assert op_class.reduce(x, (1,)).astype(np.int32).tolist() == [-3, 3]


def test_reductions_are_the_reduction_kind():
    for op in (*NUMPY_REDUCTIONS, graph.ArgMaxOp, graph.ArgMinOp):
        assert op.PATTERN_KIND == graph.PatternKind.REDUCTION


def test_log_sum_exp_does_not_overflow():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1001.0]], np.float32)
    model = model_of("ReduceLogSumExp", {"x": x}, {"axes": ints(1)}, opset=18, keepdims=0)
    expected = np.array([1000.0 + np.log(2.0), -1000.0 + np.log1p(np.exp(-1.0))], np.float32)
    np.testing.assert_allclose(run_graph(import_onnx(model).module, [x])[0], expected, rtol=1e-6)
    np.testing.assert_allclose(strato.compile(model)(x)[0], expected, rtol=1e-6)


def test_l2_of_integers_is_a_diagnostic():
    x = np.ones((2, 3), np.int32)
    node = helper.make_node("ReduceL2", ["x"], ["y"], name="node", keepdims=0)
    onnx_graph = helper.make_graph(
        [node],
        "l2",
        [helper.make_tensor_value_info("x", TensorProto.INT32, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [])],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelImportError, match=r"node 'node' \(ReduceL2\): ReduceL2 of i32"):
        import_onnx(model)


# -- ArgMax and ArgMin ------------------------------------------------------------

TIES = np.array([[[1, 3, 3, 0], [2, 2, 1, 1], [0, 0, 0, 0]]] * 2, np.float32)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("x", [X, TIES], ids=["random", "ties"])
def test_arg_reductions(op_type: str, axis: int, keepdims: int, last: int, x: np.ndarray):
    model = arg_model(op_type, x, axis=axis, keepdims=keepdims, select_last_index=last)
    check(model, [x])


def arg_model(op_type: str, x: np.ndarray, *, constant: bool = False, **attributes):
    """A one-node ArgMax/ArgMin model of input (or, with `constant`, initializer) x."""
    node = helper.make_node(op_type, ["x"], ["y"], name="node", **attributes)
    inputs = [] if constant else [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
    initializers = [numpy_helper.from_array(x, "x")] if constant else []
    onnx_graph = helper.make_graph(
        [node],
        "arg",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
        initializers,
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return declare_output_shapes(model)


def test_arg_max_of_integers_and_constants():
    x = np.array([[3, -7, 3], [0, 9, 9]], np.int32)
    module = Parser(
        make_context(),
        """
func.func @main(%a: tensor<2x3xi32>) -> tensor<2xi64> {
  %i = graph.arg_max %a axis 1 select_last_index : (tensor<2x3xi32>) -> tensor<2xi64>
  func.return %i : tensor<2xi64>
}""",
    ).parse_module()
    assert run_graph(module, [x])[0].tolist() == [2, 2]
    run_pipeline(make_context(), module, "convert-graph-to-te,convert-te-to-loops")
    assert run_loops(module, [x])[0].tolist() == [2, 2]
    folded = arg_model("ArgMin", X, constant=True, axis=2, keepdims=0)
    assert ops_of(folded) == ["graph.constant"]
    assert run_graph(import_onnx(folded).module, [])[0].tolist() == np.argmin(X, 2).tolist()


# -- TopK -------------------------------------------------------------------------


def top_k_model(x: np.ndarray, k: int, **attributes):
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="node", **attributes)
    onnx_graph = helper.make_graph(
        [node],
        "top_k",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)],
        [
            helper.make_tensor_value_info("values", helper.np_dtype_to_tensor_dtype(x.dtype), None),
            helper.make_tensor_value_info("indices", TensorProto.INT64, None),
        ],
        [numpy_helper.from_array(np.array([k], np.int64), "k")],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    return declare_output_shapes(model)


@pytest.mark.parametrize("axis, k", [(-1, 2), (0, 1), (1, 3), (2, 4), (1, 0)])
@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("x", [X, TIES, TIES.astype(np.int32)], ids=["random", "ties", "ints"])
def test_top_k(axis: int, k: int, largest: int, x: np.ndarray):
    check(top_k_model(x, k, axis=axis, largest=largest), [x])


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_ranks_nan_after_every_number(largest: int):
    # ordered comparisons alone leave NaN unranked: ranks stop being a permutation
    x = np.array(
        [[np.nan, 1, np.nan, 3, -np.inf, 2], [5, np.nan, 5, np.inf, 0, np.nan]], np.float32
    )
    model = top_k_model(x, 6, axis=1, largest=largest)
    expected = top_k(x, 1, 6, bool(largest))
    for level, (values, indices) in {
        "graph": run_graph(import_onnx(model).module, [x]),
        "llvm": strato.compile(model)(x),
    }.items():
        np.testing.assert_array_equal(indices, expected[1], err_msg=level)
        np.testing.assert_array_equal(values, expected[0], err_msg=level)
    assert expected[1][0, -1] == 2 and expected[1][1, -1] == 5  # NaNs last, by position


def test_top_k_is_one_opaque_op():
    (op,) = [
        op
        for op in import_onnx(top_k_model(X, 2, axis=1)).function.body.block.ops
        if isinstance(op, graph.TopKOp)
    ]
    assert op.k_value == 2 and op.is_largest and op.PATTERN_KIND == graph.PatternKind.OPAQUE


def test_top_k_with_a_runtime_k_is_a_diagnostic():
    model = top_k_model(X, 2, axis=1)
    model.graph.input.append(helper.make_tensor_value_info("k", TensorProto.INT64, [1]))
    del model.graph.initializer[:]
    with pytest.raises(ModelImportError, match=r"node 'node' \(TopK\): K \(input 'k'\) must be known"):
        import_onnx(model)


# -- CumSum -----------------------------------------------------------------------


def cum_sum_model(x: np.ndarray, axis: int, op_type: str = "CumSum", **attributes):
    node = helper.make_node(op_type, ["x", "axis"], ["y"], name="node", **attributes)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    onnx_graph = helper.make_graph(
        [node],
        "cum_sum",
        [helper.make_tensor_value_info("x", elem, x.shape)],
        [helper.make_tensor_value_info("y", elem, x.shape)],
        [numpy_helper.from_array(np.array(axis, np.int32), "axis")],
    )
    opset = 26 if op_type == "CumProd" else 14
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cum_sum(axis: int, exclusive: int, reverse: int):
    x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32)
    model = cum_sum_model(x, axis, exclusive=exclusive, reverse=reverse)
    check(model, [x], compiled=axis == 1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_cum_sum_of_integers_is_exact(dtype):
    x = np.arange(1, 13, dtype=dtype).reshape(3, 4)
    check(cum_sum_model(x, 1, reverse=1), [x])


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cum_prod(exclusive: int, reverse: int):
    """Against numpy (onnxruntime has no CumProd yet)."""
    x = np.random.default_rng(5).uniform(0.5, 1.5, (3, 4)).astype(np.float32)
    model = cum_sum_model(x, 1, "CumProd", exclusive=exclusive, reverse=reverse)
    expected = graph.cumprod(x, 1, bool(exclusive), bool(reverse))
    ordered = np.flip(x, 1) if reverse else x
    plain = np.cumprod(ordered.astype(np.float64), axis=1)
    if exclusive:
        plain = np.concatenate([np.ones((3, 1)), plain[:, :-1]], axis=1)
    np.testing.assert_allclose(expected, np.flip(plain, 1) if reverse else plain, rtol=1e-6)
    (interpreted,) = run_graph(import_onnx(model).module, [x])
    np.testing.assert_allclose(interpreted, expected, rtol=1e-6)
    (compiled,) = strato.compile(model)(x)
    np.testing.assert_allclose(compiled, expected, rtol=1e-6)


def test_cum_sum_lowers_through_te_and_loops():
    text = """
func.func @main(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %c = graph.cumsum %a axis 1 exclusive reverse : tensor<2x5xf32>
  func.return %c : tensor<2x5xf32>
}"""
    x = np.random.default_rng(4).standard_normal((2, 5)).astype(np.float32)
    expected = np.flip(np.cumsum(np.flip(x, 1), 1), 1) - x
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    np.testing.assert_allclose(run_graph(module, [x])[0], expected, rtol=1e-6, atol=1e-6)
    run_pipeline(ctx, module, "convert-graph-to-te")
    np.testing.assert_allclose(run_te(module, [x])[0], expected, rtol=1e-6, atol=1e-6)
    run_pipeline(ctx, module, "convert-te-to-loops")
    np.testing.assert_allclose(run_loops(module, [x])[0], expected, rtol=1e-6, atol=1e-6)


def test_cum_sum_with_a_runtime_axis_is_a_diagnostic():
    x = np.ones((2, 3), np.float32)
    model = cum_sum_model(x, 0)
    model.graph.input.append(helper.make_tensor_value_info("axis", TensorProto.INT32, []))
    del model.graph.initializer[:]
    with pytest.raises(ModelImportError, match=r"axis \(input 'axis'\) must be known"):
        import_onnx(model)


INTEGER_REDUCTIONS = """
func.func @main(%a: tensor<2x3xi32>, %b: tensor<2x3xi1>, %c: tensor<2x0xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi1>, tensor<2x1xi32>, tensor<2x1xi32>) {
  %s = graph.reduce_sum %a [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  %m = graph.reduce_mean %a [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  %x = graph.reduce_max %a [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  %any = graph.reduce_max %b [1] : (tensor<2x3xi1>) -> tensor<2xi1>
  %e = graph.reduce_max %c [1] keepdims : (tensor<2x0xi32>) -> tensor<2x1xi32>
  %f = graph.reduce_mean %c [1] keepdims : (tensor<2x0xi32>) -> tensor<2x1xi32>
  func.return %s, %m, %x, %any, %e, %f : tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi1>, tensor<2x1xi32>, tensor<2x1xi32>
}"""


def test_integer_and_bool_reductions_lower():
    a = np.array([[-3, -4, 1], [5, 2, 9]], np.int32)
    b = np.array([[False, True, False], [False, False, False]])
    c = np.zeros((2, 0), np.int32)
    lowest = np.iinfo(np.int32).min
    expected = [[-6, 16], [-2, 5], [1, 9], [True, False], [[lowest], [lowest]], [[0], [0]]]
    ctx = make_context()
    module = Parser(ctx, INTEGER_REDUCTIONS).parse_module()
    assert [r.tolist() for r in run_graph(module, [a, b, c])] == expected
    run_pipeline(ctx, module, "convert-graph-to-te")
    assert [r.tolist() for r in run_te(module, [a, b, c])] == expected
    run_pipeline(ctx, module, "convert-te-to-loops")
    assert [r.tolist() for r in run_loops(module, [a, b, c])] == expected


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "graph.reduce_sum %a [] : (tensor<2x3xf32>) -> tensor<2x3xf32>",
            "needs at least one axis",
        ),
        ("graph.reduce_max %a [1, 0] : (tensor<2x3xf32>) -> tensor<f32>", "must be increasing"),
        ("graph.reduce_mean %a [2] : (tensor<2x3xf32>) -> tensor<2x3xf32>", "out of range"),
        (
            "graph.arg_max %a axis 2 : (tensor<2x3xf32>) -> tensor<2xi64>",
            "'graph.arg_max' axis 2 is out of range for rank 2",
        ),
        (
            "graph.arg_min %a axis 1 : (tensor<2x3xf32>) -> tensor<2xi32>",
            "result must be an i64 tensor",
        ),
        (
            "graph.arg_min %a axis 1 keepdims : (tensor<2x3xf32>) -> tensor<2xi64>",
            r"result shape \[2\] does not match the inferred shape \[2, 1\]",
        ),
        (
            "graph.reduce_sum %a [1] keepdims : (tensor<2x3xf32>) -> tensor<2xf32>",
            r"result shape \[2\] does not match the inferred shape \[2, 1\]",
        ),
        (
            "graph.cumsum %a axis 2 : tensor<2x3xf32>",
            "'graph.cumsum' axis 2 is out of range for rank 2",
        ),
    ],
)
def test_verifier_errors(body: str, message: str):
    text = f"""
func.func @main(%a: tensor<2x3xf32>) {{
  %r = {body}
  func.return
}}"""
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(VerifyException, match=message):
        module.verify()


# -- ONNX node tests --------------------------------------------------------------

REDUCE_NODE_TESTS = (
    r"^test_(reduce_(sum|mean|max|min|prod|l1|l2|log_sum_exp|sum_square)|arg(max|min)|top_k"
    r"|cumsum|cumprod)"
)

NEEDS_OTHER_WORK = {
    **dict.fromkeys(
        ["test_reduce_max_bool_inputs", "test_reduce_max_empty_set_bool"], "bool graph inputs"
    ),
    **dict.fromkeys(
        [
            "test_reduce_max_empty_set",
            "test_reduce_sum_empty_set",
            "test_reduce_sum_empty_set_non_reduced_axis_zero",
            "test_reduce_sum_square_empty_set_expanded",
        ],
        "graph inputs with a zero-sized dimension",
    ),
}


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_onnx_node_tests(mode: str):
    check_node_tests(REDUCE_NODE_TESTS, mode, NEEDS_OTHER_WORK)
