"""Layout operators: ONNX import against onnxruntime through the graph interpreter and
the LLVM JIT, the strategies through the te and loop interpreters, every attribute and
input form (opsets), import-time folding of shape arithmetic, diagnostics, verifier
errors, and ONNX's own node tests with their shape-like inputs bound at import time."""

from __future__ import annotations

import functools
import re

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper, shape_inference
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i64
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import strato
from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph
from strato.frontends.onnx import import_onnx
from strato.frontends.onnx.convert_layout import IMPORT_TIME_INPUTS, slice_bounds
from strato.frontends.onnx.op_table import ONNX_CONVERTERS
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.strategies.layout import reshape_groups
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

RNG = np.random.default_rng(0)


def model_of(
    op_type: str,
    inputs: dict[str, np.ndarray],
    initializers: dict[str, np.ndarray] | None = None,
    *,
    node_inputs: list[str] | None = None,
    outputs: int = 1,
    opset: int = 17,
    **attributes,
) -> onnx.ModelProto:
    """A one-node model reading float32 graph `inputs` and `initializers` (in that
    order unless `node_inputs` says otherwise), with `outputs` float outputs."""
    initializers = initializers or {}
    names = node_inputs if node_inputs is not None else [*inputs, *initializers]
    output_names = [f"y{n}" for n in range(outputs)]
    node = helper.make_node(op_type, names, output_names, name="node", **attributes)
    onnx_graph = helper.make_graph(
        [node],
        "one_node",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in output_names],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return declare_output_shapes(model)


