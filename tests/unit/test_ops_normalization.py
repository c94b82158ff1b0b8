"""Normalization operators (softmax, layer_norm, batch_norm): ONNX import against
onnxruntime through the graph interpreter, the staged strategies through the te and loop
interpreters and the LLVM JIT (numerically stable, within 1e-5 of onnxruntime), import
diagnostics, verifier errors, pattern kinds and fusion."""

from __future__ import annotations

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
from strato.dialects import graph, te
from strato.frontends.onnx import import_onnx
from strato.frontends.onnx.conversion import NodeContext
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")


def one_node_model(
    op_type: str,
    inputs: dict[str, np.ndarray],
    initializers: dict[str, np.ndarray] | None = None,
    outputs: dict[str, tuple[int, ...]] | None = None,
    *,
    node_inputs: list[str] | None = None,
    opset: int = 17,
    **attributes,
) -> onnx.ModelProto:
    """One `op_type` node reading `inputs` (graph inputs), then `initializers`; its
    outputs are `outputs` (name -> shape), by default one output y shaped like the first
    input."""
    initializers = initializers or {}
    first = next(iter({**inputs, **initializers}.values()))
    outputs = outputs or {"y": first.shape}
    names = node_inputs if node_inputs is not None else [*inputs, *initializers]
    node = helper.make_node(op_type, names, list(outputs), name="node", **attributes)
    onnx_graph = helper.make_graph(
        [node],
        "one_node",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items() if n],
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


def normal(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


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


def check_everywhere(model: onnx.ModelProto, inputs: dict[str, np.ndarray], lowered: bool):
    expected = onnxruntime_outputs(model, inputs)
    imported = import_onnx(model)
    assert_close(run_graph(imported.module, list(inputs.values())), expected, what="graph")
    if lowered:
        for level, actual in lowered_results(model, list(inputs.values())).items():
            assert_close(actual, expected, what=level)


# -- instance and group normalization ----------------------------------------------------

INSTANCE_NORM_CASES = {
    "nchw": ((2, 3, 4, 5), {}, True),
    "ncw_epsilon": ((1, 4, 6), {"epsilon": 0.1}, False),
    "ncdhw": ((1, 2, 2, 3, 2), {}, False),
}


@pytest.mark.parametrize("name", INSTANCE_NORM_CASES)
def test_instance_norm_matches_onnxruntime(name):
    shape, attributes, lowered = INSTANCE_NORM_CASES[name]
    x = normal(*shape, scale=3.0)
    params = {"scale": normal(shape[1], seed=1), "B": normal(shape[1], seed=2)}
    model = one_node_model("InstanceNormalization", {"x": x}, params, **attributes)
    check_everywhere(model, {"x": x}, lowered)


GROUP_NORM_CASES = {
    "two_groups": ((2, 4, 3, 3), 2, 21, True),
    "one_group": ((1, 3, 5), 1, 21, False),
    "group_per_channel": ((2, 3, 2, 2), 3, 21, False),
    "three_groups": ((2, 6, 2, 3), 3, 21, True),
}


@pytest.mark.parametrize("name", GROUP_NORM_CASES)
def test_group_norm_matches_onnxruntime(name):
    shape, groups, opset, lowered = GROUP_NORM_CASES[name]
    x = normal(*shape, scale=2.0)
    params = {"scale": normal(shape[1], seed=1), "bias": normal(shape[1], seed=2)}
    model = one_node_model(
        "GroupNormalization", {"x": x}, params, opset=opset, num_groups=groups, epsilon=1e-3
    )
    check_everywhere(model, {"x": x}, lowered)


def test_instance_and_group_norm_are_layer_norms():
    x = normal(2, 4, 3, 3)
    params = {"scale": normal(4), "B": normal(4)}
    model = one_node_model("InstanceNormalization", {"x": x}, params)
    ops = [op.name for op in import_onnx(model).function.body.block.ops]
    assert "graph.layer_norm" in ops and "graph.reduce_mean" not in ops


@pytest.mark.parametrize(
    "op_type, shape, params, attributes, message",
    [
        ("GroupNormalization", (1, 6, 2), 6, {"num_groups": 4}, "num_groups=4 does not divide the 6 channels"),
        ("GroupNormalization", (1, 6, 2), 3, {"num_groups": 3}, r"scale must have shape \[6\] \(one value a channel\)"),
        ("InstanceNormalization", (2, 3), 3, {}, r"input must have rank >= 3"),
        ("InstanceNormalization", (2, 3, 4), 2, {}, r"scale must have shape \[3\]"),
    ],
)
def test_instance_and_group_norm_diagnostics(op_type, shape, params, attributes, message):
    x = normal(*shape)
    names = ("scale", "B") if op_type == "InstanceNormalization" else ("scale", "bias")
    initializers = {n: normal(params, seed=k) for k, n in enumerate(names)}
    model = one_node_model(op_type, {"x": x}, initializers, opset=21, **attributes)
    with pytest.raises(ModelImportError, match=rf"node 'node' \({op_type}\): {message}"):
        import_onnx(model)


# -- softmax ---------------------------------------------------------------------------

SOFTMAX_CASES = {
    "last_axis": ((3, 4, 5), {}, True),
    "axis_0": ((3, 4, 5), {"axis": 0}, True),
    "axis_1": ((3, 4, 5), {"axis": 1}, False),
    "negative_axis": ((3, 4, 5), {"axis": -2}, False),
    "vector": ((7,), {}, True),
}


@pytest.mark.parametrize("name", SOFTMAX_CASES)
def test_softmax_matches_onnxruntime(name):
    shape, attributes, lowered = SOFTMAX_CASES[name]
    inputs = {"x": normal(*shape, scale=3.0)}
    check_everywhere(one_node_model("Softmax", inputs, **attributes), inputs, lowered)


def test_softmax_of_large_numbers_is_stable():
    """exp of the raw inputs would overflow; the max-shifted form does not."""
    x = np.array([[1000.0, 1001.0, 1002.0, 995.0], [-3000.0, -3001.0, 88.0, 89.0]], np.float32)
    inputs = {"x": x}
    model = one_node_model("Softmax", inputs)
    (actual,) = strato.compile(model)(x)
    assert np.all(np.isfinite(actual))
    assert_close([actual], onnxruntime_outputs(model, inputs))


def test_compiled_softmax_within_1e5_of_onnxruntime_on_a_wide_row():
    x = normal(4, 1000, scale=8.0)
    model = one_node_model("Softmax", {"x": x})
    (actual,) = strato.compile(model)(x)
    (expected,) = onnxruntime_outputs(model, {"x": x})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-12)


