"""llvm-dialect module -> LLVM IR text (an llvmlite `ir.Module`).

Instructions are translated by xDSL's `xdsl.backend.llvm` op converter; strato drives
the module, function and global translation itself because it needs what xDSL's
`convert_module` lacks:

* dense global initializers become one byte string (`c"..."`), not one Python
  constant per element, so megabytes of weights translate in well under a second;
* linkage of functions is kept, argument attributes strato emits are translated,
  and definitions are marked `nounwind` (lowered code never unwinds);
* blocks are translated in reverse post-order, so a value is always translated before
  a branch in another block passes it to a phi;
* definitions carry the host CPU, its features and `"prefer-vector-width"="512"` (LLVM
  otherwise prefers 256-bit vectors on AVX-512 CPUs), and the buffer arguments of
  kernels (`loop.kernel`) are `noalias`: a kernel's buffers are distinct by the
  loop-level ABI, which lets LLVM keep accumulators in registers; a function marked
  `llvm.noinline` (a parallel loop's outlined body) is `noinline`;
* fast-math flags of intrinsic calls are kept;
* GEPs are emitted on the opaque pointer directly (xDSL inserts a bitcast), and
  intrinsics are declared with opaque pointer parameters (xDSL declares them with the
  typed pointer llvmlite gives the first call's arguments, and a later call with a
  pointer to another global then fails to type-check).

`emit_llvm_ir(module)` returns the text; `LLVMIRTarget` is the `-t llvm` output target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from llvmlite import ir
from xdsl.backend.llvm.convert_op import convert_op, create_constant
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.target import Target

from strato.diagnostics import StratoError
from strato.dialects.loop import LoopKind
from strato.gc_pause import gc_paused
from strato.targets.llvm.host import HostTarget, host_data_layout, host_target
from strato.targets.llvm.loop_to_llvm import LOOP_KIND_ATTR
from strato.targets.llvm.type_conversion import memory_bytes

_ARG_FLAGS = {
    "llvm.noalias": "noalias",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.readonly": "readonly",
    "llvm.writeonly": "writeonly",
    "llvm.nocapture": "captures(none)",
}
_ARG_INTS = {"llvm.align": "align", "llvm.dereferenceable": "dereferenceable"}

_KERNEL_ATTR = (
    "loop.kernel"  # restated: the llvm target does not import the loop dialect
)

_NOINLINE_ATTR = "llvm.noinline"

PREFERRED_VECTOR_BITS = 512

_LOCAL_LINKAGES = frozenset({"internal", "private", "linkonce_odr", "weak_odr"})

ValueMap = dict[SSAValue, ir.Value]
BlockMap = dict[Block, ir.Block]


class EmissionError(StratoError):
    """A module that is not (only) in the llvm dialect, or uses something the LLVM IR
    emitter does not translate."""


def _llvm_type(type_: Attribute) -> ir.Type:
    try:
        return convert_type(type_)
    except Exception as err:  # xDSL raises its own exception type per release
        raise EmissionError(f"type {type_} has no LLVM IR counterpart") from err


# -- globals -----------------------------------------------------------------------------


def _array_shape(type_: ir.Type) -> tuple[int, ir.Type]:
    """(number of scalars, scalar type) of a possibly nested LLVM array type."""
    count = 1
    while isinstance(type_, ir.ArrayType):
        count *= type_.count
        type_ = type_.element
    return count, type_


def _scalar_bytes(type_: ir.Type) -> int | None:
    if isinstance(type_, ir.IntType):
        return max(1, (type_.width + 7) // 8)
    return {ir.HalfType: 2, ir.FloatType: 4, ir.DoubleType: 8}.get(type(type_))


def _dense_bytes(
    op: llvm.GlobalOp, value: DenseIntOrFPElementsAttr, type_: ir.Type
) -> bytes:
    """The initializer's bytes, laid out as LLVM lays out `type_`."""
    count, scalar = _array_shape(type_)
    size = _scalar_bytes(scalar)
    if size is None:
        raise EmissionError(
            f"global @{op.sym_name.data}: cannot initialize elements of {scalar}"
        )
    width = scalar.width if isinstance(scalar, ir.IntType) else 0
    data = memory_bytes(value.data.data, width)
    if len(data) == count * size:
        return data
    if len(data) == size:  # a splat
        return data * count
    raise EmissionError(
        f"global @{op.sym_name.data}: initializer has {len(data)} bytes, {type_} needs {count * size}"
    )


