"""The tuner end to end: resumable logs, the CLI, kill and resume, tuned compilation."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest

from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model
from strato.autotuning.tuner import share_trials, tune_model
from strato.schedule.database import Database


def test_tune_and_compile_with_the_log(tmp_path):
    import strato

    model = gemm_model(16, 32, 24)
    log = str(tmp_path / "log.jsonl")
    (first,) = tune_model(model, trials=4, log=log, search="random", repeats=2, batch=4, seed=1)
    assert first.trials == 4 and first.default is not None and first.default.ok
    assert first.best is not None and first.best_gflops >= first.default_gflops
    assert first.history == sorted(first.history)
    db = Database(log)
    assert len(db.records()) == 4 and db.problems == []
    assert len({str(r.config) for r in db.records()}) == 4
    assert {r.task for r in db.records()} == {first.task.key}
    a = np.ones((16, 24), np.float32)
    b = np.arange(24 * 32, dtype=np.float32).reshape(24, 32) / 100
    compiled = strato.compile(model, tuning=log)
    np.testing.assert_allclose(compiled(a, b)[0], a @ b, rtol=1e-4)


def _scheduled_knobs(model, **options) -> dict:
    """The schedule.knobs of every kernel after schedule-default, by kernel name."""
    import strato

    knobs: dict = {}

    def after(stage, module):
        if stage == "schedule-default":
            for op in module.walk():
                if op.name == "func.func" and "schedule.knobs" in op.attributes:
                    knobs[op.sym_name.data] = str(op.attributes["schedule.knobs"])

    strato.compile(model, after_stage=after, **options)
    return knobs


def test_compile_with_tuning_applies_the_best_record_and_keys_the_cache(tmp_path, monkeypatch):
    import pytest

    import strato
    from strato.diagnostics import StratoError

    model = gemm_model(16, 32, 24)
    log = tmp_path / "log.jsonl"
    tune_model(model, trials=3, log=str(log), search="random", repeats=1, batch=3, seed=2)
    best = min(Database(str(log)).records(), key=lambda r: r.seconds)
    default = _scheduled_knobs(model, cache=False)
    tuned = _scheduled_knobs(model, cache=False, tuning=log)
    (kernel,) = tuned
    for stage, values in best.config.items():
        for knob, value in values.items():
            assert f"{knob} = {str(value).lower() if isinstance(value, bool) else value}" in tuned[kernel]
    if tuned == default:
        # the best record is the default configuration itself
        for stage, values in best.config.items():
            for knob, value in values.items():
                assert f"{knob} = {str(value).lower() if isinstance(value, bool) else value}" in default[kernel]

    # the cache tells a tuned compile from an untuned one, and a log that changed
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path / "cache"))
    assert strato.compile(model).origin is None
    assert strato.compile(model).origin is not None
    assert strato.compile(model, tuning=log).origin is None
    assert strato.compile(model, tuning=log).origin is not None
    with open(log, "a") as stream:
        stream.write("\n")
    assert strato.compile(model, tuning=log).origin is None

    with pytest.raises(StratoError, match="tuning log does not exist"):
        strato.compile(model, tuning=tmp_path / "missing.jsonl")


def test_a_model_of_run_time_sizes_is_tuned_per_block_of_rows(tmp_path):
    """A model compiled once for every size is tuned as it compiles: its kernels that
    compute rows apart are blocks of a few static row counts, each a task of its own,
    so the log keeps records per block size, and a compile with the log schedules each
    block by its best record (the kernels of run-time sizes are not tasks)."""
    import strato
    from strato.testing.dynamic_models import mlp

    proto = mlp()
    names = [t.name.split("/", 1)[1] for t in extract_tasks(proto, "mlp", alternatives=False)]
    for rows in (32, 16, 8, 4, 1):
        assert any(f"dense_6_rows{rows}_" in name for name in names), names
    log = tmp_path / "log.jsonl"
    (result,) = tune_model(
        proto, trials=4, log=str(log), search="random", repeats=1, batch=4, seed=3,
        task_filter=lambda t: "dense_6_rows32_" in t.name,
    )  # fmt: skip
    assert result.trials == 4
    best = min(Database(str(log)).records(), key=lambda r: r.seconds)
    tuned = _scheduled_knobs(proto, cache=False, tuning=log)
    (kernel,) = [name for name in tuned if "dense_6_rows32_" in name]
    for values in best.config.values():
        for knob, value in values.items():
            assert f"{knob} = {str(value).lower() if isinstance(value, bool) else value}" in tuned[kernel]
    x = np.random.default_rng(0).standard_normal((100, 16)).astype(np.float32)
    np.testing.assert_allclose(
        strato.compile(proto, cache=False, tuning=log)(x)[0], strato.compile(proto, cache=False)(x)[0],
        rtol=1e-5, atol=1e-6,
    )  # fmt: skip


def test_share_trials_follows_the_work():
    small, large = extract_tasks(gemm_model(8, 16, 8))[0], extract_tasks(gemm_model(32))[0]
    ratio = large.flops / (large.flops + small.flops)
    shares = share_trials([large, small], 40)
    assert sum(shares) == 40
    assert shares[0] in (1 + int(38 * ratio), 2 + int(38 * ratio))
    assert shares[1] >= 1


def test_share_trials_spends_exactly_the_budget():
    tasks = [extract_tasks(gemm_model(n, 16, 8))[0] for n in (8, 16, 24, 32, 64)]
    for trials in range(0, 60):
        shares = share_trials(tasks, trials)
        assert sum(shares) == trials
        if trials >= len(tasks):
            assert min(shares) >= 1
        # more work never gets fewer trials
        order = sorted(range(len(tasks)), key=lambda i: tasks[i].flops * tasks[i].weight)
        assert [shares[i] for i in order] == sorted(shares)
    assert share_trials(tasks, 2) == [0, 0, 0, 1, 1]


def test_share_trials_follows_the_measured_time():
    """With each task's measured seconds a call, the spare trials follow seconds x how
    often the kernel runs, not its flops; a task whose measurement failed counts its
    flops at the others' seconds per flop."""
    from dataclasses import replace

    a, b = extract_tasks(gemm_model(8, 16, 8))[0], extract_tasks(gemm_model(32))[0]
    a = replace(a, weight=3)  # runs three times a call of the model
    # b has 16x a's flops but, as measured, a call of a takes as long as one of b
    shares = share_trials([a, b], 2 + 40, [1e-3, 1e-3])
    assert shares == [1 + 30, 1 + 10]
    failed = share_trials([a, b], 2 + 40, [1e-3, None])
    rate = 1e-3 / a.flops
    expected_b = 40 * (rate * b.flops) / (3e-3 + rate * b.flops)
    assert abs(failed[1] - 1 - expected_b) <= 1 and sum(failed) == 42


