"""Converters for ONNX normalization operators: Softmax, LayerNormalization,
BatchNormalization, InstanceNormalization and GroupNormalization.

Instance and group normalization are layer normalization over a suitable view of the
input, followed by the per-channel affine map, so they share `graph.layer_norm`'s
strategy (and its fusion of the affine ops into the normalizing stage):

    InstanceNormalization(x: [N, C, H, W])  ->  layer_norm(x, axis 2) * scale[C, 1, 1] + B[C, 1, 1]
    GroupNormalization(x: [N, C, H, W], G)  ->  reshape to [N, G, C/G * H * W], layer_norm(axis 2),
                                                reshape back, * scale + bias (per channel)

Softmax normalizes over one axis from opset 13 on (default -1) and, before, over all axes
from `axis` on (the input "coerced" to 2D, default axis 1); both are `graph.softmax`
over a list of axes. When the input is known at import time the result is folded.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph import broadcast_shapes, normalization
from strato.dialects.graph.base import element_type
from strato.dialects.tensor_types import element_type_of, numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext

SOFTMAX_SINGLE_AXIS_OPSET = 13
"""The first opset in which Softmax normalizes over one axis only."""


def _axis(ctx: NodeContext, rank: int, default: int) -> int:
    """The `axis` attribute in [0, rank), or a diagnostic."""
    axis = ctx.attr("axis", default)
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute axis={axis} out of range for an input of rank {rank}")
    return axis % rank


def convert_softmax(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Softmax -> graph.softmax."""
    rank = len(ctx.shape(0))
    if rank == 0:
        raise ctx.error("input must have rank >= 1")
    if ctx.opset() >= SOFTMAX_SINGLE_AXIS_OPSET:
        axes = [_axis(ctx, rank, -1)]
    else:
        axes = list(range(_axis(ctx, rank, 1), rank))
    x = ctx.value(0)
    if isinstance(x, np.ndarray):
        return [np.require(normalization.softmax(x, axes), requirements="C")]
    return [ctx.emit(graph.SoftmaxOp(x, axes)).results[0]]


