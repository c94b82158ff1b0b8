"""The matrix-vector schedule (a dense layer at batch 1) and the dense template's tile
choice for shapes the preferred tile does not divide: same results as numpy, and the
loop structure the templates promise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strato
from strato.autotuning.testing import gemm_model
from strato.targets.llvm.templates.dense import choose_tile
from strato.zoo.onnx_graph import GraphBuilder, value_info


def dense_model(rows: int, features: int, columns: int, seed: int):
    g = GraphBuilder(seed)
    g.gemm("x", "fc", features, columns, gain=1.0, output="y")
    return g.finish("fc", [value_info("x", [rows, features])], [value_info("y", [rows, columns])])


def reference(model, x: np.ndarray) -> np.ndarray:
    from onnx import numpy_helper

    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return x @ weights["fc.weight"].T + weights["fc.bias"]


@settings(max_examples=6, deadline=None)
@given(features=st.integers(3, 40), columns=st.sampled_from([5, 16, 24, 40]), threads=st.sampled_from([1, 2]))
def test_batch_one_dense_computes_the_product(features, columns, threads):
    model = dense_model(1, features, columns, seed=features)
    x = np.random.default_rng(features).standard_normal((1, features)).astype(np.float32)
    (y,) = strato.compile(model, target="llvm", threads=threads)(x)
    np.testing.assert_allclose(y, reference(model, x), rtol=1e-4, atol=1e-4)


def test_batch_one_dense_accumulates_a_block_of_rows_in_registers():
    from strato.autotuning.task import _lowered, kernel_names, kernel_of
    from strato.dialects.loop import (
        ForOp,
        LoopKind,
        is_init_loop,
        is_reduction_loop,
        loop_stage,
    )
    from strato.targets.registry import get_target
    from strato.transforms.schedule_default import schedule_kernel

    module = _lowered(dense_model(1, 64, 48, seed=0).SerializeToString()).clone()
    (name,) = [n for n in kernel_names(module) if n.startswith("dense")]
    schedule_kernel(module, name, get_target("llvm -threads=1").schedule_context())
    loops = [op for op in kernel_of(module, name).walk() if isinstance(op, ForOp)]
    tile = [loop for loop in loops if loop_stage(loop) == "dense.local" and not is_init_loop(loop)]
    # the reduction innermost but for the 8 unrolled rows of the block
    reduction = next(loop for loop in tile if is_reduction_loop(loop))
    (rows,) = [op for op in reduction.body.walk() if isinstance(op, ForOp)]
    assert rows.loop_kind == LoopKind.UNROLLED and rows.trip_count == 8


@pytest.mark.parametrize(
    ("rows", "columns", "tile"),
    [
        (1024, 1024, (8, 32)),  # the preferred width divides; 8 rows: the most up to 12 that divide
        (35, 10000, (5, 80)),  # 5 whole vectors a row: 25 accumulators
        (35, 2600, (7, 8)),  # whole vectors do not divide: a power of two
        (12, 48, (6, 48)),  # 6 x 3 vectors (18 accumulators) rather than 12 x 1
    ],
)
def test_tile_choice(rows, columns, tile):
    assert choose_tile(rows, columns, 12, 32, 16) == tile


def test_gemm_model_still_tiles_with_the_preferred_tile():
    model = gemm_model(64, 64, 64)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    (y,) = strato.compile(model, target="llvm", threads=1)(a, b)
    np.testing.assert_allclose(y, a @ b, rtol=1e-4, atol=1e-4)
