"""Measuring candidates in worker processes that may crash, hang or be wrong.

    with MeasurePool(builders=1, timeout=30) as pool:
        results = measure(pool, task, [config, ...], reference, repeats=5)   # [MeasureResult]

A worker is a spawned process that receives (function, arguments), runs it and sends
back its value or the error (`WorkerPool`). A worker that dies (a crash in compiled code,
an exit) or does not answer within the timeout is killed and replaced; the job it held is
lost with the reason (`crashed: exit code -11`, `timeout after 30 s`) and the other jobs
go on.

A candidate is measured in isolation, in two jobs. A builder (`build_candidate`)
rebuilds the task's loop-level kernel from the task's model, alone in a module (with the
constants it reads; built once per task and worker, `Task.kernel_module`), schedules a
copy of it with the config (which also checks the config) and compiles it to object code.
The runner (`time_built`) loads that code, calls it on buffers drawn from a fixed seed
(64-byte aligned, as in a model's arena), checks its outputs against the reference (the
same kernel without a schedule, computed once per task in a worker too) and times
`repeats` repeats after a warm-up, each of as many calls as last `MIN_REPEAT_SECONDS`
(CPU time of the runner's thread on one thread, wall time on more); the result is the
median of the repeats' seconds a call. The rest of the model neither runs nor adds its
noise. `MeasurePool` builds a batch on its builders, in parallel, and times each built
candidate while nothing builds; with `overlap=True` (one thread a candidate) it keeps
builders and the runner busy at once, so building the next candidates overlaps timing
this one. Overlap is off by default: on this project's 2-vCPU machines a build beside a
timing slowed the timed kernel by up to 1.6x (the same config timed 16 times: spread
21% of the median overlapped, 0.8% alone), which is the size of the differences a
search has to see; turn it on where the builders have cores to themselves. A Dask
worker (`DaskPool`) or a plain `WorkerPool` does both jobs in one (`run_candidate`).

Code for another system (a target such as `llvm -mtriple=aarch64-linux-gnu`) never
runs in these processes: `DevicePool` builds it here and has it timed by the Dask
workers that run it (on the device; or here under qemu-user, `strato worker --emulate`,
where the times are the emulator's), and `MeasurePool(emulate=True)` times it under
qemu-user locally. The reference is computed on this host, from the kernel built for it.
"""

from __future__ import annotations

import math
import multiprocessing
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from statistics import median
from typing import Any

import numpy as np

from strato.autotuning.task import Config, Task
from strato.targets.registry import BuiltKernel, KernelBuilder

Job = tuple[Callable[..., Any], tuple[Any, ...]]


@dataclass
class Outcome:
    value: Any = None
    error: str | None = None


@dataclass(frozen=True)
class _TaskRef:
    """A task sent without its model to a worker that already holds the model."""

    task: Task


def _compact(job: Job, sent: set[str]) -> Job:
    """`job` with every task whose model this worker was sent before reduced to a
    reference: a model (tens of megabytes for a ResNet) crosses the pipe once a worker."""
    function, args = job
    compacted = []
    for arg in args:
        if isinstance(arg, Task) and arg.model:
            if arg.digest in sent:
                stripped = replace(arg, model=b"")
                stripped.__dict__["digest"] = arg.digest  # the cached property's value
                arg = _TaskRef(stripped)
            else:
                sent.add(arg.digest)
        compacted.append(arg)
    return function, tuple(compacted)


def _expand(args: tuple[Any, ...], models: dict[str, bytes]) -> tuple[Any, ...]:
    """The worker's side of `_compact`: full tasks' models kept, references restored (the
    same bytes object each time, so the per-model caches hit without rehashing)."""
    expanded = []
    for arg in args:
        if isinstance(arg, Task) and arg.model:
            arg = replace(arg, model=models.setdefault(arg.digest, arg.model))
        elif isinstance(arg, _TaskRef):
            arg = replace(arg.task, model=models[arg.task.digest])
        expanded.append(arg)
    return tuple(expanded)


