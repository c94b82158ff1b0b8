"""A progress bar for a compile that takes a while: `strato run` and `strato compile`
show it on an interactive stderr once a compile has run for 2 s (a cache hit or a small
model finishes first and shows nothing), with the pass running, then the kernels the
build has compiled out of the model's distinct kernels:

    schedule-default  9/12 passes
    build: kernels    7/19 [00:03<00:04]

    progress = CompileProgress(passes=12, enabled=sys.stderr.isatty())
    strato.compile(model, before_stage=progress.pass_starts, progress=progress.kernels)
    progress.close()

The bar is tqdm's (the `tune` extra brings it); without tqdm, a compile that takes a
while prints one line when its build starts instead.
"""

from __future__ import annotations

import sys
import time

DELAY_S = 2.0
"""How long a compile runs before its bar appears."""


class CompileProgress:
    """One bar over a compile's passes, then over its build's kernels."""

    def __init__(self, passes: int, *, enabled: bool) -> None:
        self._bar = None
        self._plain_since: float | None = None
        try:
            from tqdm import tqdm
        except ImportError:
            if enabled:
                self._plain_since = time.monotonic()
            enabled = False
        if enabled:
            self._bar = tqdm(
                total=passes,
                unit=" passes",
                file=sys.stderr,
                delay=DELAY_S,
                leave=False,
                dynamic_ncols=True,
                bar_format="{desc:<20} {n_fmt}/{total_fmt}{unit} |{bar}| [{elapsed}]",
            )
            self._bar.set_description_str("import", refresh=False)
        self._passes = 0
        self._building = False

    def pass_starts(self, name: str) -> None:
        """The compile starts pass `name` (the one before it is done)."""
        if self._bar is None or self._building:
            return
        if self._passes:
            self._bar.update(1)
        self._passes += 1
        self._bar.set_description_str(name)

    def kernels(self, done: int, total: int) -> None:
        """The build has `done` of the model's `total` distinct kernels (those from the
        compile cache included)."""
        if self._plain_since is not None:
            if time.monotonic() - self._plain_since >= DELAY_S and done < total:
                print(
                    f"strato: compiling {total - done} kernel(s) ...",
                    file=sys.stderr,
                    flush=True,
                )
            self._plain_since = None
        if self._bar is None:
            return
        if not self._building:
            self._building = True
            self._bar.reset(total=total)
            self._bar.unit = " kernels"
            self._bar.bar_format = (
                "{desc:<20} {n_fmt}/{total_fmt}{unit} |{bar}| [{elapsed}<{remaining}]"
            )
            self._bar.set_description_str("build", refresh=False)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


__all__ = ["CompileProgress"]
