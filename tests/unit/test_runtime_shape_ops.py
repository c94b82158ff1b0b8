"""Nodes whose output shape follows from an input's value known only at run time (a
Range's bounds, a Reshape's shape, a TopK's K, ...): on the host between compiled parts
(`strato.staged`, `strato.runtime.shape_ops`), against ONNX's reference evaluator and
onnxruntime; the same nodes with inputs known at import time still compile."""

from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import StratoError
from strato.frontends.onnx.op_table import IMPORT_TIME_INPUTS
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.shape_ops import SHAPE_OPS
from strato.runtime.signature import InputMismatchError
from strato.staged import StagedModel, has_host_ops, known_at_import

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


def model_of(nodes, inputs, outputs, initializers=(), opset=18) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "runtime_shapes",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(initializers).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@functools.cache
def _compiled(model_bytes: bytes):
    return strato.compile(onnx.load_from_string(model_bytes), cache=False)


def staged(model: onnx.ModelProto) -> StagedModel:
    compiled = _compiled(model.SerializeToString())
    assert isinstance(compiled, StagedModel), compiled
    return compiled


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], reference: str = "onnx") -> StagedModel:
    """The staged model's outputs on `feeds` against ONNX's reference evaluator (or
    onnxruntime): same shapes, types and values."""
    compiled = staged(model)
    if reference == "onnx":
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        expected = session.run(None, feeds)
    actual = compiled(*feeds.values())
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, e.shape, a.dtype, e.dtype)
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    return compiled


def ints(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


RNG = np.random.default_rng(0)
X34 = RNG.standard_normal((3, 4)).astype(np.float32)


def test_the_host_operators_are_those_the_importer_needs_values_of():
    assert set(SHAPE_OPS) <= set(IMPORT_TIME_INPUTS)


# -- each operator, its shape-deciding input a graph input ------------------------------


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32])
def test_range(dtype):
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of(
        [helper.make_node("Range", ["s", "l", "d"], ["r"])],
        {"s": (t, []), "l": (t, []), "d": (t, [])}, {"r": t},
    )
    for s, l, d in [(0, 5, 1), (1, 10, 3), (10, 1, -2), (3, 3, 1), (5, 1, 1)]:
        compiled = check(model, {"s": np.array(s, dtype), "l": np.array(l, dtype), "d": np.array(d, dtype)})
    assert compiled.host_ops == ["Range"]


def test_range_of_fractional_steps():
    model = model_of(
        [helper.make_node("Range", ["s", "l", "d"], ["r"])],
        {"s": (F, []), "l": (F, []), "d": (F, [])}, {"r": F},
    )
    for s, l, d in [(0.5, 2.0, 0.25), (1.0, -1.0, -0.3)]:
        feeds = {"s": np.array(s, np.float32), "l": np.array(l, np.float32), "d": np.array(d, np.float32)}
        check(model, feeds, "onnxruntime")


def test_constant_of_shape():
    model = model_of(
        [helper.make_node(
            "ConstantOfShape", ["shape"], ["y"],
            value=numpy_helper.from_array(np.array([7], np.int32)),
        )],
        {"shape": (I64, [2])}, {"y": I32},
    )
    for shape in [(2, 3), (0, 4), (1, 1)]:
        check(model, {"shape": ints(*shape)})


