"""A quantized graph with its VTA-shaped convs on the simulator: bit-exact against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from strato.context import make_context
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.targets.vta.graph import run_graph_on_vta


def block(rng) -> str:
    """A first conv (3 channels), then a residual block of two 3x3 convs with bias."""
    from io import StringIO

    from xdsl.printer import Printer

    from strato.dialects.tensor_types import dense_from_array

    def const(array):
        out = StringIO()
        Printer(stream=out).print_attribute(dense_from_array(array.astype(np.float32)))
        return out.getvalue()

    w0 = const(rng.normal(0, 0.3, (16, 3, 3, 3)))
    w1, w2 = const(rng.normal(0, 0.1, (16, 16, 3, 3))), const(rng.normal(0, 0.1, (32, 16, 3, 3)))
    b1, b2 = const(rng.normal(0, 0.1, 16)), const(rng.normal(0, 0.1, 32))
    w3 = const(rng.normal(0, 0.1, (32, 16, 1, 1)))
    conv = 'dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW"'
    return f"""
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x32x4x4xf32> {{
  %w0 = graph.constant {w0}
  %y0 = graph.conv %x, %w0 strides [1, 1] padding [1, 1, 1, 1] {conv} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %r0 = graph.relu %y0 : tensor<1x16x8x8xf32>
  %w1 = graph.constant {w1}
  %b1 = graph.constant {b1}
  %y1 = graph.conv %r0, %w1, %b1 strides [1, 1] padding [1, 1, 1, 1] {conv} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r1 = graph.relu %y1 : tensor<1x16x8x8xf32>
  %w2 = graph.constant {w2}
  %b2 = graph.constant {b2}
  %y2 = graph.conv %r1, %w2, %b2 strides [2, 2] padding [1, 1, 1, 1] {conv} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>, tensor<32xf32>) -> tensor<1x32x4x4xf32>
  %w3 = graph.constant {w3}
  %y3 = graph.conv %r0, %w3 strides [2, 2] padding [0, 0, 0, 0] {conv} : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
  %s = graph.add %y2, %y3 : (tensor<1x32x4x4xf32>, tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  %r = graph.relu %s : tensor<1x32x4x4xf32>
  func.return %r : tensor<1x32x4x4xf32>
}}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_quantized_block_runs_bit_exact_with_convs_on_the_simulator(threads):
    rng = np.random.default_rng(4)
    ctx = make_context()
    module = Parser(ctx, block(rng)).parse_module()
    run_pipeline(ctx, module, "graph-quantize{samples=2}")
    x = rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    want = run_graph(module, [x])[0]
    got, layers = run_graph_on_vta(module, [x], virtual_threads=threads)
    np.testing.assert_array_equal(got[0], want)
    # the 3-channel first conv stays on the CPU; the other three run on the simulator
    assert [layer.weight_shape for layer in layers] == [(16, 16, 3, 3), (32, 16, 3, 3), (32, 16, 1, 1)]
    assert all(layer.report.counters.gemm_counter > 0 for layer in layers)
    assert np.any(want != 0)


def test_small_resnet18_runs_bit_exact(capsys):
    from strato.targets.vta.run_model import main

    assert main(["resnet18", "--image-size", "32", "--width", "16", "--virtual-threads", "2"]) == 0
    printed = capsys.readouterr().out
    assert "14 conv2d layers on the VTA simulator" in printed
    assert "outputs bit-exact against the numpy int8 reference" in printed


def test_partition_compiles_the_cpu_ops_between_offloaded_convs():
    from strato.targets.vta.partition import (
        CpuSegment,
        VtaStep,
        partition,
        run_partition,
    )

    rng = np.random.default_rng(4)
    ctx = make_context()
    module = Parser(ctx, block(rng)).parse_module()
    run_pipeline(ctx, module, "graph-quantize{samples=2}")
    steps = partition(module, virtual_threads=2)
    # the first conv and the quantization of its output; each offloaded conv after the
    # ops that (de)quantize its input; the residual add and relu last
    kinds = ["cpu" if isinstance(step, CpuSegment) else "vta" for step in steps]
    assert kinds == ["cpu", "vta", "cpu", "vta", "cpu", "vta", "cpu"]
    assert all(isinstance(step.program, type(module)) for step in steps if isinstance(step, VtaStep))
    x = rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    got, layers = run_partition(steps, module, [x])
    np.testing.assert_array_equal(got[0], run_graph(module, [x])[0])
    assert len(layers) == 3
