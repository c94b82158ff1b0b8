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

A target that offloads layers to an accelerator (`vta`) compiles them one by one: the
bar then goes over them (`CompileProgress.layers`), and `strato run` shows the
simulation of each call with `SimulationProgress`:

    VTA: compiling conv layers 5/19 layers |███       | [00:02<00:05, layer2.0.conv1]
    VTA: simulating, run 2/3 12/19 layers |██████    | [00:05<00:03, layer3.0.conv1]

Without tqdm, or with `lines=True` (`strato run -v`), each layer is a line instead:

    strato: VTA: compiling conv layer 5/19: layer2.0.conv1
    strato: VTA: simulating conv layer 12/19 (run 2/3): layer3.0.conv1
"""

from __future__ import annotations

import sys
import time

DELAY_S = 2.0
"""How long a compile runs before its bar appears."""


def _tqdm():
    """tqdm's bar class, None when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _transient_bar(tqdm, *, total: int, unit: str, bar_format: str, **fields):
    """A bar on stderr that appears once its task has run `DELAY_S` and is erased when
    closed."""
    return tqdm(
        total=total,
        unit=unit,
        file=sys.stderr,
        delay=DELAY_S,
        leave=False,
        dynamic_ncols=True,
        bar_format=bar_format,
        **fields,
    )


class CompileProgress:
    """One bar over a compile's passes, then over its build's kernels."""

    def __init__(self, passes: int, *, enabled: bool) -> None:
        self._bar = None
        self._plain_since: float | None = None
        tqdm = _tqdm()
        if tqdm is None:
            if enabled:
                self._plain_since = time.monotonic()
            enabled = False
        if enabled:
            self._bar = _transient_bar(
                tqdm,
                total=passes,
                unit=" passes",
                bar_format="{desc:<20} {n_fmt}/{total_fmt}{unit} |{bar}| [{elapsed}]",
            )
            self._bar.set_description_str("import", refresh=False)
        self._passes = 0
        self._building = False
        self._lines = self._plain_since is not None
        self._layers: str | None = None

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

    def layers(self, what: str, done: int, total: int, name: str) -> None:
        """The build is through `done` of the `total` layers it offloads (`what`: "VTA:
        compiling conv layers") and starts layer `name`."""
        if self._lines:
            if done < total:
                print(
                    f"strato: {_singular(what)} {done + 1}/{total}: {name}",
                    file=sys.stderr,
                    flush=True,
                )
            return
        if self._bar is None:
            return
        if self._layers != what:
            self._layers = what
            self._building = True
            self._bar.unit = " layers"
            self._bar.bar_format = _LAYER_BAR
            self._bar.set_description_str(what, refresh=False)
            self._bar.set_postfix_str(name, refresh=False)
            self._bar.reset(total=total)
        self._bar.set_postfix_str(name, refresh=False)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


_LAYER_BAR = (
    "{desc:<20} {n_fmt}/{total_fmt}{unit} |{bar}| [{elapsed}<{remaining}{postfix}]"
)
"""The layer being compiled or simulated is the postfix: [00:05<00:03, layer3.0.conv1]."""


def _singular(what: str) -> str:
    """The singular of `what`: VTA: compiling conv layers -> VTA: compiling conv layer."""
    return what.removesuffix("s")


class SimulationProgress:
    """A bar over the offloaded layers of each call of a model that runs them on a
    simulator, or a line per layer (`lines`); neither when not `enabled`.

        progress = SimulationProgress("VTA", runs=3, enabled=sys.stderr.isatty(), lines=False)
        with reporting_progress(progress):
            model(x)    # the simulator reports each layer it starts
        progress.close()

    As the compile's bar, the bar shows once a call has run for `DELAY_S` and is gone
    when the call returns; without tqdm an enabled display prints lines."""

    def __init__(
        self, device: str, *, runs: int, enabled: bool, lines: bool = False
    ) -> None:
        self.device = device
        self.runs = runs
        self.run = 0
        self._bar = None
        self._tqdm = None
        if enabled and not lines:
            self._tqdm = _tqdm()
            lines = self._tqdm is None
        self._lines = lines

    def __call__(self, stage: str, done: int, total: int, name: str) -> None:
        """A listener of `strato.targets.vta.progress.reporting_progress`."""
        if done == 0:
            self.run += 1
        run = f"run {self.run}/{self.runs}" if self.runs > 1 else ""
        if self._lines:
            if done < total:
                suffix = f" ({run})" if run else ""
                print(
                    f"strato: {self.device}: {stage} conv layer {done + 1}/{total}{suffix}: {name}",
                    file=sys.stderr,
                    flush=True,
                )
            return
        if self._tqdm is None:
            return
        if done == 0:
            self.close()
            self._bar = _transient_bar(
                self._tqdm,
                total=total,
                unit=" layers",
                bar_format=_LAYER_BAR,
                desc=f"{self.device}: {stage}" + (f", {run}" if run else ""),
                postfix=name,
            )
        if self._bar is None:
            return
        self._bar.set_postfix_str(name, refresh=False)
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


__all__ = ["CompileProgress", "SimulationProgress"]
