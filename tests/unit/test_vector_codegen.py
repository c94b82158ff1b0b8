"""Code generation honours loop kinds: `vectorized` loops become LLVM vector code,
`unrolled` loops are unrolled, local tiles live in registers, kernel buffers are
`noalias`, and reductions carry `reassoc`/`contract`. Each kernel is also run through the
JIT and compared with the loop interpreter on random inputs."""

from __future__ import annotations

import re

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects.loop import ForOp
from strato.interpreters.loop import run_loops
from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
from strato.targets.llvm.emit import emit_llvm_ir
from strato.targets.llvm.host import target_machine
from strato.targets.llvm.jit import JitModule, optimize
from strato.targets.llvm.loop_to_llvm import LOOP_KIND_ATTR


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def lowered(text: str) -> ModuleOp:
    module = parse(text)
    convert_loops_to_llvm(module)
    module.verify()
    return module


def optimized_ir(text: str) -> str:
    module = llvm_binding.parse_assembly(emit_llvm_ir(lowered(text)))
    optimize(module, target_machine(jit=True), 3)
    return str(module)


def check_against_interpreter(text: str, name: str, inputs: list[np.ndarray]) -> None:
    expected = run_loops(parse(text), inputs, name)
    jit = JitModule(lowered(text))
    # the interpreter leaves unwritten float elements NaN (the strided store)
    outputs = [
        np.full_like(e, np.nan) if e.dtype.kind == "f" else np.zeros_like(e)
        for e in expected
    ]
    jit.function(name)(*inputs, *outputs)
    for got, want in zip(outputs, expected, strict=True):
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, want)


def body_of_k(ir: str) -> str:
    return re.split(r'define void @"?k"?\(', ir)[1]


def kernel(body: str, args: str, name: str = "k") -> str:
    return (
        f"func.func @{name}({args}) attributes {{loop.kernel}} {{\n{body}\n"
        "  func.return\n}\n"
    )


RELU = kernel(
    """
  loop.for %i = 0 to 16 vectorized axis "i" {
    %v = memref.load %a[%i] : memref<16xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %o[%i] : memref<16xf32>
  }""",
    "%a: memref<16xf32>, %o: memref<16xf32> {loop.output}",
)

# every address kind in one loop: contiguous, strided (2 i), broadcast (a[3]),
# gathered through a computed index (i floordiv 3), strided store, a per-lane cmpf
ACCESS_KINDS = kernel(
    """
  loop.for %i = 0 to 8 vectorized axis "i" {
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %two_i = arith.muli %i, %c2 : index
    %g = arith.floordivsi %i, %c3 : index
    %x = memref.load %a[%i] : memref<16xf32>
    %y = memref.load %a[%two_i] : memref<16xf32>
    %b = memref.load %a[%c3] : memref<16xf32>
    %w = memref.load %a[%g] : memref<16xf32>
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %p, %b : f32
    %gt = arith.cmpf ogt, %q, %w : f32
    %r = arith.select %gt, %q, %w : f32
    memref.store %r, %o[%i] : memref<8xf32>
    memref.store %q, %s[%two_i] : memref<16xf32>
  }""",
    "%a: memref<16xf32>, %o: memref<8xf32> {loop.output}, %s: memref<16xf32> {loop.output}",
)

INTEGERS = kernel(
    """
  loop.for %i = 0 to 16 vectorized axis "i" {
    %v = memref.load %a[%i] : memref<16xi32>
    %c = arith.constant 7 : i32
    %m = arith.muli %v, %c : i32
    %x = arith.xori %m, %v : i32
    %lt = arith.cmpi slt, %x, %c : i32
    %r = arith.select %lt, %x, %m : i32
    memref.store %r, %o[%i] : memref<16xi32>
  }""",
    "%a: memref<16xi32>, %o: memref<16xi32> {loop.output}",
)

