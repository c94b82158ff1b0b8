"""Models with dynamic input dimensions: `strato.compile` returns a model compiled per
call's sizes, which checks each call against the declared dimensions."""

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
    compiled = strato.compile(dynamic_model(), cache=False)
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


def test_unnamed_dynamic_dimensions_and_shapeless_inputs_take_any_size():
    unnamed = dynamic_model(x_dims=(None, None, 8), m_dims=(None, None, 1))
    for value in unnamed.graph.input:
        for dim in value.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.ClearField("dim_param")
    dims = InputDims.of(unnamed)
    assert dims is not None and dims.shapes == {"x": (None, None, 8), "m": (None, None, 1)}
    compiled = strato.compile(unnamed, cache=False)
    x, m = np.ones((1, 2, 8), np.float32), np.zeros((1, 2, 1), np.float32)
    np.testing.assert_allclose(compiled(x, m)[0], expected(x, m), rtol=1e-5)


def test_input_shapes_pin_some_dimensions_and_specialize_false_refuses():
    assert InputDims.of(dynamic_model(), {"x": (1, 2, 8), "m": (1, 2, 1)}) is None
    static = strato.compile(dynamic_model(), input_shapes={"x": (1, 2, 8), "m": (1, 2, 1)}, cache=False)
    assert not isinstance(static, ShapeSpecializingModel)
    with pytest.raises(SymbolicShapeError, match=r"graph input 'x' has a dynamic dimension 'batch' at axis 0"):
        strato.compile(dynamic_model(), specialize=False, cache=False)


def test_saving_needs_static_shapes(model, tmp_path):
    with pytest.raises(StratoError, match=r"saving a compiled model needs static shapes.*'x' axis 0 \('batch'\)"):
        model.save(tmp_path / "m.strato")
    assert not model.can_save


def test_an_unsupported_operator_is_still_reported_at_compile_time():
    model = dynamic_model()
    model.graph.node.append(helper.make_node("ImageDecoder", ["y"], ["z"], name="decode"))
    with pytest.raises(StratoError, match=r"ImageDecoder"):
        strato.compile(model, cache=False)


def test_strato_run_asks_for_the_sizes(tmp_path):
    path = tmp_path / "dynamic.onnx"
    onnx.save(dynamic_model(), path)
    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", "run", str(path)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "dynamic dimension 'batch'" in result.stderr and "input_shapes" in result.stderr
