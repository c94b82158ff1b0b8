"""Autotuning: search spaces, features, cost model, search, measurement, database.

One role a module:

    task.py        tuning tasks: the distinct loop-level kernels of a model
    space.py       a task's search space from its templates' knobs; validity checks
    features.py    fixed-length loop-program features of a scheduled kernel
    measure.py     candidates built (by the task's target), checked and timed in worker
                   processes (or on Dask)
    cost_model.py  XGBoost ranking model (the optional `tune` extra)
    search.py      simulated annealing over the cost model; random and grid search
    tuner.py       tune a model's tasks within a trial budget

The tuning log it writes is `strato.schedule.database` (append-only JSON lines, the best
record per task), which compilation reads back; its command line is `strato tune MODEL
--trials N --db tuning.jsonl [--dask ADDRESS]` (strato.tools.tune_command).

Compiling with a tuning log:

    compiled = strato.compile(model, tuning="tuning.jsonl")
    # or the pass option: schedule-default{tuning_log="tuning.jsonl"}
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "tune_model": "strato.autotuning.tuner",
    "extract_tasks": "strato.autotuning.task",
    "SearchSpace": "strato.autotuning.space",
    "Database": "strato.schedule.database",
}


def __getattr__(name: str) -> Any:  # imported on first use: `import strato.autotuning` stays light
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'strato.autotuning' has no attribute {name!r}")


__all__ = list(_EXPORTS)
