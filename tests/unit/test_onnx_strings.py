"""String tensors through the ONNX backend: int64 ids of one dictionary per call, for
models whose strings are only compared for equality or moved about; every operator of
`ID_SAFE_USES` is checked against ONNX's reference evaluator."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato import onnx_backend as backend
from strato.diagnostics import ModelImportError
from strato.frontends.onnx.strings import ID_SAFE_USES, StringEncoding
from strato.runtime.signature import InputMismatchError

S, B, I64 = TensorProto.STRING, TensorProto.BOOL, TensorProto.INT64


def model_of(
    op_type: str,
    inputs: dict[str, tuple[int, list[int]]],
    outputs: dict[str, int],
    initializers: dict[str, np.ndarray] | None = None,
    node_inputs: list[str] | None = None,
    **attributes,
) -> onnx.ModelProto:
    initializers = initializers or {}
    names = node_inputs if node_inputs is not None else [*inputs, *initializers]
    domain = "ai.onnx.ml" if op_type == "LabelEncoder" else ""
    node = helper.make_node(op_type, names, list(outputs), name="node", domain=domain, **attributes)
    graph = helper.make_graph(
        [node],
        "strings",
        [helper.make_tensor_value_info(n, elem, shape) for n, (elem, shape) in inputs.items()],
        [helper.make_tensor_value_info(n, elem, None) for n, elem in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("ai.onnx.ml", 4)]
    return helper.make_model(graph, opset_imports=opsets if domain else opsets[:1])


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def words(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Strings drawn from a few, so that equal strings recur across inputs."""
    pool = np.array(["a", "b", "ab", "", "é", "a "], dtype=object)
    return pool[rng.integers(0, len(pool), shape)]


X23 = (S, [2, 3])
CASES = {
    "Equal": model_of("Equal", {"x": X23, "y": (S, [3])}, {"z": B}),
    "Identity": model_of("Identity", {"x": X23}, {"z": S}),
    "Reshape": model_of("Reshape", {"x": X23}, {"z": S}, {"s": ints(3, 2)}),
    "Transpose": model_of("Transpose", {"x": X23}, {"z": S}, perm=[1, 0]),
    "Squeeze": model_of("Squeeze", {"x": (S, [1, 3])}, {"z": S}, {"a": ints(0)}),
    "Unsqueeze": model_of("Unsqueeze", {"x": X23}, {"z": S}, {"a": ints(1)}),
    "Flatten": model_of("Flatten", {"x": (S, [2, 3, 1])}, {"z": S}, axis=1),
    "Expand": model_of("Expand", {"x": (S, [1, 3])}, {"z": S}, {"s": ints(2, 3)}),
    "Tile": model_of("Tile", {"x": X23}, {"z": S}, {"r": ints(2, 1)}),
    "Slice": model_of(
        "Slice", {"x": X23}, {"z": S}, {"b": ints(1), "e": ints(3), "a": ints(1)}
    ),
    "Gather": model_of("Gather", {"x": X23}, {"z": S}, {"i": ints(2, 0, 2)}, axis=1),
    "Concat": model_of("Concat", {"x": X23, "y": X23}, {"z": S}, axis=0),
    "Split": model_of("Split", {"x": (S, [2, 4])}, {"z0": S, "z1": S}, axis=1, num_outputs=2),
    "Where": model_of("Where", {"c": (B, [2, 3]), "x": X23, "y": (S, [3])}, {"z": S}),
    "Shape": model_of("Shape", {"x": X23}, {"z": I64}, start=1),
    "Size": model_of("Size", {"x": X23}, {"z": I64}),
    "TfIdfVectorizer": model_of(
        "TfIdfVectorizer", {"x": (S, [2, 5])}, {"z": TensorProto.FLOAT},
        mode="TFIDF", min_gram_length=1, max_gram_length=2, max_skip_count=1,
        ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4],
        pool_strings=["a", "b", "ab", "a", "b", "ab", "é"],
        weights=[0.5, 1.0, 2.0, 0.25, 3.0],
    ),
    "LabelEncoder": model_of(
        "LabelEncoder", {"x": X23}, {"z": S},
        keys_strings=["a", "b", "ab", "a"], values_strings=["A", "B", "AB", "first"],
        default_string="?",
    ),
}


