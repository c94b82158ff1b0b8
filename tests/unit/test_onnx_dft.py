"""DFT as one graph.matmul by the import-time transform matrix (`convert_reduce`):
forward and inverse, one-sided both ways, real and complex signals, a dft_length that
cuts or pads, every axis, opset 17's attribute and opset 20's input, against numpy's
fft in f64 through the graph interpreter; one case compiled; the diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def dft_model(x_shape, opset=20, axis=-2, dft_length=None, **attributes):
    initializers = []
    names = ["x", ""]
    if dft_length is not None:
        initializers.append(
            numpy_helper.from_array(np.array(dft_length, np.int64), "n")
        )
        names[1] = "n"
    if opset >= 20:
        initializers.append(numpy_helper.from_array(np.array(axis, np.int64), "axis"))
        names.append("axis")
    else:
        attributes["axis"] = axis
    while not names[-1]:
        names.pop()
    node = helper.make_node("DFT", names, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "dft",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def as_pairs(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


def signal(shape, complex_input, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*shape, 2 if complex_input else 1)).astype(np.float32)
    z = x[..., 0].astype(np.float64)
    if complex_input:
        z = z + 1j * x[..., 1]
    return x, z


def interpreted(model, x):
    imported = import_onnx(model)
    (result,) = run_graph(imported.module, [x])
    return result


@pytest.mark.parametrize("complex_input", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dft_length", [None, 4, 9])
def test_forward_dft_matches_numpy(complex_input, axis, dft_length):
    x, z = signal((3, 6, 5), complex_input)
    model = dft_model(x.shape, axis=axis, dft_length=dft_length)
    expected = as_pairs(np.fft.fft(z, n=dft_length, axis=axis))
    np.testing.assert_allclose(interpreted(model, x), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dft_length", [None, 7])
def test_onesided_dft_matches_rfft(dft_length):
    x, z = signal((2, 8), False)
    model = dft_model(x.shape, axis=1, dft_length=dft_length, onesided=1)
    expected = as_pairs(np.fft.rfft(z, n=dft_length, axis=1))
    np.testing.assert_allclose(interpreted(model, x), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [17, 20])
def test_inverse_dft_matches_ifft(opset):
    x, z = signal((4, 6), True)
    model = dft_model(x.shape, opset=opset, axis=0, inverse=1)
    expected = as_pairs(np.fft.ifft(z, axis=0))
    np.testing.assert_allclose(interpreted(model, x), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("bins", "dft_length"), [(5, None), (5, 9), (4, 6)])
def test_onesided_inverse_dft_matches_irfft(bins, dft_length):
    x, z = signal((2, bins), True)
    model = dft_model(x.shape, axis=1, dft_length=dft_length, inverse=1, onesided=1)
    expected = np.fft.irfft(z, n=dft_length, axis=1)[..., np.newaxis]
    np.testing.assert_allclose(interpreted(model, x), expected, rtol=1e-5, atol=1e-6)


def test_dft_compiled():
    x, z = signal((2, 16, 3), True)
    model = dft_model(x.shape, axis=1)
    (actual,) = strato.compile(model)(x)
    np.testing.assert_allclose(
        actual, as_pairs(np.fft.fft(z, axis=1)), rtol=1e-5, atol=1e-5
    )


def with_output_shape(model, shape):
    """`model` with a declared output shape (its inference fails on the bad nodes)."""
    output = model.graph.output[0]
    output.type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, shape))
    return model


def test_dft_diagnostics():
    x, _ = signal((2, 4), False)
    last_axis = with_output_shape(dft_model(x.shape, axis=-1), [2, 4, 2])
    with pytest.raises(ModelImportError, match="not be the last axis"):
        import_onnx(last_axis)
    empty = with_output_shape(dft_model(x.shape, axis=1, dft_length=0), [2, 0, 2])
    with pytest.raises(ModelImportError, match="dft_length 0"):
        import_onnx(empty)


def stft_model(
    length, channels, step, window_size=None, frame_length=None, **attributes
):
    names = [
        "x",
        "step",
        "window" if window_size else "",
        "frame_length" if frame_length else "",
    ]
    while not names[-1]:
        names.pop()
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, length, channels])
    ]
    if window_size:
        inputs.append(
            helper.make_tensor_value_info("window", TensorProto.FLOAT, [window_size])
        )
    initializers = [numpy_helper.from_array(np.array(step, np.int64), "step")]
    if frame_length:
        initializers.append(
            numpy_helper.from_array(np.array(frame_length, np.int64), "frame_length")
        )
    node = helper.make_node("STFT", names, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "stft",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def numpy_stft(z, step, size, window, onesided):
    frames = 1 + (z.shape[1] - size) // step
    framed = np.stack([z[:, f * step : f * step + size] for f in range(frames)], axis=1)
    framed = framed * window
    spectrum = np.fft.rfft(framed, axis=2) if onesided else np.fft.fft(framed, axis=2)
    return as_pairs(spectrum)


# (a one-sided transform of a complex signal is not defined)
@pytest.mark.parametrize(
    ("onesided", "complex_input"), [(0, False), (1, False), (0, True)]
)
def test_stft_with_a_run_time_window_matches_numpy(onesided, complex_input):
    x, z = signal((2, 20), complex_input)
    window = np.hanning(8).astype(np.float32)
    imported = import_onnx(
        stft_model(20, x.shape[-1], 3, window_size=8, onesided=onesided)
    )
    feeds = {"x": x, "window": window}
    (actual,) = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    expected = numpy_stft(z, 3, 8, window.astype(np.float64), onesided)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_stft_without_a_window_takes_frame_length():
    x, z = signal((2, 16), False)
    # onesided given: ONNX shape inference takes an absent onesided for 0, its reference 1
    model = stft_model(16, 1, 4, frame_length=6, onesided=1)
    (actual,) = strato.compile(model)(x)
    np.testing.assert_allclose(
        actual, numpy_stft(z, 4, 6, 1.0, True), rtol=1e-5, atol=1e-5
    )
