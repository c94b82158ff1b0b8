"""`strato bench`: the command runs and writes its JSON, a peer that disagrees is caught,
FLOPs are counted, and the sides run what they claim. Speed is never asserted here."""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from strato.bench import workloads as bench_workloads
from strato.bench.peers import PEERS, Numpy, Prepared, Side, Strato, TvmRelax
from strato.bench.runner import (
    BenchOptions,
    check_outputs,
    max_relative_error,
    run_bench,
    time_interleaved,
)
from strato.bench.workloads import Workload, dense_flops, gemm_model, select_workloads
from strato.tools import strato_cli


def relu_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "relu", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


RELU = Workload("relu", "model", relu_model)


class NumpyRelu(Side):
    """A peer computing Relu with numpy, `offset` added to its answer."""

    name = "numpy-relu"
    offset = 0.0

    def threads_note(self) -> str:
        return "one"

    def prepare(self, model, inputs) -> Prepared:
        (x,) = inputs
        answer = [np.maximum(x, 0) + np.float32(self.offset)]
        return Prepared(0.0, lambda threads: contextlib.nullcontext(lambda: answer))


class WrongRelu(NumpyRelu):
    name = "wrong-relu"
    offset = 0.5


def test_mlp_quick_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    status = strato_cli.main(
        ["bench", "--workloads", "mlp", "--quick", "--repeat", "2", "--threads", "1",
         "--json", str(out), "--no-progress"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert status == 0, captured.err
    document = json.loads(out.read_text())
    assert document["options"]["threads"] == [1]
    assert document["machine"]["usable_cores"] >= 1 and document["machine"]["cpu"]
    assert "llvmlite" in document["versions"] and "strato" in document["threads"]
    (result,) = document["results"]
    assert result["workload"] == "mlp" and result["failures"] == {}
    assert result["flops"] == 2.0 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    assert result["compile_seconds"]["strato"] > 0
    if Strato().has_cache:
        assert result["compile_seconds"]["strato cache hit"] > 0
    sides = {m["side"] for m in result["measurements"]}
    assert {"strato", "onnxruntime"} <= sides
    for measurement in result["measurements"]:
        assert 1 <= len(measurement["samples_ms"]) <= 2
        assert measurement["median_ms"] > 0
    assert all(check["ok"] for check in result["checks"])
    assert "onnxruntime" in {check["peer"] for check in result["checks"]}
    assert "mlp" in captured.out and "strato/peer" in captured.out
    assert "all outputs agree" in captured.out


def test_disagreeing_peer_fails_the_run_loudly(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(PEERS, NumpyRelu.name, NumpyRelu)
    monkeypatch.setitem(PEERS, WrongRelu.name, WrongRelu)
    monkeypatch.setattr(bench_workloads, "all_workloads", lambda seed=0: [RELU])
    out = tmp_path / "bench.json"
    status = strato_cli.main(
        ["bench", "--workloads", "relu", "--peers", "numpy-relu,wrong-relu", "--threads", "1,2",
         "--repeat", "2", "--json", str(out), "--no-progress"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert status == 1
    for threads in (1, 2):
        assert f"MISMATCH relu at {threads} thread(s): strato against wrong-relu" in captured.err
    assert "against numpy-relu" not in captured.err
    checks = json.loads(out.read_text())["results"][0]["checks"]
    assert len(checks) == 4
    for check in checks:
        if check["peer"] == "numpy-relu":
            assert check["ok"] and check["max_relative_error"] == 0.0
        else:
            assert not check["ok"] and check["max_relative_error"] > 0.1
    assert "MISMATCH" in captured.out


def test_plain_progress_without_tqdm(monkeypatch, capsys):
    import sys

    from strato.bench.progress import PlainProgress, make_progress

    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now fails
    progress = make_progress(2, enabled=True)
    assert isinstance(progress, PlainProgress)
    progress.step("GEMM: compiling")
    progress.step("GEMM: timing")
    progress.close()
    assert capsys.readouterr().err.splitlines() == ["[1/2] GEMM: compiling", "[2/2] GEMM: timing"]


def test_a_failing_peer_is_reported_and_the_rest_measured():
    class Broken(NumpyRelu):
        name = "broken"

        def prepare(self, model, inputs):
            raise RuntimeError("cannot build")

    (result,) = run_bench([RELU], [Broken(), NumpyRelu()], BenchOptions(threads=[1], repeat=2, seconds=0.01))
    assert list(result.failures) == ["broken"]
    assert result.failures["broken"].startswith("compile: RuntimeError: cannot build (at test_bench.py:")
    assert result.check("numpy-relu", 1).ok
    assert result.measurement("strato", 1) and result.measurement("numpy-relu", 1)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--threads", "0"], "thread counts must be at least 1"),
        (["--threads", "1,x"], "'x' is not a thread count"),
        (["--workloads", "C13"], "unknown workload 'c13'"),
        (["--peers", "tensorflow"], "unknown peer 'tensorflow'"),
        (["--json", "/nonexistent-dir/x.json", "--workloads", "mlp"], "no directory"),
        (["--tuning", "/nonexistent-dir/log.jsonl", "--workloads", "mlp"], "tuning log does not exist"),
    ],
)
def test_usage_errors_are_one_line(args, fragment, capsys):
    assert strato_cli.main(["bench", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("strato: error: ") and fragment in err[0], err


def test_selection():
    names = [w.name for w in select_workloads(None, quick=False)]
    assert names[0] == "GEMM" and names[1:13] == [f"C{i}" for i in range(1, 13)]
    assert set(names[13:]) == {"mlp", "dqn", "resnet18", "mobilenet_v2", "dcgan", "transformer", "lstm"}
    assert [w.name for w in select_workloads("zoo,c2,Gemm", quick=False)][:2] == ["GEMM", "C2"]
    assert len(select_workloads("conv", quick=False)) == 12
    assert {w.name for w in select_workloads(None, quick=True)} < set(names)


def test_conv_flops_match_the_layer_table():
    from strato.bench.workloads import conv_layers, conv_model

    size, cin, cout, kernel, stride = conv_layers()["C6"]
    (c6,) = select_workloads("C6", quick=False)
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    assert c6.flops == 2.0 * cout * out * out * cin * kernel * kernel
    assert dense_flops(conv_model(size, cin, cout, kernel, stride, seed=0)) == c6.flops


def test_dense_flops_of_gemm_and_lstm():
    assert dense_flops(gemm_model(8)) == 2.0 * 8**3
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, 3])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 16, 3])
    r = helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 16, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    node = helper.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=4)
    model = helper.make_model(helper.make_graph([node], "lstm", [x, w, r], [y]))
    # per step and batch row: 4 gates x hidden 4 x (input 3 + hidden 4) multiply-adds
    assert dense_flops(model) == 2.0 * 5 * 2 * 16 * 7


