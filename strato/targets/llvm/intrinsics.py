"""The CPU micro-kernel: a register-blocked fp32 outer-product update.

`cpu.fma_tile.<MR>x<NR>x<K>` computes, for an MR x NR tile of the output,

    c[i, j] += sum over k < K of a[i, k] * b[k, j]

with the tile held in vector registers for the whole k loop: the implementation loads
the tile into a local accumulator buffer, runs k outermost with the MR rows unrolled and
the NR columns vectorized (each k step: NR/W vector loads of b, MR broadcasts of a,
MR x NR/W fused multiply-adds), k itself in unrolled steps of up to 4 (`K_UNROLL`), and
stores the tile back. After unrolling, the
accumulator has static indices only, so LLVM keeps it in registers. `b` and `c` must be
contiguous along j (the vector lanes); `a` may have any strides.

NR is a multiple of the CPU's vector width W (16 fp32 lanes with AVX-512, 8 with AVX2);
`default_fma_tile(W, registers)` sizes MR x NR to keep MR x NR/W accumulators and the b
vectors within the 32 (or 16) vector registers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, StringAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue

from strato.dialects.loop import (
    REDUCTION_ATTR,
    STAGE_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    ScopeAttr,
)
from strato.schedule.errors import ScheduleError
from strato.schedule.intrinsics import TENSORIZED_ATTR, Intrinsic, register_family

if TYPE_CHECKING:
    from strato.schedule.tensorize import Match



FAMILY = "cpu.fma_tile"

K_UNROLL = (4, 2, 1)
"""k steps per iteration of the update loop (the first that divides K): fewer loop
branches and more independent loads in flight per iteration."""

_NAME = re.compile(r"^cpu\.fma_tile\.(\d+)x(\d+)x(\d+)$")


def default_fma_tile(lanes: int, registers: int) -> tuple[int, int]:
    """(MR, NR) of the default micro-kernel for vectors of `lanes` fp32 and `registers`
    vector registers: MR x NR/W accumulators plus NR/W vectors of b fit the registers
    with room for the broadcasts."""
    nr = 2 * lanes
    mr = (registers - 4) // 2 if lanes == 16 else 6
    return min(mr, 12), nr


def fma_tile_name(mr: int, nr: int, k: int) -> str:
    return f"{FAMILY}.{mr}x{nr}x{k}"


def description(mr: int, nr: int, k: int) -> str:
    """The te description: the tile update as a sum reduction over k."""
    return f"""