def _worker_main(conn: Connection) -> None:
    conn.send("ready")
    models: dict[str, bytes] = {}
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        function, args = message
        try:
            args = _expand(args, models)
        except KeyError as error:
            conn.send(Outcome(None, f"the worker does not hold model {error}"))
            continue
        try:
            conn.send(Outcome(function(*args)))
        except Exception as error:  # noqa: BLE001  (the job's failure is its outcome)
            reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
            if not str(error):
                reason += " at " + traceback.format_exc().strip().splitlines()[-3].strip()
            conn.send(Outcome(None, reason))


class _Worker:
    def __init__(self, context) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child,), daemon=True)
        # A Dask worker is a daemonic process, which multiprocessing forbids to start
        # children; ours exit by themselves when their pipe closes, so allow them.
        config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
        daemonic = config.get("daemon", False)
        config["daemon"] = False
        try:
            self.process.start()
        finally:
            config["daemon"] = daemonic
        child.close()
        self.job: Any = None
        """The key of the job it holds, None when idle."""
        self.limit = 0.0
        self.sent: set[str] = set()
        """Digests of the models this worker was sent."""
        self.deadline = 0.0
        self.ready = False

    def wait_ready(self, limit: float = 300.0) -> bool:
        """Wait for the started process to say it runs (imports are not the job's time)."""
        if not self.ready:
            try:
                self.ready = self.conn.poll(limit) and self.conn.recv() == "ready"
            except (EOFError, OSError):
                self.ready = False
        return self.ready

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class WorkerPool:
    """Spawned worker processes running jobs with a timeout each (see the module docstring).

    `run(jobs)` runs a list of jobs to the end. The pieces it is made of let a caller
    keep two pools busy at once (`MeasurePool`): `submit` a job to an idle worker under a
    key, `wait_pools` until a job of any pool ends, and `collect` the jobs that ended."""

    def __init__(self, workers: int = 1, timeout: float = 60.0) -> None:
        self._context = multiprocessing.get_context("spawn")
        self.timeout = timeout
        self._workers = [_Worker(self._context) for _ in range(max(1, workers))]

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except (OSError, ValueError):
                pass
            worker.process.join(2)
            worker.kill()
        self._workers = []

    @property
    def idle(self) -> int:
        """Workers without a job."""
        return sum(w.job is None for w in self._workers)

    @property
    def busy(self) -> bool:
        return any(w.job is not None for w in self._workers)

    def submit(self, job: Job, key: Any, timeout: float | None = None) -> None:
        """Send `job` to an idle worker (there must be one); its outcome is collected
        under `key`."""
        limit = self.timeout if timeout is None else timeout
        position = next(i for i, w in enumerate(self._workers) if w.job is None)
        worker = self._workers[position]
        if not (worker.process.is_alive() and worker.wait_ready()):  # killed while idle
            worker.kill()
            self._workers[position] = worker = _Worker(self._context)
            if not worker.wait_ready():
                raise RuntimeError("a measurement worker process could not start")
        worker.job, worker.limit = key, limit
        worker.deadline = time.monotonic() + limit
        try:
            worker.conn.send(_compact(job, worker.sent))
        except OSError:
            pass  # it died just now: `collect` reports the job as crashed

    def _waitables(self) -> list[Any]:
        busy = [w for w in self._workers if w.job is not None]
        return [w.conn for w in busy] + [w.process.sentinel for w in busy]

    def _deadline(self) -> float:
        return min((w.deadline for w in self._workers if w.job is not None), default=math.inf)

    def collect(self, ready: Sequence[Any]) -> list[tuple[Any, Outcome]]:
        """The (key, outcome) of every job that ended: answered, crashed (its worker is
        replaced) or past its deadline (its worker is killed and replaced)."""
        ended = []
        for position, worker in enumerate(self._workers):
            if worker.job is None:
                continue
            key = worker.job
            if worker.conn in ready:
                try:
                    ended.append((key, worker.conn.recv()))
                    worker.job = None
                    continue
                except (EOFError, OSError):
                    pass
            if worker.conn in ready or worker.process.sentinel in ready:
                worker.process.join(5)
                ended.append((key, Outcome(None, f"crashed: exit code {worker.process.exitcode}")))
            elif time.monotonic() >= worker.deadline:
                ended.append((key, Outcome(None, f"timeout after {worker.limit:g} s")))
            else:
                continue
            worker.kill()
            self._workers[position] = _Worker(self._context)
        return ended

    def run(self, jobs: Sequence[Job], timeout: float | None = None) -> list[Outcome]:
        """Run every job; an outcome per job in order, a failure losing only its job."""
        outcomes: list[Outcome | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))[::-1]
        while pending or self.busy:
            while pending and self.idle:
                index = pending.pop()
                self.submit(jobs[index], index, timeout)
            for index, outcome in wait_pools([self])[0]:
                outcomes[index] = outcome
        return [o if o is not None else Outcome(None, "lost") for o in outcomes]


