"""How to draw a valid instance of every registered graph op, keyed by op name.

Each drawer takes a `ProgramBuilder` (the block being built, the values defined so
far, a hypothesis `draw` and a numpy generator for constant data) and returns one new
op whose operands are earlier values, fresh function arguments or fresh constants, and
whose attributes (axes, strides, pads, layouts, ...) are valid for those operands. Ops
a drawer needs first (constants, layout transforms) it appends itself through
`ProgramBuilder.add`; the caller appends the returned op. A drawer returns None when it
cannot apply to what it drew; the caller then draws again.

`graph_programs(kinds=ALL_GRAPH_OPS)` (the default) draws from all of them, and a test
fails when a registered graph op has no entry in `OP_GENERATORS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
try:
    from hypothesis import strategies as st
except ImportError as err:  # the test extra is not installed
    from strato.testing import HYPOTHESIS_MISSING

    raise ImportError(HYPOTHESIS_MISSING) from err


from xdsl.dialects.builtin import (
    Float16Type,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from strato.dialects import graph
from strato.dialects.tensor_types import stacked_type

DIM = st.integers(min_value=1, max_value=4)


@dataclass
class ProgramBuilder:
    """The state a drawer builds on: the block of `@main`, its values so far."""

    draw: st.DrawFn
    block: Block
    rng: np.random.Generator
    values: list[SSAValue] = field(default_factory=list)
    max_inputs: int = 4
    functions: list[Operation] = field(default_factory=list)
    """Functions a drawer adds to the module besides `@main` (the branches a
    `graph.cond_call` calls)."""

    # -- operands -----------------------------------------------------------------

    def add(self, op: Operation) -> Operation:
        """Append a prerequisite op to the block (its results become values)."""
        self.block.add_op(op)
        self.values.extend(op.results)
        return op

    def constant(self, array: Any, dtype: Any = np.float32) -> SSAValue:
        op = graph.ConstantOp.from_array(np.asarray(array, dtype=dtype))
        self.block.add_op(op)
        return op.result

    def normal(self, shape: Sequence[int], scale: float = 1.0) -> SSAValue:
        return self.constant(self.rng.standard_normal(tuple(shape)) * scale)

    def argument(self, shape: Sequence[int], element: Attribute = f32) -> SSAValue:
        """A new argument of `@main` (so the program does not fold to constants)."""
        arg = self.block.insert_arg(TensorType(element, tuple(shape)), len(self.block.args))
        self.values.append(arg)
        return arg

    def of(self, element: Attribute, rank: int | None = None, min_rank: int = 0) -> SSAValue | None:
        """An earlier value of element type `element` (and `rank`), or None."""
        found = [
            v
            for v in self.values
            if isinstance(v.type, TensorType)
            and v.type.element_type == element
            and (rank is None or v.type.get_num_dims() == rank)
            and v.type.get_num_dims() >= min_rank
        ]
        if not found:
            return None
        # mostly the latest, so that chains form
        if self.draw(st.integers(0, 2)):
            return found[-1]
        return self.draw(st.sampled_from(found))

    def float_value(self, rank: int | None = None, min_rank: int = 0) -> SSAValue:
        """An f32 operand: an earlier value, or a fresh argument of a random shape."""
        v = self.of(f32, rank, min_rank)
        if v is None or (self.draw(st.integers(0, 5)) == 0 and len(self.block.args) < self.max_inputs):
            r = rank if rank is not None else self.draw(st.integers(max(min_rank, 1), max(min_rank, 3)))
            v = self.argument(self.draw(st.lists(DIM, min_size=r, max_size=r)))
        return v

    def image(self, min_hw: int = 1) -> SSAValue:
        """An f32 NCHW operand whose H and W are at least `min_hw`."""
        v = self.of(f32, rank=4)
        if v is not None and min(shape(v)[2:]) >= min_hw:
            return v
        n, c = self.draw(st.integers(1, 2)), self.draw(st.sampled_from([1, 2, 4]))
        h, w = self.draw(st.integers(min_hw, min_hw + 4)), self.draw(st.integers(min_hw, min_hw + 4))
        return self.argument((n, c, h, w))

    def partner(self, x: SSAValue, element: Attribute = f32) -> SSAValue:
        """A second operand that broadcasts with `x`: an earlier value, a fresh argument
        or a constant of a broadcastable shape."""
        s = shape(x)
        same = [
            v
            for v in self.values
            if v is not x
            and isinstance(v.type, TensorType)
            and v.type.element_type == element
            and graph.broadcast_shapes(s, shape(v)) is not None
        ]
        choice = self.draw(st.integers(0, 3))
        if same and choice == 0:
            return self.draw(st.sampled_from(same))
        dims = tuple(self.draw(st.sampled_from([1, d])) for d in s)
        dims = dims[self.draw(st.integers(0, len(dims))) :]
        if choice == 1 and len(self.block.args) < self.max_inputs:
            return self.argument(dims, element)
        if element == i1:
            return self.constant(self.rng.integers(0, 2, dims).astype(bool), np.bool_)
        return self.normal(dims)


def shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


Drawer = Callable[[ProgramBuilder], Operation | None]

OP_GENERATORS: dict[str, Drawer] = {}
"""Op name -> how to draw a valid instance of it."""


def generator(*names: str) -> Callable[[Drawer], Drawer]:
    def register(fn: Drawer) -> Drawer:
        for name in names:
            OP_GENERATORS[name] = fn
        return fn

    return register


def _op_class(name: str) -> type[Operation]:
    return next(op for op in graph.Graph.operations if op.name == name)


# -- element-wise ---------------------------------------------------------------------

_UNARY = (
    "relu sigmoid tanh erf sqrt exp log neg abs floor ceil round sign sin cos tan "
    "asin acos atan sinh cosh asinh acosh atanh reciprocal softplus softsign mish hard_swish"
).split()
_BINARY = "add sub mul div pow maximum minimum prelu".split()


def _unary(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        return _op_class(name)(b.float_value())

    return draw


def _binary(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = b.float_value()
        y = b.partner(x)
        if name == "graph.prelu":
            # the slope broadcasts to the input's shape (unidirectionally)
            if graph.broadcast_shapes(shape(x), shape(y)) != shape(x):
                y = b.normal(shape(x)[b.draw(st.integers(0, len(shape(x)))) :])
            return graph.PReluOp(x, y)
        if b.draw(st.booleans()):
            x, y = y, x
        return _op_class(name)(x, y)

    return draw


for _name in _UNARY:
    OP_GENERATORS[f"graph.{_name}"] = _unary(f"graph.{_name}")
for _name in _BINARY:
    OP_GENERATORS[f"graph.{_name}"] = _binary(f"graph.{_name}")


@generator("graph.mod")
def _mod(b: ProgramBuilder) -> Operation:
    x = b.float_value()
    return graph.ModOp(x, b.partner(x), fmod=True)


@generator("graph.leaky_relu")
def _leaky_relu(b: ProgramBuilder) -> Operation:
    return graph.LeakyReluOp(b.float_value(), b.draw(st.sampled_from([0.01, 0.2, -0.5])))


@generator("graph.clip")
def _clip(b: ProgramBuilder) -> Operation:
    low = b.draw(st.sampled_from([None, -1.0, 0.0]))
    high = b.draw(st.sampled_from([None, 0.5, 6.0]))
    return graph.ClipOp(b.float_value(), low, high)


@generator("graph.gelu")
def _gelu(b: ProgramBuilder) -> Operation:
    return graph.GeluOp(b.float_value(), b.draw(st.sampled_from(["none", "tanh"])))


def _float_params(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        cls: Any = _op_class(name)
        params = {p: b.draw(st.sampled_from([d, 0.5, 1.5])) for p, d in cls.DEFAULTS.items()}
        return cls(b.float_value(), **params)

    return draw


for _name in ("elu", "selu", "celu", "hard_sigmoid", "thresholded_relu"):
    OP_GENERATORS[f"graph.{_name}"] = _float_params(f"graph.{_name}")


# -- logic ------------------------------------------------------------------------------


def _comparison(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = b.float_value()
        return _op_class(name)(x, b.partner(x))

    return draw


for _name in ("equal", "less", "less_equal", "greater", "greater_equal"):
    OP_GENERATORS[f"graph.{_name}"] = _comparison(f"graph.{_name}")


def _bool_value(b: ProgramBuilder) -> SSAValue:
    v = b.of(i1)
    if v is None or b.draw(st.booleans()):
        x = b.float_value()
        v = b.add(graph.GreaterOp(x, b.normal(()))).results[0]
    return v


def _boolean(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = _bool_value(b)
        return _op_class(name)(x, b.partner(x, i1))

    return draw


for _name in ("and", "or", "xor"):
    OP_GENERATORS[f"graph.{_name}"] = _boolean(f"graph.{_name}")


@generator("graph.not")
def _not(b: ProgramBuilder) -> Operation:
    return graph.NotOp(_bool_value(b))


def _int_value(b: ProgramBuilder) -> SSAValue:
    """An i32 operand: an earlier i32 value or a fresh argument."""
    v = b.of(i32)
    if v is None or (b.draw(st.booleans()) and len(b.block.args) < b.max_inputs):
        r = b.draw(st.integers(1, 3))
        v = b.argument(b.draw(st.lists(DIM, min_size=r, max_size=r)), i32)
    return v


def _int_partner(b: ProgramBuilder, x: SSAValue, low: int, high: int) -> SSAValue:
    """An i32 constant of a shape broadcasting with `x`, drawn from [low, high)."""
    dims = tuple(b.draw(st.sampled_from([1, d])) for d in shape(x))
    dims = dims[b.draw(st.integers(0, len(dims))) :]
    return b.constant(b.rng.integers(low, high, dims), np.int32)


def _bitwise(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = _int_value(b)
        y = _int_partner(b, x, -(2**31), 2**31)
        if b.draw(st.booleans()):
            x, y = y, x
        return _op_class(name)(x, y)

    return draw


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    OP_GENERATORS[f"graph.{_name}"] = _bitwise(f"graph.{_name}")


@generator("graph.bitwise_not")
def _bitwise_not(b: ProgramBuilder) -> Operation:
    return graph.BitwiseNotOp(_int_value(b))


@generator("graph.bit_shift")
def _bit_shift(b: ProgramBuilder) -> Operation:
    x = _int_value(b)
    # amounts past the bit width and negative ones included
    amount = _int_partner(b, x, -3, 40)
    return graph.BitShiftOp(x, amount, b.draw(st.sampled_from(["left", "right"])))


@generator("graph.is_nan")
def _is_nan(b: ProgramBuilder) -> Operation:
    return graph.IsNaNOp(b.float_value())


@generator("graph.is_inf")
def _is_inf(b: ProgramBuilder) -> Operation:
    return graph.IsInfOp(
        b.float_value(), positive=b.draw(st.booleans()), negative=b.draw(st.booleans())
    )


@generator("graph.where")
def _where(b: ProgramBuilder) -> Operation:
    c = _bool_value(b)
    s = shape(c)
    x = b.of(f32)
    if x is None or graph.broadcast_shapes(s, shape(x)) is None:
        x = b.normal(s)
    return graph.WhereOp(c, x, b.partner(x))


@generator("graph.cast")
def _cast(b: ProgramBuilder) -> Operation:
    source = b.draw(st.sampled_from(["float", "float", "int", "bool"]))
    if source == "int" and (v := b.of(i32)) is not None:
        return graph.CastOp(v, f32)
    if source == "bool":
        return graph.CastOp(_bool_value(b), f32)
    to = b.draw(st.sampled_from([i32, i8, f16]))
    x = b.float_value()
    if isinstance(to, IntegerType):
        return graph.CastOp(x, to, saturate=b.draw(st.booleans()))
    assert isinstance(to, Float16Type)
    return graph.CastOp(x, to)


@generator("graph.bitcast")
def _bitcast(b: ProgramBuilder) -> Operation:
    """f32 values' bits as i32 (a float read back from arbitrary i32 bits could be a NaN,
    which equivalence compares loosely)."""
    return graph.BitcastOp(b.float_value(), i32)


# -- layout -----------------------------------------------------------------------------


@generator("graph.reshape")
def _reshape(b: ProgramBuilder) -> Operation:
    x = b.float_value()
    s = shape(x)
    size = int(np.prod(s))
    choice = b.draw(st.integers(0, 2))
    if choice == 0:
        target: tuple[int, ...] = (size,)
    elif choice == 1:
        target = tuple(b.draw(st.permutations(s)))
    else:
        target = (1, *s)
    return graph.ReshapeOp(x, target)


@generator("graph.transpose")
def _transpose(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    return graph.TransposeOp(x, b.draw(st.permutations(range(len(shape(x))))))


@generator("graph.concat")
def _concat(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    axis = b.draw(st.integers(0, len(s) - 1))
    others = [x]
    for _ in range(b.draw(st.integers(1, 2))):
        other = list(s)
        other[axis] = b.draw(DIM)
        others.append(b.draw(st.sampled_from([x])) if b.draw(st.booleans()) else b.normal(other))
    return graph.ConcatOp(others, axis)


@generator("graph.split")
def _split(b: ProgramBuilder) -> Operation | None:
    x = b.float_value(min_rank=1)
    s = shape(x)
    axes = [a for a, d in enumerate(s) if d >= 2]
    if not axes:
        return None
    axis = b.draw(st.sampled_from(axes))
    first = b.draw(st.integers(1, s[axis] - 1))
    return graph.SplitOp(x, axis, [first, s[axis] - first])


@generator("graph.slice")
def _slice(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    starts, steps, out = [], [], []
    for d in shape(x):
        step = b.draw(st.sampled_from([1, 1, 2, -1]))
        if step > 0:
            start = b.draw(st.integers(0, d - 1))
            count = b.draw(st.integers(1, (d - 1 - start) // step + 1))
        else:
            start = b.draw(st.integers(0, d - 1))
            count = b.draw(st.integers(1, start + 1))
        starts.append(start)
        steps.append(step)
        out.append(count)
    return graph.SliceOp(x, starts, steps, out)


@generator("graph.pad")
def _pad(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    mode = b.draw(st.sampled_from(list(graph.PadMode)))
    def amount(d: int) -> int:
        limit = d - 1 if mode == graph.PadMode.REFLECT else (d if mode == graph.PadMode.WRAP else 2)
        return b.draw(st.integers(0, max(0, min(2, limit))))

    low = [amount(d) for d in s]
    high = [amount(d) for d in s]
    value = b.draw(st.sampled_from([0.0, -1.5])) if mode == graph.PadMode.CONSTANT else None
    if mode == graph.PadMode.CONSTANT:
        # a shift of each dimension, keeping its size (low + high = 0)
        for d, dim in enumerate(s):
            if b.draw(st.booleans()):
                low[d] = b.draw(st.integers(-dim - 1, dim + 1))
                high[d] = -low[d]
    return graph.PadOp(x, low, high, mode, value)


def _indices(b: ProgramBuilder, extent: int, dims: Sequence[int]) -> SSAValue:
    # negative indices count from the end
    return b.constant(b.rng.integers(-extent, extent, tuple(dims)), np.int64)


@generator("graph.gather")
def _gather(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    axis = b.draw(st.integers(0, len(s) - 1))
    dims = b.draw(st.lists(DIM, min_size=0, max_size=2))
    return graph.GatherOp(x, _indices(b, s[axis], dims), axis)


@generator("graph.gather_elements")
def _gather_elements(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    axis = b.draw(st.integers(0, len(s) - 1))
    dims = [b.draw(st.integers(1, d)) for d in s]
    dims[axis] = b.draw(DIM)
    return graph.GatherElementsOp(x, _indices(b, s[axis], dims), axis)


@generator("graph.gather_nd")
def _gather_nd(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    k = b.draw(st.integers(1, len(s)))
    m = b.draw(DIM)
    columns = [b.rng.integers(-s[j], s[j], (m, 1)) for j in range(k)]
    return graph.GatherNDOp(x, b.constant(np.concatenate(columns, axis=1), np.int64))


@generator("graph.scatter_nd")
def _scatter_nd(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    k = b.draw(st.integers(1, len(s)))
    cells = int(np.prod(s[:k]))
    m = b.draw(st.integers(1, min(cells, 3)))
    flat = b.rng.choice(cells, size=m, replace=False)  # distinct targets
    indices = np.stack(np.unravel_index(flat, s[:k]), axis=1)
    updates = b.normal((m, *s[k:]))
    reduction = b.draw(st.sampled_from(list(graph.ScatterReduction)))
    return graph.ScatterNDOp(x, b.constant(indices, np.int64), updates, reduction)


@generator("graph.tile")
def _tile(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    return graph.TileOp(x, [b.draw(st.integers(1, 2)) for _ in shape(x)])


@generator("graph.iota")
def _iota(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    return graph.IotaOp(x, b.draw(st.integers(0, len(shape(x)) - 1)))


@generator("graph.size_of")
def _size_of(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    return graph.SizeOfOp(x, b.draw(st.integers(0, len(shape(x)) - 1)))


@generator("graph.broadcast_to")
def _broadcast_to(b: ProgramBuilder) -> Operation:
    x = b.float_value()
    target = [d if d != 1 else b.draw(DIM) for d in shape(x)]
    target = [b.draw(DIM) for _ in range(b.draw(st.integers(0, 1)))] + target
    return graph.BroadcastToOp(x, target)


@generator("graph.identity")
def _identity(b: ProgramBuilder) -> Operation:
    return graph.IdentityOp(b.float_value())


@generator("graph.dropout")
def _dropout(b: ProgramBuilder) -> Operation:
    return graph.DropoutOp(b.float_value(), b.draw(st.sampled_from([None, 0.5])))


@generator("graph.constant")
def _constant(b: ProgramBuilder) -> Operation:
    dims = b.draw(st.lists(DIM, min_size=0, max_size=3))
    data = b.rng.standard_normal(dims).astype(np.float32)
    if b.draw(st.booleans()):
        data = np.full(dims, b.draw(st.sampled_from([0.0, -1.0, 3.0])), np.float32)
    return graph.ConstantOp.from_array(data)


# -- linear algebra ---------------------------------------------------------------------


@generator("graph.matmul")
def _matmul(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    n = b.draw(DIM)
    rhs = (s[-1], n) if len(s) == 1 or b.draw(st.booleans()) else (*s[:-2], s[-1], n)
    return graph.MatmulOp(x, b.normal(rhs))


@generator("graph.dense")
def _dense(b: ProgramBuilder) -> Operation:
    x = b.float_value(rank=b.draw(st.sampled_from([2, 2, 3])))
    units = b.draw(DIM)
    bias = b.normal((units,)) if b.draw(st.booleans()) else None
    return graph.DenseOp(x, b.normal((units, shape(x)[-1])), bias)


@generator("graph.einsum")
def _einsum(b: ProgramBuilder) -> Operation:
    # x's letters, a second operand sharing some and adding others (a size-1 one
    # broadcasts), sometimes x's diagonal; an output of some letters in any order
    x = b.float_value(min_rank=1)
    s = shape(x)
    x_term = "abcd"[: len(s)]
    sizes = dict(zip(x_term, s))
    terms, operands = [x_term], [x]
    if len(s) >= 2 and s[0] == s[1] and b.draw(st.booleans()):
        terms[0] = "a" + x_term[1:].replace("b", "a")
    elif b.draw(st.booleans()):
        shared = b.draw(st.lists(st.sampled_from(x_term), min_size=1, max_size=2, unique=True))
        own = "xy"[: b.draw(st.integers(0, 2))]
        term = "".join(b.draw(st.permutations(list(shared) + list(own))))
        dims = [
            (sizes[letter] if b.draw(st.integers(0, 4)) else 1) if letter in sizes else b.draw(DIM)
            for letter in term
        ]
        terms.append(term)
        operands.append(b.normal(dims))
    letters = sorted(set("".join(terms)))
    output = b.draw(st.lists(st.sampled_from(letters), max_size=3, unique=True))
    return graph.EinsumOp(",".join(terms) + "->" + "".join(output), operands)


@generator("graph.resize")
def _resize(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    mode = b.draw(st.sampled_from(graph.RESIZE_MODES))
    how = graph.Interpolation(
        mode=mode,
        coordinates=b.draw(st.sampled_from(graph.COORDINATE_MODES)),
        nearest_mode=b.draw(st.sampled_from(graph.NEAREST_MODES)),
        cubic_a=b.draw(st.sampled_from([-0.75, -0.5])),
        exclude_outside=b.draw(st.booleans()),
        antialias=mode != "nearest" and b.draw(st.booleans()),
        extrapolation_value=b.draw(st.sampled_from([0.0, 2.5])),
    )
    scales, out = [], []
    for d in s:
        scale = b.draw(st.sampled_from([1.0, 0.5, 0.75, 1.5, 2.0, 3.0]))
        size = int(scale * d)
        if size == 0:
            scale, size = 1.0, d
        scales.append(scale)
        out.append(size)
    starts = [b.draw(st.sampled_from([0.0, 0.2])) for _ in s]
    ends = [b.draw(st.sampled_from([1.0, 0.9, 1.2])) for _ in s]
    return graph.ResizeOp(x, out, how, scales, starts + ends)


# -- nn ---------------------------------------------------------------------------------


def _window(b: ProgramBuilder, h: int, w: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """kernel, strides, padding (4) and dilations of a window that fits [h, w]."""
    kernel, dilations, padding = [], [], []
    for extent in (h, w):
        k = b.draw(st.integers(1, 3))
        d = b.draw(st.integers(1, 2))
        lo, hi = b.draw(st.integers(0, (k - 1))), b.draw(st.integers(0, (k - 1)))
        while (k - 1) * d + 1 > extent + lo + hi:
            if d > 1:
                d = 1
            elif k > 1:
                k -= 1
                lo, hi = min(lo, k - 1), min(hi, k - 1)
        kernel.append(k)
        dilations.append(d)
        padding.append((lo, hi))
    strides = [b.draw(st.integers(1, 2)) for _ in range(2)]
    return kernel, strides, [padding[0][0], padding[1][0], padding[0][1], padding[1][1]], dilations


@generator("graph.conv")
def _conv(b: ProgramBuilder) -> Operation:
    x = b.image()
    n, c, h, w = shape(x)
    kernel, strides, padding, dilations = _window(b, h, w)
    groups = b.draw(st.sampled_from([g for g in (1, c) if c % g == 0]))
    out = groups * b.draw(st.integers(1, 2))
    weight = b.normal((out, c // groups, *kernel), 0.5)
    bias = b.normal((out,)) if b.draw(st.booleans()) else None
    return graph.ConvOp(x, weight, bias, strides=strides, padding=padding, dilations=dilations, groups=groups)


@generator("graph.conv_transpose")
def _conv_transpose(b: ProgramBuilder) -> Operation:
    x = b.image()
    n, c, h, w = shape(x)
    kernel = [b.draw(st.integers(1, 3)) for _ in range(2)]
    strides = [b.draw(st.integers(1, 2)) for _ in range(2)]
    padding = [b.draw(st.integers(0, k - 1)) for k in kernel * 2]
    output_padding = [b.draw(st.integers(0, s - 1)) for s in strides]
    for i, extent in enumerate((h, w)):
        full = (extent - 1) * strides[i] + kernel[i] + output_padding[i]
        if full - padding[i] - padding[i + 2] < 1:
            padding[i] = padding[i + 2] = 0
    groups = b.draw(st.sampled_from([g for g in (1, c) if c % g == 0]))
    out = b.draw(st.integers(1, 2))
    weight = b.normal((c, out, *kernel), 0.5)
    bias = b.normal((out * groups,)) if b.draw(st.booleans()) else None
    return graph.ConvTransposeOp(
        x, weight, bias, strides=strides, padding=padding, output_padding=output_padding, groups=groups
    )


def _pool(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = b.image()
        _, _, h, w = shape(x)
        kernel, strides, padding, dilations = _window(b, h, w)
        if name != "graph.avg_pool":
            # a max pool's padding stays below its kernel, so no window is all padding
            padding = [min(p, k - 1) for p, k in zip(padding, kernel * 2)]
        options: dict[str, Any] = {
            "strides": strides,
            "padding": padding,
            "ceil_mode": b.draw(st.booleans()),
        }
        if name == "graph.avg_pool":
            return graph.AvgPoolOp(x, kernel, count_include_pad=b.draw(st.booleans()), **options)
        return _op_class(name)(x, kernel, dilations=dilations, **options)

    return draw


for _name in ("graph.max_pool", "graph.max_pool_with_indices", "graph.avg_pool"):
    OP_GENERATORS[_name] = _pool(_name)


@generator("graph.global_avg_pool")
def _global_avg_pool(b: ProgramBuilder) -> Operation:
    return graph.GlobalAvgPoolOp(b.image())


@generator("graph.softmax")
def _softmax(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    r = len(shape(x))
    axes = sorted(set(b.draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=r))))
    return graph.SoftmaxOp(x, axes)


@generator("graph.layer_norm")
def _layer_norm(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    axis = b.draw(st.integers(0, len(s) - 1))
    normalized = s[axis:]
    scale = b.normal(normalized) if b.draw(st.booleans()) else None
    bias = b.normal(normalized) if scale is not None and b.draw(st.booleans()) else None
    return graph.LayerNormOp(x, axis, 1e-5, scale, bias, with_stats=b.draw(st.booleans()))


@generator("graph.batch_norm")
def _batch_norm(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=2)
    c = shape(x)[1]
    params = [
        b.constant(b.rng.uniform(0.5, 1.5, c)),
        b.normal((c,)),
        b.normal((c,)),
        b.constant(b.rng.uniform(0.5, 2.0, c)),
    ]
    return graph.BatchNormOp(x, *params, epsilon=1e-3)


# -- reductions -------------------------------------------------------------------------


def _reduction(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = b.float_value(min_rank=1)
        r = len(shape(x))
        axes = sorted(set(b.draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=r))))
        return _op_class(name)(x, axes, b.draw(st.booleans()))

    return draw


for _name in "sum mean max min prod l1 l2 sum_square log_sum_exp".split():
    OP_GENERATORS[f"graph.reduce_{_name}"] = _reduction(f"graph.reduce_{_name}")


def _arg_reduction(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = b.float_value(min_rank=1)
        r = len(shape(x))
        return _op_class(name)(
            x, b.draw(st.integers(0, r - 1)), b.draw(st.booleans()), b.draw(st.booleans())
        )

    return draw


OP_GENERATORS["graph.arg_max"] = _arg_reduction("graph.arg_max")
OP_GENERATORS["graph.arg_min"] = _arg_reduction("graph.arg_min")


def _cumulative(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        x = b.float_value()
        axis = b.draw(st.integers(0, len(shape(x)) - 1))
        op_class: Any = _op_class(name)
        return op_class(x, axis, b.draw(st.booleans()), b.draw(st.booleans()))

    return draw


OP_GENERATORS["graph.cumsum"] = _cumulative("graph.cumsum")
OP_GENERATORS["graph.cumprod"] = _cumulative("graph.cumprod")


@generator("graph.top_k")
def _top_k(b: ProgramBuilder) -> Operation:
    x = b.float_value(min_rank=1)
    s = shape(x)
    axis = b.draw(st.integers(0, len(s) - 1))
    return graph.TopKOp(x, axis, b.draw(st.integers(1, s[axis])), b.draw(st.booleans()))


# -- recurrent --------------------------------------------------------------------------


@generator("graph.lstm")
def _lstm(b: ProgramBuilder) -> Operation:
    x = b.float_value(rank=3)
    seq, batch, features = shape(x)
    hidden = b.draw(st.integers(1, 3))
    direction = b.draw(st.sampled_from(list(graph.LstmDirection)))
    dirs = 2 if direction == graph.LstmDirection.BIDIRECTIONAL else 1
    w = b.normal((dirs, 4 * hidden, features), 0.5)
    r = b.normal((dirs, 4 * hidden, hidden), 0.5)
    bias = b.normal((dirs, 8 * hidden), 0.5) if b.draw(st.booleans()) else None
    initial_h = b.normal((dirs, batch, hidden)) if b.draw(st.booleans()) else None
    initial_c = b.normal((dirs, batch, hidden)) if b.draw(st.booleans()) else None
    peepholes = b.normal((dirs, 3 * hidden), 0.5) if b.draw(st.booleans()) else None
    return graph.LstmOp(
        direction, x, w, r, bias, initial_h=initial_h, initial_c=initial_c, peepholes=peepholes
    )


def _recurrent_cell(op_class: type[graph.RecurrenceOp]) -> Drawer:
    """graph.gru or graph.rnn with any activations, clip and (GRU) linear_before_reset."""

    def draw(b: ProgramBuilder) -> Operation:
        x = b.float_value(rank=3)
        seq, batch, features = shape(x)
        hidden = b.draw(st.integers(1, 3))
        direction = b.draw(st.sampled_from(list(graph.LstmDirection)))
        dirs = 2 if direction == graph.LstmDirection.BIDIRECTIONAL else 1
        rows = op_class.GATES * hidden
        w = b.normal((dirs, rows, features), 0.5)
        r = b.normal((dirs, rows, hidden), 0.5)
        bias = b.normal((dirs, 2 * rows), 0.5) if b.draw(st.booleans()) else None
        initial_h = b.normal((dirs, batch, hidden)) if b.draw(st.booleans()) else None
        count = len(op_class.DEFAULT_ACTIVATIONS) * dirs
        kinds = st.sampled_from(list(graph.RnnActivation))
        activations = [
            graph.CellFunction.of(kind)
            for kind in b.draw(st.lists(kinds, min_size=count, max_size=count))
        ]
        options = {"activations": activations, "clip": b.draw(st.sampled_from([None, 0.5, 3.0]))}
        if op_class is graph.GruOp:
            options["linear_before_reset"] = b.draw(st.booleans())
        return op_class(direction, x, w, r, bias, initial_h=initial_h, **options)

    return draw


OP_GENERATORS["graph.gru"] = _recurrent_cell(graph.GruOp)
OP_GENERATORS["graph.rnn"] = _recurrent_cell(graph.RnnOp)


# -- blocked layouts and fused groups ---------------------------------------------------


def _blocked_input(b: ProgramBuilder, block: int, min_hw: int = 1) -> SSAValue:
    """An NCHW image relaid out to NCHW{block}c."""
    x = b.image(min_hw)
    n, c, h, w = shape(x)
    if c % block:
        x = b.argument((n, block * b.draw(st.integers(1, 2)), h, w))
    return b.add(
        graph.LayoutTransformOp(x, "NCHW", graph.blocked_layout(block))
    ).results[0]


@generator("graph.layout_transform")
def _layout_transform(b: ProgramBuilder) -> Operation:
    block = b.draw(st.sampled_from([1, 2]))
    if b.draw(st.booleans()):
        x = _blocked_input(b, block)
        return graph.LayoutTransformOp(x, graph.blocked_layout(block), "NCHW")
    x = b.image()
    if shape(x)[1] % block:
        block = 1
    return graph.LayoutTransformOp(x, "NCHW", graph.blocked_layout(block))


@generator("graph.blocked_conv")
def _blocked_conv(b: ProgramBuilder) -> Operation:
    block = b.draw(st.sampled_from([1, 2]))
    x = _blocked_input(b, block)
    n, cb, h, w, _ = shape(x)
    c = cb * block
    kernel, strides, padding, dilations = _window(b, h, w)
    out_blocks = b.draw(st.integers(1, 2))
    order = b.draw(st.sampled_from(["io", "oi"]))
    inner = (block, block)
    weight = b.normal((out_blocks, cb, *kernel, *inner), 0.5)
    bias = b.normal((out_blocks * block,)) if b.draw(st.booleans()) else None
    return graph.BlockedConvOp(
        x, weight, bias, strides=strides, padding=padding, dilations=dilations, groups=1,
        in_block=block, out_block=block, kernel_order=order,
    )


@generator("graph.blocked_winograd_conv")
def _blocked_winograd_conv(b: ProgramBuilder) -> Operation:
    block = b.draw(st.sampled_from([1, 2]))
    x = _blocked_input(b, block)
    _, cb, h, w, _ = shape(x)
    tile = b.draw(st.sampled_from([2, 4]))
    # begin and end padding per dimension; at least a 3 x 3 window
    pads = [b.draw(st.integers(0, 1)) for _ in range(4)]
    for d, size in enumerate((h, w)):
        if size + pads[d] + pads[d + 2] < 3:
            pads[d] = pads[d + 2] = 1
    out_blocks = b.draw(st.integers(1, 2))
    weight = b.normal(((tile + 2) ** 2, out_blocks, cb, block, block), 0.5)
    bias = b.normal((out_blocks * block,)) if b.draw(st.booleans()) else None
    return graph.BlockedWinogradConvOp(
        x, weight, bias, padding=pads, tile=tile, in_block=block, out_block=block
    )


def _blocked_pool(name: str) -> Drawer:
    def draw(b: ProgramBuilder) -> Operation:
        block = b.draw(st.sampled_from([1, 2]))
        x = _blocked_input(b, block)
        _, _, h, w, _ = shape(x)
        kernel, strides, padding, dilations = _window(b, h, w)
        padding = [min(p, k - 1) for p, k in zip(padding, kernel * 2)]
        cls: Any = _op_class(name)
        return cls(
            x, kernel, strides=strides, padding=padding, dilations=dilations,
            ceil_mode=b.draw(st.booleans()), block=block,
        )

    return draw


for _name in ("graph.blocked_max_pool", "graph.blocked_avg_pool"):
    OP_GENERATORS[_name] = _blocked_pool(_name)


@generator("graph.blocked_global_avg_pool")
def _blocked_global_avg_pool(b: ProgramBuilder) -> Operation:
    block = b.draw(st.sampled_from([1, 2]))
    return graph.BlockedGlobalAvgPoolOp(_blocked_input(b, block), block)


@generator("graph.fused", "graph.yield")
def _fused(b: ProgramBuilder) -> Operation:
    """A fused group of one or two element-wise ops ending in graph.yield."""
    x = b.float_value()
    y = b.partner(x)
    body = Block(arg_types=[x.type, y.type])
    first = graph.AddOp(*body.args) if b.draw(st.booleans()) else graph.MulOp(*body.args)
    body.add_op(first)
    last: Operation = first
    if b.draw(st.booleans()):
        last = graph.ReluOp(first.result)
        body.add_op(last)
    body.add_op(graph.YieldOp([last.results[0]]))
    return graph.FusedOp(
        "generated", graph.PatternKind.BROADCAST,
        [x, y], [last.results[0].type], Region(body),
    )


# -- run-time branches (strato.dialects.graph.control) --------------------------------------


def _condition(b: ProgramBuilder) -> SSAValue:
    """A one-element boolean: a fresh argument, or a comparison of a reduced value."""
    if b.draw(st.booleans()) and len(b.block.args) < b.max_inputs:
        return b.argument(b.draw(st.sampled_from([(), (1,)])), i1)
    x = b.float_value(min_rank=1)
    total = b.add(graph.ReduceSumOp(x, list(range(len(shape(x)))), keepdims=False)).results[0]
    return b.add(graph.GreaterOp(total, b.normal(()))).results[0]


def _branch_body(b: ProgramBuilder, x: SSAValue, y: SSAValue, block: Block) -> SSAValue:
    """One or two element-wise ops of `x` and `y` (or `x` as it is, or a constant of its
    type) appended to `block`; the value the branch gives."""
    kind = b.draw(st.sampled_from(["same", "constant", "ops", "ops"]))
    if kind == "same":
        return x
    if kind == "constant":
        op = graph.ConstantOp.from_array(b.rng.standard_normal(shape(x)).astype(np.float32))
        block.add_op(op)
        return op.result
    first = b.draw(st.sampled_from([graph.AddOp, graph.MulOp]))(x, y)  # y keeps x's shape
    block.add_op(first)
    if b.draw(st.booleans()):
        last = b.draw(st.sampled_from([graph.ReluOp, graph.TanhOp]))(first.results[0])
        block.add_op(last)
        return last.results[0]
    return first.results[0]


def _same_shape_partner(b: ProgramBuilder, x: SSAValue) -> SSAValue:
    """A second operand whose broadcast with `x` keeps `x`'s shape."""
    y = b.partner(x)
    if graph.broadcast_shapes(shape(x), shape(y)) != shape(x):
        y = b.normal(shape(x))
    return y


