"""The `loop` dialect: how a primitive computes, as loop nests over buffers.

Buffers are upstream `memref`s; their memory space is a `#loop.scope<...>` (no memory
space means global memory). Loads and stores are upstream `memref.load`/`memref.store`,
index arithmetic is upstream `arith`. This dialect adds the loop itself: `loop.for` runs
its body for an induction variable from `lb` to `ub` (exclusive) by `step`, and carries
a kind that schedules set and code generation honours. `lb` and `step` are static; `ub`
is static or an `index` value known at run time (a size the kernel is given):

    loop.for %i = 0 to %n step 4 parallel axis "i" { .. }

    func.func @relu(%a: memref<8xf32>, %out: memref<8xf32>) {
      loop.for %i = 0 to 8 vectorized {
        %v = memref.load %a[%i] : memref<8xf32>
        %z = arith.constant 0.0 : f32
        %m = arith.maximumf %v, %z : f32
        memref.store %m, %out[%i] : memref<8xf32>
      }
      func.return
    }
"""

from __future__ import annotations

from enum import StrEnum

from xdsl.dialects.builtin import IndexType, IntAttr, MemRefType, NoneAttr, StringAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    NoMemoryEffect,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException

from strato.diagnostics import StratoError


class DynamicBoundError(StratoError):
    """A `loop.for` with a run-time upper bound where its iterations must be known at
    compile time (unrolling it whole, tensorizing it, scheduling it, the VTA target)."""


KERNEL_ATTR = "loop.kernel"
"""Unit attribute on the `func.func` of a lowered primitive (a kernel)."""
OUTPUT_ATTR = "loop.output"
"""Unit argument attribute on the output buffers of a kernel or a lowered function."""
SHAPE_ATTR = "loop.shape"
"""On a flat buffer argument of run-time size (`memref<?xf32>`) of a function over
buffers: the shape of the tensor it holds, -1 at its run-time dimensions (which the
argument's `te.sizes` names), `array<i64: -1, -1, 8>`."""

SIZE_ATTR = "loop.size"
"""String argument attribute on an `index` argument of a lowered function that is a
run-time size: its name (the `te.sizes` name of the dimensions it gives)."""
STAGE_ATTR = "stage"
"""String attribute on every `loop.for` of a stage, naming the stage that owns it."""
REDUCTION_ATTR = "reduction"
"""Unit attribute on a `loop.for` that iterates over a reduction axis of its stage."""
INIT_ATTR = "init"
"""Unit attribute on the loops of a reduction's init nest (the nest that stores the
initial value); the loops of its update nest do not carry it."""
LANES_ATTR = "vector_lanes"
"""Integer attribute (a schedule's annotation) on a `vectorized` loop too long to be one
vector: code generation runs it as vectors of this many lanes, and the iterations left
over as one shorter vector."""


class LoopKind(StrEnum):
    """How a loop's iterations run. Every kind computes the same values as `serial`;
    the others are promises a schedule makes and code generation uses."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    VIRTUAL_THREAD = "virtual_thread"


@irdl_attr_definition
class LoopKindAttr(EnumAttribute[LoopKind], SpacedOpaqueSyntaxAttribute):
    name = "loop.kind"


class MemoryScope(StrEnum):
    """Where a buffer lives: main memory, a kernel-private scratch buffer, or one of the
    VTA accelerator's on-chip buffers (input, weight, accumulator, micro-op)."""

    GLOBAL = "global"
    LOCAL = "local"
    VTA_INP = "vta.inp"
    VTA_WGT = "vta.wgt"
    VTA_ACC = "vta.acc"
    VTA_UOP = "vta.uop"


@irdl_attr_definition
class ScopeAttr(EnumAttribute[MemoryScope]):
    """A buffer's memory scope, used as the memory space of a memref type:
    `memref<16x16xf32, #loop.scope<local>>`."""

    name = "loop.scope"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemoryScope:
        parser.parse_punctuation("<")
        pos = parser.pos
        text = parser.parse_identifier_or_str_literal("memory scope")
        try:
            scope = MemoryScope(text)
        except ValueError:
            parser.raise_error(
                f"unknown memory scope '{text}', expected one of "
                + ", ".join(s.value for s in MemoryScope),
                pos,
                parser.pos,
            )
        parser.parse_punctuation(">")
        return scope


