"""Equal, Where, Cast and CastLike: ONNX import against onnxruntime and ONNX's reference
implementation through the graph interpreter and the LLVM JIT, the strategies through
the te and loop interpreters, the bit-level conversions of the 8- and 4-bit float
formats checked on every bit pattern, import-time folding, diagnostics, verifier errors
and ONNX's own node tests."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32, i1, i32
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import strato
from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph
from strato.dialects.graph.logic import RoundMode, cast_array
from strato.dialects.tensor_types import element_type_of, elements_from_storage
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.targets.llvm.jit import JitModule
from strato.testing.onnx_node_tests import run_node_test, select_node_tests
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

RNG = np.random.default_rng(0)

FLOAT8 = [
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e5m2fnuz,
]
NARROW = [*FLOAT8, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu]
STANDARD = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
]  # fmt: skip
SUB_BYTE = [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2]


def in_range(x: np.ndarray, target) -> np.ndarray:
    """Where a float-to-`target` cast of `x` is defined by ONNX: the truncated value is
    in the integer type's range (everywhere for a float type)."""
    dtype = np.dtype(target)
    if dtype.name in ("int4", "uint4", "int2", "uint2"):
        info = ml_dtypes.iinfo(dtype)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
    else:
        return np.ones(x.shape, bool)
    truncated = np.trunc(x.astype(np.float64))
    return (truncated >= int(info.min)) & (truncated <= int(info.max))


def name_of(dtype) -> str:
    return np.dtype(dtype).name


def onnx_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def model_of(
    op_type: str,
    inputs: dict[str, np.ndarray],
    output_dtype,
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 23,
    **attributes,
) -> onnx.ModelProto:
    """A one-node model over graph `inputs` and `initializers`, its output declared with
    `output_dtype` and the shape ONNX infers."""
    initializers = initializers or {}
    node = helper.make_node(
        op_type, [*inputs, *initializers], ["result"], name="node", **attributes
    )
    values = [
        helper.make_tensor_value_info(n, onnx_type(a.dtype), a.shape) for n, a in inputs.items()
    ]
    output = helper.make_tensor_value_info("result", onnx_type(output_dtype), None)
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()]
    model = helper.make_model(
        helper.make_graph([node], "one_node", values, [output], inits),
        opset_imports=[helper.make_opsetid("", opset)],
    )
    model.ir_version = 11 if opset >= 24 else 10 if opset >= 21 else 8
    inferred = onnx.shape_inference.infer_shapes(model)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model


