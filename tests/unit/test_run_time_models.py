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
from strato.runtime.signature import InputMismatchError
from strato.specializing import ShapeSpecializingModel
from strato.targets.llvm.model import LLVMCompiledModel

RNG = np.random.default_rng(0)


def _initializers(**arrays: np.ndarray) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.asarray(a), name) for name, a in arrays.items()]


def mlp(batch: str | None = "batch") -> onnx.ModelProto:
    """softmax(relu(x @ w1 + b1) @ w2^T + b2), x [batch, 16]."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["p"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [batch, 10])],
        _initializers(
            w1=RNG.standard_normal((16, 32)).astype(np.float32),
            b1=RNG.standard_normal(32).astype(np.float32),
            w2=RNG.standard_normal((10, 32)).astype(np.float32),
            b2=RNG.standard_normal(10).astype(np.float32),
        ),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def encoder_block() -> onnx.ModelProto:
    """A transformer's feed-forward half on x [batch, sequence, 32] and a residual r of
    the same sizes: layer norm, dense + GELU, dense, the residual sum, and the sum
    centred on its mean."""
    d, f = 32, 64
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Gelu", ["hb"], ["gl"]),
        helper.make_node("MatMul", ["gl", "w2"], ["o"]),
        helper.make_node("Add", ["o", "r"], ["y"]),
        helper.make_node("ReduceMean", ["y", "axes"], ["m"], keepdims=1),
        helper.make_node("Sub", ["y", "m"], ["z"]),
    ]
    dims = ["batch", "sequence", d]
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, dims),
        ],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, dims)],
        _initializers(
            g=RNG.standard_normal(d).astype(np.float32),
            b=RNG.standard_normal(d).astype(np.float32),
            w1=(RNG.standard_normal((d, f)) * 0.2).astype(np.float32),
            b1=RNG.standard_normal(f).astype(np.float32),
            w2=(RNG.standard_normal((f, d)) * 0.2).astype(np.float32),
            axes=np.array([2], np.int64),
        ),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def attention() -> onnx.ModelProto:
    """Single-head self-attention on x [batch, sequence, 16]: softmax(q k^T / 4) v, a
    softmax over the run-time sequence and a product contracting it."""
    d = 16
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["weights"], axis=-1),
        helper.make_node("MatMul", ["weights", "v"], ["y"]),
    ]
    dims = ["batch", "sequence", d]
    graph = helper.make_graph(
        nodes,
        "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
        _initializers(
            wq=(RNG.standard_normal((d, d)) * 0.3).astype(np.float32),
            wk=(RNG.standard_normal((d, d)) * 0.3).astype(np.float32),
            wv=(RNG.standard_normal((d, d)) * 0.3).astype(np.float32),
            scale=np.array(4.0, np.float32),
        ),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reference(proto: onnx.ModelProto, *arrays: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, arrays, strict=True)))


def test_a_dynamic_batch_compiles_once_and_runs_at_every_size():
    proto = mlp()
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel)
    (x_spec,), (p_spec,) = model.inputs, model.outputs
    assert str(x_spec) == "'x' float32[batch, 16]" and str(p_spec) == "'p' float32[batch, 10]"
    assert model.signature.sizes == ("batch",)
    for batch in (1, 7, 0, 300):
        x = RNG.standard_normal((batch, 16)).astype(np.float32)
        (p,) = model(x)
        assert p.shape == (batch, 10)
        np.testing.assert_allclose(p, reference(proto, x)[0], rtol=1e-5, atol=1e-6)


def test_batch_and_sequence_of_two_inputs_are_one_size_each():
    proto = encoder_block()
    model = strato.compile(proto, cache=False)
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
    model = strato.compile(proto, cache=False)
    assert isinstance(model, LLVMCompiledModel) and model.signature.sizes == ("batch", "sequence")
    for batch, sequence in ((1, 1), (2, 7), (1, 64), (2, 0)):
        x = RNG.standard_normal((batch, sequence, 16)).astype(np.float32)
        (y,) = model(x)
        np.testing.assert_allclose(y, reference(proto, x)[0], rtol=1e-4, atol=1e-5)


def test_the_saved_model_and_the_c_header_take_the_sizes(tmp_path):
    model = strato.compile(encoder_block(), cache=False, name="encoder")
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
    first = strato.compile(proto)
    wait_for_writes()
    cached = strato.compile(proto)
    assert cached.origin is not None and cached.inputs == first.inputs
    x = RNG.standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_array_equal(cached(x)[0], first(x)[0])


def test_models_that_do_not_compile_once_compile_per_size():
    """An operator that does not take run-time dimensions (Concat), a dynamic
    dimension that meets a static one, and `run_time_dims=False`: compiled per size,
    as before."""
    concatenated = mlp()
    concatenated.graph.node.append(helper.make_node("Concat", ["p", "p"], ["t"], axis=1))
    concatenated.graph.output[0].CopyFrom(
        helper.make_tensor_value_info("t", TensorProto.FLOAT, None)
    )
    positions = helper.make_model(
        helper.make_graph(
            [helper.make_node("Add", ["x", "table"], ["y"])],
            "positions",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence"])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            _initializers(table=np.arange(4, dtype=np.float32)),
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    for proto, options in ((concatenated, {}), (positions, {}), (mlp(), {"run_time_dims": False})):
        model = strato.compile(proto, cache=False, **options)
        assert isinstance(model, ShapeSpecializingModel), proto.graph.name
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(strato.compile(positions, cache=False)(x)[0], x + np.arange(4))