te.primitive @fma_tile {{
  %a = te.placeholder "a" : tensor<{mr}x{k}xf32>
  %b = te.placeholder "b" : tensor<{k}x{nr}xf32>
  %c = te.reduce "c" sum (%i, %j) over (%k : {k}) init 0.0 : tensor<{mr}x{nr}xf32> {{
    %x = te.read %a[%i, %k] : tensor<{mr}x{k}xf32>
    %y = te.read %b[%k, %j] : tensor<{k}x{nr}xf32>
    %p = arith.mulf %x, %y : f32
    te.yield %p : f32
  }}
  te.output %c : tensor<{mr}x{nr}xf32>
}}
"""


def _loop(trip_count: int, kind: LoopKind, axis: str, stage: Attribute | None) -> ForOp:
    loop, _ = ForOp.build(0, trip_count, 1, kind, axis)
    loop.induction_var.name_hint = axis.replace(".", "_")
    if stage is not None:
        loop.attributes[STAGE_ATTR] = stage
    return loop


def _nest(outer: ForOp, inner: ForOp) -> None:
    block = outer.body.block
    terminator = block.last_op
    assert terminator is not None
    block.insert_op_before(inner, terminator)


def implement(match: Match) -> None:
    """Replace the matched nest by the register-blocked micro-kernel: load the tile,
    update it for every k (rows unrolled, columns vectorized), store it back."""
    root = match.root
    i, j, k = match.loops["i"], match.loops["j"], match.loops["k"]
    stage = root.attributes.get(STAGE_ATTR)
    parent = root.parent_block()
    assert parent is not None
    tile = memref.AllocOp.get(
        f32,
        shape=[i.trip_count, j.trip_count],
        memory_space=ScopeAttr(MemoryScope.LOCAL),
    )
    parent.insert_op_before(tile, root)
    accumulator = match.loads["c"]
    phases: list[ForOp] = []
    for phase in ("load", "update", "store"):
        row = _loop(i.trip_count, LoopKind.UNROLLED, f"{_axis(i)}.{phase}", stage)
        col = _loop(j.trip_count, LoopKind.VECTORIZED, f"{_axis(j)}.{phase}", stage)
        _nest(row, col)
        outer = row
        ivs = {i: row.induction_var, j: col.induction_var}
        if phase == "update":
            unroll = next(u for u in K_UNROLL if k.trip_count % u == 0)
            outer = _loop(k.trip_count // unroll, LoopKind.SERIAL, _axis(k), stage)
            if REDUCTION_ATTR in k.attributes:
                outer.attributes[REDUCTION_ATTR] = k.attributes[REDUCTION_ATTR]
            if unroll > 1:
                steps = _loop(unroll, LoopKind.UNROLLED, f"{_axis(k)}.unrolled", stage)
                _nest(outer, steps)
                ivs[k] = _append_index(
                    steps.body.block, outer.induction_var, unroll, steps.induction_var
                )
                _nest(steps, row)
            else:
                _nest(outer, row)
                ivs[k] = outer.induction_var
        outer.attributes[TENSORIZED_ATTR] = StringAttr(match.intrinsic.name)
        parent.insert_op_before(outer, root)
        phases.append(outer)
        block = col.body.block
        at_tile = [row.induction_var, col.induction_var]
        if phase == "load":
            values = match.clone_slice(accumulator.indices, ivs, block)
            value = _append(block, memref.LoadOp.get(accumulator.memref, values))
            _append(block, memref.StoreOp.get(value.results[0], tile, at_tile))
        elif phase == "update":
            mapping = match.clone_slice([match.store.value], ivs, block)
            updated = mapping[0]
            _append(block, memref.StoreOp.get(updated, tile, at_tile))
            # the cloned accumulator load reads the tile instead of c
            cloned = match.cloned(accumulator.res)
            assert cloned is not None
            tile_load = memref.LoadOp.get(tile, at_tile)
            owner = cloned.owner
            assert isinstance(owner, Operation)
            block.insert_op_before(tile_load, owner)
            cloned.replace_all_uses_with(tile_load.results[0])
            owner.detach()
            owner.erase()
        else:
            values = match.clone_slice(match.store.indices, ivs, block)
            value = _append(block, memref.LoadOp.get(tile, at_tile))
            _append(block, memref.StoreOp.get(value.results[0], match.store.memref, values))
    root.detach()
    root.erase()
    parent.insert_op_after(memref.DeallocOp.get(tile), phases[-1])


def _append_index(block, outer: SSAValue, factor: int, inner: SSAValue) -> SSAValue:
    """`outer * factor + inner`, appended to `block` (the k of an unrolled k step)."""
    constant = _append(block, arith.ConstantOp.from_int_and_width(factor, IndexType()))
    scaled = _append(block, arith.MuliOp(outer, constant.results[0]))
    return _append(block, arith.AddiOp(scaled.results[0], inner)).results[0]


def _append(block, op: Operation) -> Operation:
    terminator = block.last_op
    assert terminator is not None
    block.insert_op_before(op, terminator)
    return op


def _axis(loop: ForOp) -> str:
    return loop.axis.data if loop.axis is not None else "?"


def _lower_description(text: str):
    """The description's canonical loop nest (convert-te-to-loops, loaded when first used)."""
    from strato.transforms.convert_te_to_loops import lower_te_text

    return lower_te_text(text)


def _make(name: str) -> Intrinsic:
    parsed = _NAME.match(name)
    if parsed is None:
        raise ScheduleError(
            f"cannot tensorize: '{name}' is not of the form {FAMILY}.<MR>x<NR>x<K>"
        )
    mr, nr, k = (int(g) for g in parsed.groups())
    if min(mr, nr, k) < 1:
        raise ScheduleError(f"cannot tensorize: {name} has an empty tile")
    return Intrinsic(
        name, description(mr, nr, k), implement, {"b": "j", "c": "j"}, lower=_lower_description
    )


register_family(FAMILY, _make)