def test_reshape():
    model = model_of([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": (F, [3, 4]), "shape": (I64, [2])}, {"y": F})
    for shape in [(4, 3), (-1, 2), (0, -1), (12, 1)]:
        check(model, {"x": X34, "shape": ints(*shape)})


def test_expand():
    model = model_of([helper.make_node("Expand", ["x", "shape"], ["y"])], {"x": (F, [3, 1]), "shape": (I64, [3])}, {"y": F})
    for shape in [(2, 3, 4), (1, 1, 1), (2, 1, 5)]:
        check(model, {"x": X34[:, :1].copy(), "shape": ints(*shape)})


def test_tile():
    model = model_of([helper.make_node("Tile", ["x", "repeats"], ["y"])], {"x": (F, [3, 4]), "repeats": (I64, [2])}, {"y": F})
    for repeats in [(1, 2), (3, 1), (0, 2)]:
        check(model, {"x": X34, "repeats": ints(*repeats)})


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k(largest):
    model = model_of(
        [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1, largest=largest)],
        {"x": (F, [3, 4]), "k": (I64, [1])}, {"values": F, "indices": I64},
    )
    ties = np.array([[1, 2, 2, 0], [3, 3, 3, 3], [0, -1, 5, 5]], np.float32)
    for k in (0, 1, 3, 4):
        check(model, {"x": X34, "k": ints(k)})
        check(model, {"x": ties, "k": ints(k)})


@pytest.mark.parametrize(
    ("axis", "flags"),
    [
        (None, [[True, False, True], [False, False, False]]),
        (None, [[False, True, False, True, True]]),
        (0, [[True, False, True], [True, True, True], [False, False, False]]),
        (1, [[True, False], [False, True]]),
    ],
)
def test_compress(axis, flags):
    model = model_of(
        [helper.make_node("Compress", ["x", "c"], ["y"], **({} if axis is None else {"axis": axis}))],
        {"x": (F, [3, 4]), "c": (B, [len(flags[0])])}, {"y": F},
    )
    for condition in flags:
        check(model, {"x": X34, "c": np.array(condition)})


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    model = model_of(
        [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=axis)],
        {"i": (I64, [2, 3]), "depth": (I64, []), "values": (F, [2])}, {"y": F},
    )
    indices = ints(0, 2, -1, 4, -5, 1).reshape(2, 3)
    for depth in (3, 5):
        check(model, {"i": indices, "depth": np.array(depth), "values": np.array([0.5, 2.0], np.float32)})


def test_slice():
    """Against onnxruntime, which clamps a negative step's start into [0, dim - 1] as
    the specification says (the reference evaluator slices as numpy does)."""
    model = model_of(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
        {"x": (F, [3, 4]), "starts": (I64, [2]), "ends": (I64, [2]), "axes": (I64, [2]), "steps": (I64, [2])},
        {"y": F},
    )
    big = np.iinfo(np.int64).max
    for starts, ends, axes, steps in [
        ((0, 1), (2, 3), (0, 1), (1, 1)),
        ((1, -1), (3, -big), (0, 1), (1, -1)),
        ((-1, 0), (-big, 10), (0, 1), (-2, 3)),
        ((2, 0), (big, 10), (-1, -2), (1, 3)),
        ((5, 0), (9, 4), (1, 0), (1, 1)),
        ((-4, 0), (-4, 4), (0, 1), (-3, 1)),
    ]:
        feeds = {"x": X34, "starts": ints(*starts), "ends": ints(*ends), "axes": ints(*axes), "steps": ints(*steps)}
        check(model, feeds, "onnxruntime")


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad(mode):
    model = model_of(
        [helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode=mode)],
        {"x": (F, [3, 4]), "pads": (I64, [4]), "value": (F, [])}, {"y": F},
    )
    for pads in [(1, 0, 2, 1), (0, 2, 1, 0), (1, -1, 0, 2), (0, 0, 0, 0)]:
        check(model, {"x": X34, "pads": ints(*pads), "value": np.array(1.5, np.float32)}, "onnxruntime")


def test_pad_of_some_axes():
    model = model_of(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
        {"x": (F, [3, 4]), "pads": (I64, [2]), "axes": (I64, [1])}, {"y": F},
    )
    check(model, {"x": X34, "pads": ints(2, 1), "axes": ints(-1)})


def test_split():
    model = model_of(
        [helper.make_node("Split", ["x", "split"], ["a", "b"], axis=1)],
        {"x": (F, [3, 4]), "split": (I64, [2])}, {"a": F, "b": F},
    )
    for lengths in [(1, 3), (2, 2), (0, 4)]:
        check(model, {"x": X34, "split": ints(*lengths)})


