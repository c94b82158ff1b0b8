"""The dtype fuzz (strato.testing.dtype_fuzz): its case generation, and a deterministic
sample run through the llvm backend, every operator of the importer with the least common
element types its schema allows, which must end in no bug (crash, hang, internal error,
wrong result or a refusal that names neither the op nor the type)."""

from __future__ import annotations

import random

import ml_dtypes
import numpy as np
import pytest

from strato.testing.dtype_fuzz import (
    DtypeCase,
    Outcome,
    classify,
    fuzz,
    generate,
    report,
    representable,
    type_combinations,
    unusual_combinations,
)
from strato.testing.onnx_node_tests import NodeTestResult


def test_combinations_cover_every_allowed_type():
    combos = type_combinations("Cast", 40, random.Random(0))
    assert len(combos) == 40
    for variable in ("T1", "T2"):
        assert {"float", "bfloat16", "uint64", "string", "float8e4m3fn"} <= {
            c[variable] for c in combos
        }
    assert len(type_combinations("Abs", 40, random.Random(0))) == 12  # all of them
    assert type_combinations("Cast", 40, random.Random(1)) != combos


def test_unusual_combinations():
    assert unusual_combinations("Abs") == [
        {"T": name} for name in ("float16", "bfloat16", "int8", "uint8", "int16", "uint64")
    ]
    # Gather's index type allows none of the unusual types: int64 it is.
    assert {c["Tind"] for c in unusual_combinations("Gather")} == {"int64"}


def test_values_made_representable():
    values = np.array([-3.7, -0.2, 0.0, 2.5, 300.0, np.nan], np.float32)
    assert representable(values, np.dtype(np.uint8)).tolist() == [4, 0, 0, 2, 255, 0]
    assert representable(values, np.dtype(np.int8)).tolist() == [-4, 0, 0, 2, 127, 0]
    assert representable(values, np.dtype(bool)).tolist() == [True, True, False, True, True, True]
    e4m3 = representable(np.array([1e6, -1e6], np.float32), np.dtype(ml_dtypes.float8_e4m3fn))
    assert e4m3.astype(np.float32).tolist() == [448.0, -448.0]
    e8m0 = representable(np.array([0.0, -2.0], np.float32), np.dtype(ml_dtypes.float8_e8m0fnu))
    assert e8m0.astype(np.float32).tolist() == [1.0, 2.0]
    text = representable(np.array([-3.7, -0.2, 0.0, 2.5]), np.dtype(object))
    assert text.tolist() == ["-3.7", "-0.2", "0", "2.5"]


def test_case_models_follow_the_binding():
    cases, skipped = generate(["Cast", "ConstantOfShape"], pattern=r"T2=int8\]", per_op=0)
    assert not skipped
    assert {c.op for c in cases} == {"Cast", "ConstantOfShape"}
    for case in cases:
        assert case.model.graph.output[0].type.tensor_type.elem_type == 3  # INT8
        assert case.data_sets[0][1][0].dtype == np.int8


def test_classification():
    case = DtypeCase("Abs[T=int8]<test_abs>", "Abs", {"T": "int8"}, "test_abs", None)

    def status(**result) -> str:
        return classify(case, NodeTestResult(case.name, **result)).status

    assert status(passed=True) == "passed"
    assert status(passed=False, reason="node #0 (Abs): int8 is not", refused=True) == "refused"
    assert status(passed=False, reason="graph input 'x' is INT8", refused=True) == "refused"
    assert status(passed=False, reason="something went wrong", refused=True) == "vague refusal"
    assert status(passed=False, reason="crashed the process (signal 11)") == "crash"
    assert status(passed=False, reason="timed out after 60 s") == "hang"
    assert status(passed=False, reason="internal error: KeyError: 3") == "internal error"
    assert status(passed=False, reason="output 0 differs: ...") == "wrong result"
    text = report([Outcome("Abs", case.name, "crash", "crashed the process (signal 11)")])
    assert "CRASH" in text and "1 bugs" in text


def test_unusual_types_of_every_op_end_in_no_bug():
    outcomes = fuzz(unusual=True, workers=2)
    assert len(outcomes) > 500
    bugs = [o for o in outcomes if o.bug]
    assert not bugs, report(outcomes)


# Regressions: bugs the fuzz found, each as the smallest model that showed it.


