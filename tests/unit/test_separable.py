"""Models separable along a dimension (`strato.separable`): the analysis on two imports,
checked against the graph interpreter (the model at N equals the model at 1 on each
slice whenever the analysis says so), and `strato.compile` of a dynamic model compiling
once for every batch size."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import strato
import strato.compiler
import strato.separable
from strato.diagnostics import StratoError
from strato.frontends.onnx.importer import import_onnx
from strato.interpreters.graph import run_graph
from strato.runtime.signature import InputMismatchError
from strato.separable import NotSeparable, Separation, separation
from strato.specializing import ShapeSpecializingModel

RNG = np.random.default_rng(0)


def weight(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def model(nodes, inputs, outputs, initializers=(), opset: int = 18) -> onnx.ModelProto:
    """A model of `nodes`; inputs as (name, dims) with "B" the dynamic batch; outputs as
    names, or (name, dims) where ONNX's shape inference cannot tell."""
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(d)) for n, d in inputs],
        [
            helper.make_tensor_value_info(
                o if isinstance(o, str) else o[0],
                TensorProto.FLOAT,
                None if isinstance(o, str) else list(o[1]),
            )
            for o in outputs
        ],
        [numpy_helper.from_array(array, name) for name, array in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def at(proto: onnx.ModelProto, count: int):
    shapes = {}
    for value in proto.graph.input:
        dims = [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
        shapes[value.name] = tuple(count if d == "B" else d for d in dims)
    return import_onnx(proto, input_shapes=shapes)


def split_and_compare(proto: onnx.ModelProto, count: int = 3) -> Separation:
    """The separation of `proto` at `count`, after checking that the interpreted model
    at `count` gives what the model at 1 gives on each slice."""
    one, many = at(proto, 1), at(proto, count)
    found = separation(one.function, many.function, count)
    inputs = [
        RNG.standard_normal(arg.type.get_shape()).astype(np.float32)
        for arg in many.function.body.block.args
    ]
    whole = run_graph(many.module, inputs)
    split = found.run(lambda *xs: run_graph(one.module, list(xs)), inputs, count)
    for a, b in zip(whole, split, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return found


SEPARABLE = {
    "mlp": (
        model(
            [
                helper.make_node("MatMul", ["x", "w"], ["h"]),
                helper.make_node("Add", ["h", "b"], ["a"]),
                helper.make_node("Relu", ["a"], ["r"]),
                helper.make_node("Softmax", ["r"], ["y"], axis=-1),
            ],
            [("x", ("B", 6))],
            ["y"],
            [("w", weight(6, 5)), ("b", weight(5))],
        ),
        (0,),
        (0,),
    ),
    "conv, pool, flatten, dense": (
        model(
            [
                helper.make_node("Conv", ["x", "k"], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                helper.make_node("GlobalAveragePool", ["p"], ["g"]),
                helper.make_node("Flatten", ["g"], ["f"]),
                helper.make_node("Gemm", ["f", "w"], ["y"], transB=1),
            ],
            [("x", ("B", 2, 6, 6))],
            ["y"],
            [("k", weight(4, 2, 3, 3)), ("w", weight(3, 4))],
        ),
        (0,),
        (0,),
    ),
    "sequence first, transposed": (
        model(
            [
                helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                helper.make_node("LayerNormalization", ["t", "g"], ["n"], axis=-1),
                helper.make_node("ReduceMean", ["n", "ax"], ["y"], keepdims=0),
            ],
            [("x", (4, "B", 5))],
            ["y"],
            [("g", weight(5)), ("ax", np.array([1], np.int64))],
        ),
        (1,),
        (0,),
    ),
    "batch folded into rows": (
        model(
            [
                helper.make_node("Reshape", ["x", "rows"], ["r"]),
                helper.make_node("MatMul", ["r", "w"], ["m"]),
                helper.make_node("Reshape", ["m", "back"], ["y"]),
            ],
            [("x", ("B", 4, 6))],
            ["y"],
            [
                ("w", weight(6, 3)),
                ("rows", np.array([-1, 6], np.int64)),
                ("back", np.array([-1, 4, 3], np.int64)),
            ],
        ),
        (0,),
        (0,),
    ),
    "rows of a sequence-first projection (samples interleave, then not)": (
        model(
            [
                helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),  # [4, B, 6]
                helper.make_node("Reshape", ["t", "rows"], ["r"]),  # [4 B, 6]: row s B + b
                helper.make_node("Gemm", ["r", "w"], ["p"]),
                helper.make_node("Reshape", ["p", "back"], ["u"]),  # [4, B, 3]
                helper.make_node("Transpose", ["u"], ["y"], perm=[1, 0, 2]),
            ],
            [("x", ("B", 4, 6))],
            ["y"],
            [
                ("w", weight(6, 3)),
                ("rows", np.array([-1, 6], np.int64)),
                ("back", np.array([4, -1, 3], np.int64)),
            ],
        ),
        (0,),
        (0,),
    ),
    "attention": (
        model(
            [
                helper.make_node("MatMul", ["x", "wq"], ["q"]),
                helper.make_node("MatMul", ["x", "wk"], ["k"]),
                helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                helper.make_node("MatMul", ["q", "kt"], ["s"]),
                helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                helper.make_node("MatMul", ["p", "x"], ["y"]),
            ],
            [("x", ("B", 5, 4))],
            ["y"],
            [("wq", weight(4, 4)), ("wk", weight(4, 4))],
        ),
        (0,),
        (0,),
    ),
    "concatenation and slice along other axes": (
        model(
            [
                helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
                helper.make_node("Slice", ["c", "st", "en", "ax"], ["y"]),
            ],
            [("x", ("B", 3))],
            ["y"],
            [
                ("st", np.array([1], np.int64)),
                ("en", np.array([5], np.int64)),
                ("ax", np.array([1], np.int64)),
            ],
        ),
        (0,),
        (0,),
    ),
    "a constant of the input's shape": (
        model(
            [
                helper.make_node("Shape", ["x"], ["s"]),
                helper.make_node(
                    "ConstantOfShape", ["s"], ["ones"],
                    value=numpy_helper.from_array(np.array([2.0], np.float32)),
                ),
                helper.make_node("Mul", ["x", "ones"], ["y"]),
            ],
            [("x", ("B", 3))],
            ["y"],
        ),
        (0,),
        (0,),
    ),
    "positions of each sample in the flattened batch (an offset gather)": (
        model(
            [
                helper.make_node("Flatten", ["x"], ["flat"], axis=2),  # [B * 3, 2]
                helper.make_node("Shape", ["x"], ["shape"]),
                helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
                helper.make_node("Range", ["start", "batch", "one"], ["samples"]),
                helper.make_node("Mul", ["samples", "three"], ["base"]),
                helper.make_node("Unsqueeze", ["base", "last"], ["column"]),
                helper.make_node("Add", ["column", "positions"], ["rows"]),
                helper.make_node("Gather", ["flat", "rows"], ["y"], axis=0),
            ],
            [("x", ("B", 3, 2))],
            ["y"],
            [
                ("zero", np.array(0, np.int64)),
                ("start", np.array(0, np.int64)),
                ("one", np.array(1, np.int64)),
                ("three", np.array(3, np.int64)),
                ("last", np.array([1], np.int64)),
                ("positions", np.array([2, 0, 1], np.int64)),
            ],
        ),
        (0,),
        (0,),
    ),
    "each sample's (sample, position) pairs (an offset gather_nd)": (
        model(
            [
                helper.make_node("Shape", ["x"], ["shape"]),
                helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
                helper.make_node("Range", ["start", "batch", "one"], ["samples"]),
                helper.make_node("Unsqueeze", ["samples", "inner"], ["column"]),
                helper.make_node("Unsqueeze", ["batch", "first"], ["batch1"]),
                helper.make_node("Concat", ["batch1", "tail"], ["full"], axis=0),
                helper.make_node("Expand", ["column", "full"], ["which"]),
                helper.make_node("Expand", ["positions", "full"], ["where"]),
                helper.make_node("Concat", ["which", "where"], ["pairs"], axis=2),
                helper.make_node("GatherND", ["x", "pairs"], ["y"]),
            ],
            [("x", ("B", 4))],
            [("y", ("B", 4))],
            [
                ("zero", np.array(0, np.int64)),
                ("start", np.array(0, np.int64)),
                ("one", np.array(1, np.int64)),
                ("inner", np.array([1, 2], np.int64)),
                ("first", np.array([0], np.int64)),
                ("tail", np.array([4, 1], np.int64)),
                ("positions", np.array([[[3], [2], [1], [0]]], np.int64)),
            ],
        ),
        (0,),
        (0,),
    ),
}


@pytest.mark.parametrize("name", list(SEPARABLE))
def test_separable_models_split_into_their_samples(name: str):
    proto, inputs, outputs = SEPARABLE[name]
    found = split_and_compare(proto)
    assert found.input_axes == inputs
    assert found.output_axes == outputs


def inseparable(node_list, inputs=(("x", ("B", 4)),), initializers=()):
    return model(node_list, list(inputs), ["y"], list(initializers))


INSEPARABLE = {
    "a reduction over the batch": (
        inseparable(
            [helper.make_node("ReduceMean", ["x", "ax"], ["y"], keepdims=1)],
            initializers=[("ax", np.array([0], np.int64))],
        ),
        "graph.reduce_mean",
    ),
    "softmax over the batch": (
        inseparable([helper.make_node("Softmax", ["x"], ["y"], axis=0)]),
        "graph.softmax",
    ),
    "a product contracting the batch": (
        inseparable(
            [
                helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                helper.make_node("MatMul", ["t", "x"], ["y"]),
            ]
        ),
        "graph.matmul",
    ),
    "a concatenation along the batch": (
        inseparable([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)]),
        "graph.concat",
    ),
    "a reshape interleaving the samples": (
        inseparable(
            [helper.make_node("Reshape", ["x", "s"], ["y"])],
            initializers=[("s", np.array([4, -1], np.int64))],
        ),
        "graph.reshape",
    ),
    "the samples' numbers": (
        inseparable(
            [
                helper.make_node("Shape", ["x"], ["shape"]),
                helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
                helper.make_node("Range", ["zero", "n", "one"], ["i"]),
                helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
                helper.make_node("Unsqueeze", ["f", "ax"], ["col"]),
                helper.make_node("Add", ["x", "col"], ["y"]),
            ],
            initializers=[
                ("zero", np.array(0, np.int64)),
                ("one", np.array(1, np.int64)),
                ("ax", np.array([1], np.int64)),
            ],
        ),
        "constant that differs between samples",
    ),
    "rows of a sequence-first fold read back batch first": (
        inseparable(
            [
                helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                helper.make_node("Reshape", ["t", "rows"], ["r"]),
                helper.make_node("Exp", ["r"], ["e"]),
                helper.make_node("Reshape", ["e", "back"], ["y"]),
            ],
            inputs=[("x", ("B", 4, 2))],
            initializers=[("rows", np.array([-1, 2], np.int64)), ("back", np.array([-1, 4, 2], np.int64))],
        ),
        "graph.reshape",
    ),
    "the first sample given to all": (
        inseparable(
            [
                helper.make_node("Gather", ["x", "zero"], ["first"], axis=0),
                helper.make_node("Add", ["x", "first"], ["y"]),
            ],
            initializers=[("zero", np.array([0], np.int64))],
        ),
        "graph.gather",
    ),
    "reversed samples": (
        inseparable(
            [helper.make_node("Slice", ["x", "st", "en", "ax", "step"], ["y"])],
            initializers=[
                ("st", np.array([-1], np.int64)),
                ("en", np.array([-(2**62)], np.int64)),
                ("ax", np.array([0], np.int64)),
                ("step", np.array([-1], np.int64)),
            ],
        ),
        "graph.slice",
    ),
}


@pytest.mark.parametrize("name", list(INSEPARABLE))
def test_a_model_mixing_its_samples_is_not_separable(name: str):
    proto, reason = INSEPARABLE[name]
    with pytest.raises(NotSeparable, match=reason):
        separation(at(proto, 1).function, at(proto, 3).function, 3)


# Random programs on x [B, 3, 4] (each step keeps the shape) from operations that do or do not mix samples: whatever
# the analysis accepts must split exactly (soundness); programs that never touch axis 0
# must be accepted (the rules are not so strict that they refuse the common cases).
UNARY = {
    "relu": (lambda i, o: [helper.make_node("Relu", [i], [o])], False),
    "add const": (lambda i, o: [helper.make_node("Add", [i, "c34"], [o])], False),
    "softmax last": (lambda i, o: [helper.make_node("Softmax", [i], [o], axis=-1)], False),
    "softmax first": (lambda i, o: [helper.make_node("Softmax", [i], [o], axis=0)], True),
    "reduce first": (
        lambda i, o: [
            helper.make_node("ReduceSum", [i, "ax0"], [o + "r"], keepdims=1),
            helper.make_node("Sub", [i, o + "r"], [o]),
        ],
        True,
    ),
    "reduce middle": (
        lambda i, o: [
            helper.make_node("ReduceMax", [i, "ax1"], [o + "r"], keepdims=1),
            helper.make_node("Sub", [i, o + "r"], [o]),
        ],
        False,
    ),
    "swap last two": (
        lambda i, o: [
            helper.make_node("Transpose", [i], [o + "t"], perm=[0, 2, 1]),
            helper.make_node("Transpose", [o + "t"], [o], perm=[0, 2, 1]),
        ],
        False,
    ),
    "swap first two": (
        lambda i, o: [
            helper.make_node("Transpose", [i], [o + "t"], perm=[1, 0, 2]),
            helper.make_node("Softmax", [o + "t"], [o + "s"], axis=1),
            helper.make_node("Transpose", [o + "s"], [o], perm=[1, 0, 2]),
        ],
        True,
    ),
    "cumsum first": (
        lambda i, o: [helper.make_node("CumSum", [i, "zero"], [o])],
        True,
    ),
    "flip first": (
        lambda i, o: [helper.make_node("Slice", [i, "m1", "lo", "zero1", "m1"], [o])],
        True,
    ),
    "fold rows and back": (
        lambda i, o: [
            helper.make_node("Reshape", [i, "rows"], [o + "r"]),
            helper.make_node("Reshape", [o + "r", "back"], [o]),
        ],
        False,
    ),
    "fold rows sequence first and back": (
        lambda i, o: [
            helper.make_node("Transpose", [i], [o + "t"], perm=[1, 0, 2]),
            helper.make_node("Reshape", [o + "t", "rows"], [o + "r"]),  # samples interleave
            helper.make_node("Softmax", [o + "r"], [o + "s"], axis=-1),
            helper.make_node("Reshape", [o + "s", "seq_first"], [o + "u"]),
            helper.make_node("Transpose", [o + "u"], [o], perm=[1, 0, 2]),
        ],
        False,
    ),
    "fold rows sequence first, unfold batch first": (
        lambda i, o: [
            helper.make_node("Transpose", [i], [o + "t"], perm=[1, 0, 2]),
            helper.make_node("Reshape", [o + "t", "rows"], [o + "r"]),
            helper.make_node("Reshape", [o + "r", "back"], [o]),
        ],
        True,
    ),
    "fold columns": (
        lambda i, o: [
            helper.make_node("Reshape", [i, "cols"], [o + "r"]),
            helper.make_node("Softmax", [o + "r"], [o + "s"], axis=-1),
            helper.make_node("Reshape", [o + "s", "back"], [o]),
        ],
        True,
    ),
}

CONSTANTS = [
    ("c34", weight(3, 4)),
    ("ax0", np.array([0], np.int64)),
    ("ax1", np.array([1], np.int64)),
    ("zero", np.array(0, np.int64)),
    ("zero1", np.array([0], np.int64)),
    ("m1", np.array([-1], np.int64)),
    ("lo", np.array([-(2**62)], np.int64)),
    ("rows", np.array([-1, 4], np.int64)),
    ("back", np.array([-1, 3, 4], np.int64)),
    ("cols", np.array([4, -1], np.int64)),
    ("seq_first", np.array([3, -1, 4], np.int64)),
]


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=4),
    count=st.integers(2, 4),
)
def test_whatever_the_analysis_accepts_splits_exactly(steps: list[str], count: int):
    nodes, value = [], "x"
    for index, step in enumerate(steps):
        out = f"v{index}"
        nodes += UNARY[step][0](value, out)
        value = out
    nodes.append(helper.make_node("Identity", [value], ["y"]))
    proto = model(nodes, [("x", ("B", 3, 4))], ["y"], CONSTANTS)
    mixes = any(UNARY[step][1] for step in steps)
    try:
        found = split_and_compare(proto, count)
    except NotSeparable:
        assert mixes, f"{steps} keeps samples apart, yet was refused"
        return
    assert found.input_axes == (0,)


