"""Measurement on a Dask cluster (a LocalCluster on loopback)."""

import os

import numpy as np
import pytest

from strato.autotuning.measure import DaskPool, measure
from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def pool():
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    )
    client = distributed.Client(cluster)
    with DaskPool(client, timeout=60) as pool:
        yield pool
    client.close()
    cluster.close()


def test_dask_measures_a_candidate_and_survives_a_crash(pool):
    from strato.autotuning.measure import run_candidate

    (task,) = extract_tasks(gemm_model(16, 32, 24))
    space = SearchSpace(task)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 32)).astype(np.float32)
    (result,) = measure(pool, task, [space.default()], [a @ b], repeats=2)
    assert result.ok and len(result.costs) == 2
    crashed, after = pool.run(
        [(os._exit, (5,)), (run_candidate, (task, space.default(), [a @ b], 1, 0))]
    )
    assert crashed.error == "crashed: exit code 5"
    assert after.error is None and len(after.value.costs) == 1 and after.value.trace["steps"]
