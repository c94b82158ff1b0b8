"""ONNX models with dynamic dimensions compiled once for every size.

A model whose operators all take run-time dimensions (`RUN_TIME_ONNX_OPS`) imports with
`?` where its inputs are dynamic, compiles to one entry that takes the sizes after its
buffers, and runs at any size; its signature, C header and saved file name the sizes.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import SymbolicShapeError
from strato.frontends.onnx.importer import import_onnx
from strato.runtime.signature import InputMismatchError
from strato.specializing import ShapeSpecializingModel
from strato.targets.llvm.model import LLVMCompiledModel
from strato.testing.dynamic_models import (
    attention,
    counted_positions,
    dynamo_masked_scores,
    encoder_block,
    exported_attention,
    exported_token_model,
    mlp,
    multi_head_attention,
    token_embedding,
)

RNG = np.random.default_rng(0)


def reference(proto: onnx.ModelProto, *arrays: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, arrays, strict=True)))


def test_a_dynamic_batch_compiles_once_and_runs_at_every_size():
    proto = mlp()
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel)
    (x_spec,), (p_spec,) = model.inputs, model.outputs
    assert str(x_spec) == "'x' float32[batch, 16]" and str(p_spec) == "'p' float32[batch, 10]"
    assert model.signature.sizes == ("batch",)
    for batch in (1, 7, 0, 300):
        x = RNG.standard_normal((batch, 16)).astype(np.float32)
        (p,) = model(x)
        assert p.shape == (batch, 10)
        np.testing.assert_allclose(p, reference(proto, x)[0], rtol=1e-5, atol=1e-6)
    # a view that is not contiguous, and an ndarray subclass, run as the array does
    x = RNG.standard_normal((16, 5)).astype(np.float32)
    (expected,) = model(np.ascontiguousarray(x.T))
    (p,) = model(x.T)
    np.testing.assert_array_equal(p, expected)
    (p,) = model(np.ascontiguousarray(x.T).view(np.recarray))
    np.testing.assert_array_equal(p, expected)
    with pytest.raises(InputMismatchError, match=r"shape is \[5, 17\], expected \[batch, 16\]"):
        model(np.zeros((5, 17), np.float32))


def test_batch_and_sequence_of_two_inputs_are_one_size_each():
    proto = encoder_block()
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel)
    assert model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 9), (3, 128), (1, 0)):
        x, r = (RNG.standard_normal((batch, sequence, 32)).astype(np.float32) for _ in range(2))
        (z,) = model(x, r)
        np.testing.assert_allclose(z, reference(proto, x, r)[0], rtol=1e-4, atol=1e-5)
    x = np.zeros((2, 5, 32), np.float32)
    with pytest.raises(InputMismatchError, match=r"input 1 'r' float32\[batch, sequence, 32\]: dimension 1 \('sequence'\) is 4, but input 0 'x' gives 'sequence' = 5"):
        model(x, np.zeros((2, 4, 32), np.float32))
    with pytest.raises(InputMismatchError, match=r"shape is \[2, 5, 31\], expected \[batch, sequence, 32\]"):
        model(x, np.zeros((2, 5, 31), np.float32))


def test_attention_over_a_run_time_sequence_compiles_once():
    """Its softmax normalizes over the run-time sequence and its last product contracts
    it: reductions of run-time extents."""
    proto = attention()
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 7), (1, 64), (2, 0)):
        x = RNG.standard_normal((batch, sequence, 16)).astype(np.float32)
        (y,) = model(x)
        np.testing.assert_allclose(y, reference(proto, x)[0], rtol=1e-4, atol=1e-5)


def test_multi_head_attention_splits_and_merges_heads_at_run_time_sizes():
    """Reshape [0, 0, heads, width / heads] keeps batch and sequence and splits the
    static width; its heads run through transposes and products over the sequence."""
    proto = multi_head_attention()
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 7), (1, 50), (2, 0)):
        x = RNG.standard_normal((batch, sequence, 32)).astype(np.float32)
        (y,) = model(x)
        np.testing.assert_allclose(y, reference(proto, x)[0], rtol=1e-4, atol=1e-5)


def test_mean_pooling_over_a_run_time_sequence_compiles_once():
    """y[b] = mean over the sequence of tanh(x[b] @ W) and a layer norm of it: the
    count of a run-time extent, counted once per call."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["p"]),
        helper.make_node("Tanh", ["p"], ["t"]),
        helper.make_node("ReduceMean", ["t", "axes"], ["m"], keepdims=0),
        helper.make_node("LayerNormalization", ["t", "g", "b"], ["n"], axis=1, epsilon=1e-5),
    ]
    graph = helper.make_graph(
        nodes,
        "pooling",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 16])],
        [
            helper.make_tensor_value_info("m", TensorProto.FLOAT, ["batch", 16]),
            helper.make_tensor_value_info("n", TensorProto.FLOAT, ["batch", "sequence", 16]),
        ],
        [
            numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "w"),
            numpy_helper.from_array(np.array([1], np.int64), "axes"),
            numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "g"),
            numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (3, 7), (2, 100)):
        x = rng.standard_normal((batch, sequence, 16)).astype(np.float32)
        for ours, theirs in zip(model(x), reference(proto, x), strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def test_features_joined_along_a_static_axis_compile_once():
    """Concat of x and relu(x) along the features of a run-time batch and sequence,
    then a dense layer: compiled once for every size (by default too: the kernel runs
    as blocks of rows), equal to onnxruntime."""
    rng = np.random.default_rng(4)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Concat", ["x", "r"], ["c"], axis=-1),
        helper.make_node("MatMul", ["c", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "joined",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 32])],
        [numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (3, 7), (2, 100), (0, 4)):
        x = rng.standard_normal((batch, sequence, 8)).astype(np.float32)
        (ours,) = model(x)
        np.testing.assert_allclose(ours, reference(proto, x)[0], rtol=1e-4, atol=1e-5)


def test_slices_of_a_static_axis_compile_once():
    """A rotary embedding's rotate-half over [batch, heads, sequence, 16] of run-time
    batch and sequence: Slice of the last (static) axis into halves, the second's end
    computed from the Shape (as the TorchScript exporter writes x[..., : d // 2]), Neg,
    Concat, then x * cos + rotated * sin with cos and sin of the sequence's positions
    read from tables by a Slice of their static axis. Compiled once for every size,
    equal to onnxruntime; a Slice of the run-time sequence itself compiles per size."""
    rng = np.random.default_rng(5)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "last"], ["width"], axis=0),
        helper.make_node("Div", ["width", "two"], ["half"]),
        helper.make_node("Unsqueeze", ["half", "axis0"], ["half1"]),
        helper.make_node("Slice", ["x", "zero1", "half1", "minus1"], ["x1"]),
        helper.make_node("Slice", ["x", "half1", "big", "minus1"], ["x2"]),
        helper.make_node("Neg", ["x2"], ["nx2"]),
        helper.make_node("Concat", ["nx2", "x1"], ["rotated"], axis=-1),
        helper.make_node("Slice", ["table", "zero1", "sixteen", "minus1", "one1"], ["cos"]),
        helper.make_node("Mul", ["x", "cos"], ["a"]),
        helper.make_node("Mul", ["rotated", "sin"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"]),
    ]
    ints = {"last": 3, "two": 2, "axis0": [0], "zero1": [0], "minus1": [-1], "big": [1 << 30], "sixteen": [16], "one1": [1]}
    weights = {"table": rng.standard_normal((1, 1, 1, 24)), "sin": rng.standard_normal(16)}
    proto = _heads_model("rotary", nodes, ints, weights, 4, 4)
    _check_compiled_once(proto, 4, rng)

    along = helper.make_graph(
        [helper.make_node("Slice", ["x", "one1", "big", "two1"], ["y"])],
        "along",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["sequence", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in {"one1": [1], "big": [1 << 30], "two1": [0]}.items()],
    )
    proto = helper.make_model(along, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, ShapeSpecializingModel)
    # why it compiles per size: the node that kept it from compiling once, and what
    assert model.why_per_size == (
        "node #0 (Slice) slices a dimension of run-time size other than by dropping "
        "elements at its ends"
    )
    refused = r"it does not compile once for every size: node #0 \(Slice\) slices a dimension of run-time size"
    with pytest.raises(SymbolicShapeError, match=refused):
        strato.compile(proto, cache=False, specialize=False)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    np.testing.assert_array_equal(model(x)[0], x[1:])


def test_grouped_heads_repeated_between_run_time_dimensions_compile_once():
    """Grouped-query attention's repeat of the key heads, as the TorchScript exporter
    writes it: [batch, 2, sequence, 16] unsqueezed to [batch, 2, 1, sequence, 16],
    expanded to [batch, 2, 2, sequence, 16] and reshaped to [batch, 4, sequence, 16]
    (targets computed from the Shape): a reshape of the static dimensions between two
    run-time ones, which compiles once and equals onnxruntime."""
    rng = np.random.default_rng(6)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "i2"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["x", "i2"], ["x5"]),
        helper.make_node("Concat", ["b", "two", "two", "s", "sixteen"], ["wide"], axis=0),
        helper.make_node("Expand", ["x5", "wide"], ["repeated"]),
        helper.make_node("Concat", ["b", "four", "s", "sixteen"], ["heads"], axis=0),
        helper.make_node("Reshape", ["repeated", "heads"], ["k"]),
        helper.make_node("Mul", ["k", "w"], ["y"]),
    ]
    ints = {"i0": [0], "i2": [2], "two": [2], "four": [4], "sixteen": [16]}
    proto = _heads_model("repeat_kv", nodes, ints, {"w": rng.standard_normal(16)}, 2, 4)
    _check_compiled_once(proto, 2, rng)