# --- strato.compile of dynamic models -------------------------------------------------


CNN_KERNEL = weight(4, 3, 3, 3)


def small_cnn() -> onnx.ModelProto:
    return model(
        [
            helper.make_node("Conv", ["x", "k"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["g"]),
            helper.make_node("Flatten", ["g"], ["y"]),
        ],
        [("x", ("B", 3, 8, 8))],
        ["y"],
        [("k", CNN_KERNEL)],
    )


def interpreted(proto: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return run_graph(import_onnx(proto, input_shapes={"x": x.shape}).module, [x])[0]


def test_one_compile_serves_every_batch_size(monkeypatch):
    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    proto = small_cnn()
    compiled = strato.compile(proto, cache=False, run_time_dims=False)
    assert isinstance(compiled, ShapeSpecializingModel)
    for batch in (3, 1, 5, 2):
        x = RNG.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        (y,) = compiled(x)
        assert y.shape == (batch, 4)
        np.testing.assert_allclose(y, interpreted(proto, x), rtol=1e-4, atol=1e-5)
    assert compiled.sizes == [{"x": (1, 3, 8, 8)}]
    assert set(compiled.separated) == {"B"}
    assert "separable along 'B'" in repr(compiled)


def test_the_separation_check_imports_the_sample_once(monkeypatch):
    """Each new size is checked against the model imported at size 1, which is imported
    once: a new size costs one import."""
    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    imported = []
    real = strato.compiler.import_onnx

    def counting(proto, input_shapes=None, **kwargs):
        if input_shapes:
            imported.append(input_shapes["x"][0])
        return real(proto, input_shapes=input_shapes, **kwargs)

    monkeypatch.setattr(strato.compiler, "import_onnx", counting)
    compiled = strato.compile(small_cnn(), cache=False)
    imported.clear()  # the compile of size 1, at the first call, imports too
    for batch in (3, 5, 2):
        compiled(RNG.standard_normal((batch, 3, 8, 8)).astype(np.float32))
    assert sorted(b for b in imported if b != 1) == [2, 3, 5]
    assert imported.count(1) <= 2  # the check's sample and the size-1 compile


def test_a_model_mixing_its_batch_compiles_per_size(monkeypatch):
    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    proto = inseparable(
        [helper.make_node("Softmax", ["x"], ["y"], axis=0)],
    )
    compiled = strato.compile(proto, cache=False, run_time_dims=False)
    for batch in (2, 3):
        x = RNG.standard_normal((batch, 4)).astype(np.float32)
        (y,) = compiled(x)
        e = np.exp(x - x.max(axis=0))
        np.testing.assert_allclose(y, e / e.sum(axis=0), rtol=1e-5, atol=1e-6)
    assert compiled.sizes == [{"x": (2, 4)}, {"x": (3, 4)}]
    assert "graph.softmax" in compiled.inseparable["B"]
    assert compiled.separated == {}


def test_a_model_that_does_not_import_at_size_one_compiles_per_size(monkeypatch):
    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    proto = inseparable(
        [helper.make_node("Reshape", ["x", "s"], ["y"])],
        initializers=[("s", np.array([3, -1], np.int64))],
    )
    compiled = strato.compile(proto, cache=False, run_time_dims=False)
    x = RNG.standard_normal((3, 4)).astype(np.float32)  # 4 elements at size 1: no [3, -1]
    np.testing.assert_array_equal(compiled(x)[0], x.reshape(3, -1))
    assert "does not import" in compiled.inseparable["B"]


def test_a_sample_with_little_work_compiles_per_size():
    """A run per sample would cost more than it saves: below MIN_SAMPLE_ELEMENTS the
    model compiles per size, as a model that is not separable does."""
    proto = SEPARABLE["mlp"][0]
    compiled = strato.compile(proto, cache=False, run_time_dims=False)
    for batch in (2, 3):
        compiled(RNG.standard_normal((batch, 6)).astype(np.float32))
    assert compiled.sizes == [{"x": (2, 6)}, {"x": (3, 6)}]
    assert compiled.separated == {}
    assert compiled.inseparable == {}


# --- a model compiled once, saved and linked for every batch size ---------------------


def batched_cnn(monkeypatch):
    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    return strato.compile(small_cnn(), cache=False, name="cnn").batched()


def test_a_batched_model_runs_saves_and_loads_at_every_size(monkeypatch, tmp_path):
    batched = batched_cnn(monkeypatch)
    assert batched.one.inputs[0].shape == (1, 3, 8, 8)
    x = RNG.standard_normal((3, 3, 8, 8)).astype(np.float32)
    expected = interpreted(small_cnn(), x)
    np.testing.assert_allclose(batched(x)[0], expected, rtol=1e-4, atol=1e-5)
    assert batched(x[:0])[0].shape == (0, 4)
    batched.save(tmp_path / "cnn.strato")
    loaded = strato.load(tmp_path / "cnn.strato")
    assert loaded.dimension == "B" and loaded.origin == str(tmp_path / "cnn.strato")
    np.testing.assert_array_equal(loaded(x)[0], batched(x)[0])
    with pytest.raises(InputMismatchError, match=r"input 'x': shape \[3, 3, 8, 9\], the model takes \['B', 3, 8, 8\]"):
        loaded(np.zeros((3, 3, 8, 9), np.float32))


def test_the_c_entry_of_a_batched_model_runs_every_sample(monkeypatch):
    """`cnn_run_batch(count, x, y)` in the object file and the header: loaded into this
    process, it computes what the model computes on the batch."""
    import ctypes

    from strato.targets.llvm.jit import ObjectModule

    batched = batched_cnn(monkeypatch)
    header = batched.c_header()
    assert "int32_t cnn_run(const float *x, float *y);" in header
    assert "int32_t cnn_run_batch(int64_t B, const float *x, float *y);" in header
    assert "define i32 @cnn_run_batch(i64 %count, ptr %b0, ptr %b1)" in batched.llvm_ir
    loaded = ObjectModule(batched.object_code())
    entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
        loaded.address("cnn_run_batch")
    )
    x = RNG.standard_normal((5, 3, 8, 8)).astype(np.float32)
    y = np.full((5, 4), np.nan, np.float32)
    assert entry(5, x.ctypes.data, y.ctypes.data) == 0
    np.testing.assert_allclose(y, batched(x)[0], rtol=1e-6, atol=1e-6)


def test_a_model_not_separable_is_not_batched():
    proto = inseparable([helper.make_node("Softmax", ["x"], ["y"], axis=0)])
    with pytest.raises(StratoError, match=r"not separable along 'B' \(operation 0 \(graph.softmax\)"):
        strato.compile(proto, cache=False, run_time_dims=False).batched()


def test_input_shapes_pins_some_dimensions_and_leaves_named_ones_open(monkeypatch):
    """input_shapes {"x": ["B", 3, 4]} on a model of x [B, S, 4]: S pinned, B open (and
    separable: one compile)."""
    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    proto = model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [("x", ("B", "S", 4))], ["y"]
    )
    compiled = strato.compile(proto, input_shapes={"x": ["B", 3, 4]}, cache=False, run_time_dims=False)
    assert compiled.dims.describe() == "'x' axis 0 ('B')"
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(compiled(x)[0], e / e.sum(axis=-1, keepdims=True), rtol=1e-5)
    assert compiled.sizes == [{"x": (1, 3, 4)}]
    with pytest.raises(InputMismatchError, match="axis 1 is 5, the model fixes it at 3"):
        compiled(np.zeros((2, 5, 4), np.float32))
    with pytest.raises(StratoError, match="input_shapes leaves 'B' of 'x' open"):
        strato.compile(proto, input_shapes={"x": ["B", 3, 4]}, specialize=False)


