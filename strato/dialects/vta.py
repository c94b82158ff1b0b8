"""The `vta` dialect: the VTA accelerator's hardware level.

A VTA program is a function whose arguments are DRAM tensors as arrays of elements
(`memref<Ex1x16xi8>` for NCHW1n16c activations, `memref<Ex16x16xi8>` for OIHW16o16i
weights, `memref<Ex1x16xi32>` for accumulator data) and whose body is `loop.for` nests of
index arithmetic (`arith`) around the ops below. It is a control program, as VTA's JIT
runtime runs one: executing it issues the instruction stream (strato/targets/vta/emit.py).

On-chip buffers are slices of the four SRAMs: `vta.buffer` names `N` elements starting at
element `offset` of the scope's SRAM (its memref type gives the element shape):

    %inp = vta.buffer offset 0 : memref<64x1x16xi8, #loop.scope<vta.inp>>
    %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
    %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>

DMA (2-D, strided, zero padded in SRAM; indices count elements):

    vta.load %x[%d], %inp[%c0] rows 4 cols 6 stride 6 pad [1, 1, 1, 1] : memref<..>, memref<..>
    vta.store %acc[%c0], %out[%d] rows 1 cols 16 stride 16 : memref<..>, memref<..>

Micro-op kernels: at most two loops `[extent, dst_factor, src_factor, wgt_factor]`
(outer first) around micro-ops `[dst, src, wgt]` (GEMM) or `[dst, src]` (ALU), indices
relative to the first element of the buffer operands:

    vta.gemm %acc, %inp, %wgt loops [[4, 1, 1, 0]] uops [[0, 0, 0]] {reset}
    vta.alu shr %acc imm 8 loops [[16, 1, 1]] uops [[0, 0]]
    vta.alu add %acc loops [[16, 1, 1]] uops [[0, 16]]          (tensor-tensor)

Dependence tokens between the load, compute and store modules:

    vta.dep_push "load" -> "compute"
    vta.dep_pop "load" -> "compute"

Which module runs an op: LOAD into vta.inp / vta.wgt on `load`; LOAD into vta.acc, GEMM and
ALU on `compute`; STORE on `store` (`module_of`). Micro-op buffers (vta.uop) hold the
kernels; the emitter places them (the runtime's kernel cache), so programs do not name them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    IndexType,
    IntAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from strato.dialects.loop import MemoryScope, memory_scope

MODULES = ("load", "compute", "store")
ALU_OPCODES = ("min", "max", "add", "shr", "mul")
ON_CHIP = (MemoryScope.VTA_INP, MemoryScope.VTA_WGT, MemoryScope.VTA_ACC)
MAX_PAD = 15


# --- small helpers for the custom syntax ---------------------------------------------


def _ints(values: Sequence[int]) -> DenseArrayBase:
    # packed directly: from_list normalizes value by value (slow for micro-op kernels)
    data = [int(v) for v in values]
    if any(not -(1 << 63) <= v < (1 << 63) for v in data):
        raise VerifyException("vta: an integer does not fit 64 bits")
    return DenseArrayBase(i64, BytesAttr(struct.pack(f"<{len(data)}q", *data)))


def _int_list(attr: DenseArrayBase) -> list[int]:
    return [int(v) for v in attr.get_values()]


def _groups(flat: Sequence[int], size: int) -> list[list[int]]:
    return [list(flat[i : i + size]) for i in range(0, len(flat), size)]


def _print_nested(printer: Printer, groups: Sequence[Sequence[int]]) -> None:
    printer.print_string("[" + ", ".join("[" + ", ".join(str(v) for v in g) + "]" for g in groups) + "]")


def _parse_nested(parser: Parser) -> list[list[int]]:
    def row() -> list[int]:
        return parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
        )

    return parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, row)


def scope_of(value: SSAValue) -> MemoryScope | None:
    """The memory scope of a memref value (None for other values)."""
    return memory_scope(value.type) if isinstance(value.type, MemRefType) else None


def _element_shape(value: SSAValue) -> tuple[tuple[int, ...], Attribute]:
    type_ = value.type
    assert isinstance(type_, MemRefType)
    return tuple(type_.get_shape()[1:]), type_.element_type


def _check_elements(op: Operation, value: SSAValue, what: str) -> None:
    type_ = value.type
    if not isinstance(type_, MemRefType) or len(type_.get_shape()) != 3:
        raise VerifyException(f"'{op.name}' {what} must be a rank-3 memref of elements, got {type_}")
    if not isinstance(type_.element_type, IntegerType) or type_.element_type.width.data not in (8, 32):
        raise VerifyException(f"'{op.name}' {what} must hold i8 or i32 elements, got {type_.element_type}")


# --- buffers ---------------------------------------------------------------------------


@irdl_op_definition
class BufferOp(IRDLOperation):
    """A slice of an on-chip SRAM: the memref's first dimension of elements from `offset`."""

    name = "vta.buffer"

    offset = prop_def(IntAttr)
    result = result_def(MemRefType)

    def __init__(self, offset: int, type_: MemRefType):
        super().__init__(properties={"offset": IntAttr(offset)}, result_types=[type_])

    @property
    def scope(self) -> MemoryScope:
        return memory_scope(self.result.type)

    @property
    def elements(self) -> int:
        return self.result.type.get_shape()[0]

    def verify_(self) -> None:
        _check_elements(self, self.result, "buffer")
        if self.scope not in ON_CHIP:
            raise VerifyException(
                f"'vta.buffer' must be in scope vta.inp, vta.wgt or vta.acc, got {self.scope.value}"
            )
        width = self.result.type.element_type.width.data
        if (self.scope == MemoryScope.VTA_ACC) != (width == 32):
            raise VerifyException(f"'vta.buffer' in {self.scope.value} cannot hold i{width} elements")
        if self.offset.data < 0:
            raise VerifyException(f"'vta.buffer' offset {self.offset.data} is negative")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" offset {self.offset.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        parser.parse_keyword("offset")
        offset = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        type_ = parser.parse_type()
        if not isinstance(type_, MemRefType):
            parser.raise_error("'vta.buffer' type must be a memref", pos, parser.pos)
        op = cls(offset, type_)
        op.attributes |= attrs
        return op


