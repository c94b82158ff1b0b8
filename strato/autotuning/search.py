"""Search strategies behind one interface: propose a batch of unmeasured points, learn
from their measurements.

    search = ModelSearch(space, featurize)        # or RandomSearch(space), GridSearch(space)
    points = search.propose(8)                    # points of the space not measured yet
    search.update(points, seconds)                # seconds: None for a failed candidate

`ModelSearch` is the TVM paper's explorer: a cost model (XGBoost ranking, retrained on
every update) screens candidates with parallel simulated annealing (chains walk from a
point to a neighbour, one knob changed, accepting by predicted rank at a falling
temperature); the batch is the best unmeasured points the chains met, with a fraction
`epsilon` of random unmeasured points so the model does not only confirm itself. Until
it has `warmup` measurements (and no records of other tasks to start from) it proposes
random points. Features are computed from the scheduled program of each point, once.
Scoring a point means scheduling it, which for a large kernel (an LSTM's 35 unrolled
steps: about 27 s a point) costs more than measuring a batch; a proposal stops scoring
after `score_seconds` and fills the rest of its batch with the best points met so far and
random ones.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence

import numpy as np

from strato.autotuning.space import Point, SearchSpace


class Search:
    def __init__(self, space: SearchSpace, seed: int = 0) -> None:
        self.space = space
        self.rng = random.Random(seed)
        self.measured: dict[Point, float | None] = {}

    @property
    def exhausted(self) -> bool:
        return len(self.measured) >= self.space.size

    def propose(self, count: int) -> list[Point]:
        raise NotImplementedError

    def update(self, points: Sequence[Point], seconds: Sequence[float | None]) -> None:
        for point, cost in zip(points, seconds, strict=True):
            self.measured[point] = cost

    def _random_unmeasured(self, count: int, taken: set[Point]) -> list[Point]:
        result: list[Point] = []
        if self.space.size - len(self.measured) - len(taken) <= 4 * count:
            rest = [p for p in self.space.grid() if p not in self.measured and p not in taken]
            self.rng.shuffle(rest)
            return rest[:count]
        while len(result) < count:
            point = self.space.sample_point(self.rng)
            if point not in self.measured and point not in taken:
                taken.add(point)
                result.append(point)
        return result


class RandomSearch(Search):
    """Uniform random points, never the same twice."""

    def propose(self, count: int) -> list[Point]:
        return self._random_unmeasured(count, set())


class GridSearch(Search):
    """Every point in order, the last knob changing fastest."""

    def __init__(self, space: SearchSpace, seed: int = 0) -> None:
        super().__init__(space, seed)
        self._grid = space.grid()

    def propose(self, count: int) -> list[Point]:
        result: list[Point] = []
        for point in self._grid:
            if point not in self.measured:
                result.append(point)
                if len(result) == count:
                    break
        return result


class ModelSearch(Search):
    def __init__(
        self,
        space: SearchSpace,
        featurize: Callable[[Point], np.ndarray | None],
        seed: int = 0,
        epsilon: float = 0.2,
        warmup: int = 8,
        chains: int = 8,
        steps: int = 12,
        feature_budget: int = 64,
        score_seconds: float | None = 20.0,
        transfer: tuple[np.ndarray, np.ndarray, list[str]] | None = None,
        model=None,
    ) -> None:
        from strato.autotuning.cost_model import XGBCostModel

        super().__init__(space, seed)
        self.featurize = featurize
        self.epsilon = epsilon
        self.warmup = warmup
        self.chains = chains
        self.steps = steps
        self.feature_budget = feature_budget
        self.score_seconds = score_seconds
        self.transfer = transfer
        self.model = model if model is not None else XGBCostModel(seed)
        self._features: dict[Point, np.ndarray | None] = {}
        self._group = space.task.key
        if transfer is not None and len(transfer[0]) >= 2:
            self.model.fit(*transfer)

    def features(self, point: Point) -> np.ndarray | None:
        if point not in self._features:
            self._features[point] = self.featurize(point)
        return self._features[point]

    def update(self, points: Sequence[Point], seconds: Sequence[float | None]) -> None:
        super().update(points, seconds)
        rows, costs = [], []
        for point, cost in self.measured.items():
            vector = self.features(point)
            if vector is None:
                continue
            rows.append(vector)
            costs.append(math.inf if cost is None else cost)
        if len(rows) < 2:
            return
        features = np.stack(rows)
        seconds_array = np.asarray(costs)
        groups = [self._group] * len(rows)
        if self.transfer is not None:
            features = np.concatenate([self.transfer[0], features])
            seconds_array = np.concatenate([self.transfer[1], seconds_array])
            groups = list(self.transfer[2]) + groups
        self.model.fit(features, seconds_array, groups)

    def _score(self, points: list[Point], deadline: float | None = None) -> np.ndarray:
        """Predicted scores (higher is faster); -inf for points that do not schedule and,
        past `deadline`, for points not featurized yet."""
        vectors = [
            self.features(p) if deadline is None or p in self._features or time.perf_counter() < deadline else None
            for p in points
        ]
        valid = [v for v in vectors if v is not None]
        scores = np.full(len(points), -np.inf)
        if valid:
            predicted = self.model.predict(np.stack(valid))
            iterator = iter(predicted)
            for i, v in enumerate(vectors):
                if v is not None:
                    scores[i] = next(iterator)
        return scores

    def propose(self, count: int) -> list[Point]:
        if not self.model.trained or len(self.measured) < self.warmup and self.transfer is None:
            return self._random_unmeasured(count, set())
        explore = max(1, round(count * self.epsilon)) if count > 1 else 0
        exploit = count - explore
        budget_start = len(self._features)
        deadline = None if self.score_seconds is None else time.perf_counter() + self.score_seconds
        # start the chains at the best measured points and random ones
        ranked = sorted(
            (p for p, c in self.measured.items() if c is not None), key=lambda p: self.measured[p]
        )
        starts = ranked[: self.chains // 2]
        while len(starts) < self.chains:
            starts.append(self.space.sample_point(self.rng))
        current = list(starts)
        scores = self._score(current, deadline)
        seen: dict[Point, float] = {
            p: s for p, s in zip(current, scores, strict=True) if p not in self.measured and np.isfinite(s)
        }
        spread = float(np.std(scores[np.isfinite(scores)])) if np.isfinite(scores).any() else 1.0
        spread = spread or 1.0
        for step in range(self.steps):
            if len(self._features) - budget_start >= self.feature_budget:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            temperature = 1.0 - step / self.steps
            proposals = [self.space.mutate_point(p, self.rng) for p in current]
            new_scores = self._score(proposals, deadline)
            for i, (point, score) in enumerate(zip(proposals, new_scores, strict=True)):
                if not np.isfinite(score):  # an invalid config: the chain stays where it is
                    continue
                if point not in self.measured:
                    seen[point] = float(score)
                delta = (score - scores[i]) / spread if np.isfinite(scores[i]) else math.inf
                if delta >= 0 or (
                    temperature > 0 and self.rng.random() < math.exp(delta / max(temperature, 1e-3))
                ):
                    current[i], scores[i] = point, score
        best = sorted(seen, key=lambda p: -seen[p])[:exploit]
        taken = set(best)
        return best + self._random_unmeasured(count - len(best), taken)
