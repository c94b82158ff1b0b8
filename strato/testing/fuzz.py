"""The pass fuzzer: random pipelines over generated programs, each pass checked by the
equivalence oracle; each finding is reduced and written as a .mlir lit test.

    findings = fuzz_passes(seconds=60, out_dir="fuzz-findings", seed=0)

A finding is a pass that changes a result (`difference`) or a pass that crashes with
an exception other than a diagnostic (`crash`). A pass that rejects a program with a
diagnostic (an op it does not lower, say) is not one. Findings are deduplicated by
pass, kind and the op names of the reduced program.
"""

from __future__ import annotations

import random
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.testing.equivalence import Unsupported, check_pipeline, ir_text
from strato.testing.graph_programs import GraphProgram, graph_programs
from strato.testing.reduce import count_ops, reduce_module

GRAPH_PASSES = (
    "graph-fold-constants",
    "graph-simplify-inference",
    "graph-fuse-ops",
    "graph-alter-layout",
    "graph-plan-memory",
    "graph-default",
    "cse",
    "dce",
    "canonicalize",
)
"""Graph-level passes a random pipeline is drawn from (in any order, repeated)."""

LOWERING = ("convert-graph-to-te", "te-inline-stages", "convert-te-to-loops", "schedule-default")
"""A random pipeline sometimes ends in a prefix of these."""


@dataclass
class Finding:
    kind: str  # "difference" or "crash"
    pass_name: str
    pipeline: list[str]
    detail: str
    path: Path | None = None
    ops: int = 0


@dataclass
class FuzzStats:
    programs: int = 0
    passes_run: int = 0
    rejected: int = 0
    unsupported: int = 0
    timeouts: int = 0
    """Programs abandoned after `program_seconds` (their pipeline or its check too slow)."""
    findings: list[Finding] = field(default_factory=list)


class _Timeout(BaseException):
    """Not an Exception: the handlers that turn a pass's exceptions into crash findings
    must not catch it."""