def _heads_model(name: str, nodes, ints: dict, weights: dict, heads_in: int, heads_out: int) -> onnx.ModelProto:
    """A graph of `nodes` from x [batch, heads_in, sequence, 16] to y [batch, heads_out,
    sequence, 16], with int64 constants `ints` and float32 `weights`."""
    initializers = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
    initializers += [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in weights.items()]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", heads_in, "sequence", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", heads_out, "sequence", 16])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check_compiled_once(
    proto: onnx.ModelProto,
    heads: int,
    rng: np.random.Generator,
    sizes: tuple[tuple[int, int], ...] = ((1, 1), (2, 7), (1, 40), (0, 3)),
) -> None:
    """`proto` compiles once for every batch and sequence, and equals onnxruntime at
    `sizes`."""
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in sizes:
        x = rng.standard_normal((batch, heads, sequence, 16)).astype(np.float32)
        (ours,) = model(x)
        np.testing.assert_allclose(ours, reference(proto, x)[0], rtol=1e-5, atol=1e-6)


def merged_heads() -> list[onnx.NodeProto]:
    """x [batch, 2, sequence, 16] reshaped to q [-1, sequence, 16] (batch and heads
    merged, torch's bmm attention), its sizes b and s read from the Shape (the graph
    needs the constants `i0`, `i2`, `minus1` and `sixteen`)."""
    node = helper.make_node
    return [
        node("Shape", ["x"], ["shape"]),
        node("Gather", ["shape", "i0"], ["b"], axis=0),
        node("Gather", ["shape", "i2"], ["s"], axis=0),
        node("Concat", ["minus1", "s", "sixteen"], ["merged"], axis=0),
        node("Reshape", ["x", "merged"], ["q"]),
    ]


def heads_again(value: str) -> list[onnx.NodeProto]:
    """`value`, merged as `merged_heads` merges, reshaped back to y [batch, 2, sequence,
    16] (also the constant `two`)."""
    return [
        helper.make_node("Concat", ["b", "two", "s", "sixteen"], ["heads"], axis=0),
        helper.make_node("Reshape", [value, "heads"], ["y"]),
    ]


def test_products_of_merged_heads_compile_once():
    """Attention written with torch's bmm, as older exports of DeBERTa and BART do: q
    and k of [batch, 2, sequence, 16] reshaped to [-1, sequence, 16] (batch and heads
    merged), k transposed, scaled by a Div, multiplied (a MatMul of two merged tensors),
    biased, put through Softmax, multiplied by q again (as the values) and reshaped
    back. Compiled once, equal to onnxruntime."""
    rng = np.random.default_rng(8)
    node = helper.make_node
    nodes = [
        *merged_heads(),
        node("Mul", ["q", "wk"], ["k"]),
        node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        node("Div", ["kt", "scale"], ["scaled"]),
        node("MatMul", ["q", "scaled"], ["scores"]),
        node("Add", ["scores", "bias"], ["biased"]),
        node("Softmax", ["biased"], ["weights"], axis=2),
        node("MatMul", ["weights", "q"], ["context"]),
        *heads_again("context"),
    ]
    ints = {"i0": [0], "i2": [2], "minus1": [-1], "two": [2], "sixteen": [16]}
    weights = {"wk": rng.standard_normal(16), "scale": 4.0, "bias": rng.standard_normal((1, 1))}
    proto = _heads_model("bmm_attention", nodes, ints, weights, 2, 2)
    _check_compiled_once(proto, 2, rng)


@pytest.mark.parametrize("opset", [17, 18])
def test_norms_of_merged_heads_compile_once(opset):
    """YOSO's normalized q: x of [batch, 2, sequence, 16] merged to [-1, sequence, 16],
    its L2 norm over the last axis (axes an attribute, or an input from opset 18),
    clipped from below only (Clip's max not given), expanded to q's shape, q divided by
    it, a dimension of 1 added after the merged one and removed, and the arccosine:
    compiled once, equal to onnxruntime."""
    rng = np.random.default_rng(10)
    node = helper.make_node
    norm = (
        node("ReduceL2", ["q"], ["norm"], axes=[-1], keepdims=1)
        if opset == 17
        else node("ReduceL2", ["q", "last"], ["norm"], keepdims=1)
    )
    nodes = [
        *merged_heads(),
        norm,
        node("Clip", ["norm", "tiny", ""], ["clipped"]),
        node("Shape", ["q"], ["q_shape"]),
        node("Expand", ["clipped", "q_shape"], ["spread"]),
        node("Div", ["q", "spread"], ["unit"]),
        node("Unsqueeze", ["unit", "one1"], ["wide"]),
        node("Squeeze", ["wide", "minus3"], ["narrow"]),
        node("Acos", ["narrow"], ["angle"]),
        *heads_again("angle"),
    ]
    ints = {"i0": [0], "i2": [2], "minus1": [-1], "two": [2], "sixteen": [16], "last": [-1], "one1": [1], "minus3": [-3]}
    proto = _heads_model("norms", nodes, ints, {"tiny": 1e-3}, 2, 2)
    proto.opset_import[0].version = opset
    _check_compiled_once(proto, 2, rng)


def positions_along(axis: str, length: str = "length") -> list[onnx.NodeProto]:
    """The exporters' positions along a dimension of x: its size `length` read from the
    Shape at the scalar index constant `axis`, and Range(zero, length, one) as
    "positions" (the graph needs the constants `zero` and `one`)."""
    return [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", axis], [length], axis=0),
        helper.make_node("Range", ["zero", length, "one"], ["positions"]),
    ]


def test_positions_flattened_and_a_slice_of_the_whole_sequence_compile_once():
    """XGLM's positions [1, sequence] reshaped to [-1] (the -1 is the sequence), offset
    and looked up in a table; LUKE's slice of the sequence to its own length (of the
    words, with no entities): compiled once, equal to onnxruntime."""
    rng = np.random.default_rng(11)
    node = helper.make_node
    nodes = [
        *positions_along("axis2", "s"),
        node("Unsqueeze", ["positions", "i0"], ["row"]),
        node("Add", ["row", "two"], ["offset"]),
        node("Reshape", ["offset", "minus1"], ["flat"]),
        node("Gather", ["table", "flat"], ["embedded"], axis=0),
        node("Add", ["x", "embedded"], ["z"]),
        node("Unsqueeze", ["s", "i0"], ["end"]),
        node("Slice", ["z", "i0", "end", "i2"], ["y"]),
    ]
    ints = {"i0": [0], "i2": [2], "axis2": 2, "minus1": [-1], "two": 2, "zero": 0, "one": 1}
    proto = _heads_model("positions", nodes, ints, {"table": rng.standard_normal((64, 16))}, 2, 2)
    _check_compiled_once(proto, 2, rng)


def test_a_reshape_to_a_product_of_sizes_compiles_once():
    """Bloom's merge of batch and heads, with the merged size computed (`batch * 2`,
    from the Shape) and the sequence left to -1, an element-wise op, and the reshape
    back to [batch, 2, sequence, 16] whose heads are the merged size divided by the
    batch: compiled once, equal to onnxruntime."""
    rng = np.random.default_rng(9)
    node = helper.make_node
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Gather", ["shape", "i0"], ["b"], axis=0),
        node("Mul", ["b", "two"], ["rows"]),
        node("Concat", ["rows", "minus1", "sixteen"], ["merged"], axis=0),
        node("Reshape", ["x", "merged"], ["flat"]),
        node("Tanh", ["flat"], ["t"]),
        node("Shape", ["t"], ["flat_shape"]),
        node("Gather", ["flat_shape", "i0"], ["rows_again"], axis=0),
        node("Div", ["rows_again", "b"], ["heads"]),
        node("Gather", ["flat_shape", "i1"], ["s"], axis=0),
        node("Concat", ["b", "heads", "s", "sixteen"], ["back"], axis=0),
        node("Reshape", ["t", "back"], ["y"]),
    ]
    ints = {"i0": [0], "i1": [1], "two": [2], "minus1": [-1], "sixteen": [16]}
    proto = _heads_model("product_of_sizes", nodes, ints, {}, 2, 2)
    # no batch of 0: onnxruntime cannot tell the -1 of an empty tensor
    _check_compiled_once(proto, 2, rng, ((1, 1), (2, 7), (3, 40)))


