"""Loop-program features: fixed length, deterministic, and they see the schedule."""

import math
import random

import numpy as np
import pytest

from strato.autotuning.features import FEATURE_LENGTH, kernel_features
from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    (task,) = extract_tasks(gemm_model(32, 64, 48), "gemm")
    return SearchSpace(task)


def test_fixed_length_finite_and_deterministic(space):
    _, kernel = space.schedule(space.default())
    a = kernel_features(kernel)
    b = kernel_features(space.schedule(space.default())[1])
    assert a.shape == (FEATURE_LENGTH,) and a.dtype == np.float32
    assert np.all(np.isfinite(a))
    assert np.array_equal(a, b)


def test_flops_feature_counts_the_program(space):
    _, unscheduled = space.task.loop_module()
    features = kernel_features(unscheduled)
    assert features[0] == pytest.approx(math.log2(1 + 2 * 32 * 64 * 48))


def test_schedules_give_different_vectors(space):
    rng = random.Random(0)
    configs = {space.point(space.sample(rng)) for _ in range(8)}
    vectors = {kernel_features(space.schedule(space.config(p))[1]).tobytes() for p in configs}
    assert len(vectors) > len(configs) // 2


def test_vector_lanes_and_unroll_come_from_annotations(space):
    _, unscheduled = space.task.loop_module()
    plain = kernel_features(unscheduled)
    scheduled = kernel_features(space.schedule(space.default())[1])
    assert plain[4] == 1.0 and plain[5] == 1.0  # log2(1 + 1): no vector loop, nothing unrolled
    assert scheduled[4] > 1.0 and scheduled[5] > 1.0


def test_a_stage_without_arithmetic_shows_in_the_nest_features():
    """A conv task's layout transforms do no arithmetic, so the busiest nest (the
    convolution) does not see how they are scheduled. A copy back to NCHW done as a
    nest of its own shows in the nest section; one computed inside the convolution's
    nest, per tile, in the lanes of its buffers' accesses."""
    from strato.autotuning.features import (
        BUFFER_LENGTH,
        BUFFERS,
        GLOBAL_LENGTH,
        LEVEL_LENGTH,
        LEVELS,
        NEST_LENGTH,
        NESTS,
    )
    from strato.autotuning.testing import conv_model

    task = next(t for t in extract_tasks(conv_model(8, 16, 16, 3, 1)) if "conv" in t.name)
    space = SearchSpace(task)
    stage = next(s for s, knob, _ in space.dims if s.startswith("layout_transform") and knob == "vector_width")
    conv = next(s for s, knob, _ in space.dims if knob == "copy_out")
    levels = slice(GLOBAL_LENGTH, GLOBAL_LENGTH + LEVELS * LEVEL_LENGTH)
    buffers = GLOBAL_LENGTH + LEVELS * LEVEL_LENGTH
    nests = buffers + BUFFERS * BUFFER_LENGTH
    for copy_out, differs in ((False, slice(nests, None)), (True, slice(buffers, nests))):
        wide = {k: dict(v) for k, v in space.default().items()}
        wide[conv]["copy_out"] = copy_out
        scalar = {k: dict(v) for k, v in wide.items()}
        scalar[stage]["vector_width"] = 1
        a = kernel_features(space.schedule(wide)[1])
        b = kernel_features(space.schedule(scalar)[1])
        assert a.shape == b.shape == (nests + NESTS * NEST_LENGTH,)
        assert np.array_equal(a[levels], b[levels])  # the convolution's loops are the same
        assert not np.array_equal(a[differs], b[differs])