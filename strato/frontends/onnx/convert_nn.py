"""Converters for ONNX convolution and pooling: Conv, ConvTranspose, MaxPool,
AveragePool and GlobalAveragePool.

ONNX's `auto_pad` is resolved here into the explicit begin/end padding the graph ops
carry, so the ops never see SAME_UPPER / SAME_LOWER / VALID; ConvTranspose's
`output_shape` likewise becomes padding (and output padding when the requested output
is larger than the natural one).

    Conv(x, W, B, auto_pad=SAME_UPPER, strides=[2, 2])  ->  graph.conv %x, %W, %B
        strides [2, 2] padding [0, 0, 1, 1] ...                (for 4x4 input, 3x3 kernel)
    MaxPool(x, kernel_shape=[3, 3], pads=[1, 1, 1, 1])    ->  graph.max_pool %x kernel [3, 3] ...
    MaxPool(x, ...) -> (Y, Indices)                       ->  graph.max_pool_with_indices %x ...
    GlobalAveragePool(x)                                  ->  graph.global_avg_pool %x
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects import graph
from strato.dialects.graph import MAX_SPATIAL_RANK, static_shape, window_extent
from strato.dialects.tensor_types import element_type_of, numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.shape_values import StaticShapesOnly

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _spatial_rank(ctx: NodeContext) -> int:
    """The number of spatial dimensions of input 0, which must be [N, C, spatial..]."""
    shape = ctx.shape(0)
    rank = len(shape) - 2
    if rank < 1 or rank > MAX_SPATIAL_RANK:
        raise ctx.error(
            f"input must be [N, C, spatial..] with 1 to {MAX_SPATIAL_RANK} spatial "
            f"dimensions, got shape {list(shape)}"
        )
    return rank


def _ints(ctx: NodeContext, name: str, count: int, default: int) -> list[int]:
    """An integer-list attribute with `count` entries (all `default` when absent)."""
    values = ctx.attr(name)
    if values is None:
        return [default] * count
    values = [int(v) for v in values]
    if len(values) != count:
        raise ctx.error(f"attribute {name} has {len(values)} entries, expected {count}")
    return values


def _positive_ints(ctx: NodeContext, name: str, count: int) -> list[int]:
    """`_ints` with default 1, each entry at least 1 (strides, dilations, kernels)."""
    values = _ints(ctx, name, count, 1)
    if any(v < 1 for v in values):
        raise ctx.error(f"attribute {name} must be positive, got {values}")
    return values


def _auto_pad(ctx: NodeContext) -> str:
    mode = ctx.attr("auto_pad", "NOTSET")
    if mode not in _AUTO_PADS:
        raise ctx.error(f"attribute auto_pad={mode} is not one of {', '.join(_AUTO_PADS)}")
    return mode


def _split_total(total: int, mode: str) -> tuple[int, int]:
    """(begin, end) padding of `total`: SAME_LOWER puts the odd element first."""
    small, large = total // 2, total - total // 2
    return (large, small) if mode == "SAME_LOWER" else (small, large)


def _window_padding(
    ctx: NodeContext,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """The explicit [begin.., end..] padding of a Conv or pooling node: its `pads`
    attribute, or what its `auto_pad` implies. SAME keeps ceil(size / stride) outputs."""
    mode = _auto_pad(ctx)
    rank = len(sizes)
    if mode == "NOTSET":
        pads = _ints(ctx, "pads", 2 * rank, 0)
        if any(p < 0 for p in pads):
            raise ctx.error(f"negative pads {pads} are not supported")
        return pads
    if mode == "VALID":
        return [0] * (2 * rank)
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + window_extent(k, d) - size)
        if size < 0:  # a run-time size: what a stride of 1 keeps, whatever the size
            total = window_extent(k, d) - 1
        begin, end = _split_total(total, mode)
        begins.append(begin)
        ends.append(end)
    return begins + ends


def _check_fits(ctx: NodeContext, shape: Sequence[int]) -> None:
    """A diagnostic unless every spatial output size is positive."""
    for dim, size in enumerate(shape[2:]):
        if size < 1:
            raise ctx.error(
                f"the window does not fit the padded input along spatial dimension {dim} "
                f"(output size {size})"
            )


def _checked(ctx: NodeContext, op: Operation) -> SSAValue:
    """Emit `op` once it verifies; its verifier's complaint becomes a diagnostic."""
    _check_fits(ctx, static_shape(op.results[0]))
    try:
        op.verify()
    except VerifyException as error:
        raise ctx.error(str(error)) from None
    return ctx.emit(op).results[0]


