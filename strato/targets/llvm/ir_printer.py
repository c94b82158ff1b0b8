"""LLVM IR text printed straight from an llvm-dialect module: the module
`emit.emit_llvm_ir` gives, without an llvmlite object per instruction.

`emit_llvm_ir` translates each op to an llvmlite instruction (through xDSL's op
converter) and then prints the llvmlite module; a kernel of a few thousand ops spends a
fifth of its Python lowering there, building and formatting objects nothing else reads.
`print_llvm_ir` writes each instruction's text as it walks the ops, and gives the same
module: the same functions, globals, instructions in the same order, value and block
names (llvmlite's: a value without a name hint is `%".N"`, its number counted in the
function in the order llvmlite creates values), flags, attributes and metadata. Its text
differs from llvmlite's only in spelling, which LLVM's parser does not keep (every
pointer is `ptr`, calls do not restate a callee's type), so the two texts parse to
modules that print alike (`tests/unit/test_ir_printer.py` checks every kernel of the
zoo models and the lowering's lit inputs).

`emit_llvm_ir` stays the reference, and what `strato-opt -t llvm` prints. An op the
printer does not know (one strato's lowering does not produce) makes it hand the whole
module to `emit_llvm_ir`, so the two never disagree on what they accept.

What llvmlite adds of its own and the printer therefore reproduces:
- a store through a pointer llvmlite types with another pointee (an `alloca`, a
  global, a GEP of either) first bitcasts the pointer: llvmlite checks pointee types
  (`emit._emit_store`);
- the unrolled loops' metadata: one `llvm.loop.unroll.full` node per module and a
  self-referential loop id per unrolled back edge, numbered as they are created.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from strato.targets.llvm import emit
from strato.targets.llvm.host import HostTarget, host_data_layout, host_target


class _Unprintable(Exception):
    """Something the printer leaves to `emit.emit_llvm_ir`."""


@dataclass(frozen=True, slots=True)
class _Value:
    """An operand as the text refers to it: `type ref`, and for a pointer llvmlite
    types (an alloca, a global, a GEP of either) its pointee."""

    ref: str
    type: str
    pointee: str | None = None

    @property
    def typed(self) -> str:
        return f"{self.type} {self.ref}"


_TYPES: dict[Attribute, str] = {}
_TYPE_OBJECTS: dict[int, tuple[Attribute, str]] = {}
"""Texts by the identity of the type object too (kept alive with it, so an id is not
reused while cached): hashing a parametrized type is a walk over its parameters."""

_MAX_TYPE_OBJECTS = 1 << 14


def _type(type_: Attribute) -> str:
    """The LLVM type of an xDSL type, as text (llvmlite's spelling, through the same
    conversion `emit` uses)."""
    found = _TYPE_OBJECTS.get(id(type_))
    if found is not None and found[0] is type_:
        return found[1]
    text = _TYPES.get(type_)
    if text is None:
        text = _TYPES[type_] = str(emit._llvm_type(type_))
    if len(_TYPE_OBJECTS) >= _MAX_TYPE_OBJECTS:
        _TYPE_OBJECTS.clear()
    _TYPE_OBJECTS[id(type_)] = (type_, text)
    return text


def _quoted(name: str) -> str:
    """A name as llvmlite quotes it: `"name"`, each UTF-8 byte other than printable
    ASCII (and the quote and backslash) escaped."""
    if name.isascii() and name.isprintable() and '"' not in name and "\\" not in name:
        return f'"{name}"'
    return (
        '"'
        + "".join(
            chr(byte) if 32 <= byte < 127 and byte not in (34, 92) else f"\\{byte:02x}"
            for byte in name.encode()
        )
        + '"'
    )


def _bytes_literal(data: bytes) -> str:
    """`c"..."` of `data`, every byte as a hex escape (one C-speed call)."""
    return f'c"\\{data.hex(chr(92))}"' if data else 'c""'


class _Names:
    """llvmlite's naming in a function: a taken name gets `.1`, `.2`, ... after it,
    counted per base name; the empty name is always taken, so unnamed values are `.1`,
    `.2`, ..."""

    def __init__(self) -> None:
        self._used = {""}
        self._counts: dict[str, int] = {}

    def register(self, base: str) -> str:
        name = base
        while name in self._used:
            count = self._counts.get(base, 0) + 1
            self._counts[base] = count
            name = f"{base}.{count}"
        self._used.add(name)
        return name


# -- constants ------------------------------------------------------------------------


def _float_text(value: float, type_text: str) -> str:
    if type_text == "float":
        value = struct.unpack("f", struct.pack("f", value))[0]
    elif type_text == "half":
        value = struct.unpack("e", struct.pack("e", value))[0]
    elif type_text != "double":
        raise _Unprintable(f"float constant of type {type_text}")
    return f"{struct.unpack('Q', struct.pack('d', value))[0]:#018x}"


def _scalar_text(value: float, type_text: str) -> str:
    if type_text.startswith("i"):
        return str(value)
    return _float_text(value, type_text)


def _constant(type_: Attribute, value: Attribute) -> str:
    """The text of an `llvm.mlir.constant`'s value (what xDSL's `create_constant`
    gives llvmlite)."""
    type_text = _type(type_)
    if isinstance(value, IntegerAttr | FloatAttr):
        return _scalar_text(value.value.data, type_text)
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(type_, VectorType):
        element = _type(type_.element_type)
        return (
            "<"
            + ", ".join(
                f"{element} {_scalar_text(v, element)}" for v in value.get_values()
            )
            + ">"
        )
    raise _Unprintable(f"constant {value}")


def _null(type_text: str) -> str:
    """llvmlite's text of `ir.Constant(type, None)`."""
    if type_text == "ptr":
        return "null"
    if type_text.startswith(("i",)) and type_text[1:].isdigit():
        return "0"
    if type_text in ("half", "float", "double", "bfloat"):
        return "0.0"
    return "zeroinitializer"


