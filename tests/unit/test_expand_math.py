"""expand-math: f32 exp and tanh as vectorizable arithmetic, within a few ulps of libm
over the whole range (special values included), through strato.compile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import strato


def unary_model(op: str, size: int):
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"])],
        op.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


REFERENCE = {
    "Exp": np.exp,
    "Tanh": np.tanh,
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
}

SPECIAL = np.array(
    [0.0, -0.0, 1e-30, -1e-30, 1e-4, -1e-4, 0.5, -0.5, 9.0, -9.0, 20.0, -20.0, 88.0, 88.7,
     88.8, -87.3, -87.4, -104.0, 1e4, -1e4, np.inf, -np.inf, np.nan],
    dtype=np.float32,
)  # fmt: skip


def ulp_error(got: np.ndarray, x: np.ndarray, op: str) -> float:
    """The largest error in units of the f32 spacing at the exact result (results below
    the normal range and infinities must match exactly)."""
    with np.errstate(over="ignore"):
        exact = REFERENCE[op](x.astype(np.float64))
        rounded = exact.astype(np.float32)
    normal = np.isfinite(rounded) & (np.abs(rounded) >= np.finfo(np.float32).tiny)
    assert np.array_equal(np.isnan(got), np.isnan(exact))
    assert np.array_equal(got[np.isinf(rounded)], rounded[np.isinf(rounded)])
    tiny = np.isfinite(rounded) & ~normal
    assert np.all(np.abs(got[tiny]) <= np.finfo(np.float32).tiny)
    spacing = np.spacing(np.abs(rounded[normal])).astype(np.float64)
    return float(np.max(np.abs(got[normal] - exact[normal]) / spacing, initial=0.0))


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_whole_range_within_a_few_ulps(op: str):
    x = np.concatenate(
        [np.linspace(-100.0, 100.0, 40001), np.linspace(-1e-3, 1e-3, 2001), SPECIAL]
    ).astype(np.float32)
    (y,) = strato.compile(unary_model(op, x.size), target="llvm", threads=1)(x)
    assert ulp_error(y, x, op) <= 4


@settings(max_examples=10, deadline=None)
@given(
    values=st.lists(
        st.floats(-120.0, 120.0, width=32, allow_nan=False), min_size=1, max_size=40
    ),
    op=st.sampled_from(sorted(REFERENCE)),
)
def test_random_inputs_within_a_few_ulps(values, op):
    x = np.array(values, dtype=np.float32)
    (y,) = strato.compile(unary_model(op, x.size), target="llvm", threads=1)(x)
    assert ulp_error(y, x, op) <= 4


def test_compiled_tanh_and_exp_call_no_libm():
    from strato.context import make_context
    from strato.frontends.onnx import import_onnx
    from strato.pipeline import COMPILE, run_pipeline

    for op in ("Tanh", "Exp"):
        module = import_onnx(unary_model(op, 256)).module
        run_pipeline(make_context(), module, COMPILE)
        text = str(module)
        assert "llvm.tanh" not in text and "llvm.exp" not in text, op
        assert "llvm.intr.floor" in text or "llvm.floor" in text, op