def _compiled_and_reference(node, inputs: dict[str, np.ndarray], outputs: dict[str, int]):
    """`node` as a one-node model compiled by the llvm backend and run on `inputs`, and
    ONNX's reference outputs."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    from strato.onnx_backend import StratoBackend

    graph = helper.make_graph(
        [node],
        "regression",
        [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for name, v in inputs.items()
        ],
        [helper.make_tensor_value_info(name, elem, None) for name, elem in outputs.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    actual = StratoBackend.prepare(model, "CPU").run(list(inputs.values()))
    expected = ReferenceEvaluator(model).run(None, inputs)
    return [np.asarray(a) for a in actual], expected


@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz])
def test_constant_pad_of_an_8_bit_float_pads_with_its_value(dtype):
    # The pad value was taken as an integer bit pattern: 1.25 became the bits 0x01.
    from onnx import helper

    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(dtype)
    inputs = {"x": x, "pads": np.array([0, 1, 0, 2], np.int64), "value": np.array(1.25, dtype)}
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode="constant")
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    (actual,), (expected,) = _compiled_and_reference(node, inputs, {"y": elem})
    assert actual.dtype == expected.dtype
    assert actual.astype(np.float32).tolist() == expected.astype(np.float32).tolist()
    assert actual[0, 0].astype(np.float32) == 1.25


def test_training_dropout_of_an_8_bit_float_scales_the_values():
    # The kept values were multiplied as bit patterns (an i8 product).
    from onnx import TensorProto, helper

    dtype = ml_dtypes.float8_e4m3fn
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4).astype(dtype)
    inputs = {"x": x, "ratio": np.array(0.75, dtype), "training": np.array(True)}
    node = helper.make_node("Dropout", ["x", "ratio", "training"], ["y"], seed=0)
    (actual,), (expected,) = _compiled_and_reference(node, inputs, {"y": TensorProto.FLOAT8E4M3FN})
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual.astype(np.float32), expected.astype(np.float32), rtol=0.13)


def test_col2im_of_bools_sums_overlapping_blocks_as_any():
    # Overlapping blocks were summed by an i1 add: true + true wrapped to false.
    from onnx import TensorProto, helper

    x = np.ones((1, 4, 4), dtype=bool)  # 2x2 blocks at 2x2 positions of a 3x3 image
    inputs = {"x": x, "image": np.array([3, 3], np.int64), "block": np.array([2, 2], np.int64)}
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    (actual,), (expected,) = _compiled_and_reference(node, inputs, {"y": TensorProto.BOOL})
    assert expected.all()
    assert actual.dtype == np.bool_ and actual.tolist() == expected.tolist()


@pytest.mark.parametrize("op_type", ["BlackmanWindow", "HammingWindow", "HannWindow"])
@pytest.mark.parametrize("elem", ["INT32", "UINT8", "FLOAT16", "DOUBLE"])
def test_window_of_an_integer_type_keeps_its_peak(op_type, elem):
    # ONNX's function bodies compute the windows from float32 coefficients: a Blackman
    # window's peak came out as 0.99999994, truncated to 0 in an integer window.
    from onnx import TensorProto, helper

    node = helper.make_node(op_type, ["size"], ["y"], output_datatype=getattr(TensorProto, elem))
    inputs = {"size": np.array(10, np.int32)}
    (actual,), (expected,) = _compiled_and_reference(
        node, inputs, {"y": getattr(TensorProto, elem)}
    )
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), atol=1e-3)
    if elem in ("INT32", "UINT8"):
        assert actual[5] == 1


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.uint8, np.int64])
def test_shrink_of_integers_compares_and_adds_in_float(dtype):
    # ONNX's function body casts lambd and bias to the input's type: in an unsigned
    # type -lambd wrapped around, so 0 < -lambd held and 0 shrank to 0 + bias.
    from onnx import helper

    info = np.iinfo(dtype)
    x = np.clip(np.array([-3, -2, -1, 0, 1, 2, 3, 7]), info.min, info.max).astype(dtype)
    for lambd, bias in ((1.5, 1.5), (1.0, 0.5), (0.0, 2.0)):
        node = helper.make_node("Shrink", ["x"], ["y"], lambd=lambd, bias=bias)
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        (actual,), (expected,) = _compiled_and_reference(node, {"x": x}, {"y": elem})
        assert actual.dtype == expected.dtype
        assert actual.tolist() == expected.tolist(), (lambd, bias)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_layer_normalization_statistics_have_the_stash_type(dtype):
    # Mean and InvStdDev are float32 (stash_type 1) for any input type; strato computed
    # them in the input's type and then refused its own result.
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((3, 4)).astype(dtype), "w": np.ones(4, dtype)}
    node = helper.make_node("LayerNormalization", ["x", "w"], ["y", "mean", "inv"], axis=1)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    outputs = {"y": elem, "mean": TensorProto.FLOAT, "inv": TensorProto.FLOAT}
    actual, expected = _compiled_and_reference(node, inputs, outputs)
    # (ONNX's reference gives them the input's type; its type inference and
    # onnxruntime float32.)
    assert [a.dtype for a in actual] == [np.dtype(dtype), np.float32, np.float32]
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=1e-2, atol=1e-2)


def test_a_complex_constant_output_is_refused_naming_its_type():
    from onnx import TensorProto, helper, numpy_helper

    from strato.diagnostics import StratoError
    from strato.onnx_backend import StratoBackend

    value = numpy_helper.from_array(np.array([1 + 2j], np.complex64), "value")
    node = helper.make_node("Constant", [], ["y"], value=value)
    graph = helper.make_graph(
        [node], "g", [], [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [1])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    with pytest.raises(StratoError, match="has element type complex64"):
        StratoBackend.prepare(model, "CPU")


@pytest.mark.parametrize("elem", ["INT8", "FLOAT8E5M2"])
def test_quantize_linear_of_int32_divides_exactly(elem):
    # An int32 x over an int32 scale was an integer division: 7 / 2 quantized to 3.
    from onnx import TensorProto, helper

    inputs = {
        "x": np.array([0, 2, 5, 7, -3, -5, -7, 9], np.int32),
        "scale": np.array(2, np.int32),
    }
    target = getattr(TensorProto, elem)
    node = helper.make_node("QuantizeLinear", ["x", "scale"], ["y"], output_dtype=target)
    (actual,), (expected,) = _compiled_and_reference(node, inputs, {"y": target})
    assert actual.dtype == expected.dtype
    assert actual.astype(np.float32).tolist() == expected.astype(np.float32).tolist()


def test_batch_normalization_with_parameters_of_other_float_types():
    # Scale and bias (T1), mean and variance (T2) of another type than X (T) made
    # graph.batch_norm fail to verify.
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.standard_normal((2, 3, 4)).astype(np.float16),
        "scale": rng.uniform(0.5, 1.5, 3).astype(np.float32),
        "bias": rng.standard_normal(3).astype(np.float32),
        "mean": rng.standard_normal(3).astype(np.float64),
        "var": rng.uniform(0.5, 1.5, 3).astype(np.float64),
    }
    node = helper.make_node("BatchNormalization", list(inputs), ["y"])
    (actual,), (expected,) = _compiled_and_reference(node, inputs, {"y": TensorProto.FLOAT16})
    assert actual.dtype == np.float16
    np.testing.assert_allclose(actual, expected.astype(np.float16), rtol=1e-2, atol=1e-2)


def test_scatter_elements_add_of_bools_is_any():
    # Duplicate indices added their bool updates with an i1 add: true + true = false.
    from onnx import TensorProto, helper

    inputs = {
        "data": np.array([[True, False, True]]),
        "indices": np.array([[1, 1, 0]], np.int64),
        "updates": np.array([[True, True, True]]),
    }
    node = helper.make_node("ScatterElements", list(inputs), ["y"], axis=1, reduction="add")
    (actual,), (expected,) = _compiled_and_reference(node, inputs, {"y": TensorProto.BOOL})
    assert actual.tolist() == expected.tolist() == [[True, True, True]]


def test_bicubic_grid_sample_of_bfloat16_computes_in_float32():
    # Coordinates and weights rounded to bfloat16 at every step: 0.27 for 0.38.
    from onnx import TensorProto, helper

    x = np.arange(6, dtype=np.float32).reshape(1, 1, 3, 2)
    grid = np.array([-1, -1, -0.5, -0.5, -0.2, -0.2, 0, 0], np.float32).reshape(1, 2, 2, 2)
    bf16 = ml_dtypes.bfloat16
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode="cubic")
    inputs = {"x": x.astype(bf16), "grid": grid.astype(bf16)}
    (actual,), _ = _compiled_and_reference(node, inputs, {"y": TensorProto.BFLOAT16})
    # the float32 reference on the same values, rounded to bfloat16
    wide = {k: v.astype(np.float32) for k, v in inputs.items()}
    (expected,) = _compiled_and_reference(node, wide, {"y": TensorProto.FLOAT})[1]
    assert actual.dtype == bf16
    np.testing.assert_allclose(
        actual.astype(np.float32), expected.astype(bf16).astype(np.float32), rtol=1e-2, atol=1e-2
    )


def test_attention_with_an_integer_mask_is_refused():
    # ONNX's reference adds an integer mask to the scores; the function body strato
    # compiles (and onnxruntime) read it otherwise, and a short integer mask cannot be
    # padded with -inf: strato computed a third answer.
    from onnx import TensorProto

    from strato.diagnostics import StratoError
    from strato.onnx_backend import StratoBackend

    with pytest.raises(StratoError, match=r"Attention.*attn_mask has element type uint8"):
        StratoBackend.prepare(_attention_model(mask=TensorProto.UINT8), "CPU")


def test_attention_with_a_value_type_other_than_the_querys_is_refused():
    # The function body's last MatMul multiplies the weights (Q's type) by V, and ONNX's
    # reference returns Y in the wider type, which is neither declared one.
    from onnx import TensorProto

    from strato.diagnostics import StratoError
    from strato.onnx_backend import StratoBackend

    model = _attention_model(value=TensorProto.DOUBLE)
    with pytest.raises(StratoError, match=r"Attention.*V has element type float64 and Q float32"):
        StratoBackend.prepare(model, "CPU")


def _attention_model(*, value: int | None = None, mask: int | None = None):
    """A one-node Attention model of float32 Q and K, V of type `value` (Q's by default),
    with an attn_mask of type `mask` when given."""
    from onnx import TensorProto, helper

    value = TensorProto.FLOAT if value is None else value
    inputs = [
        helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 2, 3, 4]),
        helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 2, 5, 4]),
        helper.make_tensor_value_info("v", value, [1, 2, 5, 4]),
    ]
    if mask is not None:
        inputs.append(helper.make_tensor_value_info("mask", mask, [3, 5]))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("Attention", [i.name for i in inputs], ["y"])
    graph = helper.make_graph([node], "g", inputs, [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