@pytest.mark.parametrize(
    "attributes",
    [
        {"mode": "nearest"},
        {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
        {"mode": "linear"},
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        {"mode": "cubic"},
    ],
)
def test_resize_to_run_time_sizes(attributes):
    model = model_of(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attributes)],
        {"x": (F, [1, 1, 3, 4]), "sizes": (I64, [4])}, {"y": F},
    )
    x = X34.reshape(1, 1, 3, 4)
    for sizes in [(1, 1, 6, 8), (1, 1, 2, 3), (1, 1, 5, 4)]:
        check(model, {"x": x, "sizes": ints(*sizes)})


def test_resize_to_run_time_scales():
    model = model_of(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
        {"x": (F, [1, 1, 3, 4]), "scales": (F, [4])}, {"y": F},
    )
    for scales in [(1, 1, 2, 2), (1, 1, 0.5, 1.5)]:
        check(model, {"x": X34.reshape(1, 1, 3, 4), "scales": np.array(scales, np.float32)})


def test_upsample():
    model = model_of(
        [helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")],
        {"x": (F, [1, 1, 3, 4]), "scales": (F, [4])}, {"y": F}, opset=9,
    )
    for scales in [(1, 1, 2, 2), (1, 1, 3, 1)]:
        check(model, {"x": X34.reshape(1, 1, 3, 4), "scales": np.array(scales, np.float32)})


def test_squeeze_and_unsqueeze():
    x = RNG.standard_normal((3, 1, 4, 1)).astype(np.float32)
    squeeze = model_of([helper.make_node("Squeeze", ["x", "axes"], ["y"])], {"x": (F, [3, 1, 4, 1]), "axes": (I64, [1])}, {"y": F})
    for axis in (1, 3, -1):
        check(squeeze, {"x": x, "axes": ints(axis)})
    unsqueeze = model_of([helper.make_node("Unsqueeze", ["x", "axes"], ["y"])], {"x": (F, [3, 4]), "axes": (I64, [2])}, {"y": F})
    for axes in ((0, 1), (0, -1), (3, 1)):
        check(unsqueeze, {"x": X34, "axes": ints(*axes)})


@pytest.mark.parametrize(
    "op_type",
    ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
     "ReduceSumSquare", "ReduceLogSumExp"],
)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_over_run_time_axes(op_type, keepdims):
    for values in [((0,), (1,), (-1,)), ((-1, 0),), ((),)]:
        model = model_of(
            [helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=keepdims)],
            {"x": (F, [3, 4]), "axes": (I64, [len(values[0])])}, {"y": F},
        )
        for axes in values:
            check(model, {"x": X34, "axes": np.array(axes, np.int64)})


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu(upper):
    model = model_of([helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], {"x": (F, [3, 4]), "k": (I64, [])}, {"y": F})
    for k in (-1, 0, 2, 7):
        check(model, {"x": X34, "k": np.array(k)})


