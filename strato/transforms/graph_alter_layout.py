"""graph-alter-layout: run chains of 2-D convolutions in the blocked layout NCHW{c}.

A convolution whose input and output channels are multiples of a block becomes a
`graph.blocked_conv` on [N, C/b, H, W, b] tensors, with
its constant weight re-laid out at compile time into OIHW{b}i{b}o (depthwise:
OIHW1i{b}o). Groups are fine when the blocks tile them, or when the convolution is
depthwise. The output channels of a block are innermost, as in TVM's OIHW{b}i{b}o: the
conv2d NCHW{c} schedule makes the output-channel block its vector lanes, so the weights
of one (input channel, kh, kw) for a block of output channels are one contiguous vector
load, and constant weights are laid out so once, when constants are folded, instead of
being repacked by every call (strato/strategies/blocked.py reads either order; both are
valid `graph.blocked_conv` IR). The ops between such convolutions follow them into the
blocked layout:

- element-wise ops (relu, clip, ...) work on blocked tensors as they are;
- broadcasting binary ops (a residual add, a per-channel scale or shift) take their
  other operand blocked: a constant is re-laid out at compile time ([C, 1, 1] becomes
  [C/b, 1, 1, b]), a full-size NCHW tensor goes through a layout transform;
- max, average and global average pooling become their blocked variants (a mean over
  H and W that keeps them is a global average pool);
- a concatenation along the channels whose inputs all have the block of its result
  concatenates the blocked tensors along their channel-block axis (DenseNet's dense
  blocks, SqueezeNet's fire modules, DeepLabV3's ASPP); one along H or W, along the
  same axis; a slice keeping every channel slices the blocked tensor alike.

The block of a tensor follows from its channel count: the largest of `block`, `block`/2,
... down to `min_block` (options; defaults 8 and 8) that divides it. With block=16
min_block=8, a 24-channel tensor is NCHW8c and a 144-channel one NCHW16c, and a
convolution between them reads 8-channel blocks and writes 16-channel blocks: networks
whose widths are multiples of 8 but not all of 16 (MobileNetV2's 24 and 56 channel
stages) stay blocked from end to end instead of leaving the layout at every such stage.
A grouped convolution's input and result (and the values that must share their block:
`group_limits`) take the largest such block that also divides its channels per group,
when one does: ResNeXt's and RegNet's groups of 8 or 24 channels run blocked, in
NCHW8c, between 1x1 convolutions that read and write NCHW16c (one thread: RegNetY-400MF
0.81x -> 0.72x onnxruntime's time, RegNetY-1.6GF 0.91x -> 0.80x, ResNeXt-101 32x8d
1.02x -> 0.98x).
A convolution (not grouped) whose input has fewer channels than `min_block`, a
network's first layer reading an RGB image, reads them as one block (NCHW3c) and
writes blocks, so that layer and the pooling after it run blocked too (ResNet-18's stem
convolution, one thread: 1.81 -> 1.36 ms; its max pool, blocked: 0.96 -> 0.19 ms).

A convolution whose output rows have more than 28 columns and no divisor of them
between 7 and 14 (the template's register tile: `rows` columns) computes its rows
padded to the fewest columns that tiles of 7 to 14 columns cover: its input gets more
zero padding on the right and a slice drops the extra columns (SqueezeNet's stem: 109
columns, a prime, computed as 110 in tiles of 11; padded, it went from 4.0x to 1.5x
onnxruntime's time on one thread, the two measured in turns; the slice is a second
pass over the output that the tile's copy does not absorb). A row that tiles of 7
cover (Inception's 147 and 35 columns) is not padded: padded to whole tiles of 14 it
computed 5-20% more columns, and Inception-v3 took 1.05x onnxruntime's time on one
thread, against 0.97x now.

`graph.layout_transform` ops are inserted only at the boundaries of a chain: where an
NCHW value enters it (once per value) and where a blocked value leaves it for an NCHW
consumer or a function result (once per value). A convolution that begins a chain with
a 1x1 window, or with an input larger than its weights, reads its NCHW input as it is
instead: in blocks of one channel (NCHW1c, the same bytes), through a unit-block view
that graph-fuse-ops puts in its kernel and te-inline-stages reads through, so no kernel
copies the input (`_reads_input_directly`; a network's stem reads the image so). Ops
of other kinds, convolutions whose channels the block does not divide and everything
not 2-D stay as they are. Run it
after graph-simplify-inference (batch normalization is then folded or a per-channel
mul/add) and before graph-fuse-ops: the blocked ops keep the pattern kinds of their
NCHW counterparts, so a convolution still fuses with its bias, relu and residual add.

Requires: functions of graph ops. Leaves illegal: nothing.

Before (block=8):

    %w = graph.constant dense<...> : tensor<16x16x3x3xf32>
    %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
    %r = graph.relu %y : tensor<1x16x8x8xf32>
    func.return %r : tensor<1x16x8x8xf32>

After:

    %x.blocked = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x8x8xf32>) -> tensor<1x2x8x8x8xf32>
    %w = graph.constant dense<...> : tensor<2x2x3x3x8x8xf32>
    %y = graph.blocked_conv %x.blocked, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (...) -> tensor<1x2x8x8x8xf32>
    %r = graph.relu %y : tensor<1x2x8x8x8xf32>
    %r_1 = graph.layout_transform %r from "NCHW8c" to "NCHW" : (tensor<1x2x8x8x8xf32>) -> tensor<1x16x8x8xf32>
    func.return %r_1 : tensor<1x16x8x8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import gcd, prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph import (
    blocked_kernel_layout,
    blocked_layout,
    relaid,
    static_shape,
)
from strato.dialects.tensor_types import (
    array_from_dense,
    dense_from_array,
    tensor_type_like,
)

NCHW = "NCHW"
OIHW = "OIHW"


def _blocked_shape(shape: tuple[int, ...], block: int) -> tuple[int, ...]:
    return (shape[0], shape[1] // block, shape[2], shape[3], block)


TILE_COLUMNS = 14
"""Output columns of the conv2d NCHW{c} template's register tile (its `rows` knob)."""


