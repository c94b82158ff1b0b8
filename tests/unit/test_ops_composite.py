"""ONNX operators imported as compositions of graph ops (Mean, GlobalMaxPool, Hardmax,
Trilu, OneHot, ScatterElements): against onnx's reference evaluator through the graph
interpreter, with inputs known at import time and at run time, a few compiled, and the
import diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")


def model_of(
    op_type: str,
    inputs: dict[str, np.ndarray],
    output_shape: tuple[int, ...],
    output_dtype: np.dtype | type = np.float32,
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 18,
    **attributes,
) -> onnx.ModelProto:
    """One `op_type` node reading `inputs` (graph inputs), then `initializers`."""
    initializers = initializers or {}
    node = helper.make_node(op_type, [*inputs, *initializers], ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "composite",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for name, a in inputs.items()
        ],
        [
            helper.make_tensor_value_info(
                "y",
                helper.np_dtype_to_tensor_dtype(np.dtype(output_dtype)),
                output_shape,
            )
        ],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(
    model: onnx.ModelProto,
    inputs: dict[str, np.ndarray],
    compiled: bool = False,
    oracle: str = "reference",
):
    if oracle == "onnxruntime":
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        (expected,) = session.run(None, inputs)
    else:
        (expected,) = ReferenceEvaluator(model).run(None, inputs)
    imported = import_onnx(model)
    (actual,) = run_graph(imported.module, [inputs[n] for n in imported.input_names])
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    if compiled:
        (result,) = strato.compile(model)(*[inputs[n] for n in imported.input_names])
        np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-6)


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_mean_of_three_broadcast_inputs():
    inputs = {"a": normal(2, 3), "b": normal(3, seed=1), "c": normal(2, 1, seed=2)}
    check(model_of("Mean", inputs, (2, 3)), inputs, compiled=True)


def test_mean_of_one_input_is_that_input():
    inputs = {"a": normal(4)}
    check(model_of("Mean", inputs, (4,)), inputs)


def test_global_max_pool():
    inputs = {"x": normal(2, 3, 4, 5)}
    check(model_of("GlobalMaxPool", inputs, (2, 3, 1, 1)), inputs, compiled=True)


@pytest.mark.parametrize("opset, axis", [(13, None), (13, 0), (11, None), (11, 2)])
def test_hardmax_picks_the_first_maximum(opset, axis):
    x = np.round(normal(2, 3, 4) * 2)  # ties, of which the first wins
    attributes = {} if axis is None else {"axis": axis}
    model = model_of("Hardmax", {"x": x}, x.shape, opset=opset, **attributes)
    # onnx's reference evaluator has only the opset-13 semantics (one axis)
    oracle = "reference" if opset >= 13 else "onnxruntime"
    check(model, {"x": x}, compiled=opset == 13 and axis is None, oracle=oracle)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2])
def test_trilu(upper, k):
    x = normal(2, 4, 5)
    initializers = {} if k is None else {"k": np.array(k, np.int64)}
    model = model_of("Trilu", {"x": x}, x.shape, initializers=initializers, upper=upper)
    check(model, {"x": x}, compiled=upper == 1 and k == 2)


def test_trilu_of_an_integer_tensor():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    check(model_of("Trilu", {"x": x}, x.shape, np.int64, upper=0), {"x": x})


def test_trilu_with_k_known_only_at_run_time_is_a_diagnostic():
    inputs = {"x": normal(3, 3), "k": np.array(1, np.int64)}
    with pytest.raises(ModelImportError, match=r"k \(input 'k'\) must be known"):
        import_onnx(model_of("Trilu", inputs, (3, 3)))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_of_run_time_indices(axis):
    indices = np.array([[0, 2, -1], [5, -4, 1]], np.int64)  # 5 and -4: out of range
    shape = [2, 3]
    shape.insert(axis % 3, 4)
    initializers = {
        "depth": np.array(4, np.int64),
        "values": np.array([2.0, 7.0], np.float32),
    }
    model = model_of(
        "OneHot",
        {"indices": indices},
        tuple(shape),
        initializers=initializers,
        axis=axis,
    )
    check(model, {"indices": indices}, compiled=axis == -1)


def test_one_hot_of_float_indices_and_run_time_values():
    inputs = {
        "indices": np.array([0.0, 2.0, 1.0], np.float32),
        "values": np.array([0, 1], np.int32),
    }
    model = model_of(
        "OneHot",
        {"indices": inputs["indices"]},
        (3, 3),
        np.int32,
        initializers={"depth": np.array(3.0, np.float32)},
    )
    # values at run time: move it from the initializers to the graph inputs
    node = model.graph.node[0]
    node.input.append("values")
    model.graph.input.append(
        helper.make_tensor_value_info("values", onnx.TensorProto.INT32, [2])
    )
    check(model, inputs)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_with_run_time_indices(reduction):
    data = normal(3, 4)
    indices = np.array([[1, -1], [0, 2], [3, 3]], np.int64)
    if reduction == "none":
        indices = np.array([[1, -1], [0, 2], [3, 0]], np.int64)
    updates = normal(3, 2, seed=1)
    inputs = {"data": data, "indices": indices, "updates": updates}
    model = model_of("ScatterElements", inputs, data.shape, axis=1, reduction=reduction)
    check(model, inputs, compiled=reduction == "add")


@pytest.mark.parametrize("reduction", ["none", "max"])
def test_scatter_elements_with_known_indices(reduction):
    data, updates = normal(4, 2), normal(2, 2, seed=1)
    indices = np.array([[3, 0], [-4, 1]], np.int64)
    model = model_of(
        "ScatterElements",
        {"data": data, "updates": updates},
        data.shape,
        initializers={"indices": indices},
        reduction=reduction,
    )
    # the node reads data, indices, updates in that order
    model.graph.node[0].input[:] = ["data", "indices", "updates"]
    check(model, {"data": data, "updates": updates})


def test_scatter_elements_with_out_of_range_known_indices_is_a_diagnostic():
    data, updates = normal(4, 2), normal(1, 2, seed=1)
    model = model_of(
        "ScatterElements",
        {"data": data, "updates": updates},
        data.shape,
        initializers={"indices": np.array([[4, 0]], np.int64)},
    )
    model.graph.node[0].input[:] = ["data", "indices", "updates"]
    with pytest.raises(ModelImportError, match="out of range"):
        import_onnx(model)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn(size):
    """Against the definition (onnx's reference evaluator sums the squares of the wrong
    channels and onnxruntime takes odd sizes only)."""
    x = normal(2, 6, 3, 3)
    model = model_of(
        "LRN", {"x": x}, x.shape, size=size, alpha=0.01, beta=0.6, bias=2.0
    )
    wide = x.astype(np.float64)
    before = (size - 1) // 2
    padded = np.pad(wide * wide, ((0, 0), (before, size - 1 - before), (0, 0), (0, 0)))
    square_sum = sum(padded[:, c : c + 6] for c in range(size))
    expected = (wide / (2.0 + 0.01 / size * square_sum) ** 0.6).astype(np.float32)
    (actual,) = run_graph(import_onnx(model).module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    if size == 3:
        (compiled,) = strato.compile(model)(x)
        np.testing.assert_allclose(compiled, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "p, attributes",
    [
        (1, {"kernel_shape": [2, 2]}),
        (2, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
        (3, {"kernel_shape": [2, 3], "dilations": [2, 1]}),
        (2, {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}),
    ],
)
def test_lp_pool(p, attributes):
    x = normal(1, 2, 6, 7)
    reference = ReferenceEvaluator(
        model_of("LpPool", {"x": x}, None, p=p, **attributes)
    )
    (expected,) = reference.run(None, {"x": x})
    model = model_of("LpPool", {"x": x}, expected.shape, p=p, **attributes)
    check(model, {"x": x}, compiled=p == 2)


def test_lp_pool_with_ceil_mode_is_a_diagnostic():
    x = normal(1, 1, 5, 5)
    model = model_of(
        "LpPool",
        {"x": x},
        (1, 1, 3, 3),
        kernel_shape=[2, 2],
        strides=[2, 2],
        ceil_mode=1,
    )
    with pytest.raises(ModelImportError, match="ceil_mode=1 is not supported"):
        import_onnx(model)


@pytest.mark.parametrize(
    "bins, dft_length, rate, low, high, dtype",
    [
        (8, 16, 8192, 0.0, 4096.0, np.float32),
        (10, 64, 16000, 100.0, 7000.0, np.float32),
        (4, 32, 22050, 20.0, 8000.0, np.float64),
    ],
)
def test_mel_weight_matrix_is_an_import_time_constant(
    bins, dft_length, rate, low, high, dtype
):
    scalars = {
        "num_mel_bins": np.array(bins, np.int64),
        "dft_length": np.array(dft_length, np.int64),
        "sample_rate": np.array(rate, np.int64),
        "lower_edge_hertz": np.array(low, dtype),
        "upper_edge_hertz": np.array(high, dtype),
    }
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(np.float32))
    model = model_of(
        "MelWeightMatrix",
        {},
        (dft_length // 2 + 1, bins),
        initializers=scalars,
        opset=17,
        output_datatype=elem,
    )
    (expected,) = ReferenceEvaluator(model).run(None, {})
    imported = import_onnx(model)
    assert [op.name for op in imported.function.body.block.ops] == [
        "graph.constant",
        "func.return",
    ]
    (actual,) = run_graph(imported.module, [])
    np.testing.assert_array_equal(actual, expected)


def test_max_unpool_inverts_max_pool():
    x = normal(2, 3, 4, 6)
    pool = helper.make_node(
        "MaxPool", ["x"], ["v", "i"], kernel_shape=[2, 2], strides=[2, 2]
    )
    unpool = helper.make_node(
        "MaxUnpool", ["v", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2]
    )
    graph = helper.make_graph(
        [pool, unpool],
        "unpool",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, x.shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    check(model, {"x": x}, compiled=True)


def test_max_unpool_into_a_larger_output_pads_at_the_end():
    x = np.array([[[[5.0, 6.0], [7.0, 8.0]]]], np.float32)
    indices = np.array([[[[5, 7], [13, 15]]]], np.int64)
    model = model_of(
        "MaxUnpool",
        {"x": x, "i": indices},
        (1, 1, 5, 5),
        initializers={"shape": np.array([1, 1, 5, 5], np.int64)},
        opset=11,
        kernel_shape=[2, 2],
        strides=[2, 2],
    )
    check(model, {"x": x, "i": indices})


@pytest.mark.parametrize(
    "image, block, attributes",
    [
        ([5, 5], [1, 5], {}),
        ([4, 6], [2, 2], {"strides": [2, 2]}),
        ([5, 5], [2, 2], {"pads": [1, 0, 1, 2], "dilations": [2, 1]}),
        ([3, 4, 5], [2, 2, 2], {}),
    ],
)
def test_col2im_sums_overlapping_blocks(image, block, attributes):
    rank = len(image)
    strides = attributes.get("strides", [1] * rank)
    dilations = attributes.get("dilations", [1] * rank)
    pads = attributes.get("pads", [0] * (2 * rank))
    counts = [
        (i + pads[d] + pads[d + rank] - (dl * (b - 1) + 1)) // s + 1
        for d, (i, b, s, dl) in enumerate(zip(image, block, strides, dilations))
    ]
    x = normal(2, 3 * int(np.prod(block)), int(np.prod(counts)))
    model = model_of(
        "Col2Im",
        {"x": x},
        (2, 3, *image),
        initializers={
            "image_shape": np.array(image, np.int64),
            "block_shape": np.array(block, np.int64),
        },
        **attributes,
    )
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    (actual,) = run_graph(import_onnx(model).module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    if rank == 2 and not pads[0]:
        (compiled,) = strato.compile(model)(x)
        np.testing.assert_allclose(compiled, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, -1])
def test_lp_normalization_with_a_zero_row(p, axis):
    x = normal(3, 4)
    x[1] = 0.0
    x[:, 2] = 0.0
    model = model_of("LpNormalization", {"x": x}, x.shape, p=p, axis=axis)
    norm = np.linalg.norm(x.astype(np.float64), ord=p, axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        expected = np.where(norm == 0, 0.0, x / norm).astype(np.float32)
    (actual,) = run_graph(import_onnx(model).module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-7)
    (compiled,) = strato.compile(model)(x)
    np.testing.assert_allclose(compiled, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("k", [0, 2, -1])
def test_eye_like_is_a_constant(k):
    x = normal(3, 5)
    model = model_of(
        "EyeLike", {"x": x}, (3, 5), np.int32, dtype=onnx.TensorProto.INT32, k=k
    )
    imported = import_onnx(model)
    assert "graph.constant" in [op.name for op in imported.function.body.block.ops]
    (actual,) = run_graph(imported.module, [x])
    np.testing.assert_array_equal(actual, np.eye(3, 5, k=k, dtype=np.int32))
