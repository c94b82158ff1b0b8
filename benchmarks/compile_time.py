"""Compile time of the built-in models, per stage, next to TVM Relax's in the same run.

    python benchmarks/compile_time.py                        # resnet18, mobilenet_v2, lstm
    python benchmarks/compile_time.py resnet18 --repeat 3    # median of 3 compilations
    python benchmarks/compile_time.py --all --no-tvm         # every zoo model, strato only

For each model: the wall time of every stage of `strato.compile` (import, each pass of the
pipeline, then the build: finalizing the entry, emitting LLVM IR text, LLVM parsing,
LLVM optimization, machine code), the total, and the CPU time of the process over the
whole compilation (on a shared machine the wall time also counts other people's work).
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
    """Wall time per named stage, in the order stages first appear."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._current: str | None = None
        self._since = 0.0

    def switch(self, stage: str | None) -> None:
        """End the running stage (if any) and start `stage` (None: stop)."""
        now = time.perf_counter()
        if self._current is not None:
            self.seconds[self._current] = self.seconds.get(self._current, 0.0) + now - self._since
        self._current, self._since = stage, now

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


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
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                clock.add(_stage, time.perf_counter() - start)

        wrap(module, attribute, step)
    try:
        yield
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


def compile_strato(model: onnx.ModelProto, name: str) -> tuple[dict[str, float], float]:
    """One `strato.compile` of `model`: seconds per stage (and "total"), and CPU seconds."""
    clock = StageClock()
    cpu_start = time.process_time()
    start = time.perf_counter()
    clock.switch("import")
    with instrumented(clock):
        strato.compile(model, name=name, before_stage=clock.switch)
    clock.switch(None)
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    stages = clock.seconds
    build = stages.pop("build: machine code", 0.0)
    steps = sum(seconds for stage, seconds in stages.items() if stage.startswith("build: "))
    stages["build: machine code"] = max(0.0, build - steps)
    stages["total"] = total
    return stages, cpu


def compile_tvm(model: onnx.ModelProto) -> float | None:
    """Seconds TVM Relax takes from the ONNX model to an executable for this CPU, or
    None when `tvm` is not importable."""
    try:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
    except ImportError:
        return None
    from strato.targets.llvm.host import host_target

    host = host_target()
    target = tvm.target.Target({"kind": "llvm", "mcpu": host.cpu})
    start = time.perf_counter()
    mod = from_onnx(model, keep_params_in_input=False)
    executable = tvm.compile(mod, target=target)
    relax.VirtualMachine(executable, tvm.cpu())
    return time.perf_counter() - start


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
        stages = {stage: statistics.median(run[0][stage] for run in runs) for stage in runs[0][0]}
        cpu = statistics.median(run[1] for run in runs)
        print(f"{name}: strato", flush=True)
        for stage, seconds in stages.items():
            if stage != "total":
                print(f"  {stage:28s} {seconds:7.2f} s")
        line = f"  {'total':28s} {stages['total']:7.2f} s (CPU {cpu:.2f} s)"
        tvm_seconds = None
        if not args.no_tvm:
            tvm_runs = [compile_tvm(model) for _ in range(max(1, args.repeat))]
            if tvm_runs[0] is not None:
                tvm_seconds = statistics.median(tvm_runs)
        if tvm_seconds is not None:
            line += f" | TVM Relax {tvm_seconds:.2f} s | strato/TVM {stages['total'] / tvm_seconds:.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