def test_a_window_of_a_table_to_the_sequence_broadcast_to_the_batch_compiles_once():
    """GPT-Neo's causal mask and MPNet's position bias: a static table [1, 2, 64, 64]
    sliced along its rows from `sequence - sequence` to the sequence, then along its
    columns from 0 to the sequence, and expanded to [batch, 2, sequence, sequence] with
    the sizes read from a mask of rank 2 (no tensor of the result's rank has the batch:
    it is broadcast like the positions along it). Compiled once, equal to
    onnxruntime."""
    rng = np.random.default_rng(10)
    node = helper.make_node
    nodes = [
        node("Shape", ["mask"], ["shape"]),
        node("Gather", ["shape", "i0"], ["b"], axis=0),
        node("Gather", ["shape", "i1"], ["s"], axis=0),
        node("Sub", ["s", "s"], ["start"]),
        node("Slice", ["table", "start", "s", "i2"], ["rows"]),
        node("Slice", ["rows", "zero", "s", "i3"], ["window"]),
        node("Concat", ["b", "two", "s", "s"], ["target"], axis=0),
        node("Expand", ["window", "target"], ["y"]),
    ]
    ints = {"i0": [0], "i1": [1], "i2": [2], "i3": [3], "zero": [0], "two": [2]}
    graph = helper.make_graph(
        nodes,
        "window",
        [helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, "sequence", "sequence"])],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
        + [numpy_helper.from_array(rng.standard_normal((1, 2, 64, 64)).astype(np.float32), "table")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (3, 7), (2, 64), (0, 5)):
        mask = np.ones((batch, sequence), np.float32)
        np.testing.assert_array_equal(model(mask)[0], reference(proto, mask)[0])


def test_a_tile_of_static_axes_compiles_once():
    """CodeGen's rotary tables repeated along the head width: a Tile of [batch, 2,
    sequence, 16] by [1, 2, 1, 1] (the copies joined along the heads), compiled once and
    equal to onnxruntime; a Tile that repeats the sequence compiles per size and says
    why."""
    rng = np.random.default_rng(11)
    nodes = [helper.make_node("Tile", ["x", "repeats"], ["y"])]
    proto = _heads_model("tile", nodes, {"repeats": [1, 2, 1, 1]}, {}, 2, 4)
    _check_compiled_once(proto, 2, rng)
    along = _heads_model("tile_along", nodes, {"repeats": [1, 2, 2, 1]}, {}, 2, 4)
    model = strato.compile(along, cache=False)
    assert isinstance(model, ShapeSpecializingModel)
    assert model.why_per_size == "node #0 (Tile) repeats a dimension of run-time size"
    x = rng.standard_normal((1, 2, 3, 16)).astype(np.float32)
    np.testing.assert_array_equal(model(x)[0], reference(along, x)[0])


def conv_over_sequence(rng, outputs: int, group: int, kernel: int, **attrs) -> onnx.ModelProto:
    """A Conv with a bias over [batch, 8, sequence], of `outputs` channels."""
    weight = rng.standard_normal((outputs, 8 // group, kernel)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], group=group, **attrs)],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", outputs, None])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(rng.standard_normal(outputs).astype(np.float32), "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("outputs", "group", "kernel", "attrs"),
    [
        (12, 1, 1, {}),  # SqueezeBERT's: one position
        (12, 4, 1, {}),
        (12, 1, 3, {"pads": [1, 1]}),
        (8, 8, 9, {"pads": [4, 4]}),  # ConvBERT's depthwise span convolution
        (16, 8, 3, {"pads": [2, 2], "dilations": [2]}),  # grouped, two outputs a group
        (6, 2, 3, {"pads": [0, 4], "dilations": [2]}),  # all the padding at the end
        (12, 1, 4, {"auto_pad": "SAME_UPPER"}),
    ],
)
def test_convolutions_along_the_sequence_that_keep_its_length_compile_once(outputs, group, kernel, attrs):
    """Convolutions over [batch, 8, sequence], with a bias, of a kernel of one position
    (a product at each position) or wider, with stride 1 and pads that keep the length
    (a product per tap of the input shifted along the sequence): compiled once, equal
    to onnxruntime at every size."""
    rng = np.random.default_rng(12)
    proto = conv_over_sequence(rng, outputs, group, kernel, **attrs)
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 7), (3, 40), (0, 3), (1, 2)):
        x = rng.standard_normal((batch, 8, sequence)).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], reference(proto, x)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kernel", "attrs", "length", "least"),
    [
        (3, {"pads": [0, 0]}, "sequence - 2", 2),  # no padding: two positions fewer
        (3, {"pads": [2, 2]}, "sequence + 2", 1),  # more than keeps the length
        # the first tap reads a zero, then x without its last 6 positions (at least
        # one of them): the model takes 7 at least, though its output exists from 5
        (4, {"pads": [1, 0], "dilations": [2]}, "sequence - 5", 7),
        (5, {"pads": [3, 0]}, "sequence - 1", 5),
    ],
)
def test_convolutions_that_change_the_sequence_length_compile_once(kernel, attrs, length, least):
    """Pads other than what keeps the sequence's length give an output of a size
    computed from it (each tap reads the input sliced and padded to that length):
    compiled once, equal to onnxruntime at every size the model takes; a shorter
    sequence is refused by name."""
    rng = np.random.default_rng(13)
    proto = conv_over_sequence(rng, 12, 1, kernel, **attrs)
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.outputs[0].dims == ("batch", None, length)
    for batch, sequence in ((1, least + 1), (2, 7), (3, 40), (0, 9)):
        x = rng.standard_normal((batch, 8, sequence)).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], reference(proto, x)[0], rtol=1e-5, atol=1e-5)
    if least > 1:
        with pytest.raises(InputMismatchError, match=f"less than the least the model takes, {least}"):
            model(np.zeros((1, 8, least - 1), np.float32))


def test_strided_convolutions_along_the_sequence_compile_per_size():
    """A stride along the sequence: compiled per size, saying why."""
    rng = np.random.default_rng(13)
    proto = conv_over_sequence(rng, 12, 1, 3, pads=[1, 1], strides=[2])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, ShapeSpecializingModel)
    assert model.why_per_size == (
        "node #0 (Conv) takes run-time dimensions with a kernel of one position, or one "
        "along a run-time dimension by stride 1"
    )
    x = rng.standard_normal((2, 8, 9)).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], reference(proto, x)[0], rtol=1e-5, atol=1e-5)


def shifted_tokens(slices: list[tuple[int, int, list[int]]]) -> onnx.ModelProto:
    """x [batch, sequence, 4] sliced along the sequence (start, end) and padded back
    (pads of [batch, sequence, 4]) per entry of `slices`, the pieces joined along the
    last axis with x: MobileBERT's trigram input."""
    nodes, pieces, inits = [], ["x"], []
    for n, (start, end, pads) in enumerate(slices):
        inits += [
            numpy_helper.from_array(np.array([start]), f"start{n}"),
            numpy_helper.from_array(np.array([end]), f"end{n}"),
            numpy_helper.from_array(np.array([1]), f"axis{n}"),
            numpy_helper.from_array(np.array(pads), f"pads{n}"),
        ]
        nodes += [
            helper.make_node("Slice", ["x", f"start{n}", f"end{n}", f"axis{n}"], [f"s{n}"]),
            helper.make_node("Pad", [f"s{n}", f"pads{n}"], [f"p{n}"]),
        ]
        pieces.append(f"p{n}")
    nodes.append(helper.make_node("Concat", pieces, ["y"], axis=2))
    graph = helper.make_graph(
        nodes,
        "shifts",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 4 * len(pieces)])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_slices_of_the_sequence_padded_back_compile_once():
    """x[:, 1:] padded at the end, x[:, :-1] padded at the start, x[:, 2:] padded by two
    at the end, x[:, 0:] (with the batch and features padded by 0): each a shift along
    the sequence, compiled once, equal to onnxruntime; a sequence shorter than what a
    slice takes is refused naming the least size."""
    end = 2**63 - 1
    proto = shifted_tokens([
        (1, end, [0, 0, 0, 0, 1, 0]),
        (0, -1, [0, 1, 0, 0, 0, 0]),
        (2, end, [0, 0, 0, 0, 2, 0]),
        (0, end, [0, 0, 0, 0, 0, 0]),
    ])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 2), (2, 3), (3, 17), (0, 5)):
        x = RNG.standard_normal((batch, sequence, 4)).astype(np.float32)
        np.testing.assert_array_equal(model(x)[0], reference(proto, x)[0])
    with pytest.raises(InputMismatchError, match="sequence.*less than the least the model takes, 2"):
        model(np.zeros((1, 1, 4), np.float32))


