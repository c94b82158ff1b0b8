"""graph-simplify-inference: rewrite a model for inference into fewer, cheaper ops.

Each rewrite is one small pattern; `simplify_inference_patterns()` collects them and the
pass applies them to a fixed point:

- `FoldBatchNorm`: batch normalization after a convolution (conv, conv_transpose) or a
  rank-2 dense layer whose result has no other user, with constant weights, bias and
  normalization parameters, is folded into the producer. With
  f = scale / sqrt(variance + epsilon) per output channel:
  w' = w * f, b' = (b - mean) * f + beta (b = 0 without a bias).
- `LowerBatchNorm`: any other batch normalization with constant parameters becomes
  x * f + (beta - mean * f), a mul and an add of constant per-channel vectors.
- `RemovePassThrough`: identity and inference dropout are their input.
- `MergeReshapes` / `RemoveNoOpReshape`: a reshape of a reshape is one reshape; a
  reshape to the shape it already has goes away.
- `MergeTransposes` / `RemoveIdentityTranspose`: transposes compose into one; an
  identity permutation goes away.
- `MatmulBiasToDense`: a matmul by a constant rank-2 matrix [K, N] whose only user adds
  a constant bias vector becomes a dense layer with weight [N, K] (the constant,
  transposed) and bias [N]; batched left operands are fine, dense takes [.., K].
- `DenseAddToBias`: a dense layer whose only user adds a constant vector [N] takes it
  as its bias (added to a constant bias it already has).
- `ConvTransposeToConv`: a transposed convolution with constant weights (one group, no
  dilation) becomes a plain stride-1 convolution, the regular, blocked and vectorized
  kind, where the gather form tests every tap of every output. With stride 1 it is the
  input padded by K - 1 - pad and the weights' two channel axes swapped, every tap
  mirrored. With stride s it is split by output phase: one convolution computes the
  s^n phases as M * s^n output channels with ceil(K / s) taps each, and a reshape, a
  transpose, a reshape and a slice interleave them into the output. A 1x1 input
  without padding is a dense layer. A transposed convolution followed by a batch
  normalization it can fold is left for `FoldBatchNorm` first.

Requires: functions of graph ops. Leaves illegal: nothing (batch normalization with
non-constant parameters is kept).

Before:

    %w = graph.constant dense<2.0> : tensor<4x3x3x3xf32>
    %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
    %n = graph.batch_norm %y, %scale, %beta, %mean, %var epsilon 1.000000e-05 : (...) -> tensor<1x4x8x8xf32>
    %d = graph.dropout %n : tensor<1x4x8x8xf32>
    %r = graph.relu %d : tensor<1x4x8x8xf32>

After:

    %w' = graph.constant dense<...> : tensor<4x3x3x3xf32>
    %b' = graph.constant dense<...> : tensor<4xf32>
    %n = graph.conv %x, %w', %b' strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (...) -> tensor<1x4x8x8xf32>
    %r = graph.relu %n : tensor<1x4x8x8xf32>
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.tensor_types import array_from_dense, dense_from_array

# -- helpers shared by the patterns --------------------------------------------------------


def constant_array(value: SSAValue | None) -> np.ndarray | None:
    """The value of `value` when a graph.constant defines it, else None."""
    if value is None or not isinstance(value.owner, graph.ConstantOp):
        return None
    return array_from_dense(value.owner.value)


def element_type_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def make_constant(array: np.ndarray, like: SSAValue, name: str | None) -> graph.ConstantOp:
    """A graph.constant holding `array` in the element type of `like`."""
    element_type = element_type_of(like)
    op = graph.ConstantOp(dense_from_array(np.asarray(array), element_type))
    op.result.name_hint = name
    return op


def erase_if_unused(rewriter: PatternRewriter, values: Sequence[SSAValue | None]) -> None:
    """Erase the constants among the producers of `values` that lost their last user."""
    for value in values:
        if value is None:
            continue
        owner = value.owner
        if isinstance(owner, graph.ConstantOp) and not owner.result.uses:
            rewriter.erase(owner)


def has_single_user(value: SSAValue, user: Operation) -> bool:
    """Is `user` the only op that reads `value` (and does it read it once)?"""
    return value.get_user_of_unique_use() is user


def channel_vector(array: np.ndarray, rank: int) -> np.ndarray:
    """A per-channel vector [C] shaped to broadcast along axis 1 of a rank-`rank` tensor."""
    return array.reshape((-1,) + (1,) * (rank - 2))


def last_axis_vector(value: SSAValue, result_shape: Sequence[int]) -> np.ndarray | None:
    """The constant `value` as a vector [N] along the last axis of `result_shape`, when
    adding it to a tensor of that shape broadcasts it along the last axis only (its other
    dimensions are 1, and the sum keeps `result_shape`); else None."""
    array = constant_array(value)
    if array is None or not result_shape:
        return None
    shape = array.shape
    if len(shape) > len(result_shape) or any(d != 1 for d in shape[:-1]):
        return None
    units = result_shape[-1]
    if shape and shape[-1] not in (1, units):
        return None
    return np.broadcast_to(array.reshape(-1), (units,)).copy()


def batch_norm_factors(op: graph.BatchNormOp) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(factor, mean, beta) in float64 of a batch normalization with constant parameters,
    factor = scale / sqrt(variance + epsilon); None when a parameter is not constant."""
    params = [constant_array(v) for v in (op.scale, op.bias, op.mean, op.variance)]
    if any(p is None for p in params):
        return None
    scale, beta, mean, variance = (np.asarray(p, dtype=np.float64) for p in params)  # type: ignore[arg-type]
    # the reference semantics adds epsilon as the f32 it is stored as
    epsilon = np.float64(np.float32(op.epsilon.value.data))
    with np.errstate(all="ignore"):
        factor = scale / np.sqrt(variance + epsilon)
    return factor, mean, beta


