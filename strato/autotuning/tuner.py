"""Tuning a model: its tasks, a trial budget shared by their time, a log to resume from.

    results = tune_model(onnx_model, trials=64, log="tuning.jsonl")     # XGBoost-guided
    results = tune_model(onnx_model, trials=64, log=..., search="random")
    strato.compile(model, tuning="tuning.jsonl") then uses the best records.

Each task's first candidate is its default config (the baseline); when the budget
gives every task one, every task's first candidate is measured before the rest of the
budget is shared by the tasks' measured share of the model's time. Records already in the
log for a task count as its trials and train the model, so a killed run resumes where it
stopped; records of other tasks start the cost model (transfer). A failed candidate is
recorded with its reason and the search goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from strato.autotuning.features import FEATURE_VERSION, kernel_features
from strato.autotuning.measure import (
    DaskPool,
    DevicePool,
    ForeignCode,
    MeasurePool,
    WorkerPool,
    measure,
    task_reference,
)
from strato.autotuning.search import GridSearch, ModelSearch, RandomSearch, Search
from strato.autotuning.space import InvalidConfig, Point, SearchSpace
from strato.autotuning.task import DEFAULT_TARGET, Task, extract_tasks
from strato.schedule.database import Database, Record, record_target

SEARCHES = ("xgb", "random", "grid")


@cache
def versions() -> tuple[tuple[str, str], ...]:
    """The versions a measurement depends on (what built the code it timed)."""
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite.binding as llvm

    import strato

    found = {"strato": strato.__version__}
    for package in ("xdsl", "llvmlite"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "unknown"
    found["llvm"] = ".".join(str(part) for part in llvm.llvm_version_info)
    return tuple(found.items())


@dataclass
class TuneResult:
    task: Task
    trials: int = 0
    best: Record | None = None
    default: Record | None = None
    history: list[float] = field(default_factory=list)
    """Best GFLOP/s so far after each trial (0 until one succeeds)."""
    failures: int = 0
    seconds: float = 0.0

    @property
    def best_gflops(self) -> float:
        return self.history[-1] if self.history else 0.0

    @property
    def default_gflops(self) -> float | None:
        return self.default.gflops if self.default is not None else None


@dataclass
class Progress:
    task: Task
    trials: int
    budget: int
    best_gflops: float
    rate: float
    """Measurements per second."""
    remaining: float
    """Estimated seconds left for this task."""


def make_search(name: str, space: SearchSpace, seed: int, db: Database | None) -> Search:
    """The search `name` over `space` (an XGBoost one starts from what the other tasks'
    records in `db` teach)."""
    if name == "random":
        return RandomSearch(space, seed)
    if name == "grid":
        return GridSearch(space, seed)
    if name != "xgb":
        raise ValueError(f"unknown search {name!r} (one of {', '.join(SEARCHES)})")

    def featurize(point: Point) -> np.ndarray | None:
        try:
            _, kernel = space.schedule(space.config(point))
        except InvalidConfig:
            return None
        return kernel_features(kernel)

    transfer = (
        db.training_data(FEATURE_VERSION, exclude=space.task.key, device=space.task.device)
        if db is not None else None
    )
    return ModelSearch(space, featurize, seed=seed, transfer=transfer)


def tune_task(
    task: Task,
    trials: int,
    db: Database,
    pool: MeasurePool | WorkerPool | DaskPool | DevicePool,
    search: str = "xgb",
    batch: int = 8,
    repeats: int = 5,
    seed: int = 0,
    progress: Callable[[Progress], None] | None = None,
    threads: int = 1,
    default_first: bool = True,
) -> TuneResult:
    """Measure up to `trials` candidates of `task` in all (its earlier records included),
    each on `threads` threads; the first is the default config unless not
    `default_first` (a search from scratch, as when comparing searches)."""
    start = time.perf_counter()
    space = SearchSpace(task, threads)
    strategy = make_search(search, space, seed, db)
    result = TuneResult(task)
    best_gflops = 0.0
    default_point = space.point(space.default())

    def account(record: Record, point: Point | None) -> None:
        nonlocal best_gflops
        result.trials += 1
        if record.ok:
            if result.best is None or record.seconds < result.best.seconds:  # type: ignore[operator]
                result.best = record
            best_gflops = max(best_gflops, record.gflops or 0.0)
        else:
            result.failures += 1
        if point == default_point and result.default is None:
            result.default = record
        result.history.append(best_gflops)

    earlier_points, earlier_costs = [], []
    for record in db.records(task.key, task.device):
        try:
            point = space.point(record.config)
        except InvalidConfig:
            continue
        if point in earlier_points:
            continue
        earlier_points.append(point)
        earlier_costs.append(record.seconds if record.ok else None)
        account(record, point)
    if earlier_points:
        strategy.update(earlier_points, earlier_costs)

    reference = None
    while result.trials < trials and not strategy.exhausted:
        count = min(batch, trials - result.trials)
        if default_first and default_point not in strategy.measured:
            points = [default_point] + [
                p for p in strategy.propose(count) if p != default_point
            ][: count - 1]
        else:
            points = strategy.propose(count)
        if not points:
            break
        if reference is None:
            reference = task_reference(pool, task, seed)
        configs = [space.config(p) for p in points]
        measured = measure(
            pool, task, configs, reference, repeats=repeats, seed=seed, threads=threads
        )
        costs = []
        for point, outcome in zip(points, measured, strict=True):
            features = None
            if isinstance(strategy, ModelSearch):
                vector = strategy.features(point)
                features = None if vector is None else [float(x) for x in vector]
            record = Record(
                task=task.key, name=task.name, config=outcome.config, seconds=outcome.seconds,
                costs=outcome.costs, error=outcome.error, flops=task.flops, features=features,
                features_version=FEATURE_VERSION, trace=outcome.trace, threads=threads,
                versions=dict(versions()), target=record_target(task.device),
            )
            db.append(record)
            account(record, point)
            costs.append(outcome.seconds if outcome.ok else None)
        strategy.update(points, costs)
        if progress is not None:
            elapsed = time.perf_counter() - start
            rate = result.trials / elapsed if elapsed > 0 else 0.0
            left = (trials - result.trials) / rate if rate > 0 else 0.0
            progress(Progress(task, result.trials, trials, best_gflops, rate, left))
    result.seconds = time.perf_counter() - start
    return result


def share_trials(tasks: list[Task], trials: int, seconds: list[float | None] | None = None) -> list[int]:
    """Split exactly `trials` measurements across tasks by their share of the model's time.

    A task's time is `seconds` (a call of its kernel, as measured) times how often the
    model runs it; without `seconds`, or for a task whose measurement failed, its work
    (flops) at the seconds per flop of the others stands in. Every task gets at least one
    (its default config, the baseline) when the budget allows; a budget below one per
    task goes to the tasks with the most work, one each, and the others keep their
    default schedules. The rest is shared by time, largest remainders first, so the
    shares add up to `trials` and a comparison at equal trials is exact."""
    work = [max(t.flops * t.weight, 1.0) for t in tasks]
    if trials <= len(tasks):
        heaviest = set(sorted(range(len(tasks)), key=lambda i: -work[i])[: max(trials, 0)])
        return [1 if i in heaviest else 0 for i in range(len(tasks))]
    if seconds is not None:
        rates = sorted(s / max(t.flops, 1.0) for s, t in zip(seconds, tasks, strict=True) if s)
        rate = rates[len(rates) // 2] if rates else 1.0
        work = [
            (s if s else rate * max(t.flops, 1.0)) * t.weight
            for s, t in zip(seconds, tasks, strict=True)
        ]
    spare, total = trials - len(tasks), sum(work)
    exact = [spare * w / total for w in work]
    shares = [1 + int(e) for e in exact]
    by_remainder = sorted(range(len(tasks)), key=lambda i: int(exact[i]) - exact[i])
    for i in by_remainder[: trials - sum(shares)]:
        shares[i] += 1
    return shares


def task_seconds(db: Database, task: Task) -> float | None:
    """A call of the task's kernel as its default config measured (else its fastest
    record); None before any record succeeded."""
    records = [r for r in db.records(task.key, task.device) if r.ok]
    default = task.default_config()
    for record in records:
        if record.config == default:
            return record.seconds
    return min((r.seconds for r in records), default=None)  # type: ignore[type-var]


def _device_of(target: str) -> str:
    """The machine `target` builds for when its code does not run here (else "")."""
    from strato.targets.registry import get_target

    builder = get_target(target).kernel_builder()
    return "" if builder is None or builder.runs_here() else (builder.device() or target)


def tune_model(
    model,
    trials: int,
    log: str,
    search: str = "xgb",
    workers: int = 1,
    timeout: float = 60.0,
    batch: int = 8,
    repeats: int = 5,
    seed: int = 0,
    task_filter: Callable[[Task], bool] | None = None,
    progress: Callable[[Progress], None] | None = None,
    name: str = "model",
    dask=None,
    threads: int = 1,
    default_first: bool = True,
    overlap: bool = False,
    target: str = DEFAULT_TARGET,
    emulate: bool = False,
) -> list[TuneResult]:
    """Tune every task of `model` for `target` (see the module docstring); `dask`: a
    scheduler address or a `distributed.Client` to measure on instead of local worker
    processes; `default_first=False`: the searches start from scratch (see `tune_task`);
    `overlap`: local builds run while a candidate is timed (`MeasurePool`).

    A target for another system (`llvm -mtriple=aarch64-linux-gnu`) is measured on its
    device: candidates are built here and timed by the Dask workers that run that
    system's code (`DevicePool`: `strato worker` on the device, or one emulating it);
    without `dask`, `emulate` times them here under qemu-user (times of the emulator,
    not of the device). Records are tagged with the device they were measured on."""
    tasks = [
        t for t in extract_tasks(model, name, target) if task_filter is None or task_filter(t)
    ]
    db = Database(log)
    results = []
    device = _device_of(target)
    if device and dask is None and not emulate:
        raise ForeignCode(
            f"measuring code for {device} needs that device: give the address of a Dask "
            "scheduler with a worker started on it (strato worker ADDRESS), or emulate it here (--emulate)"
        )
    if device and dask is not None:
        pool_of = DevicePool(dask, workers, timeout)
    elif dask is not None:
        pool_of = DaskPool(dask, timeout)
    else:
        pool_of = MeasurePool(workers, timeout, overlap=overlap, emulate=bool(device) and emulate)
    with pool_of as pool:
        if isinstance(pool, DevicePool):
            pool.check(target, threads)

        def tune(task: Task, budget: int) -> TuneResult:
            return tune_task(
                task, budget, db, pool, search, batch, repeats, seed, progress, threads,
                default_first,
            )

        first: dict[str, float] = {}
        if len(tasks) > 1 and trials > len(tasks):
            # every task's first candidate (its default) before the rest is shared: how
            # long the kernel takes, times how often it runs, is its share of the time
            first = {task.key: tune(task, 1).seconds for task in tasks}
            shares = share_trials(tasks, trials, [task_seconds(db, t) for t in tasks])
        else:
            shares = share_trials(tasks, trials)
        for task, budget in zip(tasks, shares, strict=True):
            if budget == 0:  # below one trial per task: this one keeps its default schedule
                results.append(TuneResult(task))
                continue
            result = tune(task, budget)
            result.seconds += first.get(task.key, 0.0)
            results.append(result)
    return results