@pytest.mark.parametrize("op_type", ["CumSum", "CumProd"])
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumulative_along_a_run_time_axis(op_type, exclusive, reverse):
    model = model_of(
        [helper.make_node(op_type, ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
        {"x": (F, [3, 4]), "axis": (I64, [])}, {"y": F}, opset=26,
    )
    for axis in (0, 1, -1):
        check(model, {"x": X34, "axis": np.array(axis)}, "onnx")


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the reference's 0 / 0 at size 1
@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_of_a_run_time_size(op_type, periodic):
    model = model_of(
        [helper.make_node(op_type, ["size"], ["y"], periodic=periodic)],
        {"size": (I64, [])}, {"y": F}, opset=17,
    )
    for size in (1, 4, 9):
        check(model, {"size": np.array(size)})


@pytest.mark.parametrize("axes", [None, [1], [-2, 0]])
def test_center_crop_pad(axes):
    x = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    count = 3 if axes is None else len(axes)
    model = model_of(
        [helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **({} if axes is None else {"axes": axes}))],
        {"x": (F, [4, 5, 3]), "shape": (I64, [count])}, {"y": F},
    )
    for sizes in [(2, 7, 3), (5, 5, 1), (4, 2, 6)]:
        check(model, {"x": x, "shape": ints(*sizes[:count])})


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # the reference's step at size 1
@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("spatial", [2, 3])
def test_affine_grid_of_a_run_time_size(align_corners, spatial):
    theta = RNG.standard_normal((2, spatial, spatial + 1)).astype(np.float32)
    model = model_of(
        [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners)],
        {"theta": (F, list(theta.shape)), "size": (I64, [spatial + 2])}, {"grid": F}, opset=20,
    )
    for sizes in [(2, 1, 3, 4, 5)[: spatial + 2], (2, 3, 1, 2, 2)[: spatial + 2]]:
        check(model, {"theta": theta, "size": ints(*sizes)})


# -- values drawn ----------------------------------------------------------------------


RANGE = model_of(
    [helper.make_node("Range", ["s", "l", "d"], ["r"])],
    {"s": (I64, []), "l": (I64, []), "d": (I64, [])}, {"r": I64},
)
SLICE = model_of(
    [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
    {"x": (F, [3, 4]), "starts": (I64, [1]), "ends": (I64, [1]), "axes": (I64, [1]), "steps": (I64, [1])},
    {"y": F},
)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(-20, 20), st.integers(-20, 20), st.integers(-6, 6).filter(bool),
)
def test_range_of_drawn_bounds(start, limit, delta):
    check(RANGE, {"s": np.array(start), "l": np.array(limit), "d": np.array(delta)})


@settings(max_examples=25, deadline=None)
@given(
    st.integers(-6, 6), st.integers(-6, 6), st.sampled_from([0, 1, -1, -2]),
    st.sampled_from([-3, -2, -1, 1, 2, 3]),
)
def test_slice_of_drawn_bounds(start, end, axis, step):
    feeds = {"x": X34, "starts": ints(start), "ends": ints(end), "axes": ints(axis), "steps": ints(step)}
    check(SLICE, feeds, "onnxruntime")


PAD = model_of(
    [helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge")],
    {"x": (F, [3, 4]), "pads": (I64, [4])}, {"y": F},
)
TOP_K = model_of(
    [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=0)],
    {"x": (F, [3, 4]), "k": (I64, [1])}, {"values": F, "indices": I64},
)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-1, 3), min_size=4, max_size=4), st.integers(0, 3))
def test_pad_and_top_k_of_drawn_values(pads, k):
    check(PAD, {"x": X34, "pads": ints(*pads)}, "onnxruntime")
    check(TOP_K, {"x": X34, "k": ints(k)}, "onnxruntime")


# -- within compiled code ----------------------------------------------------------------