def wait_pools(pools: Sequence[WorkerPool]) -> list[list[tuple[Any, Outcome]]]:
    """Wait until a job of one of `pools` ends (or the earliest deadline passes); the
    jobs each pool collected."""
    waitables = [w for pool in pools for w in pool._waitables()]
    if waitables:
        deadline = min(pool._deadline() for pool in pools)
        ready = wait(waitables, timeout=max(0.0, deadline - time.monotonic()))
    else:
        ready = []
    return [pool.collect(ready) for pool in pools]


# -- candidates -------------------------------------------------------------------------------


@dataclass
class MeasureResult:
    config: Config
    seconds: float | None
    costs: list[float]
    error: str | None = None
    trace: dict[str, Any] | None = None
    """The schedule's trace (`Trace.to_dict`), for a candidate that was built."""

    @property
    def ok(self) -> bool:
        return self.error is None and self.seconds is not None


MIN_REPEAT_SECONDS = 0.005
"""A repeat calls a kernel until it has run this long (at most MAX_CALLS_PER_REPEAT calls)."""
MAX_CALLS_PER_REPEAT = 1000


class WrongResult(Exception):
    pass


def isolated_kernel(
    task: Task, config: Config | None, threads: int = 1, builder: KernelBuilder | None = None
) -> Built:
    """The task's kernel alone in a module (with the globals it reads), scheduled by
    `config` (None: its canonical loops) for `threads` threads, built by the task's
    target (its `KernelBuilder`, or `builder`), with the trace of the schedule (None
    without a config). A config that cannot be applied raises ValueError before
    anything is compiled."""
    from strato.autotuning.space import InvalidConfig, SearchSpace
    from strato.gc_pause import gc_for_compiling

    trace = None
    with gc_for_compiling():
        if config is None:
            alone, _ = task.kernel_module()
        else:
            try:
                alone, _, trace = SearchSpace(task, threads).schedule_traced(config)
            except InvalidConfig as error:
                raise ValueError(f"invalid config: {error}") from None
        built = (builder or task.builder(threads)).build(alone, task.kernel)
    return Built(built, task.target, threads, None if trace is None else trace.to_dict())


def builder_of(built: Built) -> KernelBuilder:
    """The kernel builder of the target and threads `built` was built for."""
    from strato.targets.registry import get_target

    builder = get_target(built.target).with_options(threads=str(built.threads)).kernel_builder()
    assert builder is not None
    return builder


def load_built(built: Built) -> tuple[Callable[..., Any], object]:
    """The built kernel loaded into this process by its target: a function of the
    buffers' addresses, and what must stay alive while it is called."""
    return builder_of(built).load(built.kernel)


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    """`array` copied into a buffer aligned as the model's arena aligns every tensor."""
    from strato.runtime.weight_blob import aligned_bytes

    copy = aligned_bytes(array.nbytes).view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _kernel_buffers(buffers, seed: int) -> tuple[list[np.ndarray], list[int]]:
    """Seeded inputs and zeroed outputs for the kernel's buffers, each 64-byte aligned
    as in a model's arena (numpy's 16-byte alignment made a vectorized convolution
    ~10% slower, by where each buffer happened to start); the output positions."""
    rng = np.random.default_rng(seed)
    arrays, positions = [], []
    for index, (shape, dtype, is_output) in enumerate(buffers):
        if is_output:
            array = np.zeros(shape, dtype)
            positions.append(index)
        elif np.issubdtype(dtype, np.floating):
            array = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            array = rng.integers(0, 2, shape).astype(dtype)
        else:
            array = rng.integers(0, 4, shape).astype(dtype)
        arrays.append(_aligned_copy(array))
    return arrays, positions


