"""Compile time of the built-in models, per stage, next to TVM Relax's in the same run.

    python benchmarks/compile_time.py                        # resnet18, mobilenet_v2, lstm
    python benchmarks/compile_time.py resnet18 --repeat 3    # median of 3 compilations
    python benchmarks/compile_time.py --all --no-tvm         # every zoo model, strato only

For each model: the wall and CPU time of every stage of `strato.compile` (import, each pass of the
pipeline, then the build: finalizing the entry, emitting LLVM IR text, LLVM parsing,
LLVM optimization, machine code) and the total; on a shared machine the CPU time is the
steadier figure (the wall time also counts other people's work).
When `tvm` is importable (the `bench` extra), TVM Relax then compiles the same ONNX model
for the same CPU (`relax.frontend.onnx.from_onnx`, then `tvm.compile` with its default
pipeline, untuned) and its time and the ratio strato/TVM are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import time
from collections.abc import Callable, Iterator

import onnx

import strato
from strato import zoo

DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "lstm")

_BUILD_STEPS = (
    # (module, function, stage name): the steps of `build`, timed by wrapping them
    ("strato.compiler", "finalize_entry", "build: finalize entry"),
    ("strato.targets.llvm.jit", "_ir_text", "build: emit LLVM IR"),
    ("strato.targets.llvm.jit", "_parse", "build: LLVM parse"),
    ("strato.targets.llvm.jit", "optimize", "build: LLVM optimize"),
)


class StageClock:
    """Wall and CPU seconds per named stage, in the order stages first appear."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu_seconds: dict[str, float] = {}
        self._current: str | None = None
        self._since = (0.0, 0.0)

    def switch(self, stage: str | None) -> None:
        """End the running stage (if any) and start `stage` (None: stop)."""
        now = (time.perf_counter(), time.process_time())
        if self._current is not None:
            self.add(self._current, now[0] - self._since[0], now[1] - self._since[1])
        self._current, self._since = stage, now

    def add(self, stage: str, seconds: float, cpu_seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds
        self.cpu_seconds[stage] = self.cpu_seconds.get(stage, 0.0) + cpu_seconds


@contextlib.contextmanager
def instrumented(clock: StageClock) -> Iterator[None]:
    """Time the build of the llvm target and its steps by wrapping the functions that
    run them (a step whose function is not found is simply not reported)."""
    import importlib

    from strato.targets.llvm.target import LLVMTarget

    saved: list[tuple[object, str, Callable]] = []

    def wrap(owner: object, attribute: str, wrapper: Callable) -> None:
        saved.append((owner, attribute, getattr(owner, attribute)))
        setattr(owner, attribute, functools.wraps(getattr(owner, attribute))(wrapper))

    def build(self, *args, _original=LLVMTarget.build, **kwargs):
        clock.switch("build: machine code")  # what the timed steps below leave over
        return _original(self, *args, **kwargs)

    wrap(LLVMTarget, "build", build)
    for module_name, attribute, stage in _BUILD_STEPS:
        module = importlib.import_module(module_name)
        original = getattr(module, attribute, None)
        if original is None:
            continue

        def step(*args, _original=original, _stage=stage, **kwargs):
            start, cpu_start = time.perf_counter(), time.process_time()
            try:
                return _original(*args, **kwargs)
            finally:
                clock.add(
                    _stage, time.perf_counter() - start, time.process_time() - cpu_start
                )

        wrap(module, attribute, step)
    try:
        yield
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


def compile_strato(model: onnx.ModelProto, name: str) -> dict[str, tuple[float, float]]:
    """One `strato.compile` of `model`: (wall, CPU) seconds per stage and in "total"."""
    clock = StageClock()
    cpu_start = time.process_time()
    start = time.perf_counter()
    clock.switch("import")
    with instrumented(clock):
        strato.compile(model, name=name, before_stage=clock.switch)
    clock.switch(None)
    stages: dict[str, tuple[float, float]] = {}
    build = (0.0, 0.0)
    for stage, seconds in clock.seconds.items():
        if stage == "build: machine code":
            build = (seconds, clock.cpu_seconds[stage])
        else:
            stages[stage] = (seconds, clock.cpu_seconds[stage])
    # the build's clock ran on through the timed steps: what is left is machine code
    steps = [times for stage, times in stages.items() if stage.startswith("build: ")]
    stages["build: machine code"] = (
        max(0.0, build[0] - sum(wall for wall, _ in steps)),
        max(0.0, build[1] - sum(cpu for _, cpu in steps)),
    )
    stages["total"] = (time.perf_counter() - start, time.process_time() - cpu_start)
    return stages


def compile_tvm(model: onnx.ModelProto) -> tuple[float, float] | str:
    """(wall, CPU) seconds TVM Relax takes from the ONNX model to an executable for this
    CPU, or why it did not: `tvm` not importable, or the model not supported."""
    try:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
    except ImportError:
        return "not installed (pip install strato[bench])"
    from strato.targets.llvm.host import host_target

    target = tvm.target.Target({"kind": "llvm", "mcpu": host_target().cpu})
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        mod = from_onnx(model, keep_params_in_input=False)
        executable = tvm.compile(mod, target=target)
    except Exception as err:  # TVM raises its own error types per release
        reason = str(err).strip().splitlines()
        return f"failed: {reason[-1] if reason else type(err).__name__}"
    relax.VirtualMachine(executable, tvm.cpu())
    return time.perf_counter() - start, time.process_time() - cpu_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"zoo names (default: {' '.join(DEFAULT_MODELS)})")
    parser.add_argument("--all", action="store_true", help="every zoo model")
    parser.add_argument("--repeat", type=int, default=1, help="compilations per model (median)")
    parser.add_argument("--no-tvm", action="store_true", help="do not compile with TVM")
    args = parser.parse_args()
    names = zoo.zoo_names() if args.all else (args.models or list(DEFAULT_MODELS))
    for name in names:
        model = zoo.build_model(name)
        runs = [compile_strato(model, name) for _ in range(max(1, args.repeat))]
        print(f"{name}: strato                     wall      CPU", flush=True)
        for stage in runs[0]:
            wall = statistics.median(run[stage][0] for run in runs)
            cpu = statistics.median(run[stage][1] for run in runs)
            print(f"  {stage:28s} {wall:7.2f} s {cpu:7.2f} s")
        if args.no_tvm:
            continue
        tvm_runs = [compile_tvm(model) for _ in range(max(1, args.repeat))]
        if isinstance(tvm_runs[0], str):
            print(f"  TVM Relax: {tvm_runs[0]}", flush=True)
            continue
        wall = statistics.median(run[0] for run in tvm_runs)
        cpu = statistics.median(run[1] for run in tvm_runs)
        ours = statistics.median(run["total"][0] for run in runs)
        ours_cpu = statistics.median(run["total"][1] for run in runs)
        print(
            f"  {'TVM Relax':28s} {wall:7.2f} s {cpu:7.2f} s | strato/TVM "
            f"{ours / wall:.2f}x wall, {ours_cpu / cpu:.2f}x CPU",
            flush=True,
        )


if __name__ == "__main__":
    main()
