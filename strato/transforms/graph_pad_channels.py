"""graph-pad-channels: give convolutions an output channel count the vector lanes divide.

The CPU's convolution schedules make the output channels their vector lanes: blocks of
16 in the blocked NCHW{c} layout (graph-alter-layout), vectors of 16 in conv3d's tile.
A convolution whose output channels no block of at least `min_multiple` divides (58,
116, 230, 921: what R(2+1)D's and ShuffleNet's width formulas give) falls back to
schedules several times slower (R(2+1)D's 64 -> 230 channel 1x3x3 convolution: 179 ms
against 16 ms at 240 channels on one thread). One that blocks of `min_multiple`
divide runs on vectors of that many lanes, half of them (SqueezeNet's classifier, 512
-> 1000 channels over 13 x 13: 1.56 ms in blocks of 8 on one thread, 0.85 ms padded to
1008). This pass pads such a convolution's
output channels up to a multiple of `multiple`: its constant weight gains rows of zeros
and its bias zeros, so the channels added hold zeros. The channels it keeps are exactly
the ones it had.

The padded tensor then flows on as far as its consumers can take it, so no copy drops
the added channels between two convolutions:

- a convolution reading it (groups 1) gains zero weights for the added input channels;
- a depthwise convolution gains as many groups, of zero weights and bias;
- element-wise ops (unary, or binary with another padded tensor or a constant that
  varies along the channels only, padded with zeros), max pooling and global average
  pooling compute on the added channels too.

The added channels of every padded tensor hold one value (zeros after a convolution,
then what the element-wise ops make of it), which the pass computes with each op's
reference semantics: an op that would make it infinite or NaN (a log of zero) is not
padded through. Any other consumer, and the function's results, read a `graph.slice`
of the channels the tensor had. Whenever the inputs are finite the padded channels are,
so the zero weights reading them add exact zeros.

Only `graph.conv` ops in a channel-first layout with a constant weight (and a constant
bias or none) change, and only when the padding adds at most `max_extra_percent` of the
channels (`narrow_extra_percent` for channels blocks of `min_multiple` divide). Run it after constants are folded (batch norms folded into the weights) and
before graph-alter-layout.

Requires: functions of graph ops. Leaves illegal: nothing.

Before:

    %y = graph.conv %x, %w, %b ... : (tensor<1x16x8x8xf32>, tensor<58x16x1x1xf32>, tensor<58xf32>) -> tensor<1x58x8x8xf32>
    %r = graph.relu %y : tensor<1x58x8x8xf32>
    %z = graph.conv %r, %v ... : (tensor<1x58x8x8xf32>, tensor<32x58x1x1xf32>) -> tensor<1x32x8x8xf32>

After (`multiple=16 min_multiple=8`):

    %y = graph.conv %x, %w64, %b64 ... : (tensor<1x16x8x8xf32>, tensor<64x16x1x1xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
    %r = graph.relu %y : tensor<1x64x8x8xf32>
    %z = graph.conv %r, %v64 ... : (tensor<1x64x8x8xf32>, tensor<32x64x1x1xf32>) -> tensor<1x32x8x8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like
from strato.transforms.graph_simplify_inference import constant_array, make_constant

CHANNELS = 1
"""The channel axis of the channel-first layouts."""


@dataclass(frozen=True)
class Padded:
    """The padded twin of a tensor: `value` has `padded` channels where the tensor had
    `channels`; every added channel holds `fill`."""

    value: SSAValue
    channels: int
    fill: float

    @property
    def padded(self) -> int:
        return static_shape(self.value)[CHANNELS]


def padded_channels(
    channels: int, multiple: int, min_multiple: int, max_extra_percent: int, narrow_extra_percent: int
) -> int | None:
    """The channels a convolution's `channels` outputs are padded to, or None when
    `multiple` divides them or the padding would add more than `max_extra_percent` of
    them (`narrow_extra_percent` when blocks of `min_multiple`, narrower vectors, divide
    them)."""
    if channels % multiple == 0:
        return None
    padded = -(-channels // multiple) * multiple
    bound = narrow_extra_percent if channels % min_multiple == 0 else max_extra_percent
    if (padded - channels) * 100 > bound * channels:
        return None
    return padded


def _padded_array(array: np.ndarray, axis: int, size: int) -> np.ndarray:
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, size - array.shape[axis])
    return np.pad(array, widths)


def _channel_first(op: Operation) -> bool:
    layout = op.properties.get("layout")
    return layout is not None and str(getattr(layout, "data", "")).startswith("NC")


class ChannelPadder:
    """Pads the convolutions of one block and carries the padded tensors on, in
    program order."""

    def __init__(
        self, block: Block, multiple: int, min_multiple: int, max_extra_percent: int, narrow_extra_percent: int
    ):
        self.block = block
        self.multiple = multiple
        self.min_multiple = min_multiple
        self.max_extra_percent = max_extra_percent
        self.narrow_extra_percent = narrow_extra_percent
        self.padded: dict[SSAValue, Padded] = {}
        """The slice standing for each padded tensor -> its padded twin."""

    def run(self) -> None:
        for op in list(self.block.ops):
            if isinstance(op, graph.ConvOp):
                self.visit_conv(op)
            elif any(operand in self.padded for operand in op.operands):
                self.visit_carrier(op)
        for window in self.padded:
            owner = window.owner
            if isinstance(owner, Operation) and not window.uses:
                Rewriter.erase_op(owner)

    @staticmethod
    def _insert_constant(array: np.ndarray, like: SSAValue, before: Operation) -> SSAValue:
        constant = make_constant(array, like, like.name_hint)
        Rewriter.insert_op(constant, InsertPoint.before(before))
        return constant.result

    # -- the ops --------------------------------------------------------------------

    def visit_conv(self, op: graph.ConvOp) -> None:
        weight, bias = constant_array(op.weight), constant_array(op.bias)
        if weight is None or (op.bias is not None and bias is None) or not _channel_first(op):
            return
        source = self.padded.get(op.input)
        groups = op.group_count
        outputs = weight.shape[0]
        depthwise = op.is_depthwise
        if source is not None and groups == 1:
            weight = _padded_array(weight, 1, source.padded)
        elif source is not None and depthwise:
            groups = source.padded
            weight = _padded_array(weight, 0, source.padded)
        else:
            source = None
        target = None
        if groups == 1:
            target = padded_channels(
                outputs, self.multiple, self.min_multiple, self.max_extra_percent, self.narrow_extra_percent
            )
            if target is not None:
                weight = _padded_array(weight, 0, target)
        elif source is not None:
            target = source.padded
        if source is None and target is None:
            return
        if bias is not None and target is not None:
            bias = _padded_array(bias, 0, target)
        new = graph.ConvOp(
            source.value if source is not None else op.input,
            self._insert_constant(weight, op.weight, op),
            None if op.bias is None else self._insert_constant(bias, op.bias, op),
            strides=op.stride_values,
            padding=op.padding.get_values(),
            dilations=op.dilation_values,
            groups=groups,
        )
        new.attributes.update(op.attributes)
        old = [value.owner for value in (op.weight, op.bias) if value is not None]
        self._replace(op, new, outputs, target is not None, 0.0)
        for constant in old:
            if isinstance(constant, Operation) and not constant.results[0].uses:
                Rewriter.erase_op(constant)

    def visit_carrier(self, op: Operation) -> None:
        """An element-wise op or a pool reading a padded tensor: the same op on the
        padded twin, when it can take one."""
        if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
            return
        if not isinstance(op.results[0].type.element_type, AnyFloat):
            return
        if isinstance(op, graph.UnaryElementwiseOp):
            source = self.padded.get(op.input)
            assert source is not None
            self._carry(op, [source.value], source, [source.fill])
        elif isinstance(op, graph.MaxPoolOp | graph.GlobalAvgPoolOp) and _channel_first(op):
            source = self.padded.get(op.input)
            assert source is not None
            self._carry(op, [source.value], source, None)
        elif isinstance(op, graph.BroadcastBinaryOp):
            self.visit_binary(op)

    def visit_binary(self, op: graph.BroadcastBinaryOp) -> None:
        rank = len(static_shape(op.result))
        operands: list[SSAValue] = []
        fills: list[float] = []
        source: Padded | None = None
        for value in op.operands:
            twin = self.padded.get(value)
            if twin is not None:
                if len(static_shape(value)) != rank or (source is not None and twin.padded != source.padded):
                    return
                source = twin
                operands.append(twin.value)
                fills.append(twin.fill)
                continue
            operands.append(value)
            fills.append(0.0)
        assert source is not None
        for i, value in enumerate(op.operands):
            if value in self.padded:
                continue
            array = constant_array(value)
            shape = static_shape(value)
            axis = CHANNELS - (rank - len(shape))
            if array is None:
                return
            if axis >= 0 and shape[axis] == source.channels:
                if any(size != 1 for d, size in enumerate(shape) if d != axis):
                    return  # the added channels would not hold one value
                operands[i] = self._insert_constant(_padded_array(array, axis, source.padded), value, op)
            elif array.size != 1:
                return
            else:
                fills[i] = float(array.reshape(-1)[0])
        self._carry(op, operands, source, fills)

    def _carry(self, op: Operation, operands: list[SSAValue], source: Padded, fills: list[float] | None) -> None:
        result = op.results[0]
        shape = list(static_shape(result))
        shape[CHANNELS] = source.padded
        if fills is None:
            fill = source.fill
        else:
            fill = self._fill(op, fills)
            if fill is None:
                return
        new = type(op).create(
            operands=operands,
            result_types=[tensor_type_like(result.type, shape)],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        self._replace(op, new, source.channels, True, fill)

    @staticmethod
    def _fill(op: Operation, fills: list[float]) -> float | None:
        """What `op` makes of the added channels' values (None: not a finite value)."""
        assert isinstance(op, graph.GraphOp)
        dtypes = [numpy_dtype(value.type) for value in op.operands]
        with np.errstate(all="ignore"):
            value = op.evaluate([np.full((1,), fill, dtype) for fill, dtype in zip(fills, dtypes)])[0]
        value = np.asarray(value, dtype=np.float64).reshape(-1)
        if value.size != 1 or not np.isfinite(value[0]):
            return None
        return float(value[0])

    def _replace(self, op: Operation, new: Operation, channels: int, padded: bool, fill: float) -> None:
        """Put `new` in the place of `op`; when its result is padded, `op`'s consumers
        read a slice of it (dropped at the end when none is left)."""
        Rewriter.insert_op(new, InsertPoint.before(op))
        result = new.results[0]
        result.name_hint = op.results[0].name_hint
        if not padded:
            op.results[0].replace_all_uses_with(result)
            Rewriter.erase_op(op)
            return
        shape = static_shape(op.results[0])
        window = graph.SliceOp(result, (0,) * len(shape), (1,) * len(shape), shape)
        Rewriter.insert_op(window, InsertPoint.before(op))
        op.results[0].replace_all_uses_with(window.result)
        Rewriter.erase_op(op)
        self.padded[window.result] = Padded(result, channels, fill)


@dataclass(frozen=True)
class GraphPadChannelsPass(ModulePass):
    """Pad the output channels of convolutions to a multiple of the vector lanes."""

    name = "graph-pad-channels"

    multiple: int = 16
    """Output channels are padded to a multiple of this."""

    min_multiple: int = 8
    """Channels a multiple of this have blocks of it (narrower vectors) without the
    padding: they are padded only within `narrow_extra_percent`."""

    max_extra_percent: int = 12
    """The most channels the padding may add, in percent of the channels."""

    narrow_extra_percent: int = 12
    """The most the padding may add to channels a multiple of `min_multiple` (0: they
    are left as they are)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.multiple < 1 or self.min_multiple < 1:
            return
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            ChannelPadder(
                function.body.block, self.multiple, self.min_multiple, self.max_extra_percent,
                self.narrow_extra_percent,
            ).run()


__all__ = ["GraphPadChannelsPass", "padded_channels"]
