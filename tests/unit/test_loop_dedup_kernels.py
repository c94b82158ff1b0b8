"""loop-dedup-kernels: kernels equal up to names become one, called from every site, and
the program computes what it did."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr

from strato.dialects.loop import KERNEL_ATTR
from strato.interpreters.loop import run_loops
from strato.testing.lowered_programs import LoweredProgram, lowered_programs
from strato.transforms.loop_dedup_kernels import dedup_kernels


def _kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]


def _with_copies(module: ModuleOp) -> int:
    """Give every kernel a renamed copy that every other call of it goes to; how many
    copies were made."""
    calls: dict[str, list[func.CallOp]] = {}
    for op in module.walk():
        if isinstance(op, func.CallOp):
            calls.setdefault(op.callee.root_reference.data, []).append(op)
    copies = 0
    for kernel in _kernels(module):
        name = kernel.sym_name.data
        copy = kernel.clone()
        copy.sym_name = StringAttr(f"{name}_copy")
        for arg in copy.args:
            arg.name_hint = f"{arg.name_hint or 'arg'}_renamed"
        module.body.block.insert_op_after(copy, kernel)
        copies += 1
        for call in calls.get(name, [])[1::2]:
            call.callee = SymbolRefAttr(copy.sym_name.data)
    return copies


@settings(max_examples=15, deadline=None)
@given(program=lowered_programs("loops", max_ops=4))
def test_copies_merge_back_and_results_stay(program: LoweredProgram):
    inputs = program.random_inputs(seed=3)
    expected = run_loops(program.module, inputs)
    distinct = len({k.sym_name.data for k in _kernels(program.module)})
    copies = _with_copies(program.module)
    program.module.verify()
    replaced = dedup_kernels(program.module)
    program.module.verify()
    assert len(replaced) >= copies
    assert len(_kernels(program.module)) <= distinct
    assert not any(name.endswith("_copy") for name in (k.sym_name.data for k in _kernels(program.module)))
    for got, want in zip(run_loops(program.module, inputs), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_resnet18_compiles_its_repeated_blocks_once():
    """ResNet-18's repeated blocks, lowered without te-dedup-primitives (which merges
    them first in the llvm target's pipeline), are kernels equal up to names: each is
    kept once, every call goes to it, and te-dedup-primitives finds the same ones."""
    from strato import zoo
    from strato.frontends.onnx import import_onnx
    from strato.targets.registry import Stage, get_target, run_stages
    from strato.transforms.te_dedup_primitives import TeDedupPrimitivesPass

    model = zoo.build_model("resnet18", image_size=32, width=8, num_classes=10)
    target = get_target("llvm -threads=1")
    stages = target.lowering_stages()
    without_te_dedup = tuple(
        Stage(s.name, tuple(p for p in s.passes if not isinstance(p, TeDedupPrimitivesPass)), s.check)
        for s in stages
    )
    module = import_onnx(model).module
    run_stages(without_te_dedup, module)
    before = len(_kernels(module))
    replaced = dedup_kernels(module)
    assert len(_kernels(module)) == before - len(replaced) < before
    merged_first = import_onnx(model).module
    run_stages(stages, merged_first)
    assert dedup_kernels(merged_first) == {}
    assert str(merged_first) == str(module)
    calls = {op.callee.root_reference.data for op in module.walk() if isinstance(op, func.CallOp)}
    assert calls == {k.sym_name.data for k in _kernels(module)}