def _emit_global(op: llvm.GlobalOp, module: ir.Module) -> None:
    name = op.sym_name.data
    type_ = _llvm_type(op.global_type)
    value = op.value
    linkage = op.linkage.linkage.data
    initializer: ir.Constant | None = None
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(type_, ir.ArrayType):
        data = _dense_bytes(op, value, type_)
        if any(data):
            type_ = ir.ArrayType(ir.IntType(8), len(data))
            initializer = ir.Constant(type_, bytearray(data))
        else:
            initializer = ir.Constant(type_, None)
    elif isinstance(value, StringAttr):
        raw = value.data.encode()
        type_ = ir.ArrayType(ir.IntType(8), len(raw))
        initializer = ir.Constant(type_, bytearray(raw))
    elif isinstance(value, IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr):
        initializer = create_constant(op.global_type, value)
    elif value is None and linkage != "external":
        initializer = ir.Constant(type_, None)  # a definition without a value is zeroed
    elif value is not None:
        raise EmissionError(f"global @{name}: unsupported initializer {value}")

    gvar = ir.GlobalVariable(
        module, type_, name=name, addrspace=op.addr_space.value.data
    )
    if initializer is not None:
        gvar.initializer = initializer
        if linkage != "external":
            gvar.linkage = linkage
    else:
        gvar.linkage = "external"
    if op.constant is not None:
        gvar.global_constant = True
        gvar.unnamed_addr = True
    if op.alignment is not None:
        gvar.align = op.alignment.value.data


# -- functions ---------------------------------------------------------------------------


def _add_target_attributes(fn: ir.Function, machine: HostTarget) -> None:
    """String attributes llvmlite's attribute set does not know: added to the set
    itself, which prints them as they are."""
    for attribute in (
        f'"target-cpu"="{machine.cpu}"',
        f'"target-features"="{machine.features}"',
        f'"prefer-vector-width"="{PREFERRED_VECTOR_BITS}"',
    ):
        set.add(fn.attributes, attribute)


def _declare_function(
    op: llvm.FuncOp, module: ir.Module, *, machine: HostTarget | None
) -> ir.Function:
    fn_type = op.function_type
    ir_type = ir.FunctionType(
        _llvm_type(fn_type.output),
        [_llvm_type(t) for t in fn_type.inputs.data],
        var_arg=fn_type.is_variadic,
    )
    fn = ir.Function(module, ir_type, name=op.sym_name.data)
    linkage = op.linkage.linkage.data
    if op.body.blocks:
        if linkage in _LOCAL_LINKAGES:
            fn.linkage = linkage
        fn.attributes.add("nounwind")
        if machine is not None:
            _add_target_attributes(fn, machine)
        if _NOINLINE_ATTR in op.attributes:
            fn.attributes.add("noinline")
        if _KERNEL_ATTR in op.attributes:
            for arg in fn.args:
                if isinstance(arg.type, ir.PointerType):
                    arg.add_attribute("noalias")
    if op.arg_attrs is None:
        return fn
    for arg, attrs in zip(fn.args, op.arg_attrs.data, strict=True):
        for key, value in attrs.data.items():
            if key in _ARG_FLAGS and isinstance(arg.type, ir.PointerType):
                arg.add_attribute(_ARG_FLAGS[key])
            elif key in _ARG_INTS and isinstance(value, IntegerAttr):
                setattr(arg.attributes, _ARG_INTS[key], value.value.data)
    return fn


def _successors(block: Block) -> list[Block]:
    terminator = block.last_op
    return list(terminator.successors) if terminator is not None else []


def _reverse_post_order(entry: Block, blocks: list[Block]) -> list[Block]:
    """Blocks in reverse post-order from `entry` (unreachable ones at the end), so
    every block comes after the blocks that dominate it."""
    seen: set[Block] = {entry}
    post_order: list[Block] = []
    stack: list[tuple[Block, list[Block]]] = [(entry, _successors(entry))]
    while stack:
        block, pending = stack[-1]
        if pending:
            succ = pending.pop(0)
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, _successors(succ)))
            continue
        post_order.append(block)
        stack.pop()
    ordered = post_order[::-1]
    return ordered + [b for b in blocks if b not in seen]


