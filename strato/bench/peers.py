"""The sides of a `strato bench` comparison: strato itself and its peers (onnxruntime,
TVM Relax as it ships, numpy for GEMM), each prepared once per workload.

    side = OnnxRuntime().prepare(model, inputs)      # compile / create the session, timed
    with side.using_threads(2) as run:              # threads set for the block
        outputs = run()                              # one call on the workload's inputs

`prepare` does all the one-time work (compiling, creating sessions, converting inputs)
and records how long it took; `using_threads(n)` yields a callable that runs the
workload once with `n` threads and returns the outputs as numpy arrays in ONNX output
order. Every side's thread setting is described in words (`threads_note`) for the
report, so a reader knows exactly what ran.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

import numpy as np
import onnx

from strato.bench.workloads import Workload

Run = Callable[[], list[np.ndarray]]


class Prepared:
    """A side ready to run one workload: its compile (or session) time and a way to
    run it with a given number of threads."""

    def __init__(
        self,
        compile_seconds: float,
        runs: Callable[[int], contextlib.AbstractContextManager[Run]],
        *,
        cache_hit_seconds: float | None = None,
    ):
        self.compile_seconds = compile_seconds
        self.cache_hit_seconds = cache_hit_seconds
        """How long compiling again took when the side's compile cache held the result."""
        self._runs = runs

    def using_threads(self, threads: int) -> contextlib.AbstractContextManager[Run]:
        return self._runs(threads)