# --- DMA -------------------------------------------------------------------------------


class _DmaOp(IRDLOperation):
    """Shared syntax of load and store: `%a[%i], %b[%j] rows R cols C stride S ...`."""

    rows = prop_def(IntAttr)
    cols = prop_def(IntAttr)
    stride = prop_def(IntAttr)

    def _check_sizes(self) -> None:
        for name in ("rows", "cols", "stride"):
            value = getattr(self, name).data
            if value < 0 or value >= 1 << 16:
                raise VTAVerifyError(self, f"{name} {value} is outside 0..65535")
        if self.cols.data > self.stride.data and self.rows.data > 1:
            raise VTAVerifyError(self, f"cols {self.cols.data} exceed the stride {self.stride.data}")

    def _print_options(self, printer: Printer) -> None:
        """Prints what follows the sizes (nothing unless a subclass says otherwise)."""

    @classmethod
    def _parse_options(cls, parser: Parser) -> tuple:
        """Parses what follows the sizes into the constructor's trailing arguments."""
        return ()

    def print(self, printer: Printer) -> None:
        source, source_index, dest, dest_index = self.operands
        printer.print_string(" ")
        _print_indexed(printer, source, source_index)
        printer.print_string(", ")
        _print_indexed(printer, dest, dest_index)
        printer.print_string(f" rows {self.rows.data} cols {self.cols.data} stride {self.stride.data}")
        self._print_options(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(source.type)
        printer.print_string(", ")
        printer.print_attribute(dest.type)

    @classmethod
    def parse(cls, parser: Parser) -> _DmaOp:
        src, src_index = _parse_indexed(parser)
        parser.parse_punctuation(",")
        dst, dst_index = _parse_indexed(parser)
        rows, cols, stride = _parse_sizes(parser)
        options = cls._parse_options(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation(",")
        dst_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(src, src_type),
            parser.resolve_operand(src_index, IndexType()),
            parser.resolve_operand(dst, dst_type),
            parser.resolve_operand(dst_index, IndexType()),
            rows,
            cols,
            stride,
            *options,
        )
        op.attributes |= attrs
        return op


def VTAVerifyError(op: Operation, message: str) -> VerifyException:  # noqa: N802 - reads as an exception
    return VerifyException(f"'{op.name}' {message}")


@irdl_op_definition
class LoadOp(_DmaOp):
    """LOAD `rows` x `cols` elements from DRAM (row r at dram_index + r * stride) into SRAM
    from sram_index on, with `pad = [top, bottom, left, right]` zero elements around."""

    name = "vta.load"

    source = operand_def(MemRefType)
    dram_index = operand_def(IndexType)
    dest = operand_def(MemRefType)
    sram_index = operand_def(IndexType)
    pad = prop_def(DenseArrayBase)

    def __init__(
        self,
        source: SSAValue,
        dram_index: SSAValue,
        dest: SSAValue,
        sram_index: SSAValue,
        rows: int,
        cols: int,
        stride: int,
        pad: Sequence[int] = (0, 0, 0, 0),
    ):
        super().__init__(
            operands=[source, dram_index, dest, sram_index],
            properties={
                "rows": IntAttr(rows),
                "cols": IntAttr(cols),
                "stride": IntAttr(stride),
                "pad": _ints(pad),
            },
        )

    @property
    def pads(self) -> list[int]:
        return _int_list(self.pad)

    def verify_(self) -> None:
        _check_elements(self, self.source, "source")
        _check_elements(self, self.dest, "destination")
        if scope_of(self.source) != MemoryScope.GLOBAL:
            raise VTAVerifyError(self, "source must be a DRAM (global) memref")
        if scope_of(self.dest) not in ON_CHIP:
            raise VTAVerifyError(self, "destination must be a vta.inp, vta.wgt or vta.acc buffer")
        if _element_shape(self.source) != _element_shape(self.dest):
            raise VTAVerifyError(self, "source and destination elements differ")
        self._check_sizes()
        pads = self.pads
        if len(pads) != 4:
            raise VTAVerifyError(self, f"pad must have 4 entries [top, bottom, left, right], got {len(pads)}")
        if any(p < 0 or p > MAX_PAD for p in pads):
            raise VTAVerifyError(self, f"pads {pads} must lie in 0..{MAX_PAD}")
        if scope_of(self.dest) == MemoryScope.VTA_WGT and any(pads):
            raise VTAVerifyError(self, "weight loads cannot pad")

    def _print_options(self, printer: Printer) -> None:
        if any(self.pads):
            printer.print_string(" pad [" + ", ".join(str(p) for p in self.pads) + "]")

    @classmethod
    def _parse_options(cls, parser: Parser) -> tuple:
        pad = [0, 0, 0, 0]
        if parser.parse_optional_keyword("pad") is not None:
            pad = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
        return (pad,)


@irdl_op_definition
class StoreOp(_DmaOp):
    """STORE `rows` x `cols` accumulator elements (from sram_index, row-major) to DRAM row
    r at dram_index + r * stride, each int32 lane truncated to its low 8 bits."""

    name = "vta.store"

    source = operand_def(MemRefType)
    sram_index = operand_def(IndexType)
    dest = operand_def(MemRefType)
    dram_index = operand_def(IndexType)

    def __init__(
        self,
        source: SSAValue,
        sram_index: SSAValue,
        dest: SSAValue,
        dram_index: SSAValue,
        rows: int,
        cols: int,
        stride: int,
    ):
        super().__init__(
            operands=[source, sram_index, dest, dram_index],
            properties={"rows": IntAttr(rows), "cols": IntAttr(cols), "stride": IntAttr(stride)},
        )

    def verify_(self) -> None:
        _check_elements(self, self.source, "source")
        _check_elements(self, self.dest, "destination")
        if scope_of(self.source) != MemoryScope.VTA_ACC:
            raise VTAVerifyError(self, "source must be a vta.acc buffer")
        if scope_of(self.dest) != MemoryScope.GLOBAL:
            raise VTAVerifyError(self, "destination must be a DRAM (global) memref")
        if self.dest.type.element_type.width.data != 8:
            raise VTAVerifyError(self, "destination must hold i8 elements")
        if _element_shape(self.source)[0] != _element_shape(self.dest)[0]:
            raise VTAVerifyError(self, "source and destination elements differ")
        self._check_sizes()


def _print_indexed(printer: Printer, buffer: SSAValue, index: SSAValue) -> None:
    printer.print_operand(buffer)
    printer.print_string("[")
    printer.print_operand(index)
    printer.print_string("]")


def _parse_indexed(parser: Parser):
    buffer = parser.parse_unresolved_operand()
    parser.parse_punctuation("[")
    index = parser.parse_unresolved_operand()
    parser.parse_punctuation("]")
    return buffer, index


def _parse_sizes(parser: Parser) -> tuple[int, int, int]:
    values = []
    for word in ("rows", "cols", "stride"):
        parser.parse_keyword(word)
        values.append(parser.parse_integer(allow_boolean=False))
    return values[0], values[1], values[2]


# --- micro-op kernels ------------------------------------------------------------------


class _KernelOp(IRDLOperation):
    """Two loops at most, of `loop_width` factors each, around micro-ops of `uop_width`."""

    loops = prop_def(DenseArrayBase)
    uops = prop_def(DenseArrayBase)
    LOOP_WIDTH: ClassVar[int] = 4
    UOP_WIDTH: ClassVar[int] = 3

    @property
    def loop_list(self) -> list[list[int]]:
        return _groups(_int_list(self.loops), self.LOOP_WIDTH)

    @property
    def uop_list(self) -> list[list[int]]:
        return _groups(_int_list(self.uops), self.UOP_WIDTH)

    @property
    def accumulates(self) -> bool:
        return True

    def _check_kernel(self) -> None:
        flat_loops, flat_uops = _int_list(self.loops), _int_list(self.uops)
        if len(flat_loops) % self.LOOP_WIDTH or len(flat_uops) % self.UOP_WIDTH:
            raise VTAVerifyError(
                self, f"loops take {self.LOOP_WIDTH} numbers each and micro-ops {self.UOP_WIDTH}"
            )
        loops, uops = self.loop_list, self.uop_list
        if len(loops) > 2:
            raise VTAVerifyError(self, f"has {len(loops)} loops, at most 2")
        if any(loop[0] < 1 for loop in loops):
            raise VTAVerifyError(self, "loop extents must be positive")
        if not uops:
            raise VTAVerifyError(self, "has no micro-ops")
        if any(v < 0 for u in uops for v in u):
            raise VTAVerifyError(self, "micro-op indices must be non-negative")
        if self.accumulates:
            for i in range(1, len(uops)):
                if uops[i][0] == uops[i - 1][0]:
                    raise VTAVerifyError(
                        self, f"micro-ops {i - 1} and {i} write ACC element {uops[i][0]} back to back"
                    )
            self._check_loop_boundaries(loops, uops)

    def _check_loop_boundaries(self, loops: list[list[int]], uops: list[list[int]]) -> None:
        """The last micro-op of an iteration and the first of the next must not write the
        same ACC element either (the pipeline has no forwarding across iterations)."""
        full = [*loops]
        while len(full) < 2:
            full.insert(0, [1] + [0] * (self.LOOP_WIDTH - 1))
        (n_out, f_out), (n_in, f_in) = (loop[:2] for loop in full)
        first, last = uops[0][0], uops[-1][0]
        if n_in > 1 and last == first + f_in:
            raise VTAVerifyError(self, f"consecutive inner iterations write ACC element {last} back to back")
        if n_out > 1 and last + (n_in - 1) * f_in == first + f_out:
            raise VTAVerifyError(self, f"consecutive outer iterations write ACC element {last + (n_in - 1) * f_in} back to back")

    def _print_kernel(self, printer: Printer) -> None:
        printer.print_string(" loops ")
        _print_nested(printer, self.loop_list)
        printer.print_string(" uops ")
        _print_nested(printer, self.uop_list)

    @staticmethod
    def _parse_kernel(parser: Parser) -> tuple[list[list[int]], list[list[int]]]:
        """Parses what `_print_kernel` prints: `loops [...] uops [...]`."""
        parser.parse_keyword("loops")
        loops = _parse_nested(parser)
        parser.parse_keyword("uops")
        uops = _parse_nested(parser)
        return loops, uops


@irdl_op_definition
class GemmOp(_KernelOp):
    """A GEMM micro-op kernel: for each loop iteration and micro-op (dst, src, wgt),
    acc[dst] += inp[src] . wgt[dst]^T (or acc[dst] = 0 with `reset`)."""

    name = "vta.gemm"

    acc = operand_def(MemRefType)
    inp = operand_def(MemRefType)
    wgt = operand_def(MemRefType)
    reset = opt_prop_def(UnitAttr)

    def __init__(
        self,
        acc: SSAValue,
        inp: SSAValue,
        wgt: SSAValue,
        loops: Sequence[Sequence[int]],
        uops: Sequence[Sequence[int]],
        reset: bool = False,
    ):
        properties: dict[str, Attribute] = {
            "loops": _ints([v for loop in loops for v in loop]),
            "uops": _ints([v for u in uops for v in u]),
        }
        if reset:
            properties["reset"] = UnitAttr()
        super().__init__(operands=[acc, inp, wgt], properties=properties)

    @property
    def accumulates(self) -> bool:
        return self.reset is None

    def verify_(self) -> None:
        for value, scope, what in (
            (self.acc, MemoryScope.VTA_ACC, "acc"),
            (self.inp, MemoryScope.VTA_INP, "inp"),
            (self.wgt, MemoryScope.VTA_WGT, "wgt"),
        ):
            if scope_of(value) != scope:
                raise VTAVerifyError(self, f"{what} operand must be a {scope.value} buffer")
        (batch, block_out), (batch_in, block_in), (wgt_out, wgt_in) = (
            _element_shape(v)[0] for v in (self.acc, self.inp, self.wgt)
        )
        if batch != batch_in or block_out != wgt_out or block_in != wgt_in:
            raise VTAVerifyError(
                self,
                f"elements do not multiply: acc {batch}x{block_out}, inp {batch_in}x{block_in}, "
                f"wgt {wgt_out}x{wgt_in}",
            )
        self._check_kernel()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.acc, self.inp, self.wgt], printer.print_operand)
        self._print_kernel(printer)
        attrs = dict(self.attributes)
        if self.reset is not None:
            attrs["reset"] = UnitAttr()
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_list([self.acc.type, self.inp.type, self.wgt.type], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> GemmOp:
        names = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)
        loops, uops = cls._parse_kernel(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if len(names) != 3 or len(types) != 3:
            parser.raise_error("'vta.gemm' takes acc, inp and wgt buffers")
        operands = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
        reset = "reset" in attrs
        attrs.pop("reset", None)
        op = cls(*operands, loops, uops, reset=reset)
        op.attributes |= attrs
        return op


@irdl_op_definition
class AluOp(_KernelOp):
    """An ALU micro-op kernel on the accumulator: acc[dst] = op(acc[dst], imm or acc[src])
    lane-wise; opcodes min, max, add, shr (negative immediates shift left), mul."""

    name = "vta.alu"
    LOOP_WIDTH: ClassVar[int] = 3
    UOP_WIDTH: ClassVar[int] = 2

    acc = operand_def(MemRefType)
    opcode = prop_def(StringAttr)
    imm = opt_prop_def(IntAttr)

    def __init__(
        self,
        opcode: str,
        acc: SSAValue,
        loops: Sequence[Sequence[int]],
        uops: Sequence[Sequence[int]],
        imm: int | None = None,
    ):
        properties: dict[str, Attribute] = {
            "opcode": StringAttr(opcode),
            "loops": _ints([v for loop in loops for v in loop]),
            "uops": _ints([v for u in uops for v in u]),
        }
        if imm is not None:
            properties["imm"] = IntAttr(imm)
        super().__init__(operands=[acc], properties=properties)

    def verify_(self) -> None:
        if self.opcode.data not in ALU_OPCODES:
            raise VTAVerifyError(self, f"unknown opcode '{self.opcode.data}', expected one of {', '.join(ALU_OPCODES)}")
        if scope_of(self.acc) != MemoryScope.VTA_ACC:
            raise VTAVerifyError(self, "operand must be a vta.acc buffer")
        if self.imm is not None and not -(1 << 15) <= self.imm.data < 1 << 15:
            raise VTAVerifyError(self, f"immediate {self.imm.data} does not fit 16 bits")
        self._check_kernel()

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.opcode.data} ")
        printer.print_operand(self.acc)
        if self.imm is not None:
            printer.print_string(f" imm {self.imm.data}")
        self._print_kernel(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.acc.type)

    @classmethod
    def parse(cls, parser: Parser) -> AluOp:
        opcode = parser.parse_identifier()
        acc = parser.parse_unresolved_operand()
        imm = None
        if parser.parse_optional_keyword("imm") is not None:
            imm = parser.parse_integer(allow_boolean=False)
        loops, uops = cls._parse_kernel(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        op = cls(opcode, parser.resolve_operand(acc, type_), loops, uops, imm)
        op.attributes |= attrs
        return op


# --- dependence tokens -----------------------------------------------------------------


class _TokenOp(IRDLOperation):
    source = prop_def(StringAttr)
    target = prop_def(StringAttr)

    def __init__(self, source: str, target: str):
        super().__init__(properties={"source": StringAttr(source), "target": StringAttr(target)})

    @property
    def queue(self) -> tuple[str, str]:
        return self.source.data, self.target.data

    def verify_(self) -> None:
        a, b = self.queue
        if a not in MODULES or b not in MODULES:
            raise VTAVerifyError(self, f"modules must be load, compute or store, got '{a}' -> '{b}'")
        if abs(MODULES.index(a) - MODULES.index(b)) != 1:
            raise VTAVerifyError(self, f"there is no token queue from {a} to {b}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.source.data)
        printer.print_string(" -> ")
        printer.print_string_literal(self.target.data)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        source = parser.parse_str_literal()
        parser.parse_punctuation("->")
        target = parser.parse_str_literal()
        op = cls(source, target)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


@irdl_op_definition
class DepPushOp(_TokenOp):
    """After the preceding instruction of `source` runs, put a token in its queue to `target`."""

    name = "vta.dep_push"


@irdl_op_definition
class DepPopOp(_TokenOp):
    """The next instruction of `target` waits for (and takes) a token from `source`."""

    name = "vta.dep_pop"


def module_of(op: Operation) -> str | None:
    """The module an op runs on (None for ops that issue no instruction)."""
    if isinstance(op, LoadOp):
        return "compute" if scope_of(op.dest) == MemoryScope.VTA_ACC else "load"
    if isinstance(op, GemmOp | AluOp):
        return "compute"
    if isinstance(op, StoreOp):
        return "store"
    return None


def buffers_of(op: Operation) -> tuple[list[SSAValue], list[SSAValue]]:
    """The on-chip buffers an op reads and writes."""
    if isinstance(op, LoadOp):
        return [], [op.dest]
    if isinstance(op, StoreOp):
        return [op.source], []
    if isinstance(op, GemmOp):
        return [op.inp, op.wgt] + ([] if op.reset is not None else [op.acc]), [op.acc]
    if isinstance(op, AluOp):
        return [op.acc], [op.acc]
    return [], []


Vta = Dialect("vta", [BufferOp, LoadOp, StoreOp, GemmOp, AluOp, DepPushOp, DepPopOp], [])

__all__ = [
    "ALU_OPCODES",
    "MODULES",
    "AluOp",
    "BufferOp",
    "DepPopOp",
    "DepPushOp",
    "GemmOp",
    "LoadOp",
    "StoreOp",
    "Vta",
    "buffers_of",
    "module_of",
    "scope_of",
]
