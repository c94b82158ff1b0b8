"""graph-plan-memory: the arena is valid (no live overlap), reuses memory, and leaves
the program's meaning alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import strato
from strato import zoo
from strato.context import make_context
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.targets.llvm.memref_to_llvm import heap_bytes
from strato.testing.graph_programs import GraphProgram, graph_programs
from strato.testing.optional import optional_module
from strato.transforms.graph_plan_memory import plan_memory

CHAIN = """
func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = graph.relu %x : tensor<256xf32>
  %b = graph.relu %a : tensor<256xf32>
  %c = graph.relu %b : tensor<256xf32>
  %d = graph.relu %c : tensor<256xf32>
  func.return %d : tensor<256xf32>
}
"""


def test_a_chain_needs_two_buffers():
    module = Parser(make_context(), CHAIN).parse_module()
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    plan = plan_memory(function)
    assert plan.intermediate_bytes == 3 * 1024
    assert plan.arena_bytes == 2 * 1024


@given(program=graph_programs(max_ops=8))
def test_live_buffers_never_overlap(program: GraphProgram):
    inputs = program.random_inputs(seed=3)
    expected = run_graph(program.module, inputs)
    function = next(op for op in program.module.walk() if isinstance(op, func.FuncOp))
    plan = plan_memory(function)
    for a in plan.buffers:
        for b in plan.buffers:
            if a is b or a.end < b.start or b.end < a.start:
                continue
            assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
    assert plan.arena_bytes <= sum((b.size + 63) // 64 * 64 for b in plan.buffers)
    run_pipeline(make_context(), program.module, "graph-plan-memory")
    program.module.verify()
    for a, e in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_array_equal(a, e)


A_VALUE_READ_BY_A_CALL = """
func.func @g(%x: tensor<256xf32>) -> tensor<256xf32> {
  func.return %x : tensor<256xf32>
}
func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = graph.relu %x : tensor<256xf32>
  %b = graph.relu %x : tensor<256xf32>
  %c = func.call @g(%a) : (tensor<256xf32>) -> tensor<256xf32>
  %d = graph.add %b, %c : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  func.return %d : tensor<256xf32>
}
"""


def test_a_reader_that_is_not_a_kernel_keeps_a_value_alive():
    module = Parser(make_context(), A_VALUE_READ_BY_A_CALL).parse_module()
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    a, b = plan_memory(main).buffers
    assert a.end >= b.start  # %a is read by the call, after %b is made
    assert a.offset != b.offset


# ---------------------------------------------------------------------------------------
# The plan is what runs: a compiled model allocates its arena once per call

ort = optional_module("onnxruntime")

SMALL_MODELS = {
    "resnet18": {"image_size": 32, "width": 8, "num_classes": 10},
    "mobilenet_v2": {"width_mult": 0.25, "image_size": 32, "num_classes": 10},
}


@pytest.mark.parametrize("name", sorted(SMALL_MODELS))
def test_the_compiled_entry_allocates_one_arena(name: str):
    model = zoo.build_model(name, seed=0, **SMALL_MODELS[name])
    seen: dict[str, object] = {}

    def after(stage: str, module: ModuleOp) -> None:
        if stage == "graph-plan-memory":
            main = next(op for op in module.ops if isinstance(op, func.FuncOp))
            seen["arena_bytes"] = main.attributes["arena_bytes"].value.data
            seen["intermediate_bytes"] = main.attributes["intermediate_bytes"].value.data
        if stage == "schedule-default":  # the last: the build lowers what it leaves
            main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
            seen["allocations"] = [
                [op.alignment.value.data, heap_bytes(op)]
                for op in main.walk()
                if isinstance(op, memref.AllocOp) and heap_bytes(op)
            ]

    compiled = strato.compile(model, after_stage=after)
    arena_bytes = seen["arena_bytes"]
    assert 0 < arena_bytes < seen["intermediate_bytes"]  # buffers are reused
    assert seen["allocations"] == [[64, arena_bytes]]  # aligned_alloc(64, arena_bytes)

    rng = np.random.default_rng(1)
    (x,) = [rng.standard_normal(spec.shape, dtype=np.float32) for spec in compiled.inputs]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {compiled.input_names[0]: x})
    for _ in range(2):  # the arena of one call does not leak into the next
        (actual,) = compiled(x)
        np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-5 * np.abs(expected).max())


def test_calls_from_two_threads_use_their_own_arenas():
    """The arena is allocated per call, so two threads calling one model at once (the
    entry runs without the GIL) never share intermediates."""
    from concurrent.futures import ThreadPoolExecutor

    model = zoo.build_model("mlp", batch=4, seed=0, sizes=(256, 512, 512, 10))
    compiled = strato.compile(model, cache=False)
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal(compiled.inputs[0].shape, dtype=np.float32) for _ in range(2)]
    expected = [compiled(x)[0] for x in inputs]

    def repeat(index: int) -> bool:
        return all(
            np.array_equal(compiled(inputs[index])[0], expected[index]) for _ in range(50)
        )

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(repeat, [0, 1])) == [True, True]