@generator("graph.if")
def _if(b: ProgramBuilder) -> Operation:
    """A graph.if whose regions read earlier values (and constants) of @main."""
    condition = _condition(b)
    x = b.float_value()
    y = _same_shape_partner(b, x)
    regions = []
    for _ in range(2):
        block = Block()
        block.add_op(graph.YieldOp([_branch_body(b, x, y, block)]))
        regions.append(Region(block))
    return graph.IfOp(condition, [x.type], regions[0], regions[1])


@generator("graph.cond_call")
def _cond_call(b: ProgramBuilder) -> Operation:
    """A graph.cond_call of two new functions of (x, y)."""
    from xdsl.dialects import func

    condition = _condition(b)
    x = b.float_value()
    y = _same_shape_partner(b, x)
    names = []
    for which in ("then", "else"):
        block = Block(arg_types=[x.type, y.type])
        value = _branch_body(b, block.args[0], block.args[1], block)
        block.add_op(func.ReturnOp(value))
        name = f"branch{len(b.functions)}_{which}"
        function = func.FuncOp(name, ([x.type, y.type], [x.type]), Region(block))
        function.sym_visibility = StringAttr("private")
        b.functions.append(function)
        names.append(name)
    return graph.CondCallOp(condition, names[0], names[1], [x, y], [x.type])