# -- the module -----------------------------------------------------------------------

_INT_BINARY = {
    llvm.AddOp: "add",
    llvm.SubOp: "sub",
    llvm.MulOp: "mul",
    llvm.UDivOp: "udiv",
    llvm.SDivOp: "sdiv",
    llvm.URemOp: "urem",
    llvm.SRemOp: "srem",
    llvm.ShlOp: "shl",
    llvm.LShrOp: "lshr",
    llvm.AShrOp: "ashr",
    llvm.AndOp: "and",
    llvm.OrOp: "or",
    llvm.XOrOp: "xor",
}
_INT_FAMILY = {
    kind: next(
        (
            family
            for family in (
                llvm.ArithmeticBinOpOverflow,
                llvm.ArithmeticBinOpExact,
                llvm.ArithmeticBinOpDisjoint,
            )
            if issubclass(kind, family)
        ),
        None,
    )
    for kind in _INT_BINARY
}
"""Which flags each integer op carries (xDSL's op classes), looked up once."""

_OVERFLOW_FLAGS = {
    i: [f.value for f in llvm.OverflowAttr.from_int(i).data] for i in range(4)
}

_CASTS = {
    llvm.TruncOp: "trunc",
    llvm.ZExtOp: "zext",
    llvm.SExtOp: "sext",
    llvm.PtrToIntOp: "ptrtoint",
    llvm.IntToPtrOp: "inttoptr",
    llvm.BitcastOp: "bitcast",
    llvm.FPExtOp: "fpext",
    llvm.FPTruncOp: "fptrunc",
    llvm.SIToFPOp: "sitofp",
}


