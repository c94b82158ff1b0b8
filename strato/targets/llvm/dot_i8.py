"""The CPU's int8 tensor intrinsic: a u8 x s8 dot product into int32 lanes.

`cpu.dot_i8.<L>x4` computes, for L int32 accumulators,

    c[j] += sum over q < 4 of u8(a[q]) * s8(b[j, q])

(four consecutive bytes of `a` broadcast to every lane, `b` 4L consecutive bytes: lane
j's four weights side by side). That is one `vpdpbusd` of AVX-512 VNNI (L = 16, a zmm)
or AVX-VNNI (L = 8, a ymm); `cpu.dot_i8.generic.<L>x4` is the same computation as
widening multiplies and adds that LLVM vectorizes for any target (x86 without VNNI:
vpmaddwd-like code; other architectures: their own). The products of u8 and s8 and
their sums of four are exact in int32, and so is every accumulation of a convolution
or dense layer of 8-bit operands that fits int32, so every variant computes the same.

The implementation replaces the matched j x q nest by one `cpu.dot_i8` op on the three
buffers at the nest's first element; convert-loops-to-llvm lowers it
(`DotI8Lowering`) to a vector load of the accumulators, a broadcast of a's four bytes,
a vector load of b, the multiply-add and a vector store. In a register tile the
accumulators are a small local buffer with static indices after unrolling, which LLVM
keeps in registers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    VectorType,
    i8,
    i32,
    i64,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import VerifyException

from strato.interpreters.loop import register_loop_functions
from strato.schedule.errors import ScheduleError
from strato.schedule.intrinsics import TENSORIZED_ATTR, Intrinsic, register_family
from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern
from strato.targets.llvm.type_conversion import (
    materialize_llvm,
    materialize_llvm_all,
    replace_with_llvm,
)

if TYPE_CHECKING:
    from strato.schedule.tensorize import Match

FAMILY = "cpu.dot_i8"
DEPTH = 4
"""Bytes of `a` (and of each lane of `b`) one step multiplies and adds."""

VARIANTS = ("vnni", "generic")

_NAME = re.compile(r"^cpu\.dot_i8\.(?:(generic)\.)?(\d+)x(\d+)$")


def dot_i8_name(lanes: int, vnni: bool) -> str:
    return f"{FAMILY}.{lanes}x{DEPTH}" if vnni else f"{FAMILY}.generic.{lanes}x{DEPTH}"


def machine_features(features: str) -> set[str]:
    """The enabled features of an LLVM feature list ("+avx2,-avx512f,..."): the last
    mention of a feature wins."""
    from strato.transforms.schedule_default import enabled_features

    return set(enabled_features(features))


def dot_i8_lanes(features: set[str], lanes: int) -> tuple[int, bool]:
    """(int32 lanes, VNNI?) of the int8 dot product on a CPU with `features` and
    vectors of `lanes` 32-bit lanes: 16 with AVX-512 VNNI, 8 with AVX-VNNI (or
    AVX-512 VNNI with 256-bit vectors), else the generic form over `lanes`."""
    if "avx512vnni" in features and "avx512f" in features and lanes >= 16:
        return 16, True
    if "avxvnni" in features or ("avx512vnni" in features and "avx512vl" in features):
        return 8, True
    return lanes, False


def description(lanes: int) -> str:
    return f"""