def _trip_count(b: ProgramBuilder) -> SSAValue:
    """A small trip count: a constant, or a fresh argument capped at 6 (edge inputs
    hold the extremes of int64)."""
    cap = b.constant(np.int64(b.draw(st.integers(0, 6))), np.int64)
    if b.draw(st.booleans()) and len(b.block.args) < b.max_inputs:
        return b.add(graph.MinimumOp(b.argument((), i64), cap)).results[0]
    return cap


def _loop_body(b: ProgramBuilder, block: Block, x: SSAValue, y: SSAValue) -> None:
    """The body of a loop over (iteration, condition, state): state <- a bounded update
    of it by `y` (an outer value, or the body's own constant); the condition is kept, or
    becomes a test on the new state."""
    i, going, state = block.args
    update = b.draw(st.sampled_from([graph.AddOp, graph.MulOp]))(state, y)
    block.add_op(update)
    squashed = graph.TanhOp(update.results[0])  # keeps the state bounded
    block.add_op(squashed)
    new = squashed.results[0]
    if b.draw(st.booleans()):
        counted = graph.CastOp(i, f32)
        block.add_op(counted)
        plus = graph.AddOp(new, counted.results[0])
        block.add_op(plus)
        new = plus.results[0]
    if b.draw(st.booleans()):
        total = graph.ReduceSumOp(new, list(range(len(shape(new)))), keepdims=False)
        zero = graph.ConstantOp.from_array(np.float32(b.rng.standard_normal()))
        test = graph.GreaterOp(total.results[0], zero.result)
        block.add_ops([total, zero, test])
        going = test.results[0]
    block.add_op(graph.YieldOp([going, new]))


