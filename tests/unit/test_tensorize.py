"""tensorize: a loop nest that computes what the CPU micro-kernel describes is replaced
by it (and computes the same values); any other nest is refused, naming what differs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects.loop import ForOp, LoopKind
from strato.interpreters.loop import run_loops
from strato.schedule.errors import ScheduleError
from strato.schedule.intrinsics import TENSORIZED_ATTR, get_intrinsic
from strato.schedule.tensorize import tensorize
from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
from strato.targets.llvm.emit import emit_llvm_ir
from strato.targets.llvm.host import host_target, vector_lanes
from strato.targets.llvm.intrinsics import default_fma_tile, fma_tile_name
from strato.targets.llvm.jit import JitModule


def tiled_matmul(
    mr: int = 4,
    nr: int = 32,
    k: int = 8,
    *,
    b_transposed: bool = False,
    combine: str = "arith.addf",
    element: str = "f32",
    order: tuple[str, str, str] = ("k", "i.inner", "j.inner"),
) -> str:
    """C[16 x 64] += A[16 x k] B[k x 64], tiled by mr x nr, the tile loops in `order`."""
    m, n = 4 * mr, 2 * nr
    b_type = f"memref<{n}x{k}x{element}>" if b_transposed else f"memref<{k}x{n}x{element}>"
    b_index = "%j, %k" if b_transposed else "%k, %j"
    bounds = {"k": k, "i.inner": mr, "j.inner": nr}
    names = {"k": "%k", "i.inner": "%ii", "j.inner": "%ji"}
    opened = "\n".join(
        f'      loop.for {names[a]} = 0 to {bounds[a]} axis "{a}" attributes {{stage = "mm"}} {{'
        for a in order
    )
    closed = "\n".join("      }" for _ in order)
    return f"""
