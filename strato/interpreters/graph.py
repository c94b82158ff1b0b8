"""The graph interpreter: runs a function of graph ops on numpy arrays.

Each graph op carries its own reference semantics (`GraphOp.evaluate`); this module
walks a function in order and binds values. Functions may call each other with
`func.call`. An op of another dialect (a plugin's) that is not a `GraphOp` is run by
the function registered for its class with `@evaluator(OpClass)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from strato.dialects.graph import (
    CondCallOp,
    GraphOp,
    IfOp,
    LoopCallOp,
    LoopOp,
    ScanCallOp,
    ScanOp,
    YieldOp,
    condition_holds,
)
from strato.dialects.graph.base import shape_text
from strato.dialects.tensor_types import array_from_dense, numpy_dtype
from strato.diagnostics import StratoError


Evaluator = Callable[[Operation, Sequence[np.ndarray]], Sequence[np.ndarray]]
"""`(op, input arrays) -> result arrays`: the reference semantics of an op."""

_EVALUATORS: dict[type[Operation], Evaluator] = {}


def evaluator(*op_types: type[Operation]) -> Callable[[Evaluator], Evaluator]:
    """Register the decorated function as the reference semantics of `op_types` (ops
    that are not `GraphOp`s, which carry theirs as `evaluate`)."""

    def register(fn: Evaluator) -> Evaluator:
        for op_type in op_types:
            _EVALUATORS[op_type] = fn
        return fn

    return register


def evaluator_for(op: Operation) -> Evaluator | None:
    """The registered evaluator of `op`'s class or of its nearest base class."""
    for cls in type(op).__mro__:
        if cls in _EVALUATORS:
            return _EVALUATORS[cls]
    return None


def entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function called `name`, or the module's only public function with a body."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if name is not None:
        for f in funcs:
            if f.sym_name.data == name:
                return f
        raise StratoError(f"no function named @{name} in the module")
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
    candidates = public or funcs
    if len(candidates) == 1:
        return candidates[0]
    for f in candidates:
        if f.sym_name.data == "main":
            return f
    raise StratoError(
        "cannot tell the entry function: name one of "
        + ", ".join("@" + f.sym_name.data for f in candidates)
    )


def shape_fits(shape: Sequence[int], declared: Sequence[int]) -> bool:
    """Whether an array's shape is of a tensor type's: equal sizes, any size at a
    run-time (`?`) dimension."""
    return len(shape) == len(declared) and all(
        d < 0 or int(n) == d for n, d in zip(shape, declared, strict=True)
    )


