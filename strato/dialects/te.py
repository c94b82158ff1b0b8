"""The `te` dialect: tensor expressions, what each fused primitive computes.

A `te.primitive` is one future kernel. Its inputs are its `te.placeholder` ops in order,
its stages are `te.compute` and `te.reduce` ops, and `te.output` names the tensors it
returns. A stage's region maps index arguments (one per result dimension, then one per
reduction axis) to one scalar, reading tensors with `te.read` and computing with upstream
`arith`/`math` ops. Functions call primitives with `te.call`.

A primitive may be compiled once for sizes known only at run time: `te.size` names
one (an `index` value of the primitive), and a placeholder or stage whose tensor type
has `?` dimensions takes their sizes, in order, with `sizes(..)`:

    te.primitive @rows_relu {
      %n = te.size "n" : index
      %x = te.placeholder "x" sizes(%n) : tensor<?x8xf32>
      %r = te.compute "relu" (%i, %j) sizes(%n) : tensor<?x8xf32> { .. }
      te.output %r : tensor<?x8xf32>
    }

Inside a stage body an element has its scalar type (`tensor_types.scalar_type`): integers
are signless (a `tensor<4xui8>` reads as `i8`; ops pick their unsigned variant from the
tensor type), bf16 is computed in f32, and the 8- and 4-bit float formats are their bit
pattern in an i8.

    te.primitive @dense_relu {
      %x = te.placeholder "x" : tensor<1x4xf32>
      %w = te.placeholder "w" : tensor<2x4xf32>
      %d = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.0 : tensor<1x2xf32> {
        %a = te.read %x[%i, %k] : tensor<1x4xf32>
        %b = te.read %w[%j, %k] : tensor<2x4xf32>
        %p = arith.mulf %a, %b : f32
        te.yield %p : f32
      }
      %r = te.compute "relu" (%i, %j) : tensor<1x2xf32> {
        %v = te.read %d[%i, %j] : tensor<1x2xf32>
        %z = arith.constant 0.0 : f32
        %m = arith.maximumf %v, %z : f32
        te.yield %m : f32
      }
      te.output %r : tensor<1x2xf32>
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    FlatSymbolRefAttrConstr,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    DictionaryAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    Region,
    SSAValue,
    SpacedOpaqueSyntaxAttribute,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoMemoryEffect,
    Pure,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from strato.diagnostics import StratoError
from strato.dialects.tensor_types import scalar_type

Tensor = base(TensorType)


NO_SIGNED_ZEROS = arith.FastMathFlagsAttr(["nsz"])
"""The flags of the float max and min the strategies write and a max or min reduction
combines with: NaN propagates (numpy's `maximum` and `minimum`), but -0.0 and +0.0 are
not ordered (neither numpy nor onnxruntime orders them), which spares the code that
arith's strict `maximumf` needs on x86 (4-6 instructions a vector instead of 2-3)."""


class ReduceKind(StrEnum):
    """How a `te.reduce` combines the values of its body: sum, max, min or product."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "te.reduce_kind"


# a function over tensors names the run-time sizes of each argument and result (one
# name per `?` dimension, in order; one name is one size): the ArrayAttr of strings
# under this key of its argument and result attributes
SIZES_ATTR = "te.sizes"

# a primitive of run-time sizes that computes each row of its leading run-time
# dimensions from that row alone (and from tensors of static shapes) names here the
# primitives that compute a block of rows, specialized to static sizes:
#
#     te.primitive @dense_0 attributes {te.row_blocks = {
#         rows = ["batch", "sequence"], blocks = [[32, @dense_0_rows32], [1, @dense_0_rows1]]}}
#
# `rows` are the sizes of its leading dimensions (of every operand and result of
# run-time sizes), `blocks` the primitives for blocks of that many consecutive rows
# (the rows of all leading dimensions counted as one), largest first, the last for one
# row; its caller may run it as those instead: as many of the largest blocks as fit,
# then of the next, and so on.
ROW_BLOCKS_ATTR = "te.row_blocks"


@dataclass(frozen=True)
class RowBlocks:
    """A primitive's blocks of rows (`ROW_BLOCKS_ATTR`): their counts decrease to 1,
    or to `multiple` when the rows are always a multiple of it (the bounds of their
    sizes say so), each count then a multiple of it, so that no rows are left after
    the blocks."""

    rows: tuple[str, ...]
    blocks: tuple[tuple[int, str], ...]
    multiple: int = 1

    def attr(self) -> DictionaryAttr:
        fields: dict[str, Attribute] = {
            "rows": ArrayAttr([StringAttr(name) for name in self.rows]),
            "blocks": ArrayAttr([
                ArrayAttr([IntegerAttr(count, i64), SymbolRefAttr(name)])
                for count, name in self.blocks
            ]),
        }
        if self.multiple > 1:
            fields["multiple"] = IntegerAttr(self.multiple, i64)
        return DictionaryAttr(fields)

    @staticmethod
    def of(primitive: Operation) -> RowBlocks | None:
        """The primitive's blocks of rows, when it names them; a malformed attribute
        is an error naming the primitive."""
        attr = primitive.attributes.get(ROW_BLOCKS_ATTR)
        if attr is None:
            return None
        found = RowBlocks._parse(attr)
        if found is None:
            raise StratoError(
                f"'{ROW_BLOCKS_ATTR}' of {primitive.name} must be {{rows = [size names], "
                "blocks = [[count, @primitive], ...]}} with counts decreasing to 1, or "
                "with multiple = m, to m, each a multiple of it, got "
                f"{attr}",
                op=primitive,
            )
        return found

    @staticmethod
    def _parse(attr: Attribute) -> RowBlocks | None:
        if not isinstance(attr, DictionaryAttr) or set(attr.data) - {"multiple"} != {"rows", "blocks"}:
            return None
        rows, blocks = attr.data["rows"], attr.data["blocks"]
        multiple = attr.data.get("multiple", IntegerAttr(1, i64))
        if not isinstance(multiple, IntegerAttr) or multiple.value.data < 1:
            return None
        if not isinstance(rows, ArrayAttr) or not isinstance(blocks, ArrayAttr):
            return None
        names = tuple(r.data for r in rows.data if isinstance(r, StringAttr))
        pairs: list[tuple[int, str]] = []
        for block in blocks.data:
            if not isinstance(block, ArrayAttr) or len(block.data) != 2:
                return None
            count, symbol = block.data
            if not isinstance(count, IntegerAttr) or not isinstance(symbol, SymbolRefAttr):
                return None
            pairs.append((count.value.data, symbol.root_reference.data))
        counts = tuple(count for count, _ in pairs)
        if not names or len(names) != len(rows.data):
            return None
        if not RowBlocks.valid_counts(counts, multiple.value.data):
            return None
        return RowBlocks(names, tuple(pairs), multiple.value.data)

    @staticmethod
    def valid_counts(counts: Sequence[int], multiple: int = 1) -> bool:
        """Whether `counts` are blocks' row counts: decreasing, ending in one row, or in
        `multiple` rows with every count a multiple of it."""
        decreasing = list(counts) == sorted(set(counts), reverse=True)
        divided = all(count % multiple == 0 for count in counts)
        return bool(counts) and decreasing and counts[-1] == multiple and divided

    def renamed(self, names: dict[str, str]) -> RowBlocks:
        """These blocks with their primitives renamed by `names` (merged ones)."""
        return RowBlocks(
            self.rows,
            tuple((count, names.get(name, name)) for count, name in self.blocks),
            self.multiple,
        )


def verify_sizes(op: Operation, type_: Attribute, sizes: Sequence[SSAValue]) -> None:
    """A tensor of run-time dimensions takes one size per `?` dimension, each a
    `te.size` of the same primitive."""
    assert isinstance(type_, TensorType)
    dynamic = sum(1 for dim in type_.get_shape() if dim < 0)
    if len(sizes) != dynamic:
        raise VerifyException(
            f"'{op.name}' of {type_} takes {dynamic} run-time size(s), got {len(sizes)}"
        )
    for size in sizes:
        if not isinstance(size.owner, SizeOp):
            raise VerifyException(f"'{op.name}' sizes must be te.size values")


def dim_extents(type_: Attribute, sizes: Sequence[SSAValue]) -> list[int | SSAValue]:
    """Each dimension of `type_`: its static size, or the run-time size given for it
    (`sizes`, in the order of the `?` dimensions)."""
    assert isinstance(type_, TensorType)
    given = iter(sizes)
    return [next(given) if dim < 0 else dim for dim in type_.get_shape()]


@irdl_op_definition
class SizeOp(IRDLOperation):
    """A size known at run time only: an `index` value of the primitive, passed to its
    kernel after the buffers (in the order of the te.size ops).

        %n = te.size "n" : index
    """

    name = "te.size"

    size_name = prop_def(StringAttr, prop_name="name")
    result = result_def(IndexType)

    traits = traits_def(Pure())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), PrimitiveOp):
            raise VerifyException("'te.size' must be directly inside a te.primitive")


@irdl_op_definition
class PlaceholderOp(IRDLOperation):
    """An input tensor of a primitive. Placeholders are bound, in order, to the operands
    of a `te.call` of the enclosing primitive.

        %x = te.placeholder "x" : tensor<1x784xf32>
    """

    name = "te.placeholder"

    tensor_name = prop_def(StringAttr, prop_name="name")
    sizes = var_operand_def(IndexType)
    result = result_def(Tensor)

    traits = traits_def(Pure())
    assembly_format = "$name (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($result)"

    def __init__(self, name: str, type_: TensorType, sizes: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[list(sizes)], properties={"name": StringAttr(name)}, result_types=[type_]
        )

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), PrimitiveOp):
            raise VerifyException("'te.placeholder' must be directly inside a te.primitive")
        verify_sizes(self, self.result.type, self.sizes)


class StageOp(IRDLOperation):
    """The shared structure of `te.compute` and `te.reduce`: a named stage whose region
    maps one index per result dimension (then one per reduction axis) to one scalar."""

    stage = prop_def(StringAttr)
    sizes = var_operand_def(IndexType)
    result = result_def(Tensor)
    body = region_def("single_block")

    traits = traits_def(NoMemoryEffect())

    @property
    def dims(self) -> list[int | SSAValue]:
        """Each result dimension: static, or its run-time size."""
        return dim_extents(self.result.type, self.sizes)

    @property
    def tensor_type(self) -> TensorType:
        assert isinstance(self.result.type, TensorType)
        return self.result.type

    @property
    def spatial_args(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args[: self.tensor_type.get_num_dims()])

    def reduce_extents(self) -> tuple[int, ...]:
        return ()

    @property
    def result_sizes(self) -> Sequence[SSAValue]:
        """The sizes of the result's run-time dimensions (`sizes`, but for a reduction's
        run-time extents, which follow them)."""
        return self.sizes

    def verify_(self) -> None:
        type_ = self.tensor_type
        verify_sizes(self, type_, self.result_sizes)
        expected = type_.get_num_dims() + len(self.reduce_extents())
        args = self.body.block.args
        if len(args) != expected:
            raise VerifyException(
                f"'{self.name}' body must have {expected} index arguments, got {len(args)}"
            )
        for arg in args:
            if not isinstance(arg.type, IndexType):
                raise VerifyException(
                    f"'{self.name}' body arguments must be index, got {arg.type}"
                )
        last = self.body.block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"'{self.name}' body must end with te.yield")
        expected = scalar_type(type_.element_type)
        if last.value.type != expected:
            holds = f"{type_.element_type}" + (
                "" if expected == type_.element_type else f" (yielded as {expected})"
            )
            raise VerifyException(f"'{self.name}' yields {last.value.type} but its tensor holds {holds}")

    def _print_header(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.stage.data)

    def _print_args(self, printer: Printer, args: Sequence[SSAValue]) -> None:
        printer.print_string("(")
        printer.print_list(args, printer.print_operand)
        printer.print_string(")")

    def _print_tail(self, printer: Printer) -> None:
        if self.result_sizes:
            printer.print_string(" sizes(")
            printer.print_list(self.result_sizes, printer.print_operand)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @staticmethod
    def _parse_sizes(parser: Parser) -> list[SSAValue]:
        """The optional `sizes(%n, ..)` of a stage of run-time dimensions."""
        if parser.parse_optional_keyword("sizes") is None:
            return []
        return parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN,
            lambda: parser.resolve_operand(parser.parse_unresolved_operand(), IndexType()),
        )

    @staticmethod
    def _parse_index_args(parser: Parser) -> list[Parser.UnresolvedArgument]:
        return parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )


@irdl_op_definition
class ComputeOp(StageOp):
    """A tensor defined element by element: result[i0, .., in] = body(i0, .., in).

        %r = te.compute "relu" (%i, %j) : tensor<4x8xf32> {
          %v = te.read %a[%i, %j] : tensor<4x8xf32>
          %z = arith.constant 0.0 : f32
          %m = arith.maximumf %v, %z : f32
          te.yield %m : f32
        }
    """

    name = "te.compute"

    def __init__(self, stage: str, type_: TensorType, body: Region, sizes: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[list(sizes)],
            properties={"stage": StringAttr(stage)},
            result_types=[type_],
            regions=[body],
        )

    def print(self, printer: Printer) -> None:
        self._print_header(printer)
        printer.print_string(" ")
        self._print_args(printer, self.body.block.args)
        self._print_tail(printer)

    @classmethod
    def parse(cls, parser: Parser) -> ComputeOp:
        stage = parser.parse_str_literal("stage name")
        args = cls._parse_index_args(parser)
        sizes = cls._parse_sizes(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, TensorType):
            parser.raise_error(f"'te.compute' expects a tensor type, got {type_}")
        region = parser.parse_region([arg.resolve(IndexType()) for arg in args])
        op = cls(stage, type_, region, sizes)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


@irdl_op_definition
class ReduceOp(StageOp):
    """A reduction: result[i..] = combine over the reduction axes (k..) of body(i.., k..),
    starting from `init`; combine is `sum`, `max` or `min`. Each reduction axis has an
    extent and runs from 0 to extent - 1.

        %s = te.reduce "rowsum" sum (%i) over (%k : 8) init 0.0 : tensor<4xf32> {
          %v = te.read %a[%i, %k] : tensor<4x8xf32>
          te.yield %v : f32
        }
    """

    name = "te.reduce"

    kind = prop_def(ReduceKindAttr)
    extents = prop_def(ArrayAttr[IntAttr])
    init = prop_def(FloatAttr | IntegerAttr)

    def __init__(
        self,
        stage: str,
        kind: ReduceKind,
        extents: Sequence[int | SSAValue],
        init: FloatAttr | IntegerAttr,
        type_: TensorType,
        body: Region,
        sizes: Sequence[SSAValue] = (),
    ):
        """`extents`: each reduction axis's static extent or run-time size (a
        te.size, which follows the result's `sizes` in the op's operands)."""
        run_time = [e for e in extents if isinstance(e, SSAValue)]
        super().__init__(
            operands=[[*sizes, *run_time]],
            properties={
                "stage": StringAttr(stage),
                "kind": ReduceKindAttr(kind),
                "extents": ArrayAttr(
                    IntAttr(DYNAMIC_INDEX if isinstance(e, SSAValue) else e) for e in extents
                ),
                "init": init,
            },
            result_types=[type_],
            regions=[body],
        )

    def reduce_extents(self) -> tuple[int, ...]:
        """The static extent of each reduction axis (DYNAMIC_INDEX where a run-time size
        gives it: `reduce_bounds`)."""
        return tuple(e.data for e in self.extents.data)

    @property
    def result_sizes(self) -> Sequence[SSAValue]:
        dynamic = sum(1 for dim in self.tensor_type.get_shape() if dim < 0)
        return self.sizes[:dynamic]

    def reduce_bounds(self) -> list[int | SSAValue]:
        """Each reduction axis's extent: static, or the run-time size that gives it
        (the `sizes` after the result's)."""
        given = iter(self.sizes[len(self.result_sizes) :])
        return [next(given) if e == DYNAMIC_INDEX else e for e in self.reduce_extents()]

    @property
    def has_run_time_extents(self) -> bool:
        return DYNAMIC_INDEX in self.reduce_extents()

    @property
    def reduce_args(self) -> tuple[SSAValue, ...]:
        return tuple(self.body.block.args[self.tensor_type.get_num_dims() :])

    def verify_(self) -> None:
        if not self.extents.data:
            raise VerifyException("'te.reduce' needs at least one reduction axis")
        run_time = sum(1 for e in self.reduce_extents() if e == DYNAMIC_INDEX)
        dynamic = sum(1 for dim in self.tensor_type.get_shape() if dim < 0)
        if len(self.sizes) != dynamic + run_time:
            raise VerifyException(
                f"'te.reduce' of {self.tensor_type} with {run_time} run-time extent(s) takes "
                f"{dynamic + run_time} run-time size(s), got {len(self.sizes)}"
            )
        super().verify_()
        for size in self.sizes[dynamic:]:
            if not isinstance(size.owner, SizeOp):
                raise VerifyException("'te.reduce' sizes must be te.size values")
        for extent in self.reduce_extents():
            if extent <= 0 and extent != DYNAMIC_INDEX:
                raise VerifyException(
                    f"'te.reduce' reduction extents must be positive, got {extent}"
                )
        element_type = self.tensor_type.element_type
        if self.init.type not in (element_type, scalar_type(element_type)):
            raise VerifyException(
                f"'te.reduce' init has type {self.init.type}, the tensor holds "
                f"{element_type}"
            )

    def print(self, printer: Printer) -> None:
        self._print_header(printer)
        printer.print_string(f" {self.kind.data.value} ")
        self._print_args(printer, self.spatial_args)
        printer.print_string(" over (")
        printer.print_list(
            zip(self.reduce_args, self.reduce_bounds()),
            lambda pair: (
                printer.print_operand(pair[0]),
                printer.print_string(" : "),
                printer.print_operand(pair[1])
                if isinstance(pair[1], SSAValue)
                else printer.print_string(str(pair[1])),
            ),
        )
        printer.print_string(") init ")
        if isinstance(self.init, FloatAttr):
            printer.print_float(self.init.value.data, self.init.type)
        else:
            printer.print_int(self.init.value.data, self.init.type)
        self._print_tail(printer)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        stage = parser.parse_str_literal("stage name")
        kind = parser.parse_str_enum(ReduceKind)
        spatial = cls._parse_index_args(parser)
        parser.parse_keyword("over")

        def parse_axis() -> tuple[Parser.UnresolvedArgument, int | SSAValue]:
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation(":")
            size = parser.parse_optional_unresolved_operand()
            if size is not None:  # a run-time extent: a te.size
                return arg, parser.resolve_operand(size, IndexType())
            return arg, parser.parse_integer(allow_boolean=False, allow_negative=False)

        axes = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_axis)
        parser.parse_keyword("init")
        init_pos = parser.pos
        init_text = parser._current_token.text  # the number as spelled (a hex float)
        init_value = parser.parse_number()
        sizes = cls._parse_sizes(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, TensorType):
            parser.raise_error(f"'te.reduce' expects a tensor type, got {type_}")
        element_type = scalar_type(type_.element_type)
        if isinstance(element_type, AnyFloat) and init_text.lower().startswith("0x"):
            # a float printed as its bit pattern (infinities, NaN): 0xFF800000 is -inf
            init_value = _float_of_bits(int(init_text, 16), element_type)
        if isinstance(element_type, AnyFloat):
            init: FloatAttr | IntegerAttr = FloatAttr(float(init_value), element_type)
        elif isinstance(element_type, IntegerType) and isinstance(init_value, int):
            init = IntegerAttr(init_value, element_type)
        else:
            parser.raise_error(
                f"init {init_value} does not fit element type {element_type}",
                init_pos,
                parser.pos,
            )
        args = [a.resolve(IndexType()) for a in spatial] + [
            a.resolve(IndexType()) for a, _ in axes
        ]
        region = parser.parse_region(args)
        bounds = [e for _, e in axes]
        op = cls(stage, kind, bounds, init, type_, region, sizes)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


