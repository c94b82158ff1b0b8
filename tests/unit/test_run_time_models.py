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
from strato.testing.dynamic_models import (
    attention,
    encoder_block,
    mlp,
    multi_head_attention,
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
    """An operator that does not take run-time dimensions (Concat) and a dynamic
    dimension that meets a static one, with `run_time_dims`, any model with
    `run_time_dims=False`, and by default one with a kernel that computes across its
    rows (attention's scores): compiled per size."""
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
            [numpy_helper.from_array(np.arange(4, dtype=np.float32), "table")],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    for proto, options in (
        (concatenated, {"run_time_dims": True}),
        (positions, {"run_time_dims": True}),
        (mlp(), {"run_time_dims": False}),
        (attention(), {}),
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
    done = run("compile", str(path), "--run-time-sizes", "-o", str(tmp_path / "encoder.o"))
    assert done.returncode == 0, done.stderr
    assert "taking batch, sequence after the buffers" in done.stdout
    assert "int64_t batch, int64_t sequence);" in (tmp_path / "encoder.h").read_text()
    onnx.save(helper.make_model(
        helper.make_graph(
            [helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], "concat",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    ), tmp_path / "concat.onnx")  # fmt: skip
    failed = run("compile", str(tmp_path / "concat.onnx"), "--run-time-sizes", "-o", str(saved))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "operators that need static sizes" in failed.stderr, failed.stderr