def test_run_time_range_and_constant_of_shape_feed_compiled_nodes():
    """Range(0, n) and ConstantOfShape([n, columns of x]) on the host, between compiled
    code that reads x before and after them."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("ReduceSum", ["r"], ["total"], keepdims=0),
        helper.make_node("Range", ["zero", "n", "one"], ["steps"]),
        helper.make_node("Cast", ["steps"], ["steps_f"], to=F),
        helper.make_node("Mul", ["steps_f", "total"], ["scaled"]),
        helper.make_node("Add", ["scaled", "b"], ["y"]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "one_1d", "two_1d"], ["columns"]),
        helper.make_node("Unsqueeze", ["n", "axis0"], ["n_1d"]),
        helper.make_node("Concat", ["n_1d", "columns"], ["size"], axis=0),
        helper.make_node(
            "ConstantOfShape", ["size"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32)),
        ),
        helper.make_node("ReduceMax", ["x", "axis0"], ["top"], keepdims=1),
        helper.make_node("Mul", ["ones", "top"], ["z"]),
    ]
    model = model_of(
        nodes, {"x": (F, [4, 3]), "n": (I64, []), "b": (F, [1])}, {"y": F, "z": F},
        {
            "zero": np.array(0, np.int64), "one": np.array(1, np.int64), "axis0": ints(0),
            "one_1d": ints(1), "two_1d": ints(2),
        },
    )
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    for n in (1, 5, 0, 5):
        compiled = check(model, {"x": x, "n": np.array(n), "b": np.array([0.25], np.float32)}, "onnxruntime")
    assert sorted(compiled.host_ops) == ["ConstantOfShape", "Range"]
    assert sum(not hasattr(step, "node") for step in compiled.steps) == 2


def test_a_known_value_read_after_a_host_operator_is_computed_in_that_part():
    """The Reshapes after NonZero read shapes the first part computes from constants and
    from x's shape: their part computes them again, so its importer knows them."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Constant", [], ["minus_one"], value=numpy_helper.from_array(ints(-1))),
        helper.make_node("Mul", ["minus_one", "one"], ["flat"]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "one"], ["rows"]),
        helper.make_node("Concat", ["minus_one", "rows"], ["by_rows"], axis=0),
        helper.make_node("Reshape", ["r", "flat"], ["r_flat"]),
        helper.make_node("NonZero", ["r"], ["nz"]),
        helper.make_node("Reshape", ["nz", "flat"], ["y"]),
        helper.make_node("Concat", ["y", "y", "y"], ["y3"], axis=0),
        helper.make_node("Reshape", ["y3", "by_rows"], ["z"]),
    ]
    model = model_of(
        nodes, {"x": (F, [3, 4])}, {"y": I64, "r_flat": F, "z": I64},
        {"one": ints(1), "zero": ints(0)},
    )
    compiled = check(model, {"x": X34}, "onnxruntime")
    assert compiled.host_ops == ["NonZero"]
    assert sum(not hasattr(step, "node") for step in compiled.steps) == 2


def test_a_shape_read_after_a_host_operator_is_taken_again_in_that_part():
    """x's Relu is read only by a Shape of the first part; the second part, which takes
    that shape again, gets the Relu's result."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Shape", ["r"], ["shape"]),
        helper.make_node("Cast", ["shape"], ["shape_f"], to=F),
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("ReduceSum", ["nz"], ["total"], keepdims=0),
        helper.make_node("Cast", ["total"], ["total_f"], to=F),
        helper.make_node("Add", ["shape_f", "total_f"], ["y"]),
    ]
    model = model_of(nodes, {"x": (F, [3, 4])}, {"y": F})
    check(model, {"x": X34}, "onnxruntime")


def test_a_shape_from_a_host_result_feeds_a_run_time_reshape():
    """Reshape(x, k): k from TopK's run-time K goes to the host, its values decide the
    shape."""
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["values", "indices"]),
        helper.make_node("Neg", ["values"], ["negated"]),
        helper.make_node("Reshape", ["negated", "shape"], ["y"]),
    ]
    model = model_of(nodes, {"x": (F, [12]), "k": (I64, [1]), "shape": (I64, [2])}, {"y": F})
    x = RNG.standard_normal(12).astype(np.float32)
    for k, shape in [(6, (2, 3)), (12, (-1, 4)), (4, (4, 1))]:
        compiled = check(model, {"x": x, "k": ints(k), "shape": ints(*shape)}, "onnxruntime")
    assert compiled.host_ops == ["TopK", "Reshape"]


def test_a_model_of_dynamic_inputs_is_staged_once_they_are_pinned():
    model = model_of(
        [helper.make_node("Range", ["zero", "n", "one"], ["r"]), helper.make_node("Relu", ["x"], ["y"])],
        {"n": (I64, []), "x": (F, ["batch", 4])}, {"r": I64, "y": F},
        {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)},
    )
    compiled = strato.compile(model, cache=False, input_shapes={"x": (3, 4)})
    assert isinstance(compiled, StagedModel)
    r, y = compiled(np.array(2), X34)
    np.testing.assert_array_equal(r, [0, 1])
    np.testing.assert_array_equal(y, np.maximum(X34, 0))


def test_known_inputs_still_compile():
    """The same operators with shape inputs from initializers, Constants and shapes
    compile to an ordinary model."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["rows"]),
        helper.make_node("Range", ["zero", "rows", "one"], ["steps"]),
        helper.make_node("Cast", ["steps"], ["steps_f"], to=F),
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(ints(2))),
        helper.make_node("TopK", ["x", "k"], ["values", "indices"]),
        helper.make_node("Reshape", ["values", "flat"], ["flat_values"]),
        helper.make_node("Concat", ["flat_values", "steps_f"], ["y"], axis=0),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
        helper.make_node("Add", ["zeros", "x"], ["same"]),
        helper.make_node("Slice", ["same", "start", "stop"], ["z"]),
    ]
    model = model_of(
        nodes, {"x": (F, [3, 4])}, {"y": F, "z": F},
        {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "flat": ints(-1),
         "start": ints(1), "stop": ints(3)},
    )
    assert not has_host_ops(model, IMPORT_TIME_INPUTS)
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, CompiledModel)
    expected = ReferenceEvaluator(model).run(None, {"x": X34})
    for a, e in zip(compiled(X34), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6)


