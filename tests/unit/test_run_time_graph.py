"""Graph functions over tensors of run-time sizes, compiled once for every size.

Graph ops that take `?` dimensions (element-wise, broadcasts, softmax, reductions and
layer normalization over static axes, dense, matmul, fused groups of them), the classes
of equal run-time dimensions (`graph.dims`), their te.size in each primitive
(convert-graph-to-te), and the function that takes the sizes and allocates its
intermediates at them (convert-te-to-loops), run by the JIT and the interpreters.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from strato.compiler import run_stages
from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects.graph.dims import RunTimeDims, SizeSum, implied_size_bounds
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.targets.llvm.kernels import compile_loops
from strato.targets.registry import get_target
from strato.testing.graph_programs import RunTimeGraphProgram, run_time_graph_programs

ROWS = """
func.func @rows(%x: tensor<?x8xf32> {graph.sizes = ["batch"]}, %y: tensor<?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xf32> {
  %s = graph.add %x, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = graph.relu %s : tensor<?x8xf32>
  %d = graph.dense %r, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %p = graph.softmax %d axes [1] : tensor<?x4xf32>
  func.return %p : tensor<?x4xf32>
}
"""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def lower(module: ModuleOp, spec: str) -> ModuleOp:
    run_pipeline(make_context(), module, spec)
    return module


def compile_for_llvm(module: ModuleOp, threads: int = 2):
    """The module through the llvm target's stages (graph-default, fusion, the lowering,
    schedule-default), compiled by the JIT."""
    run_stages(get_target("llvm").stages(), module)
    return compile_loops(module, threads=threads)


def rows_inputs(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((n, 8)).astype(np.float32),
        rng.standard_normal((n, 8)).astype(np.float32),
        rng.standard_normal((4, 8)).astype(np.float32),
    ]


def test_one_compile_runs_every_batch_size():
    """Compiled once, the function takes the batch after its buffers and runs at 0 to
    1000 rows as the graph interpreter does; the te and loop interpreters agree."""
    jit = compile_for_llvm(parse(ROWS))
    reference = parse(ROWS)
    for n in (0, 1, 3, 64, 1000):
        inputs = rows_inputs(n, n)
        out = np.full((n, 4), np.nan, np.float32)
        jit.function("rows")(*inputs, out, n)
        (expected,) = run_graph(reference, inputs, "rows")
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    inputs = rows_inputs(5)
    (expected,) = run_graph(reference, inputs, "rows")
    te_module = lower(parse(ROWS), "convert-graph-to-te")
    np.testing.assert_allclose(run_te(te_module, inputs, "rows")[0], expected, rtol=1e-5)
    loops = lower(te_module, "convert-te-to-loops")
    (interpreted,) = run_loops(loops, [*inputs, 5], "rows", output_shapes=[(5, 4)])
    np.testing.assert_allclose(interpreted, expected, rtol=1e-5)


def test_the_lowered_function_takes_each_size_once_by_name():
    loops = lower(parse(ROWS), "graph-default,convert-graph-to-te,convert-te-to-loops")
    (function,) = [
        op for op in loops.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "rows"
    ]
    assert [str(t) for t in function.function_type.inputs.data] == [
        "memref<?x8xf32>", "memref<?x8xf32>", "memref<4x8xf32>", "memref<?x4xf32>", "index",
    ]  # fmt: skip
    assert function.arg_attrs is not None
    assert function.arg_attrs.data[-1].data["loop.size"].data == "batch"  # type: ignore[union-attr]
    # run-time intermediates are allocated at their size, not planned in the arena
    assert function.attributes["arena_bytes"].value.data == 0  # type: ignore[union-attr]
    allocs = [op for op in function.walk() if op.name == "memref.alloc"]
    assert allocs and all(len(op.operands) == 1 for op in allocs)


@given(
    program=run_time_graph_programs(),
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=3),
)
def test_run_time_programs_compile_once_for_every_size(
    program: RunTimeGraphProgram, sizes: list[int]
):
    """Random programs over a batch of run-time size: one compile, run at each drawn
    size (0 included), equal to the graph interpreter at that size."""
    jit = compile_for_llvm(program.module.clone())
    for n in sizes:
        inputs = program.random_inputs(n, seed=n)
        (expected,) = run_graph(program.module, inputs, "main")
        out = np.full(expected.shape, np.nan, np.float32)
        jit.function("main")(*inputs, out, n)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


@given(program=run_time_graph_programs(max_ops=4), n=st.integers(1, 6))
def test_convert_graph_to_te_keeps_the_meaning_at_run_time_sizes(
    program: RunTimeGraphProgram, n: int
):
    inputs = program.random_inputs(n, seed=n)
    (expected,) = run_graph(program.module, inputs, "main")
    lowered = lower(program.module.clone(), "convert-graph-to-te")
    (result,) = run_te(lowered, inputs, "main")
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_dimension_classes_follow_the_ops_and_the_names():
    module = parse(
        """
        func.func @f(%a: tensor<?x4xf32> {graph.sizes = ["n"]}, %b: tensor<?x4xf32>,
                     %c: tensor<?x4xf32> {graph.sizes = ["n"]}, %d: tensor<?x?xf32>) -> tensor<?x4xf32> {
          %s = graph.add %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
          %r = graph.reduce_sum %s [1] keepdims : (tensor<?x4xf32>) -> tensor<?x1xf32>
          func.return %s : tensor<?x4xf32>
        }
        """
    )
    (function,) = module.ops
    assert isinstance(function, func.FuncOp)
    dims = RunTimeDims.of_function(function)
    a, b, c, d = function.body.block.args
    s, r = [op.results[0] for op in list(function.body.block.ops)[:2]]
    # a and c are one size by name, b by meeting a in the add
    assert {dims.name(v, 0) for v in (a, b, c, s, r)} == {"n"}
    assert (dims.name(d, 0), dims.name(d, 1)) == ("d_0", "d_1")


def test_sizes_the_arguments_do_not_give_are_named():
    with pytest.raises(VerifyException, match="names 2 size"):
        module = parse(
            """
            func.func @f(%a: tensor<?x4xf32> {graph.sizes = ["n", "m"]}) -> tensor<?x4xf32> {
              func.return %a : tensor<?x4xf32>
            }
            """
        )
        (function,) = module.ops
        assert isinstance(function, func.FuncOp)
        RunTimeDims.of_function(function)
    # a te function whose result has a size none of its arguments gives
    module = parse(
        """
        te.primitive @p {
          %n = te.size "n" : index
          %x = te.placeholder "x" sizes(%n) : tensor<?x2xf32>
          %r = te.compute "r" (%i, %j) sizes(%n) : tensor<?x2xf32> {
            %v = te.read %x[%i, %j] : tensor<?x2xf32>
            te.yield %v : f32
          }
          te.output %r : tensor<?x2xf32>
        }
        func.func @f(%x: tensor<?x2xf32> {te.sizes = ["n"]}) -> (tensor<?x2xf32> {te.sizes = ["m"]}) {
          %r = te.call @p(%x) : (tensor<?x2xf32>) -> tensor<?x2xf32>
          func.return %r : tensor<?x2xf32>
        }
        """
    )
    with pytest.raises(StratoError, match="result 0 of @f has the run-time size 'm', which no argument gives"):
        lower(module, "convert-te-to-loops")


def test_a_run_time_value_returned_as_it_is_is_copied_at_its_size():
    """An argument returned as it is (twice, and with a matrix of two run-time sizes,
    kept flat) is copied element by element to its output buffer."""
    module = parse(
        """
        func.func @f(%x: tensor<?x2xf32>, %y: tensor<?x?xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x?xf32>) {
          func.return %x, %x, %y : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x?xf32>
        }
        """
    )
    jit = compile_for_llvm(module)
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(12, dtype=np.float32).reshape(3, 4)
    outs = [np.zeros_like(x), np.zeros_like(x), np.zeros(12, np.float32)]
    jit.function("f")(x, y.ravel(), *outs, 5, 3, 4)
    np.testing.assert_array_equal(outs[0], x)
    np.testing.assert_array_equal(outs[1], x)
    np.testing.assert_array_equal(outs[2], y.ravel())


def test_sums_of_sizes_name_their_own_classes():
    """A concatenation along a run-time dimension sizes its result by the sum of the
    inputs' sizes: a class named by the sum, whichever order and nesting spells it."""
    module = parse(
        """
        func.func @f(%a: tensor<?x2xf32> {graph.sizes = ["past"]}, %b: tensor<?x2xf32> {graph.sizes = ["seq"]},
                     %c: tensor<3x2xf32>) -> tensor<?x2xf32> {
          %ab = graph.concat %a, %b axis 0 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
          %ba = graph.concat %b, %a axis 0 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
          %aba = graph.concat %ab, %c, %a axis 0 : (tensor<?x2xf32>, tensor<3x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
          %only = graph.concat %a axis 0 : (tensor<?x2xf32>) -> tensor<?x2xf32>
          func.return %aba : tensor<?x2xf32>
        }
        """
    )
    (function,) = module.ops
    assert isinstance(function, func.FuncOp)
    dims = RunTimeDims.of_function(function)
    ab, ba, aba, only = [op.results[0] for op in list(function.body.block.ops)[:4]]
    assert dims.name(ab, 0) == dims.name(ba, 0) == "past + seq" and dims.same((ab, 0), (ba, 0))
    assert dims.name(aba, 0) == "2 * past + seq + 3"
    assert dims.name(only, 0) == "past" and dims.same((only, 0), (function.args[0], 0))
    assert SizeSum.parse("2 * past + seq + 3") == SizeSum((("past", 2), ("seq", 1)), 3)
    assert SizeSum.parse("past") is None and SizeSum.parse("past -") is None
    quoted = SizeSum.of({"past length": 1, 'a "b"': -2}, -1)
    assert SizeSum.parse(quoted.text()) == quoted and quoted.evaluate({"past length": 9, 'a "b"': 2}) == 4
    # none of the inputs may be empty: each is read at a position clamped into it
    assert {name: bound.least for name, (bound, _) in implied_size_bounds(function).items()} == {
        "past": 1, "seq": 1,
    }  # fmt: skip