@generator("graph.loop")
def _loop(b: ProgramBuilder) -> Operation:
    """A graph.loop carrying one value, its body reading an earlier value of @main."""
    max_trip, condition = _trip_count(b), _scalar_condition(b)
    x = b.float_value(min_rank=1)
    y = _same_shape_partner(b, x)
    block = Block(arg_types=[graph.ITERATION_TYPE, graph.CONDITION_TYPE, x.type])
    _loop_body(b, block, x, y)
    return graph.LoopOp(max_trip, condition, [x], Region(block))


@generator("graph.loop_call")
def _loop_call(b: ProgramBuilder) -> Operation:
    """A graph.loop_call of a new body function (the state, then one captured value)."""
    from xdsl.dialects import func

    max_trip, condition = _trip_count(b), _condition(b)
    x = b.float_value(min_rank=1)
    y = _same_shape_partner(b, x)
    types = [graph.ITERATION_TYPE, graph.CONDITION_TYPE, x.type, y.type]
    block = Block(arg_types=types)
    region_block = Block(arg_types=types[:3])
    _loop_body(b, region_block, x, block.args[3])
    # the body as a function: its region's ops, with the captured value an argument
    for arg, new in zip(region_block.args, block.args[:3]):
        arg.replace_all_uses_with(new)
    for op in list(region_block.ops):
        op.detach()
        if isinstance(op, graph.YieldOp):
            block.add_op(func.ReturnOp(*op.values))
            op.erase()
        else:
            block.add_op(op)
    name = f"body{len(b.functions)}"
    function = func.FuncOp(name, (types, [graph.CONDITION_TYPE, x.type]), Region(block))
    function.sym_visibility = StringAttr("private")
    b.functions.append(function)
    return graph.LoopCallOp(max_trip, condition, name, [x], [y])