def reference_outputs(task: Task, seed: int = 0) -> list[np.ndarray]:
    """The task's kernel's outputs without a schedule, on the seeded buffers (run in a
    worker: `task_reference`), computed on this machine: a device's kernel is built
    for this host to compute them."""
    builder = task.builder(1).for_this_host()
    built = isolated_kernel(task, None, builder=builder)
    function, _loaded = builder.load(built.kernel)
    arrays, outputs = _kernel_buffers(built.kernel.buffers, seed)
    function(*[array.ctypes.data for array in arrays])
    return [arrays[i] for i in outputs]


@dataclass(frozen=True)
class Built:
    """A candidate built by its task's target: the kernel's code and buffers
    (`strato.targets.registry.BuiltKernel`), the target and threads that load it again,
    and the schedule's trace (`Trace.to_dict`: what the tuning log records)."""

    kernel: BuiltKernel
    target: str
    threads: int = 1
    trace: dict[str, Any] | None = None


def build_candidate(task: Task, config: Config, threads: int = 1) -> Built:
    """Schedule the task's kernel with `config` for `threads` threads and build it
    (a builder's job): what `time_built` loads and times, in this process or another."""
    return isolated_kernel(task, config, threads)


class ForeignCode(Exception):
    """Code for another machine, on a runner that neither is that machine nor emulates it."""


def emulation_enabled() -> bool:
    """Whether this process measures code for other systems under an emulator: the Dask
    setting `strato.emulate` (`strato worker --emulate`, or `DASK_STRATO__EMULATE=1`)."""
    import os

    if "DASK_STRATO__EMULATE" in os.environ:
        return os.environ["DASK_STRATO__EMULATE"].strip().lower() not in ("", "0", "false", "no")
    try:
        import dask.config
    except ImportError:
        return False
    return bool(dask.config.get("strato.emulate", False))


def _check_outputs(outputs: Sequence[np.ndarray], reference: list[np.ndarray], rtol: float) -> None:
    for index, (ours, expected) in enumerate(zip(outputs, reference, strict=True)):
        scale = max(float(np.max(np.abs(expected))), 1e-30) if expected.size else 1.0
        error = float(np.max(np.abs(np.asarray(ours) - expected))) / scale if expected.size else 0.0
        if not error <= rtol:
            raise WrongResult(f"output {index} differs from the reference by {error:.3g} (relative)")


def time_built(
    built: Built, reference: list[np.ndarray], repeats: int, seed: int, rtol: float = 1e-3,
    threads: int = 1, min_repeat_seconds: float = MIN_REPEAT_SECONDS, emulate: bool | None = None,
) -> list[float]:
    """Load a built candidate, check its outputs against `reference` and time it on
    `threads` threads (a runner's job): the seconds a call of each repeat. Code for
    another system runs under an emulator when `emulate` (None: when this process is
    set to, `emulation_enabled`), else raises ForeignCode."""
    import platform

    builder = builder_of(built)
    arrays, positions = _kernel_buffers(built.kernel.buffers, seed)
    if not builder.runs_here():
        if not (emulation_enabled() if emulate is None else emulate):
            raise ForeignCode(
                f"code for {builder.device()} cannot run on this {platform.machine()} machine: "
                "measure it on a worker on the device, or on one that emulates it "
                "(strato worker --emulate)"
            )
        outputs, costs = builder.time_emulated(
            built.kernel, arrays, repeats=max(1, repeats), min_repeat_seconds=min_repeat_seconds,
            max_calls=MAX_CALLS_PER_REPEAT, threads=threads, timeout=600.0,
        )
        _check_outputs(outputs, reference, rtol)
        return costs
    function, _loaded = builder.load(built.kernel)
    pointers = [array.ctypes.data for array in arrays]

    def kernel() -> None:
        function(*pointers)

    kernel()
    _check_outputs([arrays[i] for i in positions], reference, rtol)
    # On one thread, the CPU time of this thread: the kernels run on it, and on a shared
    # machine wall time would count others' work. On more, the pool's threads do the
    # work too: wall time.
    # A repeat runs the kernel enough times to last `min_repeat_seconds` and counts their
    # mean: a kernel of a fraction of a millisecond timed call by call is mostly noise.
    clock = time.thread_time if threads == 1 else time.perf_counter
    start = clock()
    kernel()
    once = max(clock() - start, 1e-7)
    number = max(1, min(MAX_CALLS_PER_REPEAT, math.ceil(min_repeat_seconds / once)))
    costs = []
    for _ in range(max(1, repeats)):
        start = clock()
        for _ in range(number):
            kernel()
        costs.append((clock() - start) / number)
    return costs