CACHE = """
func.func @cache(%past: tensor<2x?x4xf32> {graph.sizes = ["past"]}, %new: tensor<2x?x4xf32> {graph.sizes = ["seq"]}, %one: tensor<2x1x4xf32>) -> tensor<2x?x4xf32> {
  %c = graph.concat %past, %new, %one axis 1 : (tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<2x1x4xf32>) -> tensor<2x?x4xf32>
  %t = graph.tanh %c : tensor<2x?x4xf32>
  %d = graph.concat %t, %new axis 1 : (tensor<2x?x4xf32>, tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
  func.return %d : tensor<2x?x4xf32>
}
"""


@given(past=st.integers(1, 40), seq=st.integers(1, 9))
def test_concatenations_along_run_time_dimensions_compile_once(past: int, seq: int):
    """Past keys, new ones and a static row joined, then joined with the new ones
    again: one compile runs at every drawn size (the result's size computed by the
    caller, past + 2 * seq + 1), as the graph, te and loop interpreters do."""
    rng = np.random.default_rng(past * 16 + seq)
    inputs = [rng.standard_normal(shape).astype(np.float32) for shape in ((2, past, 4), (2, seq, 4), (2, 1, 4))]
    (expected,) = run_graph(parse(CACHE), inputs, "cache")
    assert expected.shape == (2, past + 2 * seq + 1, 4)
    jit = _compiled_cache()
    out = np.full(expected.shape, np.nan, np.float32)
    jit.function("cache")(*inputs, out, past, seq)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    te_module = lower(parse(CACHE), "convert-graph-to-te")
    np.testing.assert_allclose(run_te(te_module, inputs, "cache")[0], expected, rtol=1e-6)
    loops = lower(te_module, "convert-te-to-loops")
    # buffers of a run-time size after the first are flat
    flat = [inputs[0].ravel(), inputs[1].ravel(), inputs[2]]
    (interpreted,) = run_loops(loops, [*flat, past, seq], "cache", output_shapes=[(expected.size,)])
    np.testing.assert_allclose(interpreted, expected.ravel(), rtol=1e-6)