func.func @mm(%A: memref<{m}x{k}x{element}>, %B: {b_type}, %C: memref<{m}x{n}x{element}> {{loop.output}}) attributes {{loop.kernel}} {{
  loop.for %zi = 0 to {m} axis "zi" attributes {{stage = "mm", init}} {{
    loop.for %zj = 0 to {n} axis "zj" attributes {{stage = "mm", init}} {{
      %zero = arith.constant 0.0 : {element}
      memref.store %zero, %C[%zi, %zj] : memref<{m}x{n}x{element}>
    }}
  }}
  loop.for %io = 0 to 4 axis "i.outer" attributes {{stage = "mm"}} {{
    loop.for %jo = 0 to 2 axis "j.outer" attributes {{stage = "mm"}} {{
{opened}
            %cm = arith.constant {mr} : index
            %cn = arith.constant {nr} : index
            %i0 = arith.muli %io, %cm : index
            %i = arith.addi %i0, %ii : index
            %j0 = arith.muli %jo, %cn : index
            %j = arith.addi %j0, %ji : index
            %a = memref.load %A[%i, %k] : memref<{m}x{k}x{element}>
            %b = memref.load %B[{b_index}] : {b_type}
            %p = arith.mulf %b, %a : {element}
            %o = memref.load %C[%i, %j] : memref<{m}x{n}x{element}>
            %s = {combine} %o, %p : {element}
            memref.store %s, %C[%i, %j] : memref<{m}x{n}x{element}>
{closed}
    }}
  }}
  func.return
}}
"""


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def loop_named(module: ModuleOp, axis: str) -> ForOp:
    return next(
        op for op in module.walk()
        if isinstance(op, ForOp) and op.axis is not None and op.axis.data == axis
    )  # fmt: skip


def refusal(text: str, axis: str, name: str) -> str:
    module = parse(text)
    before = str(module)
    with pytest.raises(ScheduleError) as info:
        tensorize(loop_named(module, axis), name)
    assert str(module) == before, "a refused tensorize leaves the kernel unchanged"
    return info.value.message


def run(module: ModuleOp, a: np.ndarray, b: np.ndarray, c_shape) -> np.ndarray:
    lowered = module.clone()
    convert_loops_to_llvm(lowered)
    c = np.zeros(c_shape, np.float32)
    JitModule(lowered).function("mm")(a, b, c)
    return c


def test_the_micro_kernel_replaces_the_nest_and_computes_the_same():
    text = tiled_matmul()
    module = parse(text)
    match = tensorize(loop_named(module, "k"), "cpu.fma_tile.4x32x8")
    module.verify()
    assert {axis: loop.axis.data for axis, loop in match.loops.items()} == {
        "i": "i.inner", "j": "j.inner", "k": "k",
    }  # fmt: skip
    tensorized = [op for op in module.walk() if TENSORIZED_ATTR in op.attributes]
    assert [op.axis.data for op in tensorized] == ["i.inner.load", "k", "i.inner.store"]
    kinds = {op.axis.data: op.loop_kind for op in module.walk() if isinstance(op, ForOp)}
    assert kinds["i.inner.update"] == LoopKind.UNROLLED
    assert kinds["j.inner.update"] == LoopKind.VECTORIZED
    # k in steps of 4: two iterations of four unrolled k steps
    assert kinds["k.unrolled"] == LoopKind.UNROLLED
    (k_loop,) = [op for op in tensorized if op.axis.data == "k"]
    assert k_loop.trip_count == 2
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 64)).astype(np.float32)
    (expected,) = run_loops(parse(text), [a, b])
    np.testing.assert_allclose(run(module, a, b, (16, 64)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(expected, a @ b, rtol=1e-4, atol=1e-4)
    lowered = module.clone()
    convert_loops_to_llvm(lowered)
    assert "<32 x float>" in emit_llvm_ir(lowered)


@settings(max_examples=6, deadline=None)
@given(
    mr=st.sampled_from([1, 2, 3]),
    nr=st.sampled_from([8, 16]),
    k=st.sampled_from([1, 5, 6, 8]),
    order=st.permutations(["k", "i.inner", "j.inner"]),
)
def test_any_loop_order_and_tile_matches_and_computes_the_same(mr, nr, k, order):
    text = tiled_matmul(mr, nr, k, order=tuple(order))
    module = parse(text)
    tensorize(loop_named(module, order[0]), fma_tile_name(mr, nr, k))
    rng = np.random.default_rng(mr * nr + k)
    a = rng.standard_normal((4 * mr, k)).astype(np.float32)
    b = rng.standard_normal((k, 2 * nr)).astype(np.float32)
    (expected,) = run_loops(parse(text), [a, b])
    got = run(module, a, b, (4 * mr, 2 * nr))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_tile_of_another_size_is_refused_naming_the_trip_counts():
    message = refusal(tiled_matmul(), "k", "cpu.fma_tile.4x16x8")
    assert message.startswith("cannot tensorize loop 'k' of stage 'mm' with cpu.fma_tile.4x16x8")
    assert "trip counts differ" in message and "32" in message and "16" in message


def test_an_operand_that_is_not_contiguous_along_the_lanes_is_refused():
    message = refusal(tiled_matmul(b_transposed=True), "k", "cpu.fma_tile.4x32x8")
    assert "operand b moves 8 elements per iteration of loop 'j.inner' (axis j)" in message


def test_another_computation_is_refused():
    message = refusal(tiled_matmul(combine="arith.subf"), "k", "cpu.fma_tile.4x32x8")
    assert "computes arith.subf where the intrinsic computes arith.addf" in message


def test_another_element_type_is_refused():
    message = refusal(tiled_matmul(element="f64"), "k", "cpu.fma_tile.4x32x8")
    assert "element type f64, the intrinsic needs f32" in message


def test_a_nest_of_the_wrong_depth_is_refused():
    message = refusal(tiled_matmul(), "i.inner", "cpu.fma_tile.4x32x8")
    assert "the nest has 2 loops (i.inner, j.inner), the intrinsic 3 (i, j, k)" in message


def test_an_imperfect_nest_is_refused():
    message = refusal(tiled_matmul(), "j.outer", "cpu.fma_tile.4x32x8")
    assert "the nest has 4 loops" in message


def test_an_unknown_intrinsic_is_refused():
    with pytest.raises(ScheduleError, match="no intrinsic named 'cpu.dot'"):
        get_intrinsic("cpu.dot")
    with pytest.raises(ScheduleError, match="not of the form cpu.fma_tile.<MR>x<NR>x<K>"):
        get_intrinsic("cpu.fma_tile.big")


def test_the_default_tile_is_sized_from_the_host_vector_width():
    lanes = vector_lanes(host_target())
    mr, nr = default_fma_tile(lanes, 32 if lanes == 16 else 16)
    assert nr % lanes == 0
    registers = 32 if lanes == 16 else 16
    assert mr * (nr // lanes) + nr // lanes < registers
