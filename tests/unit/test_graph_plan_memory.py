"""graph-plan-memory: the arena is valid (no live overlap), reuses memory, and leaves
the program's meaning alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import strato
from strato import zoo
from strato.context import make_context
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.targets.llvm.memref_to_llvm import heap_bytes
from strato.testing.graph_programs import GraphProgram, conv_programs, graph_programs
from strato.testing.optional import optional_module
from strato.transforms.graph_plan_memory import live_overlap, plan_memory

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
    assert live_overlap(plan.buffers, plan.views) is None
    for a in plan.buffers:
        for b in plan.buffers:
            if a is b or a.end < b.start or b.end < a.start or a.value in plan.views:
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
    assert seen["allocations"] == [[64, arena_bytes]]  # one 64-byte-aligned workspace buffer

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


# ---------------------------------------------------------------------------------------
# Concatenations done in place: each input is computed where the concatenation reads it

FIRE = """
func.func @main(%x: tensor<1x8x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w1 = graph.constant dense<0.125> : tensor<8x8x1x1xf32>
  %w3 = graph.constant dense<0.0625> : tensor<8x8x3x3xf32>
  %y1 = graph.conv %x, %w1 strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %a = graph.relu %y1 : tensor<1x8x6x6xf32>
  %y3 = graph.conv %x, %w3 strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  %b = graph.tanh %y3 : tensor<1x8x6x6xf32>
  %c = graph.concat %a, %b axis 1 : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x16x6x6xf32>
  %r = graph.sigmoid %c : tensor<1x16x6x6xf32>
  func.return %r : tensor<1x16x6x6xf32>
}
"""

# DenseNet's block: each concatenation holds every feature so far
DENSE = """
func.func @main(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.05> : tensor<8x8x3x3xf32>
  %v = graph.constant dense<0.03> : tensor<8x16x1x1xf32>
  %u = graph.constant dense<0.02> : tensor<8x24x1x1xf32>
  %x0 = graph.tanh %x : tensor<1x8x4x4xf32>
  %y1 = graph.conv %x0, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %x1 = graph.relu %y1 : tensor<1x8x4x4xf32>
  %c1 = graph.concat %x0, %x1 axis 1 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
  %y2 = graph.conv %c1, %v strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x4x4xf32>
  %x2 = graph.relu %y2 : tensor<1x8x4x4xf32>
  %c2 = graph.concat %x0, %x1, %x2 axis 1 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x24x4x4xf32>
  %y3 = graph.conv %c2, %u strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x24x4x4xf32>, tensor<8x24x1x1xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.relu %y3 : tensor<1x8x4x4xf32>
  func.return %r : tensor<1x8x4x4xf32>
}
"""


def _planned(text: str) -> tuple[ModuleOp, func.FuncOp]:
    module = Parser(make_context(), text).parse_module()
    run_pipeline(make_context(), module, "graph-fuse-ops,graph-plan-memory")
    return module, next(op for op in module.walk() if isinstance(op, func.FuncOp))


def _offsets(function: func.FuncOp) -> dict[str, int]:
    """Each planned value's name -> its arena offset."""
    found = {}
    for op in function.body.block.ops:
        if "arena_offsets" in op.attributes:
            for result, offset in zip(op.results, op.attributes["arena_offsets"].get_values()):
                found[result.name_hint] = offset
    return found


