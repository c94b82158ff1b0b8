"""Measurement in workers: a crash, a hang, an error or a wrong result loses one candidate."""

import os
import time

import numpy as np
import pytest

from strato.autotuning.measure import WorkerPool, measure
from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(workers=2, timeout=60) as pool:
        yield pool


def test_crash_hang_and_error_lose_only_their_job(pool):
    jobs = [
        (abs, (-3,)),
        (os._exit, (7,)),          # a worker that dies
        (time.sleep, (30,)),       # a worker that hangs
        (int, ("not a number",)),  # a job that raises
        (max, (4, 9)),
    ]
    start = time.monotonic()
    outcomes = pool.run(jobs, timeout=3)
    assert time.monotonic() - start < 25
    assert [o.value for o in outcomes] == [3, None, None, None, 9]
    assert outcomes[1].error == "crashed: exit code 7"
    assert outcomes[2].error == "timeout after 3 s"
    assert outcomes[3].error.startswith("ValueError: invalid literal")
    assert pool.run([(abs, (-1,))]) [0].value == 1  # replaced workers still serve


def test_candidates_measured_checked_and_wrong_results_rejected(pool):
    (task,) = extract_tasks(gemm_model(16, 32, 24))
    space = SearchSpace(task)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 32)).astype(np.float32)
    reference = [a @ b]
    wrong = [a @ b + 1.0]
    stage, knob, domain = space.dims[0]
    bad = {stage: {knob: "no such value"}}
    good, invalid = measure(pool, task, [space.default(), bad], reference, repeats=3)
    assert good.ok and good.seconds > 0 and len(good.costs) == 3
    assert not invalid.ok and "invalid config" in invalid.error
    (rejected,) = measure(pool, task, [space.default()], wrong, repeats=1)
    assert rejected.error.startswith("WrongResult: output 0 differs")