def run_candidate(
    task: Task, config: Config, reference: list[np.ndarray], repeats: int, seed: int,
    rtol: float = 1e-3, threads: int = 1, min_repeat_seconds: float = MIN_REPEAT_SECONDS,
) -> list[float]:
    """Build, check and time one candidate in one process (a Dask worker's job, or a
    plain `WorkerPool`'s): the seconds a call of each repeat, and the schedule's trace."""
    built = build_candidate(task, config, threads)
    costs = time_built(built, reference, repeats, seed, rtol, threads, min_repeat_seconds)
    return Timing(costs, built.trace)


@dataclass(frozen=True)
class Timing:
    """What measuring a candidate gives: the seconds a call of each repeat, and its trace."""

    costs: list[float]
    trace: dict[str, Any] | None = None


class MeasurePool:
    """Builder processes and one runner process of its own. The runner times a
    candidate while nothing builds, unless `overlap`: then, for candidates on one thread,
    it times one while the builders compile the next ones, so a batch costs about its
    builds when building is the slower part, instead of its builds plus its timings, at
    the price of the noise a build beside a timing adds (see the module docstring). A
    candidate timed on more than one thread is always timed alone. Each process crashes,
    hangs and is replaced on its own, losing only the candidate it held. Other jobs
    (`run`: the reference outputs) go to the builders."""

    def __init__(
        self, builders: int = 1, timeout: float = 60.0,
        build: Callable[..., Any] | None = None, time: Callable[..., Any] | None = None,
        overlap: bool = False, emulate: bool = False,
    ) -> None:
        self.timeout = timeout
        self.emulate = emulate
        """Whether code for another system is timed under an emulator of it."""
        self.overlap = overlap
        """Whether candidates on one thread build while another is timed."""
        self.builders = WorkerPool(builders, timeout)
        self.runner = WorkerPool(1, timeout)
        self.build = build_candidate if build is None else build
        """The builders' job (task, config, threads) -> built; a module-level function."""
        self.time = time_built if time is None else time
        """The runner's job (built, reference, repeats, seed, rtol, threads) -> costs."""

    def __enter__(self) -> MeasurePool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.builders.close()
        self.runner.close()

    def run(self, jobs: Sequence[Job], timeout: float | None = None) -> list[Outcome]:
        return self.builders.run(jobs, timeout)

    def measure(
        self, task: Task, configs: Sequence[Config], reference: list[np.ndarray],
        repeats: int, seed: int, threads: int,
    ) -> list[Outcome]:
        """Build and time `configs` (overlapped if `self.overlap`): an outcome per config,
        in order (the costs, or the reason it failed: at build or when timed)."""
        outcomes: list[Outcome | None] = [None] * len(configs)
        traces: dict[int, Any] = {}
        to_build = list(range(len(configs)))[::-1]
        to_time: list[tuple[int, Any]] = []
        overlap = self.overlap and threads == 1
        while to_build or to_time or self.builders.busy or self.runner.busy:
            if overlap or not self.runner.busy:
                while to_build and self.builders.idle:
                    index = to_build.pop()
                    self.builders.submit((self.build, (task, configs[index], threads)), index)
            if to_time and self.runner.idle and (overlap or not self.builders.busy):
                index, built = to_time.pop(0)
                arguments = (built, reference, repeats, seed, 1e-3, threads)
                if self.emulate:
                    arguments = (*arguments, MIN_REPEAT_SECONDS, True)
                self.runner.submit((self.time, arguments), index)
            built_now, timed_now = wait_pools([self.builders, self.runner])
            for index, outcome in built_now:
                if outcome.error is not None:
                    outcomes[index] = outcome
                else:
                    to_time.append((index, outcome.value))
                    traces[index] = getattr(outcome.value, "trace", None)
            to_time.sort(key=lambda pair: pair[0])
            for index, outcome in timed_now:
                if outcome.error is None:
                    outcome = Outcome(Timing(list(outcome.value), traces.get(index)))
                outcomes[index] = outcome
        return [o if o is not None else Outcome(None, "lost") for o in outcomes]