def test_what_is_known_at_import():
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(ints(2))),
        helper.make_node("Add", ["shape", "c"], ["grown"]),
        helper.make_node("Add", ["n", "c"], ["n2"]),
        helper.make_node("NonZero", ["c"], ["nz"]),
        helper.make_node("Shape", ["nz"], ["nz_shape"]),
        helper.make_node("Range", ["w", "n2", "w"], ["r"]),
        helper.make_node("RandomNormal", [], ["noise"], shape=[2]),
    ]
    model = model_of(nodes, {"x": (F, [3, 4]), "n": (I64, [])}, {"r": I64, "grown": I64}, {"w": np.array(1)})
    known = known_at_import(model.graph, IMPORT_TIME_INPUTS)
    assert {"w", "shape", "c", "grown", "nz_shape"} <= known
    assert not {"x", "n", "n2", "nz", "r", "noise"} & known


# -- calls and refusals ------------------------------------------------------------------


def test_bad_calls_are_input_mismatches():
    model = model_of(
        [helper.make_node("Range", ["zero", "n", "one"], ["r"]),
         helper.make_node("Cast", ["r"], ["rf"], to=F),
         helper.make_node("Mul", ["x", "two"], ["x2"]),
         helper.make_node("Add", ["rf", "x2"], ["y"])],
        {"n": (I64, []), "x": (F, [3])}, {"y": F},
        {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "two": np.float32(2)},
    )
    compiled = staged(model)
    np.testing.assert_allclose(compiled(np.array(3), np.ones(3, np.float32))[0], [2, 3, 4])
    with pytest.raises(InputMismatchError, match="takes 2 input"):
        compiled(np.array(3))
    with pytest.raises(InputMismatchError, match=r"'x'.*shape is \[4\], expected \[3\]"):
        compiled(np.array(3), np.ones(4, np.float32))
    # 'n' only reaches the host Range: checked as a compiled input would be
    with pytest.raises(InputMismatchError, match=r"input 0 'n': dtype is float64, expected int64"):
        compiled(np.array(3.0), np.ones(3, np.float32))
    with pytest.raises(InputMismatchError, match=r"input 0 'n': shape is \[1\], expected \[\]"):
        compiled(np.array([3]), np.ones(3, np.float32))
    with pytest.raises(InputMismatchError, match=r"input 0 'n': expected a numpy array, got int"):
        compiled(3, np.ones(3, np.float32))