def test_cli_compiles_a_dynamic_batch_model_to_files_for_every_size(monkeypatch, tmp_path, capsys):
    from strato.tools import strato_cli

    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)
    source = tmp_path / "cnn.onnx"
    onnx.save(small_cnn(), source)
    assert strato_cli.main(["compile", str(source), "-o", str(tmp_path / "cnn.o")]) == 0
    assert "cnn_run_batch for any 'B'" in capsys.readouterr().out
    assert "cnn_run_batch(int64_t B" in (tmp_path / "cnn.h").read_text()
    assert strato_cli.main(["compile", str(source), "-o", str(tmp_path / "cnn.strato")]) == 0
    loaded = strato.load(tmp_path / "cnn.strato")
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(loaded(x)[0], interpreted(small_cnn(), x), rtol=1e-4, atol=1e-5)
    shapes = strato_cli.parse_input_shapes("ids:[batch,64] mask:[batch,64]")
    assert shapes == {"ids": ("batch", 64), "mask": ("batch", 64)}


@pytest.mark.parametrize(
    "manifest, reason",
    [
        ({"format": "strato-batched-model", "dimension": 3}, "dimension or axes"),
        (
            {"format": "strato-batched-model", "dimension": "B", "input_axes": [0, 1], "output_axes": [0]},
            "do not match the model's inputs",
        ),
        (
            {"format": "strato-batched-model", "dimension": "B", "input_axes": [-1], "output_axes": [0]},
            "dimension or axes",
        ),
    ],
)
def test_a_corrupt_batched_model_file_is_diagnosed(monkeypatch, tmp_path, manifest, reason):
    import json
    import zipfile

    from strato.runtime.saved_model import ModelFileError

    path = tmp_path / "cnn.strato"
    batched_cnn(monkeypatch).save(path)
    with zipfile.ZipFile(path) as archive:
        inner = archive.read("sample.strato")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("sample.strato", inner)
    with pytest.raises(ModelFileError, match=reason):
        strato.load(path)