def check_inputs(function: func.FuncOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The inputs as arrays of the function's argument types, or a diagnostic."""
    types = function.function_type.inputs.data
    if len(inputs) != len(types):
        raise StratoError(
            f"@{function.sym_name.data} takes {len(types)} inputs, got {len(inputs)}"
        )
    arrays = []
    for i, (value, type_) in enumerate(zip(inputs, types)):
        array = np.asarray(value)
        if isinstance(type_, TensorType):
            if not shape_fits(array.shape, type_.get_shape()):
                raise StratoError(
                    f"input {i} of @{function.sym_name.data} has shape {list(array.shape)}, "
                    f"expected {shape_text(type_.get_shape())}"
                )
            array = array.astype(numpy_dtype(type_), copy=False)
        arrays.append(array)
    return arrays


def run_graph(
    module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None
) -> list[np.ndarray]:
    """Interpret the entry function of a graph-level module on `inputs`."""
    entry = entry_function(module, function)
    return _run_function(module, entry, check_inputs(entry, inputs))


def _run_function(
    module: ModuleOp, function: func.FuncOp, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    env: dict[SSAValue, np.ndarray] = dict(zip(function.args, inputs))
    returned = _run_block(module, function.body.block, env)
    if returned is None:
        raise StratoError(f"@{function.sym_name.data} has no func.return")
    return returned


def run_loop(
    max_trip: np.ndarray,
    condition: np.ndarray,
    carried: Sequence[np.ndarray],
    step: Callable[[np.ndarray, np.ndarray, list[np.ndarray]], Sequence[np.ndarray]],
) -> list[np.ndarray]:
    """ONNX Loop's iteration: `step(i, condition, carried)` gives the next condition and
    carried values, while i is below the trip count and the condition holds."""
    limit = int(np.asarray(max_trip).reshape(-1)[0])
    go = np.asarray(condition).reshape(())
    values = list(carried)
    i = 0
    while i < limit and bool(go):
        given = step(np.array(i, np.int64), go, values)
        go, values = np.asarray(given[0]).reshape(()), list(given[1:])
        i += 1
    return values


def run_loop_call(
    args: Sequence[np.ndarray],
    carried: int,
    call: Callable[[list[np.ndarray]], Sequence[np.ndarray]],
) -> list[np.ndarray]:
    """A loop call's iteration on its operands `args` (trip count, condition, `carried`
    initial values, captured values): `call(inputs)` runs the body function."""
    captured = list(args[2 + carried :])
    return run_loop(
        args[0], args[1], args[2 : 2 + carried],
        lambda i, go, values: call([i, go, *values, *captured]),
    )  # fmt: skip


def run_scan(
    carried: Sequence[np.ndarray],
    scanned: Sequence[np.ndarray],
    stacked: Sequence[Attribute],
    step: Callable[[list[np.ndarray], list[np.ndarray]], Sequence[np.ndarray]],
    stops: bool = False,
) -> list[np.ndarray]:
    """A scan's iteration: `step(carried, positions)` gives the next carried values and
    a row of each scan output (of the `stacked` types), once per position along the
    scanned tensors' first axis (with `stops`, while the first carried value holds;
    the rows of the positions not run are zeros); the last carried values, then the
    stacked rows."""
    values = list(carried)
    outputs = [np.zeros(t.get_shape(), numpy_dtype(t)) for t in stacked]  # type: ignore[attr-defined]
    for i in range(scanned[0].shape[0]):
        if stops and not condition_holds(values[0]):
            break
        given = step(values, [np.asarray(s[i]) for s in scanned])
        values = list(given[: len(values)])
        for output, row in zip(outputs, given[len(values) :], strict=True):
            output[i] = row
    return [*values, *outputs]


def run_scan_call(
    op: ScanCallOp | Operation,
    args: Sequence[np.ndarray],
    call: Callable[[list[np.ndarray]], Sequence[np.ndarray]],
) -> list[np.ndarray]:
    """A scan call's iteration on its operands `args` (carried initial values, scanned
    tensors, captured values): `call(inputs)` runs the body function."""
    carried, scanned = len(op.inits), len(op.scanned)  # type: ignore[attr-defined]
    captured = list(args[carried + scanned :])
    return run_scan(
        args[:carried], args[carried : carried + scanned], op.result_types[carried:],
        lambda values, positions: call([*values, *positions, *captured]),
        op.stops is not None,  # type: ignore[attr-defined]
    )  # fmt: skip


def _run_block(
    module: ModuleOp, block: Block, env: dict[SSAValue, np.ndarray]
) -> list[np.ndarray] | None:
    """Run the ops of `block` in order, binding their results in `env`; the values of
    its terminator (`func.return`, `graph.yield`), None when it has none."""
    for op in block.ops:
        if isinstance(op, func.ReturnOp | YieldOp):
            return [env[v] for v in op.operands]
        args = [env[v] for v in op.operands]
        if isinstance(op, IfOp):
            # the regions read the enclosing values: they run in the same environment
            results = _run_block(module, op.branch(condition_holds(args[0])), env)
            assert results is not None, "graph.if region without graph.yield"
        elif isinstance(op, CondCallOp):
            callee = entry_function(module, op.callee(condition_holds(args[0])))
            results = _run_function(module, callee, args[1:])
        elif isinstance(op, LoopOp):
            body = op.body.block

            def step(
                i: np.ndarray, go: np.ndarray, carried: list[np.ndarray], body: Block = body
            ) -> list[np.ndarray]:
                env.update(zip(body.args, [i, go, *carried]))
                given = _run_block(module, body, env)
                assert given is not None, "graph.loop body without graph.yield"
                return given

            results = run_loop(args[0], args[1], args[2:], step)
        elif isinstance(op, LoopCallOp):
            results = run_loop_call(
                args, len(op.inits),
                lambda inputs, name=op.callee: _run_function(module, entry_function(module, name), inputs),
            )  # fmt: skip
        elif isinstance(op, ScanOp):
            body = op.body.block

            def scan_step(
                carried: list[np.ndarray], positions: list[np.ndarray], body: Block = body
            ) -> list[np.ndarray]:
                env.update(zip(body.args, [*carried, *positions]))
                given = _run_block(module, body, env)
                assert given is not None, "graph.scan body without graph.yield"
                return given

            n = len(op.inits)
            results = run_scan(args[:n], args[n:], op.result_types[n:], scan_step, op.stops is not None)
        elif isinstance(op, ScanCallOp):
            results = run_scan_call(
                op, args,
                lambda inputs, name=op.callee: _run_function(module, entry_function(module, name), inputs),
            )  # fmt: skip
        elif isinstance(op, GraphOp):
            results = op.evaluate(args)
        elif isinstance(op, arith.ConstantOp) and isinstance(
            op.value, DenseIntOrFPElementsAttr
        ):
            results = [array_from_dense(op.value)]
        elif isinstance(op, func.CallOp):
            callee = entry_function(module, op.callee.string_value())
            results = _run_function(module, callee, args)
        elif (evaluate := evaluator_for(op)) is not None:
            results = [np.asarray(r) for r in evaluate(op, args)]
        else:
            raise StratoError(f"the graph interpreter cannot run '{op.name}'", op=op)
        for value, array in zip(op.results, results, strict=True):
            env[value] = array
    return None
