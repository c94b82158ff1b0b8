"""How many threads compiled parallel loops may use.

The count is a compile-time choice, like the CPU: the default schedules decide which
loops to parallelize for it, and the lowering passes it to the pool with each region.
`strato.compile(..., threads=N)` and `strato run --threads N` set it through the llvm
target's `-threads=N` option, which makes it current while the model compiles; passes
run on their own (`strato-opt`) take it as an option, and otherwise use the cores
available to the process.

    with compiling_with_threads(2):
        ...                                  # current_threads() == 2
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

from strato.diagnostics import StratoError

MAX_THREADS = 256
"""Most threads a model may ask for (the pool's limit)."""

_CURRENT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "strato_threads", default=None
)


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


def current_threads() -> int:
    """The thread count of the compilation in progress (the available cores by default)."""
    value = _CURRENT.get()
    return available_cores() if value is None else value


def resolve_threads(option: int) -> int:
    """A pass option's thread count: `option` when positive, else `current_threads()`."""
    return option if option > 0 else current_threads()


@contextlib.contextmanager
def compiling_with_threads(threads: int) -> Iterator[int]:
    """Within the block, `current_threads()` is `threads` (in this thread or task)."""
    token = _CURRENT.set(check_threads(threads))
    try:
        yield threads
    finally:
        _CURRENT.reset(token)


__all__ = [
    "MAX_THREADS",
    "available_cores",
    "check_threads",
    "parse_threads",
    "compiling_with_threads",
    "current_threads",
    "resolve_threads",
]
