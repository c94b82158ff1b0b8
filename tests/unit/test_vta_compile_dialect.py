"""The vta dialect's emitter and interpreter: streams that run bit-exact on the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.parser import Parser

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.targets.vta.emit import assign_regions
from strato.targets.vta.interpret import run_vta

GEMM = """
func.func @gemm(%x: memref<8x1x16xi8>, %w: memref<1x16x16xi8>, %out: memref<8x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
  %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
  vta.dep_push "compute" -> "load"
  vta.dep_push "store" -> "compute"
  loop.for %t = 0 to 2 {
    %d = arith.muli %t, %c4 : index
    vta.dep_pop "compute" -> "load"
    vta.load %x[%d], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
    vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.dep_push "load" -> "compute"
    vta.dep_pop "load" -> "compute"
    vta.dep_pop "store" -> "compute"
    vta.gemm %acc, %inp, %wgt loops [[4, 1, 0, 0]] uops [[0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.gemm %acc, %inp, %wgt loops [[4, 1, 1, 0]] uops [[0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.dep_push "compute" -> "load"
    vta.alu shr %acc imm 6 loops [[4, 1, 1]] uops [[0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
    vta.alu max %acc imm 0 loops [[4, 1, 1]] uops [[0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
    vta.alu min %acc imm 127 loops [[4, 1, 1]] uops [[0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
    vta.dep_push "compute" -> "store"
    vta.dep_pop "compute" -> "store"
    vta.store %acc[%c0], %out[%d] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
    vta.dep_push "store" -> "compute"
  }
  vta.dep_pop "compute" -> "load"
  vta.dep_pop "store" -> "compute"
  func.return
}
"""


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return next(iter(module.ops))


@given(seed=st.integers(0, 2**16), order=st.integers(0, 7))
def test_tiled_gemm_program_is_bit_exact(seed, order):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (8, 1, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (1, 16, 16), dtype=np.int8)
    outputs, report, bundle = run_vta(parse(GEMM), [x, w, np.zeros((8, 1, 16), np.int8)], seed=order)
    acc = x[:, 0, :].astype(np.int64) @ w[0].T.astype(np.int64)
    np.testing.assert_array_equal(outputs[2][:, 0, :], np.clip(acc >> 6, 0, 127).astype(np.int8))
    assert report.counters.gemm_counter == 2 * 4
    assert report.counters.alu_counter == 2 * 3 * 4
    assert not bundle.dram["out"].any()  # the bundle keeps the initial contents


def test_regions_follow_use():
    assert assign_regions(parse(GEMM)) == {0: "inp", 1: "wgt", 2: "out"}


def test_load_outside_its_buffer_is_a_diagnostic():
    bad = GEMM.replace("rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8", "rows 1 cols 4 stride 4 pad [0, 0, 1, 0] : memref<8x1x16xi8>, memref<4x1x16xi8")
    with pytest.raises(StratoError, match="would load elements 0..4 of a 4-element buffer"):
        run_vta(parse(bad), [np.zeros((8, 1, 16), np.int8), np.zeros((1, 16, 16), np.int8), np.zeros((8, 1, 16), np.int8)])


def test_kernel_outside_its_buffer_is_a_diagnostic():
    bad = GEMM.replace("loops [[4, 1, 1, 0]]", "loops [[5, 1, 1, 0]]")
    with pytest.raises(StratoError, match="reaches acc element 4 of a 4-element buffer"):
        run_vta(parse(bad), [np.zeros((8, 1, 16), np.int8), np.zeros((1, 16, 16), np.int8), np.zeros((8, 1, 16), np.int8)])


def test_missing_token_is_reported():
    bad = GEMM.replace('    vta.dep_push "load" -> "compute"\n', "", 1)
    with pytest.raises(StratoError, match="deadlock|token"):
        run_vta(parse(bad), [np.zeros((8, 1, 16), np.int8), np.zeros((1, 16, 16), np.int8), np.zeros((8, 1, 16), np.int8)])


def test_buffer_beyond_its_sram_is_a_diagnostic():
    bad = GEMM.replace(
        "%acc = vta.buffer offset 0 : memref<4x1x16xi32", "%acc = vta.buffer offset 2046 : memref<4x1x16xi32"
    )
    with pytest.raises(StratoError, match="elements 2046..2049 do not fit the 2048-element vta.acc buffer"):
        run_vta(parse(bad), [np.zeros((8, 1, 16), np.int8), np.zeros((1, 16, 16), np.int8), np.zeros((8, 1, 16), np.int8)])