def measure(
    pool: WorkerPool | MeasurePool | DaskPool | DevicePool,
    task: Task,
    configs: Sequence[Config],
    reference: list[np.ndarray],
    repeats: int = 5,
    seed: int = 0,
    threads: int = 1,
) -> list[MeasureResult]:
    """Measure `configs` of `task` on the pool, each on `threads` threads; failures are
    results with their reason. A `MeasurePool` builds and times in separate processes; any other
    pool builds and times each candidate in one job."""
    if isinstance(pool, MeasurePool | DevicePool):
        outcomes = pool.measure(task, configs, reference, repeats, seed, threads)
    else:
        jobs: list[Job] = [
            (run_candidate, (task, c, reference, repeats, seed, 1e-3, threads)) for c in configs
        ]
        outcomes = pool.run(jobs)
    results = []
    for config, outcome in zip(configs, outcomes, strict=True):
        if outcome.error is not None:
            results.append(MeasureResult(config, None, [], outcome.error))
        else:
            timing: Timing = outcome.value
            costs = list(timing.costs)
            results.append(MeasureResult(config, median(costs), costs, trace=timing.trace))
    return results


def task_reference(pool: WorkerPool, task: Task, seed: int = 0) -> list[np.ndarray]:
    """The reference outputs, computed in a worker (the unscheduled build may be slow)."""
    (outcome,) = pool.run([(reference_outputs, (task, seed))], timeout=max(pool.timeout, 600))
    if outcome.error is not None:
        raise RuntimeError(f"{task.name}: the reference could not be computed: {outcome.error}")
    return outcome.value


# -- Dask ------------------------------------------------------------------------------------

_LOCAL = None


def _dask_job(job: Job, timeout: float) -> Outcome:
    """Run on a Dask worker: the job in a local worker process of that machine, so a crash
    or a hang loses the job, not the Dask worker."""
    import threading

    global _LOCAL
    if _LOCAL is None:
        _LOCAL = threading.local()
    pool = getattr(_LOCAL, "pool", None)
    if pool is None:
        pool = _LOCAL.pool = WorkerPool(1, timeout)
    return pool.run([job], timeout)[0]


