"""Sequence and optional values: compiled per structure (a sequence's length and
element shapes, an optional's presence), one tensor argument per element."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import strato
from strato import onnx_backend as backend
from strato.diagnostics import ModelImportError, StratoError
from strato.frontends.onnx import import_onnx
from strato.runtime.signature import InputMismatchError

F = TensorProto.FLOAT


def seq_of(shape) -> onnx.TypeProto:
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, shape))


def optional_of(type_proto: onnx.TypeProto) -> onnx.TypeProto:
    return helper.make_optional_type_proto(type_proto)


def model_of(nodes, inputs: dict[str, onnx.TypeProto], outputs: dict[str, onnx.TypeProto]):
    graph = helper.make_graph(
        nodes,
        "structured",
        [helper.make_value_info(name, type_) for name, type_ in inputs.items()],
        [helper.make_value_info(name, type_) for name, type_ in outputs.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def identity(input_type: onnx.TypeProto) -> onnx.ModelProto:
    node = helper.make_node("Identity", ["x"], ["y"], name="id")
    return model_of([node], {"x": input_type}, {"y": input_type})


def arrays(*shapes) -> list[np.ndarray]:
    rng = np.random.default_rng(len(shapes))
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def assert_same(out, ref) -> None:
    if ref is None:
        assert out is None
        return
    assert isinstance(out, list) and len(out) == len(ref)
    for item, ref_item in zip(out, ref):
        assert item.shape == ref_item.shape and item.dtype == ref_item.dtype
        np.testing.assert_array_equal(item, ref_item)


def test_identity_of_a_sequence_is_compiled_per_length_and_element_shapes():
    rep = backend.prepare(identity(seq_of(None)))
    for value in (arrays((2, 3), (4,)), arrays((2, 3), (4,)), arrays((1,)), []):
        (y,) = rep.run([value])
        assert_same(y, value)
    assert rep.variants == 3  # ((2, 3), (4,)) twice, then ((1,),), then the empty sequence


@pytest.mark.parametrize("present", [True, False])
def test_identity_of_an_optional_sequence_present_or_absent(present: bool):
    rep = backend.prepare(identity(optional_of(seq_of([5]))))
    value = arrays((5,), (5,)) if present else None
    (y,) = rep.run([value])
    assert_same(y, value)


@pytest.mark.parametrize("present", [True, False])
def test_identity_of_an_optional_tensor_beside_a_tensor(present: bool):
    optional = optional_of(helper.make_tensor_type_proto(F, [3]))
    tensor = helper.make_tensor_type_proto(F, [2])
    model = model_of(
        [helper.make_node("Identity", ["o"], ["p"]), helper.make_node("Relu", ["t"], ["r"])],
        {"t": tensor, "o": optional},
        {"r": tensor, "p": optional},
    )
    t = np.array([-1.0, 2.0], np.float32)
    o = np.arange(3, dtype=np.float32) if present else None
    r, p = backend.prepare(model).run({"t": t, "o": o})
    np.testing.assert_array_equal(r, [0.0, 2.0])
    if present:
        np.testing.assert_array_equal(p, o)
    else:
        assert p is None


def test_input_shapes_gives_the_structure_to_strato_compile():
    compiled = strato.compile(identity(seq_of([2])), input_shapes={"x": [(2,), [2]]})
    assert compiled.input_names == ["x[0]", "x[1]"]
    assert compiled.output_names == ["y[0]", "y[1]"]
    a, b = arrays((2,), (2,))
    y0, y1 = compiled(a, b)
    np.testing.assert_array_equal(y0, a)
    np.testing.assert_array_equal(y1, b)


@pytest.mark.parametrize(
    ("model", "shapes", "message"),
    [
        (
            identity(seq_of([2])),
            None,
            r"graph input 'x' is a sequence or optional: strato compiles one of a known "
            r"structure \(give it in input_shapes",
        ),
        (
            identity(seq_of([2])),
            {"x": (2, 2)},
            r"graph input 'x' is a sequence: its structure is the list of its element "
            r"shapes, got \(2, 2\)",
        ),
        (
            identity(optional_of(seq_of([5]))),
            {"x": [(4,)]},
            r"graph input 'x\[0\]' has shape \[4\], the model declares \[5\]",
        ),
        (
            identity(helper.make_sequence_type_proto(seq_of([2]))),
            {"x": [[(2,)]]},
            r"graph input 'x' is a sequence of sequences; strato compiles sequences of tensors",
        ),
        (
            model_of(
                [helper.make_node("Relu", ["x"], ["y"])],
                {"x": seq_of([2])},
                {"y": helper.make_tensor_type_proto(F, [2])},
            ),
            {"x": [(2,), (2,)]},
            r"node #0 \(Relu\): input 'x' is a sequence of 2 value\(s\); strato's Relu "
            r"takes tensors",
        ),
        (
            identity(optional_of(seq_of([5]))),
            {"x": []},
            r"graph output 'y' is an optional holding an empty sequence",
        ),
    ],
)
def test_bad_structures_are_one_line_diagnostics(model, shapes, message):
    with pytest.raises(ModelImportError, match=message) as error:
        import_onnx(model, input_shapes=shapes)
    assert "\n" not in str(error.value)


def test_a_bad_structure_in_input_shapes_names_the_entry():
    with pytest.raises(StratoError, match=r"input_shapes\['x'\]\[1\]: dimension -1 is negative"):
        strato.compile(identity(seq_of([2])), input_shapes={"x": [(2,), (-1,)]})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.zeros(2, np.float32), r"input 'x': a sequence is a list of arrays, got ndarray"),
        ([np.zeros(2, np.float32), 3], r"input 'x\[1\]': expected a numpy array, got int"),
    ],
)
def test_a_run_value_of_the_wrong_kind_is_an_input_mismatch(value, message):
    rep = backend.prepare(identity(seq_of([2])))
    with pytest.raises(InputMismatchError, match=message):
        rep.run([value])


def test_a_structure_for_a_tensor_input_is_a_diagnostic():
    model = model_of(
        [helper.make_node("Relu", ["x"], ["y"])],
        {"x": helper.make_tensor_type_proto(F, [2])},
        {"y": helper.make_tensor_type_proto(F, [2])},
    )
    message = r"cannot set the shape of 'x' to \[\(2,\)\]: it is a tensor, not a sequence"
    with pytest.raises(ModelImportError, match=message):
        strato.compile(model, input_shapes={"x": [(2,)]})


def test_a_tensor_named_like_a_sequence_element_is_a_diagnostic():
    tensor = helper.make_tensor_type_proto(F, [2])
    model = model_of(
        [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Relu", ["x[0]"], ["r"])],
        {"x": seq_of([2]), "x[0]": tensor},
        {"y": seq_of([2]), "r": tensor},
    )
    with pytest.raises(ModelImportError, match=r"graph input 'x\[0\]' is named like an element"):
        import_onnx(model, input_shapes={"x": [(2,)]})