# bools are bytes in a buffer: compared and stored lane by lane
BOOLS = kernel(
    """
  loop.for %i = 0 to 16 vectorized axis "i" {
    %v = memref.load %a[%i] : memref<16xf32>
    %z = arith.constant 0.0 : f32
    %gt = arith.cmpf ogt, %v, %z : f32
    %b = memref.load %m[%i] : memref<16xi1>
    %both = arith.andi %gt, %b : i1
    memref.store %both, %o[%i] : memref<16xi1>
  }""",
    "%a: memref<16xf32>, %m: memref<16xi1>, %o: memref<16xi1> {loop.output}",
)

# a register-blocked 4 x 16 tile: k outside, rows unrolled, columns vectorized
MICRO_KERNEL = kernel(
    """
  %acc = memref.alloc() : memref<4x16xf32, #loop.scope<local>>
  loop.for %i = 0 to 4 unrolled axis "i" {
    loop.for %j = 0 to 16 vectorized axis "j" {
      %z = arith.constant 0.0 : f32
      memref.store %z, %acc[%i, %j] : memref<4x16xf32, #loop.scope<local>>
    }
  }
  loop.for %k = 0 to 8 axis "k" {
    loop.for %i = 0 to 4 unrolled axis "i" {
      loop.for %j = 0 to 16 vectorized axis "j" {
        %x = memref.load %a[%i, %k] : memref<4x8xf32>
        %y = memref.load %b[%k, %j] : memref<8x16xf32>
        %p = arith.mulf %x, %y : f32
        %s = memref.load %acc[%i, %j] : memref<4x16xf32, #loop.scope<local>>
        %t = arith.addf %s, %p : f32
        memref.store %t, %acc[%i, %j] : memref<4x16xf32, #loop.scope<local>>
      }
    }
  }
  loop.for %i = 0 to 4 unrolled axis "i" {
    loop.for %j = 0 to 16 vectorized axis "j" {
      %v = memref.load %acc[%i, %j] : memref<4x16xf32, #loop.scope<local>>
      memref.store %v, %c[%i, %j] : memref<4x16xf32>
    }
  }
  memref.dealloc %acc : memref<4x16xf32, #loop.scope<local>>""",
    "%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32> {loop.output}",
)

# lane i reads what lane i - 1 wrote: not independent, so it must stay a loop
CARRIED = kernel(
    """
  loop.for %i = 1 to 16 vectorized axis "i" {
    %c1 = arith.constant 1 : index
    %p = arith.subi %i, %c1 : index
    %v = memref.load %o[%p] : memref<16xf32>
    %w = memref.load %a[%i] : memref<16xf32>
    %s = arith.addf %v, %w : f32
    memref.store %s, %o[%i] : memref<16xf32>
  }""",
    "%a: memref<16xf32>, %o: memref<16xf32> {loop.output}",
)

UNROLLED = kernel(
    """
  loop.for %i = 0 to 6 unrolled axis "i" {
    %v = memref.load %a[%i] : memref<6xf32>
    %n = arith.negf %v : f32
    memref.store %n, %o[%i] : memref<6xf32>
  }""",
    "%a: memref<6xf32>, %o: memref<6xf32> {loop.output}",
)