class DaskPool:
    """The `WorkerPool` interface on a dask.distributed cluster (a scheduler address or a
    `distributed.Client`). Each job runs in a worker process that its Dask worker starts,
    with the same timeout and crash isolation as the local pool."""

    def __init__(self, cluster, timeout: float = 60.0) -> None:
        try:
            from distributed import Client
        except ImportError:
            from strato.autotuning.cost_model import MissingDependency

            raise MissingDependency(
                "measuring on Dask needs dask.distributed: pip install 'strato[tune]'"
            ) from None
        self._owned = not isinstance(cluster, Client)
        self.client = Client(cluster) if self._owned else cluster
        self.timeout = timeout
        self.workers: list[str] | None = None
        """The Dask workers jobs may run on (None: any)."""

    def __enter__(self) -> DaskPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self.client.close()

    def run(self, jobs: Sequence[Job], timeout: float | None = None) -> list[Outcome]:
        from distributed import wait as dask_wait

        limit = self.timeout if timeout is None else timeout
        futures = [
            self.client.submit(_dask_job, job, limit, pure=False, workers=self.workers)
            for job in jobs
        ]
        slots = max(1, sum(
            n for worker, n in self.client.nthreads().items()
            if self.workers is None or worker in self.workers
        ))
        # a job's own timeout is enforced on its worker; this bounds a lost Dask worker
        overall = (limit + 120) * (len(jobs) // slots + 1)
        dask_wait(futures, timeout=overall, return_when="ALL_COMPLETED")
        outcomes = []
        for future in futures:
            if future.status == "finished":
                outcomes.append(future.result())
            elif future.status == "error":
                outcomes.append(Outcome(None, f"dask: {type(future.exception()).__name__}: "
                                              f"{future.exception()}"[:300]))
            else:
                future.cancel()
                outcomes.append(Outcome(None, f"dask: no answer within {overall:g} s"))
        return outcomes


# -- a device -----------------------------------------------------------------------------


def can_run(target: str, threads: int = 1) -> str | None:
    """Whether this process can time code built for `target` (run on each Dask worker
    before tuning for a device): None if it can, else why not."""
    import platform

    from strato.targets.registry import get_target

    builder = get_target(target).with_options(threads=str(threads)).kernel_builder()
    if builder is None:
        return f"target '{target}' builds no kernel alone"
    if builder.runs_here():
        return None
    if not emulation_enabled():
        return f"a {platform.machine()} machine that does not emulate {builder.device()}"
    return builder.emulation_problem()


class DevicePool:
    """Candidates for a device built here and timed there: `builders` local processes
    cross-compile each candidate (and compute the reference on this host), and the Dask
    workers that can run the device's code (on the device, or emulating it: `can_run`)
    load and time the objects, each in a worker process of their own as `DaskPool` does.
    The device needs strato's runtime but never compiles: TVM's split of a builder here
    and a runner on the board."""

    def __init__(self, cluster, builders: int = 1, timeout: float = 60.0) -> None:
        self.remote = DaskPool(cluster, timeout)
        self.builders = WorkerPool(builders, timeout)
        self.timeout = timeout
        self._checked: set[tuple[str, int]] = set()

    def __enter__(self) -> DevicePool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.builders.close()
        self.remote.close()

    def run(self, jobs: Sequence[Job], timeout: float | None = None) -> list[Outcome]:
        return self.builders.run(jobs, timeout)

    def check(self, target: str, threads: int = 1) -> None:
        """Keep to the workers that can run code for `target`; a RuntimeError saying
        what each worker is when none can."""
        if (target, threads) in self._checked:
            return
        answers = self.remote.client.run(can_run, target, threads)
        able = sorted(worker for worker, reason in answers.items() if reason is None)
        if not able:
            found = "; ".join(f"{w} is {r}" for w, r in sorted(answers.items())) or "no workers"
            raise ForeignCode(f"no Dask worker can run code for '{target}': {found}")
        self.remote.workers = able
        self._checked.add((target, threads))

    def measure(
        self, task: Task, configs: Sequence[Config], reference: list[np.ndarray],
        repeats: int, seed: int, threads: int,
    ) -> list[Outcome]:
        """Build `configs` here, then time those that built on the device's workers: an
        outcome per config, in order."""
        self.check(task.target, threads)
        built = self.builders.run([(build_candidate, (task, c, threads)) for c in configs])
        outcomes: list[Outcome] = list(built)
        ready = [i for i, outcome in enumerate(built) if outcome.error is None]
        timed = self.remote.run([
            (time_built, (built[i].value, reference, repeats, seed, 1e-3, threads)) for i in ready
        ])  # fmt: skip
        for index, outcome in zip(ready, timed, strict=True):
            if outcome.error is None:
                outcome = Outcome(Timing(list(outcome.value), built[index].value.trace))
            outcomes[index] = outcome
        return outcomes
