"""Models with dynamic input dimensions: `strato.compile` returns a model compiled per
call's sizes, which checks each call against the declared dimensions (for a model it
would compile once for every size, with `run_time_dims=False`)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import StratoError, SymbolicShapeError
from strato.runtime.signature import InputMismatchError
from strato.specializing import MAX_SIZES, InputDims, ShapeSpecializingModel

W = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)


def dynamic_model(x_dims=("batch", "seq", 8), m_dims=("batch", "seq", 1)) -> onnx.ModelProto:
    """y = softmax(x @ W + m) over the last axis: x [batch, seq, 8], m [batch, seq, 1]."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "m"], ["s"]),
        helper.make_node("Softmax", ["s"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_dims)),
            helper.make_tensor_value_info("m", TensorProto.FLOAT, list(m_dims)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def expected(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    s = x @ W + m
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def model() -> ShapeSpecializingModel:
    compiled = strato.compile(dynamic_model(), cache=False, run_time_dims=False)
    assert isinstance(compiled, ShapeSpecializingModel)
    return compiled


@settings(max_examples=6, deadline=None)
@given(batch=st.integers(1, 3), seq=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_every_size_runs_and_matches(model, batch: int, seq: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
    m = rng.standard_normal((batch, seq, 1)).astype(np.float32)
    (y,) = model(x, m)
    assert y.shape == (batch, seq, 4)
    np.testing.assert_allclose(y, expected(x, m), rtol=1e-5, atol=1e-6)
    assert {"x": (batch, seq, 8), "m": (batch, seq, 1)} in model.sizes


def test_a_size_compiles_once_and_the_oldest_sizes_go():
    calls: list[dict] = []
    dims = InputDims({"x": ("n",)})

    def compile_for(shapes):
        calls.append(shapes)
        return lambda x: [x * 2]

    model = ShapeSpecializingModel(dims, ["x"], ["y"], compile_for)
    for n in [1, 2, 1, *range(3, 3 + MAX_SIZES)]:
        model(np.ones(n, np.float32))
    assert calls[:3] == [{"x": (1,)}, {"x": (2,)}, {"x": (3,)}]  # 1 again: no compile
    assert len(model.sizes) == MAX_SIZES and {"x": (1,)} not in model.sizes


def test_small_sizes_are_kept_beyond_max_sizes(monkeypatch):
    """Sizes whose weights and code are small stay (a loop whose state grows visits one
    per iteration) until they take KEPT_BYTES; then the least recently used go."""
    import types

    import strato.specializing

    def compiled_of(nbytes: int):
        code = types.SimpleNamespace(object_code=b"\0" * nbytes, objects=())
        return types.SimpleNamespace(machine_code=code, weights=np.zeros(0, np.uint8))

    dims = InputDims({"x": ("n",)})
    model = ShapeSpecializingModel(dims, ["x"], ["y"], lambda shapes: compiled_of(1000))
    for n in range(1, 3 * MAX_SIZES + 1):
        model.specialized({"x": (n,)})
    assert len(model.sizes) == 3 * MAX_SIZES
    monkeypatch.setattr(strato.specializing, "KEPT_BYTES", 1000 * (MAX_SIZES + 2))
    model.specialized({"x": (1000,)})
    assert len(model.sizes) == MAX_SIZES + 2 and model.sizes[-1] == {"x": (1000,)}


@pytest.mark.parametrize(
    ("x_shape", "m_shape", "message"),
    [
        ((2, 3, 8), (2, 4, 1), r"input 'm': dimension 'seq' \(axis 1\) is 4, but 3 in input 'x'"),
        ((2, 3, 9), (2, 3, 1), r"input 'x': axis 2 is 9, the model fixes it at 8 \(\[batch, seq, 8\]\)"),
        ((3, 8), (2, 3, 1), r"input 'x': shape \[3, 8\] has rank 2, the model's is 3"),
    ],
)
def test_a_call_that_breaks_the_dimensions_names_input_and_axis(model, x_shape, m_shape, message):
    with pytest.raises(InputMismatchError, match=message):
        model(np.ones(x_shape, np.float32), np.ones(m_shape, np.float32))


def test_a_size_the_model_cannot_take_is_named_in_the_error():
    """x [batch, seq] + a table of 4 positions: seq 4 (or 1) imports, seq 5 does not,
    and the error says at which sizes, as a model whose position table is shorter than
    the call's sequence (GPT-2's 512 positions at 600) does."""
    table = numpy_helper.from_array(np.arange(4, dtype=np.float32), "positions")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "positions"], ["y"])],
        "positions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [table],
    )
    model = strato.compile(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), cache=False, run_time_dims=False)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(model(x)[0], x + np.arange(4))
    with pytest.raises(StratoError, match=r"\(at 'batch' = 2, 'seq' = 5\)$") as raised:
        model(np.ones((2, 5), np.float32))
    assert str(raised.value).count("(at ") == 1

    dims = InputDims({"x": ("n", None), "s": None})
    shapes = {"x": (3, 7), "s": (2, 2)}
    assert dims.describe_sizes(shapes) == "'n' = 3, 'x' axis 1 = 7, 's' of shape [2, 2]"


