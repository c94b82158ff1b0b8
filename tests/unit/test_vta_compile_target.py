"""The `vta` compile target: strato.compile(model, target="vta") runs ResNet-18's conv layers on the simulator.

One small ResNet-18 (32 x 32 images, 16 channels in the first stage) is compiled once:
its VTA-shaped convs for the simulator, the ops between them for the CPU by the llvm
target. Its outputs must be bit-exact against the graph interpreter on the same quantized
graph, and close to the fp32 model (the quantization error of ~20 int8 layers).
"""

from __future__ import annotations

import numpy as np
import pytest

import strato
from strato import zoo
from strato.context import make_context
from strato.frontends.onnx.importer import import_model
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.targets.registry import TargetError, get_target, registered_targets
from strato.targets.vta.emitter import VtaTarget
from strato.targets.vta.target import VtaCompiledModel, VtaCompileTarget


@pytest.fixture(scope="module")
def resnet():
    proto = zoo.build_model("resnet18", image_size=32, width=16, num_classes=10)
    model = strato.compile(proto, target="vta -samples=2 -seed=0", cache=False)
    return proto, model


def test_vta_is_a_registered_target():
    assert registered_targets()["vta"][0] is VtaCompileTarget
    target = get_target("vta -virtual-threads=1")
    assert target.virtual_threads == 1 and target.samples == 2
    (graph,) = target.stages()
    assert [str(p) for p in graph.passes] == ["graph-simplify-inference", "graph-quantize{samples=2}"]
    assert target.emitter() is VtaTarget
    calibrated = get_target("vta -calibration=/data/cal.npz")
    (graph,) = calibrated.stages()
    assert str(graph.passes[-1]) == 'graph-quantize{calibration="/data/cal.npz"}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vta -virtual-threads=3", "-virtual-threads must be an integer from 1 to 2, got '3'"),
        ("vta -samples=zero", "-samples must be an integer"),
        ("vta -mcpu=x86-64", "target 'vta' has no option -mcpu"),
    ],
)
def test_bad_options_are_diagnostics(text, message):
    with pytest.raises(TargetError, match=message):
        get_target(text)


def test_resnet18_is_bit_exact_against_the_quantized_graph(resnet):
    proto, model = resnet
    assert isinstance(model, VtaCompiledModel)
    # every conv but the first (3 input channels) and those of the last stage (one
    # output column at this image size) runs on the simulator
    assert model.offloaded == 14
    x = np.random.default_rng(1).uniform(-1, 1, model.inputs[0].shape).astype(np.float32)
    (got,) = model(x)
    quantized = import_model(proto)
    run_pipeline(make_context(), quantized, "graph-simplify-inference,graph-quantize{samples=2 seed=0}")
    (want,) = run_graph(quantized, [x])
    np.testing.assert_array_equal(got, want)
    assert len(model.layers) == model.offloaded
    assert all(layer.report.cycles.total_cycles > 0 and layer.report.counters.gemm_counter > 0 for layer in model.layers)
    report = model.run_report()
    assert model.cpu_segments == 15
    assert "14 conv2d layer(s) on the simulator, 2 virtual thread(s); the rest in 15 function(s) compiled for the CPU" in report
    assert "layer1.0.conv1" in report and "bn1" not in report and "compute utilization" in report

    # the fp32 model, within the error of int8 with power-of-two scales through the network
    (reference,) = run_graph(import_model(proto), [x])
    error = np.abs(got - reference).max() / np.abs(reference).max()
    assert error < 0.25, error


def test_strato_run_says_what_a_vta_run_measures(resnet):
    from strato.tools.strato_cli import error_line, latency_line

    _, model = resnet
    assert latency_line(model, 9126.9, 3) == (
        "host time of the VTA simulation: median 9126.900 ms over 3 run(s) (not the VTA's time: see the cycles above)"
    )
    assert error_line(model, 0.148, "onnxruntime") == (
        "max relative error vs onnxruntime (float): 0.148 (the int8 quantization error, not a mismatch)"
    )
    llvm_model = strato.compile(zoo.build_model("mlp"), cache=False)
    assert latency_line(llvm_model, 1.5, 3) == "latency: median 1.500 ms over 3 run(s)"
    assert error_line(llvm_model, 1e-7, "onnxruntime") == "max relative error vs onnxruntime: 1e-07"


def test_the_calibration_option_reaches_the_quantizer(tmp_path):
    import argparse

    from strato.diagnostics import StratoError
    from strato.tools.strato_cli import check_target

    inputs = tmp_path / "cal.npz"
    np.savez(inputs, arg0=np.zeros((2, 1, 3, 32, 32), np.float32))

    def args(target: str, calibration: str | None) -> argparse.Namespace:
        return argparse.Namespace(target=target, threads=None, calibration=calibration)

    target = check_target(args("vta -samples=2", str(inputs)))
    (graph,) = target.stages()
    assert str(graph.passes[-1]) == f'graph-quantize{{calibration="{inputs}"}}'
    with pytest.raises(StratoError, match="target 'llvm' does not quantize") as refused:
        check_target(args("llvm", str(inputs)))
    assert refused.value.location == "--calibration"
    with pytest.raises(StratoError, match="no such file"):
        check_target(args("vta", str(tmp_path / "missing.npz")))