@pytest.mark.parametrize("offsets_first", [True, False])
def test_windows_of_the_padded_sequence_compile_once(offsets_first):
    """ConvBERT's span convolution (torch's unfold along the sequence): x [batch,
    sequence, 4] transposed, padded by 2 each side along the sequence, and gathered at
    the positions Range(0, (sequence + 4) - 4) plus each of the offsets 0..4 (a column
    or a row); the windows [batch, sequence, 4, 5] merged with half the channels into
    [-1, 2, 5], a Softmax over each window, merged again as [-1, 20] and reshaped back
    to [batch, sequence, 20]: compiled once, equal to onnxruntime."""
    node = helper.make_node
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Gather", ["shape", "one"], ["s"], axis=0),
        node("Gather", ["shape", "zero"], ["b"], axis=0),
        node("Add", ["s", "four"], ["longer"]),
        node("Sub", ["longer", "four"], ["length"]),
        node("Range", ["zero", "length", "one"], ["positions"]),
        node("Unsqueeze", ["positions", "axis0" if offsets_first else "axis1"], ["along"]),
        node("Add", ["along", "offsets"], ["index"]),
        node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        node("Pad", ["xt", "pads"], ["padded"]),
        node("Gather", ["padded", "index"], ["windows"], axis=2),
        node("Transpose", ["windows"], ["rows"], perm=[0, 3, 1, 2] if offsets_first else [0, 2, 1, 3]),
        node("Reshape", ["rows", "split"], ["merged"]),
        node("Softmax", ["merged"], ["weights"], axis=2),
        node("Reshape", ["weights", "flat"], ["joined"]),
        node("Unsqueeze", ["b", "axis0"], ["b1"]),
        node("Concat", ["b1", "minus1", "twenty"], ["back"], axis=0),
        node("Reshape", ["joined", "back"], ["y"]),
    ]
    offsets = np.arange(5).reshape((5, 1) if offsets_first else (1, 5))
    ints = {
        "zero": 0, "one": 1, "four": 4, "axis0": [0], "axis1": [1], "offsets": offsets,
        "pads": [0, 0, 2, 0, 0, 2], "split": [-1, 2, 5], "flat": [-1, 20], "minus1": [-1],
        "twenty": [20],
    }  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "windows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 20])],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 7), (3, 40), (1, 2)):
        x = RNG.standard_normal((batch, sequence, 4)).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], reference(proto, x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("slices", "length"),
    [
        ([(1, 2**63 - 1, [0, 0, 0, 0, 2, 0])], "sequence + 1"),  # padded to another length
        ([(2, 2**63 - 1, [0, 1, 0, 0, 1, 0])], "sequence"),  # back at both ends
        ([(1, -1, [0, 0, 0, 0, 0, 0])], "sequence - 2"),  # not padded at all
    ],
)
def test_slices_of_the_sequence_of_another_length_compile_once(slices, length):
    """A slice padded to another length, or back to its length at both ends (a shift
    and a zero at the start), or not at all: a tensor of a size computed from the
    sequence's, compiled once, equal to onnxruntime."""
    proto = shifted_tokens(slices)
    proto.graph.node[-1].input[:] = ["p0"]
    proto.graph.output[0].type.tensor_type.shape.dim[1].dim_param = "length"
    proto.graph.output[0].type.tensor_type.shape.dim[2].dim_value = 4
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.outputs[0].dims == ("batch", length, None)
    for batch, sequence in ((1, 3), (2, 5), (3, 40), (0, 4)):
        x = RNG.standard_normal((batch, sequence, 4)).astype(np.float32)
        np.testing.assert_array_equal(model(x)[0], reference(proto, x)[0])


@pytest.mark.parametrize(
    ("slices", "why"),
    [
        ([(0, 3, [0, 0, 0, 0, 0, 0])], "slices a dimension of run-time size other than by dropping"),
        ([(-2, 2**63 - 1, [0, 0, 0, 0, 0, 0])], "slices a dimension of run-time size other than by dropping"),
    ],
)
def test_windows_of_the_sequence_of_a_fixed_length_compile_per_size(slices, why):
    """A window of three tokens, the last two: of a fixed length, not one computed
    from the sequence's, so the model compiles per size and says why."""
    proto = shifted_tokens(slices)
    # the concatenation needs the pieces' lengths equal: compare each piece alone
    proto.graph.node[-1].input[:] = ["p0"]
    proto.graph.output[0].type.tensor_type.shape.dim[1].dim_param = "length"
    proto.graph.output[0].type.tensor_type.shape.dim[2].dim_value = 4
    model = strato.compile(proto, cache=False)
    assert isinstance(model, ShapeSpecializingModel)
    assert why in model.why_per_size
    x = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    np.testing.assert_array_equal(model(x)[0], reference(proto, x)[0])


def test_position_ids_counted_along_the_sequence_compile_once():
    """RoBERTa's position ids: the running count of the tokens that are not padding
    (CumSum along the run-time sequence) times the mask, plus the padding index, then
    their embeddings: compiled once, equal to onnxruntime with padding anywhere."""
    rng = np.random.default_rng(5)
    proto = counted_positions(table=128)
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (3, 7), (2, 100), (0, 5)):
        ids = rng.integers(0, 4, (batch, sequence)).astype(np.int64)
        (ours,) = model(ids)
        np.testing.assert_array_equal(ours, reference(proto, ids)[0])


