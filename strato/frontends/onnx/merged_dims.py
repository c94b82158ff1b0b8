"""Tensors whose leading run-time dimensions a reshape merges.

A run-time dimension is a class of its own (`graph.dims`): a graph tensor never holds
the product of two of them. Exporters merge them all the same, for one op and back:

    x2 = Reshape(x: [?batch, ?seq, 64], [-1, 64])   # [batch * seq, 64]
    y2 = Gemm(x2, w, b)                              # torch's addmm of a Conv1D
    y = Reshape(y2, Concat(Shape(x)[:-1], [192]))    # [batch, seq, 192]

or flatten a padding mask [batch, seq] to gather it at `b * seq + s` (transformers'
attention masks). Such a value is imported as a `Merged`: the tensor before the merge,
`value`, how many of its leading dimensions the merge joins into the first, `rows`, and
the rest of the merged shape (`value`'s own dimensions after them, or static sizes of
as many elements). The ops that take one compute on `value` instead:

- Reshape to any shape: the reshape of `value` (the elements in the same order);
- Gemm (no transA) and MatMul with a second operand of static shape: the product of
  `value`'s rows, merged again; MatMul of two tensors merged alike ([batch * heads, seq,
  head] by [batch * heads, head, seq], torch's bmm): the product of the tensors before
  the merge, merged again;
- element-wise ops (`ELEMENTWISE_ONNX_OPS`) of tensors merged alike and operands that
  broadcast along the merged dimension (a scale, a bias over the rest), Softmax along
  the rest, and reductions over it (`REDUCTIONS`): the op of the tensors before the
  merge, merged again;
- Transpose keeping the merged dimension first (torch.export's k transposed through
  [batch * heads, seq, head]): the transpose of `value`, merged again; so are an Expand
  to the merged tensor's own sizes (broadcasting its rest) and an Unsqueeze or Squeeze
  after the merged dimension;
- Shape: the merged shape (its first element the product of the sizes);
- Gather along the first axis of a merged Flatten, at the index `b * seq + s` built from
  `Range`s of the merged sizes (`flat_index`): `value`'s elements in place.

The index itself, and the pairs (b, s) torch.export's GatherND reads, are `IndexExpr`s:
tensors only those gathers read, which follow the ONNX nodes that computed them. Any
other op that reads a `Merged` or an `IndexExpr` imports the model with static shapes
(`StaticShapesOnly`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, TensorType
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.dims import RunTimeDims
from strato.frontends.onnx.conversion import NodeContext
from strato.frontends.onnx.shape_values import (
    ShapeValue,
    Size,
    StaticShapesOnly,
    class_name,
    factors,
    of_tensor,
    product,
    selected_dimensions,
    shape_value,
)

ELEMENTWISE_ONNX_OPS = frozenset({
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil",
    "Celu", "Clip", "Cos", "Cosh", "Div", "Elu", "Equal", "Erf", "Exp", "Floor", "Gelu",
    "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN",
    "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Min", "Mish", "Mul", "Neg", "Not",
    "Or", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Sinh",
    "Softplus", "Softsign", "Sqrt", "Sub", "Tan", "Tanh", "ThresholdedRelu", "Where", "Xor",
})  # fmt: skip
"""The ONNX operators that apply element by element, with broadcasts: they take
run-time dimensions, and tensors whose run-time dimensions a reshape merges."""


class Merged:
    """`value` reshaped to [product of its first `rows` dimensions, *rest] (`rest`:
    `value`'s dimensions after `rows`, or static ones of as many elements)."""

    def __init__(self, value: SSAValue, rows: int, rest: tuple[int, ...]):
        self.value = value
        self.rows = rows
        self.rest = rest

    @property
    def shape(self) -> tuple[int, ...]:
        return (-1, *self.rest)

    def __repr__(self) -> str:
        return f"Merged({self.value.type}, rows={self.rows}, rest={list(self.rest)})"


class IndexExpr:
    """An integer tensor of run-time dimensions computed from positions and sizes (the
    flat index `b * seq + s` of a mask), which only a gather of a merged tensor reads
    (`flat_index` follows its ONNX nodes): its shape, and the name of the size of each
    run-time dimension (None for a static one)."""

    def __init__(self, shape: tuple[int, ...], names: tuple[str | None, ...]):
        self.shape = shape
        self.names = names

    def __repr__(self) -> str:
        return f"IndexExpr({[n or s for s, n in zip(self.shape, self.names)]})"


def _index_of(value: object, dims: RunTimeDims) -> IndexExpr | None:
    """An integer tensor of run-time dimensions, or an `IndexExpr`, as an `IndexExpr`."""
    if isinstance(value, IndexExpr):
        return value
    if not isinstance(value, SSAValue) or not isinstance(value.type, TensorType):
        return None
    element = value.type.element_type
    if not isinstance(element, IntegerType) or element.width.data == 1:
        return None
    shape = _shape(value)
    if not any(size < 0 for size in shape):
        return None
    return IndexExpr(shape, tuple(dims.name(value, d) if size < 0 else None for d, size in enumerate(shape)))


def _index_arithmetic(ctx: NodeContext, dims: RunTimeDims) -> list | None:
    """Mul of positions by a size, Add of two such, Cast or Identity of one: an
    `IndexExpr` (None when the node is none of these)."""
    inputs = [ctx.static_value(n) for n in range(len(ctx.node.input)) if ctx.has_input(n)]
    if ctx.op_type in ("Cast", "Identity") and isinstance(inputs[0], IndexExpr):
        return [inputs[0]]
    if ctx.op_type == "Mul" and len(inputs) == 2:
        for first, second in ((0, 1), (1, 0)):
            index = _index_of(inputs[first], dims)
            if index is not None and _scalar(inputs[second]) is not None and (
                isinstance(inputs[first], IndexExpr) or isinstance(inputs[second], ShapeValue)
            ):
                return [index]
        return None
    if ctx.op_type == "Add" and len(inputs) == 2 and any(isinstance(v, IndexExpr) for v in inputs):
        left, right = (_index_of(v, dims) for v in inputs)
        if left is None or right is None:
            raise StaticShapesOnly(f"{ctx.label}: an index of run-time sizes plus another value")
        rank = max(len(left.shape), len(right.shape))
        shape, names = [], []
        for axis in range(rank):
            pairs = [
                (e.shape[axis - rank + len(e.shape)], e.names[axis - rank + len(e.shape)])
                for e in (left, right) if axis - rank + len(e.shape) >= 0
            ]  # fmt: skip
            wide = [p for p in pairs if p[0] != 1]
            if len({p[1] if p[0] < 0 else p[0] for p in wide}) > 1:
                raise StaticShapesOnly(f"{ctx.label}: index shapes that do not broadcast")
            size, name = wide[0] if wide else (1, None)
            shape.append(size)
            names.append(name)
        return [IndexExpr(tuple(shape), tuple(names))]
    return None


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def merging(value: SSAValue, rows: int, rest: tuple[int, ...]) -> Merged | None:
    """A `Merged` of `value` when merging its first `rows` dimensions joins run-time ones
    with others, and the rest is `value`'s dimensions after them (`rest` has `?` where
    they are of run-time size), or static with as many elements; None otherwise."""
    shape = _shape(value)
    if not 0 < rows <= len(shape):
        return None
    joined = [size for size in shape[:rows] if size != 1]
    if len(joined) < 2 or all(size >= 0 for size in joined):
        return None  # a graph.reshape takes it
    if not restretched(tuple(shape[rows:]), tuple(rest)):
        return None
    return Merged(value, rows, tuple(rest))


def restretched(source: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether a reshape from `source` to `target` keeps their run-time dimensions in
    order and reshapes each static stretch around them within itself (a
    `graph.reshape` of run-time dimensions)."""
    def stretches(shape: tuple[int, ...]) -> list[int]:
        products, current = [], 1
        for size in shape:
            if size < 0:
                products.append(current)
                current = 1
            else:
                current *= size
        return [*products, current]

    return stretches(source) == stretches(target)


def of_reshape(ctx: NodeContext, value: SSAValue, dims: RunTimeDims) -> Merged | None:
    """Reshape or Flatten of `value`, a tensor of run-time dimensions, as a `Merged`
    when it merges its leading ones into the first (a Reshape to [-1, ...], or to [the
    product of their sizes, ...], whose rest is static or `value`'s own dimensions),
    else None: the converter takes it."""
    shape = _shape(value)
    if ctx.op_type == "Flatten":
        axis = int(ctx.attr("axis", 1))
        axis = axis + len(shape) if axis < 0 else axis
        if any(size < 0 for size in shape[axis:]):
            return None
        return merging(value, axis, (math.prod(shape[axis:]),))
    target = ctx.static_value(1)
    if isinstance(target, ShapeValue):
        elements = target.elements.tolist() if target.elements.ndim == 1 else []
    elif isinstance(target, np.ndarray) and target.ndim == 1:
        elements = [int(d) for d in target]
    else:
        return None
    if not elements:
        return None
    first = elements[0]
    wanted = None if isinstance(first, (int, np.integer)) and first == -1 else factors(first)
    if wanted is None and not isinstance(first, (int, np.integer)):
        return None
    if wanted is not None and not wanted[1]:
        return None  # a static first dimension: no merge of run-time ones
    # the rest: static sizes, and run-time ones by name (or by a -1 when the first
    # element names the merged product: the run-time dimension the rest leaves)
    rest: list[int] = []
    named: list[str | None] = []
    for element in elements[1:]:
        if isinstance(element, Size):
            rest.append(DYNAMIC_INDEX)
            named.append(element.name)
        elif isinstance(element, (int, np.integer)) and element > 0:
            rest.append(int(element))
        elif wanted is not None and isinstance(element, (int, np.integer)) and element == -1 and None not in named:
            rest.append(DYNAMIC_INDEX)
            named.append(None)
        else:
            return None
    for rows in range(len(shape) - 1, 0, -1):
        if wanted is not None and wanted != _leading(value, rows, dims):
            continue
        runs = [dims.name(value, d) for d, size in enumerate(shape) if d >= rows and size < 0]
        if len(named) == len(runs) and all(n in (None, r) for n, r in zip(named, runs)) and restretched(
            tuple(shape[rows:]), tuple(rest)
        ):
            return merging(value, rows, tuple(rest))
    return _split_merge(ctx, value, dims, wanted, tuple(rest))


def _split_merge(
    ctx: NodeContext,
    value: SSAValue,
    dims: RunTimeDims,
    wanted: tuple[int, tuple[str, ...]] | None,
    rest: tuple[int, ...],
) -> Merged | None:
    """A merge that takes part of the static dimensions after the last run-time one
    (ConvBERT's [batch, seq, 32, 9] to [-1, 16, 9]: batch, seq and 2 of the 32): the
    static ones reshaped to [f, *rest] (f their elements over the rest's), and the
    dimensions up to f merged; None when the rest is not static or does not divide them."""
    shape = _shape(value)
    run_time = [d for d, size in enumerate(shape) if size < 0]
    if not run_time or not rest or any(size < 0 for size in rest):
        return None
    tail = shape[run_time[-1] + 1 :]
    elements, kept = math.prod(tail), math.prod(rest)
    if kept == 0 or elements % kept or elements // kept == 1:
        return None
    split = (*shape[: run_time[-1] + 1], elements // kept, *rest)
    rows = run_time[-1] + 2
    leading = _leading(value, rows - 1, dims)
    if wanted is not None and (leading is None or wanted != (leading[0] * split[rows - 1], leading[1])):
        return None
    reshaped = ctx.emit(graph.ReshapeOp(value, split)).results[0]
    dims.add_op(reshaped.owner)  # type: ignore[arg-type]
    return merging(reshaped, rows, rest)


def _leading(value: SSAValue, rows: int, dims: RunTimeDims) -> tuple[int, tuple[str, ...]] | None:
    """The product of `value`'s first `rows` dimensions as `factors` gives it (None when
    one of run-time size has no name)."""
    static, names = 1, []
    for d, size in enumerate(_shape(value)[:rows]):
        if size >= 0:
            static *= size
            continue
        name = dims.name(value, d)
        if name is None:
            return None
        names.append(name)
    return static, tuple(sorted(names))


def convert(
    ctx: NodeContext,
    dims: RunTimeDims,
    producers: Mapping[str, onnx.NodeProto],
    convert_node: Callable[[onnx.NodeProto], list],
) -> list | None:
    """The results of a node that reads a `Merged`, or None when it reads none.
    `convert_node` converts a node the function makes up (with the importer's
    converters, in its environment)."""
    inputs = [ctx.static_value(n) if ctx.has_input(n) else None for n in range(len(ctx.node.input))]
    if ctx.op_type == "Shape" and isinstance(inputs[0], IndexExpr):
        return [_index_shape(ctx, inputs[0])]
    if ctx.op_type == "Gather" and isinstance(inputs[0], Merged) and isinstance(inputs[1], IndexExpr):
        return _gather(ctx, inputs[0], dims, producers, convert_node)
    if ctx.op_type == "GatherND" and isinstance(inputs[0], SSAValue) and isinstance(inputs[1], IndexExpr):
        return _gather_nd(ctx, inputs[0], dims, producers)
    if ctx.op_type == "Concat":
        tuples = _index_tuple(ctx, inputs, dims)
        if tuples is not None:
            return [tuples]
    index = _index_arithmetic(ctx, dims)
    if index is not None:
        return index
    if any(isinstance(v, IndexExpr) for v in inputs):
        raise StaticShapesOnly(f"{ctx.label} reads an index of run-time sizes")
    merged = [n for n, value in enumerate(inputs) if isinstance(value, Merged)]
    if not merged:
        return None
    if ctx.op_type in ELEMENTWISE_ONNX_OPS:
        return _elementwise(ctx, inputs, dims, convert_node)
    if ctx.op_type in ("Softmax", "LogSoftmax", "LayerNormalization") and merged == [0]:
        return _along_rest(ctx, inputs[0], convert_node)
    if ctx.op_type in REDUCTIONS and merged == [0]:
        return _reduced_along_rest(ctx, inputs[0], convert_node)
    if ctx.op_type == "MatMul" and merged == [0, 1]:
        return _batched_product(ctx, inputs[0], inputs[1], dims, convert_node)
    handler = _HANDLERS.get(ctx.op_type)
    if handler is None or merged != [0]:
        raise StaticShapesOnly(f"{ctx.label} reads a tensor whose run-time dimensions are merged")
    return handler(ctx, ctx.static_value(0), dims, producers, convert_node)


def _reshape(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Reshape of a merged tensor: the reshape of the tensor before the merge, or a merge
    of it again (ConvBERT's [batch * seq * 2, 16, 1] to [-1, 32]: batch and seq)."""
    if any(int(d) == 0 for d in np.asarray(_known_or_empty(ctx, 1))) and not ctx.attr("allowzero", 0):
        raise StaticShapesOnly(f"{ctx.label} copies a dimension of a merged tensor")
    again = of_reshape(ctx, merged.value, dims)
    if again is not None:
        return [again]
    return _on_value(ctx, merged, convert_node, ctx.node)


def _known_or_empty(ctx: NodeContext, index: int) -> np.ndarray:
    value = ctx.static_value(index)
    return value if isinstance(value, np.ndarray) else np.zeros(0, np.int64)


def _on_value(ctx: NodeContext, merged: Merged, convert_node, node: onnx.NodeProto) -> list:
    """`node` converted with its input 0 the tensor before the merge."""
    name = node.input[0]
    ctx.bind(name, merged.value)
    try:
        return convert_node(node)
    finally:
        ctx.bind(name, merged)


def _product(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Gemm (alpha, beta, transB; not transA) or MatMul of a merged tensor's rows by a
    second operand of static shape: the product of the tensor before the merge, merged
    again."""
    if len(merged.rest) != 1 or ctx.attr("transA", 0):
        raise StaticShapesOnly(f"{ctx.label}: a product of a merged tensor of this shape")
    b = ctx.static_value(1)
    b_shape = tuple(b.shape) if isinstance(b, np.ndarray) else _shape(b)
    if len(b_shape) != 2 or any(size < 0 for size in b_shape):
        raise StaticShapesOnly(f"{ctx.label}: a product of a merged tensor by run-time sizes")
    label = ctx.node.output[0]
    nodes: list[onnx.NodeProto] = []
    constants: dict[str, np.ndarray] = {}

    def fresh(kind: str) -> str:
        return f"{label}/{kind}"

    weight = ctx.node.input[1]
    if ctx.op_type == "Gemm" and ctx.attr("transB", 0):
        nodes.append(helper.make_node("Transpose", [weight], [fresh("b_t")], perm=[1, 0]))
        weight = fresh("b_t")
    nodes.append(helper.make_node("MatMul", [ctx.node.input[0], weight], [fresh("product")]))
    result = fresh("product")
    if ctx.op_type == "Gemm":
        alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
        if alpha != 1.0:
            constants[fresh("alpha")] = np.array(alpha, np.float32)
            nodes.append(helper.make_node("Mul", [result, fresh("alpha")], [fresh("scaled")]))
            result = fresh("scaled")
        if ctx.has_input(2):
            bias = ctx.node.input[2]
            if beta != 1.0:
                constants[fresh("beta")] = np.array(beta, np.float32)
                nodes.append(helper.make_node("Mul", [bias, fresh("beta")], [fresh("bias")]))
                bias = fresh("bias")
            nodes.append(helper.make_node("Add", [result, bias], [fresh("biased")]))
            result = fresh("biased")
    for name, array in constants.items():
        ctx.bind(name, array)
    ctx.bind(ctx.node.input[0], _aligned(ctx, merged))
    try:
        for node in nodes:
            (value,) = convert_node(node)
            ctx.bind(node.output[0], value)
    finally:
        ctx.bind(ctx.node.input[0], merged)
    product = ctx.lookup(result)
    assert isinstance(product, SSAValue)
    columns = b_shape[0] if weight != ctx.node.input[1] else b_shape[1]
    again = merging(product, merged.rows, (columns,))
    if again is None:
        raise StaticShapesOnly(f"{ctx.label}: its product does not merge again")
    return [again]


def _merged_alike(first: Merged, second: Merged, dims: RunTimeDims) -> bool:
    """Whether two tensors merge the same dimensions (of the same sizes) into their
    first."""
    if first.rows != second.rows:
        return False
    a, b = _shape(first.value)[: first.rows], _shape(second.value)[: second.rows]
    return a == b and all(
        dims.name(first.value, d) == dims.name(second.value, d) for d, size in enumerate(a) if size < 0
    )


def _with_values(
    ctx: NodeContext, bound: dict[str, SSAValue], convert_node, node: onnx.NodeProto | None = None
) -> list:
    """`node` (the node itself by default) converted with the inputs named in `bound`
    bound to those values (their `Merged` restored after)."""
    saved = {name: ctx.lookup(name) for name in bound}
    for name, value in bound.items():
        ctx.bind(name, value)
    try:
        return convert_node(node or ctx.node)
    finally:
        for name, value in saved.items():
            ctx.bind(name, value)


def _merged_again(ctx: NodeContext, results: list, rows: int) -> list:
    again = []
    for value in results:
        assert isinstance(value, SSAValue)
        merged = merging(value, rows, tuple(_shape(value)[rows:]))
        if merged is None:
            raise StaticShapesOnly(f"{ctx.label}: its result does not merge again")
        again.append(merged)
    return again


def _elementwise(ctx: NodeContext, inputs: list, dims: RunTimeDims, convert_node) -> list:
    """An element-wise op of tensors merged alike (of one rank), and of operands that
    broadcast along the merged dimension (of a rank no greater than the merged
    tensors', their first dimension of size 1 when as great): the op of the tensors
    before the merge (their rest aligned to the merged shape), merged again."""
    merged = [value for value in inputs if isinstance(value, Merged)]
    first = merged[0]
    if any(not _merged_alike(first, other, dims) for other in merged[1:]):
        raise StaticShapesOnly(f"{ctx.label} reads tensors whose run-time dimensions are merged differently")
    rank = 1 + len(first.rest)
    bound: dict[str, SSAValue] = {}
    for n, value in enumerate(inputs):
        if isinstance(value, Merged):
            if len(value.rest) + 1 != rank:  # its merged dimension would meet another's rest
                raise StaticShapesOnly(f"{ctx.label}: merged tensors of different ranks")
            bound[ctx.node.input[n]] = _aligned(ctx, value)
            continue
        if value is None:
            continue  # an optional input not given (Clip's max)
        shape = tuple(value.shape) if isinstance(value, np.ndarray) else _shape_or_none(value)
        if shape is None or len(shape) > rank or (len(shape) == rank and shape[0] != 1):
            raise StaticShapesOnly(f"{ctx.label}: an operand across the merged dimension of another")
    return _merged_again(ctx, _with_values(ctx, bound, convert_node), first.rows)


def _batched_product(ctx: NodeContext, a: Merged, b: Merged, dims: RunTimeDims, convert_node) -> list:
    """MatMul of two tensors merged alike into their first of three dimensions: the
    product of the tensors before the merge, merged again."""
    if not _merged_alike(a, b, dims) or len(a.rest) != 2 or len(b.rest) != 2:
        raise StaticShapesOnly(f"{ctx.label}: a product of tensors merged differently")
    bound = {ctx.node.input[0]: _aligned(ctx, a), ctx.node.input[1]: _aligned(ctx, b)}
    return _merged_again(ctx, _with_values(ctx, bound, convert_node), a.rows)


def _along_rest(ctx: NodeContext, merged: Merged, convert_node) -> list:
    """Softmax or LogSoftmax of a merged tensor along a dimension of its rest, or a
    LayerNormalization over dimensions of its rest (OPT's on batch and sequence
    merged; its weights are not merged): the same of the tensor before the merge,
    merged again."""
    rank = 1 + len(merged.rest)
    axis = int(ctx.attr("axis", -1))
    axis = axis - rank if axis >= 0 else axis
    if not -rank < axis < 0 or len([name for name in ctx.node.output if name]) != 1:
        raise StaticShapesOnly(f"{ctx.label}: a {ctx.op_type} along the merged dimension")
    attributes = {a.name: helper.get_attribute_value(a) for a in ctx.node.attribute}
    node = helper.make_node(
        ctx.op_type, list(ctx.node.input), list(ctx.node.output)[:1], **(attributes | {"axis": axis})
    )
    results = _with_values(ctx, {node.input[0]: _aligned(ctx, merged)}, convert_node, node)
    return _merged_again(ctx, results, merged.rows)


def _axes(ctx: NodeContext) -> list[int] | None:
    """A node's `axes`: its attribute (older opsets) or its input 1 known at import
    time; None when it gives neither."""
    if ctx.has_attr("axes"):
        return [int(a) for a in ctx.attr("axes")]
    if ctx.has_input(1) and ctx.known(1) is not None:
        return [int(a) for a in np.asarray(ctx.known(1)).reshape(-1)]
    return None


REDUCTIONS = frozenset({
    "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare",
})  # fmt: skip


def _reduced_along_rest(ctx: NodeContext, merged: Merged, convert_node) -> list:
    """A reduction of a merged tensor over dimensions of its rest (YOSO's norms of q and
    k per head): the same of the tensor before the merge, merged again."""
    rank = 1 + len(merged.rest)
    axes = [a - rank if a >= 0 else a for a in _axes(ctx) or []]
    if not axes or any(not -rank < a < 0 for a in axes):
        raise StaticShapesOnly(f"{ctx.label}: a {ctx.op_type} over the merged dimension")
    keepdims = int(ctx.attr("keepdims", 1))
    bound: dict[str, object] = {ctx.node.input[0]: _aligned(ctx, merged)}
    if ctx.has_attr("axes"):
        node = helper.make_node(ctx.op_type, [ctx.node.input[0]], list(ctx.node.output), axes=axes, keepdims=keepdims)
    else:
        node = helper.make_node(ctx.op_type, list(ctx.node.input[:2]), list(ctx.node.output), keepdims=keepdims)
        bound[ctx.node.input[1]] = np.asarray(axes, np.int64)
    results = _with_values(ctx, bound, convert_node, node)  # type: ignore[arg-type]
    return _merged_again(ctx, results, merged.rows)


def _aligned(ctx: NodeContext, merged: Merged) -> SSAValue:
    """The tensor before the merge with its dimensions after the merged ones reshaped to
    the merged tensor's (a static reshape)."""
    shape = _shape(merged.value)
    if tuple(shape[merged.rows :]) == merged.rest:
        return merged.value
    target = (*shape[: merged.rows], *merged.rest)
    return ctx.emit(graph.ReshapeOp(merged.value, target)).results[0]


def _shape_of(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Shape of a merged tensor: its first element the product of the merged sizes, the
    rest's run-time sizes named as the tensor's after the merged dimensions, in order."""
    leading = _leading(merged.value, merged.rows, dims)
    shape = _shape(merged.value)
    after = [(dims.name(merged.value, d), d) for d in range(merged.rows, len(shape)) if shape[d] < 0]
    if leading is None or any(name is None for name, _ in after):
        raise StaticShapesOnly(f"{ctx.label}: a merged dimension of no input")
    sizes = iter(Size.of_class(dims, name, (merged.value, d)) for name, d in after if name is not None)
    rest = [next(sizes) if size < 0 else size for size in merged.rest]
    elements = np.array([product(*leading), *rest], dtype=object)
    return [shape_value(elements[selected_dimensions(ctx, len(elements))], np.int64)]


def _index_tuple(ctx: NodeContext, inputs: list, dims: RunTimeDims) -> IndexExpr | None:
    """Concat along the last axis, of size 1, of integer tensors of one shape of run-time
    dimensions (the positions of a GatherND, one per axis of its data): an `IndexExpr`."""
    parts = [_index_of(value, dims) for value in inputs]
    if not parts or any(p is None or isinstance(v, IndexExpr) for p, v in zip(parts, inputs)):
        return None
    shapes = {p.shape for p in parts}  # type: ignore[union-attr]
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    axis = int(ctx.attr("axis", 0))
    if axis not in (-1, len(shape) - 1) or shape[-1] != 1:
        return None
    first = parts[0]
    assert first is not None
    return IndexExpr((*shape[:-1], len(parts)), (*first.names[:-1], None))


def _gather_nd(ctx: NodeContext, data: SSAValue, dims: RunTimeDims, producers) -> list:
    """GatherND (no batch dimensions) of `data` at the tuples of positions (`Range`s of
    its sizes, `Expand`ed and `Unsqueeze`d to one shape and concatenated): `data`'s
    elements in place."""
    if int(ctx.attr("batch_dims", 0)) != 0:
        raise StaticShapesOnly(f"{ctx.label}: a GatherND of batch dimensions at run-time indices")
    indices = ctx.static_value(1)
    assert isinstance(indices, IndexExpr)
    node = producers.get(ctx.node.input[1])
    source = _shape(data)
    count = indices.shape[-1]
    if node is None or node.op_type != "Concat" or len(node.input) != count or count > len(source):
        raise StaticShapesOnly(f"{ctx.label}: a GatherND at other indices")
    target = [1] * (len(indices.shape) - 1)
    order = []
    windows: list[tuple[int, tuple[SSAValue, int]]] = []
    for d, name in enumerate(node.input):
        terms = _affine(name, producers, ctx, 0)
        wanted = dims.name(data, d) if source[d] < 0 else None
        if terms is None or len(terms) != 1 or wanted is None:
            raise StaticShapesOnly(f"{ctx.label}: a GatherND at other indices")
        ((axis, (size, coefficient, names)),) = terms.items()
        if coefficient != 1 or names or axis >= len(target):
            raise StaticShapesOnly(f"{ctx.label}: a GatherND at other indices")
        if size != wanted:
            # the positions along another size: the first that many of the dimension
            # (a padding mask of `total` read at the keys' `past + sequence`)
            key = dims.key_of(size) if isinstance(size, str) else None
            if key is None:
                raise StaticShapesOnly(f"{ctx.label}: a GatherND at other indices")
            windows.append((d, key))
        target[axis] = source[d]
        order.append(axis)
    if order != sorted(set(order)) or any(
        indices.shape[a] != 1 for a in range(len(target)) if a not in order
    ):
        raise StaticShapesOnly(f"{ctx.label}: the indices move the gathered dimensions")
    for d, key in windows:
        positions = ctx.emit(graph.IotaOp(*key)).results[0]
        data = ctx.emit(graph.GatherOp(data, positions, d)).results[0]
    shape = (*target, *source[count:])
    return [ctx.emit(graph.ReshapeOp(data, shape)).results[0]]


def _index_shape(ctx: NodeContext, index: IndexExpr) -> ShapeValue | np.ndarray:
    elements = [Size(name) if name is not None else size for size, name in zip(index.shape, index.names)]
    if any(size < 0 and name is None for size, name in zip(index.shape, index.names)):
        raise StaticShapesOnly(f"{ctx.label}: a dimension of an index of no input")
    selected = elements[selected_dimensions(ctx, len(elements))]
    return shape_value(np.array(selected, dtype=object), np.int64)


def _gather(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Gather along axis 0 of a merged tensor [b * s, ..] at `b * s_size + s`, the
    index of each element before the merge (`flat_index`): those elements, in place."""
    if int(ctx.attr("axis", 0)) != 0:
        raise StaticShapesOnly(f"{ctx.label}: a gather of a merged tensor along another axis")
    indices = _index_of(ctx.static_value(1), dims)
    if indices is None:
        raise StaticShapesOnly(f"{ctx.label}: a merged tensor gathered at other indices")
    source = _shape(merged.value)
    sizes = []
    for d, size in enumerate(source[: merged.rows]):
        sizes.append(size if size >= 0 else dims.name(merged.value, d))
    placed = flat_index(ctx.node.input[1], producers, ctx, sizes)
    if placed is None:
        raise StaticShapesOnly(f"{ctx.label}: a merged tensor gathered at other indices")
    index_shape = indices.shape
    # each merged dimension at the index axis its range is on, the others of size 1
    target = [1] * len(index_shape)
    order = []
    for d, axis in enumerate(placed):
        if axis is None:
            if source[d] != 1:
                raise StaticShapesOnly(f"{ctx.label}: a merged dimension the index does not range over")
            continue
        target[axis] = source[d]
        order.append(axis)
    if order != sorted(order) or any(
        index_shape[a] != 1 for a in range(len(index_shape)) if a not in order
    ):
        raise StaticShapesOnly(f"{ctx.label}: the index moves the merged dimensions")
    return [ctx.emit(graph.ReshapeOp(merged.value, (*target, *merged.rest))).results[0]]


def flat_index(
    name: str,
    producers: Mapping[str, onnx.NodeProto],
    ctx: NodeContext,
    sizes: list[int | str | None],
) -> list[int | None] | None:
    """When ONNX value `name` is the row-major index of a tensor of dimensions `sizes`
    (ints, or the names of run-time sizes), `sum_d range_d * stride_d` with each
    `range_d` a `Range(0, sizes[d], 1)` of run-time size unsqueezed to an axis of its
    own: for each dimension, the axis of the index its range is on (None for a static
    one of size 1). None otherwise."""
    terms = _affine(name, producers, ctx, 0)
    if terms is None:
        return None
    placed: list[int | None] = [None] * len(sizes)
    for d in range(len(sizes)):
        # the row-major stride of dimension d: the product of the sizes after it
        later = sizes[d + 1 :]
        stride_names = sorted(s for s in later if isinstance(s, str))
        stride_static = math.prod(s for s in later if isinstance(s, int))
        match = [
            (axis, term) for axis, term in terms.items()
            if term[0] == sizes[d] and term[1] == stride_static and term[2] == tuple(stride_names)
        ]  # fmt: skip
        if isinstance(sizes[d], str):
            if len(match) != 1:
                return None
            placed[d] = match[0][0]
        elif sizes[d] != 1:
            return None
    if len(terms) != sum(p is not None for p in placed):
        return None
    return placed


# An affine index: for each axis of the index tensor, (the size name its range covers,
# its static coefficient, the size names of its coefficient, sorted).
_Terms = dict[int, tuple[str, int, tuple[str, ...]]]


def _affine(name: str, producers, ctx: NodeContext, depth: int) -> _Terms | None:
    """The terms of ONNX value `name` as an affine index of ranges (see `flat_index`)."""
    node = producers.get(name)
    if node is None or depth > 16:
        return None
    inputs = list(node.input)
    if node.op_type == "Cast" or node.op_type == "Identity":
        return _affine(inputs[0], producers, ctx, depth + 1)
    if node.op_type == "Range":
        start, limit, delta = (ctx.lookup(n) for n in inputs)
        if not (_is_int(start, 0) and _is_int(delta, 1) and isinstance(limit, ShapeValue)):
            return None
        (size,) = limit.elements.reshape(-1).tolist()
        name = class_name(size, ctx.run_time_dims)
        return {0: (name, 1, ())} if name is not None else None
    if node.op_type == "Unsqueeze":
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        axes = ctx.lookup(inputs[1]) if len(inputs) > 1 else attributes.get("axes")
        axes_list = [int(a) for a in np.asarray(axes).reshape(-1)] if axes is not None else None
        terms = _affine(inputs[0], producers, ctx, depth + 1)
        value = _shape_or_none(ctx.lookup(inputs[0]))
        if terms is None or axes_list is None or value is None:
            return None
        rank = len(value) + len(axes_list)
        kept = [a for a in range(rank) if a not in {x % rank for x in axes_list}]
        return {kept[axis]: term for axis, term in terms.items()}
    if node.op_type == "Expand":
        # broadcast: the same terms, aligned from the right
        terms = _affine(inputs[0], producers, ctx, depth + 1)
        value, target = _shape_or_none(ctx.lookup(inputs[0])), ctx.lookup(node.output[0])
        result = _shape_or_none(target)
        if terms is None or value is None or result is None:
            return None
        return {axis + len(result) - len(value): term for axis, term in terms.items()}
    if node.op_type == "Mul":
        for first, second in ((0, 1), (1, 0)):
            terms = _affine(inputs[first], producers, ctx, depth + 1)
            factor = ctx.lookup(inputs[second])
            if terms is None:
                continue
            scale = _scalar(factor)
            if scale is None:
                return None
            static, names = scale
            return {
                axis: (size, coefficient * static, tuple(sorted((*known, *names))))
                for axis, (size, coefficient, known) in terms.items()
            }
        return None
    if node.op_type == "Add":
        left = _affine(inputs[0], producers, ctx, depth + 1)
        right = _affine(inputs[1], producers, ctx, depth + 1)
        a, b = (_shape_or_none(ctx.lookup(n)) for n in inputs[:2])
        if left is None or right is None or a is None or b is None:
            return None
        rank = max(len(a), len(b))
        left = {axis + rank - len(a): t for axis, t in left.items()}
        right = {axis + rank - len(b): t for axis, t in right.items()}
        if set(left) & set(right):
            return None
        return {**left, **right}
    return None


def _shape_or_none(value: object) -> tuple[int, ...] | None:
    if isinstance(value, IndexExpr):
        return value.shape
    if isinstance(value, SSAValue) and isinstance(value.type, TensorType):
        return _shape(value)
    return None


def _is_int(value: object, expected: int) -> bool:
    return isinstance(value, np.ndarray) and value.size == 1 and int(value.reshape(-1)[0]) == expected


def _scalar(value: object) -> tuple[int, tuple[str, ...]] | None:
    """A one-element int or size as (static factor, size names)."""
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iu":
        return int(value.reshape(-1)[0]), ()
    if isinstance(value, ShapeValue) and value.elements.size == 1:
        (element,) = value.elements.reshape(-1).tolist()
        if isinstance(element, Size):
            return 1, (element.name,)
    return None


def _transpose(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Transpose of a merged tensor that keeps the merged dimension first: the
    transpose of the tensor before the merge, merged again."""
    perm = [int(p) for p in ctx.attr("perm", [])]
    if not perm or perm[0] != 0:
        raise StaticShapesOnly(f"{ctx.label}: a transpose that moves merged dimensions")
    rows = merged.rows
    full = [*range(rows), *(rows + p - 1 for p in perm[1:])]
    value = ctx.emit(graph.TransposeOp(_aligned(ctx, merged), full)).results[0]
    again = merging(value, rows, tuple(_shape(value)[rows:]))
    if again is None:
        raise StaticShapesOnly(f"{ctx.label}: its transpose does not merge again")
    return [again]


def _expand(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Expand of a merged tensor to a shape of as many dimensions that keeps the merged
    dimension (its size again, or 1) and broadcasts the rest (YOSO's norms expanded to
    q's shape): the Expand of the tensor before the merge to its own leading sizes and
    the rest of the shape, merged again."""
    target = ctx.static_value(1)
    elements = (
        list(target.elements.reshape(-1)) if isinstance(target, ShapeValue)
        else [int(v) for v in np.asarray(target).reshape(-1)] if isinstance(target, np.ndarray)
        else None
    )  # fmt: skip
    leading = _leading(merged.value, merged.rows, dims)
    if (
        elements is None
        or leading is None
        or len(elements) != 1 + len(merged.rest)
        or factors(elements[0]) not in (leading, (1, ()))
    ):
        raise StaticShapesOnly(f"{ctx.label}: an Expand of merged dimensions to other sizes")
    aligned = _aligned(ctx, merged)
    (own,) = of_tensor(ctx, aligned, dims)
    sizes = [*own.elements.reshape(-1)[: merged.rows], *elements[1:]]
    name = f"{ctx.node.output[0]}__aligned_shape"
    ctx.bind(name, shape_value(np.asarray(sizes, dtype=object), np.dtype(np.int64)))
    node = helper.make_node("Expand", [ctx.node.input[0], name], list(ctx.node.output))
    results = _with_values(ctx, {ctx.node.input[0]: aligned}, convert_node, node)
    return _merged_again(ctx, results, merged.rows)


def _unit_dims(ctx, merged: Merged, dims, producers, convert_node) -> list:
    """Unsqueeze or Squeeze of dimensions of size 1 of a merged tensor's rest: a reshape
    of the tensor before the merge, merged again."""
    axes = _axes(ctx)
    rest = list(merged.rest)
    if ctx.op_type == "Unsqueeze":
        rank = 1 + len(rest) + len(axes or [])
        at = sorted(a + rank if a < 0 else a for a in axes or [])
        shape = [0, *rest]
        for a in at:
            if not 0 < a <= len(shape):
                raise StaticShapesOnly(f"{ctx.label}: an Unsqueeze before the merged dimension")
            shape.insert(a, 1)
    else:
        rank = 1 + len(rest)
        at = sorted({a + rank if a < 0 else a for a in (axes if axes is not None else range(1, rank))})
        if any(not 0 < a < rank or rest[a - 1] != 1 for a in at):
            raise StaticShapesOnly(f"{ctx.label}: a Squeeze of the merged dimension")
        shape = [0, *(d for n, d in enumerate(rest, 1) if n not in at)]
    aligned = _aligned(ctx, merged)
    target = (*_shape(aligned)[: merged.rows], *shape[1:])
    value = ctx.emit(graph.ReshapeOp(aligned, target)).results[0] if target != _shape(aligned) else aligned
    again = merging(value, merged.rows, tuple(shape[1:]))
    if again is None:
        raise StaticShapesOnly(f"{ctx.label}: its result does not merge again")
    return [again]


_HANDLERS: dict[str, Callable] = {
    "Expand": _expand,
    "Squeeze": _unit_dims,
    "Unsqueeze": _unit_dims,
    "Transpose": _transpose,
    "Reshape": _reshape,
    "Gemm": _product,
    "MatMul": _product,
    "Shape": _shape_of,
    "Gather": _gather,
}