def random(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-100, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_a_vectorized_loop_becomes_one_vector_load_op_and_store():
    module = lowered(RELU)
    assert not [op for op in module.walk() if isinstance(op, ForOp)]
    ir = optimized_ir(RELU)
    assert "load <16 x float>" in ir
    assert "@llvm.maximum.v16f32" in ir
    assert "store <16 x float>" in ir
    assert "br " not in body_of_k(ir), "no loop left"


def long_exp(count: int, start: int = 0, step: int = 1, lanes: int = 16) -> str:
    """exp(x - 1) over `count` iterations of a loop too long for one vector, annotated
    to run in vectors of `lanes`."""
    size = start + count * step
    return kernel(
        f"""
  loop.for %i = {start} to {size} step {step} vectorized axis "i" attributes {{vector_lanes = {lanes} : i64}} {{
    %v = memref.load %a[%i] : memref<{size}xf32>
    %c = arith.constant 1.0 : f32
    %d = arith.subf %v, %c : f32
    %e = math.exp %d : f32
    memref.store %e, %o[%i] : memref<{size}xf32>
  }}""",
        f"%a: memref<{size}xf32>, %o: memref<{size}xf32> {{loop.output}}",
    )


@pytest.mark.parametrize("count, start, step", [(399, 0, 1), (196, 0, 1), (100, 3, 2), (70, 0, 1)])
def test_a_long_annotated_loop_runs_as_vectors_of_its_lanes_and_one_for_the_rest(count, start, step):
    """399 iterations in vectors of 16: 24 vectors in a loop, then one of 15 lanes (not
    vectors of 7, 399's largest divisor up to 16, nor a serial loop); the interpreter's
    results whatever the count, start and step."""
    text = long_exp(count, start, step)
    ir = emit_llvm_ir(lowered(text))
    assert "<16 x float>" in ir
    rest = count % 16
    assert f"<{rest} x float>" in ir
    size = start + count * step
    x = random(size, seed=count)
    expected = run_loops(parse(text), [x], "k")[0]
    jit = JitModule(lowered(text))
    out = np.full_like(x, np.nan)
    jit.function("k")(x, out)
    touched = np.arange(start, size, step)
    np.testing.assert_allclose(out[touched], expected[touched], rtol=1e-5, atol=1e-6)


def test_a_long_loop_without_lanes_stays_serial():
    """Without the annotation a vectorized loop longer than 64 iterations is a serial
    loop, as before."""
    text = long_exp(399).replace(" attributes {vector_lanes = 16 : i64}", "")
    ir = emit_llvm_ir(lowered(text))
    assert "x float>" not in ir
    check_against_interpreter(text, "k", [random(399)])


def test_relu_matches_the_interpreter():
    check_against_interpreter(RELU, "k", [random(16)])


def test_every_address_kind_matches_the_interpreter():
    check_against_interpreter(ACCESS_KINDS, "k", [random(16, seed=1)])
    text = emit_llvm_ir(lowered(ACCESS_KINDS))
    assert "load <8 x float>" in text, "the contiguous load is one vector load"
    assert "shufflevector <8 x float>" in text, "the uniform load is broadcast"
    assert "insertelement <8 x float>" in text, (
        "strided and gathered lanes are assembled"
    )


def test_integer_vectors_match_the_interpreter():
    check_against_interpreter(INTEGERS, "k", [random(16, np.int32, seed=2)])
    assert "mul <16 x i32>" in emit_llvm_ir(lowered(INTEGERS))


def test_bool_buffers_are_read_and_written_a_byte_per_lane():
    mask = np.random.default_rng(7).integers(0, 2, 16).astype(np.bool_)
    check_against_interpreter(BOOLS, "k", [random(16, seed=8), mask])
    assert "x i1>" not in emit_llvm_ir(lowered(BOOLS))


def test_a_micro_kernel_keeps_its_accumulators_in_vector_registers():
    check_against_interpreter(
        MICRO_KERNEL, "k", [random((4, 8), seed=3), random((8, 16), seed=4)]
    )
    ir = optimized_ir(MICRO_KERNEL)
    body = body_of_k(ir)
    assert "alloca" not in body, "the local tile is promoted to registers"
    assert (
        len(re.findall(r"fadd reassoc contract <16 x float>", body))
        + len(re.findall(r"@llvm.fmuladd.v16f32|@llvm.fma.v16f32", body))
        >= 4 * 8
    ), "one vector update per row and k step"


def test_a_loop_whose_lanes_depend_on_each_other_stays_serial():
    module = lowered(CARRIED)
    kinds = [
        op.attributes[LOOP_KIND_ATTR]
        for op in module.walk()
        if LOOP_KIND_ATTR in op.attributes
    ]
    assert [k.data for k in kinds] == ["vectorized"]
    check_against_interpreter(CARRIED, "k", [random(16, seed=5)])


def test_an_unrolled_loop_is_left_for_llvm_to_unroll_fully():
    module = lowered(UNROLLED)
    kinds = [
        op.attributes[LOOP_KIND_ATTR].data
        for op in module.walk()
        if LOOP_KIND_ATTR in op.attributes
    ]
    assert kinds == ["unrolled"]
    ir = emit_llvm_ir(module)
    assert ir.count("fneg") == 1 and '!{ !"llvm.loop.unroll.full" }' in ir
    assert "br " not in body_of_k(optimized_ir(UNROLLED))  # one copy per iteration
    check_against_interpreter(UNROLLED, "k", [random(6, seed=6)])


def test_a_register_tile_stays_in_registers():
    """The accumulator tile of MICRO_KERNEL, indexed by unrolled loops LLVM unrolls,
    becomes registers: no stack buffer, and the k loop only loads its operands."""
    optimized = body_of_k(optimized_ir(MICRO_KERNEL))
    assert "alloca" not in optimized
    assert optimized.count("<16 x float>") >= 4


def test_kernel_buffers_are_noalias_and_functions_prefer_512_bit_vectors():
    ir = emit_llvm_ir(lowered(RELU))
    assert re.search(r"define void @\"?k\"?\(ptr noalias %\"?a\"?, ptr noalias", ir)
    assert '"prefer-vector-width"="512"' in ir
    assert '"target-cpu"=' in ir


def test_reductions_get_reassoc_and_contract_and_nothing_else():
    text = kernel(
        """
  loop.for %i = 0 to 4 axis "i" {
    loop.for %k = 0 to 8 axis "k" {
      %x = memref.load %a[%i, %k] : memref<4x8xf32>
      %p = arith.mulf %x, %x : f32
      %s = memref.load %o[%i] : memref<4xf32>
      %t = arith.addf %s, %p : f32
      memref.store %t, %o[%i] : memref<4xf32>
    }
  }""",
        "%a: memref<4x8xf32>, %o: memref<4xf32> {loop.output}",
    )
    ir = emit_llvm_ir(lowered(text))
    assert "fadd reassoc contract float" in ir
    assert "fmul reassoc contract float" in ir
    assert "nnan" not in ir and "ninf" not in ir and " fast " not in ir


@settings(max_examples=15, deadline=None)
@given(
    width=st.sampled_from([2, 4, 8, 16]),
    stride=st.integers(0, 3),
    offset=st.integers(0, 3),
    op=st.sampled_from(["arith.addf", "arith.mulf", "arith.maximumf", "arith.subf"]),
)
def test_random_affine_vector_loops_match_the_interpreter(width, stride, offset, op):
    size = width * 3 + offset + 1
    text = kernel(
        f"""
  loop.for %i = 0 to {width} vectorized axis "i" {{
    %s = arith.constant {stride} : index
    %c = arith.constant {offset} : index
    %m = arith.muli %i, %s : index
    %idx = arith.addi %m, %c : index
    %x = memref.load %a[%idx] : memref<{size}xf32>
    %y = memref.load %a[%i] : memref<{size}xf32>
    %r = {op} %x, %y : f32
    memref.store %r, %o[%i] : memref<{width}xf32>
  }}""",
        f"%a: memref<{size}xf32>, %o: memref<{width}xf32> {{loop.output}}",
    )
    check_against_interpreter(text, "k", [random(size, seed=width + stride)])
    assert f"<{width} x float>" in emit_llvm_ir(lowered(text))


@pytest.mark.parametrize("name", ["RELU", "ACCESS_KINDS", "MICRO_KERNEL"])
def test_vectorized_kernels_leave_no_vectorized_back_edge(name):
    module = lowered(globals()[name])
    kinds = {
        op.attributes[LOOP_KIND_ATTR].data
        for op in module.walk()
        if LOOP_KIND_ATTR in op.attributes
    }
    assert "vectorized" not in kinds


def blocked_to_plain(blocks: int, block: int, width: int, lanes: int, element: str = "f32") -> str:
    """out[c, w] = in[c // block, w, c % block], moved `block` rows of `lanes` columns
    at a time (the injective template's transposed blocks)."""
    channels = blocks * block
    return kernel(
        f"""
  loop.for %b = 0 to {blocks} axis "b" {{
    loop.for %wo = 0 to {width // lanes} axis "w.outer" {{
      loop.for %k = 0 to {block} unrolled axis "k" attributes {{unroll.explicit}} {{
        loop.for %wi = 0 to {lanes} vectorized axis "w.inner" {{
          %cb = arith.constant {block} : index
          %cl = arith.constant {lanes} : index
          %t = arith.muli %b, %cb : index
          %c = arith.addi %t, %k : index
          %u = arith.muli %wo, %cl : index
          %w = arith.addi %u, %wi : index
          %q = arith.divui %c, %cb : index
          %r = arith.remui %c, %cb : index
          %v = memref.load %in[%q, %w, %r] : memref<{blocks}x{width}x{block}x{element}>
          memref.store %v, %out[%c, %w] : memref<{channels}x{width}x{element}>
        }}
      }}
    }}
  }}""",
        f"%in: memref<{blocks}x{width}x{block}x{element}>, "
        f"%out: memref<{channels}x{width}x{element}> {{loop.output}}",
    )


def plain_to_blocked(blocks: int, block: int, width: int, rows: int) -> str:
    """out[c // block, w, c % block] = in[c, w]: each lane a channel of the block,
    `rows` columns at a time."""
    channels = blocks * block
    return kernel(
        f"""
  loop.for %b = 0 to {blocks} axis "b" {{
    loop.for %wo = 0 to {width // rows} axis "w.outer" {{
      loop.for %wi = 0 to {rows} unrolled axis "w.inner" attributes {{unroll.explicit}} {{
        loop.for %k = 0 to {block} vectorized axis "k" {{
          %cb = arith.constant {block} : index
          %cr = arith.constant {rows} : index
          %t = arith.muli %b, %cb : index
          %c = arith.addi %t, %k : index
          %u = arith.muli %wo, %cr : index
          %w = arith.addi %u, %wi : index
          %v = memref.load %in[%c, %w] : memref<{channels}x{width}xf32>
          memref.store %v, %out[%b, %w, %k] : memref<{blocks}x{width}x{block}xf32>
        }}
      }}
    }}
  }}""",
        f"%in: memref<{channels}x{width}xf32>, "
        f"%out: memref<{blocks}x{width}x{block}xf32> {{loop.output}}",
    )


@pytest.mark.parametrize(
    ("block", "width", "lanes"), [(16, 28, 14), (16, 32, 16), (8, 14, 7), (4, 8, 4), (8, 32, 16)]
)
def test_a_transposed_block_moves_whole_rows_through_shuffles(block, width, lanes):
    text = blocked_to_plain(2, block, width, lanes)
    ir = body_of_k(emit_llvm_ir(lowered(text)))
    # a row of the block per lane in, a row of the output per unrolled copy out
    assert len(re.findall(rf"load <{block} x float>", ir)) == lanes
    assert len(re.findall(rf"store <{lanes} x float>", ir)) == block
    assert "shufflevector" in ir
    assert not re.findall(r"load float", ir)
    check_against_interpreter(text, "k", [random((2, width, block), seed=block + lanes)])


def test_a_plain_layout_into_blocks_is_transposed_the_other_way():
    text = plain_to_blocked(2, 16, 28, 14)
    ir = body_of_k(emit_llvm_ir(lowered(text)))
    assert len(re.findall(r"load <14 x float>", ir)) == 16
    assert len(re.findall(r"store <16 x float>", ir)) == 14
    check_against_interpreter(text, "k", [random((32, 28), seed=3)])


def test_transposed_blocks_of_integers_and_bytes_match_the_interpreter():
    for element, dtype in (("i32", np.int32), ("i8", np.int8)):
        text = blocked_to_plain(2, 16, 16, 16, element)
        assert "shufflevector" in body_of_k(emit_llvm_ir(lowered(text)))
        check_against_interpreter(text, "k", [random((2, 16, 16), dtype, seed=5)])


def test_copies_whose_rows_are_not_contiguous_are_vectorized_one_by_one():
    # copy k reads column 2 k: no block of contiguous rows, each copy gathers its lanes
    text = kernel(
        """
  loop.for %k = 0 to 8 unrolled axis "k" attributes {unroll.explicit} {
    loop.for %w = 0 to 8 vectorized axis "w" {
      %c2 = arith.constant 2 : index
      %col = arith.muli %k, %c2 : index
      %v = memref.load %in[%w, %col] : memref<8x16xf32>
      memref.store %v, %out[%k, %w] : memref<8x8xf32>
    }
  }""",
        "%in: memref<8x16xf32>, %out: memref<8x8xf32> {loop.output}",
    )
    ir = body_of_k(emit_llvm_ir(lowered(text)))
    assert "shufflevector" not in ir
    assert len(re.findall(r"store <8 x float>", ir)) == 8
    check_against_interpreter(text, "k", [random((8, 16), seed=7)])


def test_a_copy_within_one_buffer_is_not_moved_as_a_block():
    # reading and writing one buffer: the block's loads may not all go first
    text = kernel(
        """
  loop.for %k = 0 to 8 unrolled axis "k" attributes {unroll.explicit} {
    loop.for %w = 0 to 8 vectorized axis "w" {
      %c8 = arith.constant 8 : index
      %row = arith.addi %k, %c8 : index
      %v = memref.load %buf[%w, %k] : memref<16x8xf32>
      memref.store %v, %buf[%row, %w] : memref<16x8xf32>
    }
  }""",
        "%buf: memref<16x8xf32> {loop.output}",
    )
    assert "shufflevector" not in body_of_k(emit_llvm_ir(lowered(text)))


@settings(max_examples=12, deadline=None)
@given(
    block=st.sampled_from([4, 8, 16]),
    lanes=st.integers(2, 16),
    column_blocks=st.integers(1, 3),
)
def test_random_transposed_blocks_match_the_interpreter(block, lanes, column_blocks):
    width = lanes * column_blocks
    text = blocked_to_plain(2, block, width, lanes)
    check_against_interpreter(text, "k", [random((2, width, block), seed=block * lanes)])


UNIFORM_SELECT = kernel(
    """
  loop.for %j = 0 to 2 axis "j" {
    loop.for %i = 0 to 16 vectorized axis "i" {
      %a0 = memref.load %a[%j, %i] : memref<2x16xf32>
      %b0 = memref.load %b[%j, %i] : memref<2x16xf32>
      %s = arith.addf %a0, %b0 : f32
      %d = arith.subf %a0, %b0 : f32
      %t = memref.load %c[%j] : memref<2xf32>
      %zero = arith.constant 0.0 : f32
      %positive = arith.cmpf ogt, %t, %zero : f32
      %v = arith.select %positive, %s, %d : f32
      memref.store %v, %o[%j, %i] : memref<2x16xf32>
    }
  }""",
    "%a: memref<2x16xf32>, %b: memref<2x16xf32>, %c: memref<2xf32>, "
    "%o: memref<2x16xf32> {loop.output}",
)


def test_a_select_on_a_value_the_same_in_every_lane_picks_whole_vectors():
    """The condition is a scalar the lanes share (computed from the outer loop's
    element): the select takes one of two vectors, no lane is picked on its own."""
    ir = optimized_ir(UNIFORM_SELECT)
    assert "load <16 x float>" in ir
    assert re.search(r"select i1 %[\w.]+, <16 x float>", ir)
    assert "extractelement" not in ir and "insertelement <16 x float>" not in ir
    inputs = [random((2, 16)), random((2, 16), seed=1), np.array([1.0, -1.0], np.float32)]
    check_against_interpreter(UNIFORM_SELECT, "k", inputs)
