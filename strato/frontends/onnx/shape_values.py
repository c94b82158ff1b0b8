"""Shapes known at import time up to run-time sizes.

Exporters write a tensor's shape computation as ONNX ops on its `Shape`: torch's
`x.view(b, s, 4, 16)` of an input of dynamic batch and sequence becomes

    Shape(x) -> Gather 0 -> Unsqueeze -+
    Shape(x) -> Gather 1 -> Unsqueeze -+-> Concat(.., [4], [16]) -> Reshape(y, ..)

When `x` has run-time (`?`) dimensions, `Shape(x)` is not an array the importer can
fold: it is a `ShapeValue`, an integer tensor whose elements are ints or the `Size` of a
run-time dimension, named by its class (`graph.dims.RunTimeDims`). The ops that
compute on shapes (`EVALUATORS`: Gather, Unsqueeze, Concat, Slice, Cast, arithmetic,
comparisons, Where, ...) evaluate on them element by element, and Reshape and Expand
take them as their target shape, where a `Size` stands for a run-time dimension of the
input:

    Shape(x: [?batch, ?seq, 64])          -> [batch, seq, 64]
    Gather(.., 1)                          -> seq
    Concat([batch], [seq], [4], [16])      -> [batch, seq, 4, 16]
    Reshape(y: [?batch, ?seq, 64], ..)     -> graph.reshape to [?batch, ?seq, 4, 16]

Sizes are never negative, so `Equal(seq, -1)` is false (the pattern of torch's `-1`
check). A tensor as long as a size is the dimension it was read from (`SIZED`: a Range
from 0 by 1 to it is `graph.iota`, a Slice of a constant from 0 to it a gather), and a
ConstantOfShape of sizes that one tensor has, at the same dimensions, its value
broadcast like that tensor. What cannot be decided at import time, or an op that would
need a tensor of run-time sizes no input gives (a Range from 1, a ConstantOfShape of
sizes of several tensors), raises `StaticShapesOnly`, and the importer imports the model with static shapes
instead (`strato.compile` then compiles it per call's sizes).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import SSAValue

from strato.dialects.graph.dims import RunTimeDims, run_time_axes
from strato.dialects.size_sums import SizeSum
from strato.dialects.tensor_types import element_type_of, is_run_time
from strato.frontends.onnx.conversion import ImportedValue, NodeContext


class StaticShapesOnly(Exception):
    """A node the importer cannot import with run-time dimensions: the model is imported
    with static shapes instead."""


@dataclass(frozen=True)
class Size:
    """The size of a run-time dimension, named by its class (`RunTimeDims.name`), and a
    tensor dimension of that size (`source`: the one `Shape` read)."""

    name: str
    source: tuple[SSAValue, int] | None = field(default=None, compare=False, hash=False)
    total: SizeSum | None = field(default=None, compare=False, hash=False)
    """The size as a sum of the inputs' sizes (`RunTimeDims.sum_of`: `past + sequence`
    for a concatenation's), when the importer knows it; else the size itself, whatever
    its name spells (an input's `seq-len`)."""

    @staticmethod
    def of_class(dims: RunTimeDims, name: str, source: tuple[SSAValue, int] | None) -> Size:
        """The size of the class `name`, its sum read as `dims` reads it."""
        return Size(name, source, dims.sum_of(name))

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class SizeExpr:
    """Arithmetic on sizes (`batch * 4`): carried along, but no op takes it as a shape
    (a reshape merging dimensions takes a product of sizes: `factors`, its static factor
    and the names of its sizes, sorted, when it is one)."""

    text: str
    factors: tuple[int, tuple[str, ...]] | None = field(default=None, compare=False, hash=False)
    shifted: tuple[Size, int] | None = field(default=None, compare=False, hash=False)
    """A size plus an int (`sequence + 8`), when it is one: the size comes back when
    the int does (`(sequence + 8) - 8` is `sequence`)."""
    total: SizeSum | None = field(default=None, compare=False, hash=False)
    """A sum of sizes and an int (`past + sequence`), when it is one: the size of a
    class of dimensions when one is named so (a concatenation's along a run-time
    dimension: `named_sizes`)."""

    def __repr__(self) -> str:
        return self.text


Element = int | Size | SizeExpr


def factors(element: object) -> tuple[int, tuple[str, ...]] | None:
    """`element` as a product of sizes: its static factor and the names of its sizes,
    sorted; None when it is no such product."""
    if isinstance(element, (int, np.integer)):
        return int(element), ()
    if isinstance(element, Size):
        return 1, (element.name,)
    if isinstance(element, SizeExpr):
        return element.factors
    return None


def product(static: int, names: tuple[str, ...] | list[str]) -> Element:
    """The product of `static` and the sizes named `names`."""
    names = tuple(sorted(names))
    if not names or static == 0:
        return static
    if static == 1 and len(names) == 1:
        return Size(names[0])
    text = " * ".join([*names, *([str(static)] if static != 1 else [])])
    return SizeExpr(f"({text})", (static, names))


class ShapeValue:
    """An integer tensor of `dtype` whose elements are ints, `Size`s or `SizeExpr`s (an
    object array), at least one of them not an int."""

    def __init__(self, elements: np.ndarray, dtype: np.dtype):
        self.elements = elements
        self.dtype = np.dtype(dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.elements.shape)

    def __repr__(self) -> str:
        return f"ShapeValue({self.elements.tolist()})"


def shape_value(elements: np.ndarray, dtype: np.dtype) -> ShapeValue | np.ndarray:
    """`elements` as an array when every element is an int, else a `ShapeValue`."""
    elements = np.asarray(elements, dtype=object)
    if all(isinstance(e, (int, np.integer)) for e in elements.flat):
        return np.asarray(elements.astype(np.int64), dtype=dtype)
    return ShapeValue(elements, dtype)


def _objects(value: ImportedValue | ShapeValue) -> np.ndarray:
    if isinstance(value, ShapeValue):
        return value.elements
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iub":
        raise StaticShapesOnly("a shape computed with values other than integers")
    return np.array(value.astype(np.int64).tolist(), dtype=object)


def _data(ctx: NodeContext) -> ShapeValue:
    """Input 0, the shape an op computes on."""
    value = ctx.static_value(0)
    if not isinstance(value, ShapeValue):
        raise StaticShapesOnly(f"{ctx.label} takes a shape of run-time sizes")
    return value


# -- element arithmetic -----------------------------------------------------------


def _arith(symbol: str, fold: Callable[[int, int], int]) -> Callable[[Element, Element], Element]:
    def apply(a: Element, b: Element) -> Element:
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return int(fold(int(a), int(b)))
        identity = {"+": 0, "-": 0, "*": 1, "/": 1}.get(symbol)
        if b == identity and not isinstance(b, (Size, SizeExpr)):
            return a
        if symbol in "+*" and a == identity and not isinstance(a, (Size, SizeExpr)):
            return b
        if symbol in "+-":
            shifted = _shifted(a, b, symbol)
            if shifted is not None:
                return shifted
            left_sum, right_sum = _sum_of(a), _sum_of(b)
            if left_sum is not None and right_sum is not None:
                if symbol == "-":
                    right_sum = SizeSum(tuple((n, -c) for n, c in right_sum.terms), -right_sum.constant)
                total = left_sum.plus(right_sum)
                if not total.terms:
                    return total.constant  # the sizes cancel: `sequence - sequence`
                return SizeExpr(f"({total.text()})", total=total)
        left, right = factors(a), factors(b)
        if symbol == "-" and left is not None and left == right:
            return 0
        if symbol == "*" and left is not None and right is not None:
            return product(left[0] * right[0], (*left[1], *right[1]))
        if symbol == "/" and left is not None and right is not None and right[0] > 0 and left[0] % right[0] == 0:
            names = list(left[1])
            if all(names.count(name) >= right[1].count(name) for name in right[1]):
                for name in right[1]:
                    names.remove(name)
                return product(left[0] // right[0], names)  # a product divided by some of its factors
        return SizeExpr(f"({a!r} {symbol} {b!r})")

    return apply


def _shifted(a: Element, b: Element, symbol: str) -> Element | None:
    """a + b or a - b of a size (or a size plus an int) and an int, as a size plus an
    int: the size itself when the ints cancel; None for any other pair."""
    def base(element: Element) -> tuple[Size, int] | None:
        if isinstance(element, Size):
            return element, 0
        return element.shifted if isinstance(element, SizeExpr) else None

    if base(a) is not None and isinstance(b, (int, np.integer)):
        size, offset = base(a)  # type: ignore[misc]
        offset += int(b) if symbol == "+" else -int(b)
    elif symbol == "+" and base(b) is not None and isinstance(a, (int, np.integer)):
        size, offset = base(b)  # type: ignore[misc]
        offset += int(a)
    else:
        return None
    if offset == 0:
        return size
    return SizeExpr(f"({size!r} {'+' if offset > 0 else '-'} {abs(offset)})", shifted=(size, offset))


def _sum_of(element: Element) -> SizeSum | None:
    """`element` as a sum of sizes and an int, when it is one."""
    if isinstance(element, (int, np.integer)):
        return SizeSum((), int(element))
    if isinstance(element, Size):
        return element.total or SizeSum(((element.name, 1),))
    if element.total is not None:
        return element.total
    if element.shifted is not None:
        size, offset = element.shifted
        return (size.total or SizeSum(((size.name, 1),))).plus(SizeSum((), offset))
    return None


def named_sizes(ctx: NodeContext, value: ShapeValue | np.ndarray) -> ShapeValue | np.ndarray:
    """`value` with each sum of sizes that is one (`(past + sequence) - sequence`), or
    that has or is given a class of dimensions (`_dimension_of_sum`: `past +
    sequence`, a concatenation's, or the positions along each size joined), made the
    `Size` of that class."""
    dims = ctx.run_time_dims
    if not isinstance(value, ShapeValue) or dims is None:
        return value

    def named(element: Element) -> Element:
        total = element.total if isinstance(element, SizeExpr) else None
        key = _dimension_of_sum(ctx, total) if total is not None and total.terms else None
        name = dims.name(*key) if key is not None else None
        return element if name is None else Size.of_class(dims, name, key)

    return shape_value(np.asarray(np.frompyfunc(named, 1, 1)(value.elements), dtype=object), value.dtype)


def class_name(element: object, dims: RunTimeDims | None) -> str | None:
    """The name of the class of dimensions whose size `element` is: a `Size`'s, or a
    sum of sizes that names one (`named_sizes`); None for any other element."""
    if isinstance(element, Size):
        return element.name
    total = element.total if isinstance(element, SizeExpr) else None
    if total is None or dims is None:
        return None
    key = dims.key_of(total.class_name)
    return dims.name(*key) if key is not None else None


def _truncating_div(a: int, b: int) -> int:
    if b == 0:
        raise StaticShapesOnly("a shape computation divides by zero")
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _compare(fold: Callable[[int, int], bool]) -> Callable[[Element, Element], bool]:
    """A comparison decided at import time: of two ints, of one size with itself, or of a
    size with a negative int (sizes are never negative)."""

    def apply(a: Element, b: Element) -> bool:
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return bool(fold(int(a), int(b)))
        if isinstance(a, Size) and a == b:
            return bool(fold(0, 0))
        if isinstance(a, Size) and isinstance(b, (int, np.integer)) and b < 0:
            return bool(fold(0, -1))  # any size against a negative int: as 0 against -1
        if isinstance(b, Size) and isinstance(a, (int, np.integer)) and a < 0:
            return bool(fold(-1, 0))
        raise StaticShapesOnly(f"{a!r} against {b!r} is known at run time only")

    return apply


_BINARY: dict[str, Callable[[Element, Element], Element | bool]] = {
    "Add": _arith("+", operator.add),
    "Sub": _arith("-", operator.sub),
    "Mul": _arith("*", operator.mul),
    "Div": _arith("/", _truncating_div),
    "Equal": _compare(operator.eq),
    "Less": _compare(operator.lt),
    "LessOrEqual": _compare(operator.le),
    "Greater": _compare(operator.gt),
    "GreaterOrEqual": _compare(operator.ge),
}


def _max_min(pick: Callable[[int, int], int]) -> Callable[[Element, Element], Element]:
    def apply(a: Element, b: Element) -> Element:
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return int(pick(int(a), int(b)))
        if a == b:
            return a
        # a size against an int at most 0 (sizes are never negative)
        for size, other in ((a, b), (b, a)):
            if isinstance(size, Size) and isinstance(other, (int, np.integer)) and other <= 0:
                return size if pick is max else int(other)
        raise StaticShapesOnly(f"the {pick.__name__} of {a!r} and {b!r} is known at run time only")

    return apply


# -- the ops ------------------------------------------------------------------------


def _int_list(ctx: NodeContext, index: int) -> list[int]:
    from strato.frontends.onnx.convert_layout import int_list_input

    return int_list_input(ctx, index, f"input {index}")


def _inputs(ctx: NodeContext) -> list[ImportedValue | ShapeValue]:
    return [ctx.static_value(i) for i in range(len(ctx.node.input)) if ctx.has_input(i)]


def _dtype(values: list) -> np.dtype:
    for value in values:
        if isinstance(value, ShapeValue):
            return value.dtype
    return np.dtype(np.int64)


def _elementwise(ctx: NodeContext) -> list:
    values = _inputs(ctx)
    fold = _BINARY[ctx.op_type]
    result = np.frompyfunc(fold, 2, 1)(_objects(values[0]), _objects(values[1]))
    result = np.asarray(result, dtype=object)
    if ctx.op_type in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
        return [result.astype(bool)]
    return [named_sizes(ctx, shape_value(result, _dtype(values)))]


def _variadic(pick: Callable[[int, int], int]) -> Callable[[NodeContext], list]:
    def convert(ctx: NodeContext) -> list:
        values = _inputs(ctx)
        apply = np.frompyfunc(_max_min(pick), 2, 1)
        result = _objects(values[0])
        for value in values[1:]:
            result = np.asarray(apply(result, _objects(value)), dtype=object)
        return [shape_value(result, _dtype(values))]

    return convert


def _neg(ctx: NodeContext) -> list:
    (value,) = _inputs(ctx)
    negate = np.frompyfunc(lambda a: _arith("-", operator.sub)(0, a), 1, 1)
    return [shape_value(np.asarray(negate(_objects(value)), dtype=object), _dtype([value]))]


def _identity(ctx: NodeContext) -> list:
    return [ctx.static_value(0)]


def _cast(ctx: NodeContext) -> list:
    from onnx import helper

    value = _data(ctx)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if dtype.kind not in "iu":
        raise StaticShapesOnly(f"a shape cast to {dtype}")
    return [ShapeValue(value.elements, dtype)]


def selected_dimensions(ctx: NodeContext, rank: int) -> slice:
    """The dimensions an ONNX Shape selects (start and end clamped to the rank)."""

    def clamp(bound: int) -> int:
        bound = bound + rank if bound < 0 else bound
        return min(max(bound, 0), rank)

    return slice(clamp(int(ctx.attr("start", 0))), clamp(int(ctx.attr("end", rank))))


def _shape(ctx: NodeContext) -> list:
    value = ctx.static_value(0)
    return [np.array(value.shape[selected_dimensions(ctx, len(value.shape))], dtype=np.int64)]


def _gather(ctx: NodeContext) -> list:
    data = _data(ctx)
    indices = ctx.known(1)
    if indices is None or indices.dtype.kind not in "iu":
        raise StaticShapesOnly("a shape gathered at run-time indices")
    axis = int(ctx.attr("axis", 0))
    rank = len(data.shape)
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    size = data.shape[axis]
    if np.any((indices < -size) | (indices >= size)):
        raise ctx.error(f"indices {indices.tolist()} are out of range for size {size}")
    taken = np.take(data.elements, np.where(indices < 0, indices + size, indices), axis=axis)
    return [shape_value(np.asarray(taken, dtype=object), data.dtype)]


def _axes(ctx: NodeContext) -> list[int] | None:
    if ctx.has_attr("axes"):
        return [int(a) for a in ctx.attr("axes")]
    if ctx.has_input(1):
        return _int_list(ctx, 1)
    return None


def _unsqueeze(ctx: NodeContext) -> list:
    data = _data(ctx)
    axes = _axes(ctx)
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    rank = len(data.shape) + len(axes)
    elements = data.elements
    for axis in sorted(a + rank if a < 0 else a for a in axes):
        elements = np.expand_dims(elements, axis)
    return [ShapeValue(elements, data.dtype)]


def _squeeze(ctx: NodeContext) -> list:
    data = _data(ctx)
    axes = _axes(ctx)
    if axes is None:
        axes = [d for d, size in enumerate(data.shape) if size == 1]
    rank = len(data.shape)
    squeezed = tuple(a + rank if a < 0 else a for a in axes)
    if any(data.shape[a] != 1 for a in squeezed):
        raise ctx.error(f"cannot squeeze axes {axes} of shape {list(data.shape)}")
    return [ShapeValue(np.squeeze(data.elements, axis=squeezed), data.dtype)]


def _concat(ctx: NodeContext) -> list:
    values = _inputs(ctx)
    axis = int(ctx.attr("axis", 0))
    joined = np.concatenate([_objects(v) for v in values], axis=axis)
    return [shape_value(np.asarray(joined, dtype=object), _dtype(values))]


def _slice(ctx: NodeContext) -> list:
    data = _data(ctx)
    starts, ends = _int_list(ctx, 1), _int_list(ctx, 2)
    axes = _int_list(ctx, 3) if ctx.has_input(3) else list(range(len(starts)))
    steps = _int_list(ctx, 4) if ctx.has_input(4) else [1] * len(starts)
    index = [slice(None)] * len(data.shape)
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        if step == 0:
            raise ctx.error("a slice step is 0")
        index[axis] = slice(*slice(start, end, step).indices(data.shape[axis]))
    return [shape_value(np.asarray(data.elements[tuple(index)], dtype=object), data.dtype)]


def _reshape(ctx: NodeContext) -> list:
    data = _data(ctx)
    target = [d if d != 0 else data.shape[n] for n, d in enumerate(_int_list(ctx, 1))]
    return [ShapeValue(data.elements.reshape(target), data.dtype)]


def _expand(ctx: NodeContext) -> list:
    data = _data(ctx)
    target = _int_list(ctx, 1)
    shape = np.broadcast_shapes(data.shape, tuple(target))
    return [ShapeValue(np.broadcast_to(data.elements, shape).copy(), data.dtype)]


def _where(ctx: NodeContext) -> list:
    condition = ctx.known(0)
    if condition is None:
        raise StaticShapesOnly("a shape chosen by a run-time condition")
    values = _inputs(ctx)[1:]
    chosen = np.where(condition.astype(bool), _objects(values[0]), _objects(values[1]))
    return [shape_value(np.asarray(chosen, dtype=object), _dtype(values))]


EVALUATORS: dict[str, Callable[[NodeContext], list]] = {
    **{op: _elementwise for op in _BINARY},
    "Max": _variadic(max),
    "Min": _variadic(min),
    "Neg": _neg,
    "Identity": _identity,
    "Cast": _cast,
    "Shape": _shape,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Slice": _slice,
    "Reshape": _reshape,
    "Expand": _expand,
    "Where": _where,
}
"""The ops evaluated on `ShapeValue`s, by ONNX op type."""

def _size(value: object, ctx: NodeContext, what: str) -> Size:
    """`value`, a one-element `ShapeValue`, as the `Size` it holds."""
    if not isinstance(value, ShapeValue) or value.elements.size != 1:
        raise StaticShapesOnly(f"{ctx.label}: {what} is not one size of a run-time dimension")
    (element,) = value.elements.reshape(-1).tolist()
    if isinstance(element, SizeExpr) and element.total is not None:
        source = _dimension_of_sum(ctx, element.total)
        if source is not None and ctx.run_time_dims is not None:
            name = ctx.run_time_dims.name(*source)
            element = Size.of_class(ctx.run_time_dims, name, source) if name is not None else element
    if not isinstance(element, Size) or element.source is None:
        raise StaticShapesOnly(f"{ctx.label}: {what} {element!r} is not a size of a dimension")
    return element


def _dimension_of_sum(ctx: NodeContext, total: SizeSum) -> tuple[SSAValue, int] | None:
    """A tensor dimension whose size is `total`, a sum of sizes and a non-negative
    int: one that a concatenation along a run-time dimension made (the keys of a cache
    joined with the new ones), else one made here, the positions along each size
    joined (`past + sequence` before any such concatenation: the length of the
    attention mask of a decoder's cache). None when a size of the sum is subtracted or
    has no dimension."""
    from strato.dialects import graph

    dims = ctx.run_time_dims
    if dims is None or total.constant < 0 or any(count <= 0 for _, count in total.terms):
        return None
    key = dims.key_of(total.class_name)
    if key is not None:
        return key
    pieces: list[SSAValue] = []
    for name, count in total.terms:
        source = dims.key_of(name)
        if source is None:
            return None
        pieces += [ctx.emit(graph.IotaOp(*source)).results[0]] * count
    if total.constant:
        pieces.append(ctx.materialize(np.zeros(total.constant, np.int64)))
    for piece in pieces:
        if isinstance(piece.owner, graph.IotaOp):
            dims.add_op(piece.owner)
    joined = ctx.emit(graph.ConcatOp(pieces, 0))
    dims.add_op(joined)
    return joined.results[0], 0


def _positions(ctx: NodeContext, size: Size, dtype: np.dtype) -> SSAValue:
    """0, 1, .. up to `size` (graph.iota of the dimension it was read from)."""
    from strato.dialects import graph
    from strato.dialects.tensor_types import element_type_of

    like, dim = size.source  # type: ignore[misc]
    return ctx.emit(graph.IotaOp(like, dim, element_type_of(dtype))).results[0]


def _sized_range(ctx: NodeContext) -> list:
    """Range(0, n, 1) of a size n: the positions along its dimension."""
    start, delta = ctx.known(0), ctx.known(2)
    if start is None or delta is None or start.size != 1 or delta.size != 1:
        raise StaticShapesOnly(f"{ctx.label}: a range of run-time start or step")
    if start.dtype.kind not in "iu" or int(start.reshape(())) != 0 or int(delta.reshape(())) != 1:
        raise StaticShapesOnly(f"{ctx.label}: a range to a size from other than 0 by 1")
    return [_positions(ctx, _size(ctx.static_value(1), ctx, "its limit"), start.dtype)]


def _sized_slice(ctx: NodeContext) -> list:
    """Slice [0, n) along one static axis, to a size n, of an array known at import
    time or a tensor: the entries at the positions along n's dimension (graph.gather of
    graph.iota). It reads past the axis' end only when the model does (n larger than
    the axis)."""
    from strato.dialects import graph
    from strato.frontends.onnx.conversion import ssa_name

    if isinstance(ctx.static_value(1), ShapeValue):
        return _slice_from_a_size(ctx)
    data = ctx.known(0)
    source = ctx.static_value(0)
    starts = ctx.known(1)
    if data is None and not isinstance(source, SSAValue):
        raise StaticShapesOnly(f"{ctx.label}: a slice to a size of a shape")
    if starts is None or starts.size != 1 or int(starts.reshape(-1)[0]) != 0:
        raise StaticShapesOnly(f"{ctx.label}: a slice to a size from other than 0")
    axes = _int_list(ctx, 3) if ctx.has_input(3) else [0]
    steps = _int_list(ctx, 4) if ctx.has_input(4) else [1]
    if len(axes) != 1 or steps != [1]:
        raise StaticShapesOnly(f"{ctx.label}: a slice to a size along several axes or by steps")
    shape = data.shape if data is not None else source.type.get_shape()
    axis = axes[0] + len(shape) if axes[0] < 0 else axes[0]
    size = _size(ctx.static_value(2), ctx, "its end")
    dims = ctx.run_time_dims
    if 0 <= axis < len(shape) and shape[axis] < 0 and dims is not None and dims.name(source, axis) == size.name:
        # [0, n) of a dimension of size n: all of it (LUKE's words cut from the words
        # and entities, of no entities)
        return [source]
    if not 0 <= axis < len(shape) or shape[axis] < 0:
        raise StaticShapesOnly(f"{ctx.label}: a slice to a size along a run-time axis")
    if data is not None:
        table = ctx.emit(graph.ConstantOp.from_array(np.require(data, requirements="C")))
        table.results[0].name_hint = ssa_name(ctx.input_name(0))
        source = table.results[0]
    positions = _positions(ctx, size, np.dtype(np.int64))
    return [ctx.emit(graph.GatherOp(source, positions, axis)).results[0]]


def _slice_from_a_size(ctx: NodeContext) -> list:
    """Slice [s, end) along a run-time dimension of a tensor, from a size s to the end:
    the last (its size - s) positions (OPT's positions of the new tokens, after the
    cache's). Its length is a size of the model when the difference is a sum of sizes
    (`past + sequence` less `past`: `sequence`); the entries are gathered at the
    positions along it plus s."""
    from strato.dialects import graph

    source = ctx.static_value(0)
    start = ctx.static_value(1)
    dims = ctx.run_time_dims
    axes = _int_list(ctx, 3) if ctx.has_input(3) else [0]
    steps = _int_list(ctx, 4) if ctx.has_input(4) else [1]
    if not isinstance(source, SSAValue) or dims is None or start.elements.size != 1 or len(axes) != 1 or steps != [1]:
        raise StaticShapesOnly(f"{ctx.label}: a slice from a size other than of one run-time axis by 1")
    rank = len(source.type.get_shape())
    axis = axes[0] + rank if axes[0] < 0 else axes[0]
    name = dims.name(source, axis) if axis in run_time_axes(source) else None
    (first,) = start.elements.reshape(-1).tolist()
    begin = _sum_of(first)
    end = ctx.static_value(2)
    to_end = isinstance(end, np.ndarray) and end.size == 1 and int(end.reshape(-1)[0]) >= 2**31 - 1
    if isinstance(end, ShapeValue) and end.elements.size == 1:
        (last,) = end.elements.reshape(-1).tolist()
        to_end = isinstance(last, Size) and last.name == name
    if name is None or begin is None or not to_end:
        raise StaticShapesOnly(f"{ctx.label}: a slice from a size to other than the end of a run-time axis")
    length = dims.sum_of(name).plus(SizeSum(tuple((n, -c) for n, c in begin.terms), -begin.constant))
    like = _dimension_of_sum(ctx, length)
    offset = as_tensor(ctx, ShapeValue(np.array(first, dtype=object), np.int64))
    if like is None or offset is None:
        raise StaticShapesOnly(f"{ctx.label}: a slice from {first!r} of a dimension of {name}")
    positions = ctx.emit(graph.IotaOp(*like)).results[0]
    positions = ctx.emit(graph.AddOp(positions, offset)).results[0]
    return [ctx.emit(graph.GatherOp(source, positions, axis)).results[0]]


def _sized_fill(ctx: NodeContext, dims: RunTimeDims) -> list:
    """ConstantOfShape of a shape of run-time sizes: its value broadcast to that shape
    (graph.broadcast_to ... like the tensor the sizes were read from, which must have
    them all, at the same dimensions: `ConstantOfShape(Shape(input_ids))`)."""
    from strato.dialects import graph

    value = ctx.static_value(0)
    assert isinstance(value, ShapeValue)
    if len(value.shape) != 1:
        raise StaticShapesOnly(f"{ctx.label}: a shape of rank {len(value.shape)}")
    fill = ctx.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else np.asarray(fill)
    if fill.size != 1:
        # the static import's converter reports it
        raise StaticShapesOnly(f"{ctx.label}: a value of {fill.size} elements")
    shape: list[int] = []
    needs: dict[int, Size] = {}
    for d, element in enumerate(value.elements.tolist()):
        if isinstance(element, Size) and element.source is not None:
            shape.append(DYNAMIC_INDEX)
            needs[d] = element
        elif isinstance(element, (int, np.integer)) and element >= 0:
            shape.append(int(element))
        else:
            raise StaticShapesOnly(f"{ctx.label}: a size {element!r} known at run time only")
    filled = np.full([1] * len(shape), fill.reshape(()), dtype=fill.dtype)
    if not needs:
        return [np.broadcast_to(filled, shape).copy()]
    like = like_for(ctx, needs, len(shape), dims)
    scalar = ctx.emit(graph.ConstantOp.from_array(filled))
    return [ctx.emit(graph.BroadcastToOp(scalar.results[0], shape, like)).results[0]]


SIZED: dict[str, Callable[[NodeContext], list]] = {
    "Range": _sized_range,
    "Slice": _sized_slice,
}
"""The ops that make a tensor as long as a size of a run-time dimension, by ONNX op
type: when their size input is a `ShapeValue`, they become graph ops of that run-time
dimension."""

TARGET_SHAPE_INPUT = {"Reshape": 1, "Expand": 1}
"""The ops whose converters take a `ShapeValue` as their target shape (input 1): of a
tensor of run-time sizes (input 0; `target_shape`), or, for Expand, of any tensor
(`broadcast_target`)."""


def of_tensor(ctx: NodeContext, value: SSAValue, dims: RunTimeDims) -> list:
    """ONNX Shape of a tensor of run-time dimensions: a `Size` for each of those."""
    assert isinstance(value.type, TensorType)
    shape = value.type.get_shape()
    elements: list[Element] = []
    for d, size in enumerate(shape):
        if size >= 0:
            elements.append(size)
            continue
        name = dims.name(value, d)
        if name is None:
            raise StaticShapesOnly(f"dimension {d} of '{ctx.input_name(0)}' is of no input")
        elements.append(Size.of_class(dims, name, (value, d)))
    selected = elements[selected_dimensions(ctx, len(shape))]
    return [shape_value(np.array(selected, dtype=object), np.int64)]


def as_tensor(ctx: NodeContext, value: ShapeValue) -> SSAValue | None:
    """`value` made a tensor of graph ops: each `Size` the size of the dimension it was
    read from (`graph.size_of`), a size plus an int that plus the int, an int a
    constant; None when an element is other arithmetic on sizes."""
    from strato.dialects import graph

    parts: list[SSAValue] = []
    for element in value.elements.flat:
        shift = 0
        if isinstance(element, SizeExpr) and element.shifted is not None:
            element, shift = element.shifted
        if isinstance(element, (int, np.integer)):
            part = ctx.materialize(np.array(int(element), np.int64))
        elif isinstance(element, Size) and element.source is not None:
            part = ctx.emit(graph.SizeOfOp(*element.source)).results[0]
            if shift:
                part = ctx.emit(graph.AddOp(part, ctx.materialize(np.array(shift, np.int64)))).results[0]
        else:
            return None
        parts.append(part)
    if value.shape:
        rows = [ctx.emit(graph.ReshapeOp(part, [1])).results[0] for part in parts]
        joined = rows[0] if len(rows) == 1 else ctx.emit(graph.ConcatOp(rows, 0)).results[0]
        tensor = joined if len(value.shape) == 1 else ctx.emit(graph.ReshapeOp(joined, value.shape)).results[0]
    else:
        (tensor,) = parts
    if value.dtype != np.int64:
        tensor = ctx.emit(graph.CastOp(tensor, element_type_of(value.dtype))).results[0]
    return tensor


def _sizes_as_tensors(ctx: NodeContext, inputs: list, convert_node: Callable) -> list | None:
    """The node converted with each `ShapeValue` input made a tensor (`as_tensor`),
    when one of its other inputs is a tensor computed at run time (the positions of new
    tokens, `Range(0, sequence)`, plus the length of a cache); None when an input
    cannot be made one."""
    tensors = {n: as_tensor(ctx, value) for n, value in enumerate(inputs) if isinstance(value, ShapeValue)}
    if any(tensor is None for tensor in tensors.values()):
        return None
    return convert_node(ctx.with_inputs(tensors, "sizes"))  # type: ignore[arg-type]


def convert(
    ctx: NodeContext, dims: RunTimeDims, convert_node: Callable | None = None
) -> list | None:
    """The results of a node that computes on shapes of run-time sizes, or None when the
    node is none: its converter imports it. A node of another op type that reads a
    `ShapeValue` raises `StaticShapesOnly`, unless it reads a tensor too and the shapes
    can be made tensors (`_sizes_as_tensors`: `convert_node` converts the node then)."""
    inputs = [ctx.static_value(i) if ctx.has_input(i) else None for i in range(len(ctx.node.input))]
    symbolic = [n for n, value in enumerate(inputs) if isinstance(value, ShapeValue)]
    if ctx.op_type == "Shape" and isinstance(inputs[0], SSAValue) and is_run_time(inputs[0].type):
        return of_tensor(ctx, inputs[0], dims)
    if not symbolic:
        return None
    if symbolic == [TARGET_SHAPE_INPUT.get(ctx.op_type)] and (
        ctx.op_type == "Expand" or not isinstance(inputs[0], np.ndarray)
    ):
        return None
    if ctx.op_type == "ConstantOfShape" and symbolic == [0]:
        return _sized_fill(ctx, dims)
    sized = SIZED.get(ctx.op_type)
    if sized is not None and not isinstance(inputs[0], ShapeValue):
        return sized(ctx)
    evaluate = EVALUATORS.get(ctx.op_type)
    if evaluate is None or any(isinstance(v, SSAValue) for v in inputs):
        if convert_node is not None and any(isinstance(v, SSAValue) for v in inputs):
            results = _sizes_as_tensors(ctx, inputs, convert_node)
            if results is not None:
                return results
        raise StaticShapesOnly(f"{ctx.label} reads a shape of run-time sizes")
    return evaluate(ctx)


def target_shape(ctx: NodeContext, index: int, dims: RunTimeDims | None) -> list[int] | None:
    """Input `index` of a Reshape, a `ShapeValue`, as a target shape for input 0: each
    `Size` must name a run-time dimension of input 0 and becomes `?` (graph.reshape
    checks that the run-time dimensions keep their order). None when the input is no
    `ShapeValue`."""
    value = ctx.static_value(index)
    if not isinstance(value, ShapeValue):
        return None
    if dims is None or len(value.shape) != 1:
        raise StaticShapesOnly(f"{ctx.label} takes a shape of run-time sizes")
    data = ctx.static_value(0)
    assert isinstance(data, SSAValue) and isinstance(data.type, TensorType)
    source = data.type.get_shape()
    names = [dims.name(data, d) for d, size in enumerate(source) if size < 0]
    allow_zero = bool(ctx.attr("allowzero", 0))
    shape: list[int] = []
    named: list[str | None] = []  # the run-time dimensions the target names, in order
    for n, element in enumerate(value.elements.tolist()):
        if isinstance(element, (int, np.integer)):
            shape.append(int(element))
            if element == 0 and not allow_zero and n < len(source) and source[n] < 0:
                named.append(dims.name(data, n))
            elif element == -1:
                named.append(None)  # perhaps the one left
        elif isinstance(element, Size):
            shape.append(DYNAMIC_INDEX)
            named.append(element.name)
        else:
            raise StaticShapesOnly(f"{ctx.label}: size {element!r} is known at run time only")
    given = [name for name in named if name is not None]
    if None in named and len(names) == len(given) + 1:
        # the -1 is the run-time dimension at its place among the others
        place = named.index(None)
        named[place] = names[len([name for name in named[:place] if name is not None])]
    if [name for name in named if name is not None] != names:
        raise StaticShapesOnly(
            f"{ctx.label}: the target names the input's run-time dimensions "
            f"{[n for n in named if n is not None]}, not {names} in order"
        )
    return shape


def broadcast_target(
    ctx: NodeContext, source: tuple[int, ...], dims: RunTimeDims | None
) -> tuple[list[int], dict[int, Size]] | None:
    """Expand's shape (input 1), a `ShapeValue`, broadcast with input 0's `source`
    shape: the result shape (`?` where a size is), and the sizes input 0 does not give
    (where it has 1, or no dimension), by result dimension. None when the shape is no
    `ShapeValue`."""
    value = ctx.static_value(1)
    if not isinstance(value, ShapeValue):
        return None
    if dims is None or len(value.shape) != 1:
        raise StaticShapesOnly(f"{ctx.label} takes a shape of run-time sizes")
    data = ctx.static_value(0)
    elements = value.elements.tolist()
    rank = max(len(source), len(elements))
    shape: list[int] = []
    needs: dict[int, Size] = {}
    for d in range(rank):
        s_axis, e_axis = d - rank + len(source), d - rank + len(elements)
        size = source[s_axis] if s_axis >= 0 else 1
        element = elements[e_axis] if e_axis >= 0 else 1
        if isinstance(element, Size):
            if size < 0 and isinstance(data, SSAValue) and dims.name(data, s_axis) == element.name:
                shape.append(size)
            elif size == 1 and element.source is not None:
                shape.append(-1)
                needs[d] = element
            else:
                raise StaticShapesOnly(f"{ctx.label}: size {element!r} does not broadcast at {d}")
        elif isinstance(element, (int, np.integer)):
            element = int(element)
            if element == 1 or element == size:
                shape.append(size)
            elif size == 1 and element >= 0:
                shape.append(element)
            else:
                raise StaticShapesOnly(f"{ctx.label}: {element} does not broadcast with {size}")
        else:
            raise StaticShapesOnly(f"{ctx.label}: a size {element!r} known at run time only")
    return shape, needs


def like_for(ctx: NodeContext, needs: dict[int, Size], rank: int, dims: RunTimeDims) -> SSAValue:
    """A tensor of rank `rank` whose dimension d is of size `needs[d]` for each d: the
    tensor one of the sizes was read from, when it is one; else the positions along
    each size's dimension (`graph.iota`) placed at d, broadcast together."""
    for size in needs.values():
        if size.source is None:
            continue
        value, _ = size.source
        shape = value.type.get_shape()
        if len(shape) == rank and all(
            shape[d] < 0 and dims.name(value, d) == need.name for d, need in needs.items()
        ):
            return value
    from strato.dialects import graph

    like: SSAValue | None = None
    for d, need in sorted(needs.items()):
        if need.source is None:
            raise StaticShapesOnly(f"{ctx.label}: no tensor of the sizes it broadcasts to")
        positions = _positions(ctx, need, np.dtype(np.int64))
        placed = ctx.emit(graph.ReshapeOp(positions, [DYNAMIC_INDEX if a == d else 1 for a in range(rank)]))
        if like is None:
            like = placed.results[0]
            continue
        target = [DYNAMIC_INDEX if a == d else size for a, size in enumerate(like.type.get_shape())]
        like = ctx.emit(graph.BroadcastToOp(like, target, placed)).results[0]
    assert like is not None
    return like