@pytest.mark.parametrize(("exclusive", "element"), [(0, TensorProto.INT64), (1, TensorProto.INT32), (0, TensorProto.FLOAT)])
def test_a_reverse_running_sum_along_the_sequence(exclusive, element):
    """CumSum in reverse along a run-time sequence (the tokens after each one), of
    integers or floats (which start from the last element, at the sequence's size less
    one): compiled once, equal to onnxruntime."""
    graph = helper.make_graph(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=1, exclusive=exclusive)],
        "reverse",
        [helper.make_tensor_value_info("x", element, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", element, ["batch", "sequence"])],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel)
    dtype = {TensorProto.INT64: np.int64, TensorProto.INT32: np.int32, TensorProto.FLOAT: np.float32}[element]
    for batch, sequence in ((1, 1), (2, 9), (3, 40), (1, 0)):
        x = RNG.integers(-5, 5, (batch, sequence)).astype(dtype)
        np.testing.assert_allclose(model(x)[0], reference(proto, x)[0], rtol=1e-6)


def test_relative_positions_along_the_sequence_compile_once():
    """T5's relative positions: |j - i| over positions i, j along the sequence, a
    tensor [sequence, sequence] of one size twice, scaled by the input's column sums:
    compiled once, equal to onnxruntime."""
    node = helper.make_node
    nodes = [
        *positions_along("one"),
        node("Unsqueeze", ["positions", "zero1"], ["row"]),
        node("Unsqueeze", ["positions", "one1"], ["column"]),
        node("Sub", ["row", "column"], ["difference"]),
        node("Abs", ["difference"], ["distance"]),
        node("Cast", ["distance"], ["far"], to=TensorProto.FLOAT),
        node("ReduceSum", ["x", "zero1"], ["scale"], keepdims=1),
        node("Mul", ["far", "scale"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "relative",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
            numpy_helper.from_array(np.array([0], np.int64), "zero1"),
            numpy_helper.from_array(np.array([1], np.int64), "one1"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel)
    for shape in ((1, 1), (3, 7), (5, 40), (2, 100)):
        x = RNG.standard_normal(shape).astype(np.float32)
        (ours,) = model(x)
        np.testing.assert_allclose(ours, reference(proto, x)[0], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_shapes_computed_from_run_time_sizes_compile_once(exporter):
    """torch's exporters compute the head split's target shape from Shape(x) (Gather,
    Unsqueeze, Div, Cast, Concat; or Shape with start and end): the sizes it names are
    x's run-time batch and sequence, so the reshapes keep them; the `-1` check before an
    Expand (Equal of a size with -1) is false, and `Reshape [-1, sequence, 32]` infers
    the batch."""
    proto = exported_attention(width=32, heads=4, exporter=exporter)
    imported = import_onnx(proto, run_time_dims=True)
    text = str(imported.module)
    assert text.count("(tensor<?x?x32xf32>) -> tensor<?x?x4x8xf32>") == 3
    assert "graph.broadcast_to" not in text
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 7), (1, 40), (3, 2)):
        x = RNG.standard_normal((batch, sequence, 32)).astype(np.float32)
        (y,) = model(x)
        assert y.shape == (batch, sequence, 32)
        np.testing.assert_allclose(y, reference(proto, x)[0], rtol=1e-4, atol=1e-5)


def test_shape_arithmetic_that_leaves_a_size_keeps_it():
    """Slice and Squeeze of a shape, Max with 0, Add of 0, Mul by 1: each gives back the
    size it took, so the Reshape keeps the run-time dimensions."""
    node = helper.make_node
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Slice", ["shape", "start1", "end2"], ["s1"]),
        node("Squeeze", ["s1", "axis0"], ["s"]),
        node("Max", ["s", "zero"], ["s_max"]),
        node("Add", ["s_max", "zero"], ["s_add"]),
        node("Gather", ["shape", "zero"], ["b"], axis=0),
        node("Mul", ["b", "one"], ["b_mul"]),
        node("Sub", ["b_mul", "zero"], ["b_sub"]),
        node("Unsqueeze", ["b_sub", "axis0"], ["b1"]),
        node("Unsqueeze", ["s_add", "axis0"], ["s2"]),
        node("Concat", ["b1", "s2", "split"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["r"]),
        node("ReduceSum", ["r", "last"], ["y"], keepdims=0),
    ]
    ints = {
        "start1": [1], "end2": [2], "axis0": [0], "zero": 0, "one": 1, "split": [2, 4],
        "last": [3],
    }  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "shape_arithmetic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in ints.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert "tensor<?x?x2x4xf32>" in str(import_onnx(proto, run_time_dims=True).module)
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel)
    for batch, sequence in ((1, 3), (4, 1)):
        x = RNG.standard_normal((batch, sequence, 8)).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], reference(proto, x)[0], rtol=1e-5, atol=1e-6)


def test_token_embeddings_and_positions_compile_once():
    """Embeddings of input_ids of run-time batch and sequence, position embeddings of a
    Range to the sequence (graph.iota of its dimension), a mask cast, compared and
    selected at the same sizes: one compile. (The positions are not computed by blocks
    of rows, which count from 0 each: by default the model compiles per size.)"""
    proto = token_embedding(vocab=50, width=16, positions=64)
    text = str(import_onnx(proto, run_time_dims=True).module)
    assert "graph.iota %input_ids dim 1 : (tensor<?x?xi64>) -> tensor<?xi64>" in text
    _check_token_model(proto, ((1, 1), (2, 7), (3, 64), (2, 0)))


def _check_token_model(proto: onnx.ModelProto, sizes) -> None:
    """`proto`, of input_ids and attention_mask [batch, sequence] (vocabulary 50),
    compiled once and called at each (batch, sequence) of `sizes` as onnxruntime."""
    model = strato.compile(proto, cache=False, run_time_dims=True)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in sizes:
        ids = RNG.integers(0, 50, (batch, sequence)).astype(np.int64)
        mask = RNG.integers(0, 2, (batch, sequence)).astype(np.int64)
        (y,) = model(ids, mask)
        np.testing.assert_allclose(y, reference(proto, ids, mask)[0], rtol=1e-5, atol=1e-5)


def test_the_exporters_token_idioms_compile_once():
    """Token types gathered from buffers and expanded to the batch (a size the tensor
    has 1 for, given by input_ids), a Conv1D on batch and sequence merged into one
    dimension and split back, a padding mask flattened and gathered at
    `b * sequence + s`: imported without merging run-time dimensions, compiled once."""
    proto = exported_token_model(vocab=50, width=16, outputs=24)
    text = str(import_onnx(proto, run_time_dims=True).module)
    assert "graph.broadcast_to %types like %input_ids : (tensor<1x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>" in text
    assert "graph.dense" in text or "graph.matmul %h" in text  # the Conv1D on [batch, seq, 16]
    assert "(tensor<?x?xi1>) -> tensor<?x1x1x?x1xi1>" in text  # the mask gathered in place
    _check_token_model(proto, ((1, 1), (2, 7), (3, 64), (1, 3)))


def test_the_dynamo_exporters_attention_idioms_compile_once():
    """The padding mask gathered (GatherND) at pairs of Ranges expanded to the shape of
    their Max and concatenated: the mask in place; k transposed through [batch * heads,
    seq, head] and back: a transpose of the unmerged k."""
    proto = dynamo_masked_scores(width=16, heads=4)
    text = str(import_onnx(proto, run_time_dims=True).module)
    assert "graph.gather_nd" not in text and "graph.concat" not in text
    assert "(tensor<?x?xi1>) -> tensor<?x1x1x?xi1>" in text  # the mask in place
    assert "graph.transpose %k [0, 1, 3, 2] : (tensor<?x4x?x4xf32>) -> tensor<?x4x4x?xf32>" in text
    _check_token_model(proto, ((1, 1), (2, 7), (3, 64), (1, 3)))


def test_merged_run_time_dimensions_other_ops_read_compile_per_size():
    """A tensor whose batch and sequence a Reshape merges, returned (after a Relu, which
    takes it) as the graph's output, or gathered at other than its flat index (the
    sequence times the batch): imported with static shapes, compiled per size."""
    node = helper.make_node
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    relu = helper.make_graph(
        [node("Reshape", ["x", "flat"], ["f"]), node("Relu", ["f"], ["y"])], "relu", [x], [y],
        [numpy_helper.from_array(np.array([-1, 4], np.int64), "flat")],
    )  # fmt: skip
    swapped = helper.make_graph(
        [
            node("Flatten", ["x"], ["f"], axis=2),
            node("Shape", ["x"], ["shape"]),
            node("Gather", ["shape", "zero"], ["b"], axis=0),
            node("Gather", ["shape", "one"], ["s"], axis=0),
            node("Range", ["zero", "b", "one"], ["rb"]),
            node("Range", ["zero", "s", "one"], ["rs"]),
            node("Unsqueeze", ["rs", "axis1"], ["columns"]),
            node("Mul", ["columns", "b"], ["starts"]),  # s * batch + b: not the flat index
            node("Add", ["starts", "rb"], ["index"]),
            node("Gather", ["f", "index"], ["y"], axis=0),
        ],
        "swapped", [x], [y],
        [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("zero", 0), ("one", 1), ("axis1", [1]))],
    )  # fmt: skip
    for graph_ in (relu, swapped):
        proto = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])
        with pytest.raises(SymbolicShapeError):
            import_onnx(proto, run_time_dims=True)
        model = strato.compile(proto, cache=False, run_time_dims=True)
        assert isinstance(model, ShapeSpecializingModel), graph_.name
        data = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        np.testing.assert_array_equal(model(data)[0], reference(proto, data)[0])