def memory_scope(type_: Attribute) -> MemoryScope:
    """The memory scope of a memref type (global when it has no memory space)."""
    assert isinstance(type_, MemRefType)
    space = type_.memory_space
    return space.data if isinstance(space, ScopeAttr) else MemoryScope.GLOBAL


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `loop.for` body; implicit in the custom syntax."""

    name = "loop.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(ForOp)))
    assembly_format = "attr-dict"


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop: the body runs for iv = lb, lb + step, .. < ub. `lb` and `step` are static;
    `ub` is static, or an `index` value (`dynamic_ub`) when the extent is known only at
    run time (a kernel compiled once for every size).

    `kind` says how iterations may run (serial when omitted). `axis` names the loop for
    schedules and diagnostics.

        loop.for %i = 0 to 1024 step 4 parallel axis "i" {
          ...
        }
        loop.for %j = 0 to %n axis "j" { ... }

    Loops of a kernel belong to stages: each carries `stage = "<name>"` (STAGE_ATTR), and
    an axis name unique within its stage's nest. A `te.reduce` stage has two nests: the
    init nest (loops marked `init`, storing the initial value) and the update nest, whose
    loops over reduction axes are marked `reduction`:

        loop.for %i = 0 to 4 axis "i" attributes {stage = "sum", init} { .. store init .. }
        loop.for %i = 0 to 4 axis "i" attributes {stage = "sum"} {
          loop.for %k = 0 to 8 axis "k" attributes {stage = "sum", reduction} { .. }
        }

    What needs the number of iterations at compile time (unrolling, one vector for a
    vectorized loop, tensorization, the schedules) leaves a loop with a run-time bound
    alone or refuses it; code generation runs it as a serial loop, or for a `parallel`
    one as chunks of the thread pool over its run-time trip count.
    """

    name = "loop.for"

    dynamic_ub = opt_operand_def(IndexType)
    lb = prop_def(IntAttr)
    ub = opt_prop_def(IntAttr)
    step = prop_def(IntAttr)
    kind = prop_def(LoopKindAttr)
    axis = opt_prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: int,
        ub: int | SSAValue,
        body: Region | Block,
        step: int = 1,
        kind: LoopKind = LoopKind.SERIAL,
        axis: str | None = None,
    ):
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            operands=[[ub] if isinstance(ub, SSAValue) else []],
            properties=ForOp._properties(lb, ub, step, kind, axis),
            regions=[body],
        )

    @staticmethod
    def _properties(
        lb: int, ub: int | SSAValue, step: int, kind: LoopKind, axis: str | None
    ) -> dict[str, Attribute]:
        properties: dict[str, Attribute] = {"lb": IntAttr(lb)}
        if not isinstance(ub, SSAValue):
            properties["ub"] = IntAttr(ub)
        properties["step"] = IntAttr(step)
        properties["kind"] = LoopKindAttr(kind)
        if axis is not None:
            properties["axis"] = StringAttr(axis)
        return properties

    @staticmethod
    def build(
        lb: int,
        ub: int | SSAValue,
        step: int = 1,
        kind: LoopKind = LoopKind.SERIAL,
        axis: str | None = None,
    ) -> tuple[ForOp, Block]:
        """A loop with an empty body (ending in loop.yield), and the body block.

        Built with `create` (the op `__init__` builds, properties in its order, without
        the generic constructor's argument parsing): schedules build thousands of loops
        each time they rebuild a kernel."""
        block = Block(arg_types=[IndexType()])
        block.add_op(YieldOp.create())
        properties = ForOp._properties(lb, ub, step, kind, axis)
        operands = (ub,) if isinstance(ub, SSAValue) else ()
        return ForOp.create(operands=operands, properties=properties, regions=(Region(block),)), block

    @property
    def induction_var(self):
        return self.body.block.args[0]

    @property
    def is_dynamic(self) -> bool:
        """Whether the upper bound is a run-time value (`dynamic_ub`)."""
        return self.ub is None

    @property
    def bound(self) -> int | SSAValue:
        """The upper bound: the static one, or the run-time value."""
        if self.ub is not None:
            return self.ub.data
        assert self.dynamic_ub is not None
        return self.dynamic_ub

    @property
    def static_ub(self) -> int:
        """The static upper bound; a `DynamicBoundError` for a run-time one (what needs
        the iterations at compile time refuses such a loop with it)."""
        if self.ub is None:
            axis = f"loop '{self.axis.data}'" if self.axis is not None else "a loop"
            raise DynamicBoundError(
                f"{axis} has a run-time upper bound: its number of iterations is not known "
                "at compile time",
                op=self,
            )
        return self.ub.data

    @property
    def trip_count(self) -> int:
        """The number of iterations of a loop with a static upper bound (see
        `static_ub`)."""
        lb, ub, step = self.lb.data, self.static_ub, self.step.data
        return max(0, (ub - lb + step - 1) // step)

    @property
    def loop_kind(self) -> LoopKind:
        return self.kind.data

    def verify_(self) -> None:
        if self.step.data <= 0:
            raise VerifyException(f"'loop.for' step must be positive, got {self.step.data}")
        if (self.ub is None) == (self.dynamic_ub is None):
            raise VerifyException(
                "'loop.for' takes its upper bound either as a static `ub` or as an index "
                "operand, exactly one of them"
            )
        if self.ub is not None and self.ub.data < self.lb.data:
            raise VerifyException(
                f"'loop.for' upper bound {self.ub.data} is below lower bound {self.lb.data}"
            )
        if self.lb.data < 0 and self.ub is None:
            raise VerifyException(
                f"'loop.for' with a run-time upper bound starts at 0 or above, got {self.lb.data}"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException("'loop.for' body must take one index argument")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.induction_var)
        printer.print_string(f" = {self.lb.data} to ")
        if self.dynamic_ub is not None:
            printer.print_operand(self.dynamic_ub)
        else:
            assert self.ub is not None
            printer.print_string(str(self.ub.data))
        if self.step.data != 1:
            printer.print_string(f" step {self.step.data}")
        if self.loop_kind != LoopKind.SERIAL:
            printer.print_string(f" {self.loop_kind.value}")
        if self.axis is not None:
            printer.print_string(" axis ")
            printer.print_string_literal(self.axis.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(
            self.body, print_entry_block_args=False, print_block_terminators=False
        )

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("to")
        bound = parser.parse_optional_unresolved_operand()
        if bound is not None:
            ub: int | SSAValue = parser.resolve_operand(bound, IndexType())
        else:
            ub = parser.parse_integer(allow_boolean=False)
        step = 1
        if parser.parse_optional_keyword("step") is not None:
            step = parser.parse_integer(allow_boolean=False)
        # Not parse_optional_str_enum: it rejects any other word, and `axis` or
        # `attributes` may follow directly when the kind is serial (and not printed).
        kinds = [k.value for k in LoopKind]
        kind_word = parser.parse_optional_keyword_in(kinds)
        kind = LoopKind.SERIAL if kind_word is None else LoopKind(kind_word)
        axis = None
        if parser.parse_optional_keyword("axis") is not None:
            axis = parser.parse_str_literal("axis name")
        attrs = parser.parse_optional_attr_dict_with_keyword()
        pos = parser.pos
        if (word := parser.parse_optional_identifier()) is not None:
            parser.raise_error(
                f"unknown loop kind '{word}', expected one of {', '.join(kinds)}",
                pos,
                parser.pos,
            )
        body = parser.parse_region([iv.resolve(IndexType())])
        op = cls(lb, ub, body, step, kind, axis)
        if attrs is not None:
            op.attributes |= attrs.data
        for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
            ensure_terminator(op, trait)
        return op


def loop_stage(loop: ForOp) -> str | None:
    """The name of the stage that owns `loop` (None for a loop outside any stage)."""
    attr = loop.attributes.get(STAGE_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def is_reduction_loop(loop: ForOp) -> bool:
    """Whether `loop` iterates over a reduction axis of its stage."""
    return REDUCTION_ATTR in loop.attributes


def is_init_loop(loop: ForOp) -> bool:
    """Whether `loop` belongs to the init nest of a reduction stage."""
    return INIT_ATTR in loop.attributes


def enclosing_loops(op: Operation) -> list[ForOp]:
    """The `loop.for` ops around `op`, outermost first."""
    loops: list[ForOp] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops[::-1]


@irdl_op_definition
class ViewOp(IRDLOperation):
    """A buffer of the result's static shape over the source's elements from element
    `offset` on, in row-major order: a block of consecutive rows of a buffer of
    run-time size, which a kernel compiled for that many rows reads or writes in place.

        %rows = loop.view %x[%offset] : memref<?x256xf32> to memref<1x32x256xf32>

    Both buffers have the identity layout, the same element type and memory scope; the
    view's elements must lie in the source (the caller's to ensure)."""

    name = "loop.view"

    source = operand_def(MemRefType)
    offset = operand_def(IndexType)
    result = result_def(MemRefType)

    traits = traits_def(NoMemoryEffect())

    assembly_format = "$source `[` $offset `]` attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue, offset: SSAValue, result_type: MemRefType):
        super().__init__(operands=[source, offset], result_types=[result_type])

    def verify_(self) -> None:
        source, result = self.source.type, self.result.type
        assert isinstance(source, MemRefType) and isinstance(result, MemRefType)
        if any(dim < 0 for dim in result.get_shape()):
            raise VerifyException(f"loop.view: the view's type {result} must be static")
        if source.element_type != result.element_type:
            raise VerifyException(
                f"loop.view: a view of {source.element_type} elements as {result.element_type}"
            )
        if memory_scope(source) != memory_scope(result):
            raise VerifyException(
                f"loop.view: the view of a buffer in scope '{memory_scope(source).value}' "
                f"must be in it too, not '{memory_scope(result).value}'"
            )
        for type_ in (source, result):
            if not isinstance(type_.layout, NoneAttr):
                raise VerifyException(f"loop.view: {type_} must have the identity layout")


Loop = Dialect("loop", [ForOp, YieldOp, ViewOp], [LoopKindAttr, ScopeAttr])
