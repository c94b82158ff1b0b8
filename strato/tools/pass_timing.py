"""The `--time-passes` report: wall time per stage of a strato-opt run, MLIR style.

    ===-------------------------------------------------------------------------===
                             ... Execution time report ...
    ===-------------------------------------------------------------------------===
      Total Execution Time: 0.0123 seconds

      ----Wall Time----  ----Name----
        0.0020 ( 16.3%)  Parser
        0.0081 ( 65.9%)  convert-graph-to-te
        0.0010 (  8.1%)  Verifier
        0.0008 (  6.5%)  Output
        0.0004 (  3.3%)  Rest
        0.0123 (100.0%)  Total

Passes are listed in pipeline order, one row per pipeline entry; times of a split input
add up over its chunks.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

_RULE = "===" + "-" * 73 + "==="


class PassTimer:
    """Accumulates wall time under named rows, in the order rows are first declared."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._rows: dict[str, float] = {}

    def declare(self, name: str) -> None:
        """Fix the position of a row in the report before it is first timed."""
        self._rows.setdefault(name, 0.0)

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        self.declare(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self._rows[name] += time.perf_counter() - start

    def report(self, stream: TextIO) -> None:
        total = time.perf_counter() - self._start
        rows = list(self._rows.items())
        rows.append(("Rest", max(0.0, total - sum(self._rows.values()))))
        rows.append(("Total", total))
        lines = [
            _RULE,
            " " * 25 + "... Execution time report ...",
            _RULE,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, seconds in rows:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {name}")
        stream.write("\n".join(lines) + "\n")
