"""A learned cost model: gradient-boosted trees ranking candidates by their features.

    model = XGBCostModel()
    model.fit(features, seconds, groups)    # groups: one task key per row
    scores = model.predict(features)        # higher is predicted faster

The model ranks, it does not predict time (XGBoost's `rank:pairwise` objective, rows of
one task forming one query group, labels the throughput relative to the group's best),
so records of other tasks train it as well as the task's own (transfer). XGBoost is the
optional `tune` extra, imported when a model is made.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class MissingDependency(Exception):
    """An optional package a feature needs is not installed."""


def _xgboost():
    try:
        import xgboost
    except ImportError:
        raise MissingDependency(
            "the XGBoost cost model needs xgboost: pip install 'strato[tune]' "
            "(or tune with --search random)"
        ) from None
    return xgboost


def relevance(seconds: np.ndarray, groups: Sequence[str]) -> np.ndarray:
    """Per row: the best time of its group divided by its time (1 for the fastest, 0 for
    a failed candidate)."""
    labels = np.zeros(len(seconds), dtype=np.float32)
    groups = np.asarray(groups)
    for group in np.unique(groups):
        rows = groups == group
        times = seconds[rows]
        ok = np.isfinite(times) & (times > 0)
        if not ok.any():
            continue
        best = times[ok].min()
        labels[rows] = np.where(ok, best / np.where(ok, times, 1.0), 0.0)
    return labels


class XGBCostModel:
    def __init__(self, seed: int = 0, rounds: int = 60) -> None:
        self._xgb = _xgboost()
        self.seed = seed
        self.rounds = rounds
        self._booster = None

    @property
    def trained(self) -> bool:
        return self._booster is not None

    def fit(self, features: np.ndarray, seconds: np.ndarray, groups: Sequence[str]) -> None:
        """Retrain from scratch on every measurement so far (failed ones: seconds = inf)."""
        if len(features) < 2:
            return
        order = np.argsort(np.asarray(groups), kind="stable")
        features = np.asarray(features, dtype=np.float32)[order]
        seconds = np.asarray(seconds, dtype=np.float64)[order]
        groups = [groups[i] for i in order]
        labels = relevance(seconds, groups)
        # XGBoost's ranking wants query ids as consecutive integers, sorted
        ids = {g: n for n, g in enumerate(dict.fromkeys(groups))}
        qid = np.array([ids[g] for g in groups], dtype=np.uint32)
        data = self._xgb.DMatrix(features, label=labels, qid=qid)
        params = {
            "objective": "rank:pairwise",
            "max_depth": 6,
            "eta": 0.3,
            "gamma": 1e-4,
            "min_child_weight": 1,
            "subsample": 1.0,
            "seed": self.seed,
            "nthread": 1,
            "verbosity": 0,
        }
        self._booster = self._xgb.train(params, data, num_boost_round=self.rounds)

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self._booster is None:
            return np.zeros(len(features), dtype=np.float32)
        data = self._xgb.DMatrix(np.asarray(features, dtype=np.float32))
        return self._booster.predict(data)
