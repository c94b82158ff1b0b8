"""A deferred Schedule (as schedule-default uses it) rebuilds the kernel only when it is
observed, and builds exactly the kernel an eager Schedule builds after every primitive."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strato.context import make_context
from strato.frontends.onnx import import_onnx
from strato.pipeline import LOWER_TO_LOOPS, run_pipeline
from strato.schedule import Schedule, ScheduleError
from strato.schedule.templates import ScheduleContext
from strato.targets.registry import get_target
from strato.transforms.schedule_default import schedule_default


def _value(name: str, shape) -> helper.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _dense_relu(n: int) -> ModuleOp:
    """MatMul [8, 24] x [24, n] then Relu, lowered to loop kernels."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["T"]), helper.make_node("Relu", ["T"], ["Y"])],
        "g",
        [_value("A", [8, 24]), _value("B", [24, n])],
        [_value("Y", [8, n])],
    )
    imported = import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    run_pipeline(make_context(), imported.module, f"graph-default,{LOWER_TO_LOOPS}")
    return imported.module


def _kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and "loop.kernel" in op.attributes]


def _cpu() -> ScheduleContext:
    return get_target("llvm").schedule_context()


def _apply_templates(sch: Schedule) -> list[str]:
    """Each stage's default template, in the order schedule-default applies them (those
    checked at every rebuild last), undone when it is refused; the refusals."""
    refused = []
    context = _cpu()
    matched = [(stage, context.template_for(sch, stage)) for stage in sch.get_stages()]
    matched.sort(key=lambda pair: pair[1] is not None and pair[1].checked_at_build)
    for stage, template in matched:
        if template is None or stage.name not in {s.name for s in sch.get_stages()}:
            continue
        snapshot, length = sch.state.copy(), len(sch.trace.steps)
        try:
            template.apply(sch, stage, template.defaults(context), context)
        except ScheduleError as error:
            sch.restore(snapshot, length)
            refused.append(f"{stage.name}: {error.message}")
    return refused


@pytest.mark.parametrize("n", [64, 61])
def test_deferred_builds_what_eager_builds(n: int) -> None:
    eager_module, deferred_module = _dense_relu(n), _dense_relu(n)
    for eager_kernel, deferred_kernel in zip(_kernels(eager_module), _kernels(deferred_module)):
        eager = Schedule(eager_module, kernel=eager_kernel.sym_name.data)
        deferred = Schedule(deferred_module, kernel=deferred_kernel.sym_name.data)
        deferred.deferred = True
        assert _apply_templates(eager) == _apply_templates(deferred)
        assert eager.trace.to_json() == deferred.trace.to_json()
        assert str(deferred.kernel) == str(eager.kernel)
    assert str(deferred_module) == str(eager_module)
    scheduled = _dense_relu(n)
    schedule_default(scheduled, _cpu())
    for k in _kernels(scheduled):
        for key in [key for key in k.attributes if key.startswith("schedule.")]:
            del k.attributes[key]
    assert str(scheduled) == str(eager_module)


def test_deferred_kernel_is_rebuilt_when_observed() -> None:
    module = _dense_relu(64)
    kernel = next(k for k in _kernels(module) if "relu" in k.sym_name.data)
    sch = Schedule(module, kernel=kernel.sym_name.data)
    sch.deferred = True
    stage = sch.get_stages()[-1]
    outer = sch.get_loops(stage)[0]
    sch.split(outer, [None, 4])
    assert sch.state.kernel is kernel and kernel.parent is module.body.block
    loops = sch.get_loops(stage)
    assert [l.extent for l in loops][:2] == [outer.extent // 4, 4]
    assert sch.state.kernel is kernel  # extents of a stage at the root come from the state
    rebuilt = sch.kernel
    assert rebuilt is not kernel and rebuilt.parent is module.body.block and kernel.parent is None
    assert sch.kernel is rebuilt  # not rebuilt again while nothing changed


def test_deferred_refusal_leaves_schedule_unchanged() -> None:
    module = _dense_relu(64)
    kernel = next(k for k in _kernels(module) if "relu" in k.sym_name.data)
    sch = Schedule(module, kernel=kernel.sym_name.data)
    sch.deferred = True
    stage = sch.get_stages()[-1]
    loops = sch.get_loops(stage)
    sch.split(loops[-1], [None, 3])  # a guarded tail: the innermost body is not straight-line
    before = str(sch.kernel)
    steps = len(sch.trace.steps)
    with pytest.raises(ScheduleError, match="straight-line"):
        sch.vectorize(sch.get_loops(stage)[-1])
    assert len(sch.trace.steps) == steps and str(sch.kernel) == before


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "transformer"])
def test_attached_extents_without_rebuild_are_the_rebuilt_kernels(name: str, monkeypatch) -> None:
    """The loop extents of a stage computed at another's loop, read from the region the
    last rebuild inferred (no rebuild), are those of the kernel rebuilt at that point,
    at every query of the default templates of a zoo model's kernels."""
    from strato.zoo import build_model

    imported = import_onnx(build_model(name))
    run_pipeline(make_context(), imported.module, f"graph-default,{LOWER_TO_LOOPS}")
    original = Schedule._attached_extents
    compared = []

    def checked(self: Schedule, stage):
        shortcut = original(self, stage)
        if shortcut is not None:
            rebuilt = self._loop_extents(stage.name)  # rebuilds the kernel
            full = stage.extents()
            leaves = {var: shortcut[var] for var in stage.leaves}
            assert leaves == {var: rebuilt.get(var, full[var]) for var in stage.leaves}
            compared.append(stage.name)
        return shortcut

    monkeypatch.setattr(Schedule, "_attached_extents", checked)
    schedule_default(imported.module, _cpu())
    assert compared
