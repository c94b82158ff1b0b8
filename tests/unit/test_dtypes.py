"""Element types beyond f32 at every level: the dtype table of `tensor_types`, stage-body
scalars and buffer storage types, the te and loop interpreters, convert-te-to-loops
(decoding after loads, encoding before stores), the LLVM target (uitofp from i64,
math.ipowi) and the runtime (dtypes kept for the user, buffers passed bit for bit),
and the importer (every numeric ONNX type in and out, int64 token ids)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i16,
    i64,
)
from xdsl.ir import Attribute, Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import strato
from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.tensor_types import (
    array_from_dense,
    dense_from_array,
    element_type_of,
    elements_from_scalars,
    elements_from_storage,
    numpy_dtype,
    reinterpret_array,
    scalar_type,
    scalars_from_elements,
    shares_storage,
    storage_from_elements,
    storage_type,
    stores_exactly,
)
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.runtime.signature import Signature, TensorSpec
from strato.targets.llvm.build import build_llvm
from strato.transforms.convert_te_to_loops import lower_te_to_loops

RNG = np.random.default_rng(0)

UI8 = IntegerType(8, Signedness.UNSIGNED)

# (numpy dtype, element type, stage-body scalar type, buffer storage type)
TABLE: list[tuple[np.dtype, Attribute, Attribute, Attribute]] = [
    (np.dtype(np.bool_), i1, i1, i1),
    (np.dtype(np.int8), i8, i8, i8),
    (np.dtype(np.int64), i64, i64, i64),
    (np.dtype(np.uint8), UI8, i8, i8),
    (np.dtype(np.uint64), IntegerType(64, Signedness.UNSIGNED), i64, i64),
    (np.dtype(ml_dtypes.int4), IntegerType(4), i8, i8),
    (np.dtype(ml_dtypes.uint2), IntegerType(2, Signedness.UNSIGNED), i8, i8),
    (np.dtype(np.float16), f16, f16, f16),
    (np.dtype(np.float32), f32, f32, f32),
    (np.dtype(ml_dtypes.bfloat16), BFloat16Type(), f32, i16),
    (np.dtype(ml_dtypes.float8_e4m3fn), Float8E4M3FNType(), i8, i8),
]

ALL_DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2,
    np.float16, ml_dtypes.bfloat16, np.float32, np.float64, ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz,
    ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn,
]  # fmt: skip


def sample(dtype, shape=(3, 5)) -> np.ndarray:
    """Values spread over the range of `dtype` (every bit pattern of the small types)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.itemsize == 1 and dtype != np.bool_:
        bits = RNG.integers(0, 256, count).astype(np.uint8)
        if dtype.name in ("int4", "uint4", "float4_e2m1fn"):
            bits &= 0xF
        elif dtype.name in ("int2", "uint2"):
            bits &= 0x3
        return bits.view(dtype).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return (RNG.standard_normal(shape) * 100).astype(dtype)