def _scanned(b: ProgramBuilder, x: SSAValue) -> SSAValue:
    """A tensor of 0-4 positions of `x`'s shape to scan: an argument or a constant."""
    positions = [b.draw(st.integers(0, 4)), *shape(x)]
    if b.draw(st.booleans()) and len(b.block.args) < b.max_inputs:
        return b.argument(positions)
    return b.normal(positions)


def _scan_body(b: ProgramBuilder, block: Block, y: SSAValue, stops: bool = False) -> None:
    """The body of a scan over (state, position): state <- a bounded update of it by
    the position, then maybe by `y` (an outer value); the row it gives is the update or
    the new state. A scan that `stops` carries its condition first: kept, or a test on
    the new state."""
    going = block.args[0] if stops else None
    state, position = block.args[int(stops) : int(stops) + 2]
    update = b.draw(st.sampled_from([graph.AddOp, graph.MulOp]))(state, position)
    squashed = graph.TanhOp(update.results[0])
    block.add_ops([update, squashed])
    new = squashed.results[0]
    if b.draw(st.booleans()):
        mixed = graph.MulOp(new, y)
        squashed = graph.TanhOp(mixed.results[0])
        block.add_ops([mixed, squashed])
        new = squashed.results[0]
    row = b.draw(st.sampled_from([update.results[0], new]))
    if going is not None and b.draw(st.booleans()):
        total = graph.ReduceSumOp(new, list(range(len(shape(new)))), keepdims=False)
        limit = graph.ConstantOp.from_array(np.float32(b.rng.standard_normal()))
        test = graph.GreaterOp(total.results[0], limit.result)
        block.add_ops([total, limit, test])
        going = test.results[0]
    block.add_op(graph.YieldOp([*([going] if going is not None else []), new, row]))


