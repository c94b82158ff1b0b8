"""Operators whose output shape follows from the VALUE of an input (a Range's bounds, a
Reshape's shape, a TopK's K, ...), computed on the host as the ONNX specification defines
them, for the nodes whose such input is only known when the model runs
(`strato.staged`). A node whose shape-deciding inputs are known at import time is
compiled as usual and never comes here.

Each takes the node (for its attributes) and its input arrays (None for an absent
optional input) and returns its output arrays, one per non-empty output name, like
`strato.runtime.host_ops`. A value the specification rejects (a zero delta, a shape
that does not fit the data) is a `StratoError` naming the node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper

from strato.diagnostics import StratoError
from strato.dialects.graph.reduce import top_k as _top_k
from strato.dialects.graph.resize import (
    COORDINATE_MODES,
    NEAREST_MODES,
    RESIZE_MODES,
    Interpolation,
    resize_reference,
)
from strato.runtime.host_ops import HostOp


def _attr(node: onnx.NodeProto, name: str, default):
    for attr in node.attribute:
        if attr.name == name:
            value = helper.get_attribute_value(attr)
            return value.decode("utf-8") if isinstance(value, bytes) else value
    return default


def _error(node: onnx.NodeProto, message: str) -> StratoError:
    where = f"'{node.name}'" if node.name else "without a name"
    return StratoError(f"node {where} ({node.op_type}): {message}")


def _ints(node: onnx.NodeProto, value: np.ndarray, what: str) -> list[int]:
    if value.dtype.kind not in "iu":
        raise _error(node, f"{what} must be an integer tensor, got {value.dtype}")
    if value.ndim > 1:
        raise _error(node, f"{what} must be a 1-D tensor, got shape {list(value.shape)}")
    return [int(v) for v in value.reshape(-1)]


def _scalar(node: onnx.NodeProto, value: np.ndarray, what: str):
    if value.size != 1:
        raise _error(node, f"{what} must hold one value, got shape {list(value.shape)}")
    return value.reshape(())


def _axis(node: onnx.NodeProto, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise _error(node, f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _axes(node: onnx.NodeProto, axes: np.ndarray | None, rank: int, count: int) -> list[int]:
    """Input `axes` made non-negative (every axis in order when absent)."""
    if axes is None:
        return list(range(count))
    result = [_axis(node, a, rank) for a in _ints(node, axes, "axes")]
    if len(set(result)) != len(result):
        raise _error(node, f"axes {_ints(node, axes, 'axes')} repeat an axis")
    return result


def range_(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """start, start + delta, ... up to (not including) limit:
    max(ceil((limit - start) / delta), 0) elements of start's type."""
    start, limit, delta = (_scalar(node, v, w) for v, w in zip(inputs, ("start", "limit", "delta")))
    dtype = start.dtype
    if delta == 0:
        raise _error(node, "delta is 0")
    if dtype.kind in "iu":
        span, step = int(limit) - int(start), int(delta)
        count = max(-(-span // step), 0)
        return [(int(start) + np.arange(count, dtype=np.int64) * step).astype(dtype)]
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    return [(start + np.arange(count, dtype=dtype) * delta).astype(dtype)]


def constant_of_shape(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """A tensor of the given shape filled with `value` (a float32 0 by default)."""
    (shape,) = inputs
    dims = _ints(node, shape, "the shape")
    if any(d < 0 for d in dims):
        raise _error(node, f"the shape {dims} has a negative dimension")
    value = _attr(node, "value", None)
    fill = np.zeros(1, np.float32) if value is None else onnx.numpy_helper.to_array(value)
    return [np.full(dims, fill.reshape(-1)[0], dtype=fill.dtype)]


def reshape(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The data in a new shape: 0 keeps the input's dimension (unless `allowzero`), one
    -1 takes what is left."""
    data, shape = inputs
    dims = _ints(node, shape, "the shape")
    if not _attr(node, "allowzero", 0):
        dims = [data.shape[i] if d == 0 and i < data.ndim else d for i, d in enumerate(dims)]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise _error(node, f"the shape {dims} is not valid")
    try:
        return [data.reshape(dims)]
    except ValueError:
        raise _error(node, f"cannot reshape {list(data.shape)} to {dims}") from None


def expand(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input broadcast with the given shape (both ways, as numpy broadcasts)."""
    data, shape = inputs
    dims = _ints(node, shape, "the shape")
    try:
        target = np.broadcast_shapes(data.shape, tuple(dims))
    except ValueError:
        raise _error(node, f"cannot broadcast {list(data.shape)} with {dims}") from None
    return [np.broadcast_to(data, target).copy()]


def tile(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input repeated `repeats[i]` times along axis i."""
    data, repeats = inputs
    counts = _ints(node, repeats, "repeats")
    if len(counts) != data.ndim or any(c < 0 for c in counts):
        raise _error(node, f"repeats {counts} must be {data.ndim} non-negative counts")
    return [np.tile(data, counts)]


def top_k(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The K largest (or smallest) elements along `axis` and their indices, sorted, the
    lower index first among equal ones."""
    x, k_in = inputs
    if x.ndim == 0:
        raise _error(node, "the input must have rank >= 1")
    axis = _axis(node, int(_attr(node, "axis", -1)), x.ndim)
    k = _scalar(node, k_in, "K")
    if k.dtype.kind not in "iu" or not 0 <= int(k) <= x.shape[axis]:
        raise _error(node, f"K={k} is not an integer in [0, {x.shape[axis]}]")
    values, indices = _top_k(x, axis, int(k), bool(_attr(node, "largest", 1)))
    return [r for r, name in zip((values, indices), node.output, strict=False) if name]


def compress(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The slices along `axis` (the elements of the flattened input without one) whose
    condition is true; a condition shorter than the axis leaves the rest out."""
    data, condition = inputs
    axis = _attr(node, "axis", None)
    flags = condition.reshape(-1).astype(bool)
    if axis is None:
        data, axis = data.reshape(-1), 0
    else:
        axis = _axis(node, int(axis), data.ndim)
    if flags.size > data.shape[axis]:
        raise _error(node, f"the condition has {flags.size} values, the axis {data.shape[axis]}")
    return [np.compress(flags, data, axis=axis)]


def one_hot(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """A new axis of `depth` positions: values[1] where it is the index (a negative one
    counting from depth), values[0] elsewhere and for an index out of range."""
    indices, depth_in, values = inputs
    depth = int(_scalar(node, depth_in, "depth"))
    if depth < 1:
        raise _error(node, f"depth {depth} must be positive")
    rank = indices.ndim + 1
    axis = _axis(node, int(_attr(node, "axis", -1)), rank)
    index = indices.astype(np.int64)
    index = np.where(index < 0, index + depth, index)
    classes = np.arange(depth).reshape([depth if i == axis else 1 for i in range(rank)])
    hot = np.expand_dims(index, axis) == classes
    off, on = values.reshape(-1)[:2]
    return [np.where(hot, on, off).astype(values.dtype)]


def slice_(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """data[starts:ends:steps] along `axes`, the bounds clamped as the specification
    says (negative ones count from the end)."""
    data, starts, ends, axes, steps = [*inputs, None, None][:5]
    first, last = _ints(node, starts, "starts"), _ints(node, ends, "ends")
    if len(first) != len(last):
        raise _error(node, f"starts {first} and ends {last} differ in length")
    chosen = _axes(node, axes, data.ndim, len(first))
    strides = [1] * len(first) if steps is None else _ints(node, steps, "steps")
    if len(chosen) != len(first) or len(strides) != len(first):
        raise _error(node, "starts, ends, axes and steps must have one value per sliced axis")
    index: list[slice] = [slice(None)] * data.ndim
    for axis, start, end, step in zip(chosen, first, last, strides, strict=True):
        size = data.shape[axis]
        if step == 0:
            raise _error(node, "a step is 0")
        start = start + size if start < 0 else start
        end = end + size if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), size), min(max(end, 0), size)
        else:
            start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
        index[axis] = slice(start, None if end < 0 else end, step)
    return [data[tuple(index)].copy()]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def pad(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input padded by `pads` ([begin of each axis, then end of each], of `axes` or
    of every axis) with the constant value, a reflection, the edge or a wrap; negative
    pads remove elements."""
    data, pads, value, axes = [*inputs, None, None][:4]
    mode = _attr(node, "mode", "constant")
    if mode not in _PAD_MODES:
        raise _error(node, f"mode '{mode}' is not one of {', '.join(_PAD_MODES)}")
    amounts = _ints(node, pads, "pads")
    chosen = _axes(node, axes, data.ndim, data.ndim)
    if len(amounts) != 2 * len(chosen):
        raise _error(node, f"pads {amounts} must hold a begin and an end for {len(chosen)} axes")
    width = [[0, 0] for _ in range(data.ndim)]
    for n, axis in enumerate(chosen):
        width[axis] = [amounts[n], amounts[n + len(chosen)]]
    # negative pads remove elements first, then the rest is padded from what is left
    if any(-min(b, 0) - min(e, 0) > size for (b, e), size in zip(width, data.shape)):
        raise _error(node, f"pads {amounts} remove more than the input {list(data.shape)} holds")
    data = data[tuple(slice(-min(b, 0), data.shape[axis] + min(e, 0)) for axis, (b, e) in enumerate(width))]
    grown = [[max(b, 0), max(e, 0)] for b, e in width]
    if mode == "constant":
        fill = 0 if value is None or value.size == 0 else value.reshape(-1)[0]
        result = np.pad(data, grown, mode="constant", constant_values=fill)
    else:
        if any(
            (b or e) and data.shape[axis] == 0 for axis, (b, e) in enumerate(grown)
        ):
            raise _error(node, f"mode '{mode}' cannot pad an empty axis")
        result = np.pad(data, grown, mode=_PAD_MODES[mode])
    return [result.astype(data.dtype, copy=True)]


def split(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input cut along `axis` into pieces of the given lengths."""
    data, lengths = [*inputs, None][:2]
    axis = _axis(node, int(_attr(node, "axis", 0)), data.ndim)
    outputs = [name for name in node.output]
    if lengths is None or lengths.size == 0:
        count = len(outputs)
        size = data.shape[axis]
        each = -(-size // count)
        sizes = [min(each, max(size - each * i, 0)) for i in range(count)]
    else:
        sizes = _ints(node, lengths, "split")
    if any(s < 0 for s in sizes) or sum(sizes) != data.shape[axis] or len(sizes) != len(outputs):
        raise _error(
            node,
            f"split {sizes} must be {len(outputs)} lengths adding up to {data.shape[axis]}",
        )
    pieces = np.split(data, np.cumsum(sizes)[:-1], axis=axis)
    return [piece.copy() for piece, name in zip(pieces, outputs, strict=True) if name]


def _resized(
    node: onnx.NodeProto,
    x: np.ndarray,
    how: Interpolation,
    roi: np.ndarray | None,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
) -> np.ndarray:
    """`x` resized to the scales or sizes of `axes` (the attribute; every axis without
    it), as strato's compiled Resize computes (`graph.resize`)."""
    rank = x.ndim
    axes = (
        [_axis(node, int(a), rank) for a in _attr(node, "axes", [])]
        if _attr(node, "axes", None) is not None
        else list(range(rank))
    )
    scales = None if scales is None or scales.size == 0 else scales.reshape(-1)
    sizes = None if sizes is None or sizes.size == 0 else sizes.reshape(-1)
    if (scales is None) == (sizes is None):
        raise _error(node, "exactly one of scales and sizes must be given")
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        raise _error(node, f"{given.tolist()} must hold one value for each of {len(axes)} axes")
    axis_scales = [1.0] * rank
    out_shape = list(x.shape)
    if scales is not None:
        if np.any(scales <= 0):
            raise _error(node, f"scales {scales.tolist()} must be positive")
        for axis, scale in zip(axes, scales):
            axis_scales[axis] = float(scale)
            out_shape[axis] = int(float(scale) * x.shape[axis])
    else:
        if sizes.dtype.kind not in "iu" or np.any(sizes < 0):
            raise _error(node, f"sizes {sizes.tolist()} must be non-negative integers")
        for axis, size in zip(axes, sizes):
            out_shape[axis] = int(size)
            axis_scales[axis] = int(size) / x.shape[axis] if x.shape[axis] else 1.0
        policy = _attr(node, "keep_aspect_ratio_policy", "stretch")
        if policy not in ("stretch", "not_larger", "not_smaller"):
            raise _error(node, f"keep_aspect_ratio_policy '{policy}' is not valid")
        if policy != "stretch":
            chosen = [axis_scales[a] for a in axes]
            scale = min(chosen) if policy == "not_larger" else max(chosen)
            for axis in axes:
                axis_scales[axis] = scale
                out_shape[axis] = int(scale * x.shape[axis] + 0.5)
    rois = [(0.0, 1.0)] * rank
    roi = None if roi is None or roi.size == 0 else roi.reshape(-1)
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise _error(node, f"roi {roi.tolist()} must hold a start and an end per axis")
        for n, axis in enumerate(axes):
            rois[axis] = (float(roi[n]), float(roi[n + len(axes)]))
    for axis, (size, out) in enumerate(zip(x.shape, out_shape)):
        if size == 0 and out:
            raise _error(node, f"cannot resize the empty axis {axis} to {out}")
    if how.mode != "nearest" and x.dtype.kind != "f":
        if x.dtype.kind not in "iu":
            raise _error(node, f"{how.mode} resizing of {x.dtype} tensors is not supported")
        info = np.iinfo(x.dtype)
        wide = resize_reference(x.astype(np.float64), out_shape, how, axis_scales, rois)
        return np.clip(np.round(wide), info.min, info.max).astype(x.dtype)
    return resize_reference(x, out_shape, how, axis_scales, rois)


def resize(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input interpolated (nearest, linear or cubic, by the attributes) to the
    given scales or sizes."""
    if len(inputs) == 2:  # Resize-10: (X, scales), asymmetric coordinates
        (x, scales), roi, sizes, default = inputs, None, None, "asymmetric"
    else:
        x, roi, scales, sizes = [*inputs, None, None, None][:4]
        default = "half_pixel"
    mode = _attr(node, "mode", "nearest")
    coordinates = _attr(node, "coordinate_transformation_mode", default)
    nearest = _attr(node, "nearest_mode", "round_prefer_floor")
    for value, allowed, what in (
        (mode, RESIZE_MODES, "mode"),
        (coordinates, COORDINATE_MODES, "coordinate_transformation_mode"),
        (nearest, NEAREST_MODES, "nearest_mode"),
    ):
        if value not in allowed:
            raise _error(node, f"{what} '{value}' is not one of {', '.join(allowed)}")
    antialias = bool(_attr(node, "antialias", 0))
    if antialias and mode == "nearest":
        raise _error(node, "antialias applies to linear and cubic modes only")
    how = Interpolation(
        mode=mode,
        coordinates=coordinates,
        nearest_mode=nearest,
        cubic_a=float(_attr(node, "cubic_coeff_a", -0.75)),
        exclude_outside=bool(_attr(node, "exclude_outside", 0)),
        antialias=antialias,
        extrapolation_value=float(_attr(node, "extrapolation_value", 0.0)),
    )
    return [_resized(node, x, how, roi, scales, sizes)]


def upsample(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Resize-9 under its old name: asymmetric coordinates, the nearest neighbour
    rounded down."""
    x, scales = inputs
    mode = _attr(node, "mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise _error(node, f"mode '{mode}' is not one of nearest, linear")
    how = Interpolation(mode=mode, coordinates="asymmetric", nearest_mode="floor")
    return [_resized(node, x, how, None, scales, None)]


def squeeze(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input without the given axes of size 1 (every axis of size 1 without
    axes)."""
    data, axes = [*inputs, None][:2]
    if axes is None:
        return [np.squeeze(data).copy()]
    chosen = _axes(node, axes, data.ndim, data.ndim)
    if any(data.shape[a] != 1 for a in chosen):
        raise _error(node, f"axes {sorted(chosen)} of shape {list(data.shape)} are not all 1")
    return [np.squeeze(data, axis=tuple(chosen)).copy()]


def unsqueeze(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input with axes of size 1 inserted at the given positions of the result."""
    data, axes = inputs
    count = len(_ints(node, axes, "axes"))
    chosen = _axes(node, axes, data.ndim + count, count)
    return [np.expand_dims(data, tuple(sorted(chosen))).copy()]


def _reduction(combine):
    def reduce(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, axes = [*inputs, None][:2]
        keepdims = bool(_attr(node, "keepdims", 1))
        chosen = [] if axes is None else _axes(node, axes, data.ndim, 0)
        if not chosen:
            if _attr(node, "noop_with_empty_axes", 0):
                return [data.copy()]
            chosen = list(range(data.ndim))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = combine(data, tuple(chosen), keepdims)
        return [np.asarray(result).astype(data.dtype)]

    reduce.__doc__ = "The input reduced over the given axes (every axis without them)."
    return reduce


def _log_sum_exp(x, axis, keepdims):
    wide = x.astype(np.float64)
    top = np.max(wide, axis=axis, keepdims=True) if wide.size else 0.0
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.log(np.sum(np.exp(wide - top), axis=axis, keepdims=True)) + top
    return total if keepdims else np.squeeze(total, axis=axis)


_REDUCTIONS = {
    "ReduceSum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
    "ReduceMean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "ReduceMax": lambda x, a, k: np.max(x, axis=a, keepdims=k),
    "ReduceMin": lambda x, a, k: np.min(x, axis=a, keepdims=k),
    "ReduceProd": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
    "ReduceL1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt(np.sum(np.square(x.astype(np.float64)), axis=a, keepdims=k)),
    "ReduceSumSquare": lambda x, a, k: np.sum(np.square(x), axis=a, keepdims=k),
    "ReduceLogSum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "ReduceLogSumExp": _log_sum_exp,
}


def trilu(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The upper (or lower) triangle of the last two axes from diagonal k, zeros
    elsewhere."""
    data, k_in = [*inputs, None][:2]
    if data.ndim < 2:
        raise _error(node, f"the input must have rank >= 2, got {data.ndim}")
    k = 0 if k_in is None else int(_scalar(node, k_in, "k"))
    keep = np.triu if _attr(node, "upper", 1) else np.tril
    return [keep(data, k).astype(data.dtype)]


def _cumulative(combine):
    def cumulative(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, axis_in = inputs
        axis = _axis(node, int(_scalar(node, axis_in, "axis")), data.ndim)
        x = np.flip(data, axis) if _attr(node, "reverse", 0) else data
        result = combine(x, axis=axis, dtype=data.dtype)
        if _attr(node, "exclusive", 0):
            unit = np.zeros_like if combine is np.cumsum else np.ones_like
            first = unit(np.take(result, [0], axis=axis))
            result = np.concatenate([first, np.delete(result, -1, axis=axis)], axis=axis)
        return [np.flip(result, axis).copy() if _attr(node, "reverse", 0) else result]

    cumulative.__doc__ = "Running totals along the axis (exclusive, reversed, by the attributes)."
    return cumulative


def window(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """A Hann, Hamming or Blackman window of the given size, in float64 as ONNX's
    reference computes it (as the importer does for a known size), then converted to
    `output_datatype`."""
    size = int(_scalar(node, inputs[0], "size"))
    if inputs[0].dtype.kind not in "iu" or size < 0:
        raise _error(node, f"size must be a non-negative integer, got {inputs[0].reshape(()).item()}")
    dtype = helper.tensor_dtype_to_np_dtype(int(_attr(node, "output_datatype", 1)))
    return [window_values(node.op_type, size, int(_attr(node, "periodic", 1)) == 1).astype(dtype)]


def window_values(op_type: str, size: int, periodic: bool) -> np.ndarray:
    """The float64 values of a HannWindow, HammingWindow or BlackmanWindow of `size`,
    in the order ONNX's reference computes them (the Blackman peak is then 1 exactly)."""
    length = size if periodic else size - 1
    n = np.arange(size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if op_type == "HannWindow":
            return np.sin(n * np.pi / length) ** 2
        if op_type == "HammingWindow":
            alpha = 25.0 / 46.0
            return alpha - np.cos(n * np.pi * 2 / length) * (1 - alpha)
        result = np.cos(n * (np.pi * 2) / length) * -0.5
        result += np.cos(n * (np.pi * 4) / length) * 0.08
        result += 0.42
        return result


def center_crop_pad(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The input cropped or zero-padded about its center to `shape` along `axes` (every
    axis without them); an odd difference leaves the extra element at the end."""
    data, shape = inputs
    sizes = _ints(node, shape, "the shape")
    axes = _attr(node, "axes", None)
    chosen = _axes(node, None if axes is None else np.array(axes, np.int64), data.ndim, data.ndim)
    if len(sizes) != len(chosen) or any(n < 0 for n in sizes):
        raise _error(node, f"the shape {sizes} must be {len(chosen)} non-negative sizes")
    out_shape = list(data.shape)
    for axis, size in zip(chosen, sizes):
        out_shape[axis] = size
    result = np.zeros(out_shape, dtype=data.dtype)
    source, target = [slice(None)] * data.ndim, [slice(None)] * data.ndim
    for axis, size in zip(chosen, sizes):
        dim = data.shape[axis]
        if size <= dim:
            start = (dim - size) // 2
            source[axis] = slice(start, start + size)
        else:
            start = (size - dim) // 2
            target[axis] = slice(start, start + dim)
    result[tuple(target)] = data[tuple(source)]
    return [result]


def affine_grid(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The sampling grid of each affine matrix: [N, H, W, 2] (x, y) for [N, 2, 3] theta
    and size [N, C, H, W], [N, D, H, W, 3] for [N, 3, 4] and [N, C, D, H, W]; positions
    in [-1, 1], at the pixels' corners with `align_corners`, else at their centers."""
    theta, size = inputs
    sizes = _ints(node, size, "size")
    spatial = sizes[2:]
    if len(spatial) not in (2, 3) or theta.shape != (sizes[0], len(spatial), len(spatial) + 1):
        raise _error(
            node,
            f"theta {list(theta.shape)} and size {sizes} must be [N, 2, 3] and [N, C, H, W] "
            "or [N, 3, 4] and [N, C, D, H, W]",
        )
    corners = bool(_attr(node, "align_corners", 0))
    axes = [
        np.linspace(-1.0, 1.0, n) if corners else (2.0 * np.arange(n) + 1.0) / n - 1.0
        for n in spatial
    ]
    mesh = np.meshgrid(*axes, indexing="ij")  # one array per spatial axis, D/H/W order
    points = np.stack([*reversed(mesh), np.ones(spatial)], axis=-1)  # (x, y[, z], 1)
    grid = np.einsum("...k,njk->n...j", points, theta.astype(np.float64))
    return [grid.astype(theta.dtype)]


SHAPE_OPS: dict[str, HostOp] = {
    "AffineGrid": affine_grid,
    "BlackmanWindow": window,
    "CenterCropPad": center_crop_pad,
    "HammingWindow": window,
    "HannWindow": window,
    **{op_type: _reduction(combine) for op_type, combine in _REDUCTIONS.items()},
    "CumProd": _cumulative(np.cumprod),
    "CumSum": _cumulative(np.cumsum),
    "Squeeze": squeeze,
    "Trilu": trilu,
    "Unsqueeze": unsqueeze,
    "Compress": compress,
    "ConstantOfShape": constant_of_shape,
    "Expand": expand,
    "OneHot": one_hot,
    "Pad": pad,
    "Range": range_,
    "Reshape": reshape,
    "Resize": resize,
    "Slice": slice_,
    "Split": split,
    "Tile": tile,
    "TopK": top_k,
    "Upsample": upsample,
}
"""The operators computed on the host when an input the importer needs at import time
(`IMPORT_TIME_INPUTS` of the ONNX frontend) is only known at run time, by op type: those
whose output shape follows from it, and a few whose axis or diagonal it gives (CumSum,
CumProd, Trilu)."""


__all__ = [
    "SHAPE_OPS",
    "affine_grid",
    "center_crop_pad",
    "compress",
    "constant_of_shape",
    "expand",
    "one_hot",
    "pad",
    "range_",
    "reshape",
    "resize",
    "slice_",
    "split",
    "squeeze",
    "tile",
    "top_k",
    "trilu",
    "unsqueeze",
    "upsample",
    "window",
    "window_values",
]