def declare_output_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with output shapes from ONNX shape inference (the importer needs them);
    where inference fails (models built to be rejected), a placeholder shape."""
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=True)
    except (shape_inference.InferenceError, onnx.checker.ValidationError):
        inferred = model
    for n, (value, known) in enumerate(zip(model.graph.output, inferred.graph.output)):
        if known.type.tensor_type.HasField("shape"):
            value.type.CopyFrom(known.type)
            continue
        shape = value.type.tensor_type.shape
        try:
            for size in _output_shapes_by_running(model)[n]:
                shape.dim.add().dim_value = size
        except Exception:  # noqa: BLE001 - onnxruntime rejects the model too
            shape.dim.add().dim_param = "unknown"
    return model


def _output_shapes_by_running(model: onnx.ModelProto) -> list[tuple[int, ...]]:
    inputs = [
        np.zeros([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32)
        for i in model.graph.input
    ]
    return [np.shape(o) for o in reference(model, inputs)]


def reference(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


def check(
    model: onnx.ModelProto,
    inputs: list[np.ndarray],
    compiled: bool = True,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> None:
    """Graph interpreter and compiled code both match onnxruntime (exactly, unless a
    tolerance is given: reductions may sum in another order)."""
    expected = reference(model, inputs)
    imported = import_onnx(model)
    actual = run_graph(imported.module, inputs, imported.function_name)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
    if compiled:
        for a, e in zip(strato.compile(model)(*inputs), expected):
            assert a.shape == e.shape and a.dtype == e.dtype
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def ops_of(model: onnx.ModelProto) -> list[str]:
    function = import_onnx(model).function
    return [op.name for op in function.body.block.ops if op.name != "func.return"]


# -- reshapes ---------------------------------------------------------------------

X = floats(2, 3, 4)


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis: int):
    model = model_of("Flatten", {"x": X}, axis=axis)
    check(model, [X])


@pytest.mark.parametrize(
    "shape", [[4, 0, -1], [-1], [0, 0, 4], [2, 12], [1, 2, 1, 12, 1], [24, 1], [0, -1]]
)
def test_reshape_zero_copies_and_minus_one_infers(shape: list[int]):
    check(model_of("Reshape", {"x": X}, {"shape": ints(*shape)}), [X])


def test_reshape_allowzero_keeps_a_literal_nonzero_shape():
    check(model_of("Reshape", {"x": X}, {"shape": ints(6, 4)}, opset=14, allowzero=1), [X])


def test_reshape_to_the_same_shape_is_no_op():
    assert ops_of(model_of("Reshape", {"x": X}, {"shape": ints(0, 0, 0)})) == []


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_axes_attribute_or_input(opset: int):
    x = floats(1, 3, 1, 4)
    if opset < 13:
        model = model_of("Squeeze", {"x": x}, opset=opset, axes=[0, -2])
    else:
        model = model_of("Squeeze", {"x": x}, {"axes": ints(0, -2)}, opset=opset)
    check(model, [x])


def test_squeeze_without_axes_drops_every_unit_dimension():
    x = floats(1, 3, 1, 4, 1)
    check(model_of("Squeeze", {"x": x}), [x])


@pytest.mark.parametrize("axes", [[0], [3], [-1], [4, 0], [1, 3, -1]])
def test_unsqueeze(axes: list[int]):
    check(model_of("Unsqueeze", {"x": X}, {"axes": ints(*axes)}, opset=13), [X])


def test_unsqueeze_axes_attribute_of_opset_11():
    check(model_of("Unsqueeze", {"x": X}, opset=11, axes=[0, 4]), [X])


def test_reshapes_become_one_graph_reshape():
    model = model_of("Unsqueeze", {"x": X}, {"axes": ints(1)}, opset=13)
    assert ops_of(model) == ["graph.reshape"]


# -- transpose, concat, split -------------------------------------------------------


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose(perm: list[int] | None):
    attributes = {} if perm is None else {"perm": perm}
    check(model_of("Transpose", {"x": X}, **attributes), [X])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_of_inputs_and_constants(axis: int):
    shape = list(X.shape)
    shape[axis] = 5
    w = floats(*shape)
    check(model_of("Concat", {"x": X}, {"w": w}, node_inputs=["w", "x", "w"], axis=axis), [X])


def test_concat_of_one_input_is_no_op():
    assert ops_of(model_of("Concat", {"x": X}, axis=0)) == []


@pytest.mark.parametrize(
    "opset, inputs, attributes, outputs",
    [
        (11, {}, {"axis": 1, "split": [1, 2]}, 2),
        (13, {"split": ints(2, 0, 1)}, {"axis": -2}, 3),
        (13, {}, {"axis": 2}, 2),
        (18, {}, {"axis": 2, "num_outputs": 3}, 3),
        (18, {"split": ints(1, 3)}, {"axis": 2}, 2),
    ],
)
def test_split_forms(opset: int, inputs: dict, attributes: dict, outputs: int):
    model = model_of("Split", {"x": X}, inputs, outputs=outputs, opset=opset, **attributes)
    check(model, [X])


def test_split_becomes_one_multi_result_op():
    model = model_of("Split", {"x": X}, outputs=2, opset=18, axis=2, num_outputs=2)
    function = import_onnx(model).function
    (split,) = [op for op in function.body.block.ops if isinstance(op, graph.SplitOp)]
    assert split.sizes == (2, 2)


# -- slice and pad ----------------------------------------------------------------

BIG = 2**63 - 1

SLICES = [
    ([0, 1], [2, 3], None, None),
    ([-1], [-BIG], [1], [-1]),
    ([1, 10], [BIG, -10], [0, 2], [1, -1]),
    ([5], [-5], [2], [1]),
    ([0, 0, 3], [-1, 2, 0], [0, 1, 2], [2, 2, -2]),
    ([3], [1], [-1], [1]),  # empty
]


@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
def test_slice(starts, ends, axes, steps):
    initializers = {"starts": ints(*starts), "ends": ints(*ends)}
    if axes is not None:
        initializers["axes"] = ints(*axes)
    if steps is not None:
        initializers["steps"] = ints(*steps)
    check(model_of("Slice", {"x": X}, initializers, opset=13), [X])


def test_slice_attributes_of_opset_9():
    model = model_of("Slice", {"x": X}, opset=9, starts=[1, -2], ends=[BIG, 3], axes=[2, 1])
    check(model, [X])


@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    data=st.data(),
)
def test_slice_bounds_match_onnxruntime(shape: list[int], data: st.DataObject):
    """ONNX clamps like Python's slices, except that a backward slice starting before
    the first element starts at it (onnxruntime follows the spec)."""
    bound = st.integers(-7, 7) | st.sampled_from([BIG, -BIG])
    starts = [data.draw(bound) for _ in shape]
    ends = [data.draw(bound) for _ in shape]
    steps = [data.draw(st.integers(-3, 3).filter(bool)) for _ in shape]
    # onnxruntime reads an end of INT_MAX as "to the far end" in both directions; the
    # spec (and ONNX's reference) clamp it to dim - 1 when stepping backwards
    ends = [e if t > 0 or e != BIG else BIG - 1 for e, t in zip(ends, steps)]
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    initializers = {"starts": ints(*starts), "ends": ints(*ends), "steps": ints(*steps)}
    model = model_of(
        "Slice", {"x": x}, initializers, node_inputs=["x", "starts", "ends", "", "steps"]
    )
    (expected,) = reference(model, [x])
    first, step_of, sizes = slice_bounds(shape, starts, ends, range(len(shape)), steps)
    index = [s + t * np.arange(n) for s, t, n in zip(first, step_of, sizes)]
    np.testing.assert_array_equal(x[np.ix_(*index)], expected)
    imported = import_onnx(model)
    np.testing.assert_array_equal(run_graph(imported.module, [x])[0], expected)


@pytest.mark.parametrize(
    "mode, pads",
    [
        ("constant", [0, 1, 2, 0, 2, 1]),
        ("reflect", [1, 2, 3, 1, 0, 2]),
        ("edge", [1, 0, 5, 2, 3, 1]),
        ("wrap", [1, 4, 5, 1, 2, 9]),
        ("constant", [0, -1, 1, 0, 2, -2]),
        ("reflect", [0, -1, 1, 0, 1, -2]),
    ],
)
def test_pad_modes(mode: str, pads: list[int]):
    model = model_of("Pad", {"x": X}, {"pads": ints(*pads)}, opset=19, mode=mode)
    check(model, [X])


def test_pad_constant_value_and_axes():
    initializers = {
        "pads": ints(2, 1, 0, 3),
        "value": np.array(1.5, np.float32),
        "axes": ints(-1, 0),
    }
    check(model_of("Pad", {"x": X}, initializers, opset=18), [X])


def test_pad_attributes_of_opset_10():
    check(model_of("Pad", {"x": X}, opset=10, pads=[0, 1, 0, 0, 2, 1], value=-2.0), [X])


def test_negative_pads_crop_with_a_slice():
    model = model_of("Pad", {"x": X}, {"pads": ints(0, -1, 1, 0, 0, 2)}, opset=13)
    assert ops_of(model) == ["graph.slice", "graph.pad"]


# -- gather, shape, expand --------------------------------------------------------


@pytest.mark.parametrize(
    "axis, indices",
    [
        (0, ints(1, 0, 1)),
        (1, ints(-1, 0)),
        (2, ints(3)),
        (1, np.array([[0, 2], [-3, 1]])),
    ],
)
def test_gather_with_constant_indices(axis: int, indices: np.ndarray):
    check(model_of("Gather", {"x": X}, {"indices": indices}, axis=axis), [X])


def test_gather_with_a_scalar_index_drops_the_axis():
    nodes = [
        helper.make_node("Constant", [], ["i"], value=numpy_helper.from_array(np.array(-2))),
        helper.make_node("Gather", ["x", "i"], ["y0"], name="node", axis=1),
    ]
    onnx_graph = helper.make_graph(
        nodes,
        "gather",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    check(declare_output_shapes(model), [X])


def test_gather_indices_become_an_i64_operand():
    model = model_of("Gather", {"x": X}, {"indices": ints(0, -1)}, axis=1)
    function = import_onnx(model).function
    (gather,) = [op for op in function.body.block.ops if isinstance(op, graph.GatherOp)]
    assert gather.indices.type == TensorType(i64, [2])
    constant = gather.indices.owner
    assert isinstance(constant, graph.ConstantOp)
    assert list(constant.evaluate([])[0]) == [0, 2]


def test_gather_with_an_index_tensor_through_te_and_loops():
    """Runtime int64 indices: the graph op and its strategy take an index tensor."""
    data = TensorType(f32, [5, 3])
    indices = TensorType(i64, [2, 2])
    block = Block(arg_types=[data, indices])
    op = graph.GatherOp(block.args[0], block.args[1], 0)
    block.add_ops([op, func.ReturnOp(op.result)])
    module = ModuleOp([func.FuncOp("main", ([data, indices], [op.result.type]), Region(block))])
    module.verify()
    x, idx = floats(5, 3), np.array([[4, -1], [0, -5]], dtype=np.int64)
    expected = np.take(x, np.where(idx < 0, idx + 5, idx), axis=0)
    np.testing.assert_array_equal(run_graph(module, [x, idx])[0], expected)
    ctx = make_context()
    run_pipeline(ctx, module, "convert-graph-to-te")
    np.testing.assert_array_equal(run_te(module, [x, idx])[0], expected)
    run_pipeline(ctx, module, "convert-te-to-loops")
    np.testing.assert_array_equal(run_loops(module, [x, idx])[0], expected)


def _shape_arithmetic_model() -> onnx.ModelProto:
    """PyTorch's export of x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze ->
    Concat -> Reshape, all of it known at import time."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value_int=0),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Constant", [], ["axes"], value_ints=[0]),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Constant", [], ["minus_one"], value_ints=[-1]),
        helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    onnx_graph = helper.make_graph(
        nodes,
        "view",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return declare_output_shapes(model)


def test_shape_arithmetic_folds_at_import():
    model = _shape_arithmetic_model()
    assert ops_of(model) == ["graph.reshape"]
    check(model, [X])


def test_shape_start_and_end_are_clamped():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], start=-2, end=100),
        helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=0),
    ]
    onnx_graph = helper.make_graph(
        nodes,
        "shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = declare_output_shapes(
        helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    )
    x = floats(1, 3, 4)
    assert run_graph(import_onnx(model).module, [x])[0].shape == (3, 4)