class _Function:
    """One function's body as text."""

    def __init__(self, printer: _ModulePrinter, op: llvm.FuncOp):
        self.printer = printer
        self.op = op
        self.names = _Names()
        self.values: dict[int, _Value] = {}  # by the SSA value's id: it outlives this
        self.lines: dict[Block, list[str]] = {}
        self.phis: dict[int, list[str]] = {}
        self.labels: dict[Block, str] = {}
        self.arg_names: list[str] = []  # the arguments' names, once `body` ran

    def _new(self, type_text: str, pointee: str | None = None) -> _Value:
        return _Value(f"%{_quoted(self.names.register(''))}", type_text, pointee)

    def _define(
        self, result: SSAValue, block: list[str], text: str, pointee: str | None = None
    ) -> None:
        value = self._new(_type(result.type), pointee)
        self.values[id(result)] = value
        block.append(f"  {value.ref} = {text}")

    def _instruction(
        self, result: SSAValue | None, block: list[str], text: str
    ) -> None:
        """An instruction with a result or without one (a call of a void function)."""
        if result is not None:
            self._define(result, block, text)
        else:
            self._void(block, text)

    def _void(self, block: list[str], text: str) -> None:
        self.names.register("")  # llvmlite names every instruction, void ones too
        block.append(f"  {text}")

    def _operand(self, value: SSAValue) -> _Value:
        found = self.values.get(id(value))
        if found is not None:
            return found
        owner = value.owner
        # constants, null values, undef and addresses are operands, not instructions
        if isinstance(owner, llvm.ConstantOp):
            found = _Value(
                _constant(owner.result.type, owner.value), _type(owner.result.type)
            )
        elif isinstance(owner, llvm.ZeroOp):
            type_text = _type(owner.res.type)
            found = _Value(_null(type_text), type_text)
        elif isinstance(owner, llvm.UndefOp):
            found = _Value("undef", _type(owner.res.type))
        elif isinstance(owner, llvm.AddressOfOp):
            found = self.printer.address_of(owner.global_name.root_reference.data)
        else:
            raise _Unprintable(f"operand of {owner}")
        self.values[id(value)] = found
        return found

    def body(self) -> list[str]:
        op = self.op
        region_blocks = list(op.body.blocks)
        entry = region_blocks[0]
        # llvmlite creates the arguments unnamed, then names those with a hint
        arg_values = []
        fn_args = op.function_type.inputs.data
        for _ in fn_args:
            arg_values.append(self.names.register(""))
        self.names.register("")  # llvmlite's function names its return value
        for i, arg in enumerate(entry.args):
            if arg.name_hint:
                arg_values[i] = self.names.register(arg.name_hint)
            self.values[id(arg)] = _Value(
                f"%{_quoted(arg_values[i])}", _type(fn_args[i])
            )
        self.arg_names = arg_values
        for i, block in enumerate(region_blocks):
            self.labels[block] = self.names.register(
                block.name_hint or ("entry" if i == 0 else "")
            )
            self.lines[block] = []
        phi_heads: dict[Block, list[tuple[SSAValue, str]]] = {}
        for block in region_blocks[1:]:
            heads = phi_heads[block] = []
            for arg in block.args:
                type_text = _type(arg.type)
                name = self.names.register(arg.name_hint or "")
                self.values[id(arg)] = _Value(f"%{_quoted(name)}", type_text)
                self.phis[id(arg)] = []
                heads.append((arg, f"  %{_quoted(name)} = phi {type_text} "))
        for block in emit._reverse_post_order(entry, region_blocks):
            lines = self.lines[block]
            for block_op in block.ops:
                self._op(block_op, block, lines)
        text: list[str] = []
        for block in region_blocks:
            text.append(f"{_quoted(self.labels[block])}:")
            for arg, head in phi_heads.get(block, ()):
                text.append(head + ", ".join(self.phis[id(arg)]))
            text.extend(self.lines[block])
        return text

    # -- ops ----------------------------------------------------------------------------

    def _op(self, op: Operation, block: Block, lines: list[str]) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise _Unprintable(op.name)
        handler(self, op, block, lines)

    def _incoming(self, target: Block, arguments, source: Block) -> None:
        label = f"%{_quoted(self.labels[source])}"
        for arg, value in zip(target.args, arguments, strict=True):
            self.phis[id(arg)].append(f"[{self._operand(value).ref}, {label}]")


def _int_binary(name: str, flags: list[str]) -> str:
    return f"{name} {' '.join(flags)} " if flags else f"{name} "


