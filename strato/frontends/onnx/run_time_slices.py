"""Slices of a dimension of run-time size, padded back to its length.

A run-time dimension is a size of the model's inputs (`graph.dims`); a graph tensor
never holds a size computed from one, such as `sequence - 1`. Exporters slice such a
dimension all the same, and pad the slice back to the length it had: MobileBERT's
trigram input shifts the embeddings by one token each way,

    left = Pad(Slice(x, starts=[1], ends=[INT_MAX], axes=[1]), pads=[0, 0, 0, 0, 1, 0])
    right = Pad(Slice(x, starts=[0], ends=[-1], axes=[1]), pads=[0, 1, 0, 0, 0, 0])

The slice of a run-time dimension, a `Cropped`, is kept for the Pad that reads it: when
the Pad gives back what the slice took at the other end (constant mode, as many
elements), the two are one shift of the dimension, a `graph.pad` whose pads of that
dimension sum to 0. The model
then takes only sizes of at least what the slice takes (`least`), where the slice is not
empty. Any other op that reads a `Cropped` imports the model with static shapes
(`StaticShapesOnly`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.frontends.onnx.shape_values import StaticShapesOnly

END = 2**31 - 1
"""An end at or past this is the end of the dimension (exporters write INT64_MAX)."""


class Cropped:
    """`value` without its first `start` and last `end` elements along `axis`, a
    dimension of run-time size (`x[:, 1:]` is Cropped(x, 1, 1, 0))."""

    def __init__(self, value: SSAValue, axis: int, start: int, end: int):
        self.value = value
        self.axis = axis
        self.start = start
        self.end = end

    @property
    def least(self) -> int:
        """The least size of the dimension for which the slice takes what it says."""
        return self.start + self.end

    def __repr__(self) -> str:
        return f"Cropped({self.value}, axis={self.axis}, start={self.start}, end={self.end})"


def run_time_slice(
    label: str, value: SSAValue, axis: int, start: int, end: int, step: int
) -> Cropped | None:
    """The ONNX slice start:end:step of the run-time dimension `axis` of `value`: None
    when it keeps the whole dimension, a `Cropped` when it drops elements at either
    end; any other slice (a stride, a window of a fixed length, one counted from the
    end) is refused (`StaticShapesOnly`)."""
    if step == 1 and start >= 0 and (end >= END or end < 0):
        dropped = 0 if end >= END else -end
        return None if start == 0 and dropped == 0 else Cropped(value, axis, start, dropped)
    raise StaticShapesOnly(
        f"{label} slices a dimension of run-time size other than by dropping elements "
        "at its ends"
    )


def shifted(
    label: str,
    cropped: Cropped,
    mode: graph.PadMode,
    low: Sequence[int],
    high: Sequence[int],
    value: float,
) -> graph.PadOp:
    """The Pad of a `Cropped` (pads `low`, `high` per dimension) as one `graph.pad` of
    the tensor before the slice: a shift of the sliced dimension, when the pads give
    back what the slice took in constant mode; pads of other run-time dimensions must
    be 0, of static ones at least 0."""
    axis = cropped.axis
    lo, hi = low[axis], high[axis]
    if (
        mode != graph.PadMode.CONSTANT
        or lo + hi != cropped.least
        or (lo and cropped.start)
        or (hi and cropped.end)
    ):
        # x[:, 2:] padded by one each side is a shift with the first element zeroed too
        raise StaticShapesOnly(
            f"{label} pads a slice of a run-time dimension other than back to its length "
            "at the other end (a shift: constant pads of what the slice took)"
        )
    shape = cropped.value.type.get_shape()  # type: ignore[union-attr]
    for d, (lo, hi) in enumerate(zip(low, high)):
        if d != axis and (lo < 0 or hi < 0 or (shape[d] < 0 and (lo or hi))):
            raise StaticShapesOnly(
                f"{label} pads a slice of a run-time dimension, and dimension {d} by "
                f"({lo}, {hi}), which changes a run-time size or crops"
            )
    low, high = list(low), list(high)
    low[axis] -= cropped.start
    high[axis] -= cropped.end
    return graph.PadOp(cropped.value, low, high, mode, value if value != 0.0 else None)


__all__ = ["END", "Cropped", "run_time_slice", "shifted"]