@pytest.mark.parametrize("shape", [[2, 1, 3, 4], [3, 1], [1, 1], [4, 2, 3, 4]])
def test_expand(shape: list[int]):
    x = floats(3, 1)
    check(model_of("Expand", {"x": x}, {"shape": ints(*shape)}), [x])


def test_expand_to_its_own_shape_is_no_op():
    assert ops_of(model_of("Expand", {"x": X}, {"shape": ints(1, 3, 1)})) == []


# -- gather_elements, scatter_nd, tile, depth/space, constant_of_shape, range -----


def graph_model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: dict[str, int],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 18,
) -> onnx.ModelProto:
    """A model of `nodes` with graph inputs typed after their arrays and outputs of the
    given ONNX element types (shapes from inference)."""
    onnx_graph = helper.make_graph(
        nodes,
        "model",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in inputs.items()
        ],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return declare_output_shapes(model)


def one_node(op_type: str, inputs: list[str], **attributes) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, ["y"], name="node", **attributes)


FLOAT = {"y": TensorProto.FLOAT}


@pytest.mark.parametrize(
    "axis, indices",
    [
        (0, np.array([[[1, 0, 1, 0]] * 3], np.int64)),
        (1, np.array([[[2], [0]], [[-1], [1]]], np.int64)),
        (2, np.array([[[3, -4, 0]] * 3] * 2, np.int32)),
        (-1, np.zeros((1, 1, 2), np.int64)),
    ],
)
@pytest.mark.parametrize("runtime_indices", [False, True])
def test_gather_elements(axis: int, indices: np.ndarray, runtime_indices: bool):
    if runtime_indices:
        model = graph_model(
            [one_node("GatherElements", ["x", "i"], axis=axis)], {"x": X, "i": indices}, FLOAT
        )
        check(model, [X, indices])
    else:
        model = graph_model(
            [one_node("GatherElements", ["x", "i"], axis=axis)], {"x": X}, FLOAT, {"i": indices}
        )
        check(model, [X])


@pytest.mark.parametrize(
    "batch_dims, indices",
    [
        (0, np.array([[1, 2], [0, -1]], np.int64)),  # rows of x[i, j]
        (0, np.array([[[1]], [[0]]], np.int64)),  # whole slices x[i]
        (0, np.array([[1, 0, 3]], np.int64)),  # single elements
        (1, np.array([[2], [0]], np.int64)),  # per batch item, a row
        (2, np.array([[[3], [0], [1]], [[2], [2], [-4]]], np.int64)),
    ],
)
@pytest.mark.parametrize("runtime_indices", [False, True])
def test_gather_nd(batch_dims: int, indices: np.ndarray, runtime_indices: bool):
    node = one_node("GatherND", ["x", "i"], batch_dims=batch_dims)
    if runtime_indices:
        check(graph_model([node], {"x": X, "i": indices}, FLOAT), [X, indices])
    else:
        check(graph_model([node], {"x": X}, FLOAT, {"i": indices}), [X])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize(
    "indices",
    [
        np.array([[1], [-2]], np.int64),  # rows of x
        np.array([[0, 2], [1, 0], [1, 1]], np.int64),  # rows of x[i, j]
        np.array([[[0, 1, 3]], [[1, 2, -1]]], np.int64),  # single elements, 2-D rows
        np.array([1, 2], np.int64),  # one row
    ],
)
def test_scatter_nd(reduction: str, indices: np.ndarray):
    depth = indices.shape[-1]
    updates = floats(*indices.shape[:-1], *X.shape[depth:])
    model = graph_model(
        [one_node("ScatterND", ["x", "i", "u"], reduction=reduction)],
        {"x": X, "u": updates},
        FLOAT,
        {"i": indices},
    )
    check(model, [X, updates])