def same(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Same dtype and shape, and the same values (any NaN matches any NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    if expected.dtype.kind in "biu":
        return np.array_equal(actual, expected)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    return bool(np.all(both_nan | ((a == e) & (np.signbit(a) == np.signbit(e)))))


def reference(model: onnx.ModelProto, inputs: list[np.ndarray]) -> np.ndarray:
    names = [value.name for value in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


def through_strato(model: onnx.ModelProto, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The model's output from the graph interpreter and from strato.compile."""
    imported = import_onnx(model)
    return {
        "graph": run_graph(imported.module, inputs)[0],
        "llvm": strato.compile(model)(*inputs)[0],
    }


def sample(dtype, shape=(4, 6)) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(
            max(info.min, -1000), min(info.max, 1000), shape, dtype=dtype, endpoint=True
        )
    values = RNG.standard_normal(shape) * 50
    values.flat[:6] = [0.0, -0.0, 0.5, 2.5, -3.5, 1e-3]
    return values.astype(dtype)


# -- Equal -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [np.int32, np.uint8, np.uint64, np.int8, np.float32, np.float16, np.bool_], ids=name_of
)
def test_equal_against_onnxruntime(dtype):
    a = sample(dtype, (3, 4))
    b = a.copy()
    b[0] = sample(dtype, (4,))
    b = b[:, :1] if dtype == np.bool_ else b  # broadcasting of a column
    model = model_of("Equal", {"a": a, "b": b}, np.bool_, opset=19)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"a": a, "b": b})
    for level, result in through_strato(model, [a, b]).items():
        assert same(result, expected), level


def test_equal_of_floats_is_ordered():
    a = np.array([np.nan, 1.0, -0.0], np.float32)
    b = np.array([np.nan, 1.0, 0.0], np.float32)
    for result in through_strato(model_of("Equal", {"a": a, "b": b}, np.bool_), [a, b]).values():
        assert result.tolist() == [False, True, True]


# -- Less, Greater, LessOrEqual, GreaterOrEqual ----------------------------------------

COMPARISONS = ["Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


def lowered(model: onnx.ModelProto, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The model's output from every level: graph, te and loop interpreters, LLVM."""
    results = through_strato(model, inputs)
    module = import_onnx(model).module
    ctx = make_context()
    run_pipeline(ctx, module, "convert-graph-to-te")
    results["te"] = run_te(module, inputs)[0]
    run_pipeline(ctx, module, "convert-te-to-loops")
    results["loops"] = run_loops(module, inputs)[0]
    return results


@pytest.mark.parametrize("op_type", COMPARISONS)
@pytest.mark.parametrize(
    "dtype", [np.int32, np.uint8, np.uint64, np.int64, np.float32, np.float16], ids=name_of
)
def test_comparisons_against_onnxruntime(op_type, dtype):
    a = sample(dtype, (3, 4))
    b = a[1].copy()  # row 1 compares equal
    b[:2] = sample(dtype, (2,))
    if np.dtype(dtype).kind == "f":
        a[2, :2] = np.nan
    model = model_of(op_type, {"a": a, "b": b}, np.bool_, opset=16)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"a": a, "b": b})
    every_level = dtype in (np.uint64, np.float32)
    results = lowered(model, [a, b]) if every_level else through_strato(model, [a, b])
    for level, result in results.items():
        assert same(result, expected), level


def test_comparisons_of_unsigned_integers_are_unsigned():
    a = np.array([0, 200, 255, 1], np.uint8)
    b = np.array([255, 100, 0, 1], np.uint8)
    for op_type, fn in zip(COMPARISONS, [np.less, np.less_equal, np.greater, np.greater_equal]):
        model = model_of(op_type, {"a": a, "b": b}, np.bool_, opset=16)
        for level, result in lowered(model, [a, b]).items():
            assert result.tolist() == fn(a, b).tolist(), (op_type, level)


# -- And, Or, Xor, Not ------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_boolean_ops_broadcast(op_type):
    a = RNG.integers(0, 2, (3, 1, 4)).astype(bool)
    b = RNG.integers(0, 2, (5, 1)).astype(bool)
    model = model_of(op_type, {"a": a, "b": b}, np.bool_, opset=7)
    expected = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}[op_type](a, b)
    for level, result in lowered(model, [a, b]).items():
        assert same(result, expected), level


def test_not():
    a = RNG.integers(0, 2, (3, 4)).astype(bool)
    for level, result in lowered(model_of("Not", {"a": a}, np.bool_, opset=1), [a]).items():
        assert same(result, ~a), level


# -- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot, BitShift ------------------------------


@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint64], ids=name_of)
def test_bitwise_ops_broadcast(op_type, dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (3, 1, 4), dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, (5, 1), dtype=dtype, endpoint=True)
    model = model_of(op_type, {"a": a, "b": b}, dtype, opset=18)
    expected = reference(model, [a, b])
    results = lowered(model, [a, b]) if dtype == np.int32 else through_strato(model, [a, b])
    for level, result in results.items():
        assert same(result, expected), level


def test_bitwise_not():
    a = np.array([[0, 1, -1, 127], [-128, 5, 64, -7]], np.int8)
    for level, result in lowered(model_of("BitwiseNot", {"a": a}, np.int8, opset=18), [a]).items():
        assert same(result, ~a), level


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.int16, np.int64], ids=name_of)
def test_bit_shift_with_amounts_past_the_width(direction, dtype):
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    x = np.array([1, 5, 7, 3, 96, 1, 2, 9], dtype)
    if signed:
        x[3:6] = [-3, -96, -1]
    amounts = [0, 1, 2, bits - 1, bits, bits + 3, 3, 4]
    if signed:
        amounts[6:] = [-1, -5]
    y = np.array(amounts, dtype)
    model = model_of("BitShift", {"x": x, "y": y}, dtype, opset=28, direction=direction)
    expected = reference(model, [x, y])
    results = lowered(model, [x, y]) if dtype == np.int16 else through_strato(model, [x, y])
    for level, result in results.items():
        assert same(result, expected), level


