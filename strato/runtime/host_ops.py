"""The ONNX operators computed on the host between compiled parts of a model
(`strato.staged`), as the ONNX specification defines them: those whose output shapes
depend on their input data (NonZero, Unique, NonMaxSuppression) and the string
transforms (StringConcat, StringSplit, StringNormalizer, RegexFullMatch).

Each takes the node (for its attributes) and its input arrays (None for an absent
optional input) and returns its output arrays, one per non-empty output name.

The operators whose output shape follows from an input's value (Range, Reshape, TopK,
Slice, Pad, Resize, ...) run on the host too when that value is known only at run time;
they are in `strato.runtime.shape_ops`, since they otherwise compile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper

from strato.diagnostics import StratoError

HostOp = Callable[[onnx.NodeProto, Sequence[np.ndarray | None]], list[np.ndarray]]


def _attr(node: onnx.NodeProto, name: str, default):
    for attr in node.attribute:
        if attr.name == name:
            return helper.get_attribute_value(attr)
    return default


def non_zero(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The indices of the non-zero elements, [rank, count], in row-major order."""
    (x,) = inputs
    if x.ndim == 0:
        return [np.zeros((0, int(np.count_nonzero(x))), np.int64)]
    return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


def unique(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The distinct elements (or slices along `axis`), sorted or in order of first
    occurrence, with the index of each one's first occurrence, each input element's
    position among them, and their counts."""
    (x,) = inputs
    axis = _attr(node, "axis", None)
    ordered = bool(_attr(node, "sorted", 1))
    if axis is not None:
        if not -x.ndim <= axis < x.ndim:
            raise StratoError(f"Unique: axis {axis} is out of range for rank {x.ndim}")
        axis %= x.ndim
    flat = x.reshape(-1) if axis is None else x
    values, first, inverse, counts = np.unique(
        flat, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    inverse = inverse.reshape(-1)
    if not ordered:
        order = np.argsort(first, kind="stable")  # by first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        first, counts, inverse = first[order], counts[order], rank[inverse]
        values = np.take(flat, first, axis=0 if axis is None else axis)
    results = [
        values,
        first.astype(np.int64),
        inverse.astype(np.int64),
        counts.astype(np.int64),
    ]
    return [r for r, name in zip(results, node.output, strict=False) if name]


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """[.., 4] boxes as (y_min, x_min, y_max, x_max)."""
    if center_point_box:
        x, y, w, h = (boxes[..., i] for i in range(4))
        return np.stack([y - h / 2, x - w / 2, y + h / 2, x + w / 2], axis=-1)
    y1, x1, y2, x2 = (boxes[..., i] for i in range(4))
    return np.stack(
        [np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)],
        axis=-1,
    )


def _overlaps(box: np.ndarray, others: np.ndarray, threshold: float) -> np.ndarray:
    """Whether each of `others` overlaps `box` with an intersection over union above
    `threshold` (boxes without area never do)."""
    top = np.maximum(box[0], others[:, 0])
    left = np.maximum(box[1], others[:, 1])
    bottom = np.minimum(box[2], others[:, 2])
    right = np.minimum(box[3], others[:, 3])
    meets = (bottom > top) & (right > left)
    inter = np.where(meets, (bottom - top) * (right - left), 0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    valid = meets & (inter > 0) & (area > 0) & (areas > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return valid & (inter / np.where(valid, union, 1) > threshold)


def non_max_suppression(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]
) -> list[np.ndarray]:
    """[selected, 3] (batch, class, box) triples: per batch and class, the boxes by
    descending score (the lower index first among equal scores), each kept unless it
    overlaps a kept one above the IoU threshold, at most `max_output_boxes_per_class`,
    scores at or below `score_threshold` left out."""
    boxes, scores, *rest = [*inputs, None, None, None][:5]
    limit_in, iou_in, score_in = rest[0], rest[1], rest[2]
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3:
        raise StratoError(
            f"NonMaxSuppression: boxes {list(boxes.shape)} must be [batches, boxes, 4] and "
            f"scores {list(scores.shape)} [batches, classes, boxes]"
        )
    limit = int(limit_in.reshape(-1)[0]) if limit_in is not None and limit_in.size else 0
    iou = float(iou_in.reshape(-1)[0]) if iou_in is not None and iou_in.size else 0.0
    floor = score_in.reshape(-1)[0] if score_in is not None and score_in.size else None
    corners = _corners(boxes, int(_attr(node, "center_point_box", 0)))
    selected: list[tuple[int, int, int]] = []
    for batch in range(scores.shape[0]):
        for cls in range(scores.shape[1]):
            score = scores[batch, cls]
            order = np.argsort(-score, kind="stable")
            if floor is not None:
                order = order[score[order] > floor]
            kept: list[int] = []
            for index in order:
                if len(kept) >= limit:
                    break
                if kept and _overlaps(corners[batch, index], corners[batch, kept], iou).any():
                    continue
                kept.append(int(index))
            selected.extend((batch, cls, index) for index in kept)
    return [np.array(selected, dtype=np.int64).reshape(-1, 3)]


def _strings(x: np.ndarray, op: str) -> np.ndarray:
    if x.dtype.kind not in "OUS":
        raise StratoError(f"{op}: expected a string tensor, got {x.dtype}")
    return x


def _text(item) -> str:
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)


def string_concat(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Each pair of strings joined, the two tensors broadcast."""
    x, y = (_strings(v, "StringConcat") for v in inputs)
    joined = np.frompyfunc(lambda a, b: _text(a) + _text(b), 2, 1)(x, y)
    return [np.asarray(joined, dtype=object)]


def regex_full_match(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Whether each string matches `pattern` as a whole (Python's `re` syntax, which
    agrees with RE2's on the patterns both accept)."""
    import re

    (x,) = inputs
    pattern = _attr(node, "pattern", b"")
    pattern = pattern.decode("utf-8") if isinstance(pattern, bytes) else pattern
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise StratoError(f"RegexFullMatch: pattern {pattern!r} is invalid: {error}") from None
    matches = [regex.fullmatch(_text(s)) is not None for s in _strings(x, "RegexFullMatch").reshape(-1)]
    return [np.array(matches, dtype=np.bool_).reshape(x.shape)]


def string_split(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Each string split at `delimiter` (at runs of whitespace without one), at most
    `maxsplit` times: the pieces, padded with empty strings to the most of any string,
    and the count of each string's pieces."""
    (x,) = inputs
    delimiter = _attr(node, "delimiter", b"")
    delimiter = (delimiter.decode("utf-8") if isinstance(delimiter, bytes) else delimiter) or None
    maxsplit = _attr(node, "maxsplit", None)
    limit = -1 if maxsplit is None else int(maxsplit)
    pieces = [_text(s).split(delimiter, limit) for s in _strings(x, "StringSplit").reshape(-1)]
    width = max((len(p) for p in pieces), default=0)
    padded = np.empty((len(pieces), width), dtype=object)
    padded[...] = ""
    for row, parts in enumerate(pieces):
        padded[row, : len(parts)] = parts
    counts = np.array([len(p) for p in pieces], dtype=np.int64).reshape(x.shape)
    return [padded.reshape(*x.shape, width), counts]


def string_normalizer(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The strings of a [C] or [1, C] tensor without the stop words (compared with case
    unless `is_case_sensitive` is 0), then lower-cased, upper-cased or kept; all dropped
    gives one empty string."""
    (x,) = inputs
    if x.ndim not in (1, 2) or (x.ndim == 2 and x.shape[0] != 1):
        raise StratoError(f"StringNormalizer: input shape {list(x.shape)} must be [C] or [1, C]")
    action = _attr(node, "case_change_action", b"NONE")
    action = action.decode() if isinstance(action, bytes) else action
    if action not in ("NONE", "LOWER", "UPPER"):
        raise StratoError(f"StringNormalizer: case_change_action '{action}' is not NONE, LOWER or UPPER")
    sensitive = bool(_attr(node, "is_case_sensitive", 0))
    stops = {_text(w) for w in _attr(node, "stopwords", [])}
    if not sensitive:
        stops = {w.lower() for w in stops}
    words = [_text(s) for s in _strings(x, "StringNormalizer").reshape(-1)]
    kept = [w for w in words if (w if sensitive else w.lower()) not in stops]
    if action == "LOWER":
        kept = [w.lower() for w in kept]
    elif action == "UPPER":
        kept = [w.upper() for w in kept]
    result = np.array(kept or [""], dtype=object)
    return [result.reshape(1, -1) if x.ndim == 2 else result]


HOST_OPS: dict[str, HostOp] = {
    "NonZero": non_zero,
    "Unique": unique,
    "NonMaxSuppression": non_max_suppression,
    "RegexFullMatch": regex_full_match,
    "StringConcat": string_concat,
    "StringNormalizer": string_normalizer,
    "StringSplit": string_split,
}
"""The operators computed on the host, by op type: those whose output sizes depend on
the data, and the string transforms (compiled code holds strings as ids, which have no
characters)."""


__all__ = [
    "HOST_OPS",
    "non_max_suppression",
    "non_zero",
    "regex_full_match",
    "string_concat",
    "string_normalizer",
    "string_split",
    "unique",
]