def test_scatter_nd_with_runtime_indices_and_duplicates():
    indices = np.array([[2], [0], [2]], np.int64)
    updates = floats(3, 3, 4)
    model = graph_model(
        [one_node("ScatterND", ["x", "i", "u"], reduction="add")],
        {"x": X[:1].repeat(3, 0), "i": indices, "u": updates},
        FLOAT,
    )
    check(model, [X[:1].repeat(3, 0), indices, updates], rtol=1e-6)


def test_scatter_nd_with_known_indices_is_a_gather_and_a_where():
    """torch's slice assignment: the rows are known, so which update lands where is too."""
    indices = np.array([[0, 1], [1, 2], [0, 1]], np.int64)  # a duplicate: the last wins
    updates = floats(3, 4)
    model = graph_model(
        [one_node("ScatterND", ["x", "i", "u"])], {"x": X, "u": updates}, FLOAT, {"i": indices}
    )
    assert "graph.scatter_nd" not in ops_of(model)
    expected = X.copy()
    expected[0, 1], expected[1, 2] = updates[2], updates[1]
    np.testing.assert_array_equal(run_graph(import_onnx(model).module, [X, updates])[0], expected)
    np.testing.assert_array_equal(strato.compile(model)(X, updates)[0], expected)


def test_scatter_nd_of_constants_folds():
    indices = np.array([[1]], np.int64)
    model = graph_model(
        [one_node("ScatterND", ["c", "i", "u"], reduction="add")],
        {"x": X},
        FLOAT,
        {"c": X, "i": indices, "u": floats(1, 3, 4)},
    )
    assert ops_of(model) == ["graph.constant"]


@pytest.mark.parametrize("repeats", [[1, 1, 1], [2, 1, 3], [1, 3, 1], [2, 2, 2]])
def test_tile(repeats: list[int]):
    check(model_of("Tile", {"x": X}, {"repeats": ints(*repeats)}), [X])


def test_tile_of_ones_is_no_op():
    assert ops_of(model_of("Tile", {"x": X}, {"repeats": ints(1, 1, 1)})) == []


@pytest.mark.parametrize("blocksize", [1, 2, 3])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(blocksize: int, mode: str):
    x = floats(2, 2 * blocksize * blocksize, 3, 2)
    model = graph_model(
        [one_node("DepthToSpace", ["x"], blocksize=blocksize, mode=mode)], {"x": x}, FLOAT
    )
    check(model, [x])


@pytest.mark.parametrize("blocksize", [1, 2, 3])
def test_space_to_depth(blocksize: int):
    x = floats(2, 3, 2 * blocksize, 3 * blocksize)
    model = graph_model([one_node("SpaceToDepth", ["x"], blocksize=blocksize)], {"x": x}, FLOAT)
    check(model, [x])


def test_depth_to_space_round_trips_space_to_depth_through_one_kernel_each():
    x = floats(1, 2, 4, 6)
    nodes = [
        helper.make_node("SpaceToDepth", ["x"], ["d"], blocksize=2),
        helper.make_node("DepthToSpace", ["d"], ["y"], blocksize=2, mode="DCR"),
    ]
    model = graph_model(nodes, {"x": x}, FLOAT)
    np.testing.assert_array_equal(strato.compile(model)(x)[0], x)


@pytest.mark.parametrize(
    "value", [None, np.array([2.5], np.float32), np.array([7], np.int64)], ids=str
)
def test_constant_of_shape_from_a_shape(value):
    """torch's pattern: Shape -> ConstantOfShape, here added to the input so the result
    is compiled."""
    attributes = {} if value is None else {"value": numpy_helper.from_array(value)}
    dtype = np.float32 if value is None else value.dtype
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["c"], name="node", **attributes),
        helper.make_node("Cast", ["x"], ["xc"], to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype))),
        helper.make_node("Add", ["xc", "c"], ["y"]),
    ]
    model = graph_model(nodes, {"x": X}, {"y": helper.np_dtype_to_tensor_dtype(np.dtype(dtype))})
    check(model, [X])