def _scalar_condition(b: ProgramBuilder) -> SSAValue:
    """A `tensor<i1>` (`_condition`, reshaped when it has one axis): what a loop or a
    scan that stops starts with."""
    condition = _condition(b)
    if shape(condition) != ():
        condition = b.add(graph.ReshapeOp(condition, [])).results[0]
    return condition


@generator("graph.scan")
def _scan(b: ProgramBuilder) -> Operation:
    """A graph.scan carrying one value along a scanned tensor of its shape, its body
    reading an earlier value of @main; maybe one that `stops`, carrying a condition."""
    x = b.float_value()
    y = _same_shape_partner(b, x)
    scanned = _scanned(b, x)
    stops = b.draw(st.booleans())
    start = [_scalar_condition(b)] if stops else []
    block = Block(arg_types=[*(v.type for v in start), x.type, x.type])
    _scan_body(b, block, y, stops)
    carried = [*(v.type for v in start), x.type]
    stacked = stacked_type(x.type, shape(scanned)[0])
    return graph.ScanOp([*start, x], [scanned], Region(block), [*carried, stacked], stops)


@generator("graph.scan_call")
def _scan_call(b: ProgramBuilder) -> Operation:
    """A graph.scan_call of a new body function (state, position, then one captured
    value; a condition first for one that `stops`)."""
    from xdsl.dialects import func

    x = b.float_value()
    y = _same_shape_partner(b, x)
    scanned = _scanned(b, x)
    stops = b.draw(st.booleans())
    start = [_scalar_condition(b)] if stops else []
    carried = [*(v.type for v in start), x.type]
    types = [*carried, x.type, y.type]
    block = Block(arg_types=types)
    _scan_body(b, block, block.args[-1], stops)
    yielded = block.last_op
    assert isinstance(yielded, graph.YieldOp)
    values = list(yielded.values)
    yielded.detach()
    yielded.erase()
    block.add_op(func.ReturnOp(*values))
    name = f"body{len(b.functions)}"
    function = func.FuncOp(name, (types, [*carried, x.type]), Region(block))
    function.sym_visibility = StringAttr("private")
    b.functions.append(function)
    stacked = stacked_type(x.type, shape(scanned)[0])
    return graph.ScanCallOp(name, [*start, x], [scanned], [y], [*carried, stacked], stops)