def same(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Equal dtype, shape and bytes (NaNs of the same pattern compare equal)."""
    return (
        actual.dtype == expected.dtype
        and actual.shape == expected.shape
        and np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()
    )


def module_of(make_op, arrays: list[np.ndarray]) -> ModuleOp:
    """A graph-level module @main applying `make_op` to arguments of the arrays' types."""
    types = [TensorType(element_type_of(a.dtype), a.shape) for a in arrays]
    block = Block(arg_types=types)
    op = make_op(*block.args)
    block.add_op(op)
    block.add_op(func.ReturnOp(op.results[0]))
    function = func.FuncOp("main", (types, [op.results[0].type]), Region(block))
    module = ModuleOp([function])
    module.verify()
    return module


def every_level(make_op, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The op's result at the graph, te and loop levels and from the LLVM JIT, each as
    an array of the graph dtype."""
    module = module_of(make_op, arrays)
    function = next(iter(module.ops))
    assert isinstance(function, func.FuncOp)
    result_type = function.function_type.outputs.data[0]
    results = {"graph": run_graph(module, arrays)[0]}
    lowered = module.clone()
    run_pipeline(make_context(), lowered, "convert-graph-to-te")
    results["te"] = run_te(lowered, arrays)[0]
    run_pipeline(make_context(), lowered, "convert-te-to-loops")
    results["loops"] = elements_from_storage(run_loops(lowered, arrays)[0], result_type)
    run_pipeline(make_context(), lowered, "convert-loops-to-llvm")
    compiled = build_llvm(lowered, "main", Signature.from_function(function))
    results["llvm"] = compiled(*arrays)[0]
    return results


# -- the dtype table ----------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "element", "scalar", "storage"), TABLE)
def test_element_scalar_and_storage_types(dtype, element, scalar, storage):
    assert numpy_dtype(element) == dtype
    assert element_type_of(dtype) == element
    assert scalar_type(element) == scalar
    assert storage_type(element) == storage


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_round_trips_through_types_attributes_scalars_and_storage(dtype):
    array = sample(dtype)
    element = element_type_of(array.dtype)
    assert numpy_dtype(element) == array.dtype
    assert same(array_from_dense(dense_from_array(array)), array)
    scalars = scalars_from_elements(array, element)
    assert scalars.dtype == numpy_dtype(scalar_type(element))
    assert same(elements_from_scalars(scalars, element), array)
    stored = storage_from_elements(array, element)
    assert stored.dtype == numpy_dtype(storage_type(element))
    assert same(elements_from_storage(stored, element), array)


def test_an_array_viewing_a_whole_bytes_object_lends_its_bytes_to_the_attribute():
    data = np.arange(24, dtype=np.float32).tobytes()
    whole = np.frombuffer(data, np.float32).reshape(2, 3, 4)  # what onnx's to_array gives
    assert dense_from_array(whole).data.data is data
    assert same(array_from_dense(dense_from_array(whole)), whole)
    # views of part of the bytes, out of order, or of another type are copied
    for view in (whole[1], whole[:, :, ::-1], whole.transpose(2, 0, 1)):
        attr = dense_from_array(view)
        assert attr.data.data is not data
        assert same(array_from_dense(attr), view)
    tail = np.frombuffer(data, np.float32, count=20, offset=16)
    assert dense_from_array(tail).data.data == data[16:]
    assert dense_from_array(whole, element_type_of(np.dtype(np.float64))).data.data is not data


def test_views_become_attributes_in_c_order_and_attributes_lend_read_only_views():
    array = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    for view in (array.transpose(2, 0, 1), array[:, ::2], np.float32(5.0) * np.ones(())):
        attr = dense_from_array(view)
        assert attr.data.data == np.ascontiguousarray(view).tobytes()
        assert same(array_from_dense(attr), view)
    attr = dense_from_array(array)
    lent = array_from_dense(attr, copy=False)
    assert same(lent, array) and not lent.flags.writeable
    assert array_from_dense(attr).flags.writeable


def test_signed_integers_are_signless_and_si_types_hold_the_same():
    assert element_type_of(np.dtype(np.int32)) == IntegerType(32)
    assert numpy_dtype(IntegerType(32, Signedness.SIGNED)) == np.dtype(np.int32)


def test_scalars_of_small_types():
    int4 = np.array([-8, -1, 7], dtype=ml_dtypes.int4)
    assert scalars_from_elements(int4, IntegerType(4)).tolist() == [-8, -1, 7]
    uint8 = np.array([0, 200, 255], dtype=np.uint8)
    assert scalars_from_elements(uint8, UI8).tolist() == [0, -56, -1]
    # integers keep their low bits; bf16 rounds to nearest even
    wrapped = elements_from_scalars(np.array([9, -9], np.int8), IntegerType(4))
    assert wrapped.astype(np.int8).tolist() == [-7, 7]
    rounded = elements_from_scalars(
        np.array([1 + 2**-8, 1 + 3 * 2**-8], np.float32), BFloat16Type()
    )
    assert rounded.astype(np.float32).tolist() == [1.0, 1 + 2**-6]


def test_stores_exactly():
    assert stores_exactly(UI8) and stores_exactly(f16) and stores_exactly(Float8E4M3FNType())
    assert not stores_exactly(BFloat16Type()) and not stores_exactly(IntegerType(4))


def test_shares_storage_and_reinterpret():
    assert shares_storage(np.uint8, np.int8) and shares_storage(ml_dtypes.bfloat16, np.int16)
    assert shares_storage(ml_dtypes.float8_e5m2, np.int8)
    assert not shares_storage(np.float32, np.int32) and not shares_storage(np.int16, np.int8)
    bits = reinterpret_array(np.array([1.0], ml_dtypes.bfloat16), np.int16)
    assert bits.tolist() == [0x3F80]
    assert reinterpret_array(np.array(3.5, np.float32), np.int32).tolist() == 3  # a value cast


# -- te and loop levels -------------------------------------------------------------------

TE_UNSIGNED = """
te.primitive @p {
  %a = te.placeholder "a" : tensor<4xui8>
  %r = te.compute "half" (%i) : tensor<4xui8> {
    %v = te.read %a[%i] : tensor<4xui8>
    %two = arith.constant 2 : i8
    %h = arith.divui %v, %two : i8
    te.yield %h : i8
  }
  te.output %r : tensor<4xui8>
}
func.func @main(%x: tensor<4xui8>) -> tensor<4xui8> {
  %y = te.call @p(%x) : (tensor<4xui8>) -> tensor<4xui8>
  func.return %y : tensor<4xui8>
}
"""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def test_te_read_of_unsigned_tensor_is_signless_and_lowers_to_a_signless_buffer():
    module = parse(TE_UNSIGNED)
    x = np.array([0, 1, 200, 255], np.uint8)
    expected = x // 2
    assert same(run_te(module, [x])[0], expected)
    lower_te_to_loops(module)
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    assert all(t == MemRefType(i8, [4]) for t in kernel.function_type.inputs.data)
    assert same(run_loops(module, [x])[0].view(np.uint8), expected)


TE_BF16 = """
te.primitive @p {
  %a = te.placeholder "a" : tensor<4xbf16>
  %r = te.compute "twice" (%i) : tensor<4xbf16> {
    %v = te.read %a[%i] : tensor<4xbf16>
    %t = arith.addf %v, %v : f32
    te.yield %t : f32
  }
  te.output %r : tensor<4xbf16>
}
"""


def test_te_stages_yield_the_scalar_type():
    parse(TE_BF16)  # a bf16 element is an f32 inside the stage
    wrong = TE_BF16.replace("%t = arith.addf %v, %v : f32", "%t = arith.extf %v : f32 to f64")
    wrong = wrong.replace("te.yield %t : f32", "te.yield %t : f64")
    with pytest.raises(
        VerifyException, match=r"yields f64 but its tensor holds bf16 \(yielded as f32\)"
    ):
        parse(wrong)


def test_bf16_and_int4_buffers_are_decoded_after_loads_and_encoded_before_stores():
    x = np.array([1.0, 1 + 2**-7, -3.5, 1e30], ml_dtypes.bfloat16)
    cond = np.array([True, False, True, False])
    module = module_of(lambda c, a, b: graph.WhereOp(c, a, b), [cond, x, x])
    run_pipeline(make_context(), module, "convert-graph-to-te,convert-te-to-loops")
    text = str(module)
    assert "memref<4xi16>" in text and "arith.shli" in text and "arith.bitcast" in text
    assert "bf16" not in text


# -- every level, every dtype ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_where_moves_every_dtype_bit_for_bit_through_every_level(dtype):
    cond = RNG.integers(0, 2, (3, 5)).astype(bool)
    a, b = sample(dtype), sample(dtype, (5,))
    expected = np.where(cond, a, b).astype(dtype)
    for level, result in every_level(lambda c, x, y: graph.WhereOp(c, x, y), [cond, a, b]).items():
        assert same(result, expected), level


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_unsigned_comparison_and_division_at_every_level(dtype):
    info = np.iinfo(dtype)
    a = np.array([0, 1, info.max, info.max // 2 + 1, 7], dtype)
    b = np.array([1, info.max, 2, 3, info.max // 2 + 2], dtype)
    for result in every_level(lambda x, y: graph.EqualOp(x, y), [a, a]).values():
        assert result.all()
    for level, result in every_level(graph.MaximumOp, [a, b]).items():
        assert same(result, np.maximum(a, b)), level
    for level, result in every_level(graph.DivOp, [a, b]).items():
        assert same(result, a // b), level


def test_bf16_arithmetic_is_computed_in_f32_and_rounded_when_stored():
    a = np.array([1.0, 3.0, 1e-3, 250.0], ml_dtypes.bfloat16)
    b = np.array([2**-8, 2**-7, 1.0, 7.0], ml_dtypes.bfloat16)
    expected = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    for level, result in every_level(lambda x, y: graph.AddOp(x, y), [a, b]).items():
        assert same(result, expected), level


def test_uint64_to_float_rounds_once():
    x = np.array([2**64 - 1, 2**63, 2**63 + 1, 2**63 + 2**40 + 1, 2**53 + 1, 0, 1], np.uint64)
    for dtype in (np.float32, np.float64):
        target = element_type_of(np.dtype(dtype))
        results = every_level(lambda v, to=target: graph.CastOp(v, to), [x])
        assert same(results["llvm"], x.astype(dtype))


def test_integer_power_wraps_like_repeated_multiplication():
    power = graph.PowOp
    base = np.array([2, -3, 1, -1, 0, 7, 2, 5], np.int64)
    exponent = np.array([10, 3, 100, 7, 5, 0, 63, 30], np.int64)
    expected = np.power(base, exponent)
    results = every_level(lambda x, y: power(x, y), [base, exponent])
    assert same(results["llvm"], expected)
    small = every_level(
        lambda x, y: power(x, y), [base.astype(np.int8), exponent.astype(np.int8) % 8]
    )
    assert same(small["llvm"], np.power(base.astype(np.int8), exponent.astype(np.int8) % 8))


# -- import and runtime ---------------------------------------------------------------------


def one_node_model(
    op_type: str, inputs: dict[str, np.ndarray], output_dtype, **attrs
) -> onnx.ModelProto:
    node = helper.make_node(op_type, list(inputs), ["y"], **attrs)
    values = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for name, a in inputs.items()
    ]
    out = helper.make_tensor_value_info(
        "y", helper.np_dtype_to_tensor_dtype(np.dtype(output_dtype)), None
    )
    model = helper.make_model(
        helper.make_graph([node], "g", values, [out]), opset_imports=[helper.make_opsetid("", 21)]
    )
    model.ir_version = 10
    inferred = onnx.shape_inference.infer_shapes(model)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model


def test_compiled_model_keeps_the_user_dtypes():
    a = np.array([[1, 200], [255, 0]], np.uint8)
    b = np.array([[255, 100], [1, 0]], np.uint8)
    model = one_node_model("Add", {"a": a, "b": b}, np.uint8)
    compiled = strato.compile(model)
    assert [spec.dtype for spec in compiled.inputs] == [np.dtype(np.uint8)] * 2
    (y,) = compiled(a, b)
    assert same(y, a + b)
    with pytest.raises(ValueError, match="uint8"):
        compiled(a.astype(np.int8), b)


def test_a_wrong_dtype_names_the_conversion():
    spec = TensorSpec("x", (2,), np.dtype(ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match=r"\.astype\(ml_dtypes\.bfloat16\)"):
        Signature((spec,), ()).check_inputs([np.zeros(2, np.float32)])


def test_import_of_every_numeric_type_and_rejection_of_strings():
    for dtype in ALL_DTYPES:
        x = sample(dtype)
        imported = import_onnx(one_node_model("Identity", {"x": x}, dtype))
        assert imported.function.function_type.inputs.data[0] == TensorType(
            element_type_of(np.dtype(dtype)), x.shape
        )
        assert same(run_graph(imported.module, [x])[0], x)
    strings = np.array(["a", "b"], dtype=object)
    node = helper.make_node("Identity", ["x"], ["y"])
    model = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.STRING, strings.shape)],
            [helper.make_tensor_value_info("y", TensorProto.STRING, strings.shape)],
        )
    )
    with pytest.raises(StratoError, match="STRING"):
        import_onnx(model)


def test_initializers_of_small_types_become_constants_of_their_type():
    weights = np.array([-8, -1, 0, 7], ml_dtypes.int4)
    node = helper.make_node("Cast", ["w"], ["y"], to=TensorProto.INT8)
    add = helper.make_node("Add", ["y", "x"], ["z"])
    model = helper.make_model(
        helper.make_graph(
            [node, add],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.INT8, [4])],
            [helper.make_tensor_value_info("z", TensorProto.INT8, [4])],
            [numpy_helper.from_array(weights, "w")],
        ),
        opset_imports=[helper.make_opsetid("", 21)],
    )
    model.ir_version = 10
    x = np.array([1, 1, 1, 1], np.int8)
    (z,) = strato.compile(model)(x)
    assert z.tolist() == [-7, 0, 1, 8]


def test_int64_token_ids_flow_into_an_embedding():
    table = RNG.standard_normal((10, 3)).astype(np.float32)
    tokens = np.array([[1, 9], [0, 4]], np.int64)
    node = helper.make_node("Gather", ["table", "tokens"], ["y"])
    model = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("tokens", TensorProto.INT64, tokens.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 3])],
            [numpy_helper.from_array(table, "table")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    compiled = strato.compile(model)
    assert compiled.inputs[0].dtype == np.dtype(np.int64)
    (y,) = compiled(tokens)
    np.testing.assert_array_equal(y, table[tokens])


def test_verifier_rejects_an_unknown_element_type_in_a_cast():
    with pytest.raises(VerifyException):
        module_of(lambda x: graph.CastOp(x, IntegerType(3)), [np.zeros(2, np.float32)])


def test_loading_the_dialects_leaves_ml_dtypes_unimported():
    """ml_dtypes takes most of a second to import: strato-opt's start (every dialect
    loaded) does without it until a bf16, sub-byte or 8-bit float type needs it."""
    import subprocess
    import sys

    code = (
        "import sys; import strato.tools.strato_opt, strato.context; strato.context.make_context(); "
        "from strato.dialects.tensor_types import numpy_dtype; from xdsl.dialects.builtin import f32, BFloat16Type; "
        "numpy_dtype(f32); assert 'ml_dtypes' not in sys.modules; "
        "print(numpy_dtype(BFloat16Type()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "bfloat16"