def _rebuilt(op: Operation, operands: Sequence[SSAValue]) -> Operation:
    """A copy of `op` (same properties, attributes and result types) on `operands`."""
    return type(op).create(
        operands=list(operands),
        result_types=[r.type for r in op.results],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )


def _scaled_weight(
    producer: Operation, weight: np.ndarray, factor: np.ndarray, dtype: np.dtype
) -> np.ndarray:
    """`weight` with each output channel's slice multiplied by its factor, in float64,
    each product rounded once to `dtype` (as converting the whole float64 product does,
    without a float64 copy of the weights and of the product)."""
    if isinstance(producer, graph.ConvTransposeOp):
        # weight [C, M / groups, K..]: output channel g * (M / groups) + j is column j of
        # the rows of group g
        groups = producer.group_count
        per_group = weight.shape[1]
        operand = weight.reshape(groups, weight.shape[0] // groups, per_group, *weight.shape[2:])
        scale = factor.reshape(groups, 1, per_group, *([1] * (weight.ndim - 2)))
    else:
        # conv [M, C / groups, K..] and dense [N, K]: output channels along axis 0
        operand = weight
        scale = factor.reshape((-1,) + (1,) * (weight.ndim - 1))
    if weight.dtype not in _NUMPY_FLOATS or np.dtype(dtype) not in _NUMPY_FLOATS:
        return (operand.astype(np.float64) * scale).reshape(weight.shape)
    scaled = np.empty(operand.shape, dtype=dtype)
    np.multiply(operand, scale, out=scaled, dtype=np.float64, casting="unsafe")
    return scaled.reshape(weight.shape)


_NUMPY_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


# -- patterns ----------------------------------------------------------------------------


class FoldBatchNorm(RewritePattern):
    """conv / conv_transpose / rank-2 dense with constant weights, then batch_norm with
    constant parameters -> the producer with scaled weights and a shifted bias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if not isinstance(producer, (graph.ConvOp, graph.ConvTransposeOp, graph.DenseOp)):
            return
        if not has_single_user(op.input, op):
            return
        if isinstance(producer, graph.DenseOp) and len(static_shape(producer.result)) != 2:
            return  # the normalized axis 1 is not the dense layer's output axis
        factors = batch_norm_factors(op)
        weight = constant_array(producer.weight)
        if factors is None or weight is None:
            return
        bias = constant_array(producer.bias)
        if producer.bias is not None and bias is None:
            return
        factor, mean, beta = factors
        old_bias = np.zeros_like(factor) if bias is None else bias.astype(np.float64)
        new_weight = make_constant(
            _scaled_weight(producer, weight, factor, weight.dtype),
            producer.weight,
            producer.weight.name_hint,
        )
        bias_name = (producer.bias if producer.bias is not None else op.bias).name_hint
        new_bias = make_constant((old_bias - mean) * factor + beta, producer.weight, bias_name)
        folded = _rebuilt(producer, [producer.operands[0], new_weight.result, new_bias.result])
        # the layer is the convolution (or dense) with its normalization folded in: it
        # keeps the producer's name
        folded.results[0].name_hint = producer.results[0].name_hint
        old_operands = list(producer.operands[1:]) + list(op.operands[1:])
        rewriter.replace(op, [new_weight, new_bias, folded], folded.results)
        rewriter.erase(producer)
        erase_if_unused(rewriter, old_operands)


class LowerBatchNorm(RewritePattern):
    """batch_norm with constant parameters -> x * factor + shift, per-channel constants."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        factors = batch_norm_factors(op)
        if factors is None:
            return
        factor, mean, beta = factors
        rank = len(static_shape(op.input))
        name = op.result.name_hint
        scale = make_constant(channel_vector(factor, rank), op.input, op.scale.name_hint)
        shift = make_constant(channel_vector(beta - mean * factor, rank), op.input, op.bias.name_hint)
        mul = graph.MulOp(op.input, scale.result)
        add = graph.AddOp(mul.result, shift.result)
        mul.result.name_hint = f"{name}.scaled" if name else None
        old_operands = list(op.operands[1:])
        rewriter.replace(op, [scale, shift, mul, add], add.results)
        erase_if_unused(rewriter, old_operands)


class RemovePassThrough(RewritePattern):
    """identity / dropout (inference) -> its input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (graph.IdentityOp, graph.DropoutOp)):
            return
        rewriter.replace(op, [], [op.input])


class MergeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, graph.ReshapeOp):
            return
        merged = graph.ReshapeOp(inner.input, static_shape(op.result))
        rewriter.replace(op, merged)
        if not inner.result.uses:
            rewriter.erase(inner)


class RemoveNoOpReshape(RewritePattern):
    """reshape of x to x's own shape -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.input.type != op.result.type:
            return
        rewriter.replace(op, [], [op.input])


class MergeTransposes(RewritePattern):
    """transpose(transpose(x, p1), p2) -> transpose(x, [p1[d] for d in p2])."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, graph.TransposeOp):
            return
        first = inner.permutation
        merged = graph.TransposeOp(inner.input, [first[d] for d in op.permutation])
        rewriter.replace(op, merged)
        if not inner.result.uses:
            rewriter.erase(inner)


class RemoveIdentityTranspose(RewritePattern):
    """transpose by the identity permutation -> its input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        if op.permutation != tuple(range(len(op.permutation))):
            return
        rewriter.replace(op, [], [op.input])


def _producer_and_addend(op: graph.AddOp, kind: type[Operation]):
    """(producer, other operand) for the operand of `op` that an op of type `kind`
    defines and that `op` alone reads, trying lhs first; None if neither is."""
    for value, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if isinstance(value.owner, kind) and has_single_user(value, op):
            return value.owner, other
    return None


class MatmulBiasToDense(RewritePattern):
    """matmul(x, W) + b, W a constant [K, N] and b a constant vector along N ->
    dense(x, W^T, b)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        found = _producer_and_addend(op, graph.MatmulOp)
        if found is None:
            return
        matmul, addend = found
        assert isinstance(matmul, graph.MatmulOp)
        matrix = constant_array(matmul.rhs)
        if matrix is None or matrix.ndim != 2:
            return
        result_shape = static_shape(op.result)
        if static_shape(matmul.result) != result_shape:
            return  # the bias broadcasts the product to a larger shape
        bias = last_axis_vector(addend, result_shape)
        if bias is None:
            return
        weight = make_constant(matrix.T, matmul.rhs, matmul.rhs.name_hint)
        bias_op = make_constant(bias, matmul.rhs, addend.name_hint)
        dense = graph.DenseOp(matmul.lhs, weight.result, bias_op.result)
        old_operands = [matmul.rhs, addend]
        rewriter.replace(op, [weight, bias_op, dense])
        rewriter.erase(matmul)
        erase_if_unused(rewriter, old_operands)


class DenseAddToBias(RewritePattern):
    """dense(x, w) + b, b a constant vector along the output units -> dense(x, w, b)
    (b added to the dense layer's constant bias when it has one)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        found = _producer_and_addend(op, graph.DenseOp)
        if found is None:
            return
        dense, addend = found
        assert isinstance(dense, graph.DenseOp)
        result_shape = static_shape(op.result)
        if static_shape(dense.result) != result_shape:
            return
        bias = last_axis_vector(addend, result_shape)
        if bias is None:
            return
        if dense.bias is not None:
            existing = constant_array(dense.bias)
            if existing is None:
                return
            bias = existing.astype(np.float64) + bias
        bias_op = make_constant(bias, dense.weight, addend.name_hint)
        merged = graph.DenseOp(dense.input, dense.weight, bias_op.result)
        old_operands = [dense.bias, addend]
        rewriter.replace(op, [bias_op, merged])
        rewriter.erase(dense)
        erase_if_unused(rewriter, old_operands)


class ConvTransposeToConv(RewritePattern):
    """conv_transpose(x, w) with constant w, groups 1 and dilations 1 -> a stride-1 conv
    (see the module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvTransposeOp, rewriter: PatternRewriter) -> None:
        weight = constant_array(op.weight)
        if weight is None or op.group_count != 1:
            return
        if any(d != 1 for d in op.dilation_values):
            return
        user = op.result.get_user_of_unique_use()
        if isinstance(user, graph.BatchNormOp) and batch_norm_factors(user) is not None:
            return  # FoldBatchNorm first: it folds into this op, not into what replaces it
        if _is_outer_product(op):
            replacement = _outer_product_dense(op, weight)
        elif all(s == 1 for s in op.stride_values):
            replacement = _mirrored_conv(op, weight)
        else:
            replacement = _phase_conv(op, weight)
        if replacement is None:
            return
        ops, result = replacement
        if static_shape(result) != static_shape(op.result):
            return  # not reached for valid ops; a mismatch keeps the op as it is
        result.name_hint = op.result.name_hint
        rewriter.replace(op, ops, [result])
        erase_if_unused(rewriter, [op.weight])


def _is_outer_product(op: graph.ConvTransposeOp) -> bool:
    """One input pixel, no cropping or output padding: every output element is one tap."""
    return (
        all(d == 1 for d in static_shape(op.input)[2:])
        and not any(op.padding.get_values())
        and not any(op.output_padding.get_values())
    )


def _repeated_bias(
    op: graph.ConvTransposeOp, times: int, ops: list[Operation]
) -> SSAValue | None | bool:
    """The bias with each channel's value repeated `times` times (a new constant appended
    to `ops`), None without a bias, False when the bias is not a constant."""
    if op.bias is None:
        return None
    array = constant_array(op.bias)
    if array is None:
        return False
    repeated = make_constant(np.repeat(array, times), op.bias, op.bias.name_hint)
    ops.append(repeated)
    return repeated.result


def _outer_product_dense(
    op: graph.ConvTransposeOp, weight: np.ndarray
) -> tuple[list[Operation], SSAValue] | None:
    """A 1x1 input (a generator's first layer): y[n, m, k..] = sum_c x[n, c] w[c, m, k..],
    a dense layer [N, C] x [M * prod(K), C]^T reshaped to [N, M, K..]."""
    channels, per_out, *kernel = weight.shape
    x_shape = static_shape(op.input)
    taps = int(np.prod(kernel))
    flat = graph.ReshapeOp(op.input, [x_shape[0], channels])
    dense_weight = make_constant(
        np.ascontiguousarray(weight.reshape(channels, per_out * taps).T), op.weight,
        op.weight.name_hint,
    )  # fmt: skip
    ops: list[Operation] = [flat, dense_weight]
    bias = _repeated_bias(op, taps, ops)
    if bias is False:
        return None
    dense = graph.DenseOp(flat, dense_weight.result, bias)
    shaped = graph.ReshapeOp(dense, static_shape(op.result))
    return [*ops, dense, shaped], shaped.result


def _mirrored_conv(
    op: graph.ConvTransposeOp, weight: np.ndarray
) -> tuple[list[Operation], SSAValue] | None:
    """Stride 1: the correlation of x padded by K - 1 - pad with w, its two channel axes
    swapped and every tap mirrored."""
    kernel = weight.shape[2:]
    outputs = tuple(op.output_padding.get_values())
    low = [k - 1 - b for k, b in zip(kernel, op.pads_begin)]
    high = [k - 1 - e + extra for k, e, extra in zip(kernel, op.pads_end, outputs)]
    if any(v < 0 for v in (*low, *high)):
        return None
    spatial = tuple(range(2, weight.ndim))
    mirrored = np.ascontiguousarray(np.flip(np.swapaxes(weight, 0, 1), axis=spatial))
    new_weight = make_constant(mirrored, op.weight, op.weight.name_hint)
    rank = len(kernel)
    conv = graph.ConvOp(
        op.input, new_weight.result, op.bias,
        strides=[1] * rank, padding=[*low, *high], dilations=[1] * rank,
    )  # fmt: skip
    return [new_weight, conv], conv.result


def _phase_conv(
    op: graph.ConvTransposeOp, weight: np.ndarray
) -> tuple[list[Operation], SSAValue] | None:
    """Stride s > 1, by output phase: output o = q*s + r receives x[q - j] * w[j*s + r],
    so each phase r is a stride-1 convolution of x with the taps r, r + s, .. of w. One
    conv computes all s^n phases as output channels (M * s^n of them, kernels of
    J = ceil(K / s) taps, mirrored, x padded by J - 1), a reshape and a transpose
    interleave the phases into the full output, and a slice crops the padding. No
    multiplication is by an inserted zero."""
    channels, per_out, *kernel = weight.shape
    strides = op.stride_values
    rank = len(kernel)
    x_shape = static_shape(op.input)
    out_shape = static_shape(op.result)
    n = x_shape[0]
    taps = [-(-k // s) for k, s in zip(kernel, strides)]  # J per dimension
    begins = op.pads_begin
    # phase rows q of the full output, enough to reach the last output position
    rows = [
        max(x + j - 1, -(-(b + o) // s))
        for x, j, b, o, s in zip(x_shape[2:], taps, begins, out_shape[2:], strides)
    ]
    # weights: [C, M, J*s ..] (zeros past K) -> [C, M, J, s, ..] -> mirror j ->
    # [M, s.., C, J..] -> [M * prod(s), C, J..]
    padded = np.zeros((channels, per_out, *(j * s for j, s in zip(taps, strides))), weight.dtype)
    padded[(slice(None), slice(None), *(slice(0, k) for k in kernel))] = weight
    split = padded.reshape(channels, per_out, *(v for j, s in zip(taps, strides) for v in (j, s)))
    split = np.flip(split, axis=tuple(2 + 2 * d for d in range(rank)))
    order = [1, *(3 + 2 * d for d in range(rank)), 0, *(2 + 2 * d for d in range(rank))]
    phases = int(np.prod(strides))
    phase_weight = np.ascontiguousarray(split.transpose(order)).reshape(
        per_out * phases, channels, *taps
    )
    new_weight = make_constant(phase_weight, op.weight, op.weight.name_hint)
    ops: list[Operation] = [new_weight]
    bias = _repeated_bias(op, phases, ops)
    if bias is False:
        return None
    low = [j - 1 for j in taps]
    high = [q - x for q, x in zip(rows, x_shape[2:])]
    conv = graph.ConvOp(
        op.input, new_weight.result, bias,
        strides=[1] * rank, padding=[*low, *high], dilations=[1] * rank,
    )  # fmt: skip
    grouped = graph.ReshapeOp(conv, [n, per_out, *strides, *rows])
    interleave = [0, 1, *(v for d in range(rank) for v in (2 + rank + d, 2 + d))]
    interleaved = graph.TransposeOp(grouped, interleave)
    full = graph.ReshapeOp(interleaved, [n, per_out, *(q * s for q, s in zip(rows, strides))])
    ops += [conv, grouped, interleaved, full]
    if static_shape(full.result) == tuple(out_shape):
        return ops, full.result
    crop = graph.SliceOp(full, [0, 0, *begins], [1] * len(out_shape), out_shape)
    return [*ops, crop], crop.result


def simplify_inference_patterns() -> list[RewritePattern]:
    """The rewrites of graph-simplify-inference; folding batch normalization is tried
    before lowering it."""
    return [
        FoldBatchNorm(),
        LowerBatchNorm(),
        RemovePassThrough(),
        MergeReshapes(),
        RemoveNoOpReshape(),
        MergeTransposes(),
        RemoveIdentityTranspose(),
        MatmulBiasToDense(),
        DenseAddToBias(),
        ConvTransposeToConv(),
    ]


@dataclass(frozen=True)
class GraphSimplifyInferencePass(ModulePass):
    """Fold batch normalization into convolutions and dense layers, drop identity and
    dropout, merge reshapes and transposes, and turn matmul + bias into dense."""

    name = "graph-simplify-inference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(simplify_inference_patterns())
        ).rewrite_module(op)


__all__ = ["GraphSimplifyInferencePass", "simplify_inference_patterns"]