def test_bitwise_ops_need_integer_inputs():
    a = np.ones(3, np.float32)
    model = model_of("BitwiseAnd", {"a": a, "b": a}, np.float32, opset=18)
    with pytest.raises(ModelImportError, match=r"\(BitwiseAnd\): input 0 has element type f32"):
        import_onnx(model)


def test_boolean_ops_need_bool_inputs():
    a = np.ones(3, np.float32)
    model = model_of("And", {"a": a, "b": a.astype(bool)}, np.bool_, opset=7)
    model.graph.node[0].input[1] = "a"
    del model.graph.input[1]
    message = r"\(And\): input 0 has element type f32, expected bool"
    with pytest.raises(ModelImportError, match=message):
        import_onnx(model)


VECTORIZED_BOOLS = """
func.func @k(%a: memref<2x8xf32>, %m: memref<8xi1>, %o: memref<2x8xi1> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 2 axis "i" {
    loop.for %j = 0 to 8 vectorized axis "j" {
      %x = memref.load %a[%i, %j] : memref<2x8xf32>
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf olt, %x, %z : f32
      %b = memref.load %m[%j] : memref<8xi1>
      %r = arith.xori %p, %b : i1
      memref.store %r, %o[%i, %j] : memref<2x8xi1>
    }
  }
  func.return
}
"""


def test_vectorized_loops_load_and_store_bools_a_byte_each():
    """A buffer holds one byte per bool; an LLVM `<8 x i1>` in memory is one bit each."""
    module = Parser(make_context(), VECTORIZED_BOOLS).parse_module()
    run_pipeline(make_context(), module, "convert-loops-to-llvm")
    a = RNG.standard_normal((2, 8)).astype(np.float32)
    m = RNG.integers(0, 2, 8).astype(bool)
    out = np.zeros((2, 8), bool)
    JitModule(module).function("k")(a, m, out)
    assert out.tolist() == ((a < 0) ^ m).tolist()


# -- IsNaN, IsInf -----------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan, 65504.0, 1e-40]


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.float64, ml_dtypes.bfloat16], ids=name_of
)
@pytest.mark.parametrize(
    "op_type, attributes",
    [
        ("IsNaN", {}),
        ("IsInf", {}),
        ("IsInf", {"detect_negative": 0}),
        ("IsInf", {"detect_positive": 0}),
        ("IsInf", {"detect_positive": 0, "detect_negative": 0}),
    ],
)
def test_float_classes(op_type, attributes, dtype):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL, dtype)
    model = model_of(op_type, {"x": x}, np.bool_, opset=20, **attributes)
    expected = reference(model, [x])
    results = lowered(model, [x]) if dtype == np.float32 else through_strato(model, [x])
    for level, result in results.items():
        assert same(result, expected), (level, result, expected)


@pytest.mark.parametrize("dtype", FLOAT8, ids=name_of)
def test_float_classes_of_narrow_floats(dtype):
    x = np.array([0.0, 1.5, np.nan, np.inf, -np.inf], np.float32).astype(dtype)
    for op_type in ("IsNaN", "IsInf"):
        model = model_of(op_type, {"x": x}, np.bool_, opset=20)
        for level, result in through_strato(model, [x]).items():
            assert same(result, reference(model, [x])), (op_type, level)


def test_attention_mask_pattern():
    """What torch's exporter writes for attention: Softmax -> IsNaN -> Where(0)."""
    scores = np.array([[1.0, -np.inf, 2.0], [-np.inf, -np.inf, -np.inf]], np.float32)
    nodes = [
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["bad"]),
        helper.make_node("Where", ["bad", "zero", "p"], ["y"]),
    ]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "attention",
            [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
            [numpy_helper.from_array(np.array(0.0, np.float32), "zero")],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"s": scores})
    with np.errstate(invalid="ignore"):
        for level, result in through_strato(model, [scores]).items():
            np.testing.assert_allclose(result, expected, rtol=1e-6, err_msg=level)
    assert expected[1].tolist() == [0.0, 0.0, 0.0]