@pytest.mark.parametrize(
    "start, limit, delta",
    [(0, 4, 1), (10, 2, -3), (1, 1, 1), (0.5, 4.0, 0.5), (3.0, -1.0, -1.5)],
)
def test_range_of_known_bounds(start, limit, delta):
    dtype = np.int64 if isinstance(start, int) else np.float32
    bounds = {n: np.array(v, dtype) for n, v in zip(("a", "b", "c"), (start, limit, delta))}
    model = graph_model(
        [one_node("Range", ["a", "b", "c"])],
        {},
        {"y": helper.np_dtype_to_tensor_dtype(np.dtype(dtype))},
        bounds,
    )
    expected = reference(model, [])[0]
    actual = run_graph(import_onnx(model).module, [])[0]
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(
    "nodes, inputs, message",
    [
        (
            [one_node("ConstantOfShape", ["s"])],
            {"s": ints(2, 3)},
            r"node 'node' \(ConstantOfShape\): the shape \(input 's'\) must be known at "
            "import time",
        ),
        (
            [one_node("Range", ["a", "b", "c"])],
            {"a": np.array(0, np.int64), "b": np.array(5, np.int64), "c": np.array(1, np.int64)},
            r"node 'node' \(Range\): start \(input 'a'\) must be known at import time",
        ),
        (
            [one_node("Tile", ["x", "r"])],
            {"x": X, "r": ints(1, 2, 1)},
            r"node 'node' \(Tile\): repeats \(input 'r'\) must be known at import time",
        ),
        (
            [one_node("DepthToSpace", ["x"], blocksize=2)],
            {"x": floats(1, 6, 2, 2)},
            r"node 'node' \(DepthToSpace\): 6 channels are not a multiple of blocksize\^2 = 4",
        ),
    ],
)
def test_data_dependent_shapes_are_diagnostics(nodes, inputs, message):
    onnx_graph = helper.make_graph(
        nodes,
        "model",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in inputs.items()
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(ModelImportError, match=message):
        import_onnx(model)


def test_gather_nd_through_te_and_loops():
    text = """
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2x2x1xi64>) -> tensor<2x2x4xf32> {
  %g = graph.gather_nd %x, %i batch_dims 1 : (tensor<2x3x4xf32>, tensor<2x2x1xi64>) -> tensor<2x2x4xf32>
  func.return %g : tensor<2x2x4xf32>
}"""
    x = floats(2, 3, 4)
    i = np.array([[[2], [-3]], [[1], [1]]], np.int64)
    expected = np.stack([x[0][[2, 0]], x[1][[1, 1]]])
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    np.testing.assert_array_equal(run_graph(module, [x, i])[0], expected)
    run_pipeline(ctx, module, "convert-graph-to-te")
    np.testing.assert_array_equal(run_te(module, [x, i])[0], expected)
    run_pipeline(ctx, module, "convert-te-to-loops")
    np.testing.assert_array_equal(run_loops(module, [x, i])[0], expected)


GATHER_SCATTER_TILE = """
func.func @main(%x: tensor<4x3xf32>, %i: tensor<4x2xi64>, %rows: tensor<3x1xi64>, %u: tensor<3x3xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<8x3xf32>) {
  %g = graph.gather_elements %x, %i axis 1 : (tensor<4x3xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  %s = graph.scatter_nd %x, %rows, %u reduction "none" : (tensor<4x3xf32>, tensor<3x1xi64>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %m = graph.scatter_nd %x, %rows, %u reduction "max" : (tensor<4x3xf32>, tensor<3x1xi64>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %t = graph.tile %x [2, 1] : (tensor<4x3xf32>) -> tensor<8x3xf32>
  func.return %g, %s, %m, %t : tensor<4x2xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<8x3xf32>
}"""


def test_gather_scatter_tile_through_te_and_loops():
    x, u = floats(4, 3), floats(3, 3)
    i = np.array([[0, 2], [-1, 1], [1, 1], [-3, 0]], np.int64)
    rows = np.array([[3], [-4], [1]], np.int64)
    expected = [
        np.take_along_axis(x, np.where(i < 0, i + 3, i), axis=1),
        np.concatenate([u[1:2], u[2:3], x[2:3], u[0:1]]),
        np.maximum(x, np.stack([u[1], u[2], np.full(3, -np.inf), u[0]])),
        np.tile(x, (2, 1)),
    ]
    ctx = make_context()
    module = Parser(ctx, GATHER_SCATTER_TILE).parse_module()
    for actual, e in zip(run_graph(module, [x, i, rows, u]), expected):
        np.testing.assert_array_equal(actual, e)
    run_pipeline(ctx, module, "convert-graph-to-te")
    for actual, e in zip(run_te(module, [x, i, rows, u]), expected):
        np.testing.assert_array_equal(actual, e)
    run_pipeline(ctx, module, "convert-te-to-loops")
    for actual, e in zip(run_loops(module, [x, i, rows, u]), expected):
        np.testing.assert_array_equal(actual, e)


# -- identity and dropout ---------------------------------------------------------


def test_identity_becomes_graph_identity():
    model = model_of("Identity", {"x": X})
    assert ops_of(model) == ["graph.identity"]
    check(model, [X])


@pytest.mark.parametrize(
    "opset, initializers, attributes, ratio",
    [
        (7, {}, {"ratio": 0.2}, 0.2),
        (12, {}, {}, 0.5),
        (13, {"r": np.array(0.1, np.float32)}, {}, 0.1),
        (13, {"r": np.array(0.3, np.float32), "t": np.array(False)}, {}, 0.3),
        (13, {"r": np.array(0.0, np.float32), "t": np.array(True)}, {}, 0.0),
    ],
)
def test_dropout_at_inference_passes_through(opset, initializers, attributes, ratio):
    model = model_of("Dropout", {"x": X}, initializers, opset=opset, **attributes)
    function = import_onnx(model).function
    (dropout,) = [op for op in function.body.block.ops if isinstance(op, graph.DropoutOp)]
    assert dropout.ratio is not None
    assert dropout.ratio.value.data == pytest.approx(ratio)
    check(model, [X])


def test_dropout_with_a_runtime_ratio_keeps_no_ratio():
    r = np.array(0.4, np.float32)
    model = model_of("Dropout", {"x": X, "r": r}, opset=13)
    function = import_onnx(model).function
    (dropout,) = [op for op in function.body.block.ops if isinstance(op, graph.DropoutOp)]
    assert dropout.ratio is None
    np.testing.assert_array_equal(run_graph(import_onnx(model).module, [X, r])[0], X)


# -- constants --------------------------------------------------------------------


def _constant_model(**value) -> onnx.ModelProto:
    """A Constant node feeding an Add with a graph input of its shape (so the constant
    reaches the function as an operand)."""
    array = _constant_value(**value)
    nodes = [
        helper.make_node("Constant", [], ["c"], **value),
        helper.make_node("Add", ["x", "c"], ["y0"]),
    ]
    onnx_graph = helper.make_graph(
        nodes,
        "constant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, array.shape)],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return declare_output_shapes(model)


def _constant_value(**value) -> np.ndarray:
    ((name, attribute),) = value.items()
    if name == "value":
        return numpy_helper.to_array(attribute)
    if name == "sparse_value":
        return np.zeros(tuple(attribute.dims), np.float32)
    return np.asarray(attribute, np.float32)


@pytest.mark.parametrize(
    "value",
    [
        {"value": numpy_helper.from_array(np.array(2.5, np.float32))},
        {"value": numpy_helper.from_array(floats(2, 3))},
        {"value_float": 1.5},
        {"value_floats": [1.0, -2.0, 3.0]},
    ],
    ids=["0-d value", "value", "value_float", "value_floats"],
)
def test_constant_forms(value: dict):
    x = floats(*_constant_value(**value).shape)
    check(_constant_model(**value), [x])


def test_constant_sparse_value_is_densified():
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0, 2.0], np.float32)),
        numpy_helper.from_array(np.array([1, 5], np.int64)),
        [2, 3],
    )
    model = _constant_model(sparse_value=sparse)
    x = floats(2, 3)
    expected = x + np.array([[0, 1, 0], [0, 0, 2]], np.float32)
    np.testing.assert_array_equal(run_graph(import_onnx(model).module, [x])[0], expected)