def test_old_opsets_normalize_over_every_axis_from_axis_on(monkeypatch):
    """Before opset 13 the input is coerced to 2D at `axis` (default 1)."""
    monkeypatch.setattr(NodeContext, "opset_version", 11)
    for attributes in ({}, {"axis": 2}, {"axis": 0}):
        inputs = {"x": normal(2, 3, 4, scale=2.0)}
        model = one_node_model("Softmax", inputs, opset=11, **attributes)
        (op,) = [o for o in import_onnx(model).module.walk() if isinstance(o, graph.SoftmaxOp)]
        axis = attributes.get("axis", 1)
        assert op.reduced_axes == tuple(range(axis, 3))
        check_everywhere(model, inputs, lowered=axis == 1)


def test_softmax_axis_out_of_range_is_a_diagnostic():
    model = one_node_model("Softmax", {"x": normal(2, 3)}, axis=1)
    model.graph.node[0].attribute[0].i = 2
    with pytest.raises(ModelImportError, match=r"\(Softmax\): attribute axis=2 out of range"):
        import_onnx(model)


def test_softmax_stages():
    module = import_onnx(one_node_model("Softmax", {"x": normal(2, 3)})).module
    run_pipeline(make_context(), module, "convert-graph-to-te")
    (primitive,) = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    stages = [op for op in primitive.body.block.ops if isinstance(op, te.StageOp)]
    names = [s.stage.data for s in stages]
    assert names == ["softmax_max", "softmax_exp", "softmax_sum", "softmax_inverse", "softmax"]
    assert [type(s) for s in stages] == [
        te.ReduceOp, te.ComputeOp, te.ReduceOp, te.ComputeOp, te.ComputeOp
    ]  # fmt: skip
    # the reductions, and the sum's inverse, keep the reduced axis with size 1
    assert stages[0].tensor_type.get_shape() == (2, 1)
    assert stages[3].tensor_type.get_shape() == (2, 1)