def _emit_gep(op: llvm.GEPOp, builder: ir.IRBuilder, values: ValueMap) -> None:
    ssa_indices = iter(op.ssa_indices)
    indices = [
        values[next(ssa_indices)]
        if idx == llvm.GEP_USE_SSA_VAL
        else ir.Constant(ir.IntType(32), idx)
        for idx in op.rawConstantIndices.iter_values()
    ]
    values[op.result] = builder.gep(
        values[op.ptr],
        indices,
        inbounds=op.inbounds is not None,
        source_etype=_llvm_type(op.elem_type),
    )


def _opaque(type_: ir.Type) -> ir.Type:
    """Pointer types as opaque pointers: llvmlite still gives globals typed pointer
    types, and two of those with different pointees do not compare equal."""
    if isinstance(type_, ir.PointerType):
        return ir.PointerType(addrspace=type_.addrspace)
    return type_


def _emit_call_intrinsic(
    op: llvm.CallIntrinsicOp, builder: ir.IRBuilder, values: ValueMap
) -> None:
    args = [values[arg] for arg in op.args]
    result_type = _llvm_type(op.ress.type) if op.ress is not None else ir.VoidType()
    fn_type = ir.FunctionType(result_type, [_opaque(a.type) for a in args])
    name = op.intrin.data
    module = builder.module
    callee = module.globals.get(name)
    if callee is None:
        callee = ir.Function(module, fn_type, name=name)
    result = builder.call(callee, args, fastmath=_fastmath_flags(op))
    if op.ress is not None:
        values[op.ress] = result


def _emit_store(op: llvm.StoreOp, builder: ir.IRBuilder, values: ValueMap) -> None:
    """A store; the pointer is retyped when llvmlite gave it another pointee (GEPs of
    a buffer's element type, stored to with a vector of those elements)."""
    value, pointer = values[op.value], values[op.ptr]
    if not pointer.type.is_opaque and pointer.type.pointee != value.type:
        pointer = builder.bitcast(pointer, value.type.as_pointer())
    store = builder.store(value, pointer)
    if op.alignment is not None:
        store.align = op.alignment.value.data


_FASTMATH_ORDER = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "fast")
"""The order LLVM prints fast-math flags in (a flag set has no order of its own)."""

_FLOAT_BINARY = {
    llvm.FAddOp: "fadd",
    llvm.FSubOp: "fsub",
    llvm.FMulOp: "fmul",
    llvm.FDivOp: "fdiv",
    llvm.FRemOp: "frem",
}


def _fastmath_flags(op: Operation) -> list[str]:
    return sorted(
        (flag.value for flag in op.fastmathFlags.data), key=_FASTMATH_ORDER.index
    )


def _emit_float_binary(
    op: llvm.AbstractFloatArithOp, builder: ir.IRBuilder, values: ValueMap
) -> None:
    """A float binary op with its fast-math flags in LLVM's order, so the same module
    always prints the same text."""
    method = getattr(builder, _FLOAT_BINARY[type(op)])
    values[op.res] = method(values[op.lhs], values[op.rhs], flags=_fastmath_flags(op))


_OP_EMITTERS: dict[
    type[Operation], Callable[[Operation, ir.IRBuilder, ValueMap], None]
] = {
    llvm.GEPOp: _emit_gep,  # type: ignore[dict-item]
    llvm.CallIntrinsicOp: _emit_call_intrinsic,  # type: ignore[dict-item]
    llvm.StoreOp: _emit_store,  # type: ignore[dict-item]
    **dict.fromkeys(_FLOAT_BINARY, _emit_float_binary),  # type: ignore[arg-type]
}


def _emit_op(
    op: Operation, builder: ir.IRBuilder, values: ValueMap, blocks: BlockMap
) -> None:
    emitter = _OP_EMITTERS.get(type(op))
    if emitter is not None:
        emitter(op, builder, values)
        return
    try:
        convert_op(op, builder, values, blocks)
    except NotImplementedError as err:
        raise EmissionError(
            f"LLVM IR emission does not support '{op.name}'", op=op
        ) from err


