"""graph-pack-dense: constant dense weights packed into the GEMM's panels at compile
time; same results (graph interpreter, LLVM) and no per-call weight copy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.tensor_types import array_from_dense, dense_from_array
from strato.interpreters.graph import entry_function, run_graph
from strato.pipeline import LOWER_TO_LOOPS, run_pipeline
from strato.runtime.signature import Signature
from strato.targets.llvm.build import build_llvm
from strato.targets.llvm.graph_pack_dense import packed_width
from strato.testing.graph_programs import graph_programs


def dense_module(rows: tuple[int, ...], features: int, columns: int, bias: bool, seed: int):
    """A graph-level module of one dense layer with random constant weights."""
    x_type = f"tensor<{'x'.join(map(str, [*rows, features]))}xf32>"
    y_type = f"tensor<{'x'.join(map(str, [*rows, columns]))}xf32>"
    w_type = f"tensor<{columns}x{features}xf32>"
    b_type = f"tensor<{columns}xf32>"
    operands = "%x, %w, %b" if bias else "%x, %w"
    types = f"{x_type}, {w_type}, {b_type}" if bias else f"{x_type}, {w_type}"
    text = f"""
func.func @main(%x: {x_type}) -> {y_type} {{
  %w = graph.constant dense<0.0> : {w_type}
  %b = graph.constant dense<0.0> : {b_type}
  %y = graph.dense {operands} : ({types}) -> {y_type}
  func.return %y : {y_type}
}}"""
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    rng = np.random.default_rng(seed)
    w, b = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    w.properties["value"] = dense_from_array(rng.standard_normal((columns, features)).astype(np.float32))
    b.properties["value"] = dense_from_array(rng.standard_normal(columns).astype(np.float32))
    x = rng.standard_normal((*rows, features)).astype(np.float32)
    return ctx, module, x


@settings(max_examples=12, deadline=None)
@given(
    rows=st.sampled_from([(2,), (5,), (3, 1), (2, 3)]),
    features=st.integers(1, 12),
    columns=st.sampled_from([16, 32, 48, 80, 20, 200]),
    bias=st.booleans(),
    lanes=st.sampled_from([4, 8, 16]),
)
def test_packing_preserves_semantics(rows, features, columns, bias, lanes):
    ctx, module, x = dense_module(rows, features, columns, bias, seed=features)
    expected = run_graph(module, [x])
    run_pipeline(ctx, module, f"graph-pack-dense{{lanes={lanes}}}")
    packed = packed_width(int(np.prod(rows)), columns, lanes) is not None
    assert any(isinstance(op, graph.MatmulOp) for op in module.walk()) == packed
    assert not any(isinstance(op, graph.DenseOp) for op in module.walk()) == packed
    np.testing.assert_allclose(run_graph(module, [x])[0], expected[0], rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(
    program=graph_programs(
        max_ops=4, kinds=("dense", "matmul", "add", "relu", "dense_batch_norm", "matmul_bias")
    ),
    lanes=st.sampled_from([2, 4, 8]),
)
def test_packing_preserves_generated_programs(program, lanes):
    """graph-pack-dense on generated graph programs (dense layers with and without
    bias, matmuls, batch norms after dense layers): the same results."""
    inputs = program.random_inputs(seed=4)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, f"graph-pack-dense{{lanes={lanes}}}")
    program.module.verify()
    for got, want in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_panels_hold_nr_consecutive_columns_per_reduction_step():
    ctx, module, x = dense_module((35, 1), 24, 240, True, seed=3)
    (w,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp) and len(op.result.type.get_shape()) == 2]
    weight = array_from_dense(w.value)
    run_pipeline(ctx, module, "graph-pack-dense{lanes=16}")
    (matmul,) = [op for op in module.walk() if isinstance(op, graph.MatmulOp)]
    panels = array_from_dense(matmul.rhs.owner.value)
    # 35 rows, 240 columns (32 does not divide them): 5 x 80 tiles, 25 accumulators
    # (7 x 16 would hold 7, 7 x 48 21), three panels of 80 columns
    assert panels.shape == (3, 24, 80)
    assert panels[1, 7, 13] == weight[80 + 13, 7]


def test_columns_no_vector_divides_are_padded_to_a_larger_tile():
    """An LSTM's 4 x 650 gate columns (no multiple of 16): packed into 33 panels of 80
    columns (2640, 40 of them zero), a 5 x 80 tile with 25 accumulators instead of 7 x 8
    half vectors; the product's extra columns are sliced off and the results agree,
    through the graph interpreter and compiled."""
    ctx, module, x = dense_module((35, 1), 8, 2600, True, seed=2)
    (w,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp) and len(op.result.type.get_shape()) == 2]
    weight = array_from_dense(w.value)
    expected = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["y"])
    run_pipeline(ctx, module, "graph-pack-dense{lanes=16}")
    (matmul,) = [op for op in module.walk() if isinstance(op, graph.MatmulOp)]
    panels = array_from_dense(matmul.rhs.owner.value)
    assert panels.shape == (33, 8, 80)
    assert panels[32, 3, 39] == weight[2599, 3] and not panels[32, :, 40:].any()
    (drop,) = [op for op in module.walk() if isinstance(op, graph.SliceOp)]
    assert static_shape(drop.input) == (35, 2640) and static_shape(drop.result) == (35, 2600)
    np.testing.assert_allclose(run_graph(module, [x])[0], expected[0], rtol=1e-5, atol=1e-5)
    run_pipeline(ctx, module, f"graph-fuse-ops,{LOWER_TO_LOOPS},convert-loops-to-llvm")
    (y,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(y, expected[0], rtol=1e-4, atol=1e-4)


def test_packed_dense_compiles_without_a_weight_copy():
    ctx, module, x = dense_module((10, 1), 40, 96, True, seed=1)
    expected = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["y"])
    # the tile the weights are packed for: 16 lanes, as schedule-default is told (not the host's)
    pipeline = f"graph-pack-dense{{lanes=16}},graph-fuse-ops,{LOWER_TO_LOOPS},schedule-default{{lanes=16 registers=32}}"
    run_pipeline(ctx, module, pipeline)
    stages = {op.attributes["stage"].data for op in module.walk() if "stage" in op.attributes}
    assert "matmul" in stages
    # a copy of the weights would be a cache_read stage, matmul.<weight>.local
    assert not [s for s in stages if s.startswith("matmul.")], stages
    run_pipeline(ctx, module, "convert-loops-to-llvm")
    (y,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(y, expected[0], rtol=1e-4, atol=1e-4)


def test_lanes_must_be_positive():
    ctx, module, _ = dense_module((2,), 4, 16, False, seed=0)
    with pytest.raises(StratoError, match="lanes must be positive"):
        run_pipeline(ctx, module, "graph-pack-dense{lanes=-1}")