class Side:
    """One contestant. `unavailable()` says why it cannot run here (None when it can)."""

    name: ClassVar[str]

    def unavailable(self) -> str | None:
        return None

    def applies_to(self, workload: Workload) -> bool:
        return True

    def versions(self) -> dict[str, str]:
        return {}

    def threads_note(self) -> str:
        raise NotImplementedError

    def prepare(self, model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> Prepared:
        raise NotImplementedError


@contextlib.contextmanager
def _fixed(run: Run) -> Iterator[Run]:
    yield run


def _timed(make: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    made = make()
    return made, time.perf_counter() - start


# ---------------------------------------------------------------------------
# strato
# ---------------------------------------------------------------------------


def _compile_parameters() -> set[str]:
    from strato.compiler import compile_model

    return set(inspect.signature(compile_model).parameters)


def _llvm_target_options() -> set[str]:
    try:
        from strato.targets.registry import get_target
    except ImportError:
        return set()
    return set(type(get_target("llvm")).options)


class Strato(Side):
    """strato.compile for the host CPU. The thread count goes to `strato.compile(...,
    threads=N)` when it has that option, else to the llvm target's `-threads=N` when it
    has that one: then one compile per thread count (the first one is the compile time
    reported). With neither, one compile runs with strato's default threads at every
    thread count. With a compile cache, the first compile fills a fresh, private cache
    directory (so it is a real compile) and a second one is timed as the cache hit."""

    name = "strato"

    def __init__(self, tuning: str | None = None) -> None:
        parameters = _compile_parameters()
        self.tuning = tuning
        """A tuning log: every kernel gets its task's best record (`strato.compile(...,
        tuning=)`)."""
        self.threads_keyword = "threads" in parameters
        self.threads_target_option = not self.threads_keyword and "threads" in _llvm_target_options()
        self.has_cache = "cache" in parameters

    @property
    def has_threads(self) -> bool:
        return self.threads_keyword or self.threads_target_option

    def threads_note(self) -> str:
        if self.threads_keyword:
            return "strato.compile(..., threads=N)"
        if self.threads_target_option:
            return "strato.compile(..., target='llvm -threads=N')"
        return "strato's default (strato.compile has no threads option): the same code at every thread count"

    def versions(self) -> dict[str, str]:
        import llvmlite
        import llvmlite.binding
        import xdsl

        import strato

        return {
            "strato": f"{strato.__version__}{source_revision()}",
            "llvmlite": llvmlite.__version__,
            "LLVM (llvmlite)": ".".join(map(str, llvmlite.binding.llvm_version_info)),
            "xdsl": str(getattr(xdsl, "__version__", "unknown")),
        }

    def _compile(self, model: onnx.ModelProto, threads: int | None, *, cache: bool = False):
        import strato

        options: dict[str, object] = {}
        target = "llvm"
        if threads is not None and self.threads_keyword:
            options["threads"] = threads
        elif threads is not None and self.threads_target_option:
            target = f"llvm -threads={threads}"
        if self.has_cache:
            options["cache"] = cache
        if self.tuning is not None:
            options["tuning"] = self.tuning
        return strato.compile(model, target=target, **options)

    def prepare(self, model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> Prepared:
        by_threads: dict[int | None, object] = {}
        first_threads = None
        if self.has_threads:
            first_threads = 1
        cache_hit_seconds = None
        if self.has_cache:
            with _private_cache_directory():
                compiled, seconds = _timed(lambda: self._compile(model, first_threads, cache=True))
                _, cache_hit_seconds = _timed(lambda: self._compile(model, first_threads, cache=True))
        else:
            compiled, seconds = _timed(lambda: self._compile(model, first_threads))
        by_threads[first_threads] = compiled

        def runs(threads: int) -> contextlib.AbstractContextManager[Run]:
            key = threads if self.has_threads else None
            if key not in by_threads:
                by_threads[key] = self._compile(model, key)
            compiled_model = by_threads[key]
            return _fixed(lambda: compiled_model(*inputs))

        return Prepared(seconds, runs, cache_hit_seconds=cache_hit_seconds)


def source_revision() -> str:
    """` (git 1a2b3c4)` for a source checkout, with `+changes` when strato's files differ
    from that commit; empty when strato is not in a git work tree."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():  # an installed copy, perhaps inside another repository
        return ""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "strato")
    except (OSError, subprocess.SubprocessError):
        return ""
    return f" (git {commit}{', +changes' if changed else ''})"


@contextlib.contextmanager
def _private_cache_directory() -> Iterator[None]:
    """strato's compile cache in a new temporary directory (STRATO_CACHE_DIR) for the
    block: empty at first, so nothing from earlier runs is served, and removed after."""
    import tempfile

    previous = os.environ.get("STRATO_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="strato-bench-cache-") as directory:
        os.environ["STRATO_CACHE_DIR"] = directory
        try:
            yield
        finally:
            if previous is None:
                del os.environ["STRATO_CACHE_DIR"]
            else:
                os.environ["STRATO_CACHE_DIR"] = previous


# ---------------------------------------------------------------------------
# onnxruntime
# ---------------------------------------------------------------------------


class OnnxRuntime(Side):
    """onnxruntime's CPU execution provider, one session per thread count:
    intra_op_num_threads = N, inter_op_num_threads = 1, and idle workers do not spin
    (so they take no core from the other side between calls)."""

    name = "onnxruntime"

    def unavailable(self) -> str | None:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            return "onnxruntime is not installed (pip install -e '.[bench]')"
        return None

    def versions(self) -> dict[str, str]:
        import onnxruntime

        return {"onnxruntime": onnxruntime.__version__}

    def threads_note(self) -> str:
        return "intra_op_num_threads=N, inter_op_num_threads=1, session.intra_op.allow_spinning=0"

    @staticmethod
    def session(model_bytes: bytes, threads: int):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])

    def prepare(self, model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> Prepared:
        model_bytes = model.SerializeToString()
        sessions = {}
        first, seconds = _timed(lambda: self.session(model_bytes, 1))
        sessions[1] = first
        names = [value.name for value in first.get_inputs()]  # type: ignore[attr-defined]
        feed = dict(zip(names, inputs, strict=True))

        def runs(threads: int) -> contextlib.AbstractContextManager[Run]:
            if threads not in sessions:
                sessions[threads] = self.session(model_bytes, threads)
            session = sessions[threads]
            return _fixed(lambda: session.run(None, feed))

        return Prepared(seconds, runs)


# ---------------------------------------------------------------------------
# TVM Relax
# ---------------------------------------------------------------------------


class TvmRelax(Side):
    """TVM Relax untuned, as it ships: relax.frontend.onnx.from_onnx, relax.build for
    the host CPU (`{"kind": "llvm", "mcpu": <host>}`) with the default pipeline, run on
    the Relax VM. Its thread pool is sized by TVM_NUM_THREADS (set to the most threads
    the bench uses before TVM starts, unless the environment sets it) and each block
    selects N threads with runtime.config_threadpool. The compile time is import plus
    build plus VM creation."""

    name = "tvm"

    def __init__(self, max_threads: int = 1) -> None:
        self.max_threads = max_threads

    def unavailable(self) -> str | None:
        import importlib.util

        if importlib.util.find_spec("tvm") is None:
            return "tvm is not importable (pip install apache-tvm to compare with TVM Relax)"
        return None

    def _tvm(self):
        os.environ.setdefault("TVM_NUM_THREADS", str(self.max_threads))
        import tvm
        from tvm import relax  # noqa: F401
        from tvm.relax.frontend import onnx as _  # noqa: F401

        return tvm

    def versions(self) -> dict[str, str]:
        tvm = self._tvm()
        llvm_major = tvm.get_global_func("target.llvm_version_major", allow_missing=True)
        return {
            "tvm": tvm.__version__,
            "LLVM (tvm)": str(llvm_major()) if llvm_major is not None else "unknown",
        }

    def threads_note(self) -> str:
        return (
            f"TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', self.max_threads)}, "
            "runtime.config_threadpool(1, N) per block (untuned kernels have no parallel loops)"
        )

    def target(self):
        from strato.targets.llvm.host import host_target

        tvm = self._tvm()
        return tvm.target.Target({"kind": "llvm", "mcpu": host_target().cpu})

    def prepare(self, model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> Prepared:
        tvm = self._tvm()
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        initializers = {init.name for init in model.graph.initializer}
        graph_inputs = [value.name for value in model.graph.input if value.name not in initializers]
        shapes = {name: list(array.shape) for name, array in zip(graph_inputs, inputs, strict=True)}
        dtypes = {name: str(array.dtype) for name, array in zip(graph_inputs, inputs, strict=True)}
        target = self.target()
        device = tvm.cpu()

        def build():
            module = from_onnx(model, shape_dict=shapes, dtype_dict=dtypes)
            executable = relax.build(module, target=target)
            return relax.VirtualMachine(executable, device)

        vm, seconds = _timed(build)
        main = vm["main"]  # type: ignore[index]
        arguments = [tvm.runtime.tensor(array, device) for array in inputs]
        configure = tvm.get_global_func("runtime.config_threadpool")

        def run() -> list[np.ndarray]:
            result = main(*arguments)
            if hasattr(result, "numpy"):
                return [result.numpy()]
            return [item.numpy() for item in result]

        @contextlib.contextmanager
        def runs(threads: int) -> Iterator[Run]:
            configure(1, threads)
            yield run

        return Prepared(seconds, runs)


# ---------------------------------------------------------------------------
# numpy (GEMM only)
# ---------------------------------------------------------------------------


class Numpy(Side):
    """numpy's matmul (its BLAS, OpenBLAS in the wheels) on the GEMM's two inputs, with
    the BLAS threads limited to N by threadpoolctl for each block."""

    name = "numpy"

    def unavailable(self) -> str | None:
        try:
            import threadpoolctl  # noqa: F401
        except ImportError:
            return "threadpoolctl is not installed, so numpy's BLAS threads cannot be set (pip install -e '.[bench]')"
        return None

    def applies_to(self, workload: Workload) -> bool:
        return workload.kind == "gemm"

    def versions(self) -> dict[str, str]:
        return {"numpy": np.__version__, "BLAS (numpy)": blas_description()}

    def threads_note(self) -> str:
        return "threadpoolctl.threadpool_limits(N, user_api='blas') per block"

    def prepare(self, model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> Prepared:
        a, b = inputs

        @contextlib.contextmanager
        def runs(threads: int) -> Iterator[Run]:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=threads, user_api="blas"):
                yield lambda: [a @ b]

        return Prepared(0.0, runs)


def blas_description() -> str:
    """numpy's BLAS libraries as threadpoolctl sees them: `openblas 0.3.31 SkylakeX
    (pthreads)`; "unknown" without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    found = [
        f"{info.get('internal_api')} {info.get('version')} {info.get('architecture', '')} "
        f"({info.get('threading_layer', '?')})"
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]
    return ", ".join(" ".join(entry.split()) for entry in found) or "none loaded"


PEERS: dict[str, type[Side]] = {side.name: side for side in (OnnxRuntime, TvmRelax, Numpy)}
"""Peer name -> side, in the order the table shows them."""