def _kernel_of_weight(ctx: NodeContext, rank: int) -> list[int]:
    """The kernel dims of input 1 (the weight), checked against `kernel_shape`."""
    weight = ctx.shape(1)
    if len(weight) != rank + 2:
        raise ctx.error(
            f"weight must have rank {rank + 2} like the input, got shape {list(weight)}"
        )
    kernel = list(weight[2:])
    if ctx.has_attr("kernel_shape") and _ints(ctx, "kernel_shape", rank, 1) != kernel:
        raise ctx.error(
            f"attribute kernel_shape={list(ctx.attr('kernel_shape'))} differs from the "
            f"weight's kernel {kernel}"
        )
    return kernel


def _bias(ctx: NodeContext) -> SSAValue | None:
    return ctx.operand(2) if ctx.has_input(2) else None


def convert_conv(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Conv -> graph.conv (bias as its optional operand); of an input of run-time
    dimensions, products at each position (`_pointwise_product`)."""
    rank = _spatial_rank(ctx)
    kernel = _kernel_of_weight(ctx, rank)
    strides = _positive_ints(ctx, "strides", rank)
    dilations = _positive_ints(ctx, "dilations", rank)
    padding = _window_padding(ctx, ctx.shape(0)[2:], kernel, strides, dilations)
    if any(size < 0 for size in ctx.shape(0)):
        return [_pointwise_product(ctx, kernel, strides, dilations, padding)]
    op = graph.ConvOp(
        ctx.operand(0),
        ctx.operand(1),
        _bias(ctx),
        strides=strides,
        padding=padding,
        dilations=dilations,
        groups=int(ctx.attr("group", 1)),
    )
    return [_checked(ctx, op)]


def _pointwise_product(
    ctx: NodeContext,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    padding: Sequence[int],
) -> SSAValue:
    """Conv over an input [N, C, *S] of run-time dimensions (graph.conv takes none) as
    products at each position: SqueezeBERT's convolutions of one position along the
    sequence, and ConvBERT's of 9, that keep its length.

    The positions are S, of one run-time dimension at most (the others of size 1,
    kernel 1, no padding) or of static ones (kernel 1 then). Along the run-time
    dimension the kernel may be wider, with stride 1 and any pads: each tap t of the
    kernel is then a product by what it reads of the input (`_tap_input`: shifted, or
    sliced and padded to the output's length, a size computed from the input's), and
    the products of the taps are summed.

    Each tap's product is the weight's [groups, O / groups, C / groups] by the input
    reshaped to [N, groups, C / groups, positions] (`graph.matmul`), reshaped back to
    [N, O, *S]; a depthwise one (C groups, as many outputs) is an element-wise
    product by the tap's weight per channel."""
    shape = ctx.shape(0)
    batch, channels, spatial = shape[0], shape[1], list(shape[2:])
    rank = len(spatial)
    run_time = [a for a, size in enumerate(spatial) if size < 0]
    others = [a for a in range(rank) if a not in run_time]
    widened = run_time[0] if len(run_time) == 1 else None
    if (
        channels < 0
        or len(run_time) > 1
        or any(s != 1 for s in strides)
        or any(kernel[a] != 1 or padding[a] or padding[a + rank] for a in others)
        or (run_time and any(spatial[a] != 1 for a in others))
    ):
        raise StaticShapesOnly(
            f"{ctx.label} takes run-time dimensions with a kernel of one position, or "
            "one along a run-time dimension by stride 1"
        )
    groups = int(ctx.attr("group", 1))
    weight = ctx.value(1)
    outputs = ctx.shape(1)[0]
    if groups < 1 or channels % groups or outputs % groups or ctx.shape(1)[1] * groups != channels:
        raise ctx.error(
            f"{channels} channels and {outputs} outputs do not split into {groups} groups "
            f"of the weight {list(ctx.shape(1))}"
        )
    taps = kernel[widened] if widened is not None else 1
    depthwise = taps > 1 and groups == channels == outputs
    positions = spatial[widened] if widened is not None else math.prod(spatial)
    columns = [batch, groups, channels // groups, positions] if groups > 1 else [batch, channels, positions]
    rows = [groups, outputs // groups, channels // groups] if groups > 1 else [outputs, channels]
    if depthwise:
        rows = [channels, *[1] * rank]

    def tap_weight(t: int) -> SSAValue:
        """The weight of tap t along the widened dimension, as `rows`."""
        if isinstance(weight, np.ndarray):
            tap = weight if taps == 1 else np.take(weight, [t], axis=2 + widened)  # type: ignore[operator]
            return ctx.materialize(np.ascontiguousarray(tap).reshape(rows), ctx.input_name(1))
        tap = ctx.operand(1)
        if taps > 1:
            full = list(ctx.shape(1))
            starts = [t if d == 2 + widened else 0 for d in range(len(full))]
            sizes = [1 if d == 2 + widened else size for d, size in enumerate(full)]
            tap = ctx.emit(graph.SliceOp(tap, starts, [1] * len(full), sizes)).results[0]
        return ctx.emit(graph.ReshapeOp(tap, rows)).results[0]

    x = ctx.operand(0)
    y: SSAValue | None = None
    for t in range(taps):
        shifted = x if widened is None else _tap_input(ctx, x, 2 + widened, t, kernel[widened], dilations[widened], padding[widened], padding[widened + rank])
        if depthwise:
            product = ctx.emit(graph.MulOp(shifted, tap_weight(t))).results[0]
        else:
            flat = ctx.emit(graph.ReshapeOp(shifted, columns)).results[0]
            product = ctx.emit(graph.MatmulOp(tap_weight(t), flat)).results[0]
        y = product if y is None else ctx.emit(graph.AddOp(y, product)).results[0]
    assert y is not None
    bias = _bias(ctx)
    if bias is not None:
        bias = ctx.emit(graph.ReshapeOp(bias, rows[:-1] + [1] if not depthwise else rows)).results[0]
        y = ctx.emit(graph.AddOp(y, bias)).results[0]
    if depthwise:
        return y
    return ctx.emit(graph.ReshapeOp(y, [batch, outputs, *spatial])).results[0]


def _tap_input(
    ctx: NodeContext, x: SSAValue, axis: int, t: int, taps: int, dilation: int, low: int, high: int
) -> SSAValue:
    """What tap t of a kernel of `taps` along the run-time dimension `axis` reads, at
    each output position i: x at i + t x dilation - low, zeros outside. The output is
    as long as x plus the pads less dilation x (taps - 1): when that is x's length, x
    shifted (`graph.pad` of pads that sum to 0); else x without the positions the tap
    does not read at its ends (`graph.slice` dropping them), padded with zeros where it
    reads before or after x (`graph.pad` lengthening it). Every tap's is then of one
    size computed from x's (`sequence - 2` for 3 taps and no pads)."""
    rank = len(x.type.get_shape())
    before = t * dilation - low  # where position 0 reads
    after = (taps - 1 - t) * dilation - high  # what the last position leaves unread
    if before == -after:
        if not before:
            return x
        lows, highs = [0] * rank, [0] * rank
        lows[axis], highs[axis] = -before, before
        return ctx.emit(graph.PadOp(x, lows, highs)).results[0]
    if before > 0 or after > 0:
        starts, drops = [0] * rank, [0] * rank
        starts[axis], drops[axis] = max(before, 0), max(after, 0)
        x = ctx.emit(graph.SliceOp(x, starts, [1] * rank, x.type.get_shape(), drops)).results[0]
    if before < 0 or after < 0:
        lows, highs = [0] * rank, [0] * rank
        lows[axis], highs[axis] = max(-before, 0), max(-after, 0)
        x = ctx.emit(graph.PadOp(x, lows, highs)).results[0]
    return x


def convert_conv_transpose(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX ConvTranspose -> graph.conv_transpose.

    `output_shape` (or SAME auto_pad, which asks for input * stride) fixes the padding:
    the natural output stride * (X - 1) + output_padding + (K - 1) * dilation + 1 is
    cropped to the requested size, the odd element at the end for SAME_UPPER and at the
    beginning otherwise (as the ONNX specification says); a requested size larger than
    the natural one extends the output padding.
    """
    rank = _spatial_rank(ctx)
    kernel = _kernel_of_weight(ctx, rank)
    sizes = ctx.shape(0)[2:]
    strides = _positive_ints(ctx, "strides", rank)
    dilations = _positive_ints(ctx, "dilations", rank)
    output_padding = _ints(ctx, "output_padding", rank, 0)
    for pad, stride, dilation in zip(output_padding, strides, dilations):
        if not 0 <= pad < max(stride, dilation):
            raise ctx.error(
                f"attribute output_padding {output_padding} must be non-negative and "
                f"smaller than the stride {strides} or the dilation {dilations}"
            )
    mode = _auto_pad(ctx)
    requested = ctx.attr("output_shape")
    if requested is not None:
        requested = [int(v) for v in requested]
        if len(requested) == rank + 2:
            requested = requested[2:]
        if len(requested) != rank:
            raise ctx.error(f"attribute output_shape has {len(requested)} entries, expected {rank}")
    elif mode in ("SAME_UPPER", "SAME_LOWER"):
        requested = [size * s for size, s in zip(sizes, strides)]
    if requested is not None:
        begins, ends = [], []
        for d in range(rank):
            natural = (
                strides[d] * (sizes[d] - 1)
                + output_padding[d]
                + window_extent(kernel[d], dilations[d])
            )
            total = natural - requested[d]
            if total < 0:
                output_padding[d] -= total
                total = 0
            # the specification puts the odd element first unless SAME_UPPER
            begin, end = _split_total(total, mode if mode == "SAME_UPPER" else "SAME_LOWER")
            begins.append(begin)
            ends.append(end)
        padding = begins + ends
    elif mode == "NOTSET":
        padding = _ints(ctx, "pads", 2 * rank, 0)
        if any(p < 0 for p in padding):
            raise ctx.error(f"negative pads {padding} are not supported")
    else:
        padding = [0] * (2 * rank)
    op = graph.ConvTransposeOp(
        ctx.operand(0),
        ctx.operand(1),
        _bias(ctx),
        strides=strides,
        padding=padding,
        output_padding=output_padding,
        dilations=dilations,
        groups=int(ctx.attr("group", 1)),
    )
    return [_checked(ctx, op)]


def _pool_window(ctx: NodeContext) -> dict:
    """The window keywords of a pooling op from a MaxPool / AveragePool node."""
    rank = _spatial_rank(ctx)
    if not ctx.has_attr("kernel_shape"):
        raise ctx.error("attribute kernel_shape is required")
    kernel = _positive_ints(ctx, "kernel_shape", rank)
    strides = _positive_ints(ctx, "strides", rank)
    dilations = _positive_ints(ctx, "dilations", rank)
    padding = _window_padding(ctx, ctx.shape(0)[2:], kernel, strides, dilations)
    return {
        "kernel": kernel,
        "strides": strides,
        "padding": padding,
        "dilations": dilations,
        "ceil_mode": ctx.flag_attr("ceil_mode"),
    }


def convert_max_pool(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX MaxPool -> graph.max_pool, or graph.max_pool_with_indices when the node's
    optional Indices output is used (storage_order 1 -> `column_major`)."""
    window = _pool_window(ctx)
    if len(ctx.node.output) < 2 or not ctx.node.output[1]:
        return [_checked(ctx, graph.MaxPoolOp(ctx.operand(0), **window))]
    storage_order = int(ctx.attr("storage_order", 0))
    if storage_order not in (0, 1):
        raise ctx.error(f"attribute storage_order={storage_order} is not 0 or 1")
    op = graph.MaxPoolWithIndicesOp(ctx.operand(0), column_major=storage_order == 1, **window)
    values = _checked(ctx, op)
    return [values, op.indices]


def convert_average_pool(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX AveragePool -> graph.avg_pool."""
    window = _pool_window(ctx)
    count_include_pad = ctx.flag_attr("count_include_pad")
    op = graph.AvgPoolOp(ctx.operand(0), count_include_pad=count_include_pad, **window)
    return [_checked(ctx, op)]


def convert_global_average_pool(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GlobalAveragePool -> graph.global_avg_pool."""
    _spatial_rank(ctx)
    return [_checked(ctx, graph.GlobalAvgPoolOp(ctx.operand(0)))]


def convert_global_max_pool(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GlobalMaxPool -> graph.reduce_max over the spatial axes, keeping them (the
    [N, C, 1, ..., 1] result of a max pool whose window is the whole image)."""
    _spatial_rank(ctx)
    rank = len(ctx.shape(0))
    op = graph.ReduceMaxOp(ctx.operand(0), list(range(2, rank)), keepdims=True)
    return [_checked(ctx, op)]


def convert_lp_pool(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX LpPool (p, default 2) -> the p-norm of each window, (sum |x|^p)^(1/p): the
    window sum is graph.avg_pool of |x|^p counting the padding (which adds 0) times
    the window volume; x * x and sqrt for p = 2. A window past the padded input
    (ceil_mode) would be averaged over fewer elements, so ceil_mode is refused."""
    window = _pool_window(ctx)
    if window["ceil_mode"]:
        raise ctx.error("attribute ceil_mode=1 is not supported for LpPool")
    p = int(ctx.attr("p", 2))
    if p < 1:
        raise ctx.error(f"attribute p={p} must be >= 1")
    x = ctx.operand(0)
    dtype = numpy_dtype(x.type.element_type)

    def constant(value: float) -> SSAValue:
        return ctx.materialize(np.asarray(value, dtype=dtype))

    def emit(op: Operation) -> SSAValue:
        return ctx.emit(op).results[0]

    magnitude = emit(graph.AbsOp(x))
    if p == 2:
        powered = emit(graph.MulOp(magnitude, magnitude))
    elif p == 1:
        powered = magnitude
    else:
        powered = emit(graph.PowOp(magnitude, constant(p)))
    average = _checked(ctx, graph.AvgPoolOp(powered, count_include_pad=True, **window))
    total = emit(graph.MulOp(average, constant(math.prod(window["kernel"]))))
    if p == 1:
        return [total]
    if p == 2:
        return [emit(graph.SqrtOp(total))]
    return [emit(graph.PowOp(total, constant(1.0 / p)))]


# -- max_unpool and col2im: scatters of known positions -----------------------------


def _known_ints(ctx: NodeContext, index: int, what: str, count: int | None = None) -> list[int]:
    values = ctx.known(index)
    if values is None:
        raise ctx.error(f"{what} (input '{ctx.input_name(index)}') must be known at import time")
    if values.dtype.kind not in "iu" or values.ndim != 1:
        raise ctx.error(
            f"{what} must be a 1-D integer tensor, got {values.dtype}{list(values.shape)}"
        )
    if count is not None and values.size != count:
        raise ctx.error(f"{what} must hold {count} values, got {values.size}")
    return [int(v) for v in values]


def _flat_scatter(
    ctx: NodeContext, values: SSAValue, positions: SSAValue, size: int, add: bool
) -> SSAValue:
    """A zero vector of `size` elements with values[i] put (added, with `add`) at
    positions[i]: graph.scatter_nd of one-element rows."""
    count = math.prod(static_shape(values))
    dtype = numpy_dtype(values.type.element_type)
    zeros = ctx.materialize(np.zeros(size, dtype=dtype), "zeros")
    rows = ctx.emit(graph.ReshapeOp(positions, (count, 1))).results[0]
    flat = ctx.emit(graph.ReshapeOp(values, (count,))).results[0]
    reduction = graph.ScatterReduction.ADD if add else graph.ScatterReduction.NONE
    return ctx.emit(graph.ScatterNDOp(zeros, rows, flat, reduction)).results[0]


def convert_max_unpool(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX MaxUnpool -> zeros with X put at the flat positions I (MaxPool's indices,
    over the whole tensor), as graph.scatter_nd on the flattened unpooled tensor, each
    spatial size (in - 1) * stride + kernel - pads. A larger output_shape (input 2)
    pads it with zeros at the end of each dimension, as ONNX's reference does (the
    indices keep their meaning in the unpooled shape)."""
    rank = _spatial_rank(ctx)
    shape = ctx.shape(0)
    if ctx.shape(1) != shape:
        raise ctx.error(
            f"indices of shape {list(ctx.shape(1))} must have the shape of X {list(shape)}"
        )
    if not ctx.has_attr("kernel_shape"):
        raise ctx.error("attribute kernel_shape is required")
    kernel = _positive_ints(ctx, "kernel_shape", rank)
    strides = _positive_ints(ctx, "strides", rank)
    pads = [int(p) for p in ctx.attr("pads", [0] * (2 * rank))]
    if len(pads) != 2 * rank:
        raise ctx.error(f"attribute pads must hold {2 * rank} values, got {len(pads)}")
    spatial = [
        (size - 1) * stride + k - pads[d] - pads[d + rank]
        for d, (size, stride, k) in enumerate(zip(shape[2:], strides, kernel))
    ]
    unpooled_shape = [*shape[:2], *spatial]
    out_shape = unpooled_shape
    if ctx.has_input(2):
        out_shape = _known_ints(ctx, 2, "output_shape", rank + 2)
    if any(d < 1 for d in unpooled_shape) or any(
        o < u for o, u in zip(out_shape, unpooled_shape)
    ):
        raise ctx.error(
            f"output shape {out_shape} does not hold the unpooled shape {unpooled_shape}"
        )
    indices = ctx.operand(1)
    if indices.type.element_type != _I64:
        indices = ctx.emit(graph.CastOp(indices, _I64)).results[0]
    flat = _flat_scatter(ctx, ctx.operand(0), indices, math.prod(unpooled_shape), add=False)
    unpooled = ctx.emit(graph.ReshapeOp(flat, unpooled_shape)).results[0]
    if out_shape == unpooled_shape:
        return [unpooled]
    high = [o - u for o, u in zip(out_shape, unpooled_shape)]
    return [ctx.emit(graph.PadOp(unpooled, [0] * len(high), high)).results[0]]


def convert_col2im(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Col2Im -> the sum of each column's block at its place in the image: input
    [N, C * prod(block), L] adds input[n, c * K + k, l] to image[n, c, l * stride + k *
    dilation - pad_begin] (dropped in the padding). The positions are known at import
    time, so this is a graph.scatter_nd (add) into the flattened [C * prod(image), N]
    image, transposed back to [N, C, image..]."""
    shape = ctx.shape(0)
    if len(shape) != 3:
        raise ctx.error(f"input must be [N, C * prod(block_shape), L], got {list(shape)}")
    image = _known_ints(ctx, 1, "image_shape")
    block = _known_ints(ctx, 2, "block_shape", len(image))
    rank = len(image)
    strides = _positive_ints(ctx, "strides", rank)
    dilations = _positive_ints(ctx, "dilations", rank)
    pads = [int(p) for p in ctx.attr("pads", [0] * (2 * rank))]
    if len(pads) != 2 * rank or any(b < 1 for b in block) or any(i < 1 for i in image):
        raise ctx.error(f"image_shape {image}, block_shape {block} and pads {pads} do not fit")
    counts = [
        (i + pads[d] + pads[d + rank] - (dilation * (b - 1) + 1)) // stride + 1
        for d, (i, b, stride, dilation) in enumerate(zip(image, block, strides, dilations))
    ]
    batch, rows, columns = shape
    volume = math.prod(block)
    if rows % volume or columns != math.prod(counts) or min(counts) < 1:
        raise ctx.error(
            f"input of shape {list(shape)} does not hold blocks {block} at the {counts} "
            f"positions image_shape {image} has"
        )
    channels = rows // volume
    # position of every (c, k, l) element, or -1 in the padding
    k_index = np.indices(block).reshape(rank, -1)
    l_index = np.indices(counts).reshape(rank, -1)
    place = np.zeros((volume, columns), dtype=np.int64)
    inside = np.ones((volume, columns), dtype=bool)
    for d in range(rank):
        at = l_index[d][None, :] * strides[d] + k_index[d][:, None] * dilations[d] - pads[d]
        inside &= (at >= 0) & (at < image[d])
        place = place * image[d] + at
    pixels = math.prod(image)
    per_channel = np.where(inside, place, pixels)  # the padding: one spare pixel
    positions = (np.arange(channels)[:, None, None] * (pixels + 1) + per_channel).reshape(-1)
    x = ctx.operand(0)
    by_element = ctx.emit(graph.ReshapeOp(x, (batch, rows * columns))).results[0]
    by_element = ctx.emit(graph.TransposeOp(by_element, (1, 0))).results[0]
    zeros = ctx.materialize(
        np.zeros((channels * (pixels + 1), batch), dtype=numpy_dtype(x.type.element_type)), "image"
    )
    rows_value = ctx.materialize(positions.reshape(-1, 1), "col2im_positions")
    summed = ctx.emit(
        graph.ScatterNDOp(zeros, rows_value, by_element, graph.ScatterReduction.ADD)
    ).results[0]
    summed = ctx.emit(graph.ReshapeOp(summed, (channels, pixels + 1, batch))).results[0]
    kept = ctx.emit(graph.SliceOp(summed, [0, 0, 0], [1, 1, 1], (channels, pixels, batch)))
    result = ctx.emit(graph.TransposeOp(kept.results[0], (2, 0, 1))).results[0]
    return [ctx.emit(graph.ReshapeOp(result, (batch, channels, *image))).results[0]]


_I64 = element_type_of(np.dtype(np.int64))

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "MaxUnpool": (2,),
    "Col2Im": (1, 2),
}
"""The inputs of each operator that must be known at import time (by position)."""