def test_tune_model_shares_by_the_defaults_measured_first(tmp_path):
    """Every task's default is measured before the budget is shared, and the shares
    add up to the budget."""
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [16, 24])
    b = helper.make_tensor_value_info("B", TensorProto.FLOAT, [24, 32])
    c = helper.make_tensor_value_info("C", TensorProto.FLOAT, [32, 8])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [16, 8])
    nodes = [helper.make_node("MatMul", ["A", "B"], ["T"]), helper.make_node("Relu", ["T"], ["R"]),
             helper.make_node("MatMul", ["R", "C"], ["Y"])]  # fmt: skip
    graph = helper.make_graph(nodes, "two", [a, b, c], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    log = str(tmp_path / "log.jsonl")
    results = tune_model(model, trials=5, log=log, search="random", repeats=1, batch=2)
    assert len(results) >= 2 and sum(r.trials for r in results) == 5
    db = Database(log)
    firsts = [db.records(r.task.key)[0].config for r in results]
    assert firsts == [r.task.default_config() for r in results]
    order = [rec.task for rec in db.records()]
    assert order[: len(results)] == [r.task.key for r in results]  # every default first


def _cli(*args):
    return [sys.executable, "-m", "strato.tools.strato_cli", "tune", *args]


def _start_tune(tmp_path):
    """A long `strato tune` of a small GEMM in its own session: (its args, log, process)."""
    path = tmp_path / "g.onnx"
    onnx.save(gemm_model(16, 32, 24), path)
    log = tmp_path / "log.jsonl"
    args = [str(path), "--log", str(log), "--search", "random", "--repeats", "1"]
    process = subprocess.Popen(_cli(*args, "--trials", "200"), stderr=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, start_new_session=True)
    return args, log, process


def _wait_for_lines(log, count: int, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"{log} never reached {count} records")


def test_cli_killed_run_resumes_losing_nothing(tmp_path):
    args, log, process = _start_tune(tmp_path)
    try:
        _wait_for_lines(log, 3)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the parent and its workers
    process.wait()
    before = Database(str(log))
    kept = len(before.records())
    assert kept >= 3
    assert all(n == len(log.read_bytes().split(b"\n")) for n, _ in before.problems)  # torn tail only
    done = subprocess.run(_cli(*args, "--trials", str(kept + 2)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{kept + 2} trials" in done.stdout
    after = Database(str(log))
    assert len(after.records()) == kept + 2
    assert len({str(r.config) for r in after.records()}) == kept + 2


def _workers(parent: int) -> list[int]:
    """The measurement workers a process spawned (not its resource tracker)."""
    children = []
    for task in os.listdir(f"/proc/{parent}/task"):
        with open(f"/proc/{parent}/task/{task}/children") as f:
            children += [int(pid) for pid in f.read().split()]
    workers = []
    for pid in children:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    workers.append(pid)
        except FileNotFoundError:
            pass
    return workers


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="finds workers through /proc")
def test_cli_survives_a_killed_worker_then_a_killed_parent_resumes(tmp_path):
    args, log, process = _start_tune(tmp_path)
    try:
        _wait_for_lines(log, 2)
        workers = _workers(process.pid)
        assert workers, "no measurement worker found"
        for pid in workers:  # as the OOM killer would: busy and idle ones
            os.kill(pid, signal.SIGKILL)
        seen = log.read_bytes().count(b"\n")
        _wait_for_lines(log, seen + 4)  # the run goes on with a replacement
        assert process.poll() is None
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    before = Database(str(log))
    records = before.records()
    lost = [r for r in records if r.error]
    assert len(lost) <= len(workers) and all(r.error.startswith("crashed") for r in lost)
    assert all(n == len(log.read_bytes().split(b"\n")) for n, _ in before.problems)
    done = subprocess.run(_cli(*args, "--trials", str(len(records) + 3)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after = Database(str(log)).records()
    assert len(after) == len(records) + 3
    assert len({str(r.config) for r in after}) == len(after)


def test_cli_errors_are_one_line(tmp_path):
    done = subprocess.run(_cli(str(tmp_path / "missing.onnx"), "--trials", "2"),
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "error" in done.stderr


def test_cli_plot_tunes_the_other_search_and_draws_both(tmp_path):
    path = tmp_path / "g.onnx"
    onnx.save(gemm_model(16, 32, 24), path)
    log, image = tmp_path / "log.jsonl", tmp_path / "curves.png"
    done = subprocess.run(
        _cli(str(path), "--log", str(log), "--trials", "3", "--repeats", "1", "--plot", str(image)),
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    baseline = tmp_path / "log.random.jsonl"
    assert len(Database(str(log)).records()) == 3 and len(Database(str(baseline)).records()) == 3
    assert image.read_bytes().startswith(b"\x89PNG")
    assert "xgb best" in done.stdout and "random best" in done.stdout and f"plot: {image}" in done.stdout


def test_plot_log_names_and_errors(tmp_path):
    from strato.autotuning.plot import draw_curves
    from strato.autotuning.tuner import TuneResult
    from strato.diagnostics import StratoError
    from strato.tools.tune_command import baseline_log

    assert baseline_log("t/tuning.jsonl", "random") == "t/tuning.random.jsonl"
    assert baseline_log("dir.v2/log", "xgb") == "dir.v2/log.xgb"
    (task,) = extract_tasks(gemm_model(16, 32, 24))
    with pytest.raises(StratoError, match="no task was tuned"):
        draw_curves({"xgb": [TuneResult(task)]}, str(tmp_path / "x.png"))
    tuned = TuneResult(task, trials=2, history=[1.0, 2.0])
    with pytest.raises(StratoError, match="not supported|Format"):
        draw_curves({"xgb": [tuned]}, str(tmp_path / "x.nosuchformat"))
    assert not (tmp_path / "x.nosuchformat").exists()
