"""convert-te-to-loops: the loop-level ABI of its result, its diagnostics, and
equivalence (te interpreter before, loop interpreter after) on random programs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from strato.context import make_context
from strato.diagnostics import LegalityError, StratoError
from strato.dialects import graph
from strato.dialects.loop import (
    ForOp,
    MemoryScope,
    is_init_loop,
    is_reduction_loop,
    loop_stage,
    memory_scope,
)
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_primitive, run_te
from strato.legality import check_legal
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs
from strato.testing.te_programs import (
    RunTimePrimitive,
    TeProgram,
    run_time_primitives,
    te_programs,
)
from strato.transforms.convert_te_to_loops import is_loop_level

LIT_FILE = Path(__file__).parents[1] / "lit" / "transforms" / "convert-te-to-loops.mlir"

MODEL = """
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<1x4xf32>
  %w = te.placeholder "w" : tensor<2x4xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.0 : tensor<1x2xf32> {
    %a = te.read %x[%i, %k] : tensor<1x4xf32>
    %b = te.read %w[%j, %k] : tensor<2x4xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<1x2xf32> {
    %v = te.read %d[%i, %j] : tensor<1x2xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<1x2xf32>
}
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, -0.5, 0.5]]> : tensor<2x4xf32>
  %y = te.call @dense_relu(%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
"""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def lower(module: ModuleOp) -> ModuleOp:
    run_pipeline(make_context(), module, "convert-te-to-loops")
    module.verify()
    return module


def functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def test_kernel_follows_the_loop_abi():
    kernel = functions(lower(parse(MODEL)))["dense_relu"]
    assert "loop.kernel" in kernel.attributes
    assert kernel.function_type.outputs.data == ()
    assert [str(t) for t in kernel.function_type.inputs.data] == [
        "memref<1x4xf32>",
        "memref<2x4xf32>",
        "memref<1x2xf32>",
    ]
    assert kernel.arg_attrs is not None
    assert ["loop.output" in a.data for a in kernel.arg_attrs.data] == [False, False, True]


def test_one_nest_per_stage_with_named_axes():
    kernel = functions(lower(parse(MODEL)))["dense_relu"]
    outer = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    # a reduction is an init nest and an update nest; every loop names its stage
    assert [loop.attributes["stage"].data for loop in outer] == ["dense", "dense", "relu"]
    init, update = outer[0], outer[1]
    assert all(is_init_loop(loop) for loop in init.walk() if isinstance(loop, ForOp))
    loops = [loop for loop in update.walk() if isinstance(loop, ForOp)]
    assert [loop.axis.data for loop in loops] == ["i", "j", "k"]
    assert [loop_stage(loop) for loop in loops] == ["dense"] * 3
    assert [is_reduction_loop(loop) for loop in loops] == [False, False, True]
    assert not any(is_init_loop(loop) for loop in loops)
    allocs = [op for op in kernel.walk() if isinstance(op, memref.AllocOp)]
    assert len(allocs) == 1 and memory_scope(allocs[0].memref.type) == MemoryScope.LOCAL
    deallocs = [op for op in kernel.walk() if isinstance(op, memref.DeallocOp)]
    assert deallocs and deallocs[0].next_op is kernel.body.block.last_op


def test_model_function_uses_globals_and_output_buffers():
    module = lower(parse(MODEL))
    main = functions(module)["main"]
    assert main.function_type.outputs.data == ()
    assert main.arg_attrs is not None
    assert ["loop.output" in a.data for a in main.arg_attrs.data] == [False, True]
    globals_ = [op for op in module.ops if isinstance(op, memref.GlobalOp)]
    assert [g.sym_name.data for g in globals_] == ["main_w"]
    assert globals_[0].constant is not None and globals_[0].sym_visibility.data == "private"
    call = next(op for op in main.walk() if isinstance(op, func.CallOp))
    assert call.arguments[-1] is main.args[-1]  # the result is written in place


def test_model_results_are_preserved():
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    module = parse(MODEL)
    expected = run_te(module, [x])
    actual = run_loops(lower(module), [x])
    np.testing.assert_array_equal(actual[0], expected[0])


@pytest.mark.parametrize("function", ["model", "edges"])
def test_lit_functions_are_preserved(function: str):
    # the lit file's functions cover copies of arguments, constants and values returned
    # twice, intermediates and unused results
    text = LIT_FILE.read_text()
    module = parse(text)
    entry = functions(module)[function]
    rng = np.random.default_rng(1)
    inputs = [
        rng.standard_normal(t.get_shape()).astype(np.float32)
        for t in entry.function_type.inputs.data
    ]
    expected = run_te(module, inputs, function)
    actual = run_loops(lower(module), inputs, function)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


MIXED = """
te.primitive @p {
  %a = te.placeholder "a" : tensor<4xf32>
  %q = te.placeholder "q" : tensor<2x3xi32>
  %r = te.compute "mix" (%i) : tensor<4xf32> {
    %x = te.read %a[%i] : tensor<4xf32>
    %z = arith.constant 0.0 : f32
    %lt = arith.cmpf olt, %x, %z : f32
    %e = math.exp %x : f32
    %t = math.tanh %x : f32
    %s = arith.select %lt, %e, %t : f32
    te.yield %s : f32
  }
  %n = te.reduce "imax" max (%i) over (%k : 3) init -7 : tensor<2xi32> {
    %v = te.read %q[%i, %k] : tensor<2x3xi32>
    %two = arith.constant 2 : i32
    %h = arith.divsi %v, %two : i32
    te.yield %h : i32
  }
  %c = te.reduce "count" sum () over (%k0 : 2, %k1 : 3) init 0 : tensor<i32> {
    %v = te.read %q[%k0, %k1] : tensor<2x3xi32>
    %zero = arith.constant 0 : i32
    %pos = arith.cmpi sgt, %v, %zero : i32
    %one = arith.constant 1 : i32
    %b = arith.select %pos, %one, %zero : i32
    te.yield %b : i32
  }
  te.output %r, %n, %c : tensor<4xf32>, tensor<2xi32>, tensor<i32>
}
func.func @main(%a: tensor<4xf32>, %q: tensor<2x3xi32>) -> (tensor<4xf32>, tensor<2xi32>, tensor<i32>) {
  %r, %n, %c = te.call @p(%a, %q) : (tensor<4xf32>, tensor<2x3xi32>) -> (tensor<4xf32>, tensor<2xi32>, tensor<i32>)
  func.return %r, %n, %c : tensor<4xf32>, tensor<2xi32>, tensor<i32>
}
"""


def test_integer_reductions_and_math_are_preserved():
    a = np.array([-1.5, 0.0, 0.75, -3.0], np.float32)
    q = np.array([[-7, 3, 9], [5, -1, -12]], np.int32)
    module = parse(MIXED)
    expected = run_te(module, [a, q])
    actual = run_loops(lower(module), [a, q])
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(expected[1], [4, 2])
    assert expected[2] == 3


@settings(max_examples=40, deadline=None)
@given(program=te_programs())
def test_pass_preserves_semantics(program: TeProgram):
    inputs = program.random_inputs(seed=0)
    expected = run_te(program.module, inputs)
    lower(program.module)
    actual = run_loops(program.module, inputs)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(program=run_time_primitives(), sizes=st.lists(st.integers(0, 7), min_size=1, max_size=3))
def test_pass_preserves_semantics_at_every_run_time_size(program: RunTimePrimitive, sizes: list[int]):
    """A primitive whose first axis is a run-time size, lowered once and interpreted at
    several sizes (none at all included), computes what the te interpreter computes."""
    primitive = program.primitive.clone()
    lowered = lower(program.module)
    outputs = list(primitive.output.values)
    for n in sizes:
        inputs = program.random_inputs(n, seed=n)
        expected = run_primitive(primitive, inputs)
        shapes = [e.shape if len(e.shape) < 2 or all(d >= 0 for d in v.type.get_shape()[1:])
                  else (e.size,) for e, v in zip(expected, outputs)]
        flat_inputs = [
            a if len(a.shape) < 2 or all(d >= 0 for d in p.result.type.get_shape()[1:]) else a.ravel()
            for a, p in zip(inputs, primitive.placeholders)
        ]
        actual = run_loops(lowered, [*flat_inputs, n], "p", output_shapes=shapes)
        for a, e in zip(actual, expected, strict=True):
            np.testing.assert_allclose(a.reshape(e.shape), e, rtol=1e-5, atol=1e-6)


def test_nothing_of_te_or_tensors_is_left():
    module = lower(parse(LIT_FILE.read_text()))
    for op in module.walk():
        assert op is module or is_loop_level(op), op.name


def test_legality_names_what_is_left():
    with pytest.raises(LegalityError, match="'te.primitive' is still present after x"):
        check_legal(parse(MODEL), "x", legal_dialects=(), is_legal=is_loop_level)


def test_run_time_dimensions_without_sizes_or_copied_out_are_rejected():
    """A `?` dimension needs its te.size (the verifier); a placeholder of run-time size
    returned as it is would be a copy of unknown size (the lowering names it)."""
    with pytest.raises(VerifyException, match=r"takes 1 run-time size\(s\), got 0"):
        parse(
            """
            te.primitive @p {
              %a = te.placeholder "a" : tensor<?x4xf32>
              te.output %a : tensor<?x4xf32>
            }
            """
        )
    text = """
    te.primitive @p {
      %n = te.size "n" : index
      %a = te.placeholder "a" sizes(%n) : tensor<?x4xf32>
      te.output %a : tensor<?x4xf32>
    }
    """
    with pytest.raises(StratoError, match="returns a tensor of run-time size that no stage of it computes"):
        lower(parse(text))


def test_unlowered_graph_op_is_named():
    text = """
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = graph.relu %x : tensor<4xf32>
      func.return %y : tensor<4xf32>
    }
    """
    with pytest.raises(StratoError, match="cannot lower 'graph.relu' in @f"):
        lower(parse(text))


def test_region_op_in_a_stage_is_named():
    text = """
    te.primitive @p {
      %a = te.placeholder "a" : tensor<4xf32>
      %r = te.compute "branchy" (%i) : tensor<4xf32> {
        %v = te.read %a[%i] : tensor<4xf32>
        %c = arith.constant true
        %s = scf.if %c -> (f32) {
          scf.yield %v : f32
        } else {
          scf.yield %v : f32
        }
        te.yield %s : f32
      }
      te.output %r : tensor<4xf32>
    }
    """
    with pytest.raises(StratoError, match="cannot lower 'scf.if' in stage \"branchy\""):
        lower(parse(text))


def test_functions_returning_scalars_are_rejected():
    text = """
    func.func @f(%x: tensor<4xf32>) -> f32 {
      %c = arith.constant 1.0 : f32
      func.return %c : f32
    }
    """
    with pytest.raises(StratoError, match="returning tensors only; @f returns f32"):
        lower(parse(text))


# ---------------------------------------------------------------------------------------
# The memory plan of graph-plan-memory is what the function allocates

RELU4 = """
te.primitive @relu {
  %a = te.placeholder "a" : tensor<16xf32>
  %r = te.compute "relu" (%i) : tensor<16xf32> {
    %v = te.read %a[%i] : tensor<16xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<16xf32>
}
"""


def planned_chain(arena_bytes: int, offsets: tuple[str, str, str]) -> str:
    """relu applied four times; `offsets` are the arena_offsets of the first three calls."""
    a, b, c = offsets
    return RELU4 + f"""
func.func @main(%x: tensor<16xf32>) -> tensor<16xf32> attributes {{arena_bytes = {arena_bytes} : i64}} {{
  %a = te.call @relu(%x) {{arena_offsets = array<i64: {a}>}} : (tensor<16xf32>) -> tensor<16xf32>
  %b = te.call @relu(%a) {{arena_offsets = array<i64: {b}>}} : (tensor<16xf32>) -> tensor<16xf32>
  %c = te.call @relu(%b) {{arena_offsets = array<i64: {c}>}} : (tensor<16xf32>) -> tensor<16xf32>
  %d = te.call @relu(%c) {{arena_offsets = array<i64: -1>}} : (tensor<16xf32>) -> tensor<16xf32>
  func.return %d : tensor<16xf32>
}}
"""


def entry_ops(module: ModuleOp, op_type: type) -> list:
    return [op for op in functions(module)["main"].walk() if isinstance(op, op_type)]


def test_planned_intermediates_are_views_of_one_arena():
    module = lower(parse(planned_chain(128, ("0", "64", "0"))))
    (alloc,) = entry_ops(module, memref.AllocOp)
    assert alloc.memref.type.get_shape() == (128,)
    assert alloc.alignment is not None and alloc.alignment.value.data == 64
    views = entry_ops(module, memref.ViewOp)
    assert [v.byte_shift.owner.value.value.data for v in views] == [0, 64, 0]
    assert all(v.source is alloc.memref for v in views)
    (dealloc,) = entry_ops(module, memref.DeallocOp)
    assert dealloc.memref is alloc.memref
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    (y,) = run_loops(module, [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_without_a_plan_each_intermediate_is_allocated():
    text = planned_chain(128, ("0", "64", "0")).replace(" attributes {arena_bytes = 128 : i64}", "")
    module = lower(parse(text))
    assert len(entry_ops(module, memref.AllocOp)) == 3
    assert not entry_ops(module, memref.ViewOp)


@pytest.mark.parametrize(
    ("arena_bytes", "offsets", "message"),
    [
        (128, ("0", "0", "64"), r"two values alive at the same time at overlapping bytes \(0..64 and 0..64\)"),
        (128, ("0", "32", "0"), "arena offset 32 is not a multiple of 64"),
        (128, ("0", "128", "0"), "a value of 64 bytes at arena offset 128 ends past the arena's 128 bytes"),
        (128, ("0", "64, 0", "0"), "arena_offsets has 2 entries for 1 results"),
        (-1, ("0", "64", "0"), "arena_bytes must be a non-negative integer"),
    ],
)
def test_a_wrong_plan_is_a_diagnostic(arena_bytes: int, offsets: tuple[str, str, str], message: str):
    with pytest.raises(StratoError, match=message):
        lower(parse(planned_chain(arena_bytes, offsets)))


def test_a_returned_value_cannot_live_in_the_arena():
    text = RELU4 + """
    func.func @main(%x: tensor<16xf32>) -> tensor<16xf32> attributes {arena_bytes = 64 : i64} {
      %a = te.call @relu(%x) {arena_offsets = array<i64: 0>} : (tensor<16xf32>) -> tensor<16xf32>
      func.return %a : tensor<16xf32>
    }
    """
    with pytest.raises(StratoError, match="places a returned value at 0"):
        lower(parse(text))


@settings(max_examples=15, deadline=None)
@given(program=graph_programs(max_ops=6))
def test_planned_graph_programs_run_on_their_arena(program: GraphProgram):
    """Fused and planned graph programs lowered to loops compute what the graph does;
    the function allocates one buffer for its intermediates, the arena, and every
    intermediate is a view of it. (A scan or loop call also allocates the working
    buffers of its iterations: the slices, the next carried values, the rows.)"""
    inputs = program.random_inputs(seed=1)
    expected = run_graph(program.module, inputs)
    iterates = any(
        isinstance(op, graph.LoopOp | graph.LoopCallOp | graph.ScanOp | graph.ScanCallOp)
        for op in program.module.walk()
    )
    run_pipeline(
        make_context(),
        program.module,
        "graph-fuse-ops,graph-plan-memory,convert-graph-to-te,convert-te-to-loops",
    )
    main = functions(program.module)["main"]
    allocs = [op for op in main.walk() if isinstance(op, memref.AllocOp)]
    views = [op for op in main.walk() if isinstance(op, memref.ViewOp)]
    arenas = [op for op in allocs if op.alignment is not None and op.alignment.value.data == 64]
    assert len(arenas) == (1 if views else 0)
    if not iterates:
        assert allocs == arenas
    if views:
        assert arenas[0].memref.type.get_shape() == (main.attributes["arena_bytes"].value.data,)
        assert all(view.source is arenas[0].memref for view in views)
    for a, e in zip(run_loops(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


# -- run-time sizes ----------------------------------------------------------------------

RUN_TIME_TE = """
te.primitive @rows_softmax {
  %n = te.size "n" : index
  %x = te.placeholder "x" sizes(%n) : tensor<?x8xf32>
  %mx = te.reduce "mx" max (%i) over (%k : 8) init -1.0e30 sizes(%n) : tensor<?xf32> {
    %v = te.read %x[%i, %k] : tensor<?x8xf32>
    te.yield %v : f32
  }
  %e = te.compute "e" (%i, %j) sizes(%n) : tensor<?x8xf32> {
    %v = te.read %x[%i, %j] : tensor<?x8xf32>
    %m = te.read %mx[%i] : tensor<?xf32>
    %d = arith.subf %v, %m : f32
    %r = math.exp %d : f32
    te.yield %r : f32
  }
  %s = te.reduce "s" sum (%i) over (%k : 8) init 0.0 sizes(%n) : tensor<?xf32> {
    %v = te.read %e[%i, %k] : tensor<?x8xf32>
    te.yield %v : f32
  }
  %y = te.compute "y" (%i, %j) sizes(%n) : tensor<?x8xf32> {
    %v = te.read %e[%i, %j] : tensor<?x8xf32>
    %t = te.read %s[%i] : tensor<?xf32>
    %r = arith.divf %v, %t : f32
    te.yield %r : f32
  }
  te.output %y : tensor<?x8xf32>
}
te.primitive @scaled_columns {
  %n = te.size "n" : index
  %m = te.size "m" : index
  %a = te.placeholder "a" sizes(%n, %m) : tensor<?x?xf32>
  %b = te.placeholder "b" sizes(%m) : tensor<?xf32>
  %t = te.compute "t" (%i, %j) sizes(%n, %m) : tensor<?x?xf32> {
    %v = te.read %a[%i, %j] : tensor<?x?xf32>
    %w = te.read %b[%j] : tensor<?xf32>
    %p = arith.mulf %v, %w : f32
    te.yield %p : f32
  }
  %r = te.compute "r" (%i, %j) sizes(%n, %m) : tensor<?x?xf32> {
    %v = te.read %t[%i, %j] : tensor<?x?xf32>
    %one = arith.constant 1.0 : f32
    %p = arith.addf %v, %one : f32
    te.yield %p : f32
  }
  te.output %r : tensor<?x?xf32>
}
"""


def test_a_primitive_of_run_time_sizes_is_one_kernel_for_every_size():
    """Rows known at run time (buffers of that shape) and a run-time dimension after
    the first (flat buffers viewed with their sizes, a local buffer of run-time size):
    each primitive is lowered once, compiled once, and run at sizes from 1 up, by the
    JIT, the loop interpreter and the te interpreter alike."""
    from strato.interpreters.te import run_primitive
    from strato.targets.llvm.kernels import compile_loops

    te_module = parse(RUN_TIME_TE)
    primitives = {op.sym_name.data: op for op in te_module.ops}
    module = lower(parse(RUN_TIME_TE))
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    assert [str(t) for t in kernels["rows_softmax"].function_type.inputs.data] == [
        "memref<?x8xf32>", "memref<?x8xf32>", "index",
    ]
    assert [str(t) for t in kernels["scaled_columns"].function_type.inputs.data] == [
        "memref<?xf32>", "memref<?xf32>", "memref<?xf32>", "index", "index",
    ]
    jit = compile_loops(module, threads=2)
    rng = np.random.default_rng(0)
    for n, m in [(1, 1), (3, 5), (64, 2), (257, 9)]:
        x = rng.standard_normal((n, 8)).astype(np.float32)
        y = np.full((n, 8), np.nan, np.float32)
        jit.function("rows_softmax")(x, y, n)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
        (reference,) = run_primitive(primitives["rows_softmax"], [x])
        np.testing.assert_allclose(y, reference, rtol=1e-5, atol=1e-7)

        a = rng.standard_normal((n, m)).astype(np.float32)
        b = rng.standard_normal(m).astype(np.float32)
        r = np.full(n * m, np.nan, np.float32)
        jit.function("scaled_columns")(a.ravel(), b, r, n, m)
        np.testing.assert_allclose(r.reshape(n, m), a * b + 1, rtol=1e-6)
        if n * m <= 16:
            (interpreted,) = run_loops(
                module, [a.ravel(), b, n, m], "scaled_columns", output_shapes=[(n * m,)]
            )
            np.testing.assert_allclose(interpreted.reshape(n, m), a * b + 1, rtol=1e-6)
        (reference,) = run_primitive(primitives["scaled_columns"], [a, b])
        np.testing.assert_allclose(reference, a * b + 1, rtol=1e-6)


def test_run_time_sizes_the_placeholders_do_not_give_are_named():
    from strato.interpreters.te import run_primitive

    module = parse(
        """
        te.primitive @iota {
          %n = te.size "n" : index
          %r = te.compute "r" (%i) sizes(%n) : tensor<?xi64> {
            %v = arith.index_cast %i : index to i64
            te.yield %v : i64
          }
          te.output %r : tensor<?xi64>
        }
        """
    )
    (primitive,) = module.ops
    with pytest.raises(StratoError, match='no placeholder gives the run-time size "n"'):
        run_primitive(primitive, [])
    (values,) = run_primitive(primitive, [], sizes={"n": 4})
    np.testing.assert_array_equal(values, [0, 1, 2, 3])
    lowered = lower(parse(str(module)))
    (out,) = run_loops(lowered, [4], "iota", output_shapes=[(4,)])
    np.testing.assert_array_equal(out, [0, 1, 2, 3])