# -- quantized tensors (strato.dialects.graph.quant) --------------------------------------


_UI8 = IntegerType(8, Signedness.UNSIGNED)


def _quantized_type(b: ProgramBuilder) -> tuple[Attribute, Any]:
    return (_UI8, np.uint8) if b.draw(st.booleans()) else (i8, np.int8)


def _axis_parameters(b: ProgramBuilder, x_shape: Sequence[int], zero_dtype: Any) -> tuple[SSAValue, SSAValue, int]:
    """A positive scale and a zero point, per tensor or along a drawn axis."""
    axis = b.draw(st.integers(0, len(x_shape) - 1)) if x_shape else 0
    per_axis = bool(x_shape) and b.draw(st.booleans())
    dims = (x_shape[axis],) if per_axis else ()
    scale = b.constant(b.rng.uniform(0.01, 0.5, dims).astype(np.float32))
    info = np.iinfo(zero_dtype)
    zero = b.constant(b.rng.integers(info.min, int(info.max) + 1, dims), zero_dtype)
    return scale, zero, axis


def _quantized_value(b: ProgramBuilder, rank: int | None = None) -> SSAValue:
    """An int8 / uint8 operand: an earlier one, or a fresh argument."""
    element, _ = _quantized_type(b)
    v = b.of(element, rank)
    if v is not None:
        return v
    r = rank if rank is not None else b.draw(st.integers(1, 3))
    return b.argument(b.draw(st.lists(DIM, min_size=r, max_size=r)), element)