@functools.cache
def _compiled_cache():
    return compile_for_llvm(parse(CACHE))


NEIGHBOURS = """
func.func @neighbours(%x: tensor<3x?xf32> {graph.sizes = ["n"]}) -> (tensor<3x?xf32>, tensor<3x?xf32>) {
  %later = graph.slice %x starts [0, 2] steps [1, 1] : (tensor<3x?xf32>) -> tensor<3x?xf32>
  %earlier = graph.slice %x starts [0, 0] steps [1, 1] drops [0, 2] : (tensor<3x?xf32>) -> tensor<3x?xf32>
  %d = graph.sub %later, %earlier : (tensor<3x?xf32>, tensor<3x?xf32>) -> tensor<3x?xf32>
  %wide = graph.pad %d low [0, 3] high [0, 1] mode "constant" value 2.5 : (tensor<3x?xf32>) -> tensor<3x?xf32>
  %e = graph.exp %wide : tensor<3x?xf32>
  %m = graph.slice %x starts [0, 1] steps [1, 1] drops [0, 1] : (tensor<3x?xf32>) -> tensor<3x?xf32>
  func.return %e, %m : tensor<3x?xf32>, tensor<3x?xf32>
}
"""


@given(n=st.integers(3, 40))
def test_slices_and_pads_of_run_time_dimensions_compile_once(n: int):
    """Differences of neighbours two apart (`n - 2` of them), padded by 3 and 1 (`n + 2`),
    and the middle (`n - 2`): one compile runs at every size it takes as the graph, te
    and loop interpreters do. It takes n of 3 at least: the pad reads the differences,
    which must not be empty (the interpreters refuse the read at 2)."""
    x = np.random.default_rng(n).standard_normal((3, n)).astype(np.float32)
    expected = run_graph(parse(NEIGHBOURS), [x], "neighbours")
    assert [e.shape for e in expected] == [(3, n + 2), (3, n - 2)]
    jit = _compiled_neighbours()
    outs = [np.full(e.shape, np.nan, np.float32) for e in expected]
    jit.function("neighbours")(x, *[o.ravel() for o in outs], n)
    for got, want in zip(outs, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    te_module = lower(parse(NEIGHBOURS), "convert-graph-to-te")
    for got, want in zip(run_te(te_module, [x], "neighbours"), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    loops = lower(te_module, "convert-te-to-loops")
    shapes = [(e.size,) for e in expected]
    for got, want in zip(run_loops(loops, [x.ravel(), n], "neighbours", output_shapes=shapes), expected, strict=True):
        np.testing.assert_allclose(got, want.ravel(), rtol=1e-6)
    (function,) = parse(NEIGHBOURS).ops
    assert {name: bound.least for name, (bound, _) in implied_size_bounds(function).items()} == {"n": 3}


@functools.cache
def _compiled_neighbours():
    return compile_for_llvm(parse(NEIGHBOURS))


ENCODER_ROWS = """
func.func @block(%x: tensor<?x?x8xf32> {graph.sizes = ["batch", "seq"]}, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %n = graph.layer_norm %x axis 2 epsilon 1.0e-05 : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %d = graph.dense %n, %w, %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %g = graph.gelu %d : tensor<?x?x16xf32>
  func.return %g : tensor<?x?x16xf32>
}
"""


def block_inputs(batch: int, seq: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((batch, seq, 8)).astype(np.float32),
        rng.standard_normal((16, 8)).astype(np.float32),
        rng.standard_normal(16).astype(np.float32),
    ]


def test_kernels_of_independent_rows_run_as_blocks_of_static_sizes():
    """Kernels that compute each row (batch x seq) alone run as blocks of 32, 16, 8, 4 and 1
    rows of static sizes, which schedule-default schedules: no kernel of run-time sizes
    is left, and every row count (blocks of each size, a last block ending at the last
    row, single rows, rows spanning two batches) gives what the graph interpreter does;
    the loop interpreter runs the blocks too."""
    module = parse(ENCODER_ROWS)
    jit = compile_for_llvm(module)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and "loop.kernel" in op.attributes]
    assert kernels and not any(
        isinstance(t, IndexType) for k in kernels for t in k.function_type.inputs.data
    )
    assert all("schedule.template" in k.attributes for k in kernels)
    reference = parse(ENCODER_ROWS)
    for batch, seq in ((0, 5), (1, 1), (1, 3), (1, 5), (1, 8), (3, 7), (2, 32), (3, 15), (1, 100)):
        inputs = block_inputs(batch, seq, batch * seq)
        (expected,) = run_graph(reference, inputs, "block")
        out = np.full((batch, seq, 16), np.nan, np.float32)
        jit.function("block")(*inputs, out, batch, seq)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    inputs = block_inputs(3, 15, 1)
    (expected,) = run_graph(reference, inputs, "block")
    loops = lower(parse(ENCODER_ROWS), 'convert-graph-to-te{row_blocks=32,8,4,1},convert-te-to-loops')
    flat = [inputs[0].ravel(), *inputs[1:], 3, 15]  # buffers of two run-time sizes are flat
    (interpreted,) = run_loops(loops, flat, "block", output_shapes=[(3 * 15 * 16,)])
    np.testing.assert_allclose(interpreted.reshape(3, 15, 16), expected, rtol=1e-4, atol=1e-5)


SQUARE = """
func.func @square(%x: tensor<?x?xf32> {graph.sizes = ["n", "n"]}) -> tensor<?x?xf32> {
  %a = graph.abs %x : tensor<?x?xf32>
  func.return %a : tensor<?x?xf32>
}
"""


def test_a_kernel_of_one_size_twice_runs_whole():
    """An element-wise kernel of one op over [n, n] (T5's relative positions): its two
    dimensions are one size, so a block of rows, which fixes the size, would fix both;
    it runs as a kernel of run-time sizes instead, at every n."""
    module = parse(SQUARE)
    jit = compile_for_llvm(module)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and "loop.kernel" in op.attributes]
    assert any(isinstance(t, IndexType) for k in kernels for t in k.function_type.inputs.data)
    for n in (0, 1, 5, 40):
        x = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
        out = np.full((n, n), np.nan, np.float32)
        jit.function("square")(x, out, n)
        np.testing.assert_array_equal(out, np.abs(x))