def test_integer_constants_drive_shapes():
    nodes = [
        helper.make_node("Constant", [], ["shape"], value_ints=[4, -1]),
        helper.make_node("Constant", [], ["axis"], value_int=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "axis"], ["y0"]),
    ]
    onnx_graph = helper.make_graph(
        nodes,
        "constant_shapes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    check(declare_output_shapes(model), [X])


# -- diagnostics ------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, message",
    [
        (model_of("Reshape", {"x": X}, {"shape": ints(-1, -1)}), r"more than one -1"),
        (model_of("Reshape", {"x": X}, {"shape": ints(5, -1)}), r"cannot reshape \[2, 3, 4\]"),
        (
            model_of("Squeeze", {"x": X}, {"axes": ints(1)}, opset=13),
            r"cannot squeeze axis 1 of size 3",
        ),
        (model_of("Unsqueeze", {"x": X}, {"axes": ints(0, 0)}, opset=13), r"repeat an axis"),
        (model_of("Transpose", {"x": X}, perm=[0, 0, 1]), r"not a permutation of 3 dimensions"),
        (model_of("Concat", {"x": X}, axis=3), r"axis 3 is out of range for rank 3"),
        (
            model_of("Split", {"x": X}, {"split": ints(1, 1)}, outputs=2, axis=1, opset=13),
            r"do not cover the 3",
        ),
        (
            model_of("Split", {"x": X}, outputs=2, axis=1, opset=13),
            r"cannot split 3 elements into 2",
        ),
        (
            model_of(
                "Slice",
                {"x": X},
                {"starts": ints(0), "ends": ints(1), "axes": ints(0), "steps": ints(0)},
                opset=13,
            ),
            r"steps must not be 0",
        ),
        (
            model_of("Pad", {"x": X}, {"pads": ints(0, 3, 0, 0, 0, 0)}, opset=13, mode="reflect"),
            r"reflect pads \(3, 0\) of axis 1 must be smaller than its size 3",
        ),
        (
            model_of("Pad", {"x": X}, {"pads": ints(0, 0)}, opset=13),
            r"pads \[0, 0\] must hold 2 values for each of 3 axes",
        ),
        (
            model_of("Pad", {"x": X}, {"pads": ints(0, 0, 0, 0, 0, 0)}, opset=13, mode="symmetric"),
            r"mode 'symmetric' is not supported",
        ),
        (
            model_of("Gather", {"x": X}, {"i": ints(3)}, axis=1),
            r"indices out of range \[-3, 3\) for axis 1",
        ),
        (
            model_of(
                "Dropout",
                {"x": X},
                {"r": np.array(0.5, np.float32), "t": np.array(True)},
                opset=13,
                seed=-1,
            ),
            r"attribute seed=-1 is not in \[0, 2\*\*32\)",
        ),
    ],
)
def test_diagnostics_name_the_node(model: onnx.ModelProto, message: str):
    with pytest.raises(ModelImportError, match=r"node 'node' \(\w+\): .*" + message):
        import_onnx(model)


def test_runtime_training_mode_is_a_diagnostic():
    # a float32 graph input cannot be a training flag; a computed bool can only come
    # from ops strato does not import yet, so the rule is checked on the converter
    from strato.frontends.onnx.conversion import NodeContext
    from strato.frontends.onnx.convert_layout import convert_dropout

    block = Block(arg_types=[TensorType(f32, [2]), TensorType(f32, [])])
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="node")
    env = {"x": block.args[0], "r": np.array(0.5, np.float32), "t": block.args[1]}
    ctx = NodeContext(node, 0, env, block, {}, None)
    with pytest.raises(
        ModelImportError, match="training_mode \\(input 't'\\) must be known at import time"
    ):
        convert_dropout(ctx)


def test_runtime_shape_input_is_a_diagnostic():
    from strato.frontends.onnx.conversion import NodeContext
    from strato.frontends.onnx.convert_layout import convert_reshape

    block = Block(arg_types=[TensorType(f32, [6]), TensorType(i64, [2])])
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="node")
    ctx = NodeContext(node, 0, {"x": block.args[0], "s": block.args[1]}, block, {}, None)
    with pytest.raises(
        ModelImportError, match="the target shape \\(input 's'\\) must be known at import time"
    ):
        convert_reshape(ctx)


def test_every_import_time_input_belongs_to_an_imported_operator():
    assert set(IMPORT_TIME_INPUTS) <= set(ONNX_CONVERTERS)


# -- the strategies ---------------------------------------------------------------


def lowered_results(text: str, inputs: list[np.ndarray]) -> tuple[list, list, list]:
    """The graph interpreter's, te interpreter's and loop interpreter's results."""
    ctx = make_context()
    expected = run_graph(Parser(ctx, text).parse_module(), inputs)
    module = Parser(ctx, text).parse_module()
    run_pipeline(ctx, module, "convert-graph-to-te")
    module.verify()
    te_results = run_te(module, inputs)
    run_pipeline(ctx, module, "convert-te-to-loops")
    module.verify()
    return expected, te_results, run_loops(module, inputs)