def test_unnamed_dynamic_dimensions_and_shapeless_inputs_take_any_size():
    unnamed = dynamic_model(x_dims=(None, None, 8), m_dims=(None, None, 1))
    for value in unnamed.graph.input:
        for dim in value.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.ClearField("dim_param")
    dims = InputDims.of(unnamed)
    assert dims is not None and dims.shapes == {"x": (None, None, 8), "m": (None, None, 1)}
    compiled = strato.compile(unnamed, cache=False, run_time_dims=False)
    x, m = np.ones((1, 2, 8), np.float32), np.zeros((1, 2, 1), np.float32)
    np.testing.assert_allclose(compiled(x, m)[0], expected(x, m), rtol=1e-5)


def test_input_shapes_pin_some_dimensions_and_specialize_false_refuses():
    assert InputDims.of(dynamic_model(), {"x": (1, 2, 8), "m": (1, 2, 1)}) is None
    static = strato.compile(dynamic_model(), input_shapes={"x": (1, 2, 8), "m": (1, 2, 1)}, cache=False, run_time_dims=False)
    assert not isinstance(static, ShapeSpecializingModel)
    with pytest.raises(SymbolicShapeError, match=r"graph input 'x' has a dynamic dimension 'batch' at axis 0"):
        strato.compile(dynamic_model(), specialize=False, cache=False, run_time_dims=False)