def _shape_model(
    name: str, nodes: list, out: int = TensorProto.FLOAT, **constants: np.ndarray
) -> onnx.ModelProto:
    """x [batch, sequence] float -> y of element type `out` (nodes computing on Shape(x)
    as "shape")."""
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"]), *nodes],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", out, None)],
        [numpy_helper.from_array(a, n) for n, a in constants.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shapes_known_at_run_time_only_compile_per_size():
    """A shape the importer cannot compute at import time: a Range from 1 to the
    sequence (a tensor of a run-time size no dimension gives), a target shape that moves
    the run-time sizes, a comparison of a size with 1, a shape returned as an output.
    Each model imports with static shapes (refused unless pinned) and compiles per
    size."""
    one = np.array(1, np.int64)
    node = helper.make_node
    ranged = [
        node("Gather", ["shape", "one"], ["s"], axis=0),
        node("Range", ["one", "s", "one"], ["r"]),
        node("Cast", ["r"], ["f"], to=TensorProto.FLOAT),
        node("Concat", ["zero1", "f"], ["positions"], axis=0),
        node("Add", ["x", "positions"], ["y"]),
    ]
    swapped = [
        node("Gather", ["shape", "order"], ["swapped"], axis=0),
        node("Reshape", ["x", "swapped"], ["y"]),
    ]
    equal_one = [
        node("Equal", ["shape", "ones"], ["single"]),
        node("Where", ["single", "ones", "shape"], ["target"]),
        node("Expand", ["x", "target"], ["y"]),
    ]
    cases = [
        _shape_model("range", ranged, one=one, zero1=np.zeros(1, np.float32)),
        _shape_model("swapped", swapped, order=np.array([1, 0], np.int64)),
        _shape_model("equal_one", equal_one, ones=np.ones(2, np.int64)),
        _shape_model("returned", [node("Identity", ["shape"], ["y"])], TensorProto.INT64),
    ]
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    for proto in cases:
        with pytest.raises(SymbolicShapeError, match="dynamic dimension 'batch' at axis 0"):
            import_onnx(proto, run_time_dims=True)
        model = strato.compile(proto, cache=False, run_time_dims=True)
        assert isinstance(model, ShapeSpecializingModel), proto.graph.name
        (y,) = model(x)
        np.testing.assert_array_equal(y, reference(proto, x)[0], err_msg=proto.graph.name)


def test_a_constant_of_the_shape_of_an_input_compiles_once():
    """ConstantOfShape of an input's shape (transformers' default attention mask,
    `torch.ones(input_ids.shape)`), of part of it with a static size added, and of a
    shape of static sizes only: the value broadcast like the input (graph.broadcast_to
    ... like); and of the shape with its sizes swapped, which no tensor has: broadcast
    like the positions along each size (graph.iota) placed at its dimension. Each
    compiled once, equal to onnxruntime at every size (none included)."""
    node = helper.make_node
    one = numpy_helper.from_array(np.ones(1, np.float32))
    whole = [node("ConstantOfShape", ["shape"], ["ones"], value=one), node("Add", ["x", "ones"], ["y"])]
    part = [
        node("Gather", ["shape", "first"], ["batch"], axis=0),
        node("Concat", ["batch", "three"], ["target"], axis=0),
        node("ConstantOfShape", ["target"], ["twos"], value=numpy_helper.from_array(np.full(1, 2, np.int64))),
        node("Cast", ["twos"], ["cast"], to=TensorProto.FLOAT),
        node("ReduceSum", ["cast", "axis"], ["sums"], keepdims=1),
        node("Mul", ["x", "sums"], ["y"]),
    ]
    static = [
        node("Slice", ["shape", "zero", "one_i"], ["tail"]),
        node("Shape", ["tail"], ["rank"]),
        node("ConstantOfShape", ["rank"], ["three_f"], value=numpy_helper.from_array(np.full(1, 3, np.float32))),
        node("Add", ["x", "three_f"], ["y"]),
    ]
    swapped = [
        node("Gather", ["shape", "order"], ["swapped"], axis=0),
        node("ConstantOfShape", ["swapped"], ["ones"], value=one),
        node("Transpose", ["ones"], ["back"], perm=[1, 0]),
        node("Add", ["x", "back"], ["y"]),
    ]
    cases = [
        _shape_model("whole", whole),
        _shape_model("swapped_fill", swapped, order=np.array([1, 0], np.int64)),
        _shape_model(
            "part", part, first=np.array([0], np.int64), three=np.array([3], np.int64),
            axis=np.array([1], np.int64),
        ),
        _shape_model("static", static, zero=np.array([0], np.int64), one_i=np.array([1], np.int64)),
    ]  # fmt: skip
    for proto in cases:
        import_onnx(proto, run_time_dims=True)  # no fallback to static shapes
        model = strato.compile(proto, cache=False, run_time_dims=True)
        assert not isinstance(model, ShapeSpecializingModel), proto.graph.name
        for shape in ((3, 5), (1, 1), (2, 40), (0, 3)):
            x = RNG.standard_normal(shape).astype(np.float32)
            (y,) = model(x)
            np.testing.assert_allclose(y, reference(proto, x)[0], rtol=1e-6, err_msg=proto.graph.name)


def test_a_constant_of_sizes_of_two_inputs_compiles_once():
    """ConstantOfShape of the batch of one input and the sequence of another: no tensor
    has both, so the value is broadcast like the positions along each (graph.iota
    placed at its dimension). Compiled once, equal to onnxruntime."""
    node = helper.make_node
    graph = helper.make_graph(
        [
            node("Shape", ["a"], ["a_shape"]),
            node("Shape", ["b"], ["b_shape"]),
            node("Gather", ["a_shape", "first"], ["batch"], axis=0),
            node("Gather", ["b_shape", "second"], ["sequence"], axis=0),
            node("Concat", ["batch", "sequence"], ["target"], axis=0),
            node("ConstantOfShape", ["target"], ["y"], value=numpy_helper.from_array(np.full(1, 7, np.int64))),
        ],
        "two_inputs",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [5, "sequence"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", "sequence"])],
        [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("first", 0), ("second", 1))],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (4, 9), (0, 2)):
        a = RNG.standard_normal((batch, 3)).astype(np.float32)
        b = RNG.standard_normal((5, sequence)).astype(np.float32)
        np.testing.assert_array_equal(model(a, b)[0], reference(proto, a, b)[0])


def test_rows_of_a_table_at_the_positions_compile_once():
    """torch.export's rotary tables: GatherND of a table [64, 8] at the positions of the
    sequence unsqueezed to [1, sequence, 1] (rows along its first axis), a gather of
    its rows; compiled once, equal to onnxruntime."""
    node = helper.make_node
    nodes = [
        node("Gather", ["shape", "one"], ["s"], axis=0),
        node("Range", ["zero", "s", "one"], ["positions"]),
        node("Unsqueeze", ["positions", "axes"], ["index"]),
        node("GatherND", ["table", "index"], ["y"]),
    ]
    table = RNG.standard_normal((64, 8)).astype(np.float32)
    proto = _shape_model(
        "rows", nodes, zero=np.array(0, np.int64), one=np.array(1, np.int64), axes=np.array([0, 2], np.int64),
        table=table,
    )  # fmt: skip
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (3, 20), (2, 64)):
        x = RNG.standard_normal((batch, sequence)).astype(np.float32)
        np.testing.assert_array_equal(model(x)[0], reference(proto, x)[0])


