"""Builders for the llvm-dialect ops the lowering emits.

xDSL's llvm op constructors differ from op to op (some take a result type, some infer
it, some take predicates as strings, others as integers) and change between releases;
every lowering pattern builds llvm ops through these functions so that a change of the
xDSL API is absorbed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from strato.targets.llvm.type_conversion import POINTER, is_float_type

_NO_FASTMATH = llvm.FastMathAttr(None)
_FASTMATH_ORDER = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "fast")
"""The order LLVM prints fast-math flags in, so emitted IR is deterministic."""


_OVERFLOW_NONE = IntegerAttr(0, 32)
_OVERFLOW_NSW = IntegerAttr(llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP]).to_int(), 32)
_ORDERING_NONE = IntegerAttr(0, i64)
_GEP_NO_WRAP_NONE = IntegerAttr(0, 32)
_INBOUNDS = UnitAttr()
_GEP_ONE_SSA_INDEX = DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL])

# The ops below are built with `create` and properties prepared once: the same op the
# xDSL constructors build, without their per-call argument parsing and attribute
# construction (most of the lowering's time on large models). The properties are
# listed in the order the constructors list them.


@cache
def _integer_attr(value: int, type_: IntegerType) -> IntegerAttr:
    return IntegerAttr(value, type_)


@cache
def _alignment_attr(alignment: int) -> IntegerAttr:
    return IntegerAttr(alignment, i64)


@cache
def _constant_gep_indices(index: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, [index])


def constant(value: float | bool, type_: Attribute) -> llvm.ConstantOp:
    """`llvm.mlir.constant(value) : type_` for an integer or float type."""
    if is_float_type(type_):
        attr: Attribute = FloatAttr(float(value), type_)
    else:
        assert isinstance(type_, IntegerType), f"no llvm constant of type {type_}"
        attr = _integer_attr(int(value), type_)
    return llvm.ConstantOp.create(result_types=(type_,), properties={"value": attr})


def index_constant(value: int) -> llvm.ConstantOp:
    return constant(value, i64)


def fastmath(flags: Attribute | None) -> llvm.FastMathAttr:
    """The llvm fastmath attribute carrying the same flags as an arith one."""
    if flags is None or not isinstance(flags.data, frozenset) or not flags.data:
        return _NO_FASTMATH
    ordered = sorted(flags.data, key=lambda flag: _FASTMATH_ORDER.index(str(flag)))
    return llvm.FastMathAttr([llvm.FastMathFlag(str(flag)) for flag in ordered])


def int_binary(
    op_class: type[Operation], lhs: SSAValue, rhs: SSAValue, *, nsw: bool = False
) -> Operation:
    """An llvm integer binary op (`llvm.add`, `llvm.sdiv`, ...) on two values."""
    properties: dict[str, Attribute] = {}
    if issubclass(op_class, llvm.ArithmeticBinOpOverflow):
        properties["overflowFlags"] = _OVERFLOW_NSW if nsw else _OVERFLOW_NONE
    return op_class.create(
        operands=(lhs, rhs), result_types=(lhs.type,), properties=properties
    )


def float_binary(
    op_class: type[Operation],
    lhs: SSAValue,
    rhs: SSAValue,
    flags: llvm.FastMathAttr = _NO_FASTMATH,
) -> Operation:
    """An llvm float binary op (`llvm.fadd`, ...) on two values."""
    return op_class.create(
        operands=(lhs, rhs), result_types=(lhs.type,), properties={"fastmathFlags": flags}
    )


def fneg(value: SSAValue, flags: llvm.FastMathAttr = _NO_FASTMATH) -> llvm.FNegOp:
    return llvm.FNegOp(value, flags)


def icmp(predicate: str, lhs: SSAValue, rhs: SSAValue) -> llvm.ICmpOp:
    """`llvm.icmp` with a predicate named as in LLVM ("slt", "eq", ...)."""
    type_ = lhs.type
    result = VectorType(i1, type_.shape) if isinstance(type_, VectorType) else i1
    return llvm.ICmpOp.create(
        operands=(lhs, rhs), result_types=(result,), properties={"predicate": _icmp_predicate(predicate)}
    )


@cache
def _icmp_predicate(predicate: str) -> IntegerAttr:
    return IntegerAttr(llvm.ICmpPredicateFlag(predicate).to_int(), i64)


def fcmp(predicate: str, lhs: SSAValue, rhs: SSAValue) -> llvm.FCmpOp:
    """`llvm.fcmp` with a predicate named as in LLVM ("olt", "une", "false", ...)."""
    name = {"false": "_false", "true": "_true"}.get(predicate, predicate)
    return llvm.FCmpOp(lhs, rhs, name)


def select(cond: SSAValue, if_true: SSAValue, if_false: SSAValue) -> llvm.SelectOp:
    return llvm.SelectOp(cond, if_true, if_false)


def cast(op_class: type[Operation], value: SSAValue, to: Attribute) -> Operation:
    """An llvm conversion op (`llvm.sext`, `llvm.sitofp`, `llvm.fpext`, ...)."""
    return op_class(value, to)


def call_intrinsic(
    name: str,
    args: Sequence[SSAValue],
    result_type: Attribute | None,
    flags: llvm.FastMathAttr | None = None,
) -> llvm.CallIntrinsicOp:
    """`llvm.call_intrinsic "llvm.name.suffix"(args)`: the full, type-mangled name,
    with fast-math `flags` (of a call returning floats) when given."""
    call = llvm.CallIntrinsicOp(
        name, list(args), [] if result_type is None else [result_type]
    )
    if flags is not None and flags.data:
        call.properties["fastmathFlags"] = flags
    return call


def call(
    callee: str, args: Sequence[SSAValue], result_type: Attribute | None
) -> llvm.CallOp:
    """A direct `llvm.call @callee(args)`."""
    return llvm.CallOp(callee, *args, return_type=result_type)


def gep(base: SSAValue, index: SSAValue | int, element_type: Attribute) -> llvm.GEPOp:
    """`&base[index]` for a pointer to elements of `element_type` (inbounds)."""
    if isinstance(index, int):
        operands: tuple[SSAValue, ...] = (base,)
        indices = _constant_gep_indices(index)
    else:
        operands = (base, index)
        indices = _GEP_ONE_SSA_INDEX
    return llvm.GEPOp.create(
        operands=operands,
        result_types=(POINTER,),
        properties={
            "rawConstantIndices": indices,
            "elem_type": element_type,
            "noWrapFlags": _GEP_NO_WRAP_NONE,
            "inbounds": _INBOUNDS,
        },
    )


def load(
    pointer: SSAValue, type_: Attribute, alignment: int | None = None
) -> llvm.LoadOp:
    """A load of `type_`; `alignment` in bytes when the pointer is known to have it
    (a vector load of a buffer only knows its elements' alignment)."""
    properties: dict[str, Attribute] = {"ordering": _ORDERING_NONE}
    if alignment is not None:
        properties["alignment"] = _alignment_attr(alignment)
    return llvm.LoadOp.create(
        operands=(pointer,), result_types=(type_,), properties=properties
    )


def store(
    value: SSAValue, pointer: SSAValue, alignment: int | None = None
) -> llvm.StoreOp:
    properties: dict[str, Attribute] = {"ordering": _ORDERING_NONE}
    if alignment is not None:
        properties["alignment"] = _alignment_attr(alignment)
    return llvm.StoreOp.create(operands=(value, pointer), properties=properties)


def alloca(count: SSAValue, element_type: Attribute, alignment: int) -> llvm.AllocaOp:
    return llvm.AllocaOp(count, element_type, alignment)


def address_of(symbol: str) -> llvm.AddressOfOp:
    return llvm.AddressOfOp(symbol, POINTER)


def branch(dest: Block, args: Sequence[SSAValue] = ()) -> llvm.BrOp:
    return llvm.BrOp.create(operands=tuple(args), successors=(dest,))


def cond_branch(
    cond: SSAValue,
    then_block: Block,
    then_args: Sequence[SSAValue],
    else_block: Block,
    else_args: Sequence[SSAValue],
) -> llvm.CondBrOp:
    return llvm.CondBrOp.create(
        operands=(cond, *then_args, *else_args),
        successors=(then_block, else_block),
        properties={"operandSegmentSizes": _cond_branch_segments(len(then_args), len(else_args))},
    )


@cache
def _cond_branch_segments(then_count: int, else_count: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, [1, then_count, else_count])


def return_(value: SSAValue | None = None) -> llvm.ReturnOp:
    return llvm.ReturnOp(value)


def function_type(
    inputs: Sequence[Attribute], result: Attribute | None
) -> llvm.LLVMFunctionType:
    return llvm.LLVMFunctionType(list(inputs), result)


def function(
    name: str,
    type_: llvm.LLVMFunctionType,
    body: Region | None = None,
    *,
    linkage: str = "external",
    arg_attrs: Sequence[Attribute] | None = None,
) -> llvm.FuncOp:
    """An `llvm.func`: a definition when `body` has blocks, else a declaration."""
    other_props: dict[str, Attribute | None] = {}
    if arg_attrs is not None:
        other_props["arg_attrs"] = ArrayAttr(list(arg_attrs))
    return llvm.FuncOp(
        name,
        type_,
        linkage=llvm.LinkageAttr(linkage),
        body=body if body is not None else Region(),
        other_props=other_props,
    )


def global_variable(
    name: str,
    type_: Attribute,
    *,
    value: Attribute | None,
    constant: bool,
    linkage: str,
    alignment: int | None,
) -> llvm.GlobalOp:
    return llvm.GlobalOp(
        type_,
        name,
        linkage,
        constant=constant,
        value=value,
        alignment=alignment,
    )


def array_type(count: int, element: Attribute) -> llvm.LLVMArrayType:
    return llvm.LLVMArrayType(count, element)


def enclosing_module(op: Operation) -> ModuleOp:
    """The top-level `builtin.module` that holds `op`."""
    current: Operation | None = op
    module: ModuleOp | None = None
    while current is not None:
        if isinstance(current, ModuleOp):
            module = current
        current = current.parent_op()
    assert module is not None, f"{op.name} is not inside a module"
    return module


def ensure_declared(anchor: Operation, name: str, type_: llvm.LLVMFunctionType) -> None:
    """Declare the external function `name` in the module of `anchor`, once.

    Used for the C library functions lowered code calls (malloc, free, libm).
    """
    module = enclosing_module(anchor)
    existing = SymbolTable.lookup_symbol(module, name)
    if existing is not None:
        return
    Rewriter.insert_op(function(name, type_), InsertPoint.at_end(module.body.block))


def symbol_name(ref: SymbolRefAttr | StringAttr) -> str:
    if isinstance(ref, StringAttr):
        return ref.data
    return ref.root_reference.data