# -- Where -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [np.float32, np.int64, np.uint8, np.float16, ml_dtypes.bfloat16], ids=name_of
)
def test_where_broadcasts_three_inputs(dtype):
    condition = RNG.integers(0, 2, (2, 1, 5)).astype(bool)
    x = sample(dtype, (3, 1))
    y = sample(dtype, (3, 5))
    expected = np.where(condition, x, y).astype(dtype)
    model = model_of("Where", {"c": condition, "x": x, "y": y}, dtype, opset=16)
    for level, result in through_strato(model, [condition, x, y]).items():
        assert same(result, expected), level


def test_where_with_a_constant_branch():
    condition = np.array([True, False, True])
    x = np.array([1, 2, 3], np.int64)
    model = model_of(
        "Where", {"c": condition, "x": x}, np.int64, {"z": np.array(-1, np.int64)}, opset=16
    )
    for result in through_strato(model, [condition, x]).values():
        assert result.tolist() == [1, -1, 3]


# -- Cast between the standard types ---------------------------------------------------


@pytest.mark.parametrize("source", STANDARD, ids=name_of)
def test_cast_from_every_standard_type(source):
    x = sample(source)
    if np.dtype(source).kind == "f" or source is ml_dtypes.bfloat16:
        x = np.clip(x.astype(np.float64), -100, 100).astype(source)  # in range of every integer
    for target in STANDARD:
        if np.dtype(target).kind == "u" and np.dtype(source).kind in "fiV":
            x_in = np.abs(x.astype(np.float64)).astype(source)  # negative to unsigned is undefined
        else:
            x_in = x
        model = model_of("Cast", {"x": x_in}, target, to=onnx_type(target))
        expected = reference(model, [x_in])
        results = through_strato(model, [x_in])
        for level, result in results.items():
            assert same(result, expected), (name_of(target), level, x_in, result, expected)


BITCASTS = [
    (np.float32, np.int32), (np.uint32, np.float32), (np.float16, np.int16),
    (np.uint16, np.float16), (ml_dtypes.bfloat16, np.int16), (np.uint16, ml_dtypes.bfloat16),
    (ml_dtypes.bfloat16, np.float16), (ml_dtypes.float8_e4m3fn, np.uint8),
    (np.int8, ml_dtypes.float8_e5m2), (np.bool_, np.uint8), (np.uint8, np.bool_),
    (np.float64, np.uint64), (np.int64, np.float64),
]  # fmt: skip


@pytest.mark.parametrize(("source", "target"), BITCASTS, ids=lambda t: name_of(t))
def test_bitcast_keeps_every_bit_pattern(source, target):
    """Random bytes (NaN payloads, subnormals, 8-bit float patterns included) read as
    `source` then `target`: the same bytes at every level (a bool is 0 or 1; any other
    byte read as a bool is true)."""
    raw = np.random.default_rng(0).integers(0, 256, 64 * np.dtype(source).itemsize, dtype=np.uint8)
    x = (raw % 2).astype(np.bool_) if source is np.bool_ else raw.view(source).reshape(8, -1)
    model = model_of("BitCast", {"x": x}, target, opset=26, to=onnx_type(target))
    expected = graph.bitcast_array(x, element_type_of(np.dtype(target)))
    for level, result in through_strato(model, [x]).items():
        assert result.dtype == expected.dtype, level
        if target is ml_dtypes.bfloat16 and level == "llvm":
            # compiled code holds a bf16 in an f32 and rounds it when stored, which
            # quiets a signaling NaN (sets the mantissa's top bit): still a NaN
            signaling = np.isnan(expected.astype(np.float32)) & (expected.view(np.uint16) & 0x40 == 0)
            assert np.all(np.isnan(result[signaling].astype(np.float32)))
            result, expected = result[~signaling], expected[~signaling]
        np.testing.assert_array_equal(result.view(np.uint8), expected.view(np.uint8), err_msg=level)
    if source is np.uint8 and target is np.bool_:
        assert expected.tolist() == (raw.reshape(8, -1) != 0).tolist()


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        (np.float32, np.float16, r"the input's f32 has 32 bits and f16 16: BitCast needs equal widths"),
        (ml_dtypes.int4, ml_dtypes.uint4, r"reinterpreting the bits of i4 is not supported"),
    ],
    ids=["widths", "sub-byte"],
)
def test_bitcast_of_other_widths_or_sub_byte_types_is_a_diagnostic(source, target, message):
    node = helper.make_node("BitCast", ["x"], ["y"], to=onnx_type(target))
    graph_ = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", onnx_type(source), [4])],
        [helper.make_tensor_value_info("y", onnx_type(target), [4])],
    )  # fmt: skip
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 26)])
    with pytest.raises(ModelImportError, match=rf"\(BitCast\): {message}"):
        import_onnx(model)


