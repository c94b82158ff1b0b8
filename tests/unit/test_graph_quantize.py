"""graph-quantize: the rewritten graph computes exactly the int8 arithmetic VTA does."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.parser import Parser
from xdsl.printer import Printer

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.tensor_types import dense_from_array
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.targets.vta.graph_quantize import (
    calibrate,
    power_of_two_exponent,
    quantize_array,
    quantize_function,
)


def conv_module(x_shape, w, bias, stride, pad, relu):
    o, c, kh, kw = w.shape
    n, _, h, wd = x_shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    xt, yt = f"tensor<{n}x{c}x{h}x{wd}xf32>", f"tensor<{n}x{o}x{oh}x{ow}xf32>"
    wt, bt = f"tensor<{o}x{c}x{kh}x{kw}xf32>", f"tensor<{o}xf32>"
    def show(array):
        out = io.StringIO()
        Printer(stream=out).print_attribute(dense_from_array(array.astype(np.float32)))
        return out.getvalue()

    tail = f"  %r = graph.relu %y : {yt}\n  func.return %r : {yt}" if relu else f"  func.return %y : {yt}"
    text = f"""
func.func @main(%x: {xt}) -> {yt} {{
  %w = graph.constant {show(w)}
  %b = graph.constant {show(bias)}
  %y = graph.conv %x, %w, %b strides [{stride}, {stride}] padding [{pad}, {pad}, {pad}, {pad}] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : ({xt}, {wt}, {bt}) -> {yt}
{tail}
}}
"""
    return Parser(make_context(), text).parse_module()


def reference(x, w, bias, stride, pad, relu, ex, ew, ey):
    """The int8 computation written directly in numpy."""
    xq = quantize_array(x, ex).astype(np.int64)
    wq = quantize_array(w, ew).astype(np.int64)
    bq = np.round(bias.astype(np.float64) * 2.0 ** -(ex + ew)).astype(np.int64)
    xp = np.pad(xq, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    o, _, kh, kw = w.shape
    oh = (x.shape[2] + 2 * pad - kh) // stride + 1
    ow = (x.shape[3] + 2 * pad - kw) // stride + 1
    acc = np.zeros((x.shape[0], o, oh, ow), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            acc += np.einsum("nchw,oc->nohw", patch, wq[:, :, i, j])
    acc += bq[None, :, None, None]
    q = np.clip(acc >> (ey - ex - ew), 0 if relu else -127, 127).astype(np.int8)
    return q.astype(np.float32) * np.float32(2.0**ey)


@given(
    seed=st.integers(0, 2**16),
    channels=st.sampled_from([3, 16]),
    out_channels=st.sampled_from([4, 16]),
    kernel=st.sampled_from([1, 3]),
    stride=st.sampled_from([1, 2]),
    relu=st.booleans(),
)
def test_quantized_conv_matches_int8_reference(seed, channels, out_channels, kernel, stride, relu):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.2, (out_channels, channels, kernel, kernel))
    bias = rng.normal(0, 0.5, out_channels)
    x_shape = (1, channels, 5, 5)
    pad = kernel // 2
    module = conv_module(x_shape, w, bias, stride, pad, relu)
    samples = [rng.normal(0, 1, x_shape).astype(np.float32) for _ in range(2)]
    function = next(iter(module.ops))
    layers = quantize_function(function, [[s] for s in samples])
    module.verify()
    (layer,) = layers
    assert layer.shift >= 0
    assert (layer.relu is not None) == relu
    x = samples[0]
    got = run_graph(module, [x])[0]
    want = reference(x, w, bias, stride, pad, relu, layer.input_exponent, layer.weight_exponent, layer.output_exponent)
    np.testing.assert_array_equal(got, want)


def test_quantized_conv_is_close_to_float(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.1, (16, 16, 3, 3))
    bias = rng.normal(0, 0.1, 16)
    module = conv_module((1, 16, 6, 6), w, bias, 1, 1, True)
    x = rng.normal(0, 1, (1, 16, 6, 6)).astype(np.float32)
    want = run_graph(module, [x])[0]
    path = tmp_path / "calib.npz"
    np.savez(path, arg0=np.stack([x, *(rng.normal(0, 1, x.shape).astype(np.float32) for _ in range(3))]))
    run_pipeline(make_context(), module, f'graph-quantize{{calibration="{path}"}}')
    got = run_graph(module, [x])[0]
    convs = [op for op in module.walk() if isinstance(op, graph.ConvOp)]
    assert convs and all(str(c.results[0].type).endswith("xi32>") for c in convs)
    assert convs[0].attributes["vta_layout"].data == "NCHW1n16c"
    # an error of a few output steps: the output step is at most 2 * max|y| / 127
    step = 2 * np.max(np.abs(want)) / 127
    assert np.max(np.abs(got - want)) <= 4 * step


def test_calibration_file(tmp_path):
    rng = np.random.default_rng(2)
    w = rng.normal(0, 0.1, (16, 16, 1, 1))
    module = conv_module((1, 16, 2, 2), w, np.zeros(16), 1, 0, False)
    big = np.full((1, 1, 16, 2, 2), 100.0, dtype=np.float32)
    path = tmp_path / "calib.npz"
    np.savez(path, arg0=big)
    function = next(iter(module.ops))
    (layer,) = calibrate(function, [[big[0]]])
    assert layer.input_exponent == power_of_two_exponent(100.0) == 0
    run_pipeline(make_context(), module, f'graph-quantize{{calibration="{path}"}}')
    assert any(isinstance(op, graph.ConvOp) for op in module.walk())


def test_missing_calibration_array_is_a_diagnostic(tmp_path):
    module = conv_module((1, 16, 2, 2), np.ones((16, 16, 1, 1)), np.zeros(16), 1, 0, False)
    path = tmp_path / "calib.npz"
    np.savez(path, other=np.zeros(3))
    with pytest.raises(StratoError, match="no array arg0"):
        run_pipeline(make_context(), module, f'graph-quantize{{calibration="{path}"}}')


def test_power_of_two_exponent():
    assert power_of_two_exponent(127.0) == 0
    assert power_of_two_exponent(128.0) == 1
    assert power_of_two_exponent(1.0) == -6
    assert power_of_two_exponent(0.0) == 0


def test_calibration_of_the_wrong_shape_is_a_diagnostic(tmp_path):
    module = conv_module((1, 16, 2, 2), np.ones((16, 16, 1, 1)), np.zeros(16), 1, 0, False)
    path = tmp_path / "calib.npz"
    np.savez(path, arg0=np.zeros((2, 1, 16, 3, 3), np.float32))
    with pytest.raises(StratoError, match=r"arg0 has shape \[2, 1, 16, 3, 3\], expected \[samples, 1, 16, 2, 2\]"):
        run_pipeline(make_context(), module, f'graph-quantize{{calibration="{path}"}}')
