"""Delta debugging over ops and operands: shrink a program while a property (a pass
still changes its result) holds.

    small = reduce_module(module, still_fails)

Each step tries, from the last op of the entry function to the first: replacing an op
by one of its operands of the same type (so the op disappears), replacing it by a new
function argument, replacing one of its operands by a new function argument, and
keeping only one of several returned values; it keeps the first candidate that
verifies and still fails, then dead ops and unused arguments are dropped. It stops at
a fixpoint or after `max_checks` property checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

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
        for edit in _edits(current):
            candidate = current.clone()
            try:
                edit(candidate)
                g = entry_function(candidate)
                assert g is not None
                _cleanup(g)
                candidate.verify()
            except Exception:
                continue
            if count_ops(candidate) > count_ops(current) or _size(candidate) >= _size(current):
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


def _size(module: ModuleOp) -> tuple[int, int]:
    """What a reduction step must decrease: ops first, then the constant operands."""
    f = entry_function(module)
    if f is None:
        return (0, 0)
    ops = count_ops(module)
    from_ops = sum(
        1
        for op in f.walk()
        for operand in op.operands
        if isinstance(operand.owner, Operation)
    )
    return (ops, from_ops)