def _float_of_bits(bits: int, type_: Attribute) -> float:
    """The float of `type_` whose bit pattern is `bits` (how MLIR prints infinities and
    NaN: `0xFF800000` is an f32 -inf)."""
    width = type_.bitwidth  # type: ignore[attr-defined]
    unsigned = {16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
    floating = {16: np.float16, 32: np.float32, 64: np.float64}[width]
    return float(np.array(bits & ((1 << width) - 1), dtype=unsigned).view(floating))


@irdl_op_definition
class ReadOp(IRDLOperation):
    """Reads one element of a tensor inside a stage body; the value has the scalar
    type of the element type (`i8` for `ui8`, `f32` for `bf16`).

        %v = te.read %a[%i, %k] : tensor<4x8xf32>
    """

    name = "te.read"

    tensor = operand_def(Tensor)
    indices = var_operand_def(IndexType)
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue | Operation, indices: Sequence[SSAValue | Operation]):
        tensor = SSAValue.get(tensor)
        assert isinstance(tensor.type, TensorType)
        super().__init__(
            operands=[tensor, indices], result_types=[scalar_type(tensor.type.element_type)]
        )

    def verify_(self) -> None:
        type_ = self.tensor.type
        assert isinstance(type_, TensorType)
        if len(self.indices) != type_.get_num_dims():
            raise VerifyException(
                f"'te.read' of a rank-{type_.get_num_dims()} tensor needs "
                f"{type_.get_num_dims()} indices, got {len(self.indices)}"
            )
        expected = scalar_type(type_.element_type)
        if self.result.type != expected:
            what = (
                f"the element type {expected}"
                if expected == type_.element_type
                else f"{expected}, the scalar type of element type {type_.element_type}"
            )
            raise VerifyException(f"'te.read' result type {self.result.type} differs from {what}")
        if not isinstance(self.tensor.owner, PlaceholderOp | StageOp):
            raise VerifyException(
                "'te.read' must read a te.placeholder or a stage of the same primitive"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor.type)

    @classmethod
    def parse(cls, parser: Parser) -> ReadOp:
        tensor = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, TensorType):
            parser.raise_error(f"'te.read' expects a tensor type, got {type_}")
        op = cls(
            parser.resolve_operand(tensor, type_),
            [parser.resolve_operand(i, IndexType()) for i in indices],
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a stage body with the scalar value of the current element.

        te.yield %v : f32
    """

    name = "te.yield"

    value = operand_def()
    traits = traits_def(IsTerminator(), HasParent(ComputeOp, ReduceOp), Pure())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue | Operation):
        super().__init__(operands=[value])


@irdl_op_definition
class OutputOp(IRDLOperation):
    """Ends a primitive with the tensors it returns, in order.

        te.output %r : tensor<1x1024xf32>
    """

    name = "te.output"

    values = var_operand_def(Tensor)
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, values: Sequence[SSAValue | Operation]):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), PrimitiveOp):
            raise VerifyException("'te.output' must end a te.primitive")
        if not self.values:
            raise VerifyException("'te.output' needs at least one tensor")


@irdl_op_definition
class PrimitiveOp(IRDLOperation):
    """One primitive function: the unit of scheduling and of code generation.

        te.primitive @relu {
          %a = te.placeholder "a" : tensor<8xf32>
          %r = te.compute "relu" (%i) : tensor<8xf32> { ... }
          te.output %r : tensor<8xf32>
        }
    """

    name = "te.primitive"

    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, sym_name: str, body: Region):
        super().__init__(properties={"sym_name": StringAttr(sym_name)}, regions=[body])

    @property
    def placeholders(self) -> list[PlaceholderOp]:
        return [op for op in self.body.block.ops if isinstance(op, PlaceholderOp)]

    @property
    def run_time_sizes(self) -> list[SizeOp]:
        """The sizes known at run time only, in order (its kernel's last arguments)."""
        return [op for op in self.body.block.ops if isinstance(op, SizeOp)]

    @property
    def output(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    @property
    def input_types(self) -> list[Attribute]:
        return [p.result.type for p in self.placeholders]

    @property
    def output_types(self) -> list[Attribute]:
        return [v.type for v in self.output.values]

    def verify_(self) -> None:
        if self.body.block.args:
            raise VerifyException("'te.primitive' body takes no arguments; use te.placeholder")
        if not isinstance(self.body.block.last_op, OutputOp):
            raise VerifyException("'te.primitive' body must end with te.output")
        for op in self.body.block.ops:
            if not isinstance(op, SizeOp | PlaceholderOp | StageOp | OutputOp):
                raise VerifyException(
                    f"'te.primitive' body holds sizes, placeholders, stages and te.output, "
                    f"not '{op.name}'"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> PrimitiveOp:
        name = parser.parse_symbol_name()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        op = cls(name.data, region)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


class CallSymbolUser(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        assert isinstance(op, CallOp)
        callee = SymbolTable.lookup_symbol(op, op.callee)
        if not isinstance(callee, PrimitiveOp):
            raise VerifyException(f"'te.call' callee {op.callee} is not a te.primitive")
        operand_types = [o.type for o in op.args]
        if operand_types != callee.input_types:
            raise VerifyException(
                f"'te.call' operand types {_types(operand_types)} differ from the "
                f"placeholders of @{callee.sym_name.data}: {_types(callee.input_types)}"
            )
        result_types = [r.type for r in op.res]
        if result_types != callee.output_types:
            raise VerifyException(
                f"'te.call' result types {_types(result_types)} differ from the outputs "
                f"of @{callee.sym_name.data}: {_types(callee.output_types)}"
            )


def _types(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


@irdl_op_definition
class CallOp(IRDLOperation):
    """Calls a primitive on tensors, binding them to its placeholders in order.

        %y = te.call @dense_relu(%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
    """

    name = "te.call"

    callee = prop_def(FlatSymbolRefAttrConstr)
    args = var_operand_def(Tensor)
    res = var_result_def(Tensor)

    traits = traits_def(CallSymbolUser(), NoMemoryEffect())
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(
        self,
        callee: str,
        args: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            properties={"callee": SymbolRefAttr(callee)},
            operands=[args],
            result_types=[result_types],
        )


@irdl_op_definition
class CondCallOp(IRDLOperation):
    """Calls one of two functions over tensors with the same arguments, by a condition
    (a tensor of i1 holding one element) known at run time: `graph.cond_call` at this
    level. convert-te-to-loops makes it an `scf.if` whose branches call their function
    with the buffers the caller planned for the results.

        %y = te.cond_call %c, @f_then, @f_else(%x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "te.cond_call"

    condition = operand_def(Tensor)
    args = var_operand_def(Tensor)
    res = var_result_def(Tensor)
    then_callee = prop_def(FlatSymbolRefAttrConstr)
    else_callee = prop_def(FlatSymbolRefAttrConstr)

    assembly_format = (
        "$condition `,` $then_callee `,` $else_callee `(` $args `)` attr-dict `:` "
        "functional-type(operands, $res)"
    )

    def __init__(
        self,
        condition: SSAValue | Operation,
        then_callee: str,
        else_callee: str,
        args: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            properties={
                "then_callee": SymbolRefAttr(then_callee),
                "else_callee": SymbolRefAttr(else_callee),
            },
            operands=[condition, args],
            result_types=[result_types],
        )

    def callee(self, taken: bool) -> str:
        return (self.then_callee if taken else self.else_callee).string_value()


@irdl_op_definition
class LoopCallOp(IRDLOperation):
    """Calls the function `body` once per iteration while the iteration number is below
    `max_trip` and the condition holds (ONNX Loop): `graph.loop_call` at this level. The
    body takes the iteration number, the condition, the carried values and `captured`,
    and gives the next condition and carried values; the results are the carried values
    after the last iteration. convert-te-to-loops makes it an `scf.while`.

        %y = te.loop_call %m, %c, @body inits(%x) captured(%w) : tensor<i64>, tensor<i1>, (tensor<4xf32>), (tensor<4xf32>) -> (tensor<4xf32>)
    """

    name = "te.loop_call"

    max_trip = operand_def(Tensor)
    condition = operand_def(Tensor)
    inits = var_operand_def(Tensor)
    captured = var_operand_def(Tensor)
    res = var_result_def(Tensor)
    body = prop_def(FlatSymbolRefAttrConstr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$max_trip `,` $condition `,` $body `inits` `(` $inits `)` `captured` `(` $captured `)` "
        "attr-dict `:` type($max_trip) `,` type($condition) `,` `(` type($inits) `)` `,` "
        "`(` type($captured) `)` `->` `(` type($res) `)`"
    )

    def __init__(
        self,
        max_trip: SSAValue | Operation,
        condition: SSAValue | Operation,
        body: str,
        inits: Sequence[SSAValue | Operation],
        captured: Sequence[SSAValue | Operation],
    ):
        super().__init__(
            properties={"body": SymbolRefAttr(body)},
            operands=[max_trip, condition, inits, captured],
            result_types=[[SSAValue.get(v).type for v in inits]],
        )

    @property
    def callee(self) -> str:
        return self.body.string_value()


@irdl_op_definition
class ScanCallOp(IRDLOperation):
    """Calls the function `body` once per position along the first axis of `scanned`
    (ONNX Scan): `graph.scan_call` at this level. The body takes the carried values,
    that position of each scanned tensor and `captured`, and gives the next carried
    values and a row of each scan output; the results are the carried values after the
    last position, then each scan output's rows stacked (with `stops`, positions run
    while the first carried value holds, and the rows of the others are zeros).
    convert-te-to-loops makes it a loop over the positions.

        %h, %ys = te.scan_call @body inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>), (tensor<5x4xf32>), (tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
    """

    name = "te.scan_call"

    inits = var_operand_def(Tensor)
    scanned = var_operand_def(Tensor)
    captured = var_operand_def(Tensor)
    res = var_result_def(Tensor)
    body = prop_def(FlatSymbolRefAttrConstr)
    stops = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$body (`stops` $stops^)? `inits` `(` $inits `)` `over` `(` $scanned `)` `captured` `(` $captured `)` "
        "attr-dict `:` `(` type($inits) `)` `,` `(` type($scanned) `)` `,` "
        "`(` type($captured) `)` `->` `(` type($res) `)`"
    )

    def __init__(
        self,
        body: str,
        inits: Sequence[SSAValue | Operation],
        scanned: Sequence[SSAValue | Operation],
        captured: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        stops: bool = False,
    ):
        super().__init__(
            properties={"body": SymbolRefAttr(body), **({"stops": UnitAttr()} if stops else {})},
            operands=[inits, scanned, captured],
            result_types=[result_types],
        )

    @property
    def callee(self) -> str:
        return self.body.string_value()


def build_stage_body(
    index_count: int,
) -> tuple[Region, Block]:
    """An empty stage region with `index_count` index arguments."""
    block = Block(arg_types=[IndexType()] * index_count)
    return Region(block), block


TE = Dialect(
    "te",
    [
        SizeOp, PlaceholderOp, ComputeOp, ReduceOp, ReadOp, YieldOp, OutputOp, PrimitiveOp, CallOp,
        CondCallOp, LoopCallOp, ScanCallOp,
    ],
    [ReduceKindAttr],
)
