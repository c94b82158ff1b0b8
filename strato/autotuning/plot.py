"""Tuning curves: the best GFLOP/s found after each trial, one search next to another.

    draw_curves({"xgb": results, "random": baseline}, "curves.png")

One panel a task (the `max_panels` heaviest, by their share of the model's work), one line
a search; `strato tune --plot OUT.png` draws the run's search next to the other of xgb and
random tuned with the same budgets. matplotlib is the optional `tune` extra.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

from strato.autotuning.tuner import TuneResult
from strato.diagnostics import StratoError

COLORS = {"xgb": "tab:blue", "random": "tab:orange", "grid": "tab:green"}


def draw_curves(
    runs: Mapping[str, Sequence[TuneResult]], path: str, max_panels: int = 6
) -> int:
    """Write the curves of `runs` (search name -> a result per task, in the same order
    for every search) to the image `path`, its format from its suffix; the panels drawn."""
    try:
        import matplotlib
    except ImportError:
        raise StratoError("--plot needs matplotlib: pip install 'strato[tune]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from strato.runtime.atomic_write import write_atomically

    first = next(iter(runs.values()))
    tuned = [i for i, r in enumerate(first) if r.trials > 0]
    tuned.sort(key=lambda i: -first[i].task.flops * first[i].task.weight)
    panels = tuned[:max_panels]
    if not panels:
        raise StratoError("nothing to plot: no task was tuned", location=path)
    columns = min(3, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.5 * columns, 3.4 * rows), squeeze=False)
    for axis in axes.flat[len(panels):]:
        axis.set_visible(False)
    for axis, index in zip(axes.flat, panels, strict=False):
        for search, results in runs.items():
            history = results[index].history
            axis.plot(range(1, len(history) + 1), history, label=search,
                      color=COLORS.get(search), marker="." if len(history) < 40 else None)
        task = first[index].task
        title = task.name if task.weight == 1 else f"{task.name} (x{task.weight})"
        axis.set_title(title, fontsize="small")
        axis.set_xlabel("trials")
        axis.set_ylabel("best GFLOP/s so far")
        axis.legend(fontsize="small")
    figure.tight_layout()
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else "png"
    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format=suffix)
    except ValueError as error:  # an image format matplotlib does not write
        raise StratoError(str(error).splitlines()[0], location=path) from None
    finally:
        plt.close(figure)
    write_atomically(path, buffer.getvalue(), what="the plot")
    return len(panels)