@generator("graph.quantize")
def _quantize(b: ProgramBuilder) -> Operation:
    x = b.float_value()
    element, dtype = _quantized_type(b)
    scale, zero, axis = _axis_parameters(b, shape(x), dtype)
    return graph.QuantizeOp(x, scale, zero, element, axis)


@generator("graph.dequantize")
def _dequantize(b: ProgramBuilder) -> Operation:
    q = _quantized_value(b)
    dtype = np.uint8 if q.type.element_type == _UI8 else np.int8
    scale, zero, axis = _axis_parameters(b, shape(q), dtype)
    return graph.DequantizeOp(q, scale, zero, f32, axis)


def _accumulator(b: ProgramBuilder) -> SSAValue:
    v = b.of(i32)
    if v is not None:
        return v
    r = b.draw(st.integers(1, 3))
    return b.argument(b.draw(st.lists(DIM, min_size=r, max_size=r)), i32)


@generator("graph.requantize")
def _requantize(b: ProgramBuilder) -> Operation:
    acc = _accumulator(b)
    element, dtype = _quantized_type(b)
    _, zero, axis = _axis_parameters(b, shape(acc), dtype)
    dims = tuple(shape(zero))
    multiplier = b.constant(b.rng.uniform(0.001, 0.1, dims).astype(np.float32))
    return graph.RequantizeOp(acc, multiplier, zero, element, axis, wide=b.draw(st.booleans()))


@generator("graph.qconv")
def _qconv(b: ProgramBuilder) -> Operation:
    element, dtype = _quantized_type(b)
    n, h, w = b.draw(st.integers(1, 2)), b.draw(st.integers(1, 5)), b.draw(st.integers(1, 5))
    c = b.draw(st.sampled_from([1, 2, 4, 8]))
    x = b.argument((n, c, h, w), element)
    kernel, strides, padding, dilations = _window(b, h, w)
    groups = b.draw(st.sampled_from([g for g in (1, c) if c % g == 0]))
    out = groups * b.draw(st.integers(1, 3))
    weights = b.rng.integers(-128, 128, (out, c // groups, *kernel)).astype(np.int8)
    packed = groups == 1 and c % graph.quant.PACK == 0 and b.draw(st.booleans())
    weight = b.constant(graph.pack_conv_weight(weights) if packed else weights, np.int8)
    bias = b.constant(b.rng.integers(-1000, 1000, out), np.int32) if b.draw(st.booleans()) else None
    info = np.iinfo(dtype)
    pad_value = b.draw(st.integers(int(info.min), int(info.max)))
    return graph.QConvOp(
        x, weight, bias, strides=strides, padding=padding, dilations=dilations,
        groups=groups, pad_value=pad_value, packed=packed,
    )


@generator("graph.qdense")
def _qdense(b: ProgramBuilder) -> Operation:
    x = _quantized_value(b, rank=b.draw(st.sampled_from([1, 2, 2, 3])))
    depth = shape(x)[-1]
    units = b.draw(DIM)
    weights = b.rng.integers(-128, 128, (units, depth)).astype(np.int8)
    packed = depth % graph.quant.PACK == 0 and b.draw(st.booleans())
    weight = b.constant(graph.pack_dense_weight(weights) if packed else weights, np.int8)
    bias = b.constant(b.rng.integers(-1000, 1000, units), np.int32) if b.draw(st.booleans()) else None
    return graph.QDenseOp(x, weight, bias, packed=packed)


ALL_GRAPH_OPS: tuple[str, ...] = tuple(sorted(OP_GENERATORS))
"""Every op name with a generator: the default kinds of `graph_programs`."""

__all__ = ["ALL_GRAPH_OPS", "OP_GENERATORS", "ProgramBuilder", "Drawer", "generator", "shape", "i64"]