@pytest.mark.parametrize("target", [np.int8, np.uint8, np.int32, np.int64, np.uint64], ids=name_of)
def test_cast_of_nan_inf_and_out_of_range_floats_agrees_at_every_level(target):
    # ONNX leaves these undefined; strato defines them once (64-bit saturating truncation,
    # NaN to 0, then the low bits) and every level must compute the same thing
    x = np.array([np.nan, np.inf, -np.inf, -2.7, 3e9, -3e9, 1e20, -1e20], np.float32)
    model = model_of("Cast", {"x": x}, target, to=onnx_type(target))
    lowered = import_onnx(model).module
    run_pipeline(make_context(), lowered, "graph-default,convert-graph-to-te")
    results = {
        **through_strato(model, [x]),
        "te": run_te(lowered, [x])[0],
        "reference": cast_array(x, element_type_of(np.dtype(target))),
    }
    wide = np.array([0, 2**63 - 1, -(2**63), -2, 3_000_000_000, -3_000_000_000,
                     2**63 - 1, -(2**63)], dtype=np.int64)  # fmt: skip
    if target == np.uint64:
        wide = np.array([0, 2**64 - 1, 0, 0, 3_000_000_000, 0, 2**64 - 1, 0], np.uint64)
    expected = wide.astype(target)
    for level, result in results.items():
        assert result.dtype == np.dtype(target) and np.array_equal(result, expected), (
            level, result, expected,
        )  # fmt: skip


@pytest.mark.parametrize("target", SUB_BYTE, ids=name_of)
def test_cast_to_and_from_sub_byte_integers(target):
    x = np.arange(-9.0, 16.0, dtype=np.float32).reshape(5, 5)
    model = model_of("Cast", {"x": x}, target, to=onnx_type(target))
    # out-of-range values are undefined in ONNX (onnx 1.23's reference gives 0, earlier
    # releases wrapped around): in range, onnx's reference; out of it, strato's definition
    expected = cast_array(x, element_type_of(np.dtype(target)))
    assert same(
        np.where(in_range(x, target), expected, 0).astype(expected.dtype),
        np.where(in_range(x, target), reference(model, [x]), 0).astype(expected.dtype),
    )
    for level, result in through_strato(model, [x]).items():
        assert same(result, expected), level
    back = model_of("Cast", {"x": expected}, np.int8, to=TensorProto.INT8)
    for level, result in through_strato(back, [expected]).items():
        assert same(result, expected.astype(np.int8)), level


# -- Cast to and from the 8- and 4-bit float formats -----------------------------------

SPECIALS = np.array(
    [0.0, -0.0, np.nan, np.inf, -np.inf, 448, 464, 470, 480, 57344, 61440, 1e6, -1e6,
     240, 248, 6, 7, 0.25, 0.75, 2**-9, 2**-10, 3 * 2**-11, 2**-17, 2**-18, 1e-7, 65504,
     1e-40, 3e-39, 1.1754942e-38, 2**-133, 3 * 2**-134, 3.3895314e38, 3.4028235e38],
    dtype=np.float32,
)  # fmt: skip


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("target", [*FLOAT8, ml_dtypes.float4_e2m1fn], ids=name_of)
@pytest.mark.parametrize("source", [np.float32, np.float16, np.float64], ids=name_of)
def test_cast_to_narrow_floats_against_the_reference(source, target, saturate):
    with np.errstate(over="ignore"):  # 1e6 is inf in f16
        x = np.concatenate([SPECIALS, -SPECIALS, RNG.standard_normal(40) * 30]).astype(source)
    model = model_of("Cast", {"x": x}, target, to=onnx_type(target), saturate=saturate)
    expected = reference(model, [x])
    for level, result in through_strato(model, [x]).items():
        assert same(result, expected), level


