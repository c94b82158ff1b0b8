"""The progress of a `strato bench` run on stderr: a tqdm bar when tqdm is installed
(the `bench` extra brings it), else one plain line per step.

    progress = make_progress(total=12, enabled=True)
    progress.step("GEMM: timing at 1 thread(s)")    # the previous step is done
    progress.close()
"""

from __future__ import annotations

import sys


class PlainProgress:
    """`[3/12] GEMM: timing at 1 thread(s)` lines."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0

    def step(self, description: str) -> None:
        self.count += 1
        print(f"[{self.count}/{self.total}] {description}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


class BarProgress:
    """A tqdm bar whose text is the step in progress."""

    def __init__(self, total: int, tqdm) -> None:
        self.bar = tqdm(total=total, file=sys.stderr, unit="step", dynamic_ncols=True, leave=True)
        self.started = False

    def step(self, description: str) -> None:
        if self.started:
            self.bar.update(1)
        self.started = True
        self.bar.set_description_str(description)

    def close(self) -> None:
        if self.started:
            self.bar.update(1)
        self.bar.close()


class SilentProgress:
    def step(self, description: str) -> None:
        pass

    def close(self) -> None:
        pass


def make_progress(total: int, enabled: bool) -> PlainProgress | BarProgress | SilentProgress:
    if not enabled:
        return SilentProgress()
    try:
        from tqdm import tqdm
    except ImportError:
        return PlainProgress(total)
    return BarProgress(total, tqdm)