def test_a_bad_value_is_a_diagnostic_naming_the_node():
    model = model_of(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="fold")],
        {"x": (F, [3, 4]), "shape": (I64, [2])}, {"y": F},
    )
    with pytest.raises(StratoError, match=r"node 'fold' \(Reshape\): cannot reshape \[3, 4\] to \[5, 2\]"):
        staged(model)(X34, ints(5, 2))


def test_a_run_time_shape_inside_a_subgraph_is_refused():
    branch = helper.make_graph(
        [helper.make_node("Range", ["zero", "n", "one"], ["r"], name="inner")],
        "branch", [], [helper.make_tensor_value_info("r", I64, None)],
    )
    nodes = [
        helper.make_node("Range", ["zero", "n", "one"], ["a"]),
        helper.make_node("If", ["c"], ["b"], name="choose", then_branch=branch, else_branch=branch),
    ]
    model = model_of(
        nodes, {"n": (I64, []), "c": (B, [])}, {"a": I64, "b": I64},
        {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)},
    )
    with pytest.raises(
        StratoError,
        match=r"node 'inner' \(Range\) in a subgraph of node 'choose': its output shape "
        r"depends on the value of input 'n', known only when the model runs",
    ):
        strato.compile(model, cache=False)


def _loop_over_ranges(count: str) -> onnx.ModelProto:
    """acc += sum(range(0, i)) for i < count: the body's Range reads the iteration
    number."""
    body = helper.make_graph(
        [
            helper.make_node("Range", ["zero", "i", "one"], ["r"], name="inner"),
            helper.make_node("ReduceSum", ["r"], ["s"], keepdims=0),
            helper.make_node("Add", ["acc", "s"], ["acc2"]),
            helper.make_node("Identity", ["c"], ["c2"]),
        ],
        "body",
        [helper.make_tensor_value_info(n, t, []) for n, t in (("i", I64), ("c", B), ("acc", I64))],
        [helper.make_tensor_value_info("c2", B, []), helper.make_tensor_value_info("acc2", I64, [])],
    )
    inputs = {"x": (F, [3])} | ({"m": (I64, [])} if count == "m" else {})
    model = model_of(
        [helper.make_node("Loop", [count, "", "a0"], ["out"], name="loop", body=body),
         helper.make_node("Relu", ["x"], ["y"])],
        inputs, {"out": I64, "y": F},
        {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "four": np.array(4, np.int64),
         "a0": np.array(0, np.int64)},
    )
    model.graph.output[0].type.tensor_type.shape.SetInParent()  # a scalar
    return model


def test_a_loop_of_a_known_trip_count_knows_its_iteration_number():
    """The importer unrolls such a loop, so a Range on the iteration number compiles;
    with a run-time trip count the loop runs on the host, its body compiled alone (a
    model whose Range, on the body's input, runs on the host in turn)."""
    known = _loop_over_ranges("four")
    assert not has_host_ops(known, IMPORT_TIME_INPUTS)
    compiled = strato.compile(known, cache=False)
    assert isinstance(compiled, CompiledModel)
    assert compiled(X34[0, :3].copy())[0] == 0 + 0 + 1 + 3
    run_time = _loop_over_ranges("m")
    assert has_host_ops(run_time, IMPORT_TIME_INPUTS)
    compiled = strato.compile(run_time, cache=False)
    assert compiled.host_ops == ["Loop"]
    x = X34[0, :3].copy()
    for trips, total in ((0, 0), (1, 0), (4, 0 + 0 + 1 + 3), (6, 0 + 0 + 1 + 3 + 6 + 10)):
        out, y = compiled(x, np.array(trips, np.int64))
        assert out == total
        np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_the_onnx_backend_still_compiles_per_value():
    from strato.onnx_backend import SpecializingBackendRep, prepare

    rep = prepare(RANGE)
    assert isinstance(rep, SpecializingBackendRep)
    (result,) = rep.run([np.array(2), np.array(9), np.array(3)])
    np.testing.assert_array_equal(result, [2, 5, 8])
