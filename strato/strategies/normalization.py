"""Strategies of normalization operators.

Softmax and layer normalization are staged the numerically stable way: a reduction
over the normalized axes, an element-wise stage that uses it, another reduction, and a
final element-wise stage over the input's shape. Reductions keep the normalized axes
with size 1, so later stages read them at index 0 there.

    softmax:     max = max_k x;  e = exp(x - max);  sum = sum_k e;  y = e / sum
    layer_norm:  sum = sum_k x;  mean = sum / n;  sq = sum_k (x - mean)^2;
                 inv = 1 / sqrt(sq / n + eps);  y = (x - mean) * inv * scale + bias
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
    shape_of,
)


class NormalizedAxes:
    """Index bookkeeping for a reduction over `axes` of a tensor of `shape`."""

    def __init__(self, shape: Sequence[int], axes: Sequence[int]):
        self.shape = tuple(shape)
        self.axes = tuple(axes)
        self.kept_shape = tuple(1 if d in self.axes else n for d, n in enumerate(shape))
        self.extents = [shape[d] for d in self.axes]
        # the number of elements normalized together; a run-time extent leaves it
        # unknown (a layer norm counts them in a stage: PrimitiveBuilder.count)
        self.count: int | None = 1
        for extent in self.extents:
            if self.count is not None:
                self.count = self.count * extent if isinstance(extent, int) else None

    def full_index(self, idx: Sequence[SSAValue], k: Sequence[SSAValue]) -> list[SSAValue]:
        """The input index of reduction point `k` for output position `idx` (of the kept
        shape)."""
        reduced = dict(zip(self.axes, k))
        return [reduced.get(d, idx[d]) for d in range(len(self.shape))]

    def kept_index(self, s: ScalarBuilder, idx: Sequence[SSAValue]) -> list[SSAValue]:
        """The index into a reduced (kept-shape) tensor for input position `idx`."""
        return [s.index(0) if d in self.axes else idx[d] for d in range(len(self.shape))]


def _reduce_over(
    pb: PrimitiveBuilder,
    stage: str,
    kind: te.ReduceKind,
    norm: NormalizedAxes,
    body,
    dtype: Attribute,
) -> SSAValue:
    return pb.reduce(
        stage,
        kind,
        norm.kept_shape,
        norm.extents,
        lambda s, idx, k: body(s, norm.full_index(idx, k)),
        dtype,
    )


@strategy(graph.SoftmaxOp)
def softmax(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.SoftmaxOp)
    (x,) = inputs
    shape, dtype = shape_of(x), element_type_of(x)
    norm = NormalizedAxes(shape, op.reduced_axes)

    maximum = _reduce_over(
        pb, "softmax_max", te.ReduceKind.MAX, norm, lambda s, at: s.read(x, at), dtype
    )

    def shifted_exp(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        return s.exp(s.sub(s.read(x, idx), s.read(maximum, norm.kept_index(s, idx))))

    exp = pb.compute("softmax_exp", shape, shifted_exp, dtype)
    total = _reduce_over(
        pb, "softmax_sum", te.ReduceKind.SUM, norm, lambda s, at: s.read(exp, at), dtype
    )

    # one division per row, then a product per element (as onnxruntime's kernel does):
    # a vector division costs several multiplies' throughput
    inverse = pb.compute(
        "softmax_inverse",
        norm.kept_shape,
        lambda s, idx: s.div(s.const(1.0), s.read(total, idx)),
        dtype,
    )

    def normalize(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        return s.mul(s.read(exp, idx), s.read(inverse, norm.kept_index(s, idx)))

    return [pb.compute("softmax", shape, normalize, dtype)]


@strategy(graph.LayerNormOp)
def layer_norm(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    assert isinstance(op, graph.LayerNormOp)
    x = inputs[0]
    scale = inputs[1] if op.scale is not None else None
    bias = inputs[-1] if op.bias is not None else None
    shape, dtype = shape_of(x), element_type_of(x)
    axis = op.normalized_axis
    norm = NormalizedAxes(shape, range(axis, len(shape)))
    epsilon = op.epsilon.value.data
    count = pb.count("layer_norm_count", norm.extents, dtype)

    total = _reduce_over(
        pb, "layer_norm_sum", te.ReduceKind.SUM, norm, lambda s, at: s.read(x, at), dtype
    )
    mean = pb.compute(
        "layer_norm_mean",
        norm.kept_shape,
        lambda s, idx: s.div(s.read(total, idx), count(s)),
        dtype,
    )

    def squared_deviation(s: ScalarBuilder, at: list[SSAValue]) -> SSAValue:
        deviation = s.sub(s.read(x, at), s.read(mean, norm.kept_index(s, at)))
        return s.mul(deviation, deviation)

    squares = _reduce_over(
        pb, "layer_norm_squares", te.ReduceKind.SUM, norm, squared_deviation, dtype
    )

    def inverse_std_dev(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        variance = s.div(s.read(squares, idx), count(s))
        return s.div(s.const(1.0), s.sqrt(s.add(variance, s.const(epsilon))))

    inv_std_dev = pb.compute("layer_norm_inv_std_dev", norm.kept_shape, inverse_std_dev, dtype)
    normalized_shape = shape[axis:]

    def normalize(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        kept = norm.kept_index(s, idx)
        y = s.mul(s.sub(s.read(x, idx), s.read(mean, kept)), s.read(inv_std_dev, kept))
        for param, combine in ((scale, s.mul), (bias, s.add)):
            if param is None:
                continue
            at = broadcast_indices(s, idx[axis:], shape_of(param), normalized_shape)
            y = combine(y, s.read(param, at))
        return y

    result = pb.compute("layer_norm", shape, normalize, dtype)
    if not op.stats:
        return [result]
    return [result, mean, inv_std_dev]


@strategy(graph.BatchNormOp)
def batch_norm(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """One stage: (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c], c = axis 1."""
    assert isinstance(op, graph.BatchNormOp)
    x, scale, bias, mean, variance = inputs
    epsilon = op.epsilon.value.data

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        c = [idx[1]]
        std = s.sqrt(s.add(s.read(variance, c), s.const(epsilon)))
        centered = s.sub(s.read(x, idx), s.read(mean, c))
        return s.add(s.mul(s.div(centered, std), s.read(scale, c)), s.read(bias, c))

    return [pb.compute("batch_norm", shape_of(x), body, element_type_of(x))]