def test_relative_error_sees_nan_and_shapes():
    a = np.array([1.0, 2.0], np.float32)
    assert max_relative_error([a], [a]) == 0.0
    assert max_relative_error([a], [np.array([1.0, 4.0], np.float32)]) == 0.5
    assert max_relative_error([np.array([np.nan, 2.0])], [a]) == math.inf
    assert max_relative_error([np.array([np.nan, 2.0])], [np.array([np.nan, 2.0])]) == 0.0
    check = check_outputs("p", 1, [a], [a.reshape(2, 1)], 1e-3)
    assert not check.ok and "shape [2] against [2, 1]" in check.problem
    assert not check_outputs("p", 1, [a], [a, a], 1e-3).ok


def test_interleaved_timing_bounds():
    calls = {"fast": 0, "slow": 0}

    def run(name):
        calls[name] += 1
        return []

    options = BenchOptions(threads=[1], repeat=4, seconds=10.0)
    samples = time_interleaved(
        {"fast": lambda: run("fast"), "slow": lambda: run("slow")}, {"fast": 0.0, "slow": 20.0}, options
    )
    assert len(samples["fast"]) == 4 and calls["fast"] == 4
    # longer than the budget: its warm-up is its one timing, no further call
    assert samples["slow"] == [20000.0] and calls["slow"] == 0


def test_numpy_peer_limits_blas_threads():
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_info

    side = Numpy()
    (gemm,) = select_workloads("gemm", quick=False)
    assert side.applies_to(gemm) and not side.applies_to(RELU)
    a = np.eye(4, dtype=np.float32)
    b = np.arange(16, dtype=np.float32).reshape(4, 4)
    with side.prepare(gemm_model(4), [a, b]).using_threads(1) as run:
        blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
        assert all(info["num_threads"] == 1 for info in blas)
        np.testing.assert_array_equal(run()[0], b)


def test_tvm_peer_runs_the_model():
    pytest.importorskip("tvm")
    side = TvmRelax(max_threads=1)
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    prepared = side.prepare(relu_model(), [x])
    assert prepared.compile_seconds > 0
    with prepared.using_threads(1) as run:
        np.testing.assert_array_equal(run()[0], np.maximum(x, 0))
    assert "tvm" in side.versions()


def test_strato_side_compiles_with_the_tuning_log(tmp_path, monkeypatch):
    from strato.bench.peers import Strato

    seen = {}

    def fake_compile(model, **options):
        seen.update(options)
        raise RuntimeError("stop here")

    import strato

    monkeypatch.setattr(strato, "compile", fake_compile)
    log = tmp_path / "log.jsonl"
    log.write_text("")
    try:
        Strato(tuning=str(log))._compile(None, 1)
    except RuntimeError:
        pass
    assert seen["tuning"] == str(log) and seen["threads"] == 1


def test_fma_chains_compute_what_they_time():
    """The peak loop does the multiply-adds it counts: each chain steps v -> 0.5 v + 0.25
    from 1, and the output is the chains' sum (speed itself is not asserted)."""
    from strato.bench.machine import fma_chains, fma_peak_gflops

    run, lanes, chains = fma_chains(3)
    assert chains == 3 and lanes >= 1
    for steps in (1, 2, 7):
        out = np.zeros(lanes, np.float32)
        run(out, steps)
        value = 1.0
        for _ in range(steps):
            value = value * 0.5 + 0.25
        np.testing.assert_allclose(out, np.full(lanes, 3 * value, np.float32), rtol=1e-6)
    peak = fma_peak_gflops(seconds=0.02)
    assert math.isfinite(peak) and peak > 0