# -- layer normalization -------------------------------------------------------------


def layer_norm_model(
    shape: tuple[int, ...],
    axis: int = -1,
    *,
    bias: bool = True,
    stats: bool = False,
    epsilon: float | None = None,
    params_as_inputs: bool = False,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    normalized = shape[axis % len(shape) :]
    params = {"scale": normal(*normalized, seed=1) + 1.0}
    if bias:
        params["bias"] = normal(*normalized, seed=2)
    inputs = {"x": normal(*shape, scale=2.0) + 0.5}
    outputs = {"y": shape}
    if stats:
        kept = tuple(n if d < axis % len(shape) else 1 for d, n in enumerate(shape))
        outputs |= {"mean": kept, "inv_std_dev": kept}
    attributes = {"axis": axis}
    if epsilon is not None:
        attributes["epsilon"] = epsilon
    if params_as_inputs:
        inputs |= params
        params = {}
    return one_node_model("LayerNormalization", inputs, params, outputs, **attributes), inputs


LAYER_NORM_CASES = {
    "last_axis": {"shape": (2, 3, 8)},
    "axis_1": {"shape": (2, 3, 4), "axis": 1},
    "axis_0": {"shape": (3, 4), "axis": 0},
    "no_bias": {"shape": (4, 6), "bias": False},
    "stats": {"shape": (2, 3, 4), "axis": -2, "stats": True},
    "epsilon": {"shape": (2, 5), "epsilon": 0.1, "stats": True},
    "params_as_inputs": {"shape": (3, 5), "params_as_inputs": True},
}


@pytest.mark.parametrize("name", LAYER_NORM_CASES)
def test_layer_norm_matches_onnxruntime(name):
    model, inputs = layer_norm_model(**LAYER_NORM_CASES[name])
    check_everywhere(model, inputs, lowered=name in ("last_axis", "stats", "params_as_inputs"))


def test_layer_norm_stats_are_extra_results():
    model, _ = layer_norm_model((2, 3, 4), axis=1, stats=True)
    (op,) = [o for o in import_onnx(model).module.walk() if isinstance(o, graph.LayerNormOp)]
    assert len(op.results) == 3 and op.mean is not None and op.inv_std_dev is not None
    assert op.mean.type.get_shape() == (2, 1, 1)
    model, _ = layer_norm_model((2, 3, 4))
    (op,) = [o for o in import_onnx(model).module.walk() if isinstance(o, graph.LayerNormOp)]
    assert len(op.results) == 1 and op.mean is None


def test_compiled_layer_norm_within_1e5_of_onnxruntime():
    model, inputs = layer_norm_model((4, 768), stats=True)
    inputs["x"] = inputs["x"] * 30.0 + 100.0  # a large mean: the two-pass variance holds
    actual = strato.compile(model)(inputs["x"])
    assert_close(actual, onnxruntime_outputs(model, inputs), rtol=1e-5, atol=1e-5)


def test_layer_norm_stash_type_is_a_diagnostic():
    model, _ = layer_norm_model((2, 3))
    model.graph.node[0].attribute.append(helper.make_attribute("stash_type", 2))
    with pytest.raises(ModelImportError, match=r"attribute stash_type=2 is not supported"):
        import_onnx(model)


def test_layer_norm_scale_must_broadcast_to_the_normalized_shape():
    inputs = {"x": normal(2, 3, 4)}
    model = one_node_model("LayerNormalization", inputs, {"scale": normal(3)}, axis=1)
    with pytest.raises(ModelImportError, match=r"scale of shape \[3\] does not broadcast"):
        import_onnx(model)


# -- batch normalization ------------------------------------------------------------


def batch_norm_model(shape: tuple[int, ...], *, params_as_inputs: bool = False, **attributes):
    channels = shape[1]
    rng = np.random.default_rng(7)
    params = {
        "scale": rng.uniform(0.5, 1.5, channels).astype(np.float32),
        "bias": rng.normal(0, 1, channels).astype(np.float32),
        "mean": rng.normal(0, 1, channels).astype(np.float32),
        "var": rng.uniform(0.2, 2.0, channels).astype(np.float32),
    }
    inputs = {"x": normal(*shape, scale=2.0)}
    if params_as_inputs:
        inputs |= params
        params = {}
    return one_node_model("BatchNormalization", inputs, params, opset=15, **attributes), inputs


BATCH_NORM_CASES = {
    "nchw": {"shape": (2, 3, 4, 5)},
    "nc": {"shape": (4, 3)},
    "ncw": {"shape": (1, 6, 7), "epsilon": 0.01},
    "params_as_inputs": {"shape": (2, 3, 2, 2), "params_as_inputs": True},
}


@pytest.mark.parametrize("name", BATCH_NORM_CASES)
def test_batch_norm_matches_onnxruntime(name):
    model, inputs = batch_norm_model(**BATCH_NORM_CASES[name])
    check_everywhere(model, inputs, lowered=name in ("nchw", "params_as_inputs"))


def with_running_statistics(model: onnx.ModelProto, names=("running_mean", "running_var")):
    """`model` with BatchNormalization's optional outputs `names` ("" skips one)."""
    node = model.graph.node[0]
    node.output.extend(names)
    channels = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    model.graph.output.extend(
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [channels]) for n in names if n]
    )
    return model


