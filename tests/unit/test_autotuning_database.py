"""The tuning log survives kills and corruption, and compilation reads it back."""

import json

from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model
from strato.schedule.database import Database, Record


def _record(task="wl", seconds=1.0, error=None, mr=4):
    return Record(task=task, config={"s": {"mr": mr}}, seconds=seconds, error=error)


def test_append_read_back_and_best(tmp_path):
    path = str(tmp_path / "log.jsonl")
    db = Database(path)
    db.append(_record(seconds=2.0, mr=2))
    db.append(_record(seconds=0.5, mr=8))
    db.append(_record(seconds=None, error="crashed: exit code -11", mr=16))
    db.append(_record(task="other", seconds=0.1))
    again = Database(path)
    assert again.problems == []
    assert len(again.records("wl")) == 3
    assert again.best("wl").config == {"s": {"mr": 8}}
    assert again.best("missing") is None
    assert [r.error for r in again.records("wl") if not r.ok] == ["crashed: exit code -11"]
    with open(path) as file:
        assert all(json.loads(line) for line in file)


def test_best_prefers_the_records_of_the_threads_compiled_for(tmp_path):
    """A log of one-thread and two-thread runs: a compile for two threads takes the best
    two-thread record, even when a one-thread record is faster; for a thread count the
    log never measured, the best of all."""
    db = Database(str(tmp_path / "log.jsonl"))
    for threads, seconds, mr in ((1, 0.4, 2), (1, 0.9, 4), (2, 0.6, 8), (2, 0.5, 16)):
        db.append(Record(task="wl", config={"s": {"mr": mr}}, seconds=seconds, threads=threads))
    assert db.best("wl").config == {"s": {"mr": 2}}
    assert db.best("wl", threads=1).config == {"s": {"mr": 2}}
    assert db.best("wl", threads=2).config == {"s": {"mr": 16}}
    assert db.best("wl", threads=4).config == {"s": {"mr": 2}}


def test_torn_last_line_and_corrupt_lines_are_reported_and_skipped(tmp_path):
    path = tmp_path / "log.jsonl"
    db = Database(str(path))
    db.append(_record(seconds=1.0))
    with open(path, "a") as file:
        file.write("not json\n")
        file.write('{"task": 3, "config": {}}\n')
        file.write('{"task": "wl", "config": {"s": {"mr": 2}}, "seconds": 0.2')  # torn by a kill
    db = Database(str(path))
    assert [n for n, _ in db.problems] == [2, 3, 4]
    assert "torn" in db.problems[-1][1]
    assert len(db.records()) == 1
    db.append(_record(seconds=0.3, mr=6))  # starts on a new line after the torn one
    db = Database(str(path))
    assert [n for n, _ in db.problems] == [2, 3, 4]
    assert db.best("wl").config == {"s": {"mr": 6}}


def test_compilation_applies_the_best_record(tmp_path):
    from strato.autotuning.task import kernel_of
    from strato.schedule.knobs import TuningLog
    from strato.targets.registry import get_target
    from strato.transforms.schedule_default import KNOBS_ATTR, schedule_kernel

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    space = SearchSpace(task)
    default = space.default()
    stage = space.dims[0][0]
    # a config one knob away from the default
    chosen = next(c for c in space.neighbours(default) if space.check(c) is None)
    path = str(tmp_path / "log.jsonl")
    db = Database(path)
    db.append(Record(task=task.key, config=default, seconds=2.0))
    db.append(Record(task=task.key, config=chosen, seconds=1.0))

    def knobs(tuning_log=None):
        module, _ = task.loop_module()
        context = task.schedule_context().with_knobs(TuningLog(tuning_log) if tuning_log else None)
        schedule_kernel(module, task.kernel, context)
        attrs = kernel_of(module, task.kernel).attributes[KNOBS_ATTR].data[stage].data
        return {k: bool(v.value.data) if isinstance(default[stage][k], bool) else v.value.data
                for k, v in attrs.items()}

    assert knobs() == default[stage]
    assert knobs(path) == chosen[stage]
    # what strato.compile(model, tuning=path) gives the llvm target's schedule stage
    (schedule,) = [
        p for s in get_target("llvm").stages(tuning_log=path) for p in s.passes
        if p.name == "schedule-default"
    ]
    assert schedule.context().knobs == TuningLog(path)


