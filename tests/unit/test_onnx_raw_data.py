"""The weights' bytes, read once per compilation by the cache key and the importer."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from strato.compiler import compile_cache_key, resolve_target
from strato.dialects.graph import ConstantOp
from strato.frontends.onnx import import_onnx, raw_data


def _weights(dtype, shape=(4, 8), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 20).astype(dtype)


def _model(weight: np.ndarray) -> onnx.ModelProto:
    tensor = numpy_helper.from_array(weight, "w")
    x = helper.make_tensor_value_info("x", tensor.data_type, list(weight.shape))
    y = helper.make_tensor_value_info("y", tensor.data_type, list(weight.shape))
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [tensor])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_within_a_block_every_reader_gets_the_same_bytes():
    tensor = numpy_helper.from_array(_weights(np.float32), "w")
    assert raw_data.raw_data(tensor) is not raw_data.raw_data(tensor)  # copies outside
    with raw_data.sharing():
        first = raw_data.raw_data(tensor)
        assert raw_data.raw_data(tensor) is first
        assert raw_data.to_array(tensor).base.base is first  # a reshaped view of it
        raw_data.release()
        assert raw_data.raw_data(tensor) is not first
        assert raw_data.raw_data(tensor) == first


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]
)
def test_arrays_are_what_onnx_reads(dtype):
    tensor = numpy_helper.from_array(_weights(dtype), "w")
    with raw_data.sharing():
        got = raw_data.to_array(tensor)
    want = numpy_helper.to_array(tensor)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_packed_typed_and_string_tensors_are_read_by_onnx():
    int4 = helper.make_tensor("q", onnx.TensorProto.INT4, [5], [1, -2, 3, -4, 5])
    typed = helper.make_tensor("t", onnx.TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    text = helper.make_tensor("s", onnx.TensorProto.STRING, [2], [b"a", b"bc"])
    with raw_data.sharing():
        for tensor in (int4, typed, text):
            np.testing.assert_array_equal(raw_data.to_array(tensor), numpy_helper.to_array(tensor))


def test_the_cache_key_and_the_importer_share_a_models_weights():
    weight = _weights(np.float32, (64, 64))
    model = _model(weight)
    target = resolve_target("llvm")
    key = compile_cache_key(model, target, None)
    with raw_data.sharing():
        assert compile_cache_key(model, target, None) == key  # the same key as a plain read
        imported = import_onnx(model)
        shared = raw_data.raw_data(model.graph.initializer[0])
    constants = [op for op in imported.module.walk() if isinstance(op, ConstantOp)]
    assert [op.value.data.data for op in constants] == [weight.tobytes()]
    assert constants[0].value.data.data is shared
    changed = _model(weight + 1)
    assert compile_cache_key(changed, target, None) != key
