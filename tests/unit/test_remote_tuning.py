"""Tuning for another system: candidates built here for the device, timed by a runner
that runs the device's code (a Dask worker on the device, or here one that emulates it
under qemu-user, which is what these tests use: its times are the emulator's, only the
plumbing is checked), records tagged with the device and used when compiling for it.

The emulating runner links with Debian's cross compilers (`apt-get install
gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu qemu-user`; .ci/run installs them); without
them those tests skip, saying which tool is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from strato.autotuning.measure import (
    ForeignCode,
    build_candidate,
    can_run,
    reference_outputs,
    time_built,
)
from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model
from strato.schedule.database import Database, record_target

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"
RISCV64 = "llvm -mtriple=riscv64-linux-gnu -mattr=+v"
TOOLS = {
    AARCH64: ("aarch64-linux-gnu-gcc", "qemu-aarch64", "gcc-aarch64-linux-gnu"),
    RISCV64: ("riscv64-linux-gnu-gcc", "qemu-riscv64", "gcc-riscv64-linux-gnu"),
}


def needs_tools(target: str) -> None:
    for tool in TOOLS[target][:2]:
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} on this machine (apt-get install {TOOLS[target][2]} qemu-user)")


@pytest.mark.parametrize("target", [AARCH64, RISCV64], ids=["aarch64", "riscv64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_candidate_for_a_device_runs_emulated_and_matches_this_hosts_reference(target, threads):
    needs_tools(target)
    (task,) = extract_tasks(gemm_model(32, 48, 40), target=target)
    assert task.device and task.device.startswith(target.split("=")[1].split()[0])
    built = build_candidate(task, SearchSpace(task, threads).default(), threads)
    if threads > 1:  # the emulated program links a pool for the device's system
        assert "strato_parallel_for" in built.kernel.imports
    reference = reference_outputs(task)  # computed here, by a build of the kernel for this host
    costs = time_built(built, reference, repeats=2, seed=0, threads=threads, emulate=True)
    assert len(costs) == 2 and all(c > 0 for c in costs)


def test_a_wrong_result_on_the_device_is_reported():
    needs_tools(AARCH64)
    (task,) = extract_tasks(gemm_model(16, 16, 16), target=AARCH64)
    built = build_candidate(task, SearchSpace(task).default())
    wrong = [r + 1.0 for r in reference_outputs(task)]
    with pytest.raises(Exception, match="differs from the reference"):
        time_built(built, wrong, repeats=1, seed=0, emulate=True)


def test_code_for_another_system_is_never_run_here_unless_emulated(tmp_path):
    (task,) = extract_tasks(gemm_model(16, 16, 16), target=AARCH64)
    built = build_candidate(task, SearchSpace(task).default())
    with pytest.raises(ForeignCode, match="cannot run on this .* machine"):
        time_built(built, reference_outputs(task), repeats=1, seed=0, emulate=False)
    from strato.autotuning.tuner import tune_model

    with pytest.raises(ForeignCode, match="needs that device"):
        tune_model(gemm_model(16, 16, 16), 2, str(tmp_path / "log.jsonl"), target=AARCH64)
    assert can_run("llvm") is None
    assert "does not emulate" in can_run(AARCH64)


def test_records_are_tagged_with_their_device_and_apply_only_to_it(tmp_path):
    needs_tools(AARCH64)
    from strato.autotuning.tuner import tune_model
    from strato.schedule.knobs import TuningLog, kernel_of
    from strato.targets.registry import get_target

    log = str(tmp_path / "device.jsonl")
    model = gemm_model(32, 32, 32)
    (result,) = tune_model(model, 3, log, target=AARCH64, emulate=True, search="random")
    assert result.trials == 3 and result.failures == 0
    records = Database(log).records()
    assert {r.target for r in records} == {record_target("aarch64-linux-gnu cortex-a72")}
    best = Database(log).best(result.task.key, result.task.device)
    assert best is not None and Database(log).best(result.task.key) is None
    # compiling for the device takes the record; compiling for this host does not
    module, kernel = result.task.loop_module()
    name = kernel.sym_name.data
    for target, expected in ((AARCH64, best.config), ("llvm", {})):
        context = get_target(target).with_options(threads="1").schedule_context()
        chosen = TuningLog(log).config(module, name, context)
        assert {stage: knobs for stage, knobs in chosen.items() if knobs} == {
            stage: knobs for stage, knobs in expected.items() if knobs
        }, target
    assert kernel_of(module, name) is kernel


distributed = pytest.importorskip("distributed")


@pytest.fixture
def scheduler():
    cluster = distributed.LocalCluster(
        n_workers=0, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
        processes=True,
    )
    try:
        yield cluster
    finally:
        cluster.close()


def _strato(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", *args],
        capture_output=True, text=True, check=False, **kwargs,
    )  # fmt: skip


def test_strato_tune_measures_on_a_strato_worker_that_emulates_the_device(scheduler, tmp_path):
    needs_tools(AARCH64)
    import onnx

    address = scheduler.scheduler_address
    worker = subprocess.Popen(
        [sys.executable, "-m", "strato.tools.strato_cli", "worker", address, "--emulate",
         "--name", "device"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with distributed.Client(address) as client:
            client.wait_for_workers(1, timeout=120)
        model = tmp_path / "gemm.onnx"
        onnx.save(gemm_model(32, 32, 32), model)
        log = tmp_path / "tuning.jsonl"
        tuned = _strato(
            "tune", str(model), "--target", AARCH64, "--dask", address, "--trials", "3",
            "--search", "random", "--log", str(log), timeout=600,
        )  # fmt: skip
        assert tuned.returncode == 0, tuned.stderr
        assert "3 trials (0 failed)" in tuned.stdout
        records = Database(str(log)).records()
        assert len(records) == 3 and all(r.ok for r in records)
        assert {r.target for r in records} == {record_target("aarch64-linux-gnu cortex-a72")}
        # the tuned model compiles for the device with the records
        compiled = _strato(
            "compile", str(model), "--target", AARCH64, "--tuning", str(log),
            "-o", str(tmp_path / "gemm.o"), timeout=300,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr
        assert (tmp_path / "gemm.o").stat().st_size > 0
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()


def test_a_cluster_without_a_worker_for_the_device_is_a_diagnostic(scheduler, tmp_path):
    import onnx

    address = scheduler.scheduler_address
    scheduler.scale(1)  # an in-process worker of this machine, not emulating
    with distributed.Client(address) as client:
        client.wait_for_workers(1, timeout=60)
    model = tmp_path / "gemm.onnx"
    onnx.save(gemm_model(16, 16, 16), model)
    env = {k: v for k, v in os.environ.items() if k != "DASK_STRATO__EMULATE"}
    started = time.perf_counter()
    tuned = _strato(
        "tune", str(model), "--target", AARCH64, "--dask", address, "--trials", "2",
        "--log", str(tmp_path / "log.jsonl"), timeout=300, env=env,
    )  # fmt: skip
    assert tuned.returncode == 1
    (line,) = tuned.stderr.strip().splitlines()
    assert line.startswith("strato: error: --target: no Dask worker can run code for")
    assert "does not emulate aarch64-linux-gnu cortex-a72" in line
    assert time.perf_counter() - started < 300
    assert not (tmp_path / "log.jsonl").exists() or not Database(str(tmp_path / "log.jsonl")).records()


def test_the_emulator_names_missing_tools(monkeypatch):
    from strato.diagnostics import StratoError
    from strato.targets.llvm.emulator import emulator_for
    from strato.targets.llvm.host import machine_for

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(StratoError, match=r"needs aarch64-linux-gnu-gcc \(apt-get install gcc-aarch64-linux-gnu qemu-user\)"):
        emulator_for(machine_for(cpu="cortex-a72", triple="aarch64-linux-gnu"))


def test_the_emulated_program_is_checked_against_numpy():
    needs_tools(AARCH64)
    from strato.targets.llvm.emulator import emulator_for
    from strato.targets.llvm.host import machine_for

    (task,) = extract_tasks(gemm_model(8, 12, 10), target=AARCH64)
    built = build_candidate(task, SearchSpace(task).default()).kernel
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 10)).astype(np.float32)
    b = rng.standard_normal((10, 12)).astype(np.float32)
    emulator = emulator_for(machine_for(cpu="cortex-a72", triple="aarch64-linux-gnu"))
    (c,), costs = emulator.time_kernel(built, [a, b, np.zeros((8, 12), np.float32)], repeats=3)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    assert len(costs) == 3