@contextmanager
def _time_limit(seconds: float | None):
    """Raise _Timeout in the body after `seconds` of wall time (SIGALRM: main thread of
    a Unix process only; elsewhere, or with None, no limit)."""
    usable = (
        seconds is not None
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def draw_program(
    rng: random.Random, max_ops: int, kinds: Sequence[str] | None = None
) -> GraphProgram:
    """One generated program, drawn outside a hypothesis test through hypothesis's public
    API: a seeded `@given` run that keeps its last example (the generate phase starts
    with the simplest one, the same for every seed)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    strategy = graph_programs(max_ops=max_ops) if kinds is None else graph_programs(max_ops=max_ops, kinds=kinds)
    drawn: list[GraphProgram] = []

    @seed(rng.getrandbits(64))
    @settings(
        max_examples=2,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def keep(program: GraphProgram) -> None:
        drawn.append(program)

    keep()
    return drawn[-1]


def random_pipeline(rng: random.Random, graph_passes: Sequence[str] = GRAPH_PASSES) -> list[str]:
    names = [rng.choice(list(graph_passes)) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.4:
        names += list(LOWERING[: rng.randint(1, len(LOWERING))])
    return names


_EXTRA: dict[str, type[ModulePass]] = {}
"""Passes outside the registry the fuzzer may draw (plugins, tests), by name."""


def _make(names: Sequence[str]) -> list[ModulePass]:
    from strato.pipeline import all_passes

    passes = all_passes()
    return [(_EXTRA[name] if name in _EXTRA else passes[name]())() for name in names]


class _Crash(Exception):
    def __init__(self, index: int, detail: str):
        self.index, self.detail = index, detail


def _run_checked(
    module: ModuleOp, names: Sequence[str], n_inputs: int, rtol: float, atol: float
):
    """check_pipeline, with a pass that raises other than a diagnostic as _Crash, and
    a diagnostic as None (the pipeline rejected the program)."""
    ctx = make_context()
    passes = _make(names)
    state = {"index": 0}

    def apply(pass_: ModulePass, m: ModuleOp) -> None:
        try:
            pass_.apply(ctx, m)
            m.verify()
        except (DiagnosticException, StratoError):
            raise
        except Exception as err:
            detail = "".join(traceback.format_exception_only(type(err), err)).strip()
            raise _Crash(state["index"], detail) from err
        finally:
            state["index"] += 1

    try:
        return check_pipeline(ctx, module, passes, n_inputs, rtol, atol, apply=apply)
    except (DiagnosticException, StratoError):
        return None


def fuzz_passes(
    seconds: float,
    out_dir: str | Path,
    seed: int = 0,
    max_ops: int = 6,
    n_inputs: int = 4,
    rtol: float = 1e-3,
    atol: float = 1e-4,
    max_programs: int | None = None,
    log: Callable[[str], None] | None = None,
    graph_passes: Sequence[str] = GRAPH_PASSES,
    extra_passes: Sequence[type[ModulePass]] = (),
    kinds: Sequence[str] | None = None,
    program_seconds: float | None = 120.0,
) -> FuzzStats:
    """Fuzz for `seconds` (or `max_programs` programs); findings go to `out_dir`.
    A program whose pipeline, check and reduction take longer than `program_seconds`
    is abandoned and counted in `FuzzStats.timeouts` (None: no limit).
    `extra_passes` (plugin or test passes, drawn by name from `graph_passes` too) need
    not be registered. `kinds`: the op kinds of the programs (default: every graph op)."""
    _EXTRA.clear()
    _EXTRA.update({p.name: p for p in extra_passes})
    out = Path(out_dir)
    rng = random.Random(seed)
    stats = FuzzStats()
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (max_programs is None or stats.programs < max_programs):
        program = draw_program(rng, max_ops, kinds)
        names = random_pipeline(rng, graph_passes)
        stats.programs += 1
        try:
            with _time_limit(program_seconds):
                _fuzz_one(program, names, stats, seen, out, n_inputs, rtol, atol, log)
        except _Timeout:
            stats.timeouts += 1
            if log is not None:
                log(f"gave up on a program after {program_seconds:g} s: {','.join(names)}")
    return stats


def _fuzz_one(
    program: GraphProgram,
    names: list[str],
    stats: FuzzStats,
    seen: set[tuple[str, str, tuple[str, ...]]],
    out: Path,
    n_inputs: int,
    rtol: float,
    atol: float,
    log: Callable[[str], None] | None,
) -> None:
    """Check one program under one pipeline; record what it finds."""
    original = program.module.clone()
    try:
        report = _run_checked(program.module, names, n_inputs, rtol, atol)
    except _Crash as crash:
        failing = names[crash.index]
        prefix = names[: crash.index + 1]

        def crashes(m: ModuleOp, prefix: list[str] = prefix) -> bool:
            try:
                _run_checked(m, prefix, 1, rtol, atol)
            except _Crash as again:
                return again.index == len(prefix) - 1
            return False

        _record(stats, seen, out, "crash", failing, prefix, crash.detail, original, crashes, log)
        return
    if report is None:
        stats.rejected += 1
        return
    stats.passes_run += len(report.passes_checked)
    if report.unsupported is not None:
        stats.unsupported += 1
    d = report.difference
    if d is None:
        return
    prefix = names[: d.index + 1]

    def reason_of(m: ModuleOp, prefix: list[str] = prefix) -> str | None:
        try:
            r = _run_checked(m, prefix, n_inputs, rtol, atol)
        except _Crash:
            return None
        if r is None or r.difference is None or r.difference.index != len(prefix) - 1:
            return None
        return r.difference.reason

    def differs(m: ModuleOp) -> bool:
        return reason_of(m) is not None

    _record(
        stats, seen, out, "difference", d.pass_name, prefix, d.reason, original, differs, log, reason_of
    )


def _record(
    stats: FuzzStats,
    seen: set[tuple[str, str, tuple[str, ...]]],
    out: Path,
    kind: str,
    pass_name: str,
    pipeline: list[str],
    detail: str,
    module: ModuleOp,
    still_fails: Callable[[ModuleOp], bool],
    log: Callable[[str], None] | None,
    reason: Callable[[ModuleOp], str | None] | None = None,
) -> None:
    small = reduce_module(module, still_fails, max_checks=300)
    if reason is not None:
        # the difference the reduced program shows, not the original one's
        detail = reason(small.clone()) or detail
    ops = tuple(sorted({op.name for op in small.walk() if op.name.startswith("graph.")}))
    key = (kind, pass_name, ops)
    if key in seen:
        return
    seen.add(key)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{kind}-{pass_name}-{len(stats.findings) + 1}.mlir"
    spec = ",".join(pipeline)
    if kind == "difference":
        run = f"// RUN: not strato-opt %s -p '{spec}' --check-equivalence 2>&1 | filecheck %s\n"
        check = f"// CHECK: error: pass '{pass_name}{{{{.*}}}}' changes the result\n"
    else:
        run = f"// RUN: not strato-opt %s -p '{spec}' 2>&1 | filecheck %s\n"
        check = "// CHECK: internal error\n"
    first = " ".join(detail.split())[:300]
    path.write_text(f"// {kind} in {pass_name}: {first}\n{run}{check}\n{ir_text(small)}")
    finding = Finding(kind, pass_name, pipeline, first, path, count_ops(small))
    stats.findings.append(finding)
    if log is not None:
        log(f"{kind} in {pass_name} ({finding.ops} ops): {first} -> {path}")


__all__ = ["Finding", "FuzzStats", "fuzz_passes", "draw_program", "random_pipeline", "Unsupported"]