def assert_lowering_preserves(text: str, inputs: list[np.ndarray]) -> None:
    expected, te_results, loop_results = lowered_results(text, inputs)
    for e, t, lo in zip(expected, te_results, loop_results, strict=True):
        np.testing.assert_array_equal(t, e)
        np.testing.assert_array_equal(lo, e)


def _function(input_shapes, result_shapes, body: str, element: str = "f32") -> str:
    def tensor(shape):
        return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{element}>"

    args = ", ".join(f"%a{n}: {tensor(s)}" for n, s in enumerate(input_shapes))
    results = ", ".join(tensor(s) for s in result_shapes)
    return f"func.func @main({args}) -> ({results}) {{\n{body}\n}}"


@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=4),
    data=st.data(),
)
def test_reshape_strategy_matches_numpy(shape: list[int], data: st.DataObject):
    size = int(np.prod(shape))
    target: list[int] = []
    rest = size
    for _ in range(data.draw(st.integers(0, 3))):
        factor = data.draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0]))
        target.append(factor)
        rest //= factor
    target.append(rest)
    target = data.draw(st.permutations(target))
    groups = reshape_groups(shape, target)
    assert [d for g, _ in groups for d in g] == list(range(len(shape)))
    assert [d for _, g in groups for d in g] == list(range(len(target)))
    for source_dims, target_dims in groups:
        assert np.prod([shape[d] for d in source_dims]) == np.prod([target[d] for d in target_dims])
    x = np.arange(size, dtype=np.float32).reshape(shape)
    result_type = f"tensor<{'x'.join(map(str, target))}xf32>"
    source_type = f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}f32>"
    text = (
        f"func.func @main(%a: {source_type}) -> {result_type} {{\n"
        f"  %r = graph.reshape %a : ({source_type}) -> {result_type}\n"
        f"  func.return %r : {result_type}\n}}"
    )
    expected, te_results, loop_results = lowered_results(text, [x])
    np.testing.assert_array_equal(expected[0], x.reshape(target))
    np.testing.assert_array_equal(te_results[0], expected[0])
    np.testing.assert_array_equal(loop_results[0], expected[0])


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    mode=st.sampled_from(list(graph.PadMode)),
    data=st.data(),
)
def test_pad_strategy_matches_numpy(shape: list[int], mode: graph.PadMode, data: st.DataObject):
    limit = (lambda d: d - 1) if mode == graph.PadMode.REFLECT else (lambda d: 6)
    low = [data.draw(st.integers(0, limit(d))) for d in shape]
    high = [data.draw(st.integers(0, limit(d))) for d in shape]
    x = RNG.standard_normal(shape).astype(np.float32)
    block = Block(arg_types=[TensorType(f32, shape)])
    value = 0.5 if mode == graph.PadMode.CONSTANT else None
    op = graph.PadOp(block.args[0], low, high, mode, value)
    block.add_ops([op, func.ReturnOp(op.result)])
    module = ModuleOp(
        [func.FuncOp("main", ([block.args[0].type], [op.result.type]), Region(block))]
    )
    module.verify()
    widths = list(zip(low, high))
    extra = {"constant_values": 0.5} if mode == graph.PadMode.CONSTANT else {}
    expected = np.pad(x, widths, mode=mode.value, **extra)
    np.testing.assert_array_equal(run_graph(module, [x])[0], expected)
    run_pipeline(make_context(), module, "convert-graph-to-te")
    np.testing.assert_array_equal(run_te(module, [x])[0], expected)


def test_every_layout_op_lowers_to_equal_results():
    body = """
  %r = graph.reshape %a0 : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  %t = graph.transpose %a0 [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %c = graph.concat %a0, %a1, %a0 axis 1 : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  %s0, %s1, %s2 = graph.split %a1 axis 1 : (tensor<2x5x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x0x4xf32>, tensor<2x3x4xf32>)
  %sl = graph.slice %a0 starts [1, 2, 3] steps [-1, -2, -3] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %p = graph.pad %a0 low [0, 2, 1] high [1, 0, 3] mode "constant" value -1.000000e+00 : (tensor<2x3x4xf32>) -> tensor<3x5x8xf32>
  %b = graph.broadcast_to %a2 : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %i = graph.identity %a0 : tensor<2x3x4xf32>
  %d = graph.dropout %i ratio 1.000000e-01 : tensor<2x3x4xf32>
  func.return %r, %t, %c, %s0, %s1, %s2, %sl, %p, %b, %d : tensor<4x6xf32>, tensor<4x2x3xf32>, tensor<2x11x4xf32>, tensor<2x2x4xf32>, tensor<2x0x4xf32>, tensor<2x3x4xf32>, tensor<2x2x2xf32>, tensor<3x5x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>"""
    results = [
        [4, 6],
        [4, 2, 3],
        [2, 11, 4],
        [2, 2, 4],
        [2, 0, 4],
        [2, 3, 4],
        [2, 2, 2],
        [3, 5, 8],
        [2, 3, 4],
        [2, 3, 4],
    ]
    text = _function([[2, 3, 4], [2, 5, 4], [3, 1]], results, body)
    assert_lowering_preserves(text, [floats(2, 3, 4), floats(2, 5, 4), floats(3, 1)])


def test_layout_ops_on_integer_tensors_lower():
    body = """
  %t = graph.transpose %a0 [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %p = graph.pad %t low [1, 0] high [0, 2] mode "constant" value 7.000000e+00 : (tensor<3x2xi32>) -> tensor<4x4xi32>
  %c = graph.concat %p, %p axis 0 : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<8x4xi32>
  func.return %c : tensor<8x4xi32>"""
    text = _function([[2, 3]], [[8, 4]], body, element="i32")
    assert_lowering_preserves(text, [np.arange(6, dtype=np.int32).reshape(2, 3)])


