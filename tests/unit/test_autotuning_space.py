"""Search spaces: sampling, neighbours, validity before building."""

import random

import pytest

from strato.autotuning.space import InvalidConfig, SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import gemm_model
from strato.transforms.schedule_default import KNOBS_ATTR


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    (task,) = extract_tasks(gemm_model(32, 48, 40), "gemm")
    return SearchSpace(task)


def test_task_is_the_matmul_with_its_flops(space):
    task = space.task
    assert task.flops == 2 * 32 * 48 * 40
    assert [s.template for s in task.stages] == ["dense"]
    assert space.size == len(list(space.grid())) > 1


def test_same_layer_in_one_model_is_one_task_with_weight():
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [16, 16])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [16, 16])
    nodes = [
        helper.make_node("MatMul", ["A", "A"], ["T"]),
        helper.make_node("Relu", ["T"], ["R"]),
        helper.make_node("MatMul", ["R", "A"], ["Y"]),
    ]
    graph = helper.make_graph(nodes, "g", [a], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    tasks = extract_tasks(model)
    weights = sorted(t.weight for t in tasks)
    assert sum(weights) >= 2
    assert len({t.key for t in tasks}) == len(tasks)


def test_a_primitive_repeated_at_every_step_weighs_its_call_sites():
    """The zoo LSTM's unrolled steps repeat a few kernels, merged when lowered: each task
    weighs as many kernels as the model calls."""
    from collections import Counter

    from xdsl.dialects import func

    from strato import zoo
    from strato.autotuning.task import _lowered, kernel_names
    from strato.schedule.knobs import kernel_of
    from strato.schedule.workload import kernel_key

    model = zoo.build_model("lstm", seed=0)
    tasks = extract_tasks(model, "lstm")
    module = _lowered(model.SerializeToString())
    calls = Counter(
        op.callee.root_reference.data for op in module.walk() if isinstance(op, func.CallOp)
    )
    sites_by_key = Counter()
    for name in kernel_names(module):
        sites_by_key[kernel_key(kernel_of(module, name))] += calls[name]
    assert len(kernel_names(module)) < sum(calls[name] for name in kernel_names(module))
    assert max(t.weight for t in tasks) > 1
    for task in tasks:
        assert task.weight == sites_by_key[task.key], task.name


def test_samples_are_in_their_domains(space):
    rng = random.Random(1)
    for _ in range(20):
        config = space.sample(rng)
        for stage, knob, domain in space.dims:
            assert config[stage][knob] in domain
        assert space.config(space.point(config)) == config


def test_neighbours_change_exactly_one_knob(space):
    config = space.default()
    point = space.point(config)
    neighbours = space.neighbour_points(point)
    assert len(neighbours) == sum(len(d) - 1 for _, _, d in space.dims)
    assert len(set(neighbours)) == len(neighbours)
    for other in neighbours:
        assert sum(a != b for a, b in zip(point, other)) == 1
    rng = random.Random(2)
    for _ in range(10):
        mutated = space.mutate_point(point, rng)
        assert sum(a != b for a, b in zip(point, mutated)) == 1


def test_out_of_domain_and_unknown_stage_are_invalid(space):
    stage, knob, domain = space.dims[0]
    with pytest.raises(InvalidConfig, match=knob):
        space.point({stage: {knob: max(domain) + 1000}})
    assert "not one of" in space.check({stage: {knob: max(domain) + 1000}})
    assert "no tunable stage" in space.check({"nonexistent": {}})


def test_schedule_applies_the_chosen_knobs(space):
    config = space.sample(random.Random(3))
    _, kernel = space.schedule(config)
    recorded = kernel.attributes[KNOBS_ATTR].data
    stage = space.dims[0][0]
    for knob, value in config[stage].items():
        attr = recorded[stage].data[knob]
        got = bool(attr.value.data) if isinstance(value, bool) else attr.value.data
        assert got == value
    assert space.check(config) is None


def test_kernel_module_is_the_kernel_alone_and_fresh_each_call():
    """A candidate is built in a copy of the task's kernel and the globals it reads, not
    of the whole model; changing one copy leaves the next untouched."""
    from xdsl.dialects import func, memref

    from strato.autotuning.testing import conv_model
    from strato.transforms.schedule_default import KNOBS_ATTR

    tasks = extract_tasks(conv_model(8, 16, 16, 3, 1))
    task = next(t for t in tasks if "conv" in t.name)
    whole, _ = task.loop_module()
    assert len([op for op in whole.ops if isinstance(op, func.FuncOp)]) > 1
    module, kernel = task.kernel_module()
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert funcs == [kernel] and kernel.sym_name.data == task.kernel
    assert all(op is kernel or isinstance(op, memref.GlobalOp) for op in module.ops)
    scheduled, kernel = SearchSpace(task).schedule(task.default_config())
    assert KNOBS_ATTR in kernel.attributes
    _, again = task.kernel_module()
    assert KNOBS_ATTR not in again.attributes and str(again) != str(kernel)
