"""ONNX's sequence and optional operators on static structures (see `sequences`).

A sequence is a list of tensor values at import time and an optional is its value or
None, so these operators build and take apart Python structures; only the tensor work
becomes graph ops (ConcatFromSequence's Concat, SplitToSequence's Slices):

- SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase: a new list.
- SequenceLength: its length, a known int64.
- SequenceAt: the element at a position known at import time.
- ConcatFromSequence: Concat of the elements (Unsqueeze first with `new_axis`).
- SplitToSequence: the input's pieces along an axis (sizes known at import time).
- Optional, OptionalHasElement, OptionalGetElement: the value or None, whether it is
  there (a known bool), the value.

A position or split size known only at run time, and an empty sequence concatenated, are
diagnostics.
"""

from __future__ import annotations

import numpy as np

from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of
from strato.frontends.onnx.expansion import Expansion


def _sequence(ctx: NodeContext, index: int) -> list:
    value = ctx.static_value(index)
    if not isinstance(value, list):
        raise ctx.error(f"input {index} must be a sequence")
    return value


def _position(ctx: NodeContext, index: int, length: int, *, inserting: bool = False) -> int:
    """Input `index`, a position known at import time, in [-length, length) (to length
    included when inserting)."""
    value = ctx.value(index)
    if not isinstance(value, np.ndarray) or value.size != 1:
        raise ctx.error(f"position (input {index}) must be one value known at import time")
    position = int(value.reshape(-1)[0])
    high = length + 1 if inserting else length
    if not -length <= position < high:
        raise ctx.error(f"position {position} is out of range for a sequence of {length}")
    return position + length if position < 0 else position


def convert_sequence_empty(ctx: NodeContext) -> list[ImportedValue]:
    return [[]]


def convert_sequence_construct(ctx: NodeContext) -> list[ImportedValue]:
    return [[ctx.value(i) for i in range(len(ctx.node.input))]]


def convert_sequence_length(ctx: NodeContext) -> list[ImportedValue]:
    return [np.array(len(_sequence(ctx, 0)), np.int64)]


def convert_sequence_at(ctx: NodeContext) -> list[ImportedValue]:
    items = _sequence(ctx, 0)
    return [items[_position(ctx, 1, len(items))]]


def convert_sequence_insert(ctx: NodeContext) -> list[ImportedValue]:
    items = list(_sequence(ctx, 0))
    position = _position(ctx, 2, len(items), inserting=True) if ctx.has_input(2) else len(items)
    items.insert(position, ctx.value(1))
    return [items]


def convert_sequence_erase(ctx: NodeContext) -> list[ImportedValue]:
    items = list(_sequence(ctx, 0))
    if not items:
        raise ctx.error("the sequence is empty: there is nothing to erase")
    position = _position(ctx, 1, len(items)) if ctx.has_input(1) else len(items) - 1
    del items[position]
    return [items]


def convert_concat_from_sequence(ctx: NodeContext) -> list[ImportedValue]:
    items = _sequence(ctx, 0)
    if not items:
        raise ctx.error("the sequence is empty: there is nothing to concatenate")
    axis = ctx.attr("axis")
    if axis is None:
        raise ctx.error("attribute axis is required")
    body = Expansion(ctx)
    names = [body.bound(item) for item in items]
    if ctx.attr("new_axis", 0):
        rank = len(shape_of(items[0])) + 1
        if not -rank <= axis < rank:
            raise ctx.error(f"axis {axis} is out of range for rank {rank}")
        axes = body.constant(np.asarray([axis % rank], np.int64))
        names = [body.node("Unsqueeze", [name, axes]) for name in names]
    return [body.result(body.node("Concat", names, axis=axis))]


def convert_split_to_sequence(ctx: NodeContext) -> list[ImportedValue]:
    shape = ctx.shape(0)
    axis = ctx.attr("axis", 0)
    if not -len(shape) <= axis < len(shape):
        raise ctx.error(f"axis {axis} is out of range for rank {len(shape)}")
    axis %= len(shape)
    length = shape[axis]
    squeeze = False
    if ctx.has_input(1):
        split = ctx.value(1)
        if not isinstance(split, np.ndarray):
            raise ctx.error("split (input 1) must be known at import time")
        if split.ndim == 0:
            step = int(split)
            if step <= 0:
                raise ctx.error(f"split {step} must be positive")
            sizes = [step] * (length // step) + ([length % step] if length % step else [])
        else:
            sizes = [int(s) for s in split]
            if any(s < 0 for s in sizes) or sum(sizes) != length:
                raise ctx.error(f"split sizes {sizes} do not add up to the axis' {length}")
    else:
        sizes = [1] * length
        squeeze = not ctx.attr("keepdims", 1)
    body = Expansion(ctx)
    axes = body.constant(np.asarray([axis], np.int64))
    pieces, start = [], 0
    for size in sizes:
        starts = body.constant(np.asarray([start], np.int64))
        ends = body.constant(np.asarray([start + size], np.int64))
        piece = body.node("Slice", [ctx.node.input[0], starts, ends, axes])
        if squeeze:
            piece = body.node("Squeeze", [piece, axes])
        pieces.append(body.result(piece))
        start += size
    return [pieces]


def convert_optional(ctx: NodeContext) -> list[ImportedValue]:
    return [ctx.static_value(0) if ctx.has_input(0) else None]


def convert_optional_has_element(ctx: NodeContext) -> list[ImportedValue]:
    present = ctx.has_input(0) and ctx.static_value(0) is not None
    return [np.array(present)]


def convert_optional_get_element(ctx: NodeContext) -> list[ImportedValue]:
    value = ctx.static_value(0) if ctx.has_input(0) else None
    if value is None:
        raise ctx.error("the optional is empty: it has no element to get")
    return [value]


IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "SequenceAt": (1,),
    "SequenceErase": (1,),
    "SequenceInsert": (2,),
    "SplitToSequence": (1,),
}
"""The inputs of each operator that must be known at import time (by position)."""


SEQUENCE_CONVERTERS = {
    "ConcatFromSequence": convert_concat_from_sequence,
    "Optional": convert_optional,
    "OptionalGetElement": convert_optional_get_element,
    "OptionalHasElement": convert_optional_has_element,
    "SequenceAt": convert_sequence_at,
    "SequenceConstruct": convert_sequence_construct,
    "SequenceEmpty": convert_sequence_empty,
    "SequenceErase": convert_sequence_erase,
    "SequenceInsert": convert_sequence_insert,
    "SequenceLength": convert_sequence_length,
    "SplitToSequence": convert_split_to_sequence,
}
"""The sequence and optional operators, by op type."""


__all__ = ["IMPORT_TIME_INPUTS", "SEQUENCE_CONVERTERS"]
