"""Converters for ONNX normalization operators: Softmax, LayerNormalization and
BatchNormalization (inference form).

Softmax normalizes over one axis from opset 13 on (default -1) and, before, over all axes
from `axis` on (the input "coerced" to 2D, default axis 1); both are `graph.softmax`
over a list of axes. When the input is known at import time the result is folded.
"""

from __future__ import annotations

import math

import numpy as np

from strato.dialects import graph
from strato.dialects.graph import broadcast_shapes, normalization
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
        folded = [np.require(a, requirements="C") for a in (result, mean, inv_std_dev)]
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
    return list(op.results)


def convert_batch_normalization(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX BatchNormalization in inference mode -> graph.batch_norm. Training mode
    (training_mode=1, or the running-statistics outputs of older opsets) is rejected."""
    if ctx.attr("training_mode", 0) != 0:
        raise ctx.error(
            "training_mode=1 is not supported: strato compiles inference only "
            "(BatchNormalization with the given mean and variance)"
        )
    if any(_requested_outputs(ctx)[1:]):
        raise ctx.error(
            "only output Y is supported: the running mean and variance outputs are "
            "computed in training mode, which strato does not compile"
        )
    if ctx.attr("spatial", 1) != 1:
        raise ctx.error("attribute spatial=0 (per-activation statistics) is not supported")
    epsilon = _epsilon(ctx)
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
    values = [ctx.value(i) for i in range(5)]
    if all(isinstance(v, np.ndarray) for v in values):
        return [np.require(normalization.batch_norm(*values, epsilon=epsilon), requirements="C")]
    operands = [ctx.operand(i) for i in range(5)]
    return [ctx.emit(graph.BatchNormOp(*operands, epsilon=epsilon)).results[0]]