def _print_binary(
    self: _Function, op: Operation, block: Block, lines: list[str]
) -> None:
    kind = type(op)
    lhs_value, rhs_value = op._operands
    lhs, rhs = self._operand(lhs_value), self._operand(rhs_value)
    flags: list[str] = []
    if kind in emit._FLOAT_BINARY:
        name, flags = emit._FLOAT_BINARY[kind], emit._fastmath_flags(op)
    else:  # the flags xDSL's converter gives llvmlite, in its order of cases
        name, family = _INT_BINARY[kind], _INT_FAMILY[kind]
        if family is llvm.ArithmeticBinOpOverflow:
            overflow = op.properties.get("overflowFlags")
            if overflow:
                flags = _OVERFLOW_FLAGS[overflow.value.data]
        elif family is llvm.ArithmeticBinOpExact:
            flags = ["exact"] if op.is_exact else []
        elif family is llvm.ArithmeticBinOpDisjoint:
            flags = ["disjoint"] if op.is_disjoint else []
    self._define(
        op.results[0], lines, f"{_int_binary(name, flags)}{lhs.typed}, {rhs.ref}"
    )


def _print_icmp(
    self: _Function, op: llvm.ICmpOp, block: Block, lines: list[str]
) -> None:
    predicate = _ICMP[op.properties["predicate"].value.data]
    lhs_value, rhs_value = op._operands
    lhs, rhs = self._operand(lhs_value), self._operand(rhs_value)
    self._define(op.results[0], lines, f"icmp {predicate} {lhs.typed}, {rhs.ref}")


_ICMP = {i: llvm.ICmpPredicateFlag.from_int(i).value for i in range(10)}


def _print_fcmp(
    self: _Function, op: llvm.FCmpOp, block: Block, lines: list[str]
) -> None:
    predicate = llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value
    lhs, rhs = self._operand(op.lhs), self._operand(op.rhs)
    # xDSL's converter gives llvmlite no fast-math flags for a comparison
    self._define(op.res, lines, f"fcmp {predicate} {lhs.typed}, {rhs.ref}")


def _print_cast(self: _Function, op: Operation, block: Block, lines: list[str]) -> None:
    flags: list[str] = []
    if isinstance(op, llvm.IntegerConversionOpOverflow) and op.overflowFlags:
        flags = [f.value for f in op.overflowFlags.data]
    elif isinstance(op, llvm.IntegerConversionOpNNeg) and op.non_neg:
        flags = ["nneg"]
    source = self._operand(op.operands[0])
    result = op.results[0]
    self._define(
        result,
        lines,
        f"{_int_binary(_CASTS[type(op)], flags)}{source.typed} to {_type(result.type)}",
    )


def _print_fneg(
    self: _Function, op: llvm.FNegOp, block: Block, lines: list[str]
) -> None:
    flags = [f.value for f in op.fastmathFlags.data]
    self._define(
        op.res, lines, f"{_int_binary('fneg', flags)}{self._operand(op.arg).typed}"
    )


def _call_text(callee: str, return_type: str, args: list[_Value], *, fastmath: list[str],
               cconv: str = "", tail: bool = False) -> str:  # fmt: skip
    flags = " " + " ".join(fastmath) if fastmath else ""
    conv = f"{cconv} " if cconv else ""
    prefix = "tail " if tail else ""
    arguments = ", ".join(a.typed for a in args)
    return f"{prefix}call{flags} {conv}{return_type} @{_quoted(callee)}({arguments})"


def _is_float(type_text: str) -> bool:
    element = (
        type_text.rsplit(" x ", 1)[-1].rstrip(">")
        if type_text.startswith("<")
        else type_text
    )
    return element in ("half", "float", "double", "bfloat")


def _print_call(
    self: _Function, op: llvm.CallOp, block: Block, lines: list[str]
) -> None:
    if op.op_bundle_operands or op.op_bundle_sizes or op.callee is None:
        raise _Unprintable("call with operand bundles or without a callee")
    name = op.callee.string_value()
    signature = self.printer.signatures.get(name)
    if signature is None or signature[2]:
        raise _Unprintable(f"call of @{name}")  # not declared here, or variadic
    return_type = signature[0]
    args = [self._operand(arg) for arg in op.args]
    fastmath = (
        [f.value for f in op.fastmathFlags.data]
        if op.returned is not None and _is_float(_type(op.returned.type))
        else []
    )
    text = _call_text(
        name, return_type, args, fastmath=fastmath, cconv=op.CConv.cconv_name,
        tail=op.TailCallKind.data != "none",
    )  # fmt: skip
    self._instruction(op.returned, lines, text)


