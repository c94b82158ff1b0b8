"""Cost model and search strategies on a synthetic objective over a real space."""

import random
import sys
import time
import warnings

import numpy as np
import pytest

from strato.autotuning.cost_model import MissingDependency, XGBCostModel, relevance
from strato.autotuning.search import GridSearch, ModelSearch, RandomSearch
from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model

pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    (task,) = extract_tasks(gemm_model(32, 64, 48))
    return SearchSpace(task)


def _featurize(point):
    return np.asarray(point, dtype=np.float32)


def _cost(point):
    """A smooth synthetic time, best at the top index of every knob."""
    return 1.0 + sum((len(d) - 1 - i) ** 2 for i, (_, _, d) in zip(point, _cost.dims))


def test_relevance_is_relative_throughput_per_group():
    labels = relevance(np.array([2.0, 1.0, np.inf, 4.0, 8.0]), ["a", "a", "a", "b", "b"])
    assert labels.tolist() == [0.5, 1.0, 0.0, 1.0, 0.5]


def test_model_ranks_held_out_candidates(space):
    _cost.dims = space.dims
    rng = random.Random(0)
    points = list({space.sample_point(rng) for _ in range(120)})
    train, test = points[:80], points[80:]
    model = XGBCostModel(seed=0)
    model.fit(np.stack([_featurize(p) for p in train]), np.array([_cost(p) for p in train]),
              ["t"] * len(train))
    scores = model.predict(np.stack([_featurize(p) for p in test]))
    truth = -np.array([_cost(p) for p in test])
    rank = lambda x: np.argsort(np.argsort(x))  # noqa: E731
    assert np.corrcoef(rank(scores), rank(truth))[0, 1] > 0.7


def test_missing_xgboost_is_a_clear_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)
    with pytest.raises(MissingDependency, match=r"pip install 'strato\[tune\]'"):
        XGBCostModel()


def test_random_and_grid_never_repeat_and_cover(space):
    for search in (RandomSearch(space, seed=1), GridSearch(space)):
        seen = []
        while not search.exhausted:
            batch = search.propose(64)
            assert batch and not set(batch) & set(seen)
            seen += batch
            search.update(batch, [1.0] * len(batch))
        assert len(set(seen)) == space.size


def _trials_to_best(search, space, budget):
    best = min(_cost(p) for p in space.grid())
    done = 0
    while done < budget:
        batch = search.propose(8)
        costs = [_cost(p) for p in batch]
        search.update(batch, costs)
        done += len(batch)
        if best in costs:
            return done
    return budget + 1


def test_model_search_finds_the_optimum_sooner_than_random(space):
    _cost.dims = space.dims
    guided, blind = [], []
    for seed in range(2):
        model = ModelSearch(space, _featurize, seed=seed, steps=15, feature_budget=10_000,
                            model=XGBCostModel(seed, rounds=25))
        guided.append(_trials_to_best(model, space, 200))
        blind.append(_trials_to_best(RandomSearch(space, seed=seed), space, 400))
    assert sum(guided) < sum(blind)
    assert max(guided) <= 200


def test_model_search_proposes_unmeasured_points_and_uses_transfer(space):
    _cost.dims = space.dims
    rng = random.Random(5)
    others = [space.sample_point(rng) for _ in range(40)]
    transfer = (np.stack([_featurize(p) for p in others]), np.array([_cost(p) for p in others]),
                ["other"] * len(others))
    search = ModelSearch(space, _featurize, seed=0, transfer=transfer)
    assert search.model.trained
    batch = search.propose(8)
    assert len(set(batch)) == 8
    search.update(batch, [_cost(p) for p in batch])
    again = search.propose(8)
    assert not set(again) & set(batch)
    # trained on the other task only, its picks are already better than the average point
    mean = np.mean([_cost(p) for p in space.grid()])
    assert np.mean([_cost(p) for p in batch[:6]]) < mean


def test_invalid_candidates_stop_a_chain_quietly(space):
    """Points the featurizer rejects (configs that do not schedule) score -inf: a chain
    never moves onto one, is never proposed, and no arithmetic on two -inf scores warns."""
    _cost.dims = space.dims
    invalid = lambda point: sum(point) % 2 == 1  # noqa: E731 - half the space
    featurize = lambda point: None if invalid(point) else _featurize(point)  # noqa: E731
    search = ModelSearch(space, featurize, seed=1, warmup=4)
    rng = random.Random(2)
    start = [p for p in (space.sample_point(rng) for _ in range(40)) if not invalid(p)][:8]
    search.update(start, [_cost(p) for p in start])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            batch = search.propose(8)
            exploited = batch[: len(batch) - max(1, round(8 * search.epsilon))]
            assert exploited and not any(invalid(p) for p in exploited)
            search.update(batch, [None if invalid(p) else _cost(p) for p in batch])


def test_scoring_stops_at_its_time_budget(space):
    """A proposal whose points are slow to featurize (scheduling a large kernel) stops
    scoring after score_seconds and still returns a full batch of unmeasured points."""
    _cost.dims = space.dims
    calls = []

    def slow(point):
        calls.append(point)
        time.sleep(0.05)
        return _featurize(point)

    search = ModelSearch(space, slow, seed=0, warmup=4, score_seconds=0.3)
    rng = random.Random(4)
    start = [space.sample_point(rng) for _ in range(8)]
    search.update(start, [_cost(p) for p in start])
    before = len(calls)
    batch = search.propose(8)
    assert len(set(batch)) == 8 and not set(batch) & set(start)
    assert len(calls) - before <= 0.3 / 0.05 + 2  # the point in progress at the deadline
    unlimited = ModelSearch(space, slow, seed=0, warmup=4, score_seconds=None, feature_budget=40)
    unlimited.update(start, [_cost(p) for p in start])
    before = len(calls)
    unlimited.propose(8)
    assert len(calls) - before > 0.3 / 0.05 + 2