def _emit_body(op: llvm.FuncOp, fn: ir.Function) -> None:
    region_blocks = list(op.body.blocks)
    blocks: BlockMap = {}
    values: ValueMap = {}
    for i, block in enumerate(region_blocks):
        blocks[block] = fn.append_basic_block(
            name=block.name_hint or ("entry" if i == 0 else "")
        )
    entry = region_blocks[0]
    for arg, ir_arg in zip(entry.args, fn.args, strict=True):
        values[arg] = ir_arg
        if arg.name_hint:
            ir_arg.name = arg.name_hint
    for block in region_blocks[1:]:
        builder = ir.IRBuilder(blocks[block])
        for arg in block.args:
            values[arg] = builder.phi(_llvm_type(arg.type), name=arg.name_hint or "")
    for block in _reverse_post_order(entry, region_blocks):
        builder = ir.IRBuilder(blocks[block])
        for block_op in block.ops:
            _emit_op(block_op, builder, values, blocks)
        terminator = block.last_op
        if isinstance(terminator, llvm.BrOp) and _is_unrolled_back_edge(terminator):
            builder.block.instructions[-1].set_metadata(
                "llvm.loop", _unroll_full(fn.module)
            )


def _is_unrolled_back_edge(op: llvm.BrOp) -> bool:
    kind = op.attributes.get(LOOP_KIND_ATTR)
    return isinstance(kind, StringAttr) and kind.data == LoopKind.UNROLLED.value


def _unroll_full(module: ir.Module) -> ir.values.MDValue:
    """A new loop id asking LLVM to unroll the loop fully (one per loop: a loop id is
    distinct, its first operand itself)."""
    unroll = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.full")])
    loop_id = ir.values.MDValue(module, [], name=str(len(module.metadata)))
    loop_id.operands = (loop_id, unroll)
    return loop_id


def module_symbols(module: ModuleOp) -> tuple[list[llvm.GlobalOp], list[llvm.FuncOp]]:
    """The module's globals and its functions, in order; an `EmissionError` for any
    other op."""
    globals_: list[llvm.GlobalOp] = []
    functions: list[llvm.FuncOp] = []
    for op in module.ops:
        if isinstance(op, llvm.GlobalOp):
            globals_.append(op)
        elif isinstance(op, llvm.FuncOp):
            functions.append(op)
        else:
            raise EmissionError(
                f"'{op.name}' is not in the llvm dialect; lower the module with "
                "convert-loops-to-llvm before emitting LLVM IR",
                op=op,
            )
    return globals_, functions


def to_llvmlite_module(
    module: ModuleOp,
    *,
    triple: str | None = None,
    data_layout: str | None = None,
    machine: HostTarget | None = None,
) -> ir.Module:
    """Translate an llvm-dialect module to an llvmlite IR module.

    The triple is, in order: `triple`, the module's `llvm.target_triple` attribute, the
    host's. The data layout is `data_layout`, or the host's when the triple is the host's.
    Functions compiled for the host's triple say which CPU and features their code may
    use: `machine`'s (the host's by default).
    """
    ir_module = ir.Module(
        name=module.sym_name.data if module.sym_name is not None else "strato"
    )
    module_triple = module.attributes.get("llvm.target_triple")
    host = host_target()
    if triple is None:
        triple = (
            module_triple.data if isinstance(module_triple, StringAttr) else host.triple
        )
    ir_module.triple = triple
    if data_layout is None and triple == host.triple:
        data_layout = host_data_layout()
    if data_layout:
        ir_module.data_layout = data_layout

    globals_, functions = module_symbols(module)
    for op in globals_:
        _emit_global(op, ir_module)
    cpu = (machine or host) if triple == host.triple else None
    declared = [(op, _declare_function(op, ir_module, machine=cpu)) for op in functions]
    for op, fn in declared:
        if op.body.blocks:
            _emit_body(op, fn)
    return ir_module


def emit_llvm_ir(module: ModuleOp, machine: HostTarget | None = None) -> str:
    """The LLVM IR text of an llvm-dialect module, for `machine` (the host by default)."""
    with gc_paused():  # llvmlite objects for every instruction, then their text
        return str(to_llvmlite_module(module, machine=machine))


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """LLVM IR text (of a module in the llvm dialect)."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_llvm_ir(module))


__all__ = ["EmissionError", "LLVMIRTarget", "emit_llvm_ir", "to_llvmlite_module"]