def _lowered_runs(text: str, shape: tuple[int, ...]) -> None:
    """The program lowered to loops (no kernel for a concatenation done in place) and
    compiled compute what the graph does."""
    from strato.interpreters.loop import run_loops
    from strato.pipeline import LOWER_TO_LOOPS
    from strato.runtime.signature import Signature
    from strato.targets.llvm.build import build_llvm

    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    (expected,) = run_graph(Parser(make_context(), text).parse_module(), [x])
    module, function = _planned(text)
    signature = Signature.from_function(function, ["x"], ["r"])
    run_pipeline(make_context(), module, LOWER_TO_LOOPS)
    callees = {op.callee.root_reference.data for op in module.walk() if isinstance(op, func.CallOp)}
    assert not any("concat" in name for name in callees)
    (looped,) = run_loops(module, [x])
    np.testing.assert_allclose(looped, expected, rtol=1e-5, atol=1e-6)
    run_pipeline(make_context(), module, "convert-loops-to-llvm")
    (compiled,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(compiled, expected, rtol=1e-5, atol=1e-6)


def test_a_fire_module_computes_its_branches_into_the_concatenation():
    _, function = _planned(FIRE)
    (concat,) = [op for op in function.body.block.ops if op.name == "graph.concat"]
    assert "in_place" in concat.attributes
    offsets = _offsets(function)
    assert offsets["a"] == offsets["c"] and offsets["b"] == offsets["c"] + 8 * 6 * 6 * 4
    _lowered_runs(FIRE, (1, 8, 6, 6))


def test_a_dense_blocks_concatenations_are_views_of_one_buffer():
    _, function = _planned(DENSE)
    concats = [op for op in function.body.block.ops if op.name == "graph.concat"]
    assert len(concats) == 2 and all("in_place" in op.attributes for op in concats)
    offsets = _offsets(function)
    feature = 8 * 4 * 4 * 4
    assert offsets["c1"] == offsets["c2"] == offsets["x0"]
    assert offsets["x1"] == offsets["x0"] + feature
    assert offsets["x2"] == offsets["x0"] + 2 * feature
    _lowered_runs(DENSE, (1, 8, 4, 4))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("tensor<1x8x6x6xf32>", "tensor<2x8x6x6xf32>"), "a batch of two: runs interleave"),
        (("%c = graph.concat %a, %b", "%c = graph.concat %a, %a"), "one value twice"),
        (("%c = graph.concat %a, %b", "%c = graph.concat %x, %b"), "a function argument"),
    ],
)
def test_a_concatenation_that_cannot_be_in_place_copies(change, why):
    text = FIRE.replace(*change)
    if "2x8" in change[1]:
        text = text.replace("tensor<1x16x6x6xf32>", "tensor<2x16x6x6xf32>")
    _, function = _planned(text)
    (concat,) = [op for op in function.walk() if op.name == "graph.concat"]
    assert "in_place" not in concat.attributes, why


def test_a_plan_that_misplaces_an_in_place_input_is_refused():
    from strato.diagnostics import StratoError
    from strato.pipeline import LOWER_TO_LOOPS

    module, function = _planned(FIRE)
    (b_producer,) = [
        op for op in function.body.block.ops if any(r.name_hint == "b" for r in op.results)
    ]
    from xdsl.dialects.builtin import DenseArrayBase, i64

    b_producer.attributes["arena_offsets"] = DenseArrayBase.from_list(i64, [_offsets(function)["c"]])
    with pytest.raises(StratoError, match="in_place"):
        run_pipeline(make_context(), module, LOWER_TO_LOOPS)


# concatenations often, of 16-channel values (whose runs are aligned): about one in
# seven is done in place, the others copy
JOINING_KINDS = ("conv", "relu", "batch_norm", "residual_add", "max_pool", *["channel_concat"] * 3)


@settings(max_examples=15, deadline=None)
@given(program=conv_programs(max_ops=7, channels=(16,), kinds=JOINING_KINDS))
def test_programs_with_concatenations_compute_the_same_in_place(program: GraphProgram):
    """Random convolutional programs joining branches (DenseNet and SqueezeNet style),
    fused, planned and lowered to loops: the loops, compiled (the loop interpreter takes
    minutes on 16-channel convolutions), compute what the graph does."""
    from strato.pipeline import LOWER_TO_LOOPS
    from strato.testing.equivalence import run_compiled_loops

    inputs = program.random_inputs(seed=4)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, f"graph-fuse-ops,graph-plan-memory,{LOWER_TO_LOOPS}")
    for got, want in zip(run_compiled_loops(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