def test_pass_option_reads_the_log(tmp_path):
    from strato.autotuning.task import kernel_of
    from strato.context import make_context
    from strato.frontends.onnx import import_onnx
    from strato.pipeline import run_pipeline
    from strato.transforms.schedule_default import KNOBS_ATTR

    model = gemm_model(16, 32, 24)
    (task,) = extract_tasks(model)
    space = SearchSpace(task)
    stage, knob, _ = space.dims[0]
    chosen = next(
        c for c in space.neighbours(space.default())
        if c[stage][knob] != space.default()[stage][knob] and space.check(c) is None
    )
    path = str(tmp_path / "log.jsonl")
    Database(path).append(Record(task=task.key, config=chosen, seconds=1.0))
    imported = import_onnx(model)
    pipeline = ("graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops,"
                f'schedule-default{{tuning_log="{path}"}}')
    run_pipeline(make_context(), imported.module, pipeline)
    attrs = kernel_of(imported.module, task.kernel).attributes[KNOBS_ATTR].data[stage].data
    assert attrs[knob].value.data == chosen[stage][knob]


def test_stale_record_keeps_only_knob_values_that_still_apply(tmp_path):
    from strato.schedule.knobs import TuningLog

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    space = SearchSpace(task)
    stage, knob, domain = space.dims[0]
    _, other, other_domain = space.dims[1]
    stale = {stage: {knob: "gone", other: other_domain[0], "removed_knob": 3}}
    path = str(tmp_path / "log.jsonl")
    Database(path).append(Record(task=task.key, config=stale, seconds=1.0))
    module, _ = task.loop_module()
    knobs = TuningLog(path).config(module, task.kernel, task.schedule_context())
    assert knobs == {stage: {other: other_domain[0]}}


def test_a_tuned_record_holds_its_trace_threads_and_versions(tmp_path):
    """Each record of a tuning run holds the schedule it measured as a trace, which
    replays on a fresh copy of the kernel to the program its config schedules, the
    threads it ran on and the versions that built it."""
    import llvmlite.binding as llvm

    import strato
    from strato.autotuning.task import kernel_of
    from strato.autotuning.tuner import tune_model
    from strato.schedule import Schedule
    from strato.schedule.trace import Trace

    model = gemm_model(16, 32, 24)
    (task,) = extract_tasks(model)
    log = str(tmp_path / "log.jsonl")
    tune_model(model, trials=2, log=log, search="random", repeats=1, batch=2, seed=3)
    records = Database(log).records(task.key)
    assert len(records) == 2 and all(r.ok for r in records)
    for record in records:
        assert record.threads == 1
        versions = record.versions
        assert versions["strato"] == strato.__version__ and versions["xdsl"] and versions["llvmlite"]
        assert versions["llvm"] == ".".join(map(str, llvm.llvm_version_info))
        trace = Trace.from_dict(record.trace)
        assert trace.kernel == task.kernel and trace.steps
        fresh, _ = task.kernel_module()
        replayed = trace.replay(Schedule(fresh, kernel=task.kernel)).kernel
        expected = SearchSpace(task).schedule(record.config)[1]
        for kernel in (replayed, expected):  # what schedule-default records beside the loops
            for attribute in [a for a in kernel.attributes if a.startswith("schedule.")]:
                del kernel.attributes[attribute]
        assert str(replayed) == str(expected)
        assert kernel_of(fresh, task.kernel) is not None


def test_records_with_a_bad_trace_or_threads_are_corrupt_and_old_ones_have_no_versions(tmp_path):
    path = tmp_path / "log.jsonl"
    with open(path, "w") as file:
        file.write('{"task": "wl", "config": {}, "seconds": 1.0}\n')
        file.write('{"task": "wl", "config": {}, "seconds": 1.0, "trace": "steps"}\n')
        file.write('{"task": "wl", "config": {}, "seconds": 1.0, "threads": 0}\n')
        file.write('{"task": "wl", "config": {}, "seconds": 1.0, "versions": [1]}\n')
    db = Database(str(path))
    assert [n for n, _ in db.problems] == [2, 3, 4]
    (old,) = db.records()
    assert old.versions == {} and old.trace is None and old.threads == 1
