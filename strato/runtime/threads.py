"""How many threads compiled parallel loops may use.

The count is a compile-time choice, like the CPU: the default schedules decide which
loops to parallelize for it, and the lowering passes it to the pool with each region.
`strato.compile(..., threads=N)` and `strato run --threads N` set it through the llvm
target's `-threads=N` option, whose stages give it to the passes that need it
(`schedule-default{threads=N}`, `convert-loops-to-llvm{threads=N}`); a pass run without
one uses the cores available to the process.

    threads = parse_threads("2", "-threads")          # 2, or a StratoError naming -threads
    count = threads_or_available(0)                   # the cores this process may use
"""

from __future__ import annotations

import os

from strato.diagnostics import StratoError

MAX_THREADS = 256
"""Most threads a model may ask for (the pool's limit)."""


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_threads(value: object, where: str = "threads") -> int:
    """`value` if it is a thread count, an integer from 1 to `MAX_THREADS`; a
    `StratoError` naming `where` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise StratoError(f"{where} must be an integer from 1 to {MAX_THREADS}, got {value!r}")
    return value


def parse_threads(text: str, where: str = "threads") -> int:
    """A thread count written in decimal, as target options are (`-threads=2`)."""
    if not text.isdecimal():
        raise StratoError(f"{where} must be an integer from 1 to {MAX_THREADS}, got {text!r}")
    return check_threads(int(text), where)


def threads_or_available(option: int) -> int:
    """A pass option's thread count: `option` when positive, else the available cores."""
    return option if option > 0 else available_cores()


__all__ = [
    "MAX_THREADS",
    "available_cores",
    "check_threads",
    "parse_threads",
    "threads_or_available",
]
