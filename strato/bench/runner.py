"""Running `strato bench`: each workload compiled by strato and prepared by every peer,
outputs checked against each peer, then timed at every thread count, sides interleaved.

    result = run_bench(workloads, [OnnxRuntime(), TvmRelax(2)], BenchOptions(threads=[1, 2]))

How one workload is measured at one thread count: every side runs once (the warm-up,
whose outputs are checked against strato's), then in rounds every side runs once more
until it has `repeat` timings, or at least MIN_SAMPLES of them adding up to `seconds`.
A side whose warm-up alone took longer than `seconds` is not called again: the warm-up
is its one timing (untuned TVM takes seconds per ResNet-18 call). Latency is wall-clock
time per call; the median is reported.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import median
from types import SimpleNamespace

import numpy as np
import onnx

from strato.bench.peers import Prepared, Run, Side, Strato
from strato.bench.workloads import Workload, dense_flops

MIN_SAMPLES = 3


@dataclass
class BenchOptions:
    threads: list[int]
    repeat: int = 30
    """Most timed calls per side and thread count."""
    seconds: float = 1.5
    """Time budget per side and thread count, once MIN_SAMPLES calls are timed."""
    rtol: float = 1e-3
    """Largest max |strato - peer| / max |peer| that counts as agreement."""
    seed: int = 0


@dataclass
class Measurement:
    side: str
    threads: int
    samples_ms: list[float]

    @property
    def median_ms(self) -> float:
        return median(self.samples_ms)


@dataclass
class Check:
    """strato's outputs against one peer's at one thread count."""

    peer: str
    threads: int
    max_relative_error: float | None
    problem: str | None
    """Why the outputs cannot be compared (count, shape), or None."""
    ok: bool


@dataclass
class WorkloadResult:
    name: str
    kind: str
    flops: float | None
    compile_seconds: dict[str, float] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    """side -> one line saying what failed (compile, run)."""
    measurements: list[Measurement] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    def measurement(self, side: str, threads: int) -> Measurement | None:
        for entry in self.measurements:
            if entry.side == side and entry.threads == threads:
                return entry
        return None

    def check(self, peer: str, threads: int) -> Check | None:
        for entry in self.checks:
            if entry.peer == peer and entry.threads == threads:
                return entry
        return None


Progress = Callable[[str], None]
"""Told what starts next (one step of `steps(...)`)."""


def steps(workloads: Sequence[Workload], options: BenchOptions) -> int:
    """How many progress steps run_bench reports: preparing each workload, then each
    of its thread counts."""
    return len(workloads) * (1 + len(options.threads))


def run_bench(
    workloads: Sequence[Workload],
    peers: Sequence[Side],
    options: BenchOptions,
    *,
    strato: Side | None = None,
    progress: Progress | None = None,
    on_result: Callable[[WorkloadResult], None] | None = None,
) -> list[WorkloadResult]:
    """Measure every workload with strato and each peer that applies to it."""
    strato = strato or Strato()
    results = []
    for workload in workloads:
        result = bench_workload(workload, strato, peers, options, progress or (lambda _: None))
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def seeded_inputs(model: onnx.ModelProto, seed: int) -> list[np.ndarray]:
    """Inputs for the model's graph inputs, drawn as `strato run` draws them."""
    from strato.diagnostics import StratoError
    from strato.runtime.signature import random_inputs

    initializers = {init.name for init in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = tensor.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            raise StratoError(f"input '{value.name}' has a symbolic shape; the bench needs static shapes")
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        specs.append(SimpleNamespace(shape=tuple(d.dim_value for d in dims), dtype=dtype))
    return random_inputs(SimpleNamespace(inputs=specs), seed)


def one_line(error: BaseException) -> str:
    from strato.diagnostics import StratoError

    if isinstance(error, StratoError):
        text = f"{error.location}: {error.message}" if error.location else str(error.message)
    else:
        frame = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
        where = f" (at {frame[0].filename.rsplit('/', 1)[-1]}:{frame[0].lineno})" if frame else ""
        text = f"{type(error).__name__}: {error}{where}"
    return " ".join(text.split())[:400]


def bench_workload(
    workload: Workload, strato: Side, peers: Sequence[Side], options: BenchOptions, progress: Progress
) -> WorkloadResult:
    progress(f"{workload.name}: building and compiling")
    model = workload.build()
    flops = workload.flops if workload.flops is not None else dense_flops(model)
    result = WorkloadResult(workload.name, workload.kind, flops)
    inputs = seeded_inputs(model, options.seed)
    prepared: dict[str, Prepared] = {}
    for side in [strato, *(peer for peer in peers if peer.applies_to(workload))]:
        try:
            prepared[side.name] = side.prepare(model, inputs)
        except Exception as error:  # noqa: BLE001 - a side that fails is reported, not fatal
            result.failures[side.name] = f"compile: {one_line(error)}"
            if side is strato:
                break  # nothing to compare the peers with
            continue
        result.compile_seconds[side.name] = prepared[side.name].compile_seconds
        if prepared[side.name].cache_hit_seconds is not None:
            result.compile_seconds[f"{side.name} cache hit"] = prepared[side.name].cache_hit_seconds
    for threads in options.threads:
        progress(f"{workload.name}: timing at {threads} thread(s)")
        if strato.name not in prepared:
            continue
        measure_at(result, prepared, threads, options, strato.name)
    return result


def measure_at(
    result: WorkloadResult, prepared: dict[str, Prepared], threads: int,
    options: BenchOptions, reference: str,
) -> None:  # fmt: skip
    with contextlib.ExitStack() as stack:
        runs: dict[str, Run] = {}
        warmup_seconds: dict[str, float] = {}
        outputs: dict[str, list[np.ndarray]] = {}
        for name, side in prepared.items():
            if name in result.failures:
                continue
            try:
                run = stack.enter_context(side.using_threads(threads))
                start = time.perf_counter()
                outputs[name] = [np.asarray(array) for array in run()]
                warmup_seconds[name] = time.perf_counter() - start
            except Exception as error:  # noqa: BLE001
                result.failures[name] = f"run at {threads} thread(s): {one_line(error)}"
                continue
            runs[name] = run
        if reference not in outputs:
            return
        for name in outputs:
            if name != reference:
                result.checks.append(check_outputs(name, threads, outputs[reference], outputs[name], options.rtol))
        outputs.clear()
        samples = time_interleaved(runs, warmup_seconds, options)
        for name, times in samples.items():
            result.measurements.append(Measurement(name, threads, times))


def time_interleaved(
    runs: dict[str, Run], warmup_seconds: dict[str, float], options: BenchOptions
) -> dict[str, list[float]]:
    """Milliseconds per call of each side, in rounds of one call per side (once the
    compile cache's background writes are done)."""
    from strato.runtime.cache import wait_for_writes

    wait_for_writes()
    slow = {name for name in runs if warmup_seconds[name] > options.seconds}
    wanted = {name: options.repeat for name in runs if name not in slow}
    # A call longer than the whole budget is timed once, by its warm-up: first-call
    # costs are small next to it, and untuned TVM takes many seconds a call.
    samples: dict[str, list[float]] = {name: [warmup_seconds[name] * 1e3] for name in slow}
    runs = {name: run for name, run in runs.items() if name not in slow}
    samples.update({name: [] for name in runs})
    spent = dict.fromkeys(runs, 0.0)

    def done(name: str) -> bool:
        taken = samples[name]
        if len(taken) >= wanted[name]:
            return True
        return len(taken) >= min(MIN_SAMPLES, wanted[name]) and spent[name] >= options.seconds

    while not all(done(name) for name in runs):
        for name, run in runs.items():
            if done(name):
                continue
            start = time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            spent[name] += elapsed
            samples[name].append(elapsed * 1e3)
    return samples


def check_outputs(
    peer: str, threads: int, ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray], rtol: float
) -> Check:
    if len(ours) != len(theirs):
        return Check(peer, threads, None, f"{len(ours)} output(s) against {len(theirs)}", False)
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if a.shape != b.shape:
            return Check(
                peer, threads, None, f"output {index}: shape {list(a.shape)} against {list(b.shape)}", False
            )
    error = max_relative_error(ours, theirs)
    return Check(peer, threads, error, None, error <= rtol)


def max_relative_error(ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray]) -> float:
    """max |ours - theirs| / max |theirs| over the outputs; NaN where the other side has
    a number (or the reverse) is an infinite error, NaN on both sides agrees."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        a = a.astype(np.float64)
        b = b.astype(np.float64)
        a_nan, b_nan = np.isnan(a), np.isnan(b)
        if np.any(a_nan != b_nan):
            return float("inf")
        if a.size == 0:
            continue
        a = np.where(a_nan, 0.0, a)
        b = np.where(b_nan, 0.0, b)
        with np.errstate(invalid="ignore"):
            diff = np.abs(a - b)
            # the same infinity on both sides agrees
            diff = np.where(a == b, 0.0, diff)
        largest = float(np.max(diff))
        if largest == 0.0:
            continue
        scale = float(np.max(np.abs(b)))
        worst = max(worst, largest / scale if 0.0 < scale < float("inf") else float("inf"))
    return worst