def _columns_to_tile(width: int) -> int:
    """Extra output columns that make a row of `width` columns whole tiles of 7 to
    TILE_COLUMNS columns, as few as can (a prime width such as SqueezeNet's 109 would
    otherwise be computed one column at a time; 71 becomes 72, tiles of 12); 0 when such
    a tile divides `width`, or when the row is short enough (two tiles' columns) for the
    template to make it one tile. The template's tile is then the largest divisor of the
    padded width up to TILE_COLUMNS, which is at least 7."""
    if width <= 2 * TILE_COLUMNS:
        return 0
    sizes = range(TILE_COLUMNS // 2, TILE_COLUMNS + 1)
    return min(-(-width // size) * size for size in sizes) - width


def _renamed(value: SSAValue, suffix: str) -> str | None:
    return None if value.name_hint is None else f"{value.name_hint}{suffix}"


def _reads_input_directly(conv: graph.ConvOp) -> bool:
    """Whether `conv`, when a chain begins at it, reads its NCHW input as it is, in
    blocks of one input channel (NCHW1c), rather than after a layout transform: when its
    window is 1x1, or when its input is larger than its weights.

    The transform is a pass over the input, which the direct read saves. But the
    template then sums the input channels innermost, and with a window the weights of
    consecutive channels are a window apart (OIHW1i16o), which costs when the weights
    are the larger stream. One thread, ResNet-18's layers, against the transform: 1x1
    layers C3, C5, C8, C11 5-15% faster, C4 (56x56x64, 3x3 stride 2) 4%, the stem C1
    the same; C12 (7x7x512, 9.4 MB of weights) up to 8% slower, so it keeps the
    transform."""
    kernel = static_shape(conv.weight)
    if tuple(kernel[2:]) == (1, 1):
        return True
    return prod(static_shape(conv.input)) >= prod(kernel)


@dataclass
class LayoutRewriter:
    """Moves the ops of one block into the blocked layout, in program order.

    `blocked` maps an NCHW value to its blocked twin: the result of the blocked op that
    replaced its producer (`produced` lists those values: the chains), or a layout
    transform of it (an entry into a chain). Element-wise ops and pools join a chain
    only when it produced their input: following an entry transform would add an exit
    transform for nothing. `replaced` lists the original ops, erased at the end once no
    NCHW consumer reads them any more.
    """

    block: Block
    size: int
    min_size: int
    blocked: dict[SSAValue, SSAValue] = field(default_factory=dict)
    produced: list[SSAValue] = field(default_factory=list)
    chain: set[SSAValue] = field(default_factory=set)
    replaced: list[Operation] = field(default_factory=list)
    constants: dict[tuple[SSAValue, str], SSAValue] = field(default_factory=dict)
    dropped: dict[SSAValue, graph.SliceOp] = field(default_factory=dict)
    """Blocked values that are a slice dropping a wide convolution's extra columns: the
    slice, which element-wise ops it feeds are moved under."""
    limits: dict[SSAValue, int] = field(default_factory=dict)
    """What the block of a value must divide (`group_limits`): the channels per group of
    the grouped convolutions that read or write it, or a value sharing its block."""

    def block_of(self, channels: int) -> int | None:
        """The block of a tensor with `channels` channels: the largest of size, size/2,
        ... (not below min_size) dividing them; None when none does."""
        size = self.size
        while size >= max(self.min_size, 1):
            if channels % size == 0:
                return size
            size //= 2
        return None

    def value_block(self, value: SSAValue) -> int | None:
        """The block of an [N, C, H, W] value; None for other shapes or channels. A
        value a grouped convolution reads or writes takes a block that divides its
        channels per group when one does (not below min_size)."""
        shape = static_shape(value)
        if len(shape) != 4:
            return None
        limit = self.limits.get(value)
        if limit is not None:
            block = self.block_of(gcd(shape[1], limit))
            if block is not None:
                return block
        return self.block_of(shape[1])

    def layout_of(self, value: SSAValue) -> str:
        block = self.value_block(value)
        assert block is not None
        return blocked_layout(block)

    # -- values -------------------------------------------------------------------

    def _insert_after_definition(self, value: SSAValue, op: Operation) -> None:
        owner = value.owner
        if isinstance(owner, Operation):
            Rewriter.insert_op(op, InsertPoint.after(owner))
        else:
            Rewriter.insert_op(op, InsertPoint.at_start(self.block))

    def entered(self, value: SSAValue, block: int | None = None) -> SSAValue:
        """The blocked twin of the NCHW `value` (a layout transform, made once), in
        blocks of `block` channels (default: the block of its channel count)."""
        if value in self.blocked:
            return self.blocked[value]
        layout = self.layout_of(value) if block is None else blocked_layout(block)
        constant = self._relaid_constant(value, NCHW, layout)
        if constant is not None:
            self.blocked[value] = constant
            return constant
        transform = graph.LayoutTransformOp(value, NCHW, layout)
        transform.result.name_hint = _renamed(value, ".blocked")
        self._insert_after_definition(value, transform)
        self.blocked[value] = transform.result
        return transform.result

    def _relaid_constant(self, value: SSAValue, src: str, dst: str) -> SSAValue | None:
        """A constant holding the constant `value` laid out in `dst` (made once), or
        None when no graph.constant defines `value`."""
        if not isinstance(value.owner, graph.ConstantOp):
            return None
        key = (value, dst)
        if key not in self.constants:
            # a view of the weights, laid out by the copy into the new attribute
            array = relaid(array_from_dense(value.owner.value, copy=False), src, dst)
            self.constants[key] = self._constant_after(value, array)
        return self.constants[key]

    def _constant_after(self, value: SSAValue, array: np.ndarray) -> SSAValue:
        assert isinstance(value.type, TensorType)
        constant = graph.ConstantOp(dense_from_array(array, value.type.element_type))
        constant.result.name_hint = value.name_hint
        self._insert_after_definition(value, constant)
        return constant.result

    def broadcast_operand(
        self, value: SSAValue, result_shape: tuple[int, ...], block: int
    ) -> SSAValue | None:
        """`value`, an operand of a broadcasting op whose NCHW result has `result_shape`
        in blocks of `block`, as the operand of its blocked variant; None when it has
        none (a non-constant tensor that broadcasts)."""
        if value in self.blocked:
            return self.blocked[value]
        shape = static_shape(value)
        if shape == result_shape:
            return self.entered(value)
        if not isinstance(value.owner, graph.ConstantOp):
            return None
        if not shape:
            return value  # a scalar broadcasts to any layout
        layout = blocked_layout(block)
        key = (value, layout)
        if key not in self.constants:
            full = (1,) * (4 - len(shape)) + shape
            array = array_from_dense(value.owner.value, copy=False).reshape(full)
            if full[1] == 1:
                array = array.reshape((full[0], 1, full[2], full[3], 1))
            else:
                array = relaid(array, NCHW, layout)
            self.constants[key] = self._constant_after(value, array)
        return self.constants[key]

    # -- ops ----------------------------------------------------------------------

    def in_chain(self, value: SSAValue) -> bool:
        """Did a blocked op replace the producer of `value`?"""
        return value in self.chain

    def _replace(self, op: Operation, new: Operation) -> None:
        """Put `new` (the blocked variant of `op`) after `op`; NCHW users of `op` are
        moved to a layout transform of it at the end."""
        Rewriter.insert_op(new, InsertPoint.after(op))
        for old, result in zip(op.results, new.results):
            result.name_hint = old.name_hint
            self.blocked[old] = result
            self.produced.append(old)
            self.chain.add(old)
        self.replaced.append(op)

    def _blocked_type(self, value: SSAValue) -> TensorType:
        block = self.value_block(value)
        assert block is not None
        return tensor_type_like(value.type, _blocked_shape(static_shape(value), block))

    def _clone(
        self, op: Operation, operands: list[SSAValue], result_types: list[Attribute] | None = None
    ) -> Operation:
        """`op` on `operands`, its results of `result_types` (by default the blocked
        types of its results)."""
        return type(op).create(
            operands=operands,
            result_types=result_types or [self._blocked_type(r) for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )

    def visit(self, op: Operation) -> None:
        if isinstance(op, graph.ConvOp):
            self.visit_conv(op)
        elif isinstance(op, graph.UnaryElementwiseOp) and self.in_chain(op.input):
            self.visit_unary(op)
        elif isinstance(op, graph.BroadcastBinaryOp):
            self.visit_binary(op)
        elif isinstance(op, (graph.MaxPoolOp, graph.AvgPoolOp)):
            self.visit_pool(op)
        elif isinstance(op, graph.ConcatOp):
            self.visit_concat(op)
        elif isinstance(op, graph.SliceOp):
            self.visit_slice(op)
        elif self._is_global_mean(op) and self.in_chain(op.operands[0]):
            block = self.value_block(op.operands[0])
            assert block is not None
            self._replace(op, graph.BlockedGlobalAvgPoolOp(self.blocked[op.operands[0]], block))

    @staticmethod
    def _is_global_mean(op: Operation) -> bool:
        """A global average pool, or the mean over H and W keeping them (what exporters
        write for `adaptive_avg_pool2d(x, 1)`: squeeze-and-excitation blocks)."""
        if isinstance(op, graph.GlobalAvgPoolOp):
            return True
        return (
            isinstance(op, graph.ReduceMeanOp)
            and op.keeps_dims
            and op.axis_values == (2, 3)
            and len(static_shape(op.input)) == 4
            and isinstance(op.input.type, TensorType)
            and isinstance(op.input.type.element_type, AnyFloat)
        )

    def visit_conv(self, op: graph.ConvOp) -> None:
        in_block, out_block = self.value_block(op.input), self.value_block(op.result)
        outputs, per_group = static_shape(op.weight)[:2]
        groups, channels = op.group_count, static_shape(op.input)[1]
        if in_block is None and groups == 1 and channels < self.min_size:
            in_block = channels  # a network's first layer (RGB): its channels are one block
        if in_block is None or out_block is None:
            return
        direct = groups == 1 and self._enters_chain(op.input) and _reads_input_directly(op)
        if direct:
            # the chain begins here: read the NCHW input as it is (NCHW1c, the same
            # bytes) instead of transforming it first
            in_block = 1
        depthwise = op.is_depthwise
        tiled = per_group % in_block == 0 and (outputs // groups) % out_block == 0
        if not depthwise and not tiled:
            return
        # output channels innermost: they are the vector lanes of the schedule, so a
        # weight vector is contiguous without repacking the weights at run time
        order = "io"
        kernel_in = 1 if depthwise else in_block
        kernel_layout = blocked_kernel_layout(kernel_in, out_block, order)
        weight = self._relaid_constant(op.weight, OIHW, kernel_layout)
        if weight is None:
            transform = graph.LayoutTransformOp(op.weight, OIHW, kernel_layout)
            self._insert_after_definition(op.weight, transform)
            weight = transform.result
        padding = list(op.padding.get_values())
        width = static_shape(op.result)[3]
        extra = _columns_to_tile(width)
        # the extra output columns read zeros padded on the right, then are dropped
        padding[3] += extra * op.stride_values[1]
        new = graph.BlockedConvOp(
            self._read_directly(op) if direct else self.entered(op.input, in_block),
            weight,
            op.bias,
            strides=op.stride_values,
            padding=tuple(padding),
            dilations=op.dilation_values,
            groups=groups,
            in_block=in_block,
            out_block=out_block,
            kernel_order=order,
        )
        if not extra:
            self._replace(op, new)
            return
        new.result.name_hint = _renamed(op.result, ".wide")
        Rewriter.insert_op(new, InsertPoint.before(op))
        self._replace(op, self._dropping_columns(new.result, width))

    def _enters_chain(self, value: SSAValue) -> bool:
        """Whether a convolution reading `value` would begin a chain: no blocked twin
        of it exists, and it is not a constant."""
        return value not in self.blocked and not isinstance(value.owner, graph.ConstantOp)

    def _read_directly(self, conv: graph.ConvOp) -> SSAValue:
        """The NCHW input of `conv` as NCHW1c: the same bytes, which graph-fuse-ops
        fuses into the convolution reading it, so no kernel copies them (one such op per
        reader, each fused into its own)."""
        transform = graph.LayoutTransformOp(conv.input, NCHW, blocked_layout(1))
        transform.result.name_hint = _renamed(conv.input, ".direct")
        Rewriter.insert_op(transform, InsertPoint.before(conv))
        return transform.result

    def _dropping_columns(self, wide: SSAValue, width: int) -> graph.SliceOp:
        """The first `width` columns of the blocked `wide` value, as a slice."""
        shape = static_shape(wide)
        drop = graph.SliceOp(wide, (0,) * 5, (1,) * 5, (*shape[:3], width, shape[4]))
        self.dropped[drop.result] = drop
        return drop

    def visit_unary(self, op: graph.UnaryElementwiseOp) -> None:
        """An element-wise op in a chain. One reading a wide convolution's columns (a
        slice dropping the extra ones) applies to the wide value, and the slice comes
        after it: the op then folds into the convolution's tile copy-out, and the slice
        into the reader of its result, instead of the slice and the op making a pass of
        their own over the output."""
        operand = self.blocked[op.input]
        drop = self.dropped.get(operand)
        if drop is None:
            self._replace(op, self._clone(op, [operand]))
            return
        wide = self._clone(op, [drop.input], [drop.input.type])
        Rewriter.insert_op(wide, InsertPoint.before(op))
        wide.results[0].name_hint = _renamed(op.results[0], ".wide")
        self._replace(op, self._dropping_columns(wide.results[0], static_shape(drop.result)[3]))

    def visit_binary(self, op: graph.BroadcastBinaryOp) -> None:
        result_shape = static_shape(op.result)
        block = self.value_block(op.result)
        if block is None:
            return
        # a chain must lead here, at the full shape
        if not any(self.in_chain(v) and static_shape(v) == result_shape for v in op.operands):
            return
        operands = [self.broadcast_operand(v, result_shape, block) for v in op.operands]
        if any(v is None for v in operands):
            return
        self._replace(op, self._clone(op, operands))  # type: ignore[arg-type]

    def visit_pool(self, op: graph.MaxPoolOp | graph.AvgPoolOp) -> None:
        if not self.in_chain(op.input):
            return
        options = {
            "strides": op.stride_values,
            "padding": tuple(op.padding.get_values()),
            "dilations": op.dilation_values,
            "ceil_mode": op.is_ceil_mode,
            "block": self.value_block(op.input),
        }
        x = self.blocked[op.input]
        if isinstance(op, graph.MaxPoolOp):
            new: Operation = graph.BlockedMaxPoolOp(x, op.kernel_shape, **options)
        else:
            new = graph.BlockedAvgPoolOp(
                x, op.kernel_shape, count_include_pad=op.counts_padding, **options
            )
        self._replace(op, new)

    def visit_concat(self, op: graph.ConcatOp) -> None:
        """A channel concatenation whose inputs all have the block of its result joins
        along the block axis: [N, C/b, H, W, b] tensors concatenated on axis 1 are the
        blocked result, so a DenseNet or SqueezeNet stage stays blocked through it. One
        along H or W (the regions of a split convolution) joins the same axis."""
        shape = static_shape(op.result)
        if len(shape) != 4 or op.axis_value % 4 == 0:
            return
        block = self.value_block(op.result)
        if block is None or not any(self.in_chain(v) for v in op.inputs):
            return
        if any(self.value_block(v) != block for v in op.inputs):
            return
        inputs = [self.entered(v) for v in op.inputs]
        self._replace(op, graph.ConcatOp(inputs, op.axis_value % 4))

    def visit_slice(self, op: graph.SliceOp) -> None:
        """A slice that keeps every channel (a window of H and W) slices the blocked
        tensor the same way."""
        shape, result = static_shape(op.input), static_shape(op.result)
        if len(shape) != 4 or not self.in_chain(op.input):
            return
        starts, steps = op.start_values, op.step_values
        if (starts[1], steps[1], result[1]) != (0, 1, shape[1]):
            return
        block = self.value_block(op.input)
        assert block is not None
        blocked = _blocked_shape(result, block)
        self._replace(
            op, graph.SliceOp(self.blocked[op.input], (*starts, 0), (*steps, 1), blocked)
        )

    # -- the chain's exits ------------------------------------------------------------

    def finish(self) -> None:
        """Give NCHW consumers of blocked values a layout transform back to NCHW, then
        erase the replaced ops (users first)."""
        replaced = set(self.replaced)
        for value in self.produced:
            outside = [u for u in value.uses if u.operation not in replaced]
            if not outside:
                continue
            twin = self.blocked[value]
            layout = blocked_layout(static_shape(twin)[-1])
            transform = graph.LayoutTransformOp(twin, layout, NCHW)
            transform.result.name_hint = value.name_hint
            self._insert_after_definition(twin, transform)
            value.replace_uses_with_if(
                transform.result, lambda use: use.operation not in replaced
            )
        for op in reversed(self.replaced):
            Rewriter.erase_op(op)
        for drop in self.dropped.values():
            if not drop.result.uses:  # an element-wise op took its place
                Rewriter.erase_op(drop)
        for owner in {value.owner for value, _ in self.constants}:
            if isinstance(owner, graph.ConstantOp) and not owner.result.uses:
                Rewriter.erase_op(owner)


def _shares_block(op: Operation) -> list[SSAValue]:
    """The [N, C, H, W] values `op` reads and writes that must share one block once it
    is blocked: an element-wise op's, a pool's (a global mean's too), a slice's, and a
    concatenation's inputs and result (their blocks are compared, not their counts)."""
    if isinstance(
        op,
        graph.UnaryElementwiseOp
        | graph.BroadcastBinaryOp
        | graph.MaxPoolOp
        | graph.AvgPoolOp
        | graph.ConcatOp
        | graph.SliceOp,
    ) or LayoutRewriter._is_global_mean(op):
        values = [*op.operands, *op.results]
        return [v for v in values if isinstance(v.type, TensorType) and len(static_shape(v)) == 4]
    return []


def group_limits(block: Block) -> dict[SSAValue, int]:
    """What the block of each value must divide for the grouped convolutions (not
    depthwise) of `block` to be blocked: a block tiles a convolution's groups when it
    divides its input channels per group and its output channels per group, so its
    input takes the first as a limit, its result the second, and so does every value
    that must share a block with one of them (through element-wise ops, pools, slices
    and concatenations; the greatest common divisor where several meet). ResNeXt's
    32 groups of 8 channels then run in NCHW8c between two 1x1 convolutions that read
    and write NCHW16c, instead of leaving the blocked layout around each of them."""
    parent: dict[SSAValue, SSAValue] = {}

    def find(value: SSAValue) -> SSAValue:
        root = value
        while parent.get(root, root) is not root:
            root = parent[root]
        while value is not root:
            value, parent[value] = parent[value], root
        return root

    limit_of: dict[SSAValue, int] = {}
    for op in block.ops:
        shared = _shares_block(op)
        for other in shared[1:]:
            a, b = find(shared[0]), find(other)
            if a is not b:
                parent[b] = a
                if b in limit_of:
                    limit_of[a] = gcd(limit_of.get(a, 0), limit_of.pop(b))
        if isinstance(op, graph.ConvOp) and op.group_count > 1 and not op.is_depthwise:
            outputs, per_group = static_shape(op.weight)[:2]
            for value, limit in ((op.input, per_group), (op.result, outputs // op.group_count)):
                root = find(value)
                limit_of[root] = gcd(limit_of.get(root, 0), limit)
    limits: dict[SSAValue, int] = {}
    for value in [*parent, *limit_of]:
        root = find(value)
        if root in limit_of:
            limits[value] = limit_of[root]
    return limits


def alter_layout(block: Block, size: int, min_size: int | None = None) -> None:
    """Move the 2-D convolution chains of `block` into the blocked layouts: NCHW{b}c
    with b the largest of size, size/2, ... (not below min_size, default size) that
    divides a tensor's channels."""
    rewriter = LayoutRewriter(
        block, size, size if min_size is None else min_size, limits=group_limits(block)
    )
    for op in list(block.ops):
        if isinstance(op, graph.GraphOp) and not isinstance(op, graph.FusedOp):
            rewriter.visit(op)
    rewriter.finish()


@dataclass(frozen=True)
class GraphAlterLayoutPass(ModulePass):
    """Run chains of 2-D convolutions (and the ops between them) in the blocked layout
    NCHW{block}c, with layout transforms only where a chain begins or ends."""

    name = "graph-alter-layout"

    block: int = 8
    min_block: int = 8

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.block < 1:
            raise StratoError(f"graph-alter-layout: block must be positive, got {self.block}")
        if self.min_block < 1:
            raise StratoError(
                f"graph-alter-layout: min_block must be positive, got {self.min_block}"
            )
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            alter_layout(function.body.block, self.block, min(self.min_block, self.block))


__all__ = ["GraphAlterLayoutPass", "alter_layout"]
