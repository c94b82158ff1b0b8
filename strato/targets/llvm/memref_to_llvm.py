"""Lowering of upstream `memref` to the llvm dialect, one pattern per op.

A memref is a bare pointer to its first element; its static layout turns an access
into a GEP on the linearized index (row-major unless the type says otherwise).

    %v = memref.load %a[%i, %j] : memref<4x8xf32>
->
    %c8 = llvm.mlir.constant(8 : i64) : i64
    %0 = llvm.mul %i, %c8 overflow<nsw> : i64
    %1 = llvm.add %0, %j overflow<nsw> : i64
    %2 = llvm.getelementptr inbounds %a[%1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %2 : !llvm.ptr -> f32

Buffers in global memory come from the runtime's workspace and go back to it
(`strato_workspace_take(size)`, `strato_workspace_give(pointer, size)`: kept between
calls, see `parallel_runtime`); a buffer whose dealloc cannot be traced to its alloc goes
back with `free`, which takes the workspace's buffers too. A `memref.view` of
an `i8` buffer (a model's arena, planned by graph-plan-memory) is the buffer's pointer
advanced by the byte shift:

    %h = memref.view %arena[%offset][] : memref<2048xi8> to memref<256xf32>
->
    %h = llvm.getelementptr inbounds %arena[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, i8

and a `loop.view` of a block of rows is the pointer advanced by its element offset.
Small buffers in
local (kernel-private) memory live on the stack: one `llvm.alloca` at the function
entry, so a buffer allocated inside a loop does not grow the stack per iteration;
their `memref.dealloc` disappears. `memref.global` constants become internal
`llvm.mlir.global` constants holding the same dense bytes (when a model is built, the
large ones then leave the module for its weight blob: `strato.targets.llvm.weights`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import func, llvm, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
    i8,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from strato.dialects.loop import MemoryScope, ViewOp, memory_scope
from strato.schedule.access import memref_layout
from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern
from strato.targets.llvm.parallel_runtime import (
    WORKSPACE_ALIGNMENT,
    WORKSPACE_GIVE,
    WORKSPACE_TAKE,
)
from strato.targets.llvm.type_conversion import (
    POINTER,
    element_byte_size,
    llvm_type,
    materialize_llvm,
    materialize_llvm_all,
    memref_size_in_bytes,
    replace_with_llvm,
    unsupported,
)
from strato.transforms.loop_linearize_views import has_flat_source

STACK_BUFFER_LIMIT = 64 * 1024
"""Largest local-scope buffer (bytes) placed on the stack instead of the heap."""

BUFFER_ALIGNMENT = 64
"""Alignment of stack buffers and globals: a cache line, enough for any vector."""


def is_stack_buffer(type_: MemRefType) -> bool:
    """Whether buffers of `type_` are stack-allocated (see the module docstring)."""
    return (
        memory_scope(type_) == MemoryScope.LOCAL
        and all(dim >= 0 for dim in type_.get_shape())
        and memref_size_in_bytes(type_) <= STACK_BUFFER_LIMIT
    )


def heap_bytes(op: memref.AllocOp) -> int:
    """The bytes a static allocation takes from the heap once lowered: 0 on the stack,
    else its size padded to the workspace's alignment."""
    type_ = op.memref.type
    if not isinstance(type_, MemRefType) or op.dynamic_sizes or is_stack_buffer(type_):
        return 0
    return -(-memref_size_in_bytes(type_) // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT


def _memref_type(value: SSAValue) -> MemRefType:
    type_ = value.type
    assert isinstance(type_, MemRefType), f"expected a memref, got {type_}"
    return type_


def element_address(
    base: SSAValue, indices: Sequence[SSAValue], type_: MemRefType
) -> tuple[list[Operation], SSAValue]:
    """The ops computing `&base[indices]` for a memref of `type_` (llvm-typed
    `base` and i64 `indices`), and the resulting pointer."""
    layout = memref_layout(type_)
    ops: list[Operation] = []
    linear: SSAValue | None = None
    for index, stride in zip(indices, layout.strides, strict=True):
        if stride == 0:
            continue
        term = index
        if stride != 1:
            stride_op = builders.index_constant(stride)
            mul = builders.int_binary(llvm.MulOp, index, stride_op.result, nsw=True)
            ops += [stride_op, mul]
            term = mul.results[0]
        if linear is None:
            linear = term
            continue
        add = builders.int_binary(llvm.AddOp, linear, term, nsw=True)
        ops.append(add)
        linear = add.results[0]
    if layout.offset != 0 or linear is None:
        offset = builders.index_constant(layout.offset)
        ops.append(offset)
        if linear is None:
            linear = offset.result
        else:
            add = builders.int_binary(llvm.AddOp, linear, offset.result, nsw=True)
            ops.append(add)
            linear = add.results[0]
    address = builders.gep(base, linear, llvm_type(type_.element_type))
    # name the address arithmetic, so the replaced op's name stays on its result
    for op in ops:
        op.results[0].name_hint = "idx"
    address.result.name_hint = "addr"
    ops.append(address)
    return ops, address.result


class LoadOpLowering(LLVMLoweringPattern):
    source_op = memref.LoadOp

    def lower(self, op: memref.LoadOp, rewriter: PatternRewriter) -> None:
        type_ = _memref_type(op.memref)
        base = materialize_llvm(rewriter, op, op.memref)
        indices = materialize_llvm_all(rewriter, op, op.indices)
        ops, address = element_address(base, indices, type_)
        load = builders.load(address, llvm_type(type_.element_type))
        replace_with_llvm(rewriter, op, [*ops, load])


class StoreOpLowering(LLVMLoweringPattern):
    source_op = memref.StoreOp

    def lower(self, op: memref.StoreOp, rewriter: PatternRewriter) -> None:
        type_ = _memref_type(op.memref)
        value = materialize_llvm(rewriter, op, op.value)
        base = materialize_llvm(rewriter, op, op.memref)
        indices = materialize_llvm_all(rewriter, op, op.indices)
        ops, address = element_address(base, indices, type_)
        replace_with_llvm(rewriter, op, [*ops, builders.store(value, address)])


def _function_entry(op: Operation) -> Block:
    """The entry block of the function (func.func or llvm.func) holding `op`."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    if parent is None or parent.body.first_block is None:
        raise unsupported(op, "a buffer must be allocated inside a function")
    return parent.body.first_block


class AllocOpLowering(LLVMLoweringPattern):
    source_op = memref.AllocOp

    def lower(self, op: memref.AllocOp, rewriter: PatternRewriter) -> None:
        type_ = _memref_type(op.memref)
        if op.symbol_operands:
            raise unsupported(op, f"{type_} has symbol operands")
        if op.dynamic_sizes:
            self.allocate_run_time_size(op, type_, rewriter)
            return
        if is_stack_buffer(type_):
            self.allocate_on_stack(op, type_, rewriter)
            return
        alignment = op.alignment.value.data if op.alignment is not None else 1
        if alignment > WORKSPACE_ALIGNMENT:
            raise unsupported(op, f"an alignment of {alignment} bytes (at most {WORKSPACE_ALIGNMENT})")
        size = builders.index_constant(memref_size_in_bytes(type_))
        builders.ensure_declared(op, WORKSPACE_TAKE, builders.function_type([i64], POINTER))
        call = builders.call(WORKSPACE_TAKE, [size.result], POINTER)
        replace_with_llvm(rewriter, op, [size, call])

    @staticmethod
    def allocate_run_time_size(op: memref.AllocOp, type_: MemRefType, rewriter: PatternRewriter) -> None:
        """A buffer whose first size is a run-time value, from the workspace (on the
        heap whatever its scope: its size is not bounded here)."""
        alignment = op.alignment.value.data if op.alignment is not None else 1
        if alignment > WORKSPACE_ALIGNMENT:
            raise unsupported(op, f"an alignment of {alignment} bytes (at most {WORKSPACE_ALIGNMENT})")
        ops, size = _run_time_bytes(rewriter, op, type_, op.dynamic_sizes[0])
        builders.ensure_declared(op, WORKSPACE_TAKE, builders.function_type([i64], POINTER))
        call = builders.call(WORKSPACE_TAKE, [size], POINTER)
        replace_with_llvm(rewriter, op, [*ops, call])

    @staticmethod
    def allocate_on_stack(
        op: memref.AllocOp | memref.AllocaOp,
        type_: MemRefType,
        rewriter: PatternRewriter,
    ) -> None:
        entry = _function_entry(op)
        element = llvm_type(type_.element_type)
        count = memref_size_in_bytes(type_) // element_byte_size(type_.element_type)
        count_op = builders.index_constant(max(count, 1))
        alloca = builders.alloca(count_op.result, element, BUFFER_ALIGNMENT)
        rewriter.insert([count_op, alloca], InsertPoint.at_start(entry))
        replace_with_llvm(rewriter, op, [], [alloca.results[0]])


class AllocaOpLowering(LLVMLoweringPattern):
    """`memref.alloca` lives on the stack until the function returns: one `llvm.alloca`
    at the function entry (hoisted out of any loop, so the stack does not grow)."""

    source_op = memref.AllocaOp

    def lower(self, op: memref.AllocaOp, rewriter: PatternRewriter) -> None:
        type_ = _memref_type(op.memref)
        if op.dynamic_sizes or op.symbol_operands:
            raise unsupported(op, f"{type_} has a dynamic size")
        AllocOpLowering.allocate_on_stack(op, type_, rewriter)


class ViewOpLowering(LLVMLoweringPattern):
    """A view of a byte buffer at a shift: the same pointer, advanced (see the module
    docstring). Its first size may be a run-time value."""

    source_op = memref.ViewOp

    def lower(self, op: memref.ViewOp, rewriter: PatternRewriter) -> None:
        # a run-time first size needs nothing here (the type conversion refuses others)
        base = materialize_llvm(rewriter, op, op.source)
        shift = materialize_llvm(rewriter, op, op.byte_shift)
        replace_with_llvm(rewriter, op, [builders.gep(base, shift, i8)])


class LoopViewOpLowering(LLVMLoweringPattern):
    """A view of a buffer's elements from an offset (a block of rows): the buffer's
    pointer advanced by that many elements."""

    source_op = ViewOp

    def lower(self, op: ViewOp, rewriter: PatternRewriter) -> None:
        base = materialize_llvm(rewriter, op, op.source)
        offset = materialize_llvm(rewriter, op, op.offset)
        element = _memref_type(op.source).element_type
        replace_with_llvm(rewriter, op, [builders.gep(base, offset, llvm_type(element))])


class ReinterpretCastOpLowering(LLVMLoweringPattern):
    """A view of a flat buffer whose layout its type gives whole (static strides and
    offset; only the first size may be a run-time value): the same pointer, the accesses
    through it addressed by that layout. Views with other run-time sizes, strides or
    offsets are what loop-linearize-views rewrites to the flat buffer; one left (read by
    something other than a load or a store) is refused."""

    source_op = memref.ReinterpretCastOp

    def lower(self, op: memref.ReinterpretCastOp, rewriter: PatternRewriter) -> None:
        source = _memref_type(op.source)
        result = _memref_type(op.result)
        if op.strides or op.offsets or any(n == memref.DYNAMIC_INDEX for n in op.static_sizes.get_values()[1:]):
            raise unsupported(op, f"a view of {result} needs its sizes, strides or offset at run time")
        if not has_flat_source(op):
            raise unsupported(op, f"a view of {source}, which is not a flat buffer")
        (offset,) = op.static_offsets.get_values()
        if memref_layout(result).offset != offset:
            raise unsupported(op, f"the view's offset {offset} is not the one its type {result} gives")
        replace_with_llvm(rewriter, op, [], [materialize_llvm(rewriter, op, op.source)])


class DeallocOpLowering(LLVMLoweringPattern):
    source_op = memref.DeallocOp

    def lower(self, op: memref.DeallocOp, rewriter: PatternRewriter) -> None:
        type_ = _memref_type(op.memref)
        if is_stack_buffer(type_):
            rewriter.erase(op)
            return
        pointer = materialize_llvm(rewriter, op, op.memref)
        if not _from_heap_alloc(op.memref):
            builders.ensure_declared(op, "free", builders.function_type([POINTER], None))
            replace_with_llvm(rewriter, op, [builders.call("free", [pointer], None)])
            return
        # the alloc's own type (the dealloc takes its result): the size it was taken with
        size_ops, size = _workspace_size(rewriter, op, type_)
        builders.ensure_declared(op, WORKSPACE_GIVE, builders.function_type([POINTER, i64], None))
        give = builders.call(WORKSPACE_GIVE, [pointer, size], None)
        replace_with_llvm(rewriter, op, [*size_ops, give])


def _run_time_bytes(
    rewriter: PatternRewriter, before: Operation, type_: MemRefType, first: SSAValue
) -> tuple[list[Operation], SSAValue]:
    """The bytes of a buffer of `type_` whose first size is the index value `first`: the
    llvm ops computing them (before `before`) and the value."""
    count = materialize_llvm(rewriter, before, first)
    row = math.prod(type_.get_shape()[1:]) * element_byte_size(type_.element_type)
    row_op = builders.index_constant(row)
    times = builders.int_binary(llvm.MulOp, count, row_op.result, nsw=True)
    return [row_op, times], times.results[0]


def _workspace_size(rewriter: PatternRewriter, dealloc: memref.DeallocOp, type_: MemRefType):
    """The ops and the llvm value of the bytes a heap buffer of `type_` was taken with:
    a constant for a static type, else its allocation's run-time size (the take's
    argument once the allocation is lowered)."""
    if all(n >= 0 for n in type_.get_shape()):
        size = builders.index_constant(memref_size_in_bytes(type_))
        return [size], size.result
    owner = dealloc.memref.owner
    if isinstance(owner, memref.AllocOp):
        return _run_time_bytes(rewriter, dealloc, type_, owner.dynamic_sizes[0])
    assert isinstance(owner, UnrealizedConversionCastOp)
    take = owner.inputs[0].owner
    assert isinstance(take, llvm.CallOp)
    return [], take.args[0]


def _from_heap_alloc(value: SSAValue) -> bool:
    """Whether `value` is the result of a heap `memref.alloc`, or of its lowering (the
    workspace take, cast back to the memref type)."""
    owner = value.owner
    if isinstance(owner, memref.AllocOp):
        return True
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        source = owner.inputs[0].owner
        callee = source.callee if isinstance(source, llvm.CallOp) else None
        return callee is not None and callee.root_reference.data == WORKSPACE_TAKE
    return False


class CopyOpLowering(LLVMLoweringPattern):
    """A copy between two contiguous buffers is one `llvm.memcpy`."""

    source_op = memref.CopyOp

    def lower(self, op: memref.CopyOp, rewriter: PatternRewriter) -> None:
        source_type = _memref_type(op.source)
        dest_type = _memref_type(op.destination)
        for type_ in (source_type, dest_type):
            if any(n < 0 for n in type_.get_shape()):
                raise unsupported(op, f"a copy of {type_}, whose size is known at run time only")
            if not memref_layout(type_).is_contiguous(type_.get_shape()):
                raise unsupported(
                    op,
                    f"{type_} is not contiguous; only contiguous copies are supported",
                )
        source, dest = materialize_llvm_all(rewriter, op, [op.source, op.destination])
        size = builders.index_constant(memref_size_in_bytes(source_type))
        volatile = builders.constant(0, i1)
        copy = builders.call_intrinsic(
            "llvm.memcpy.p0.p0.i64", [dest, source, size.result, volatile.result], None
        )
        replace_with_llvm(rewriter, op, [size, volatile, copy])


def _flat_initializer(
    op: memref.GlobalOp, type_: MemRefType
) -> DenseIntOrFPElementsAttr | None:
    """The initial value as a one-dimensional dense attribute over the same bytes
    (no per-element work, so megabyte weights stay cheap)."""
    value = op.initial_value
    if isinstance(value, UnitAttr):
        return None
    if not isinstance(value, DenseIntOrFPElementsAttr):
        raise unsupported(op, f"initial value {value} is not a dense attribute")
    count = 1
    for dim in type_.get_shape():
        count *= dim
    return DenseIntOrFPElementsAttr(TensorType(type_.element_type, [count]), value.data)


class GlobalOpLowering(LLVMLoweringPattern):
    source_op = memref.GlobalOp

    def lower(self, op: memref.GlobalOp, rewriter: PatternRewriter) -> None:
        type_ = op.type
        if not memref_layout(type_).is_contiguous(type_.get_shape()):
            raise unsupported(op, f"{type_} is not contiguous")
        count = memref_size_in_bytes(type_) // element_byte_size(type_.element_type)
        array = builders.array_type(count, llvm_type(type_.element_type))
        alignment = BUFFER_ALIGNMENT
        if isinstance(op.alignment, IntegerAttr):
            alignment = max(alignment, op.alignment.value.data)
        private = op.sym_visibility.data == "private"
        global_op = builders.global_variable(
            op.sym_name.data,
            array,
            value=_flat_initializer(op, type_),
            constant=op.constant is not None,
            linkage="internal" if private else "external",
            alignment=alignment,
        )
        rewriter.replace(op, [global_op], [])


class GetGlobalOpLowering(LLVMLoweringPattern):
    source_op = memref.GetGlobalOp

    def lower(self, op: memref.GetGlobalOp, rewriter: PatternRewriter) -> None:
        name = builders.symbol_name(op.name_)
        replace_with_llvm(rewriter, op, [builders.address_of(name)])


def memref_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering `memref` ops to the llvm dialect."""
    return [
        LoadOpLowering(),
        StoreOpLowering(),
        AllocOpLowering(),
        AllocaOpLowering(),
        ViewOpLowering(),
        LoopViewOpLowering(),
        ReinterpretCastOpLowering(),
        DeallocOpLowering(),
        CopyOpLowering(),
        GlobalOpLowering(),
        GetGlobalOpLowering(),
    ]