def test_pinning_one_input_pins_the_sizes_it_shares():
    """input_shapes that pin one input (x [2, 3, 32]) pin its named sizes (batch,
    sequence) in every input that has them (r): a static compile of those sizes, as
    `strato run MODEL --input-shapes 'input_ids:[4,64]'` asks; two inputs that give one
    size two values are an error naming both."""
    from strato.diagnostics import ModelImportError

    proto = encoder_block()
    model = strato.compile(proto, cache=False, input_shapes={"x": [2, 3, 32]})
    assert isinstance(model, LLVMCompiledModel) and not model.signature.is_dynamic
    x, r = (RNG.standard_normal((2, 3, 32)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(model(x, r)[0], reference(proto, x, r)[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ModelImportError, match="gives dimension 'batch' two sizes: 2 in 'x' and 4 in 'r'"):
        strato.compile(proto, cache=False, input_shapes={"x": [2, 3, 32], "r": [4, 3, 32]})


def test_the_saved_model_and_the_c_header_take_the_sizes(tmp_path):
    model = strato.compile(encoder_block(), cache=False, name="encoder", run_time_dims=True)
    header = model.c_header()
    assert (
        "int32_t encoder_run(const float *x, const float *r, float *z, int64_t batch, "
        "int64_t sequence);"
    ) in header
    assert "input  x: 'x' float32[batch, sequence, 32]" in header
    path = tmp_path / "encoder.strato"
    model.save(path)
    loaded = strato.load(path)
    assert loaded.inputs == model.inputs and loaded.signature.sizes == ("batch", "sequence")
    x, r = (RNG.standard_normal((2, 3, 32)).astype(np.float32) for _ in range(2))
    np.testing.assert_array_equal(loaded(x, r)[0], model(x, r)[0])


def test_the_compile_cache_keeps_a_model_of_run_time_sizes(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path))
    from strato.runtime.cache import wait_for_writes

    proto = mlp()
    first = strato.compile(proto, run_time_dims=True)
    wait_for_writes()
    cached = strato.compile(proto, run_time_dims=True)
    assert cached.origin is not None and cached.inputs == first.inputs
    x = RNG.standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_array_equal(cached(x)[0], first(x)[0])


def test_models_that_do_not_compile_once_compile_per_size():
    """An operator that does not take run-time dimensions (Hardmax) and a dynamic
    dimension that meets a static one, with `run_time_dims`, and any model with
    `run_time_dims=False` (attention's too): compiled per size."""
    hardmax = mlp()
    hardmax.graph.node.append(helper.make_node("Hardmax", ["p"], ["t"], axis=1))
    hardmax.graph.output[0].CopyFrom(
        helper.make_tensor_value_info("t", TensorProto.FLOAT, None)
    )
    positions = helper.make_model(
        helper.make_graph(
            [helper.make_node("Add", ["x", "table"], ["y"])],
            "positions",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence"])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.arange(4, dtype=np.float32), "table")],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    for proto, options in (
        (hardmax, {"run_time_dims": True}),
        (positions, {"run_time_dims": True}),
        (mlp(), {"run_time_dims": False}),
        (attention(), {"run_time_dims": False}),
    ):
        model = strato.compile(proto, cache=False, **options)
        assert isinstance(model, ShapeSpecializingModel), proto.graph.name
    x = np.ones((2, 4), np.float32)
    compiled = strato.compile(positions, cache=False, run_time_dims=True)
    np.testing.assert_array_equal(compiled(x)[0], x + np.arange(4))


def test_strato_compile_writes_one_model_for_every_size_and_strato_run_picks_sizes(tmp_path):
    import subprocess
    import sys

    path, saved = tmp_path / "encoder.onnx", tmp_path / "encoder.strato"
    onnx.save(encoder_block(), path)
    cli = [sys.executable, "-m", "strato.tools.strato_cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*cli, *args], capture_output=True, text=True, timeout=600, check=False
        )

    done = run("compile", str(path), "--run-time-sizes", "-o", str(saved))
    assert done.returncode == 0, done.stderr
    assert "for every size of batch, sequence" in done.stdout
    ran = run("run", str(saved), "--input-shapes", "x:[2,5,32] r:[2,5,32]", "--repeat", "1")
    assert ran.returncode == 0, ran.stderr
    assert "output 'z': shape [2, 5, 32]" in ran.stdout
    for args, message in (
        ((), "runs at any size: give the sizes to run with --input-shapes"),
        (("--input-shapes", "x:[2,5,32] r:[2,4,32]"), "'sequence') is 4, but input 0 'x' gives 'sequence' = 5"),
        (("--input-shapes", "x:[2,5,32]"), "must give every input"),
    ):
        failed = run("run", str(saved), *args)
        assert failed.returncode == 1 and "Traceback" not in failed.stderr
        assert message in failed.stderr, failed.stderr
    # compiled once by default, as strato.compile does; bounds by name, kept in the header
    done = run("compile", str(path), "--size-bounds", "sequence=1:64", "-o", str(tmp_path / "encoder.o"))
    assert done.returncode == 0, done.stderr
    assert "taking batch, sequence after the buffers" in done.stdout
    header = (tmp_path / "encoder.h").read_text()
    assert "int64_t batch, int64_t sequence);" in header
    assert "returns ENCODER_NO_SUCH_SIZE: sequence 1 to 64)" in header
    for args, message in (
        (("--size-bounds", "seq=4"), "size_bounds names 'seq', not a run-time size of the model"),
        (("--size-bounds", "sequence=4", "--sizes", "x:[1,4,32] r:[1,4,32]"), "--sizes compiles one per size"),
    ):
        failed = run("compile", str(path), *args, "-o", str(tmp_path / "bad.o"))
        assert failed.returncode == 1 and "Traceback" not in failed.stderr
        assert message in failed.stderr, failed.stderr
    onnx.save(helper.make_model(
        helper.make_graph(
            [helper.make_node("Hardmax", ["x"], ["y"], axis=1)], "hardmax",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    ), tmp_path / "hardmax.onnx")  # fmt: skip
    failed = run("compile", str(tmp_path / "hardmax.onnx"), "--run-time-sizes", "-o", str(saved))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "operators that need static sizes" in failed.stderr, failed.stderr


def cached_attention() -> onnx.ModelProto:
    """Attention of new queries over past keys and values joined with the new ones (a
    decoder's cache): present_k is [batch, 2, past + sequence, 8]."""

    def value(name: str, length: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", 2, length, 8])

    nodes = [
        helper.make_node("Concat", ["past_k", "k"], ["present_k"], axis=2),
        helper.make_node("Concat", ["past_v", "v"], ["present_v"], axis=-2),
        helper.make_node("Transpose", ["present_k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "present_v"], ["o"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cached",
        [value("past_k", "past"), value("past_v", "past"), *(value(n, "sequence") for n in "qkv")],
        [value("o", "sequence"), value("present_k", "total")],
        [numpy_helper.from_array(np.array(0.35, np.float32), "scale")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_attention_over_a_cache_joined_with_new_keys_compiles_once():
    """Keys and values joined along the sequence (past + sequence, a size computed from
    the inputs') compile once: the outputs are allocated at the sum, equal to
    onnxruntime at every size, and the header names the sum; an empty past is refused
    by name (each input of the join is read)."""
    proto = cached_attention()
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel)
    assert model.signature.sizes == ("batch", "past", "sequence")
    assert model.signature.outputs[1].dims == ("batch", None, "past + sequence", None)
    assert "output present_k: 'present_k' float32[batch, 2, past + sequence, 8]" in model.c_header()
    rng = np.random.default_rng(5)
    for batch, past, sequence in ((1, 1, 1), (2, 5, 3), (1, 17, 1), (3, 40, 7)):
        arrays = [rng.standard_normal((batch, 2, n, 8)).astype(np.float32) for n in (past, past, sequence, sequence, sequence)]
        ours = model(*arrays)
        for got, expected in zip(ours, reference(proto, *arrays), strict=True):
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    empty = np.zeros((1, 2, 0, 8), np.float32)
    new = np.zeros((1, 2, 3, 8), np.float32)
    with pytest.raises(InputMismatchError, match=r"dimension 2 \('past'\) is 0, less than the least the model takes, 1"):
        model(empty, empty, new, new, new)


def ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def value(name: str, element, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, element, shape)


def decoder_step() -> onnx.ModelProto:
    """One attention layer of a decoder with a cache, as exporters write it: the new
    tokens' positions are `Range(0, sequence) + past` (a size made data), embedded;
    the keys' positions `Range(0, past + sequence)`, computed from the sizes before any
    tensor has that length; a causal mask of the two, and a padding mask whose length
    the inputs name `past + sequence`; keys and values joined with the cache."""
    width, table = 16, 64
    rng = np.random.default_rng(3)

    def shape_at(tensor: str, axis: int, out: str) -> list[onnx.NodeProto]:
        return [
            helper.make_node("Shape", [tensor], [f"{out}_shape"]),
            helper.make_node("Gather", [f"{out}_shape", f"axis{axis}"], [out], axis=0),
        ]

    nodes = [
        *shape_at("past_k", 1, "past"),
        *shape_at("x", 1, "sequence"),
        helper.make_node("Range", ["zero", "sequence", "one"], ["new"]),
        helper.make_node("Add", ["new", "past"], ["positions"]),
        helper.make_node("Gather", ["table", "positions"], ["position_embeddings"], axis=0),
        helper.make_node("Add", ["x", "position_embeddings"], ["h"]),
        helper.make_node("Add", ["past", "sequence"], ["total"]),
        helper.make_node("Range", ["zero", "total", "one"], ["keys_at"]),
        helper.make_node("Unsqueeze", ["positions", "last"], ["queries_at"]),
        helper.make_node("LessOrEqual", ["keys_at", "queries_at"], ["causal"]),
        helper.make_node("Cast", ["mask"], ["mask_bool"], to=TensorProto.BOOL),
        helper.make_node("Unsqueeze", ["mask_bool", "middle"], ["padding"]),
        helper.make_node("And", ["causal", "padding"], ["allowed"]),
        helper.make_node("MatMul", ["h", "wk"], ["k"]),
        helper.make_node("MatMul", ["h", "wv"], ["v"]),
        helper.make_node("Concat", ["past_k", "k"], ["present_k"], axis=1),
        helper.make_node("Concat", ["past_v", "v"], ["present_v"], axis=1),
        helper.make_node("Transpose", ["present_k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h", "kt"], ["scores"]),
        helper.make_node("Where", ["allowed", "scores", "low"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "present_v"], ["y"]),
    ]

    graph = helper.make_graph(
        nodes,
        "decoder_step",
        [
            value("x", TensorProto.FLOAT, ["batch", "sequence", width]),
            value("mask", TensorProto.INT64, ["batch", "past + sequence"]),
            value("past_k", TensorProto.FLOAT, ["batch", "past", width]),
            value("past_v", TensorProto.FLOAT, ["batch", "past", width]),
        ],
        [
            value("y", TensorProto.FLOAT, ["batch", "sequence", width]),
            value("present_k", TensorProto.FLOAT, ["batch", "past + sequence", width]),
        ],
        [
            ints("axis1", 1), ints("zero", 0), ints("one", 1), ints("last", [-1]), ints("middle", [1]),
            numpy_helper.from_array(rng.standard_normal((table, width)).astype(np.float32), "table"),
            numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32) / 4, "wk"),
            numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32) / 4, "wv"),
            numpy_helper.from_array(np.array(-1e9, np.float32), "low"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_decoder_step_over_a_cache_compiles_once():
    """`decoder_step` compiles once: the positions of new tokens and of the keys, and
    the padding mask of `past + sequence`, at every size as onnxruntime; a mask of
    another length is refused by name, by the Python call and by the entry."""
    proto = decoder_step()
    text = str(import_onnx(proto, run_time_dims=True).module)
    assert "graph.size_of %past_k dim 1 : (tensor<?x?x16xf32>) -> tensor<i64>" in text
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel)
    assert set(model.signature.sizes) == {"batch", "sequence", "past + sequence", "past"}
    rng = np.random.default_rng(4)
    for batch, past, sequence in ((1, 1, 1), (2, 6, 3), (1, 30, 1), (3, 9, 12)):
        x = rng.standard_normal((batch, sequence, 16)).astype(np.float32)
        mask = (rng.random((batch, past + sequence)) < 0.8).astype(np.int64)
        mask[:, -1] = 1
        past_k, past_v = (rng.standard_normal((batch, past, 16)).astype(np.float32) for _ in range(2))
        ours = model(x, mask, past_k, past_v)
        for got, expected in zip(ours, reference(proto, x, mask, past_k, past_v), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(InputMismatchError, match=r"'past \+ sequence' is 5, but the sizes it sums are 'past' = 1, 'sequence' = 1: 2"):
        model(x[:, :1], np.ones((3, 5), np.int64), past_k[:, :1], past_v[:, :1])
    assert "past___sequence other than past + sequence" in model.c_header()
    # the entry itself refuses such sizes before touching a buffer
    x, mask = x[:, :1], np.ones((3, 2), np.int64)
    past_k, past_v = past_k[:, :1], past_v[:, :1]
    outputs = model.signature.allocate_at([{"batch": 3, "sequence": 1, "past": 1, "past + sequence": 2}[n] for n in model.signature.sizes])
    wrong = [{"batch": 3, "sequence": 1, "past": 1, "past + sequence": 3}[n] for n in model.signature.sizes]
    with pytest.raises(InputMismatchError, match="refused the sizes"):
        model._entry([x, mask, past_k, past_v, *outputs, *wrong])


def cache_positions() -> onnx.ModelProto:
    """Positions of new tokens and a padding mask over a cache, as other exporters
    write them: OPT's running count of the mask (of `past + sequence`) sliced from
    `past` to the end (a slice from a size), a LayerNormalization of batch and
    sequence merged, and torch.export's padding mask of its own length `total`, read
    by a GatherND at the batch and key positions (`Range(0, past + sequence)`)."""
    width, table = 8, 40
    rng = np.random.default_rng(6)

    def size(tensor: str, axis: int, out: str) -> list[onnx.NodeProto]:
        return [
            helper.make_node("Shape", [tensor], [f"{out}_shape"]),
            helper.make_node("Gather", [f"{out}_shape", f"at{axis}"], [out], axis=0),
            helper.make_node("Unsqueeze", [out, "first"], [f"{out}_1"]),
        ]

    nodes = [
        *size("x", 0, "batch"),
        *size("x", 1, "sequence"),
        *size("past_k", 1, "past"),
        # OPT: positions = cumsum(mask) * mask - 1, the last `sequence` of them
        helper.make_node("CumSum", ["mask", "at1"], ["count"]),
        helper.make_node("Mul", ["count", "mask"], ["counted"]),
        helper.make_node("Sub", ["counted", "one"], ["all_positions"]),
        helper.make_node("Slice", ["all_positions", "past_1", "end", "first_axis1"], ["positions"]),
        helper.make_node("Add", ["positions", "two"], ["offset"]),
        helper.make_node("Gather", ["table", "offset"], ["embedded"], axis=0),
        helper.make_node("Add", ["x", "embedded"], ["h"]),
        # merged batch and sequence, normalized over the features
        helper.make_node("Reshape", ["h", "rows"], ["flat"]),
        helper.make_node("LayerNormalization", ["flat", "gamma", "beta"], ["normed"], axis=-1, epsilon=1e-5),
        helper.make_node("Concat", ["batch_1", "sequence_1", "width"], ["back"], axis=0),
        helper.make_node("Reshape", ["normed", "back"], ["y"]),
        # torch.export: mask[b, k] for the key positions k < past + sequence
        helper.make_node("Add", ["past", "sequence"], ["keys"]),
        helper.make_node("Range", ["zero", "keys", "one"], ["key_at"]),
        helper.make_node("Range", ["zero", "batch", "one"], ["batch_at"]),
        helper.make_node("Unsqueeze", ["keys", "first"], ["keys_1"]),
        helper.make_node("Concat", ["batch_1", "keys_1"], ["grid"], axis=0),
        helper.make_node("Unsqueeze", ["batch_at", "last"], ["batch_column"]),
        helper.make_node("Expand", ["batch_column", "grid"], ["batch_grid"]),
        helper.make_node("Expand", ["key_at", "grid"], ["key_grid"]),
        helper.make_node("Unsqueeze", ["batch_grid", "last"], ["batch_index"]),
        helper.make_node("Unsqueeze", ["key_grid", "last"], ["key_index"]),
        helper.make_node("Concat", ["batch_index", "key_index"], ["pairs"], axis=-1),
        helper.make_node("GatherND", ["padding_mask", "pairs"], ["padding"]),
    ]

    graph = helper.make_graph(
        nodes,
        "cache_positions",
        [
            value("x", TensorProto.FLOAT, ["batch", "sequence", width]),
            value("mask", TensorProto.INT64, ["batch", "past + sequence"]),
            value("past_k", TensorProto.FLOAT, ["batch", "past", width]),
            value("padding_mask", TensorProto.INT64, ["batch", "total"]),
        ],
        [
            value("y", TensorProto.FLOAT, ["batch", "sequence", width]),
            value("padding", TensorProto.INT64, ["batch", "past + sequence"]),
        ],
        [
            ints("at0", 0), ints("at1", 1), ints("first", [0]), ints("last", [-1]), ints("first_axis1", [1]),
            ints("one", 1), ints("two", 2), ints("zero", 0), ints("end", [2**63 - 1]), ints("rows", [-1, width]),
            ints("width", [width]),
            numpy_helper.from_array(rng.standard_normal((table, width)).astype(np.float32), "table"),
            numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "gamma"),
            numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "beta"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_exporters_cache_idioms_compile_once():
    """`cache_positions` compiles once and equals onnxruntime at every size (the
    padding mask as long as the past and new tokens together, or longer)."""
    proto = cache_positions()
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel)
    assert set(model.signature.sizes) == {"batch", "sequence", "past + sequence", "past", "total"}
    rng = np.random.default_rng(7)
    for batch, past, sequence, more in ((1, 1, 1, 0), (2, 6, 3, 0), (3, 20, 9, 4)):
        x = rng.standard_normal((batch, sequence, 8)).astype(np.float32)
        mask = (rng.random((batch, past + sequence)) < 0.7).astype(np.int64)
        past_k = rng.standard_normal((batch, past, 8)).astype(np.float32)
        padding = rng.integers(0, 2, (batch, past + sequence + more)).astype(np.int64)
        arrays = (x, mask, past_k, padding)
        for got, expected in zip(model(*arrays), reference(proto, *arrays), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("joined_first", [True, False])
def test_an_input_that_meets_a_concatenation_is_checked_as_its_sum(joined_first):
    """c [n, 4] added to a and b joined ([p + s, 4]): whichever operand comes first,
    c's dimension is named by the sum, and a call whose c is of another length is
    refused by name (onnxruntime fails in the Add; the kernels would read past b)."""
    nodes = [
        helper.make_node("Concat", ["a", "b"], ["ab"], axis=0),
        helper.make_node("Add", ["ab", "c"] if joined_first else ["c", "ab"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "meet",
        [value("a", TensorProto.FLOAT, ["p", 4]), value("b", TensorProto.FLOAT, ["s", 4]), value("c", TensorProto.FLOAT, ["n", 4])],
        [value("y", TensorProto.FLOAT, None)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("p", "s", "p + s")
    a, b, c = (RNG.standard_normal((n, 4)).astype(np.float32) for n in (2, 3, 5))
    np.testing.assert_allclose(model(a, b, c)[0], reference(proto, a, b, c)[0], rtol=1e-6)
    with pytest.raises(InputMismatchError, match=r"input 2 'c' float32\[p \+ s, 4\]: 'p \+ s' is 6"):
        model(a, b, np.ones((6, 4), np.float32))


def test_a_size_named_like_a_sum_is_one_size():
    """An input dimension named `seq-len` (not `seq` less `len`) joined with another:
    the sum's name quotes it, and the model takes it at least 1 (the join reads it)."""
    nodes = [helper.make_node("Concat", ["a", "b"], ["ab"], axis=0), helper.make_node("Relu", ["ab"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "named",
        [value("a", TensorProto.FLOAT, ["seq-len", 4]), value("b", TensorProto.FLOAT, ["m", 4])],
        [value("y", TensorProto.FLOAT, None)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("seq-len", "m")
    assert model.signature.outputs[0].dims == ('m + "seq-len"', None)
    a, b = RNG.standard_normal((2, 4)).astype(np.float32), RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(model(a, b)[0], reference(proto, a, b)[0])
    with pytest.raises(InputMismatchError, match=r"\('seq-len'\) is 0, less than the least the model takes, 1"):
        model(a[:0], b)