te.primitive @dot_i8 {{
  %a = te.placeholder "a" : tensor<{DEPTH}xui8>
  %b = te.placeholder "b" : tensor<{lanes}x{DEPTH}xi8>
  %c = te.reduce "c" sum (%j) over (%q : {DEPTH}) init 0 : tensor<{lanes}xi32> {{
    %x = te.read %a[%q] : tensor<{DEPTH}xui8>
    %y = te.read %b[%j, %q] : tensor<{lanes}x{DEPTH}xi8>
    %xw = arith.extui %x : i8 to i32
    %yw = arith.extsi %y : i8 to i32
    %p = arith.muli %xw, %yw : i32
    te.yield %p : i32
  }}
  te.output %c : tensor<{lanes}xi32>
}}
"""


@irdl_op_definition
class DotI8Op(IRDLOperation):
    """acc[at + j] += sum_q u8(a[at + q]) * s8(b[at + 4 j + q]) for j < lanes, q < 4;
    each buffer at its indices, the elements after them contiguous.

        cpu.dot_i8 %acc[%i], %a[%n, %h, %w, %c], %b[%k, %m] lanes 16 variant "vnni"
    """

    name = "cpu.dot_i8"

    acc = operand_def(MemRefType)
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    acc_indices = var_operand_def(IndexType)
    a_indices = var_operand_def(IndexType)
    b_indices = var_operand_def(IndexType)
    lanes = prop_def(IntegerAttr)
    variant = prop_def(StringAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, acc, acc_indices, a, a_indices, b, b_indices, lanes: int, variant: str):
        super().__init__(
            operands=[acc, a, b, acc_indices, a_indices, b_indices],
            properties={"lanes": IntegerAttr(lanes, i64), "variant": StringAttr(variant)},
        )

    def verify_(self) -> None:
        if self.variant.data not in VARIANTS:
            raise VerifyException(f"'cpu.dot_i8' variant must be one of {VARIANTS}")
        for buffer, indices in (
            (self.acc, self.acc_indices),
            (self.a, self.a_indices),
            (self.b, self.b_indices),
        ):
            assert isinstance(buffer.type, MemRefType)
            if len(indices) != buffer.type.get_num_dims():
                raise VerifyException("'cpu.dot_i8' needs one index per dimension of each buffer")


CPU = Dialect("cpu", [DotI8Op], [])


@register_impls
class DotI8Functions(InterpreterFunctions):
    """cpu.dot_i8 in the loop interpreter: the sums the instruction computes."""

    @impl(DotI8Op)
    def run_dot_i8(self, interpreter: Interpreter, op: DotI8Op, args: PythonValues) -> PythonValues:
        acc, a, b, *index_values = args
        indices = [int(i.value.data) for i in index_values]  # index scalars are attributes
        sizes = [len(op.acc_indices), len(op.a_indices), len(op.b_indices)]
        acc_at = tuple(indices[: sizes[0]])
        a_at = tuple(indices[sizes[0] : sizes[0] + sizes[1]])
        b_at = tuple(indices[sizes[0] + sizes[1] :])

        def element(buffer, at, offset: int) -> tuple[int, ...]:
            flat = int(np.ravel_multi_index(at, buffer.shape)) + offset
            return tuple(int(v) for v in np.unravel_index(flat, buffer.shape))

        lanes = op.lanes.value.data
        unsigned = [int(a.load(element(a, a_at, q))) & 0xFF for q in range(DEPTH)]
        for j in range(lanes):
            total = int(acc.load(element(acc, acc_at, j)))
            for q in range(DEPTH):
                weight = ((int(b.load(element(b, b_at, DEPTH * j + q))) + 128) & 0xFF) - 128
                total += unsigned[q] * weight
            wrapped = ((total + 2**31) % 2**32) - 2**31
            acc.store(element(acc, acc_at, j), wrapped)
        return ()


register_loop_functions(DotI8Functions)


# -- implementation (tensorize) ----------------------------------------------------------


def implement(match: Match) -> None:
    """Replace the matched j x q nest by one cpu.dot_i8 at its first element."""
    root = match.root
    parent = root.parent_block()
    assert parent is not None
    parsed = _NAME.match(match.intrinsic.name)
    assert parsed is not None
    lanes = int(parsed.group(2))
    variant = "generic" if parsed.group(1) else "vnni"
    zero = arith.ConstantOp.from_int_and_width(0, IndexType())
    terminator = parent.last_op
    assert terminator is not None
    parent.insert_op_before(zero, terminator)
    ivs = {match.loops["j"]: zero.result, match.loops["q"]: zero.result}
    a = match.loads["a"]
    b = match.loads["b"]
    acc = match.loads["c"]
    a_at = match.clone_slice(list(a.indices), ivs, parent)
    b_at = match.clone_slice(list(b.indices), ivs, parent)
    acc_at = match.clone_slice(list(match.store.indices), ivs, parent)
    op = DotI8Op(match.store.memref, acc_at, a.memref, a_at, b.memref, b_at, lanes, variant)
    op.attributes[TENSORIZED_ATTR] = StringAttr(match.intrinsic.name)
    parent.insert_op_before(op, terminator)
    del acc
    root.detach()
    root.erase()


def _lower_description(text: str):
    from strato.transforms.convert_te_to_loops import lower_te_text

    return lower_te_text(text)


def _make(name: str) -> Intrinsic:
    parsed = _NAME.match(name)
    if parsed is None or int(parsed.group(3)) != DEPTH:
        raise ScheduleError(
            f"cannot tensorize: '{name}' is not of the form {FAMILY}.<L>x4 or "
            f"{FAMILY}.generic.<L>x4"
        )
    lanes = int(parsed.group(2))
    if parsed.group(1) is None and lanes not in (8, 16):
        raise ScheduleError(f"cannot tensorize: vpdpbusd has 8 or 16 lanes, not {lanes}")
    if lanes < 1:
        raise ScheduleError(f"cannot tensorize: {name} has no lanes")
    return Intrinsic(
        name,
        description(lanes),
        implement,
        {"a": "q", "b": "q", "c": "j"},
        lower=_lower_description,
    )


register_family(FAMILY, _make)


# -- lowering to LLVM ----------------------------------------------------------------------


def _vector(lanes: int, element=i32) -> VectorType:
    return VectorType(element, [lanes])


class DotI8Lowering(LLVMLoweringPattern):
    """cpu.dot_i8 -> vector loads, vpdpbusd (or widening multiply-adds), vector store."""

    source_op = DotI8Op

    def lower(self, op: DotI8Op, rewriter: PatternRewriter) -> None:
        # loaded with the lowering, not when the target registers the intrinsic
        from strato.targets.llvm.memref_to_llvm import element_address

        lanes = op.lanes.value.data
        ops: list[Operation] = []

        def address(buffer: SSAValue, indices) -> SSAValue:
            type_ = buffer.type
            assert isinstance(type_, MemRefType)
            base = materialize_llvm(rewriter, op, buffer)
            index_values = materialize_llvm_all(rewriter, op, list(indices))
            address_ops, pointer = element_address(base, index_values, type_)
            ops.extend(address_ops)
            return pointer

        def emit(new: Operation) -> SSAValue:
            ops.append(new)
            return new.results[0]

        acc_ptr = address(op.acc, op.acc_indices)
        a_ptr = address(op.a, op.a_indices)
        b_ptr = address(op.b, op.b_indices)
        acc = emit(builders.load(acc_ptr, _vector(lanes)))
        if op.variant.data == "vnni":
            word = emit(builders.load(a_ptr, i32, alignment=1))
            broadcast = _broadcast(emit, word, lanes)
            weights = emit(builders.load(b_ptr, _vector(lanes), alignment=1))
            width = 512 if lanes == 16 else 256
            result = emit(
                builders.call_intrinsic(
                    f"llvm.x86.avx512.vpdpbusd.{width}",
                    [acc, broadcast, weights],
                    _vector(lanes),
                )
            )
        else:
            weights = emit(builders.load(b_ptr, _vector(DEPTH * lanes, i8), alignment=1))
            wide = emit(builders.cast(llvm.SExtOp, weights, _vector(DEPTH * lanes)))
            result = acc
            for q in range(DEPTH):
                byte_ptr = emit(builders.gep(a_ptr, q, i8))
                byte = emit(builders.load(byte_ptr, i8))
                value = emit(builders.cast(llvm.ZExtOp, byte, i32))
                broadcast = _broadcast(emit, value, lanes)
                mask = DenseArrayBase.from_list(i32, [DEPTH * j + q for j in range(lanes)])
                column = emit(llvm.ShuffleVectorOp(wide, wide, mask, _vector(lanes)))
                product = emit(builders.int_binary(llvm.MulOp, broadcast, column))
                result = emit(builders.int_binary(llvm.AddOp, result, product))
        ops.append(builders.store(result, acc_ptr))
        replace_with_llvm(rewriter, op, ops)


def _broadcast(emit, scalar: SSAValue, lanes: int) -> SSAValue:
    vector_type = _vector(lanes, scalar.type)
    undef = emit(llvm.UndefOp(vector_type))
    zero = emit(builders.constant(0, i32))
    single = emit(llvm.InsertElementOp(undef, scalar, zero))
    mask = DenseArrayBase.from_list(i32, [0] * lanes)
    return emit(llvm.ShuffleVectorOp(single, undef, mask, vector_type))


__all__ = [
    "CPU",
    "DotI8Lowering",
    "DotI8Op",
    "dot_i8_lanes",
    "dot_i8_name",
    "machine_features",
]