def test_every_id_safe_operator_is_tested():
    assert set(CASES) == set(ID_SAFE_USES)


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_operator_on_strings_matches_the_reference(op_type: str):
    model = CASES[op_type]
    rep = backend.prepare(model)
    reference = ReferenceEvaluator(model)
    rng = np.random.default_rng(0)
    for _ in range(2):  # a second call builds its own dictionary
        feeds = {}
        for value in model.graph.input:
            shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
            if value.type.tensor_type.elem_type == S:
                feeds[value.name] = words(rng, shape)
            else:
                feeds[value.name] = rng.integers(0, 2, shape).astype(np.bool_)
        outputs = rep.run(feeds)
        expected = reference.run(None, feeds)
        assert len(outputs) == len(expected)
        for out, ref in zip(outputs, expected):
            ref = np.asarray(ref)
            # string outputs are object arrays (the reference gives some as numpy str)
            assert out.dtype == ref.dtype or (out.dtype == object and ref.dtype.kind == "U")
            assert out.shape == ref.shape
            np.testing.assert_array_equal(out, ref)


def test_string_constants_share_the_dictionary_with_the_inputs():
    names = np.array(["cat", "dog"], dtype=object)
    equal = helper.make_node("Equal", ["x", "names"], ["same"])
    constant = helper.make_node("Constant", [], ["more"], value_strings=["emu"])
    concat = helper.make_node("Concat", ["x", "more"], ["all"], axis=0)
    graph = helper.make_graph(
        [equal, constant, concat],
        "constants",
        [helper.make_tensor_value_info("x", S, [2])],
        [
            helper.make_tensor_value_info("same", B, [2]),
            helper.make_tensor_value_info("all", S, [3]),
        ],
        [numpy_helper.from_array(names, "names")],
    )
    rep = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    same, everything = rep.run([np.array(["emu", "dog"], dtype=object)])
    np.testing.assert_array_equal(same, [False, True])
    assert everything.tolist() == ["emu", "dog", "emu"]
    same, everything = rep.run([np.array([b"cat", b"owl"], dtype=object)])
    np.testing.assert_array_equal(same, [True, False])
    assert everything.tolist() == ["cat", "owl", "emu"]


def test_equal_of_two_known_string_tensors_folds_without_the_backend():
    known = {"a": np.array(["a", "b"], dtype=object), "b": np.array(["a"], dtype=object)}
    model = model_of("Equal", {}, {"z": B}, known)
    (z,) = strato.compile(model)()
    np.testing.assert_array_equal(z, [True, False])


def test_a_model_without_strings_has_no_encoding():
    model = model_of("Identity", {"x": (TensorProto.FLOAT, [2])}, {"z": TensorProto.FLOAT})
    assert StringEncoding.of(model) is None


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (
            [helper.make_node("Cast", ["x"], ["z"], to=TensorProto.FLOAT)],
            r"node #0 \(Cast\): input 'x' is a string tensor; strato compiles strings as "
            r"dictionary ids, which only equality and data movement preserve \(Concat, ",
        ),
        (
            [
                helper.make_node("Identity", ["x"], ["t"]),
                helper.make_node("Cast", ["t"], ["z"], to=TensorProto.FLOAT),
            ],
            r"node #1 \(Cast\): input 't' is a string tensor",
        ),
        (
            [helper.make_node("Gather", ["i", "x"], ["z"])],
            r"node #0 \(Gather\): input 'x' is a string tensor",
        ),
    ],
)
def test_uses_that_ids_do_not_preserve_are_one_line_diagnostics(nodes, message):
    inputs = [helper.make_tensor_value_info("x", S, [2])]
    if any("i" in node.input for node in nodes):
        inputs = [helper.make_tensor_value_info("i", I64, [2]), *inputs]
    graph = helper.make_graph(nodes, "bad", inputs, [helper.make_tensor_value_info("z", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(ModelImportError, match=message) as error:
        backend.prepare(model)
    assert "\n" not in str(error.value)


def test_a_string_input_given_numbers_is_an_input_mismatch():
    rep = backend.prepare(CASES["Identity"])
    with pytest.raises(InputMismatchError, match=r"input 'x': expected a string array, got int64"):
        rep.run([np.zeros((2, 3), np.int64)])


def test_compiling_strings_directly_names_the_backend():
    with pytest.raises(ModelImportError, match=r"element type STRING; .*ONNX backend compiles"):
        strato.compile(CASES["Equal"])


def test_a_scalar_string_output_maps_back():
    model = model_of("Identity", {"x": (S, [])}, {"z": S})
    (z,) = backend.prepare(model).run([np.array("hi", dtype=object)])
    assert z.shape == () and z.dtype == object and z[()] == "hi"
