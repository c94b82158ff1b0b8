"""`-t interpret`: run a module's entry function on seeded random inputs, print outputs.

Every level runs: the level is read off the module and the matching reference
interpreter is called (graph ops: `run_graph`; te ops: `run_te`; loop nests over
memrefs: `run_loops`, which allocates the `{loop.output}` buffers itself); an llvm-dialect
module is compiled for this machine and run (`run_llvm`). The output is stable text for
FileCheck:

    strato-opt model.mlir -p convert-graph-to-te -t 'interpret{function=main seed=3}'

    // @main at te level, inputs from seed 3
    output 0: shape (1, 2) float32
    [[0.0000, 1.2345]]

Inputs are drawn with numpy's PCG64 generator from the seed: floats uniform in [-1, 1),
integers in [-4, 4], booleans 0 or 1. With `print-inputs=true` they are printed first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation
from xdsl.utils.target import Target

from strato.diagnostics import StratoError
from strato.runtime.isolated import run_isolated, shared_zeros

Interpreter = Callable[[ModuleOp, Sequence[np.ndarray], str | None], list[np.ndarray]]

# Levels from the most lowered down, so a module midway through a lowering runs on the
# interpreter of its lowest level.
_LEVEL_DIALECTS: tuple[tuple[str, frozenset[str]], ...] = (
    ("llvm", frozenset({"llvm"})),
    ("loop", frozenset({"loop", "memref", "scf"})),
    ("te", frozenset({"te"})),
    ("graph", frozenset({"graph"})),
)


def program_level(module: ModuleOp) -> str:
    """The level of a module: llvm, loop, te or graph. Plain functions run on the
    graph interpreter when they take tensors, on the loop interpreter when they take
    memrefs."""
    dialects = {op.dialect_name() for op in module.walk()}
    for level, level_dialects in _LEVEL_DIALECTS:
        if dialects & level_dialects:
            return level
    for op in module.ops:
        if isinstance(op, FuncOp) and any(
            isinstance(t, MemRefType) for t in op.function_type.inputs.data
        ):
            return "loop"
    return "graph"


def _interpreter_of(level: str) -> Interpreter:
    # Imported on use: each interpreter pulls in its level's machinery.
    if level == "graph":
        from strato.interpreters.graph import run_graph

        return run_graph
    if level == "te":
        from strato.interpreters.te import run_te

        return run_te
    if level == "loop":
        from strato.interpreters.loop import run_loops

        return run_loops
    if level == "llvm":
        return run_llvm
    raise StratoError(f"no interpreter for {level}-level modules")


def _llvm_entry(module: ModuleOp, function: str | None):
    """The llvm.func to run: the one named, else @main, else the only one with a body."""
    from xdsl.dialects import llvm

    funcs = [op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks]
    names = [f.sym_name.data for f in funcs]
    wanted = function or ("main" if "main" in names else None)
    if wanted is None and len(funcs) == 1:
        return funcs[0]
    for f in funcs:
        if f.sym_name.data == wanted:
            return f
    if wanted is not None:
        raise StratoError(f"no function named @{wanted} in the module")
    raise StratoError(
        "cannot tell the entry function: name one of " + ", ".join("@" + n for n in names)
    )


def _llvm_buffers(module: ModuleOp, entry) -> list:
    from strato.targets.llvm.jit import buffer_specs

    specs = buffer_specs(module).get(entry.sym_name.data, [])
    if not specs or any(spec is None for spec in specs):
        raise StratoError(
            f"@{entry.sym_name.data} takes arguments that are not buffers of the loop-level "
            "ABI; only functions lowered by convert-loops-to-llvm can be run"
        )
    return specs


def run_llvm(
    module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None
) -> list[np.ndarray]:
    """Compile an llvm-dialect module for this machine and run its entry function:
    inputs fill the non-output buffers in order, outputs are allocated and returned
    (as their storage arrays)."""
    from strato.dialects.tensor_types import numpy_dtype
    from strato.targets.llvm.jit import JitModule

    entry = _llvm_entry(module, function)
    specs = _llvm_buffers(module, entry)
    remaining = list(inputs)
    args: list[np.ndarray] = []
    outputs: list[np.ndarray] = []
    for spec in specs:
        if spec.is_output:
            buffer = shared_zeros(spec.type.get_shape(), numpy_dtype(spec.type))
            outputs.append(buffer)
            args.append(buffer)
        else:
            args.append(np.require(remaining.pop(0), requirements="C"))
    compiled = JitModule(module).function(entry.sym_name.data)
    run_isolated(lambda: compiled(*args), entry.sym_name.data, entry)
    return [np.array(output) for output in outputs]


def entry_and_input_types(
    module: ModuleOp, level: str, function: str | None
) -> tuple[FuncOp | Operation, list[Attribute]]:
    """The function an interpreter runs and the types of the inputs it takes (at loop
    level, the output buffers marked `{loop.output}` are not inputs)."""
    if level == "llvm":
        entry = _llvm_entry(module, function)
        return entry, [spec.type for spec in _llvm_buffers(module, entry) if not spec.is_output]
    if level == "loop":
        from strato.interpreters.loop import loop_entry_function, output_flags

        entry = loop_entry_function(module, function)
        types = entry.function_type.inputs.data
        return entry, [t for t, out in zip(types, output_flags(entry)) if not out]
    from strato.interpreters.graph import entry_function

    entry = entry_function(module, function)
    return entry, list(entry.function_type.inputs.data)


# The largest buffer -t interpret makes or lets a program make, in elements: inputs are
# drawn in float64 first, so this is 512 MiB of draws.
MAX_BUFFER_ELEMENTS = 2**26
# The most loop iterations or reduction steps -t interpret runs in Python.
MAX_INTERPRETED_STEPS = 2**27


def _is_defined_function(op: Operation) -> bool:
    from xdsl.dialects import llvm

    return isinstance(op, FuncOp | llvm.FuncOp) and bool(op.body.blocks)


def check_runnable(module: ModuleOp, entry: Operation, level: str) -> None:
    """Diagnostics for programs the interpreters cannot run, before running them:
    buffers too large to allocate, and, below llvm, functions of several blocks and
    recursive calls (the interpreters walk one block and recurse on calls)."""
    for op in module.walk():
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            type_ = value.type
            if not isinstance(type_, TensorType | MemRefType):
                continue
            shape = type_.get_shape()
            if any(dim < 0 for dim in shape):
                continue
            elements = int(np.prod(shape, dtype=object))
            if elements > MAX_BUFFER_ELEMENTS:
                raise StratoError(
                    f"{type_} holds {elements} elements, more than -t interpret "
                    f"allocates ({MAX_BUFFER_ELEMENTS})",
                    op=op,
                )
    if level == "llvm" or not isinstance(entry, FuncOp):
        return
    _check_call_graph(module, entry)
    _check_work(module)


def _check_work(module: ModuleOp) -> None:
    """The interpreters run a loop iteration or a reduction step in Python: refuse
    programs with more than MAX_INTERPRETED_STEPS of them, which would run for hours,
    before starting (the bounds are static at the te and loop levels)."""
    from strato.dialects.loop import ForOp
    from strato.dialects.te import ReduceOp

    steps: dict[Operation, int] = {}
    for op in module.walk():
        enclosing = op.parent_op()
        while enclosing is not None and enclosing not in steps:
            enclosing = enclosing.parent_op()
        outer = 1 if enclosing is None else steps[enclosing]
        if isinstance(op, ForOp):
            # a run-time bound is not known here: counted as one iteration
            trips = 1 if op.is_dynamic else op.trip_count
            work = outer * trips
        elif isinstance(op, ReduceOp):
            shape = op.results[0].type.get_shape() if op.results else ()
            work = outer * int(np.prod(shape, dtype=object)) * int(
                np.prod([e.data for e in op.extents.data], dtype=object)
            )
        else:
            continue
        steps[op] = work
        if work > MAX_INTERPRETED_STEPS:
            raise StratoError(
                f"'{op.name}' runs {work} steps, more than -t interpret runs "
                f"({MAX_INTERPRETED_STEPS}); lower the module with convert-loops-to-llvm "
                "to run it compiled",
                op=op,
            )


def _check_call_graph(module: ModuleOp, entry: FuncOp) -> None:
    from xdsl.dialects.func import CallOp

    functions = {
        op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp) and op.body.blocks
    }
    # Depth-first over the calls from `entry`, with an explicit stack: a call to a
    # function still on the path is recursion.
    on_path: set[str] = set()
    done: set[str] = set()
    stack: list[tuple[FuncOp, list[CallOp] | None]] = [(entry, None)]
    while stack:
        function, pending = stack[-1]
        name = function.sym_name.data
        if pending is None:
            if len(function.body.blocks) > 1:
                raise StratoError(
                    f"@{name} has {len(function.body.blocks)} blocks; the interpreters run "
                    "functions of a single block",
                    op=function,
                )
            on_path.add(name)
            pending = [op for op in function.walk() if isinstance(op, CallOp)]
            stack[-1] = (function, pending)
        if not pending:
            on_path.discard(name)
            done.add(name)
            stack.pop()
            continue
        call = pending.pop()
        callee = call.callee.string_value()
        if callee in on_path:
            raise StratoError(
                f"recursive call to @{callee}: the interpreters run programs without "
                "recursion",
                op=call,
            )
        if callee in functions and callee not in done:
            stack.append((functions[callee], None))


def random_input(type_: Attribute, rng: np.random.Generator) -> np.ndarray:
    """A random value of an argument type: an array for tensors and memrefs, a 0-d
    array for scalars."""
    from strato.dialects.tensor_types import numpy_dtype

    shape: tuple[int, ...] = ()
    if isinstance(type_, TensorType | MemRefType):
        shape = tuple(type_.get_shape())
        if any(dim < 0 for dim in shape):
            raise StratoError(f"cannot make a random input of dynamic type {type_}")
    try:
        dtype = numpy_dtype(type_)
    except ValueError:
        raise StratoError(f"cannot make a random input of type {type_}") from None
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def format_array(label: str, array: np.ndarray) -> str:
    """`label: shape (2, 3) float32` and the values, four decimals, numpy layout."""
    array = np.asarray(array)
    with np.printoptions(precision=4, floatmode="fixed", linewidth=100, threshold=1000):
        values = np.array2string(array, separator=", ")
    return f"{label}: shape {tuple(array.shape)} {array.dtype}\n{values}\n"


@dataclass(frozen=True)
class InterpretTarget(Target):
    """Runs the entry function (`function`, default: the only public one or @main) on
    random inputs drawn from `seed` and prints its outputs."""

    name: ClassVar[str] = "interpret"

    function: str | None = None
    seed: int = 0
    print_inputs: bool = False

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed}")

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        level = program_level(module)
        interpreter = _interpreter_of(level)
        if not any(_is_defined_function(op) for op in module.ops):
            raise StratoError("the module has no function with a body to run", op=module)
        entry, input_types = entry_and_input_types(module, level, self.function)
        check_runnable(module, entry, level)
        rng = np.random.default_rng(self.seed)
        inputs = [random_input(t, rng) for t in input_types]
        name = entry.sym_name.data
        output.write(f"// @{name} at {level} level, inputs from seed {self.seed}\n")
        if self.print_inputs:
            for index, array in enumerate(inputs):
                output.write(format_array(f"input {index}", array))
        for index, array in enumerate(interpreter(module, inputs, name)):
            output.write(format_array(f"output {index}", array))