@pytest.mark.parametrize("source", [np.float32, np.float64], ids=name_of)
def test_cast_to_bf16_rounds_to_nearest_even_with_subnormals(source):
    x = np.concatenate([SPECIALS, -SPECIALS, RNG.standard_normal(40) * 30]).astype(source)
    model = model_of("Cast", {"x": x}, ml_dtypes.bfloat16, to=TensorProto.BFLOAT16)
    for level, result in through_strato(model, [x]).items():
        assert same(result, x.astype(ml_dtypes.bfloat16)), level


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_e8m0_rounds_the_exponent(round_mode, saturate):
    x = np.concatenate(
        [[0.0, 1.0, 1.5, 0.75, 2.0**127, 3.0 * 2**126, 2.0**-127, 2.0**-149, np.nan, np.inf],
         RNG.exponential(10, 30)]
    ).astype(np.float32)  # fmt: skip
    model = model_of(
        "Cast", {"x": x}, ml_dtypes.float8_e8m0fnu, opset=24,
        to=TensorProto.FLOAT8E8M0, saturate=saturate, round_mode=round_mode,
    )  # fmt: skip
    expected = onnx.numpy_helper.to_float8e8m0(x, bool(saturate), round_mode)
    for level, result in through_strato(model, [x]).items():
        assert same(result, expected), level


@pytest.mark.parametrize("source", NARROW, ids=name_of)
def test_cast_from_narrow_floats_decodes_every_bit_pattern(source):
    count = 16 if source is ml_dtypes.float4_e2m1fn else 256
    x = np.arange(count, dtype=np.uint8).view(source)
    for target in (np.float32, np.float16, np.float64, ml_dtypes.bfloat16):
        model = model_of("Cast", {"x": x}, target, to=onnx_type(target))
        with np.errstate(over="ignore"):  # large powers of two are inf in f16
            expected = x.astype(np.float32).astype(target)
        for level, result in through_strato(model, [x]).items():
            assert same(result, expected), (name_of(target), level)


@functools.cache
def _modules(source, target, saturate, round_mode, size) -> ModuleOp:
    """A te-level module casting a 1-D tensor of `size` elements of `source` to `target`
    (cached: the hypothesis tests reuse it)."""
    in_type = TensorType(element_type_of(np.dtype(source)), [size])
    block = Block(arg_types=[in_type])
    op = graph.CastOp(
        block.args[0], element_type_of(np.dtype(target)), saturate=saturate, round_mode=round_mode
    )
    block.add_op(op)
    block.add_op(func.ReturnOp(op.result))
    module = ModuleOp([func.FuncOp("main", ([in_type], [op.result.type]), Region(block))])
    te_module = module.clone()
    run_pipeline(make_context(), te_module, "convert-graph-to-te")
    return te_module


def _lowered(source, target, saturate, round_mode, x):
    return run_te(_modules(source, target, saturate, round_mode, x.size), [x])[0]


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("target", [*FLOAT8, ml_dtypes.float4_e2m1fn], ids=name_of)
def test_every_float16_encodes_like_the_reference(target, saturate):
    # the te interpreter runs the same arith ops the LLVM code runs, on whole arrays
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    result = _lowered(np.float16, target, saturate, RoundMode.UP, x)
    assert same(result, cast_array(x, element_type_of(np.dtype(target)), saturate))


@given(st.lists(st.integers(0, (1 << 32) - 1), min_size=1, max_size=64), st.booleans())
def test_random_float32_bit_patterns_encode_like_the_reference(bits, saturate):
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    for target in [*FLOAT8, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu, ml_dtypes.bfloat16]:
        result = _lowered(np.float32, target, saturate, RoundMode.UP, x)
        assert same(result, cast_array(x, element_type_of(np.dtype(target)), saturate)), name_of(
            target
        )


@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=32))
def test_random_float64_bit_patterns_narrow_with_one_rounding(bits):
    x = np.array(bits, dtype=np.uint64).view(np.float64)
    for target in (np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e5m2):
        result = _lowered(np.float64, target, False, RoundMode.UP, x)
        with np.errstate(all="ignore"):
            expected = x.astype(target)
        assert same(result, expected), name_of(target)