def _print_call_intrinsic(
    self: _Function, op: llvm.CallIntrinsicOp, block: Block, lines: list[str]
) -> None:
    args = [self._operand(arg) for arg in op.args]
    return_type = _type(op.ress.type) if op.ress is not None else "void"
    name = op.intrin.data
    self.printer.declare_intrinsic(name, return_type, [a.type for a in args])
    text = _call_text(name, self.printer.signatures[name][0], args,
                      fastmath=emit._fastmath_flags(op))  # fmt: skip
    self._instruction(op.ress, lines, text)


def _print_alloca(
    self: _Function, op: llvm.AllocaOp, block: Block, lines: list[str]
) -> None:
    element = _type(op.elem_type)
    align = f", align {op.alignment.value.data}" if op.alignment else ""
    value = self._new("ptr", _pointee(element))
    self.values[id(op.results[0])] = value
    lines.append(
        f"  {value.ref} = alloca {element}, {self._operand(op.size).typed}{align}"
    )


def _print_load(
    self: _Function, op: llvm.LoadOp, block: Block, lines: list[str]
) -> None:
    alignment = op.properties.get("alignment")
    align = f", align {alignment.value.data}" if alignment else ""
    pointer = self._operand(op._operands[0])
    result = op.results[0]
    self._define(result, lines, f"load {_type(result.type)}, {pointer.typed}{align}")


def _print_store(
    self: _Function, op: llvm.StoreOp, block: Block, lines: list[str]
) -> None:
    value_operand, pointer_operand = op._operands
    value, pointer = self._operand(value_operand), self._operand(pointer_operand)
    # llvmlite compares the pointee with the value's type (any two pointer types are
    # equal to it, as their texts are here: every pointer is `ptr`)
    if pointer.pointee is not None and pointer.pointee != value.type:
        cast = self._new(pointer.type, value.type)
        lines.append(f"  {cast.ref} = bitcast {pointer.typed} to {pointer.type}")
        pointer = cast
    alignment = op.properties.get("alignment")
    align = f", align {alignment.value.data}" if alignment is not None else ""
    self._void(lines, f"store {value.typed}, {pointer.typed}{align}")


def _is_pointer(type_text: str) -> bool:
    return type_text == "ptr" or type_text.startswith("ptr ")


def _pointee(element: str) -> str | None:
    """The pointee of a pointer llvmlite makes to `element` (an alloca's, a global's):
    a pointer to a pointer is opaque."""
    return None if _is_pointer(element) else element


def _print_gep(self: _Function, op: llvm.GEPOp, block: Block, lines: list[str]) -> None:
    operands = op._operands
    properties = op.properties
    ssa_indices = iter(operands[1:])
    indices = [
        self._operand(next(ssa_indices)).typed
        if index == llvm.GEP_USE_SSA_VAL
        else f"i32 {index}"
        for index in properties["rawConstantIndices"].iter_values()
    ]
    pointer = self._operand(operands[0])
    inbounds = "getelementptr inbounds" if "inbounds" in properties else "getelementptr"
    value = self._new(
        pointer.type, pointer.pointee
    )  # llvmlite gives it the pointer's type
    self.values[id(op.results[0])] = value
    element = _type(properties["elem_type"])
    lines.append(
        f"  {value.ref} = {inbounds} {element}, {pointer.typed}, {', '.join(indices)}"
    )


def _print_select(
    self: _Function, op: llvm.SelectOp, block: Block, lines: list[str]
) -> None:
    cond, lhs, rhs = (self._operand(value) for value in op._operands)
    # llvmlite gives a select its first value's type, a typed pointer's pointee too
    self._define(
        op.results[0],
        lines,
        f"select {cond.typed}, {lhs.typed}, {rhs.typed}",
        lhs.pointee,
    )


