"""te-dedup-primitives: primitives equal up to names become one, called from every site,
and the program computes what it did."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr

from strato.dialects import te
from strato.interpreters.te import run_te
from strato.testing.lowered_programs import LoweredProgram, lowered_programs
from strato.transforms.te_dedup_primitives import dedup_primitives


def _primitives(module: ModuleOp) -> list[te.PrimitiveOp]:
    return [op for op in module.ops if isinstance(op, te.PrimitiveOp)]


def _with_copies(module: ModuleOp) -> int:
    """Give every primitive a renamed copy (its values renamed too) that every other
    call of it goes to; how many copies were made."""
    calls: dict[str, list[te.CallOp]] = {}
    for op in module.walk():
        if isinstance(op, te.CallOp):
            calls.setdefault(op.callee.root_reference.data, []).append(op)
    copies = 0
    for primitive in _primitives(module):
        name = primitive.sym_name.data
        copy = primitive.clone()
        copy.sym_name = StringAttr(f"{name}_copy")
        for op in copy.walk():
            for result in op.results:
                result.name_hint = f"{result.name_hint or 'v'}_renamed"
        module.body.block.insert_op_after(copy, primitive)
        copies += 1
        for call in calls.get(name, [])[1::2]:
            call.callee = SymbolRefAttr(copy.sym_name.data)
    return copies


@settings(max_examples=15, deadline=None)
@given(program=lowered_programs("te", max_ops=4))
def test_copies_merge_back_and_results_stay(program: LoweredProgram):
    inputs = program.random_inputs(seed=3)
    expected = run_te(program.module, inputs)
    distinct = len(_primitives(program.module))
    copies = _with_copies(program.module)
    program.module.verify()
    replaced = dedup_primitives(program.module)
    program.module.verify()
    assert len(replaced) >= copies
    assert len(_primitives(program.module)) <= distinct
    assert not any(p.sym_name.data.endswith("_copy") for p in _primitives(program.module))
    for got, want in zip(run_te(program.module, inputs), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_an_unrolled_lstm_lowers_each_distinct_primitive_once():
    """The zoo LSTM unrolls into hundreds of primitives of a few distinct ones: after the
    pass, the loop level has the kernels it had after loop-dedup-kernels before, and
    loop-dedup-kernels finds nothing more to merge."""
    from xdsl.dialects import func

    from strato import zoo
    from strato.context import make_context
    from strato.dialects.loop import KERNEL_ATTR
    from strato.frontends.onnx import import_onnx
    from strato.pipeline import run_pipeline
    from strato.transforms.loop_dedup_kernels import dedup_kernels

    def kernels(module: ModuleOp) -> list[str]:
        return [
            op.sym_name.data
            for op in module.ops
            if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
        ]

    model = zoo.build_model("lstm", seed=0)
    lowered = {}
    for dedup in (False, True):
        module = import_onnx(model).module
        passes = "graph-default,convert-graph-to-te,te-inline-stages"
        run_pipeline(make_context(), module, passes)
        if dedup:
            before = len(_primitives(module))
            replaced = dedup_primitives(module)
            assert len(_primitives(module)) == before - len(replaced) < before / 10
        run_pipeline(make_context(), module, "convert-te-to-loops")
        merged = dedup_kernels(module)
        if dedup:
            assert merged == {}
        lowered[dedup] = str(module)
    assert lowered[True] == lowered[False]
