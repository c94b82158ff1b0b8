"""Autotuning: search spaces, features, cost model, search, measurement, database.

One role a module:

    task.py        tuning tasks: the distinct loop-level kernels of a model
    space.py       a task's search space from its templates' knobs; validity checks
    features.py    fixed-length loop-program features of a scheduled kernel
    measure.py     candidates built, checked and timed in worker processes (or on Dask)
    database.py    the append-only JSON-lines tuning log; best record per task
    cost_model.py  XGBoost ranking model (the optional `tune` extra)
    search.py      simulated annealing over the cost model; random and grid search
    tuner.py       tune a model's tasks within a trial budget
    hook.py        how schedule-default picks chosen knob values
    cli.py         `strato tune MODEL --trials N --log tuning.jsonl [--dask ADDRESS]`

Compiling with a tuning log:

    with strato.autotuning.use_tuning_log("tuning.jsonl"):
        compiled = strato.compile(model)
    # or the pass option: schedule-default{tuning_log="tuning.jsonl"}
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "use_tuning_log": "strato.autotuning.hook",
    "tune_model": "strato.autotuning.tuner",
    "extract_tasks": "strato.autotuning.task",
    "SearchSpace": "strato.autotuning.space",
    "Database": "strato.autotuning.database",
}


def __getattr__(name: str) -> Any:  # imported on first use: schedule-default imports this package
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'strato.autotuning' has no attribute {name!r}")


__all__ = list(_EXPORTS)