def _print_insert_element(
    self: _Function, op: llvm.InsertElementOp, block: Block, lines: list[str]
) -> None:
    vector, value, index = (self._operand(v) for v in op._operands)
    self._define(
        op.results[0],
        lines,
        f"insertelement {vector.typed}, {value.typed}, {index.typed}",
    )


def _print_shuffle(
    self: _Function, op: llvm.ShuffleVectorOp, block: Block, lines: list[str]
) -> None:
    mask = op.mask.get_values()
    v1, v2 = self._operand(op.v1), self._operand(op.v2)
    mask_text = ", ".join(f"i32 {m}" for m in mask)
    self._define(
        op.res,
        lines,
        f"shufflevector {v1.typed}, {v2.typed}, <{len(mask)} x i32> <{mask_text}>",
    )


def _print_extract_value(
    self: _Function, op: llvm.ExtractValueOp, block: Block, lines: list[str]
) -> None:
    position = ", ".join(str(p) for p in op.position.iter_values())
    self._define(
        op.results[0],
        lines,
        f"extractvalue {self._operand(op.container).typed}, {position}",
    )


def _print_insert_value(
    self: _Function, op: llvm.InsertValueOp, block: Block, lines: list[str]
) -> None:
    position = ", ".join(str(p) for p in op.position.iter_values())
    container, value = self._operand(op.container), self._operand(op.value)
    self._define(
        op.results[0],
        lines,
        f"insertvalue {container.typed}, {value.typed}, {position}",
    )


def _print_br(self: _Function, op: llvm.BrOp, block: Block, lines: list[str]) -> None:
    successor = op._successors[0]
    self._incoming(successor, op._operands, block)
    metadata = ""
    if emit._is_unrolled_back_edge(op):
        metadata = f", !llvm.loop !{self.printer.unrolled_loop_id()}"
    self._void(lines, f"br label %{_quoted(self.labels[successor])}{metadata}")


def _print_cond_br(
    self: _Function, op: llvm.CondBrOp, block: Block, lines: list[str]
) -> None:
    self._incoming(op.then_block, op.then_arguments, block)
    self._incoming(op.else_block, op.else_arguments, block)
    cond = self._operand(op.cond)
    self._void(
        lines,
        f"br {cond.typed}, label %{_quoted(self.labels[op.then_block])}, "
        f"label %{_quoted(self.labels[op.else_block])}",
    )


def _print_return(
    self: _Function, op: llvm.ReturnOp, block: Block, lines: list[str]
) -> None:
    if op.operands:
        self._void(lines, f"ret {self._operand(op.operands[0]).typed}")
    else:
        self._void(lines, "ret void")


def _print_unreachable(
    self: _Function, op: Operation, block: Block, lines: list[str]
) -> None:
    self._void(lines, "unreachable")


def _operand_only(
    self: _Function, op: Operation, block: Block, lines: list[str]
) -> None:
    """Constants, null values, undef and addresses: text in their users' operands."""


_HANDLERS: dict[
    type[Operation], Callable[[_Function, Operation, Block, list[str]], None]
] = {
    **dict.fromkeys(emit._FLOAT_BINARY, _print_binary),
    **dict.fromkeys(_INT_BINARY, _print_binary),
    llvm.ICmpOp: _print_icmp,
    llvm.FCmpOp: _print_fcmp,
    **dict.fromkeys(_CASTS, _print_cast),
    llvm.FNegOp: _print_fneg,
    llvm.CallOp: _print_call,
    llvm.CallIntrinsicOp: _print_call_intrinsic,
    llvm.AllocaOp: _print_alloca,
    llvm.LoadOp: _print_load,
    llvm.StoreOp: _print_store,
    llvm.GEPOp: _print_gep,
    llvm.SelectOp: _print_select,
    llvm.InsertElementOp: _print_insert_element,
    llvm.ShuffleVectorOp: _print_shuffle,
    llvm.ExtractValueOp: _print_extract_value,
    llvm.InsertValueOp: _print_insert_value,
    llvm.BrOp: _print_br,
    llvm.CondBrOp: _print_cond_br,
    llvm.ReturnOp: _print_return,
    llvm.UnreachableOp: _print_unreachable,
    **dict.fromkeys(
        (llvm.ConstantOp, llvm.ZeroOp, llvm.UndefOp, llvm.AddressOfOp), _operand_only
    ),
}  # type: ignore[dict-item]


