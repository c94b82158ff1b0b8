"""Delta debugging over ops, operands, constants and shapes: shrink a program while a
property (a pass still changes its result) holds.

    small = reduce_module(module, still_fails)

Each step tries, from the last op of the entry function to the first: replacing an op
by one of its operands of the same type (so the op disappears), replacing it by a new
function argument, replacing one of its operands by a new function argument, and
keeping only one of several returned values. Then the data: a constant replaced by a
splat (all zeros, all ones, or its first element everywhere), and a size shrunk (one
dimension size, at one position from the end, replaced by 1 or by its half in every
type of the function that has it there: arguments, results, constants, sliced). It keeps
the first candidate that verifies, is smaller and still fails, then dead ops and unused
arguments are dropped. Smaller is, in order: fewer ops, fewer operands computed by ops,
fewer elements in all the function's values, fewer distinct constant values
(`ReducedSize`). It stops at a fixpoint or after `max_checks` property checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain
from typing import NamedTuple

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Operation, SSAValue


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


def _edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """Candidate edits, each applied to a clone (found by op index); True when applied."""
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


def _entry_values(f: func.FuncOp) -> list[SSAValue]:
    return [*f.body.block.args, *(r for op in f.walk() if op is not f for r in op.results)]


def _constants(f: func.FuncOp) -> list[Operation]:
    from strato.dialects import graph

    return [op for op in f.walk() if isinstance(op, graph.ConstantOp)]


def _constant_array(op: Operation):
    from strato.dialects.tensor_types import array_from_dense

    return array_from_dense(op.value)  # type: ignore[attr-defined]


def _replace_constant(op: Operation, array) -> None:
    """`op` replaced by a constant of `array` (of its element type; a splat when the
    elements are all equal)."""
    import numpy as np
    from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType

    from strato.dialects import graph
    from strato.dialects.tensor_types import dense_from_array, numpy_dtype

    element = op.results[0].type.element_type  # type: ignore[attr-defined]
    array = np.asarray(array, dtype=numpy_dtype(element))
    if array.size > 1 and array.dtype != np.bool_ and bool(np.all(array == array.flat[0])):
        value = DenseIntOrFPElementsAttr(
            TensorType(element, array.shape), BytesAttr(array.flat[:1].tobytes())
        )
    else:
        value = dense_from_array(array, element)
    new = graph.ConstantOp(value)
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(new, op)
    op.results[0].replace_all_uses_with(new.results[0])
    op.detach()
    op.erase()


def _constant_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    """Each constant that is not a splat, replaced by zeros, ones or its first element."""
    import numpy as np

    f = entry_function(module)
    if f is None:
        return
    for index, op in enumerate(_constants(f)):
        array = _constant_array(op)
        if array.size <= 1 or bool(np.all(array == array.flat[0])):
            continue
        for fill in ("zeros", "ones", "first"):

            def splat(m: ModuleOp, index: int = index, fill: str = fill) -> bool:
                g = entry_function(m)
                assert g is not None
                target = _constants(g)[index]
                values = _constant_array(target)
                value = {"zeros": 0, "ones": 1, "first": values.flat[0]}[fill]
                _replace_constant(target, np.full(values.shape, value, dtype=values.dtype))
                return True

            yield splat


def _sizes(f: func.FuncOp) -> list[tuple[int, int]]:
    """(position from the end, size) of every dimension above 1 of the function's values."""
    from xdsl.dialects.builtin import TensorType

    found: list[tuple[int, int]] = []
    for value in _entry_values(f):
        if isinstance(value.type, TensorType):
            shape = value.type.get_shape()
            for back, size in enumerate(reversed(shape), start=1):
                if size > 1 and (back, size) not in found:
                    found.append((back, size))
    return found


def _shrink_sizes(f: func.FuncOp, back: int, old: int, new: int) -> None:
    """Every type of `f` with size `old` at position `back` from the end gets `new`
    there (values retyped in place; constants sliced)."""
    from xdsl.dialects.builtin import TensorType

    from strato.dialects.tensor_types import tensor_type_like

    def shrunk(type_) -> TensorType | None:
        if not isinstance(type_, TensorType):
            return None
        shape = list(type_.get_shape())
        if len(shape) < back or shape[-back] != old:
            return None
        shape[-back] = new
        return tensor_type_like(type_, shape)

    for op in _constants(f):
        if shrunk(op.results[0].type) is not None:
            array = _constant_array(op)
            axis = array.ndim - back
            _replace_constant(op, array.take(range(new), axis=axis))
    for value in _entry_values(f):
        type_ = shrunk(value.type)
        if type_ is not None:
            value._type = type_  # retyped where it stands: its uses keep pointing at it
    _sync_signature(f)


def _shape_edits(module: ModuleOp) -> Iterator[Callable[[ModuleOp], bool]]:
    f = entry_function(module)
    if f is None:
        return
    for back, size in _sizes(f):
        for new in sorted({1, size // 2}):

            def shrink(m: ModuleOp, back: int = back, size: int = size, new: int = new) -> bool:
                g = entry_function(m)
                assert g is not None
                _shrink_sizes(g, back, size, new)
                return True

            yield shrink


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
        for edit in chain(_edits(current), _constant_edits(current), _shape_edits(current)):
            candidate = current.clone()
            try:
                edit(candidate)
                g = entry_function(candidate)
                assert g is not None
                _cleanup(g)
                candidate.verify()
            except Exception:
                continue
            if count_ops(candidate) > count_ops(current) or reduced_size(candidate) >= reduced_size(current):
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


class ReducedSize(NamedTuple):
    """What a reduction step must decrease, compared in this order."""

    ops: int
    computed_operands: int
    """Operands computed by ops rather than given as arguments."""
    elements: int
    """Elements of every value of the entry function (arguments and results of ops)."""
    constant_values: int
    """Distinct values of each constant, summed (a splat counts 1)."""

    def describe(self) -> str:
        return (
            f"{self.ops} ops, {self.elements} elements, {self.constant_values} distinct "
            "constant value(s)"
        )


def reduced_size(module: ModuleOp) -> ReducedSize:
    import numpy as np
    from xdsl.dialects.builtin import TensorType

    f = entry_function(module)
    if f is None:
        return ReducedSize(0, 0, 0, 0)
    from_ops = sum(
        1
        for op in f.walk()
        for operand in op.operands
        if isinstance(operand.owner, Operation)
    )
    elements = sum(
        int(np.prod(v.type.get_shape(), dtype=np.int64))
        for v in _entry_values(f)
        if isinstance(v.type, TensorType)
    )
    distinct = sum(len(np.unique(_constant_array(op))) for op in _constants(f))
    return ReducedSize(count_ops(module), from_ops, elements, distinct)