TRAINING_CASES = {
    "nchw": ({"shape": (2, 3, 4, 5)}, True),
    "nc": ({"shape": (4, 3), "epsilon": 0.01, "momentum": 0.5}, False),
    "params_as_inputs": ({"shape": (2, 3, 2, 2), "params_as_inputs": True}, True),
}


@pytest.mark.parametrize("name", TRAINING_CASES)
def test_batch_norm_training_mode_matches_onnxruntime(name):
    """training_mode=1 normalizes with the batch mean and biased variance and updates
    the running statistics with `momentum`."""
    attributes, lowered = TRAINING_CASES[name]
    model, inputs = batch_norm_model(**attributes, training_mode=1)
    check_everywhere(with_running_statistics(model), inputs, lowered=lowered)


@pytest.mark.parametrize("names", [("", "running_var"), ("running_mean", "")])
def test_batch_norm_training_mode_with_one_running_statistic(names):
    """Only the named statistic is computed; onnxruntime (which crashes on the skipped
    output) gives the expected values from the model with both."""
    model, inputs = batch_norm_model((2, 3, 2, 2), training_mode=1)
    y, *statistics = onnxruntime_outputs(with_running_statistics(model), inputs)
    expected = [y] + [s for name, s in zip(names, statistics, strict=True) if name]
    model, _ = batch_norm_model((2, 3, 2, 2), training_mode=1)
    model = with_running_statistics(model, names)
    assert_close(run_graph(import_onnx(model).module, [inputs["x"]]), expected, what="graph")
    for level, actual in lowered_results(model, [inputs["x"]]).items():
        assert_close(actual, expected, what=level)


def test_batch_norm_training_mode_is_composed_of_graph_ops():
    model, _ = batch_norm_model((2, 3, 2, 2), training_mode=1)
    names = {op.name for op in import_onnx(with_running_statistics(model)).module.walk()}
    assert "graph.batch_norm" not in names
    assert {"graph.reduce_mean", "graph.sub", "graph.sqrt", "graph.div"} <= names


def test_batch_norm_training_mode_of_constants_is_folded():
    model, inputs = batch_norm_model((2, 3, 2, 2), training_mode=1)
    expected = onnxruntime_outputs(with_running_statistics(model), inputs)
    model.graph.initializer.append(numpy_helper.from_array(inputs["x"], "x"))
    del model.graph.input[0]
    module = import_onnx(model).module
    assert {op.name for op in module.walk() if op.name.startswith("graph.")} == {"graph.constant"}
    assert_close(run_graph(module, []), expected)