class _ModulePrinter:
    def __init__(self, module: ModuleOp, machine: HostTarget | None):
        self.module = module
        self.machine = machine
        self.globals: dict[str, _Value] = {}
        self.signatures: dict[str, tuple[str, list[str], bool]] = {}
        self.declared_intrinsics: list[str] = []
        self.metadata: list[str] = []
        self.unroll_node: int | None = None

    # -- what function bodies ask for -----------------------------------------------

    def address_of(self, name: str) -> _Value:
        found = self.globals.get(name)
        if found is None:
            raise _Unprintable(f"address of unknown @{name}")
        return found

    def declare_intrinsic(
        self, name: str, return_type: str, arg_types: list[str]
    ) -> None:
        """Declare `name` on its first call, with that call's argument types (as
        `emit._emit_call_intrinsic` does)."""
        signature = self.signatures.get(name)
        if signature is None:
            self.signatures[name] = (return_type, arg_types, False)
            self.globals[name] = _Value(f"@{_quoted(name)}", "ptr", "function")
            self.declared_intrinsics.append(
                f"declare {return_type} @{_quoted(name)}({', '.join(arg_types)})"
            )
        elif signature[1] != arg_types or signature[0] != return_type:
            raise _Unprintable(f"call of {name} with another signature")

    def unrolled_loop_id(self) -> int:
        if self.unroll_node is None:
            self.unroll_node = len(self.metadata)
            self.metadata.append(
                f'!{self.unroll_node} = !{{ !"llvm.loop.unroll.full" }}'
            )
        loop_id = len(self.metadata)
        self.metadata.append(f"!{loop_id} = !{{ !{loop_id}, !{self.unroll_node} }}")
        return loop_id

    # -- the module ---------------------------------------------------------------------

    def text(self) -> str:
        module = self.module
        host = host_target()
        attribute = module.attributes.get("llvm.target_triple")
        triple = attribute.data if isinstance(attribute, StringAttr) else host.triple
        data_layout = host_data_layout() if triple == host.triple else ""
        cpu = (self.machine or host) if triple == host.triple else None
        name = module.sym_name.data if module.sym_name is not None else "strato"
        lines = [
            f'; ModuleID = "{name}"',
            f'target triple = "{triple}"',
            f'target datalayout = "{data_layout}"',
            "",
        ]
        globals_, functions = emit.module_symbols(module)
        for op in globals_:
            lines.append(self._global(op))
        for op in functions:
            name = op.sym_name.data
            fn_type = op.function_type
            self.signatures[name] = (
                _type(fn_type.output),
                [_type(t) for t in fn_type.inputs.data],
                bool(fn_type.is_variadic),
            )
            self.globals[name] = _Value(f"@{_quoted(name)}", "ptr", "function")
        for op in functions:
            lines.extend(self._function(op, cpu))
        lines.extend(self.declared_intrinsics)
        lines.extend(self.metadata)
        return "\n".join(lines) + "\n"

    def _global(self, op: llvm.GlobalOp) -> str:
        name = op.sym_name.data
        type_ = emit._llvm_type(op.global_type)
        type_text = str(type_)
        value = op.value
        linkage = op.linkage.linkage.data
        initializer: str | None = None
        if isinstance(value, DenseIntOrFPElementsAttr) and type_text.startswith("["):
            data = emit._dense_bytes(op, value, type_)
            if any(data):
                type_text = f"[{len(data)} x i8]"
                initializer = _bytes_literal(data)
            else:
                initializer = "zeroinitializer"
        elif isinstance(value, StringAttr):
            raw = value.data.encode()
            type_text = f"[{len(raw)} x i8]"
            initializer = _bytes_literal(raw)
        elif isinstance(value, IntegerAttr | FloatAttr):
            initializer = _scalar_text(value.value.data, type_text)
        elif isinstance(value, DenseIntOrFPElementsAttr):
            initializer = _constant(op.global_type, value)
        elif value is None and linkage != "external":
            initializer = _null(type_text)
        elif value is not None:
            raise _Unprintable(f"global @{name}")
        self.globals[name] = _Value(f"@{_quoted(name)}", "ptr", _pointee(type_text))
        parts = [f"@{_quoted(name)} ="]
        if initializer is None:
            parts.append("external")
        elif linkage != "external":
            parts.append(linkage)
        if op.constant is not None:
            parts.append("unnamed_addr")
        addrspace = op.addr_space.value.data
        if addrspace:
            parts.append(f"addrspace({addrspace})")
        parts.append("constant" if op.constant is not None else "global")
        parts.append(type_text)
        if initializer is not None:
            parts.append(initializer)
        text = " ".join(parts)
        if op.alignment is not None:
            text += f", align {op.alignment.value.data}"
        return text

    def _function(self, op: llvm.FuncOp, cpu: HostTarget | None) -> list[str]:
        return_type, arg_types, variadic = self.signatures[op.sym_name.data]
        linkage = op.linkage.linkage.data
        arg_attrs: list[list[str]] = [[] for _ in arg_types]
        defined = bool(op.body.blocks)
        kernel = defined and emit._KERNEL_ATTR in op.attributes
        for i, type_text in enumerate(arg_types):
            if kernel and _is_pointer(type_text):
                arg_attrs[i].append("noalias")
        if op.arg_attrs is not None:
            for i, attrs in enumerate(op.arg_attrs.data):
                for key, value in attrs.data.items():
                    if key in emit._ARG_FLAGS and _is_pointer(arg_types[i]):
                        attr = emit._ARG_FLAGS[key]
                    elif key in emit._ARG_INTS and isinstance(value, IntegerAttr):
                        name, number = emit._ARG_INTS[key], value.value.data
                        attr = (
                            f"{name} {number}"
                            if name == "align"
                            else f"{name}({number})"
                        )
                    else:
                        continue
                    if attr not in arg_attrs[i]:  # llvmlite keeps a set
                        arg_attrs[i].append(attr)
        name = _quoted(op.sym_name.data)
        if not defined:
            params = ", ".join(
                " ".join([type_text, *attrs])
                for type_text, attrs in zip(arg_types, arg_attrs, strict=True)
            )
            if variadic:
                params = f"{params}, ..." if params else "..."
            return [f"declare {return_type} @{name}({params})", ""]
        function = _Function(self, op)
        body = function.body()
        params = ", ".join(
            " ".join([type_text, *attrs, f"%{_quoted(arg)}"])
            for type_text, attrs, arg in zip(
                arg_types, arg_attrs, function.arg_names, strict=True
            )
        )
        if variadic:
            params = f"{params}, ..."
        attributes = ["nounwind"]
        if cpu is not None:
            attributes += [
                f'"target-cpu"="{cpu.cpu}"',
                f'"target-features"="{cpu.features}"',
                f'"prefer-vector-width"="{emit.PREFERRED_VECTOR_BITS}"',
            ]
        if emit._NOINLINE_ATTR in op.attributes:
            attributes.append("noinline")
        head = "define "
        if linkage in emit._LOCAL_LINKAGES:
            head += f"{linkage} "
        return [
            f"{head}{return_type} @{name}({params}) {' '.join(attributes)}",
            "{",
            *body,
            "}",
            "",
        ]


def print_llvm_ir(module: ModuleOp, machine: HostTarget | None = None) -> str:
    """The LLVM IR text of an llvm-dialect module, for `machine` (the host by default):
    the module `emit.emit_llvm_ir` gives (see the module docstring)."""
    try:
        return _ModulePrinter(module, machine).text()
    except _Unprintable:
        return emit.emit_llvm_ir(module, machine)


__all__ = ["print_llvm_ir"]