ROW_BLOCKED = """
te.primitive @relu attributes {te.row_blocks = %s} {
  %%n = te.size "n" : index
  %%t0 = te.placeholder "t0" sizes(%%n) : tensor<?x4xf32>
  %%0 = te.compute "relu" (%%i, %%j) sizes(%%n) : tensor<?x4xf32> {
    %%1 = te.read %%t0[%%i, %%j] : tensor<?x4xf32>
    %%2 = arith.constant 0.0 : f32
    %%3 = arith.maximumf %%1, %%2 : f32
    te.yield %%3 : f32
  }
  te.output %%0 : tensor<?x4xf32>
}
te.primitive @one {
  %%t0 = te.placeholder "t0" : tensor<1x%d xf32>
  %%0 = te.compute "relu" (%%i, %%j) : tensor<1x%d xf32> {
    %%1 = te.read %%t0[%%i, %%j] : tensor<1x%d xf32>
    te.yield %%1 : f32
  }
  te.output %%0 : tensor<1x%d xf32>
}
func.func @main(%%x: tensor<?x4xf32> {te.sizes = ["n"]}) -> (tensor<?x4xf32> {te.sizes = ["n"]}) {
  %%y = te.call @relu(%%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %%y : tensor<?x4xf32>
}
"""


@pytest.mark.parametrize(
    ("blocks", "width", "message"),
    [
        ('{rows = ["n"], blocks = [[2 : i64, @one]]}', 4, "counts decreasing to 1"),
        ('{rows = ["n"], blocks = [[1 : i64, @gone]]}', 4, "@gone is not a primitive of static shapes"),
        ('{rows = ["n"], blocks = [[1 : i64, @one]]}', 5, "not the block of 1 rows [[1, 4], [1, 4]]"),
        ('{rows = ["m"], blocks = [[1 : i64, @one]]}', 4, "does not lead with the rows ['m'] alone"),
    ],
)
def test_blocks_of_rows_that_do_not_fit_are_refused(blocks: str, width: int, message: str):
    module = Parser(make_context(), ROW_BLOCKED.replace("%d xf32", f"{width}xf32") % blocks).parse_module()
    with pytest.raises(StratoError, match=re.escape(message)):
        lower(module, "convert-te-to-loops")
