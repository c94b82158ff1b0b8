"""Blocked-layout operators: NCHW{c} convolution and pooling, and layout transforms.

A blocked layout splits a primal axis into an outer axis and an inner block of fixed
size, as in TVM: "NCHW8c" holds an [N, C, H, W] tensor as [N, C/8, H, W, 8] with
element (n, c, h, w) at [n, c / 8, h, w, c % 8]. A convolution weight "OIHW" becomes
"OIHW8i8o", [O/8, I/8, KH, KW, 8, 8]. A layout is written as its axes in storage order:
an upper-case letter is a primal axis (its outer part when blocked), a number and a
lower-case letter a block of that primal axis.

    %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x8x8xf32>) -> tensor<1x2x8x8x8xf32>
    %y = graph.blocked_conv %b, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
    %p = graph.blocked_max_pool %y kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>

The blocked operators mean exactly what their NCHW counterparts mean on the unblocked
tensors (that is their reference semantics, `evaluate`), and declare the same pattern
kinds, so fusion groups them the same way. Element-wise operators need no blocked
variant: they work on the blocked tensors as they are (graph-alter-layout re-lays out
the per-channel constants they broadcast).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    AnyTensor,
    FloatTensor,
    GraphOp,
    PatternKind,
    static_shape,
)
from strato.dialects.graph.nn import (
    AvgPoolOp,
    ConvOp,
    MaxPoolOp,
    PoolOp,
    SlidingWindowOp,
    conv_output_shape,
    conv_properties,
    pool_output_shape,
    pool_properties,
    verify_bias,
    verify_float_or_integer,
)
from strato.dialects.tensor_types import tensor_type_like

# -- layouts ----------------------------------------------------------------------------

_AXIS = re.compile(r"([A-Z])|([1-9][0-9]*)([a-z])")


@dataclass(frozen=True)
class Layout:
    """A tensor layout: its axes in storage order, each a primal axis (upper case,
    factor None) or a block of one (lower case, with its size)."""

    text: str
    axes: tuple[tuple[str, int | None], ...]

    @staticmethod
    def parse(text: str) -> Layout:
        """The layout spelled `text` ("NCHW", "NCHW8c", "OIHW8i8o"); ValueError with
        the reason when it is not one."""
        axes: list[tuple[str, int | None]] = []
        position = 0
        while position < len(text):
            match = _AXIS.match(text, position)
            if match is None:
                raise ValueError(f"unexpected '{text[position]}' at position {position}")
            if match.group(1):
                axes.append((match.group(1), None))
            else:
                axes.append((match.group(3), int(match.group(2))))
            position = match.end()
        letters = [letter for letter, _ in axes]
        if not letters:
            raise ValueError("a layout needs at least one axis")
        for letter in letters:
            if letters.count(letter) > 1:
                raise ValueError(f"axis '{letter}' appears twice")
            if letter.islower() and letter.upper() not in letters:
                raise ValueError(f"block '{letter}' of a missing axis '{letter.upper()}'")
        return Layout(text, tuple(axes))

    @property
    def primal_axes(self) -> tuple[str, ...]:
        """The primal axes in the order they appear."""
        return tuple(letter for letter, factor in self.axes if factor is None)

    @property
    def rank(self) -> int:
        return len(self.axes)

    def block(self, primal: str) -> int:
        """The block size of `primal` (1 when it is not blocked)."""
        for letter, factor in self.axes:
            if letter == primal.lower() and factor is not None:
                return factor
        return 1

    def position(self, letter: str) -> int:
        return [a for a, _ in self.axes].index(letter)

    def primal_extents(self, shape: Sequence[int]) -> dict[str, int]:
        """The extent of each primal axis of a tensor of `shape` in this layout;
        ValueError when the shape does not fit the layout."""
        if len(shape) != self.rank:
            raise ValueError(f"shape {list(shape)} has rank {len(shape)}, layout {self.text} has {self.rank}")
        for (letter, factor), size in zip(self.axes, shape):
            if factor is not None and size != factor:
                raise ValueError(f"block '{letter}' of {self.text} has size {factor}, the shape has {size}")
        return {
            primal: shape[self.position(primal)] * self.block(primal) for primal in self.primal_axes
        }

    def shape_of(self, extents: dict[str, int]) -> tuple[int, ...]:
        """The shape in this layout of a tensor with primal `extents`; ValueError when a
        blocked extent is not a multiple of its block."""
        shape = []
        for letter, factor in self.axes:
            if factor is not None:
                shape.append(factor)
                continue
            extent, block = extents[letter], self.block(letter)
            if extent % block:
                raise ValueError(f"axis {letter} of extent {extent} does not split into blocks of {block}")
            shape.append(extent // block)
        return tuple(shape)


def blocked_layout(block: int) -> str:
    """The activation layout with channel blocks of `block`: "NCHW8c"."""
    return f"NCHW{block}c"


class KernelBlocks(NamedTuple):
    """The blocks of a blocked convolution weight layout, and their order: "io" for
    OIHW{i}i{o}o (output channels innermost), "oi" for OIHW{o}o{i}i (input channels
    innermost)."""

    in_block: int
    out_block: int
    order: str

    @property
    def block_shape(self) -> tuple[int, int]:
        """The sizes of the two innermost weight dimensions."""
        if self.order == "io":
            return (self.in_block, self.out_block)
        return (self.out_block, self.in_block)


def blocked_kernel_layout(in_block: int, out_block: int, order: str = "io") -> str:
    """The convolution weight layout with blocks of input and output channels:
    "OIHW8i8o" (order "io") or "OIHW8o8i" (order "oi")."""
    if order == "io":
        return f"OIHW{in_block}i{out_block}o"
    assert order == "oi", order
    return f"OIHW{out_block}o{in_block}i"


def _to_primal(array: np.ndarray, layout: Layout) -> np.ndarray:
    """`array` (in `layout`) as a tensor of its primal axes, in their layout order."""
    order: list[int] = []
    for primal in layout.primal_axes:
        order.append(layout.position(primal))
        if primal.lower() in [a for a, _ in layout.axes]:
            order.append(layout.position(primal.lower()))
    extents = layout.primal_extents(array.shape)
    return array.transpose(order).reshape([extents[p] for p in layout.primal_axes])


def _from_primal(array: np.ndarray, layout: Layout) -> np.ndarray:
    """The primal tensor `array` (axes in `layout`'s primal order) laid out in `layout`."""
    split: list[int] = []
    labels: list[str] = []
    for primal, extent in zip(layout.primal_axes, array.shape):
        if primal.lower() in [a for a, _ in layout.axes]:
            block = layout.block(primal)
            split += [extent // block, block]
            labels += [primal, primal.lower()]
        else:
            split.append(extent)
            labels.append(primal)
    return array.reshape(split).transpose([labels.index(a) for a, _ in layout.axes])


def transform_layout(array: np.ndarray, src: str, dst: str) -> np.ndarray:
    """`array`, laid out in `src`, laid out in `dst` (layouts with the same primal axes)."""
    return np.ascontiguousarray(relaid(array, src, dst))


def relaid(array: np.ndarray, src: str, dst: str) -> np.ndarray:
    """`transform_layout`, as a view of `array` where numpy can make one (whoever copies
    it next lays it out)."""
    source, target = Layout.parse(src), Layout.parse(dst)
    primal = _to_primal(np.asarray(array), source)
    primal = primal.transpose([source.primal_axes.index(p) for p in target.primal_axes])
    return _from_primal(primal, target)


def layout_transform_shape(shape: Sequence[int], src: str, dst: str) -> tuple[int, ...]:
    """The shape in `dst` of a tensor of `shape` in `src`; ValueError when it has none."""
    source, target = Layout.parse(src), Layout.parse(dst)
    if sorted(source.primal_axes) != sorted(target.primal_axes):
        raise ValueError(
            f"layouts {src} and {dst} have different primal axes "
            f"({''.join(source.primal_axes)} and {''.join(target.primal_axes)})"
        )
    return target.shape_of(source.primal_extents(shape))


def _detached(type_: TensorType) -> SSAValue:
    """A value of `type_` that belongs to no function, to build an op only to ask it
    for its shapes and semantics."""
    return Block(arg_types=[type_]).args[0]


# -- layout_transform -----------------------------------------------------------------


@irdl_op_definition
class LayoutTransformOp(GraphOp):
    """The same tensor in another layout: element p (a position in the primal axes)
    moves from its place in `src_layout` to its place in `dst_layout`. Both layouts have
    the same primal axes; each block size divides its axis. Any element type.

        %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32>

    result[n, C, h, w, c] = x[n, C * 8 + c, h, w] for this example. Injective.
    """

    name = "graph.layout_transform"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE
    FLOAT_OPERANDS: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    src_layout = prop_def(StringAttr)
    dst_layout = prop_def(StringAttr)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `from` $src_layout `to` $dst_layout attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue | Operation, src_layout: str, dst_layout: str):
        input = SSAValue.get(input)
        shape = layout_transform_shape(static_shape(input), src_layout, dst_layout)
        super().__init__(
            operands=[input],
            properties={"src_layout": StringAttr(src_layout), "dst_layout": StringAttr(dst_layout)},
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def source(self) -> Layout:
        return Layout.parse(self.src_layout.data)

    @property
    def target(self) -> Layout:
        return Layout.parse(self.dst_layout.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        for what, text in (("src_layout", self.src_layout.data), ("dst_layout", self.dst_layout.data)):
            try:
                Layout.parse(text)
            except ValueError as err:
                raise VerifyException(f"'{self.name}' {what} \"{text}\" is not a layout: {err}") from None
        try:
            return layout_transform_shape(
                static_shape(self.input), self.src_layout.data, self.dst_layout.data
            )
        except ValueError as err:
            raise VerifyException(f"'{self.name}' {err}") from None

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [transform_layout(inputs[0], self.src_layout.data, self.dst_layout.data)]


# -- blocked operators ----------------------------------------------------------------


def parse_blocked_layout(text: str) -> int | None:
    """The channel block of an activation layout "NCHW{b}c", else None."""
    match = re.fullmatch(r"NCHW([1-9][0-9]*)c", text)
    return int(match.group(1)) if match else None


def parse_blocked_kernel_layout(text: str) -> KernelBlocks | None:
    """The blocks of a weight layout "OIHW{i}i{o}o" or "OIHW{o}o{i}i", else None."""
    match = re.fullmatch(r"OIHW([1-9][0-9]*)i([1-9][0-9]*)o", text)
    if match:
        return KernelBlocks(int(match.group(1)), int(match.group(2)), "io")
    match = re.fullmatch(r"OIHW([1-9][0-9]*)o([1-9][0-9]*)i", text)
    if match:
        return KernelBlocks(int(match.group(2)), int(match.group(1)), "oi")
    return None


class BlockedChannelOp(GraphOp):
    """An operator on a blocked tensor [N, C/b, H, W, b] ("NCHW{b}c", its `layout`)."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    layout = prop_def(StringAttr)

    @property
    def block(self) -> int:
        block = parse_blocked_layout(self.layout.data)
        assert block is not None, self.layout.data
        return block

    def _check_layout(self, name: str, text: str) -> int:
        block = parse_blocked_layout(text)
        if block is None:
            raise VerifyException(
                f"'{self.name}' {name} \"{text}\" is not a blocked layout NCHW<b>c"
            )
        return block

    def _check_blocked(self, value: SSAValue, block: int, what: str) -> tuple[int, ...]:
        """The unblocked [N, C, H, W] shape of the blocked `value`."""
        shape = static_shape(value)
        if len(shape) != 5 or shape[4] != block:
            raise VerifyException(
                f"'{self.name}' {what} must be [N, C/{block}, H, W, {block}], got {list(shape)}"
            )
        return (shape[0], shape[1] * block, shape[2], shape[3])


class BlockedWindowOp(SlidingWindowOp, BlockedChannelOp):
    """A 2-D window operator on a blocked tensor [N, C/b, H, W, b] ("NCHW{b}c")."""

    def _check_window(self) -> None:
        for what, values in (("strides", self.stride_values), ("dilations", self.dilation_values)):
            if len(values) != 2 or any(v < 1 for v in values):
                raise VerifyException(f"'{self.name}' {what} must be two positive integers")
        padding = tuple(self.padding.get_values())
        if len(padding) != 4 or any(p < 0 for p in padding):
            raise VerifyException(
                f"'{self.name}' padding must be four non-negative integers (begin, then end)"
            )


def _blocked_shape(shape: Sequence[int], block: int) -> tuple[int, ...]:
    """[N, C/b, H, W, b] of an [N, C, H, W] shape."""
    return (shape[0], shape[1] // block, shape[2], shape[3], block)


@irdl_op_definition
class BlockedConvOp(BlockedWindowOp):
    """2-D convolution on blocked tensors: `graph.conv` of the unblocked input and
    weight, its result blocked.

    input is [N, C/bi, H, W, bi] ("NCHW{bi}c"), weight [M/bo, C/groups/ii, KH, KW, ii, bo]
    ("OIHW{ii}i{bo}o") or [M/bo, C/groups/ii, KH, KW, bo, ii] ("OIHW{bo}o{ii}i"), the
    optional bias [M], the result [N, M/bo, OH, OW, bo] ("NCHW{bo}c"). Either the blocks tile the groups (ii = bi, with C/groups a multiple
    of bi and M/groups of bo; groups = 1 is the common case), or the convolution is
    depthwise (groups = C = M, ii = 1, bi = bo). For groups = 1:

        result[n, M, oh, ow, m] = bias[M * bo + m] + sum_{C, kh, kw, c}
            x'[n, C, oh * sh + kh * dh, ow * sw + kw * dw, c] * weight[M, C, kh, kw, c, m]

        %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<4x2x3x3x8x8xf32>, tensor<32xf32>) -> tensor<1x4x8x8x8xf32>
    """

    name = "graph.blocked_conv"

    input = operand_def(FloatTensor)
    weight = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    result = result_def(FloatTensor)

    groups = prop_def(IntegerAttr[I64])
    kernel_layout = prop_def(StringAttr)
    out_layout = prop_def(StringAttr)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `strides` $strides `padding` $padding "
        "`dilations` $dilations `groups` $groups `layout` $layout "
        "`kernel_layout` $kernel_layout `out_layout` $out_layout attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        strides: Sequence[int],
        padding: Sequence[int],
        dilations: Sequence[int],
        groups: int,
        in_block: int,
        out_block: int,
        kernel_order: str = "io",
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        x, w = static_shape(input), static_shape(weight)
        kernel_in = w[4] if kernel_order == "io" else w[5]
        nchw = (x[0], x[1] * in_block, x[2], x[3])
        oihw = (w[0] * out_block, w[1] * kernel_in, w[2], w[3])
        out = conv_output_shape(nchw, oihw, strides, padding, dilations)
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            properties={
                **conv_properties(
                    strides,
                    padding,
                    dilations,
                    groups,
                    blocked_layout(in_block),
                    blocked_kernel_layout(kernel_in, out_block, kernel_order),
                ),
                "out_layout": StringAttr(blocked_layout(out_block)),
            },
            result_types=[tensor_type_like(input.type, _blocked_shape(out, out_block))],
        )

    @property
    def group_count(self) -> int:
        return self.groups.value.data

    @property
    def in_block(self) -> int:
        return self.block

    @property
    def out_block(self) -> int:
        block = parse_blocked_layout(self.out_layout.data)
        assert block is not None
        return block

    @property
    def kernel_blocks(self) -> KernelBlocks:
        blocks = parse_blocked_kernel_layout(self.kernel_layout.data)
        assert blocks is not None
        return blocks

    @property
    def is_depthwise(self) -> bool:
        return (
            self.kernel_blocks.in_block == 1
            and static_shape(self.weight)[1] == 1
            and self.group_count > 1
        )

    def unblocked_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The [N, C, H, W] input and [M, C/groups, KH, KW] weight shapes."""
        x, w = static_shape(self.input), static_shape(self.weight)
        ii, bo, _ = self.kernel_blocks
        return (x[0], x[1] * self.in_block, x[2], x[3]), (w[0] * bo, w[1] * ii, w[2], w[3])

    def infer_shape(self) -> tuple[int, ...] | None:
        in_block = self._check_layout("layout", self.layout.data)
        out_block = self._check_layout("out_layout", self.out_layout.data)
        blocks = parse_blocked_kernel_layout(self.kernel_layout.data)
        if blocks is None:
            raise VerifyException(
                f"'{self.name}' kernel_layout \"{self.kernel_layout.data}\" is not a blocked "
                f"weight layout OIHW<i>i<o>o or OIHW<o>o<i>i"
            )
        ii, bo, _ = blocks
        if bo != out_block:
            raise VerifyException(
                f"'{self.name}' kernel_layout output block {bo} differs from the out_layout "
                f"block {out_block}"
            )
        x = self._check_blocked(self.input, in_block, "input")
        w = static_shape(self.weight)
        inner = blocks.block_shape
        if len(w) != 6 or tuple(w[4:]) != inner:
            raise VerifyException(
                f"'{self.name}' weight must be [M/{bo}, C/groups/{ii}, KH, KW, {inner[0]}, "
                f"{inner[1]}] in layout {self.kernel_layout.data}, got {list(w)}"
            )
        self._check_window()
        groups = self.group_count
        outputs, per_group_in = w[0] * bo, w[1] * ii
        if groups < 1 or x[1] % groups or outputs % groups or per_group_in != x[1] // groups:
            raise VerifyException(
                f"'{self.name}' weight [{outputs}, {per_group_in}, ..] does not fit {x[1]} "
                f"input channels in {groups} groups"
            )
        depthwise = per_group_in == 1 and outputs == groups and ii == 1
        tiled = ii == in_block and per_group_in % in_block == 0 and (outputs // groups) % bo == 0
        if depthwise and in_block != out_block:
            raise VerifyException(
                f"'{self.name}' depthwise convolution needs equal input and output blocks"
            )
        if not depthwise and not tiled:
            raise VerifyException(
                f"'{self.name}' channel blocks must tile the groups (input block {in_block}, "
                f"kernel blocks {ii}i{bo}o, {groups} groups) or the convolution be depthwise"
            )
        verify_bias(self, self.bias, outputs)
        out = conv_output_shape(
            x, (outputs, per_group_in, w[2], w[3]), self.stride_values,
            self.padding.get_values(), self.dilation_values,
        )
        if out[2] < 1 or out[3] < 1:
            raise VerifyException(f"'{self.name}' window does not fit the padded input")
        return _blocked_shape(out, out_block)

    def nchw_equivalent(self) -> ConvOp:
        """The graph.conv this op computes, on unblocked values that belong to no function."""
        x, w = self.unblocked_shapes()
        input_type = tensor_type_like(self.input.type, x)
        bias = None if self.bias is None else _detached(self.bias.type)  # type: ignore[arg-type]
        return ConvOp(
            _detached(input_type),
            _detached(tensor_type_like(self.weight.type, w)),
            bias,
            strides=self.stride_values,
            padding=tuple(self.padding.get_values()),
            dilations=self.dilation_values,
            groups=self.group_count,
        )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = transform_layout(inputs[0], self.layout.data, "NCHW")
        w = transform_layout(inputs[1], self.kernel_layout.data, "OIHW")
        (out,) = self.nchw_equivalent().evaluate([x, w, *inputs[2:]])
        return [transform_layout(out, "NCHW", self.out_layout.data)]


class BlockedPoolOp(BlockedWindowOp):
    """Pooling windows over H and W of a blocked tensor; `nchw_equivalent` is the
    pooling of the unblocked tensor."""

    input = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    kernel = prop_def(DenseArrayBase.constr(i64))
    ceil_mode = opt_prop_def(UnitAttr)

    traits = traits_def(NoMemoryEffect())

    NCHW_OP: ClassVar[type[PoolOp]]

    @property
    def kernel_shape(self) -> tuple[int, ...]:
        return tuple(self.kernel.get_values())

    def unblocked_shape(self) -> tuple[int, ...]:
        x = static_shape(self.input)
        return (x[0], x[1] * self.block, x[2], x[3])

    def _nchw_options(self) -> dict:
        return {
            "strides": self.stride_values,
            "padding": tuple(self.padding.get_values()),
            "dilations": self.dilation_values,
            "ceil_mode": self.ceil_mode is not None,
        }

    def nchw_equivalent(self) -> PoolOp:
        """The NCHW pooling this op computes, on a value that belongs to no function."""
        value = _detached(tensor_type_like(self.input.type, self.unblocked_shape()))
        return self.NCHW_OP(value, self.kernel_shape, **self._nchw_options())

    def infer_shape(self) -> tuple[int, ...] | None:
        block = self._check_layout("layout", self.layout.data)
        x = self._check_blocked(self.input, block, "input")
        kernel = self.kernel_shape
        if len(kernel) != 2 or any(k < 1 for k in kernel):
            raise VerifyException(f"'{self.name}' kernel must be two positive integers")
        self._check_window()
        out = pool_output_shape(
            x, kernel, self.stride_values, self.padding.get_values(), self.dilation_values,
            self.ceil_mode is not None,
        )
        if out[2] < 1 or out[3] < 1:
            raise VerifyException(f"'{self.name}' window does not fit the padded input")
        return _blocked_shape(out, block)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = transform_layout(inputs[0], self.layout.data, "NCHW")
        (out,) = self.nchw_equivalent().evaluate([x])
        return [transform_layout(out, "NCHW", self.layout.data)]


def _pool_result_type(input: SSAValue, kernel, strides, padding, dilations, ceil_mode, block):
    x = static_shape(input)
    out = pool_output_shape(
        (x[0], x[1] * block, x[2], x[3]), kernel, strides, padding, dilations, ceil_mode
    )
    return tensor_type_like(input.type, _blocked_shape(out, block))


@irdl_op_definition
class BlockedMaxPoolOp(BlockedPoolOp):
    """`graph.max_pool` on a blocked tensor [N, C/b, H, W, b] ("NCHW{b}c"): the largest
    element of each window, per channel; padding never wins. Float or integer tensors.

        %p = graph.blocked_max_pool %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
    """

    name = "graph.blocked_max_pool"
    FLOAT_OPERANDS: ClassVar[bool] = False
    NCHW_OP: ClassVar[type[PoolOp]] = MaxPoolOp

    assembly_format = MaxPoolOp.assembly_format

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        *,
        strides: Sequence[int],
        padding: Sequence[int],
        dilations: Sequence[int],
        ceil_mode: bool = False,
        block: int,
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            properties=pool_properties(
                kernel, strides, padding, dilations, ceil_mode, blocked_layout(block)
            ),
            result_types=[
                _pool_result_type(input, kernel, strides, padding, dilations, ceil_mode, block)
            ],
        )

    def verify_(self) -> None:
        verify_float_or_integer(self, self.input)
        super().verify_()


@irdl_op_definition
class BlockedAvgPoolOp(BlockedPoolOp):
    """`graph.avg_pool` on a blocked tensor [N, C/b, H, W, b] ("NCHW{b}c"): the mean of
    each window per channel, counting the taps inside the input (and its padding with
    `count_include_pad`).

        %p = graph.blocked_avg_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
    """

    name = "graph.blocked_avg_pool"
    NCHW_OP: ClassVar[type[PoolOp]] = AvgPoolOp

    count_include_pad = opt_prop_def(UnitAttr)

    assembly_format = AvgPoolOp.assembly_format

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        *,
        strides: Sequence[int],
        padding: Sequence[int],
        dilations: Sequence[int],
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        block: int,
    ):
        input = SSAValue.get(input)
        properties = pool_properties(
            kernel, strides, padding, dilations, ceil_mode, blocked_layout(block)
        )
        if count_include_pad:
            properties["count_include_pad"] = UnitAttr()
        super().__init__(
            operands=[input],
            properties=properties,
            result_types=[
                _pool_result_type(input, kernel, strides, padding, dilations, ceil_mode, block)
            ],
        )

    def _nchw_options(self) -> dict:
        return {**super()._nchw_options(), "count_include_pad": self.count_include_pad is not None}


@irdl_op_definition
class BlockedGlobalAvgPoolOp(BlockedChannelOp):
    """`graph.global_avg_pool` on a blocked tensor: [N, C/b, H, W, b] -> [N, C/b, 1, 1, b],
    the mean over H and W of each channel.

        %g = graph.blocked_global_avg_pool %x layout "NCHW8c" : (tensor<1x2x7x7x8xf32>) -> tensor<1x2x1x1x8xf32>
    """

    name = "graph.blocked_global_avg_pool"

    input = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input `layout` $layout attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, block: int):
        input = SSAValue.get(input)
        x = static_shape(input)
        super().__init__(
            operands=[input],
            properties={"layout": StringAttr(blocked_layout(block))},
            result_types=[tensor_type_like(input.type, (x[0], x[1], 1, 1, x[4]))],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        block = self._check_layout("layout", self.layout.data)
        self._check_blocked(self.input, block, "input")
        x = static_shape(self.input)
        return (x[0], x[1], 1, 1, x[4])

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        return [x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(x.dtype)]


OPS = (
    LayoutTransformOp,
    BlockedConvOp,
    BlockedMaxPoolOp,
    BlockedAvgPoolOp,
    BlockedGlobalAvgPoolOp,
)

__all__ = [
    "BlockedAvgPoolOp",
    "BlockedChannelOp",
    "BlockedConvOp",
    "BlockedGlobalAvgPoolOp",
    "BlockedMaxPoolOp",
    "BlockedPoolOp",
    "KernelBlocks",
    "Layout",
    "LayoutTransformOp",
    "blocked_kernel_layout",
    "blocked_layout",
    "layout_transform_shape",
    "parse_blocked_kernel_layout",
    "parse_blocked_layout",
    "relaid",
    "transform_layout",
]