@pytest.mark.parametrize("target", [*FLOAT8, ml_dtypes.float4_e2m1fn], ids=name_of)
def test_llvm_and_the_loop_level_agree_with_the_reference_on_float16s(target):
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    element = element_type_of(np.dtype(target))
    model = model_of("Cast", {"x": x}, target, to=onnx_type(target), saturate=0)
    assert same(strato.compile(model)(x)[0], cast_array(x, element, False))
    some = x[::257]  # the loop interpreter is slow: every 257th pattern
    module = _modules(np.float16, target, False, RoundMode.UP, some.size).clone()
    run_pipeline(make_context(), module, "convert-te-to-loops")
    loops = elements_from_storage(run_loops(module, [some])[0], element)
    assert same(loops, cast_array(some, element, False))


@pytest.mark.parametrize(
    "middle", [ml_dtypes.int4, ml_dtypes.uint2, ml_dtypes.bfloat16], ids=name_of
)
def test_chained_casts_in_one_kernel_see_the_stored_value(middle):
    # the two casts fuse into one kernel and the first stage is inlined into the second:
    # the first must give the value a store and a load would (wrapped, rounded)
    x = np.array([9.0, -9.0, 7.0, 1.00390625, -2.5, 100.0], np.float32)
    first = helper.make_node("Cast", ["x"], ["m"], to=onnx_type(middle))
    second = helper.make_node("Cast", ["m"], ["y"], to=TensorProto.FLOAT)
    model = helper.make_model(
        helper.make_graph(
            [first, second],
            "chain",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        ),
        opset_imports=[helper.make_opsetid("", 21)],
    )
    model.ir_version = 10
    got = strato.compile(model)(x)[0]
    # out of the middle type's range (ONNX leaves it undefined): strato wraps around
    wrapped = cast_array(cast_array(x, element_type_of(np.dtype(middle))), f32)
    assert same(got, wrapped)
    inside = in_range(x, middle)
    assert same(got[inside], reference(model, [x])[inside])


# -- CastLike, folding, identity -------------------------------------------------------


def test_cast_like_takes_the_type_of_its_second_input():
    x = sample(np.float32)
    like = np.zeros(0, np.float16)
    model = model_of("CastLike", {"x": x, "like": like}, np.float16, opset=21)
    for result in through_strato(model, [x, like]).values():
        assert same(result, x.astype(np.float16))