def test_a_model_compiled_per_size_saves_and_loads_with_its_sizes(tmp_path, monkeypatch):
    """The archive holds the ONNX model and each size compiled: loaded, those sizes run
    without compiling, and another size compiles as before; all match."""
    import strato.compiler

    model = strato.compile(dynamic_model(), cache=False, run_time_dims=False)
    rng = np.random.default_rng(3)
    sizes = [(1, 3), (2, 5)]
    arrays = {s: (rng.standard_normal((*s, 8)).astype(np.float32), rng.standard_normal((*s, 1)).astype(np.float32)) for s in [*sizes, (3, 2)]}
    for size in sizes:
        model(*arrays[size])
    assert model.can_save
    path = tmp_path / "m.strato"
    model.save(path)
    loaded = strato.load(path)
    assert isinstance(loaded, ShapeSpecializingModel) and loaded.origin == str(path)
    assert loaded.sizes == model.sizes
    real = strato.compiler.compile_model

    def refusing(*args, **kwargs):
        raise AssertionError("a saved size was compiled again")

    monkeypatch.setattr(strato.compiler, "compile_model", refusing)
    for size in sizes:
        np.testing.assert_allclose(loaded(*arrays[size])[0], expected(*arrays[size]), rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(strato.compiler, "compile_model", real)
    np.testing.assert_allclose(loaded(*arrays[(3, 2)])[0], expected(*arrays[(3, 2)]), rtol=1e-5, atol=1e-6)
    assert len(loaded.sizes) == 3


def test_a_saved_model_keeps_its_tuning_log_and_refuses_hooks(tmp_path):
    log = tmp_path / "t.jsonl"
    log.write_text("")
    tuned = strato.compile(dynamic_model(), cache=False, tuning=log, run_time_dims=False)
    tuned.save(tmp_path / "tuned.strato")
    log.unlink()  # the archive holds the log
    loaded = strato.load(tmp_path / "tuned.strato")
    assert loaded.recipe.tuning is not None
    with open(loaded.recipe.tuning) as saved:
        assert saved.read() == ""
    x, m = np.ones((1, 2, 8), np.float32), np.zeros((1, 2, 1), np.float32)
    np.testing.assert_allclose(loaded(x, m)[0], expected(x, m), rtol=1e-5, atol=1e-6)
    hooked = strato.compile(dynamic_model(), cache=False, passes_after="cse", run_time_dims=False)
    assert not hooked.can_save
    with pytest.raises(StratoError, match=r"cannot be saved: it was compiled with passes hooks"):
        hooked.save(tmp_path / "hooked.strato")


@pytest.mark.parametrize(
    ("member", "text", "reason"),
    [
        ("manifest.json", '{"format": "strato-specializing-model", "target": 3, "sizes": []}', "not valid"),
        ("manifest.json", '{"format": "strato-specializing-model", "target": "llvm"}', "not a model compiled per size"),
        ("model.onnx", "not a model", "does not parse"),
    ],
)
def test_a_corrupt_saved_model_is_diagnosed(tmp_path, member, text, reason):
    import zipfile

    model = strato.compile(dynamic_model(), cache=False, run_time_dims=False)
    model.save(tmp_path / "m.strato")
    with zipfile.ZipFile(tmp_path / "m.strato") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    manifest = members["manifest.json"]
    members[member] = text.encode()
    if member != "manifest.json":
        members["manifest.json"] = manifest
    with zipfile.ZipFile(tmp_path / "bad.strato", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(StratoError, match=reason):
        strato.load(tmp_path / "bad.strato")


def test_strato_compile_and_run_a_model_saved_per_size(tmp_path):
    path, saved = tmp_path / "dynamic.onnx", tmp_path / "dynamic.strato"
    onnx.save(dynamic_model(), path)
    cli = [sys.executable, "-m", "strato.tools.strato_cli"]
    done = subprocess.run([*cli, "compile", str(path), "--per-size", "-o", str(saved)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "compiled on first use for each size" in done.stdout
    run = subprocess.run([*cli, "run", str(saved), "--input-shapes", "x:[2,3,8] m:[2,3,1]", "--repeat", "1"], capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    assert "output 'y': shape [2, 3, 4]" in run.stdout and "max relative error vs onnxruntime" in run.stdout
    bare = subprocess.run([*cli, "run", str(saved)], capture_output=True, text=True, timeout=600, check=False)
    assert bare.returncode == 1 and "Traceback" not in bare.stderr
    assert "saved with no compiled size" in bare.stderr and "--input-shapes" in bare.stderr


def test_strato_compile_sizes_writes_one_object_for_them(tmp_path):
    """`strato compile --sizes` (repeated): one object and header for those sizes, the
    entry taking the open dimensions first; --sizes that miss a dynamic input, or a
    model left with no open dimension, are diagnostics."""
    path, obj = tmp_path / "dynamic.onnx", tmp_path / "dynamic.o"
    onnx.save(dynamic_model(), path)
    cli = [sys.executable, "-m", "strato.tools.strato_cli", "compile", str(path)]
    sizes = ["--sizes", "x:[1,2,8] m:[1,2,1]", "--sizes", "x:[2,5,8] m:[2,5,1]"]
    done = subprocess.run([*cli, *sizes, "-o", str(obj)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "taking batch, seq, for 2 size(s)" in done.stdout
    header = (tmp_path / "dynamic.h").read_text()
    assert "int32_t dynamic_run(int64_t batch, int64_t seq, const float *x, const float *m, float *y);" in header
    assert "int32_t dynamic_run_2x5(const float *x, const float *m, float *y);" in header
    for bad, message in (
        (["--sizes", "x:[1,2,8]"], "each --sizes gives every dynamic input"),
        (["--sizes", "x:[1,2,8] m:[1,3,1]"], "dimension 'seq' (axis 1) is 3, but 2 in input 'x'"),
        (["--input-shapes", "x:[1,2,8] m:[1,2,1]", "--sizes", "x:[1,2,8] m:[1,2,1]"], "has none left open"),
    ):
        failed = subprocess.run([*cli, *bad, "-o", str(obj)], capture_output=True, text=True, timeout=600, check=False)
        assert failed.returncode == 1 and "Traceback" not in failed.stderr
        assert "--sizes" in failed.stderr and message in failed.stderr, failed.stderr


def test_an_object_needs_a_compiled_size():
    fresh = strato.compile(dynamic_model(), cache=False, run_time_dims=False)
    with pytest.raises(StratoError, match="no size of this model is compiled yet"):
        fresh.c_header()


def test_an_unsupported_operator_is_still_reported_at_compile_time():
    model = dynamic_model()
    model.graph.node.append(helper.make_node("ImageDecoder", ["y"], ["z"], name="decode"))
    with pytest.raises(StratoError, match=r"ImageDecoder"):
        strato.compile(model, cache=False, run_time_dims=False)


def test_strato_run_asks_for_the_sizes(tmp_path):
    path = tmp_path / "dynamic.onnx"
    onnx.save(dynamic_model(), path)
    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", "run", str(path)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "dynamic dimension 'batch'" in result.stderr and "input_shapes" in result.stderr


def test_by_default_a_model_of_run_time_sizes_compiles_once():
    """By default a model whose operators all take run-time sizes compiles once for
    every size: one whose kernels all run as blocks of rows (a product, a broadcast add
    and a softmax over the features), and self-attention (its scores computed across
    the sequence); `run_time_dims=False` compiles it per size."""
    from strato.runtime.compiled_model import CompiledModel
    from strato.testing.dynamic_models import attention

    once = strato.compile(dynamic_model(), cache=False)
    assert isinstance(once, CompiledModel) and once.signature.is_dynamic
    for batch, seq in ((1, 1), (2, 33), (3, 7)):
        rng = np.random.default_rng(batch * seq)
        x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
        m = rng.standard_normal((batch, seq, 1)).astype(np.float32)
        np.testing.assert_allclose(once(x, m)[0], expected(x, m), rtol=1e-5, atol=1e-6)
    attending = strato.compile(attention(), cache=False)
    assert isinstance(attending, CompiledModel) and attending.signature.sizes == ("batch", "sequence")
    per_size = strato.compile(attention(), cache=False, run_time_dims=False)
    assert isinstance(per_size, ShapeSpecializingModel)
    x = np.random.default_rng(0).standard_normal((2, 9, 16)).astype(np.float32)
    np.testing.assert_allclose(attending(x)[0], per_size(x)[0], rtol=1e-5, atol=1e-6)
