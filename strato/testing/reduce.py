"""Delta debugging over ops, operands, constants and shapes: shrink a program while a
property (a pass still changes its result) holds.

    small = reduce_module(module, still_fails)
    print(describe_reduction(module, small))

Each step tries, in this order, and keeps the first candidate that verifies and still
fails:

- ops, from the last op of the entry function to the first: replacing an op by one of
  its operands of the same type (so the op disappears), replacing it by a new function
  argument, replacing one of its operands by a new function argument, and keeping only
  one of several returned values;
- constants: a `graph.constant` replaced by a splat of 0, of 1, or of its first
  element;
- shapes (graph-level programs): a dimension of the entry function's arguments and
  constants set to 1 or halved, one size everywhere it occurs first, then one
  dimension of one value; the result types of the ops are derived again by their
  shape inference (`infer_shape`), and a candidate whose types do not verify is
  rejected;
- simpler elements of the constants that are no splat (rounded, parts set to 0), and
  simpler scalar attributes of graph ops (0, 1, rounded).

After each edit dead ops and unused arguments are dropped. A candidate is only taken
when it is smaller (`_size`: ops first, then operands, dense constant elements, tensor
elements, how complicated values are), so the reduction ends: at a fixpoint, or after
`max_checks` property checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from strato.dialects import graph
from strato.dialects.tensor_types import (
    array_from_dense,
    dense_from_array,
    numpy_dtype,
    tensor_type_like,
)


def entry_function(module: ModuleOp) -> func.FuncOp | None:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
    for f in functions:
        if f.sym_name.data == "main":
            return f
    return functions[-1] if functions else None


def count_ops(module: ModuleOp) -> int:
    """The ops of the entry function, its terminator left out (nested ones counted)."""
    f = entry_function(module)
    if f is None:
        return 0
    return sum(1 for op in f.walk() if op is not f and not isinstance(op, func.ReturnOp))


def _sync_signature(f: func.FuncOp) -> None:
    block = f.body.block
    ret = block.last_op
    outputs = list(ret.operand_types) if isinstance(ret, func.ReturnOp) else list(f.function_type.outputs.data)
    f.function_type = FunctionType.from_lists([a.type for a in block.args], outputs)


def _cleanup(f: func.FuncOp) -> None:
    """Drop ops without uses (no side effects at these levels) and unused arguments."""
    block = f.body.block
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if op is block.last_op:
                continue
            if op.results and all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True
    for arg in reversed(list(block.args)):
        if not arg.uses:
            block.erase_arg(arg)
    _sync_signature(f)


def _new_arg(f: func.FuncOp, value: SSAValue) -> SSAValue:
    block = f.body.block
    return block.insert_arg(value.type, len(block.args))


def _op_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """Candidate edits of ops, each applied to a clone (found by op index); True when
    applied."""
    f = entry_function(module)
    if f is None:
        return
    ops = list(f.body.block.ops)
    ret = ops[-1]
    if isinstance(ret, func.ReturnOp) and len(ret.operands) > 1:
        for keep in range(len(ret.operands)):

            def keep_one(m: ModuleOp, keep: int = keep) -> bool:
                g = entry_function(m)
                assert g is not None
                r = g.body.block.last_op
                assert isinstance(r, func.ReturnOp)
                value = r.operands[keep]
                r.detach()
                r.erase()
                g.body.block.add_op(func.ReturnOp(value))
                return True

            yield keep_one
    for index in reversed(range(len(ops) - 1)):
        op = ops[index]
        # the op replaced by one of its operands of the same type
        for o in range(len(op.operands)):
            if len(op.results) == 1 and op.operands[o].type == op.results[0].type:

                def bypass(m: ModuleOp, index: int = index, o: int = o) -> bool:
                    target = list(entry_function(m).body.block.ops)[index]  # type: ignore[union-attr]
                    target.results[0].replace_all_uses_with(target.operands[o])
                    return True

                yield bypass
                break
        # the op replaced by a function argument
        if op.results:

            def to_args(m: ModuleOp, index: int = index) -> bool:
                g = entry_function(m)
                assert g is not None
                target = list(g.body.block.ops)[index]
                for r in target.results:
                    if r.uses:
                        r.replace_all_uses_with(_new_arg(g, r))
                return True

            yield to_args
        # an operand replaced by a function argument
        for o in range(len(op.operands)):
            if isinstance(op.operands[o].owner, Operation):

                def operand_to_arg(m: ModuleOp, index: int = index, o: int = o) -> bool:
                    g = entry_function(m)
                    assert g is not None
                    target = list(g.body.block.ops)[index]
                    target.operands[o] = _new_arg(g, target.operands[o])
                    return True

                yield operand_to_arg


def _edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """Every candidate edit, the largest first: ops, constants to splats, shapes,
    then simpler constant elements and scalar attributes."""
    yield from _op_edits(module)
    yield from _splat_edits(module)
    yield from _shape_edits(module)
    yield from _element_edits(module)
    yield from _attribute_edits(module)


# -- constants -----------------------------------------------------------------------


def _nested(module: ModuleOp) -> list[Operation]:
    """The ops of the entry function, nested ones included, in walk order (the same in
    a clone, so an index names the same op)."""
    f = entry_function(module)
    return [] if f is None else [op for op in f.walk() if op is not f]


def _constants(module: ModuleOp) -> Iterator[tuple[int, Operation, np.ndarray]]:
    """The tensor constants of the entry function: `graph.constant`, and the
    `arith.constant` of a dense tensor that graph constants become in te."""
    for index, op in enumerate(_nested(module)):
        if isinstance(op, graph.ConstantOp) or (
            isinstance(op, arith.ConstantOp)
            and isinstance(op.value, DenseIntOrFPElementsAttr)
            and isinstance(op.value.type, TensorType)
        ):
            try:
                values = array_from_dense(op.value)
            except (TypeError, ValueError, KeyError, NotImplementedError):
                continue
            if values.size:
                yield index, op, values


def _is_splat(values: np.ndarray) -> bool:
    flat = values.reshape(-1)
    if flat.size <= 1:
        return True
    if _isnan(flat[0]):
        return all(_isnan(v) for v in flat)
    with np.errstate(all="ignore"):
        return bool(np.all(flat == flat[0]))


def _isnan(value: Any) -> bool:
    try:
        return bool(np.isnan(np.float64(value)))
    except (TypeError, ValueError):
        return False


def _splat_attr(type_: TensorType, value: Any) -> DenseIntOrFPElementsAttr:
    """The splat of `value` (one element stored) of `type_`."""
    dtype = numpy_dtype(type_)
    if dtype == np.bool_:
        return dense_from_array(np.full(type_.get_shape(), bool(value)), type_.element_type)
    one = np.array([value]).astype(dtype)
    return DenseIntOrFPElementsAttr(type_, BytesAttr(one.tobytes()))


def _replace_constant(m: ModuleOp, index: int, value: DenseIntOrFPElementsAttr) -> None:
    old = _nested(m)[index]
    new = graph.ConstantOp(value) if isinstance(old, graph.ConstantOp) else arith.ConstantOp(value)
    new.attributes |= old.attributes
    assert old.parent is not None
    old.parent.insert_op_before(new, old)
    old.results[0].replace_all_uses_with(new.results[0])
    old.detach()
    old.erase()


def _splat_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """A constant replaced by a splat: 0, 1, its first element."""
    for index, op, values in _constants(module):
        flat = values.reshape(-1)
        current = flat[0] if _is_splat(values) else None
        tried: list[Any] = []
        for value in (0, 1, flat[0]):
            if any(_same(value, t) for t in tried) or (current is not None and _same(value, current)):
                continue
            tried.append(value)

            def to_splat(m: ModuleOp, index: int = index, value: Any = value) -> bool:
                type_ = _nested(m)[index].results[0].type
                assert isinstance(type_, TensorType)
                _replace_constant(m, index, _splat_attr(type_, value))
                return True

            yield to_splat


def _same(a: Any, b: Any) -> bool:
    with np.errstate(all="ignore"):
        return bool(a == b or (_isnan(a) and _isnan(b)))


def _element_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """Simpler elements of a constant that is no splat: rounded to integers, every
    element that is not 0 set to 1, then a half, a quarter, an eighth of its elements
    set to 0 (delta debugging over elements)."""
    for index, _, values in _constants(module):
        if _is_splat(values):
            continue
        candidates: list[np.ndarray] = []
        if values.dtype.kind == "f":
            with np.errstate(all="ignore"):
                rounded = np.round(values)
            if not np.array_equal(rounded, values, equal_nan=True):
                candidates.append(rounded)
        ones = (values != 0).astype(values.dtype)
        if not np.array_equal(ones, values):
            candidates.append(ones)
        flat = values.reshape(-1)
        parts = 2
        while parts <= min(8, flat.size):
            bounds = np.linspace(0, flat.size, parts + 1).astype(int)
            for lo, hi in pairwise(bounds):
                chunk = flat[lo:hi]
                if chunk.size and np.any(chunk != 0):
                    zeroed = flat.copy()
                    zeroed[lo:hi] = 0
                    candidates.append(zeroed.reshape(values.shape))
            parts *= 2
        for new in candidates:

            def simpler(m: ModuleOp, index: int = index, new: np.ndarray = new) -> bool:
                type_ = _nested(m)[index].results[0].type
                assert isinstance(type_, TensorType)
                _replace_constant(m, index, dense_from_array(new, type_.element_type))
                return True

            yield simpler


def _scalar_attributes(op: Operation) -> Iterator[tuple[str, str, FloatAttr | IntegerAttr]]:
    """The scalar attributes a reduction may simplify: the floats and integers (not
    indices) of a graph op, the value of a float `arith.constant`."""
    if isinstance(op, arith.ConstantOp):
        if isinstance(op.value, FloatAttr):
            yield "properties", "value", op.value
        return
    if not isinstance(op, graph.GraphOp) or isinstance(op, graph.ConstantOp):
        return
    for where in ("properties", "attributes"):
        for name, attr in getattr(op, where).items():
            if isinstance(attr, FloatAttr) or (
                isinstance(attr, IntegerAttr) and not isinstance(attr.type, IndexType)
            ):
                yield where, name, attr


def _attribute_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """A scalar attribute replaced by 0, 1 or its value rounded; the verifier rejects
    what the op does not allow."""
    for index, op in enumerate(_nested(module)):
        for where, name, attr in _scalar_attributes(op):
            options: list[Attribute] = []
            try:
                if isinstance(attr, FloatAttr):
                    value = attr.value.data
                    options += [FloatAttr(v, attr.type) for v in (0.0, 1.0)]
                    if math.isfinite(value) and value != round(value):
                        options.append(FloatAttr(float(round(value)), attr.type))
                else:
                    options += [IntegerAttr(v, attr.type) for v in (0, 1)]
            except (ValueError, TypeError, VerifyException):
                pass  # the values the type cannot hold are no candidates
            for new in options:
                if new == attr:
                    continue

                def set_attr(
                    m: ModuleOp, index: int = index, where: str = where, name: str = name, new: Attribute = new
                ) -> bool:
                    getattr(_nested(m)[index], where)[name] = new
                    return True

                yield set_attr


# -- shapes --------------------------------------------------------------------------


def _graph_level(f: func.FuncOp) -> bool:
    """Whether shapes can be re-derived: graph ops only, tensor arguments."""
    return all(isinstance(a.type, TensorType) for a in f.body.block.args) and all(
        isinstance(op, graph.GraphOp | graph.YieldOp | func.ReturnOp) for op in f.walk() if op is not f
    )


def _smaller(size: int) -> list[int]:
    return [1] + ([size // 2] if size // 2 > 1 else [])


def _shape_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """Smaller tensor dimensions (1, or half) of the entry function's arguments and of
    constants; the types of the ops are derived again from them (`_reinfer`).

    First one size everywhere it occurs in the arguments and constants (so that
    operands that must agree shrink together), then one dimension of one argument,
    then one dimension of one constant (its leading elements kept)."""
    f = entry_function(module)
    if f is None or not _graph_level(f):
        return
    args = [a.type for a in f.body.block.args]
    sizes = sorted({d for t in args if isinstance(t, TensorType) for d in t.get_shape() if d > 1}, reverse=True)
    for size in sizes:
        for new in _smaller(size):
            yield partial(_resize, every={size: new})
    for a, type_ in enumerate(args):
        assert isinstance(type_, TensorType)
        for axis, size in enumerate(type_.get_shape()):
            for new in _smaller(size) if size > 1 else []:
                yield partial(_resize, arg=(a, axis, new))
    for index, op, _ in _constants(module):
        for axis, size in enumerate(op.results[0].type.get_shape()):  # type: ignore[union-attr]
            for new in _smaller(size) if size > 1 else []:
                yield partial(_resize, constant=(index, axis, new))


def _resize(
    m: ModuleOp,
    every: dict[int, int] | None = None,
    arg: tuple[int, int, int] | None = None,
    constant: tuple[int, int, int] | None = None,
) -> bool:
    g = entry_function(m)
    assert g is not None
    block = g.body.block
    for a, value in enumerate(list(block.args)):
        type_ = value.type
        assert isinstance(type_, TensorType)
        shape = list(type_.get_shape())
        if every is not None:
            shape = [every.get(d, d) for d in shape]
        if arg is not None and arg[0] == a:
            shape[arg[1]] = arg[2]
        if shape != list(type_.get_shape()):
            Rewriter.replace_value_with_new_type(value, tensor_type_like(type_, shape))
    for index, op, values in list(_constants(m)):
        shape = list(values.shape)
        if every is not None:
            shape = [every.get(d, d) for d in shape]
        if constant is not None and constant[0] == index:
            shape[constant[1]] = constant[2]
        if shape == list(values.shape):
            continue
        type_ = tensor_type_like(op.results[0].type, shape)
        if _is_splat(values):
            attr = _splat_attr(type_, values.reshape(-1)[0])
        else:
            kept = values[tuple(slice(0, n) for n in shape)]
            attr = dense_from_array(kept, type_.element_type)
        _replace_constant(m, index, attr)
    return True


def _set_type(value: SSAValue, type_: Attribute) -> None:
    if value.type != type_:
        Rewriter.replace_value_with_new_type(value, type_)


def _reinfer(block: Block) -> None:
    """The result types of graph ops derived again from their operands (after argument
    or constant types changed): each op's `infer_shape`, the element type kept; the
    body of a `graph.fused` takes its operands' types and gives its results'."""
    for op in block.ops:
        if isinstance(op, graph.FusedOp):
            body = op.body.block
            for arg, operand in zip(body.args, op.inputs, strict=True):
                _set_type(arg, operand.type)
            _reinfer(body)
            for result, value in zip(op.outputs, op.yield_op.values, strict=True):
                _set_type(result, value.type)
        elif isinstance(op, graph.GraphOp) and len(op.results) == 1:
            shape = op.infer_shape()
            type_ = op.results[0].type
            if shape is not None and isinstance(type_, TensorType) and tuple(shape) != type_.get_shape():
                _set_type(op.results[0], tensor_type_like(type_, shape))


def reduce_module(
    module: ModuleOp,
    still_fails: Callable[[ModuleOp], bool],
    max_checks: int = 2000,
) -> ModuleOp:
    """The smallest variant of `module` found for which `still_fails` holds (a clone;
    `module` itself is left alone). `still_fails` must hold for `module`."""
    current = module.clone()
    f = entry_function(current)
    if f is not None:
        _cleanup(f)
    checks = 0
    progress = True
    while progress and checks < max_checks:
        progress = False
        size = _size(current)
        for edit in _edits(current):
            candidate = current.clone()
            try:
                edit(candidate)
                g = entry_function(candidate)
                assert g is not None
                _reinfer(g.body.block)
                _cleanup(g)
                candidate.verify()
                smaller = _size(candidate) < size
            except Exception:
                continue
            if not smaller:
                continue
            checks += 1
            try:
                holds = still_fails(candidate.clone())
            except Exception:
                holds = False
            if holds:
                current = candidate
                progress = True
                break
            if checks >= max_checks:
                break
    return current


def _cost(values: np.ndarray) -> int:
    """How complicated the values are: 0 for a zero, 1 for a one, 2 for any other
    integer, 3 for anything else (fractions, NaN)."""
    try:
        v = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return 3 * values.size
    with np.errstate(all="ignore"):
        cost = np.where(v == 0, 0, np.where(v == 1, 1, np.where(v == np.round(v), 2, 3)))
    return int(cost.sum())


def _elements(type_: Attribute) -> int:
    if isinstance(type_, TensorType | MemRefType):
        return int(np.prod(type_.get_shape())) if all(d >= 0 for d in type_.get_shape()) else 0
    return 0


def _size(module: ModuleOp) -> tuple[int, ...]:
    """What a reduction step must decrease, compared in order: ops, operands that are
    results of ops, elements of constants that are no splat, elements of the argument
    and result tensors, then how complicated constants and scalar attributes are."""
    f = entry_function(module)
    if f is None:
        return (0, 0, 0, 0, 0)
    ops = count_ops(module)
    from_ops = sum(
        1
        for op in f.walk()
        for operand in op.operands
        if isinstance(operand.owner, Operation)
    )
    dense = 0
    cost = 0
    for _, _, values in _constants(module):
        if _is_splat(values):
            cost += _cost(values.reshape(-1)[:1])
        else:
            dense += values.size
            cost += _cost(values)
    elements = sum(_elements(a.type) for a in f.body.block.args)
    for op in f.walk():
        if op is not f:
            elements += sum(_elements(r.type) for r in op.results)
            for _, _, attr in _scalar_attributes(op):
                cost += _cost(np.array([attr.value.data]))
    return (ops, from_ops, dense, elements, cost)


def _summary(module: ModuleOp) -> tuple[int, int, int, int, list[Attribute]]:
    """Ops, constants, splat constants, elements of the constants that are no splat, and
    the argument types of the entry function."""
    constants = list(_constants(module))
    splats = sum(1 for _, _, values in constants if _is_splat(values))
    dense = sum(values.size for _, _, values in constants if not _is_splat(values))
    f = entry_function(module)
    args = [] if f is None else [a.type for a in f.body.block.args]
    return count_ops(module), len(constants), splats, dense, args


def _constants_text(constants: int, splats: int, dense: int) -> str:
    if not constants:
        return "none"
    if splats == constants:
        return f"{constants} splat{'s' if constants > 1 else ''}"
    text = f"{constants - splats} dense of {dense} element{'s' if dense != 1 else ''}"
    return text + (f" and {splats} splat{'s' if splats > 1 else ''}" if splats else "")


def _shape_text(type_: Attribute) -> str:
    if isinstance(type_, TensorType | MemRefType):
        return "x".join([*(str(d) for d in type_.get_shape()), str(type_.element_type)])
    return str(type_)


def describe_reduction(before: ModuleOp, after: ModuleOp) -> str:
    """What `reduce_module` took away from `before` to give `after`, on one line:

        3 ops (from 50); constants: 1 splat (from 2 dense of 8192 elements);
        arguments: 1x2xf32 (from 64x128xf32, 64x128xf32)
    """
    ops0, constants0, splats0, dense0, args0 = _summary(before)
    ops1, constants1, splats1, dense1, args1 = _summary(after)
    parts = [f"{ops1} ops (from {ops0})"]
    if (constants0, splats0, dense0) != (constants1, splats1, dense1):
        parts.append(
            f"constants: {_constants_text(constants1, splats1, dense1)} "
            f"(from {_constants_text(constants0, splats0, dense0)})"
        )
    if args0 != args1:
        if max(len(args0), len(args1)) <= 4:
            shapes1 = ", ".join(_shape_text(t) for t in args1) or "none"
            shapes0 = ", ".join(_shape_text(t) for t in args0) or "none"
        else:
            shapes1 = f"{len(args1)} of {sum(_elements(t) for t in args1)} elements"
            shapes0 = f"{len(args0)} of {sum(_elements(t) for t in args0)} elements"
        parts.append(f"arguments: {shapes1} (from {shapes0})")
    return "; ".join(parts)