def test_candidates_run_on_the_threads_asked_for(pool):
    from strato.autotuning.measure import isolated_kernel

    (task,) = extract_tasks(gemm_model(128, 128, 128))
    serial = isolated_kernel(task, task.default_config(), threads=1)
    parallel = isolated_kernel(task, task.default_config(), threads=2)
    assert "strato_parallel_for" not in serial.kernel.imports
    assert "strato_parallel_for" in parallel.kernel.imports
    assert (serial.threads, parallel.threads) == (1, 2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    (result,) = measure(pool, task, [task.default_config()], [a @ b], repeats=2, threads=2)
    assert result.ok and len(result.costs) == 2 and result.seconds > 0


def test_a_kernel_is_measured_alone(pool):
    """A conv layer's kernel is compiled alone (with any constant it reads), and its
    unscheduled outputs on the seeded buffers are the reference its schedules match."""
    from strato.autotuning.measure import isolated_kernel, reference_outputs
    from strato.autotuning.testing import conv_model

    tasks = extract_tasks(conv_model(8, 16, 16, 3, 1))
    task = next(t for t in tasks if "conv" in t.name)
    built = isolated_kernel(task, task.default_config())
    assert built.kernel.kernel == task.kernel and built.target == task.target
    assert built.kernel.code.startswith(b"\x7fELF")
    assert sum(is_output for _, _, is_output in built.kernel.buffers) >= 1
    reference = reference_outputs(task)
    assert reference and all(np.isfinite(r).all() and np.abs(r).max() > 0 for r in reference)
    (result,) = measure(pool, task, [task.default_config()], reference, repeats=2)
    assert result.ok, result.error


def test_a_worker_is_sent_a_model_once_and_keeps_it():
    from operator import attrgetter

    from strato.autotuning.measure import _compact, _TaskRef

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    sent: set[str] = set()
    _, (first,) = _compact((attrgetter("model"), (task,)), sent)
    _, (second,) = _compact((attrgetter("model"), (task,)), sent)
    assert first is task and isinstance(second, _TaskRef) and second.task.model == b""
    with WorkerPool(workers=1, timeout=60) as one:
        jobs = [(attrgetter("model"), (task,)), (attrgetter("model", "key"), (task,))] * 2
        outcomes = one.run(jobs)
    assert [o.error for o in outcomes] == [None] * 4
    assert outcomes[0].value == outcomes[2].value == task.model
    assert outcomes[1].value == outcomes[3].value == (task.model, task.key)


def test_a_candidates_buffers_are_aligned_as_in_a_models_arena():
    """Every buffer a candidate runs on starts on a 64-byte boundary, as every tensor of
    a model's arena does: where numpy happened to place a buffer moved a vectorized
    convolution's time by about 10%."""
    from strato.autotuning.measure import _kernel_buffers

    buffers = [((3, 5), np.dtype(np.float32), False), ((7,), np.dtype(np.int64), False),
               ((2, 9), np.dtype(np.float32), True), ((4,), np.dtype(np.bool_), False)]  # fmt: skip
    arrays, outputs = _kernel_buffers(buffers, seed=0)
    assert outputs == [2]
    for array, (shape, dtype, is_output) in zip(arrays, buffers, strict=True):
        assert array.ctypes.data % 64 == 0
        assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous
        assert not is_output or not array.any()
    again, _ = _kernel_buffers(buffers, seed=0)
    for a, b in zip(arrays, again, strict=True):
        np.testing.assert_array_equal(a, b)


# -- building and timing overlapped ------------------------------------------------------------
# Stand-ins for the builders' and the runner's jobs (module-level: workers import them):
# each records when it started and ended in the directory the config names.


def _stamp(directory: str, name: str) -> None:
    with open(os.path.join(directory, name), "w") as f:
        f.write(repr(time.monotonic()))


def _read_stamp(directory, name: str) -> float:
    return float((directory / name).read_text())


def _fake_build(task, config, threads):
    directory, index, fate = config["dir"], config["index"], config.get("fate")
    _stamp(directory, f"build-{index}-start")
    if fate == "build-crash":
        os._exit(3)
    if fate == "build-hang":
        time.sleep(60)
    if fate == "build-error":
        raise ValueError("invalid config: on purpose")
    time.sleep(0.2)
    _stamp(directory, f"build-{index}-end")
    return config


def _fake_time(built, reference, repeats, seed, rtol, threads):
    directory, index, fate = built["dir"], built["index"], built.get("fate")
    _stamp(directory, f"time-{index}-start")
    if fate == "run-crash":
        os._exit(4)
    time.sleep(0.6)
    _stamp(directory, f"time-{index}-end")
    return [float(index + 1)] * repeats


def test_the_next_candidates_build_while_one_is_timed(tmp_path):
    from strato.autotuning.measure import MeasurePool

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    configs = [{"dir": str(tmp_path), "index": i} for i in range(4)]
    with MeasurePool(1, 30, build=_fake_build, time=_fake_time, overlap=True) as pool:
        results = measure(pool, task, configs, [], repeats=2)
    assert [r.seconds for r in results] == [1.0, 2.0, 3.0, 4.0]
    for i in range(3):
        # candidate i+1 was built while candidate i was being timed
        assert _read_stamp(tmp_path, f"build-{i + 1}-start") < _read_stamp(tmp_path, f"time-{i}-end")
        assert _read_stamp(tmp_path, f"build-{i}-end") <= _read_stamp(tmp_path, f"time-{i}-start")


@pytest.mark.parametrize("threads, overlap", [(2, True), (1, False)])
def test_a_candidate_is_timed_while_nothing_builds(tmp_path, threads, overlap):
    """By default, and on more than one thread even with overlap."""
    from strato.autotuning.measure import MeasurePool

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    configs = [{"dir": str(tmp_path), "index": i} for i in range(3)]
    with MeasurePool(1, 30, build=_fake_build, time=_fake_time, overlap=overlap) as pool:
        results = pool.measure(task, configs, [], 1, 0, threads=threads)
    assert [r.value.costs for r in results] == [[1.0], [2.0], [3.0]]
    spans = {
        (kind, i): (_read_stamp(tmp_path, f"{kind}-{i}-start"), _read_stamp(tmp_path, f"{kind}-{i}-end"))
        for kind in ("build", "time") for i in range(3)
    }  # fmt: skip
    for i in range(3):
        start, end = spans["time", i]
        for j in range(3):
            b_start, b_end = spans["build", j]
            assert b_end <= start or b_start >= end, (i, j)


def test_a_crash_or_hang_when_built_or_timed_loses_only_that_candidate(tmp_path):
    from strato.autotuning.measure import MeasurePool

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    fates = [None, "build-crash", None, "run-crash", "build-hang", "build-error", None]
    configs = [{"dir": str(tmp_path), "index": i, "fate": f} for i, f in enumerate(fates)]
    # a bound well above what a sound candidate takes (0.8 s) on a loaded machine: only
    # the hang may reach it
    with MeasurePool(1, 8, build=_fake_build, time=_fake_time) as pool:
        results = measure(pool, task, configs, [], repeats=1)
    assert [r.seconds for r in results] == [1.0, None, 3.0, None, None, None, 7.0]
    assert results[1].error == "crashed: exit code 3"
    assert results[3].error == "crashed: exit code 4"
    assert results[4].error == "timeout after 8 s"
    assert results[5].error == "ValueError: invalid config: on purpose"


def test_the_measure_pool_builds_checks_and_times_real_candidates():
    from strato.autotuning.measure import MeasurePool

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    space = SearchSpace(task)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 32)).astype(np.float32)
    stage, knob, _ = space.dims[0]
    bad = {stage: {knob: "no such value"}}
    with MeasurePool(1, 60) as pool:
        from strato.autotuning.measure import reference_outputs

        (reference,) = pool.run([(reference_outputs, (task, 0))])
        assert reference.error is None
        good, invalid, again = measure(pool, task, [space.default(), bad, space.default()],
                                       reference.value, repeats=3)
        (wrong,) = measure(pool, task, [space.default()], [x + 1.0 for x in reference.value], repeats=1)
        (parallel,) = measure(pool, task, [space.default()], reference.value, repeats=2, threads=2)
    assert good.ok and again.ok and len(good.costs) == 3 and good.seconds > 0
    assert not invalid.ok and "invalid config" in invalid.error
    assert wrong.error.startswith("WrongResult: output 0 differs")
    assert parallel.ok and len(parallel.costs) == 2