def convert_hardmax(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Hardmax -> 1 at the first maximum along the axis, 0 elsewhere, as
    graph.cast(graph.equal(graph.arg_max(x, keepdims), iota)). Before opset 13 the
    input is coerced to 2D at `axis` (default 1), as Softmax's is."""
    shape = ctx.shape(0)
    rank = len(shape)
    if rank == 0:
        raise ctx.error("input must have rank >= 1")
    if ctx.opset() >= SOFTMAX_SINGLE_AXIS_OPSET:
        return [_hardmax(ctx, ctx.operand(0), _axis(ctx, rank, -1))]
    axis = _axis(ctx, rank, 1)
    rows = math.prod(shape[:axis])
    flat = ctx.emit(graph.ReshapeOp(ctx.operand(0), (rows, math.prod(shape[axis:]))))
    result = _hardmax(ctx, flat.results[0], 1)
    return [ctx.emit(graph.ReshapeOp(result, shape)).results[0]]


def _hardmax(ctx: NodeContext, x: SSAValue, axis: int) -> SSAValue:
    shape = graph.static_shape(x)
    if shape[axis] == 0:
        return x
    index = ctx.emit(graph.ArgMaxOp(x, axis, keepdims=True)).results[0]
    iota_shape = [1] * len(shape)
    iota_shape[axis] = shape[axis]
    iota = np.arange(shape[axis], dtype=np.int64).reshape(iota_shape)
    hit = ctx.emit(graph.EqualOp(index, ctx.materialize(iota, "iota"))).results[0]
    return ctx.emit(graph.CastOp(hit, element_type(x))).results[0]


def convert_lrn(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX LRN -> x / (bias + alpha / size * square_sum)^beta, square_sum the sum of
    x^2 over the `size` channels around each one (floor((size - 1) / 2) before, the
    rest after, zeros past the edges): graph.pad of x * x along the channels and the sum
    of `size` shifted slices of it."""
    shape = ctx.shape(0)
    if len(shape) < 3:
        raise ctx.error(f"input must be [N, C, spatial..], got shape {list(shape)}")
    if not ctx.has_attr("size"):
        raise ctx.error("attribute size is required")
    size = int(ctx.attr("size"))
    if size < 1:
        raise ctx.error(f"attribute size={size} must be >= 1")
    alpha = ctx.float_attr("alpha", 1e-4)
    beta = ctx.float_attr("beta", 0.75)
    bias = ctx.float_attr("bias", 1.0)
    x = ctx.operand(0)
    dtype = numpy_dtype(x.type.element_type)

    def emit(op) -> SSAValue:
        return ctx.emit(op).results[0]

    def constant(value: float) -> SSAValue:
        return ctx.materialize(np.asarray(value, dtype=dtype))

    square = emit(graph.MulOp(x, x))
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    low = [0, before] + [0] * (len(shape) - 2)
    high = [0, after] + [0] * (len(shape) - 2)
    padded = emit(graph.PadOp(square, low, high)) if size > 1 else square
    total = None
    for offset in range(size):
        starts = [0, offset] + [0] * (len(shape) - 2)
        window = emit(graph.SliceOp(padded, starts, [1] * len(shape), shape))
        total = window if total is None else emit(graph.AddOp(total, window))
    scaled = emit(graph.MulOp(total, constant(alpha / size)))
    base = emit(graph.AddOp(scaled, constant(bias)))
    return [emit(graph.DivOp(x, emit(graph.PowOp(base, constant(beta)))))]


def convert_lp_normalization(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX LpNormalization (axis, default -1; p 1 or 2, default 2) -> x / the L1 or L2
    norm along the axis (graph.reduce_l1 / reduce_l2 keeping it), 0 where the norm is
    0 (as ONNX's reference)."""
    shape = ctx.shape(0)
    if not shape:
        raise ctx.error("input must have rank >= 1")
    axis = _axis(ctx, len(shape), -1)
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.error(f"attribute p={p} is not supported (1 or 2)")
    x = ctx.operand(0)
    norm_class = graph.ReduceL1Op if p == 1 else graph.ReduceL2Op
    norm = ctx.emit(norm_class(x, [axis], keepdims=True)).results[0]
    zero = ctx.materialize(np.zeros((), dtype=numpy_dtype(x.type.element_type)))
    is_zero = ctx.emit(graph.EqualOp(norm, zero)).results[0]
    quotient = ctx.emit(graph.DivOp(x, norm)).results[0]
    return [ctx.emit(graph.WhereOp(is_zero, zero, quotient)).results[0]]


def _requested_outputs(ctx: NodeContext) -> list[bool]:
    return [bool(name) for name in ctx.node.output]


def _epsilon(ctx: NodeContext) -> float:
    epsilon = ctx.float_attr("epsilon", 1e-5)
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ctx.error(f"attribute epsilon={epsilon} must be a finite, non-negative number")
    return epsilon


def convert_layer_normalization(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX LayerNormalization (opset 17) -> graph.layer_norm; the optional outputs Mean
    and InvStdDev are the op's two extra results."""
    shape = ctx.shape(0)
    if not shape:
        raise ctx.error("input must have rank >= 1")
    axis = _axis(ctx, len(shape), -1)
    epsilon = _epsilon(ctx)
    stash_type = ctx.attr("stash_type", 1)
    if stash_type != 1:
        raise ctx.error(
            f"attribute stash_type={stash_type} is not supported (statistics are computed "
            "in float32, stash_type=1)"
        )
    normalized = shape[axis:]
    params: list[ImportedValue | None] = []
    for index, what in ((1, "scale"), (2, "bias")):
        if not ctx.has_input(index):
            params.append(None)
            continue
        param = ctx.shape(index)
        if len(param) > len(normalized) or broadcast_shapes(param, normalized) != normalized:
            raise ctx.error(
                f"{what} of shape {list(param)} does not broadcast to the normalized "
                f"shape {list(normalized)}"
            )
        params.append(ctx.value(index))
    with_stats = any(_requested_outputs(ctx)[1:])
    x = ctx.value(0)
    if isinstance(x, np.ndarray) and all(p is None or isinstance(p, np.ndarray) for p in params):
        result, mean, inv_std_dev = normalization.layer_norm(x, axis, epsilon, *params)
        folded = [np.require(result, requirements="C")] + [
            np.require(a, np.float32, requirements="C") for a in (mean, inv_std_dev)
        ]
        return folded if with_stats else folded[:1]
    scale, bias = (
        ctx.operand(index) if param is not None else None
        for index, param in zip((1, 2), params)
    )
    op = ctx.emit(
        graph.LayerNormOp(
            ctx.operand(0), axis, epsilon, scale=scale, bias=bias, with_stats=with_stats
        )
    )
    results = list(op.results)
    # Mean and InvStdDev have the stash type (float32), whatever the input's type.
    for n in range(1, len(results)):
        if element_type(results[n]) != f32:
            results[n] = ctx.emit(graph.CastOp(results[n], f32)).results[0]
    return results


class _FoldingEmitter:
    """Builds a computation out of graph ops, or computes it in numpy when every operand
    of a step is known at import time (with the op's own reference semantics)."""

    def __init__(self, ctx: NodeContext, dtype: np.dtype):
        self.ctx = ctx
        self.dtype = dtype

    def scalar(self, value: float) -> np.ndarray:
        return np.asarray(value, dtype=self.dtype)

    def _operand(self, value: ImportedValue) -> SSAValue:
        if isinstance(value, np.ndarray):
            return self.ctx.materialize(value)
        return value

    def _folded(self, result: np.ndarray) -> np.ndarray:
        return np.require(result, dtype=self.dtype, requirements="C")

    def binary(
        self, op_class: type[graph.BroadcastBinaryOp], lhs: ImportedValue, rhs: ImportedValue
    ) -> ImportedValue:
        if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
            with np.errstate(all="ignore"):
                return self._folded(op_class.compute(lhs, rhs))
        op = op_class(self._operand(lhs), self._operand(rhs))
        return self.ctx.emit(op).results[0]

    def sqrt(self, x: ImportedValue) -> ImportedValue:
        if isinstance(x, np.ndarray):
            with np.errstate(all="ignore"):
                return self._folded(graph.SqrtOp.compute(x))
        return self.ctx.emit(graph.SqrtOp(x)).results[0]

    def mean(self, x: ImportedValue, axes: list[int]) -> ImportedValue:
        """The mean over `axes`, keeping them as size-1 dimensions."""
        if isinstance(x, np.ndarray):
            kept = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
            with np.errstate(all="ignore"):
                return self._folded(graph.ReduceMeanOp.reduce(x, tuple(axes)).reshape(kept))
        return self.ctx.emit(graph.ReduceMeanOp(x, axes, keepdims=True)).results[0]

    def reshape(self, x: ImportedValue, shape: tuple[int, ...]) -> ImportedValue:
        if isinstance(x, np.ndarray):
            return np.require(x.reshape(shape), requirements="C")
        return self.ctx.emit(graph.ReshapeOp(x, shape)).results[0]

    def cast(self, x: ImportedValue, dtype: np.dtype | None = None) -> ImportedValue:
        """x in `dtype` (the emitter's own by default)."""
        dtype = self.dtype if dtype is None else dtype
        if _dtype_of(x) == dtype:
            return x
        if isinstance(x, np.ndarray):
            return np.require(x.astype(dtype), requirements="C")
        return self.ctx.emit(graph.CastOp(x, element_type_of(dtype))).results[0]


def _dtype_of(x: ImportedValue) -> np.dtype:
    return x.dtype if isinstance(x, np.ndarray) else numpy_dtype(x.type)


def _check_batch_norm_operands(ctx: NodeContext) -> tuple[int, ...]:
    """The input shape (N, C, ...) once the per-channel operands are checked against it."""
    shape = ctx.shape(0)
    if len(shape) < 2:
        raise ctx.error(f"input must have rank >= 2 (N, C, ...), got shape {list(shape)}")
    names = ("scale", "B", "input_mean", "input_var")
    for index, what in enumerate(names, start=1):
        if ctx.shape(index) != (shape[1],):
            raise ctx.error(
                f"{what} must have shape [{shape[1]}] (one value a channel), got "
                f"{list(ctx.shape(index))}"
            )
    return shape


def convert_batch_normalization(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX BatchNormalization. Inference mode (the default) -> graph.batch_norm with
    the given mean and variance. Training mode (training_mode=1, opset 14 on) normalizes
    with the batch statistics and is composed of graph ops, see
    `_batch_normalization_training`. The running-statistics outputs of older opsets
    (training without the attribute) are rejected."""
    training = ctx.flag_attr("training_mode", 0)
    if ctx.attr("spatial", 1) != 1:
        raise ctx.error("attribute spatial=0 (per-activation statistics) is not supported")
    if not training and any(_requested_outputs(ctx)[1:]):
        raise ctx.error(
            "only output Y is supported without training_mode=1: the running mean and "
            "variance outputs of opsets before 14 are not compiled"
        )
    if len(ctx.node.output) > 3:
        raise ctx.error(
            "only outputs Y, running_mean and running_var are supported (the saved "
            "statistics outputs of opsets before 14 are not compiled)"
        )
    epsilon = _epsilon(ctx)
    shape = _check_batch_norm_operands(ctx)
    if training:
        return _batch_normalization_training(ctx, shape, epsilon)
    values = [ctx.value(i) for i in range(5)]
    if all(isinstance(v, np.ndarray) for v in values):
        return [np.require(normalization.batch_norm(*values, epsilon=epsilon), requirements="C")]
    operands = [ctx.operand(i) for i in range(5)]
    # Scale and bias (T1), mean and variance (T2) may have other float types than X (T):
    # graph.batch_norm takes them in X's.
    x_type = element_type(operands[0])
    operands[1:] = [
        o if element_type(o) == x_type else ctx.emit(graph.CastOp(o, x_type)).results[0]
        for o in operands[1:]
    ]
    return [ctx.emit(graph.BatchNormOp(*operands, epsilon=epsilon)).results[0]]


def _batch_normalization_training(
    ctx: NodeContext, shape: tuple[int, ...], epsilon: float
) -> list[ImportedValue]:
    """BatchNormalization with training_mode=1 as graph ops, folded where known:

        mean = reduce_mean(X) over every axis but 1           (kept as size 1)
        var = reduce_mean((X - mean) * (X - mean))            (biased, as ONNX specifies)
        Y = (X - mean) / sqrt(var + epsilon) * scale + B
        running_mean = input_mean * momentum + mean * (1 - momentum)
        running_var = input_var * momentum + var * (1 - momentum)

    The statistics are computed in X's type (T). Scale and bias (T1) and the running
    statistics (T2) may have other float types: as ONNX's reference (numpy) does, Y is
    computed in the wider of T and T1 and cast to T, and each running statistic in the
    wider of T and T2, in T2 as the schema declares it.
    """
    momentum = ctx.float_attr("momentum", 0.9)
    if not math.isfinite(momentum):
        raise ctx.error(f"attribute momentum={momentum} must be a finite number")
    x = ctx.value(0)
    build = _FoldingEmitter(ctx, _dtype_of(x))
    channels = shape[1]
    channel_shape = (channels,) + (1,) * (len(shape) - 2)
    axes = [d for d in range(len(shape)) if d != 1]

    mean = build.mean(x, axes)
    centered = build.binary(graph.SubOp, x, mean)
    var = build.mean(build.binary(graph.MulOp, centered, centered), axes)
    std = build.sqrt(build.binary(graph.AddOp, var, build.scalar(epsilon)))
    affine = _FoldingEmitter(ctx, np.promote_types(build.dtype, _dtype_of(ctx.value(1))))
    normalized = affine.binary(graph.DivOp, affine.cast(centered), affine.cast(std))
    scale = affine.reshape(affine.cast(ctx.value(1)), channel_shape)
    bias = affine.reshape(affine.cast(ctx.value(2)), channel_shape)
    y = affine.binary(graph.AddOp, affine.binary(graph.MulOp, normalized, scale), bias)
    results = [build.cast(y)]

    for index, statistic in ((3, mean), (4, var)):
        if len(ctx.node.output) <= index - 2:
            break
        if not ctx.node.output[index - 2]:
            results.append(statistic)  # not read: the importer skips unnamed outputs
            continue
        running = _dtype_of(ctx.value(index))
        update = _FoldingEmitter(ctx, np.promote_types(build.dtype, running))
        kept = update.binary(graph.MulOp, update.cast(ctx.value(index)), update.scalar(momentum))
        batch = update.cast(build.reshape(statistic, (channels,)))
        new = update.binary(graph.MulOp, batch, update.scalar(1.0 - momentum))
        results.append(update.cast(update.binary(graph.AddOp, kept, new), running))
    return results


def _normalized_view(
    build: _FoldingEmitter, x: ImportedValue, view: tuple[int, ...], epsilon: float
) -> ImportedValue:
    """Layer normalization of x, viewed with shape `view`, over its last axis."""
    viewed = build.reshape(x, view)
    axis = len(view) - 1
    if isinstance(viewed, np.ndarray):
        normalized: ImportedValue = np.require(
            normalization.layer_norm(viewed, axis, epsilon)[0], requirements="C"
        )
    else:
        normalized = build.ctx.emit(graph.LayerNormOp(viewed, axis, epsilon)).results[0]
    return normalized


def _affine(
    build: _FoldingEmitter,
    x: ImportedValue,
    scale: ImportedValue,
    bias: ImportedValue,
    param_shape: tuple[int, ...],
) -> ImportedValue:
    scaled = build.binary(graph.MulOp, x, build.reshape(scale, param_shape))
    return build.binary(graph.AddOp, scaled, build.reshape(bias, param_shape))


def _float_input(ctx: NodeContext) -> tuple[ImportedValue, np.dtype, tuple[int, ...]]:
    x = ctx.value(0)
    dtype = x.dtype if isinstance(x, np.ndarray) else numpy_dtype(x.type)
    if dtype.kind != "f" and dtype.name != "bfloat16":
        raise ctx.error(f"input must be a float tensor, got {dtype}")
    shape = ctx.shape(0)
    if len(shape) < 3:
        raise ctx.error(f"input must have rank >= 3 (N, C, spatial..), got shape {list(shape)}")
    return x, dtype, shape


def convert_instance_normalization(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX InstanceNormalization: each (n, c) slice normalized over its spatial axes,
    then scaled and shifted per channel."""
    x, dtype, shape = _float_input(ctx)
    channels = shape[1]
    for index, what in ((1, "scale"), (2, "B")):
        if ctx.shape(index) != (channels,):
            raise ctx.error(
                f"{what} must have shape [{channels}] (one value a channel), got "
                f"{list(ctx.shape(index))}"
            )
    build = _FoldingEmitter(ctx, dtype)
    normalized = _normalized_view(
        build, x, (shape[0], channels, math.prod(shape[2:])), _epsilon(ctx)
    )
    normalized = build.reshape(normalized, tuple(shape))
    param_shape = (channels,) + (1,) * (len(shape) - 2)
    return [_affine(build, normalized, ctx.value(1), ctx.value(2), param_shape)]


def convert_group_normalization(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GroupNormalization: the channels split into `num_groups` groups, each
    (n, group) normalized over its channels and spatial axes, then scaled and shifted
    per channel (opset 21; onnx rejects the per-group parameters of opset 18 as
    deprecated)."""
    x, dtype, shape = _float_input(ctx)
    if not ctx.has_attr("num_groups"):
        raise ctx.error("attribute num_groups is required")
    groups = int(ctx.attr("num_groups"))
    channels = shape[1]
    if groups < 1 or channels % groups:
        raise ctx.error(f"num_groups={groups} does not divide the {channels} channels")
    if ctx.attr("stash_type", 1) != 1:
        raise ctx.error(
            f"attribute stash_type={ctx.attr('stash_type')} is not supported (statistics "
            "are computed in float32, stash_type=1)"
        )
    for index, what in ((1, "scale"), (2, "bias")):
        if ctx.shape(index) != (channels,):
            raise ctx.error(
                f"{what} must have shape [{channels}] (one value a channel), got "
                f"{list(ctx.shape(index))}"
            )
    build = _FoldingEmitter(ctx, dtype)
    size = math.prod(shape[2:])
    normalized = _normalized_view(
        build, x, (shape[0], groups, channels // groups * size), _epsilon(ctx)
    )
    normalized = build.reshape(normalized, tuple(shape))
    param_shape = (channels,) + (1,) * (len(shape) - 2)
    return [_affine(build, normalized, ctx.value(1), ctx.value(2), param_shape)]