def test_known_inputs_fold_at_import():
    a = np.array([1, 2, 3], np.int64)
    node_equal = helper.make_node("Equal", ["a", "b"], ["m"])
    node_where = helper.make_node("Where", ["m", "a", "b"], ["w"])
    node_cast = helper.make_node("Cast", ["w"], ["c"], to=TensorProto.FLOAT)
    node_add = helper.make_node("Add", ["c", "x"], ["y"])
    model = helper.make_model(
        helper.make_graph(
            [node_equal, node_where, node_cast, node_add],
            "folded",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
            [
                numpy_helper.from_array(a, "a"),
                numpy_helper.from_array(np.array([1, 0, 3], np.int64), "b"),
            ],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    imported = import_onnx(model)
    names = [op.name for op in imported.function.body.block.ops]
    assert "graph.equal" not in names and "graph.where" not in names and "graph.cast" not in names
    x = np.zeros(3, np.float32)
    assert run_graph(imported.module, [x])[0].tolist() == [1.0, 0.0, 3.0]


def test_known_comparisons_and_logic_fold_at_import():
    a = np.array([1.0, np.nan, 3.0, np.inf], np.float32)
    b = np.array([2.0, 2.0, 2.0, 2.0], np.float32)
    nodes = [
        helper.make_node("Less", ["a", "b"], ["lt"]),
        helper.make_node("IsNaN", ["a"], ["nan"]),
        helper.make_node("IsInf", ["a"], ["inf"]),
        helper.make_node("Or", ["nan", "inf"], ["special"]),
        helper.make_node("Not", ["special"], ["finite"]),
        helper.make_node("Xor", ["lt", "finite"], ["m"]),
        helper.make_node("Where", ["m", "x", "b"], ["y"]),
    ]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "folded",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
            [numpy_helper.from_array(a, "a"), numpy_helper.from_array(b, "b")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    imported = import_onnx(model)
    names = [op.name for op in imported.function.body.block.ops]
    assert names == ["graph.constant", "graph.constant", "graph.where", "func.return"]
    x = np.full(4, -1.0, np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    assert run_graph(imported.module, [x])[0].tolist() == expected.tolist()


def test_a_cast_to_the_same_type_is_the_identity():
    x = sample(np.float32)
    imported = import_onnx(model_of("Cast", {"x": x}, np.float32, to=TensorProto.FLOAT))
    assert not any(isinstance(op, graph.CastOp) for op in imported.function.body.block.ops)


# -- diagnostics and verifier ----------------------------------------------------------


def test_cast_to_string_is_a_diagnostic():
    x = sample(np.float32)
    model = model_of("Cast", {"x": x}, np.float32, to=TensorProto.FLOAT)
    model.graph.node[0].attribute[0].i = TensorProto.STRING
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.STRING
    with pytest.raises(
        ModelImportError, match=r"node 'node' \(Cast\): casting to STRING is not supported"
    ):
        import_onnx(model)


def test_an_unknown_round_mode_is_a_diagnostic():
    x = sample(np.float32)
    model = model_of(
        "Cast",
        {"x": x},
        ml_dtypes.float8_e8m0fnu,
        opset=24,
        to=TensorProto.FLOAT8E8M0,
        round_mode="sideways",
    )
    with pytest.raises(ModelImportError, match="round_mode 'sideways'"):
        import_onnx(model)


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def verify_error(body: str, types: str) -> str:
    with pytest.raises(VerifyException) as info:
        parse(f"func.func @f({types}) {{\n{body}\nfunc.return\n}}")
    return str(info.value)


def test_verifier_errors():
    assert "compares tensors of one element type" in verify_error(
        "%r = graph.equal %a, %b : (tensor<2xi32>, tensor<2xi64>) -> tensor<2xi1>",
        "%a: tensor<2xi32>, %b: tensor<2xi64>",
    )
    assert "result must be a tensor of i1" in verify_error(
        "%r = graph.equal %a, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>",
        "%a: tensor<2xi32>",
    )
    assert "condition must be a tensor of i1" in verify_error(
        "%r = graph.where %a, %b, %b : (tensor<2xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
        "%a: tensor<2xi32>, %b: tensor<2xf32>",
    )
    assert "must have one element type" in verify_error(
        "%r = graph.where %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>",
        "%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf16>",
    )
    assert "do not broadcast" in verify_error(
        "%r = graph.where %c, %a, %a : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
        "%c: tensor<3xi1>, %a: tensor<2xf32>",
    )
    assert "does not match the inferred shape" in verify_error(
        "%r = graph.cast %a : tensor<2xf32> to tensor<3xf16>", "%a: tensor<2xf32>"
    )
    assert "round_mode 'sideways'" in verify_error(
        '%r = graph.cast %a {round_mode = "sideways"} : tensor<2xf32> to tensor<2xf8E8M0FNU>',
        "%a: tensor<2xf32>",
    )
    assert "does not support element type" in verify_error(
        "%r = graph.cast %a : tensor<2xf32> to tensor<2xi3>", "%a: tensor<2xf32>"
    )


def test_builders():
    block = Block(arg_types=[TensorType(i32, [2, 1]), TensorType(i32, [3]), TensorType(i32, [4])])
    equal = graph.EqualOp(block.args[0], block.args[1])
    assert equal.result.type == TensorType(i1, [2, 3])
    where = graph.WhereOp(equal, block.args[0], block.args[1])
    assert where.result.type == TensorType(i32, [2, 3])
    cast = graph.CastOp(where, f32, saturate=False, round_mode="nearest")
    assert cast.result.type == TensorType(f32, [2, 3])
    assert not cast.saturates and cast.rounding == RoundMode.NEAREST
    assert cast.round_mode == StringAttr("nearest")
    with pytest.raises(ValueError, match="do not broadcast"):
        graph.WhereOp(equal, block.args[0], block.args[2])


# -- ONNX's node tests -------------------------------------------------------------------

LOGIC_NODE_TESTS = (
    r"^test_(cast|castlike|equal|where|less|greater|and|or|xor|not|isnan|isinf)(_|$)"
)

@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_onnx_node_tests(mode: str):
    cases = select_node_tests(pattern=LOGIC_NODE_TESTS)
    assert len(cases) > 100
    failures = {}
    for case in cases:
        result = run_node_test(case, mode)
        if not result.passed:  # string cases too: the backend compiles strings as ids
            failures[case.name] = result.reason
    assert not failures, "\n".join(f"{name}: {why}" for name, why in failures.items())