def test_batch_norm_training_mode_with_other_parameter_types():
    """X in f64, scale and bias (T1) in f16, the running statistics (T2) in f32: Y is
    computed in the wider type and is X's, each running statistic in T2."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 4))
    params = {
        "scale": rng.uniform(0.5, 1.5, 3).astype(np.float16),
        "B": rng.standard_normal(3).astype(np.float16),
        "mean": rng.standard_normal(3).astype(np.float32),
        "var": rng.uniform(0.5, 1.5, 3).astype(np.float32),
    }
    node = helper.make_node(
        "BatchNormalization", ["x", *params], ["y", "running_mean", "running_var"],
        training_mode=1, momentum=0.75,
    )  # fmt: skip
    graph_ = helper.make_graph(
        [node],
        "bn",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, x.shape)],
        [
            helper.make_tensor_value_info("y", TensorProto.DOUBLE, x.shape),
            helper.make_tensor_value_info("running_mean", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("running_var", TensorProto.FLOAT, [3]),
        ],
        [numpy_helper.from_array(v, k) for k, v in params.items()],
    )
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 15)])
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    view = (1, 3, 1, 1)
    y = (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-5)
    y = y * params["scale"].astype(np.float64).reshape(view) + params["B"].reshape(view)
    expected = [
        y,
        (params["mean"] * 0.75 + mean * 0.25).astype(np.float32),
        (params["var"] * 0.75 + var * 0.25).astype(np.float32),
    ]
    assert_close(run_graph(import_onnx(model).module, [x]), expected, what="graph")
    assert_close(strato.compile(model, cache=False)(x), expected, what="compiled")


def test_batch_norm_training_mode_other_values_are_a_diagnostic():
    model, _ = batch_norm_model((2, 3, 2, 2), training_mode=2)
    with pytest.raises(ModelImportError, match=r"attribute training_mode=2 is not supported"):
        import_onnx(model)


def test_batch_norm_running_statistics_outputs_are_a_diagnostic():
    model, _ = batch_norm_model((2, 3, 2, 2))
    node = model.graph.node[0]
    node.output.extend(["running_mean", "running_var"])
    model.graph.output.extend(
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in node.output[1:]]
    )
    with pytest.raises(ModelImportError, match=r"only output Y is supported"):
        import_onnx(model)


def test_batch_norm_parameter_shape_is_a_diagnostic():
    model, _ = batch_norm_model((2, 3, 2, 2))
    model.graph.initializer[3].CopyFrom(numpy_helper.from_array(np.ones(4, np.float32), "var"))
    with pytest.raises(ModelImportError):
        import_onnx(model)


def test_batch_norm_of_constants_is_folded():
    model, inputs = batch_norm_model((1, 3, 2, 2))
    # move x to the initializers: everything is known at import
    model.graph.initializer.append(numpy_helper.from_array(inputs["x"], "x"))
    del model.graph.input[0]
    module = import_onnx(model).module
    assert [op.name for op in module.walk() if op.name.startswith("graph.")] == ["graph.constant"]


# -- IR: pattern kinds, fusion, verifier, properties -----------------------------------------


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def test_pattern_kinds():
    assert graph.SoftmaxOp.PATTERN_KIND == graph.PatternKind.OUT_ELEMWISE_FUSABLE
    assert graph.LayerNormOp.PATTERN_KIND == graph.PatternKind.OUT_ELEMWISE_FUSABLE
    assert graph.BatchNormOp.PATTERN_KIND == graph.PatternKind.BROADCAST


FUSION = """
func.func @main(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %e = graph.exp %x : tensor<2x8xf32>
  %s = graph.softmax %e axes [1] : tensor<2x8xf32>
  %m = graph.mul %s, %g : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %l = graph.layer_norm %m scale %g axis 1 epsilon 1.000000e-05 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r = graph.relu %l : tensor<2x8xf32>
  func.return %r : tensor<2x8xf32>
}
"""


def test_element_wise_consumers_fuse_into_softmax_and_layer_norm():
    module = parse(FUSION)
    x, g = normal(2, 8), normal(8, seed=1)
    expected = run_graph(module, [x, g])
    run_pipeline(make_context(), module, "graph-fuse-ops")
    fused = [op for op in module.walk() if isinstance(op, graph.FusedOp)]
    assert [op.label.data for op in fused] == ["softmax_mul", "layer_norm_relu"]
    assert {op.pattern_kind for op in fused} == {graph.PatternKind.OUT_ELEMWISE_FUSABLE}
    assert_close(run_graph(module, [x, g]), expected)
    run_pipeline(make_context(), module, "convert-graph-to-te,convert-te-to-loops")
    assert_close(run_loops(module, [x, g]), expected)


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "%r = graph.softmax %x axes [] : tensor<2x3x4xf32>",
            "'graph.softmax' needs at least one axis",
        ),
        (
            "%r = graph.softmax %x axes [2, 1] : tensor<2x3x4xf32>",
            "'graph.softmax' axes [2, 1] must be sorted and distinct",
        ),
        (
            "%r = graph.softmax %x axes [3] : tensor<2x3x4xf32>",
            "'graph.softmax' axes [3] out of range for rank 3",
        ),
        (
            "%r = graph.layer_norm %x axis 3 epsilon 1.0e-05 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
            "'graph.layer_norm' axis 3 out of range for rank 3",
        ),
        (
            "%r = graph.layer_norm %x scale %v axis 1 epsilon 1.0e-05 : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>",
            "'graph.layer_norm' scale shape [3] does not broadcast to the normalized shape [3, 4]",
        ),
        (
            "%r = graph.layer_norm %x axis 1 epsilon -1.0 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>",
            "'graph.layer_norm' epsilon must not be negative",
        ),
        (
            "%r, %m = graph.layer_norm %x axis 1 epsilon 1.0e-05 : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>)",
            "'graph.layer_norm' has 1 or 3 results",
        ),
        (
            "%r, %m, %i = graph.layer_norm %x axis 1 epsilon 1.0e-05 : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)",
            "'graph.layer_norm' statistics shape [2, 3, 1] differs from [2, 1, 1]",
        ),
        (
            "%r = graph.batch_norm %x, %v, %v, %v, %v epsilon 1.0e-05 : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>",
            None,
        ),
        (
            "%r = graph.batch_norm %x, %w, %v, %v, %v epsilon 1.0e-05 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>",
            "'graph.batch_norm' scale must have shape [3] (one value a channel), got [4]",
        ),
        (
            "%r = graph.batch_norm %w, %w, %w, %w, %w epsilon 1.0e-05 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
            "'graph.batch_norm' input must have rank >= 2 (N, C, ...), got rank 1",
        ),
    ],
)
def test_verifier(body, message):
    text = f"""
    func.func @f(%x: tensor<2x3x4xf32>, %v: tensor<3xf32>, %w: tensor<4xf32>) {{
      {body}
      func.return
    }}"""
    if message is None:
        parse(text)
        return
    with pytest.raises(VerifyException) as info:
        parse(text)
    assert message in str(info.value)


# -- property: the staged strategies compute the reference semantics ---------------------


@st.composite
def shapes_and_axes(draw):
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
    return shape, axes


def tensor(shape) -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + "f32>"


@given(case=shapes_and_axes(), seed=st.integers(0, 2**16), stats=st.booleans())
def test_strategies_agree_with_reference_semantics(case, seed, stats):
    shape, axes = case
    t = tensor(shape)
    axis = axes[0]
    kept = tensor([n if d < axis else 1 for d, n in enumerate(shape)])
    params = tensor(shape[axis:])
    results = f"({t}, {kept}, {kept})" if stats else t
    names = "%l, %m, %i" if stats else "%l"
    text = f"""
    func.func @main(%x: {t}, %g: {params}) -> ({t}, {t}) {{
      %s = graph.softmax %x axes {axes} : {t}
      {names} = graph.layer_norm %s scale %g bias %g axis {axis} epsilon 1.000000e-03 : ({t}, {params}, {params}) -> {results}
      func.return %s, %l : {t}, {t}
    }}"""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    g = rng.standard_normal(shape[axis:]).astype(np.float32)
    expected = run_graph(parse(text), [x, g])
    module = parse(text)
    run_pipeline(make_context(), module, "convert-graph-to-te")
    for actual, wanted in zip(run_te(module, [x, g]), expected, strict=True):
        np.testing.assert_allclose(actual, wanted, rtol=1e-4, atol=1e-5)


# -- ONNX node tests --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_instance_and_group_norm_onnx_node_tests(mode: str):
    from test_ops_layout import check_node_tests

    check_node_tests(r"^test_(instancenorm|group_normalization)", mode, {})