def test_layout_ops_are_injective_and_broadcast_to_is_broadcast():
    for op in (
        graph.ReshapeOp,
        graph.TransposeOp,
        graph.ConcatOp,
        graph.SplitOp,
        graph.SliceOp,
        graph.PadOp,
        graph.GatherOp,
        graph.IdentityOp,
        graph.DropoutOp,
    ):
        assert op.PATTERN_KIND == graph.PatternKind.INJECTIVE
    assert graph.BroadcastToOp.PATTERN_KIND == graph.PatternKind.BROADCAST


# -- verifier ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, message",
    [
        ("%r = graph.reshape %a0 : (tensor<2x3x4xf32>) -> tensor<5x5xf32>", "cannot reshape"),
        (
            "%r = graph.slice %a0 starts [0, 0, 3] steps [1, 1, 1] : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>",
            "reads indices 3 to 4",
        ),
        (
            '%r = graph.pad %a0 low [0, 0, -1] high [0, 0, 0] mode "constant" : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>',
            "must be >= 0",
        ),
        (
            "%r = graph.concat %a0, %a0 axis 3 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>",
            "axis 3 is out of range",
        ),
    ],
)
def test_verifier_errors(body: str, message: str):
    text = _function([[2, 3, 4]], [], f"  {body}\n  func.return")
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(VerifyException, match=message):
        module.verify()


# -- ONNX node tests --------------------------------------------------------------

LAYOUT_NODE_TESTS = (
    r"^test_(flatten|reshape|transpose|concat|split(?!_to_sequence)|slice|squeeze|unsqueeze|gather|shape|expand"
    r"|identity|dropout|training_dropout|constant|edge_pad|reflect_pad|wrap_pad|constant_pad"
    r"|gatherelements|gather_elements|gathernd|scatternd|tile|depthtospace|spacetodepth|range)"
)

# Cases that need more than this family: other element types at the model's
# boundary, zero-sized graph inputs, non-tensor values, or random training dropout.
NEEDS_OTHER_WORK = {
    **dict.fromkeys(
        [
            "test_gather_0",
            "test_gather_1",
            "test_gather_2d_indices",
            "test_gather_negative_indices",
        ],
        "int64 index tensors as graph inputs",
    ),
    **dict.fromkeys(
        [
            "test_shape",
            "test_shape_example",
            "test_shape_start_1",
            "test_shape_end_1",
            "test_shape_start_negative_1",
            "test_shape_end_negative_1",
            "test_shape_start_1_end_negative_1",
            "test_shape_start_1_end_2",
            "test_shape_clip_start",
            "test_shape_clip_end",
            "test_shape_start_greater_than_end",
        ],
        "int64 graph outputs",
    ),
    **dict.fromkeys(
        [
            "test_dropout_default_mask",
            "test_dropout_default_mask_ratio",
            "test_training_dropout_zero_ratio_mask",
        ],
        "bool graph outputs (the mask)",
    ),
    **dict.fromkeys(["test_edge_pad", "test_reflect_pad", "test_wrap_pad"], "int32 graph inputs"),
    **dict.fromkeys(
        [
            "test_reshape_allowzero_reordered",
            "test_split_zero_size_splits_opset13",
            "test_split_zero_size_splits_opset18",
        ],
        "graph inputs with a zero-sized dimension",
    ),
    **dict.fromkeys(
        ["test_identity_sequence", "test_identity_opt"],
        "sequence and optional values, which the backend compiles per structure "
        "(test_onnx_sequences.py) and this direct import does not",
    ),
}


@functools.cache
def _target_node_tests() -> tuple:
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS
    from strato.testing.onnx_node_tests import TARGET_OPS, select_node_tests

    # every operator strato imports, whether or not the CI node-test run selects it yet
    return tuple(select_node_tests(TARGET_OPS | set(ONNX_CONVERTERS)))


def node_test_cases(pattern: str) -> list:
    """ONNX's node tests of the target operators whose names match `pattern` (loaded
    once per session: loading them is the slow part)."""
    return [case for case in _target_node_tests() if re.search(pattern, case.name)]


def run_bound_node_test(case, mode: str) -> str:
    """Runs `case` with the graph inputs strato needs at compile time bound to each data
    set's values, as the ONNX backend binds them."""
    from strato.onnx_backend import bind_inputs, compile_time_inputs
    from strato.testing.onnx_node_tests import compare_outputs

    names = [value.name for value in case.model.graph.input]
    bound = compile_time_inputs(case.model)
    for inputs, references in case.data_sets:
        arrays = [
            numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)
            for v in inputs
        ]
        values = dict(zip(names, arrays))
        model = bind_inputs(case.model, {name: values[name] for name in bound})
        rest = [values[name] for name in names if name not in bound]
        if mode == "graph":
            imported = import_onnx(model)
            outputs = run_graph(imported.module, rest, imported.function_name)
        else:
            outputs = strato.compile(model)(*rest)
        expected = [
            numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)
            for v in references
        ]
        reason = compare_outputs(list(outputs), expected, case.rtol, case.atol)
        if reason:
            return reason
    return ""


def check_node_tests(pattern: str, mode: str, other_work: dict[str, str]) -> None:
    """Every case matching `pattern` passes, except those of `other_work`, which may
    instead fail with a one-line diagnostic (never a crash or a wrong result)."""
    from strato.diagnostics import StratoError

    cases = node_test_cases(pattern)
    assert cases
    failures = {}
    for case in cases:
        try:
            reason = run_bound_node_test(case, mode)
        except StratoError as error:
            reason = "" if case.name in other_work else str(error)
        except Exception as error:  # noqa: BLE001 - collected and reported below
            reason = f"internal error: {type(error).__name__}: {error}"
        if reason:
            failures[case.name] = reason
    assert not failures, "\n".join(f"{name}: {why}" for name, why in failures.items())


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_onnx_node_tests(mode: str):
    check_node_tests(LAYOUT_NODE_TESTS, mode, NEEDS_OTHER_WORK)
