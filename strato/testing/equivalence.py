"""The equivalence oracle: run a pipeline pass by pass, interpreting the IR before and
after each pass on the same inputs, and report the first pass that changes a result.

    report = check_pipeline(ctx, module, passes, n_inputs=8)
    if report.difference is not None:
        print(report.difference.describe())

The IR is interpreted at whatever level it is: graph, te or loop (the interpreter of
the level the entry function's ops belong to). An op with no interpreter is reported
by name (`Unsupported`), not as a crash. Floats compare with a tolerance (NaN equal to
NaN), integers and booleans exactly.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from strato.dialects.tensor_types import numpy_dtype


@dataclass
class Unsupported(Exception):
    """The IR holds ops the interpreters cannot run."""

    ops: list[str]
    stage: str

    def __str__(self) -> str:
        return f"no interpreter for {', '.join(self.ops)} ({self.stage})"


@dataclass
class Difference:
    """The first pass that changed a result."""

    pass_name: str
    index: int
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    actual: list[np.ndarray] | None
    ir_before: str
    ir_after: str
    reason: str

    def describe(self) -> str:
        lines = [f"pass '{self.pass_name}' (#{self.index + 1}) changes the result: {self.reason}"]
        with np.printoptions(precision=6, threshold=64, linewidth=100):
            for i, a in enumerate(self.inputs):
                lines.append(f"  input {i}: {a.dtype}{list(a.shape)} {a!r}")
            for i, e in enumerate(self.expected):
                lines.append(f"  before, result {i}: {e!r}")
            for i, a in enumerate(self.actual or []):
                lines.append(f"  after, result {i}: {a!r}")
        lines.append("// IR before the pass:")
        lines.append(self.ir_before.rstrip())
        lines.append("// IR after the pass:")
        lines.append(self.ir_after.rstrip())
        return "\n".join(lines)


@dataclass
class Report:
    difference: Difference | None = None
    unsupported: Unsupported | None = None
    passes_checked: list[str] = field(default_factory=list)


def ir_text(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def _entry(module: ModuleOp, name: str | None) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
    if name is not None:
        for f in functions:
            if f.sym_name.data == name:
                return f
        raise Unsupported([f"@{name}"], "no such function")
    if not functions:
        raise Unsupported(["func.func"], "the module has no function to run")
    for f in functions:
        if f.sym_name.data == "main":
            return f
    return functions[-1]


def input_types(module: ModuleOp, function: str | None = None) -> list[Attribute]:
    """The types of the inputs of the entry function (at loop level, its arguments that
    are not output buffers)."""
    entry = _entry(module, function)
    types = list(entry.function_type.inputs.data)
    if level_of(module) == "loop":
        from strato.interpreters.loop import output_flags

        types = [t for t, out in zip(types, output_flags(entry)) if not out]
    return types


def random_inputs(
    types: Sequence[Attribute], seed: int, edge: bool = False
) -> list[np.ndarray]:
    """Inputs for arguments of `types` (tensors or memrefs); every other seed, with edge
    values (zeros, negatives, NaN/Inf, integer extremes) mixed in when `edge`."""
    from strato.testing.arrays import edge_array, random_array

    rng = np.random.default_rng(seed)
    arrays = []
    for t in types:
        shape = tuple(t.get_shape())  # type: ignore[attr-defined]
        dtype = numpy_dtype(t.element_type)  # type: ignore[attr-defined]
        if edge:
            arrays.append(edge_array(rng, shape, dtype))
        else:
            arrays.append(random_array(rng, shape, dtype))
    return arrays


def make_inputs(
    module: ModuleOp, n: int, seed: int = 0, function: str | None = None
) -> list[list[np.ndarray]]:
    """`n` inputs for the entry function of `module`: odd ones with edge values."""
    types = input_types(module, function)
    return [random_inputs(types, seed + k, edge=k % 2 == 1) for k in range(n)]


def level_of(module: ModuleOp) -> str:
    """Which interpreter runs `module`: 'loop' once buffers appear, 'te' once te ops
    do, 'graph' otherwise."""
    names = {op.dialect_name() for op in module.walk()}
    types = {type(a).__name__ for op in module.walk() for a in (*op.operand_types, *op.result_types)}
    if "llvm" in names:
        return "llvm"
    if "MemRefType" in types or "loop" in names or "memref" in names or "scf" in names:
        return "loop"
    if "te" in names:
        return "te"
    return "graph"


def interpret(module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None) -> list[np.ndarray]:
    """The results of `module`'s entry function on `inputs`, at its level; Unsupported
    when an op has no interpreter."""
    level = level_of(module)
    try:
        if level == "graph":
            from strato.interpreters.graph import run_graph

            return [np.asarray(r) for r in run_graph(module, list(inputs), function)]
        if level == "te":
            from strato.interpreters.te import run_te

            return [np.asarray(r) for r in run_te(module, list(inputs), function)]
        if level == "loop":
            if loop_steps(module) > MAX_INTERPRETED_LOOP_STEPS and can_compile(module, function):
                return run_compiled_loops(module, inputs, function)
            from strato.interpreters.loop import run_loops

            return [np.asarray(r) for r in run_loops(module, list(inputs), function)]
    except Unsupported:
        raise
    except Exception as err:
        if "interpreter cannot run" in str(err):
            op = getattr(err, "op", None)
            if op is not None and hasattr(op, "op_name"):
                name = op.op_name.data  # an op of an unregistered dialect
            elif op is not None:
                name = op.name
            else:
                name = str(err).split("'")[1]
            raise Unsupported([name], f"{level} interpreter") from None
        raise
    raise Unsupported([f"{level}-level IR"], "llvm IR is run through the JIT, not checked here")


def evaluator_of(module: ModuleOp, function: str | None = None) -> str:
    """What `interpret` runs `module` with: its level's interpreter, or for a large loop
    program the compiled evaluator (`run_compiled_loops`)."""
    level = level_of(module)
    if level == "loop" and loop_steps(module) > MAX_INTERPRETED_LOOP_STEPS and can_compile(module, function):
        return "compiled (LLVM)"
    return f"{level} interpreter"


MAX_INTERPRETED_LOOP_STEPS = 20_000
"""Loop programs with more innermost iterations than this run compiled, not in the
loop interpreter (which takes about 20 microseconds an op): the interpreter stays the
oracle of small programs, and tests check that the two agree."""


def loop_steps(module: ModuleOp) -> int:
    """How many times the bodies of the module's innermost loops run, all together
    (each loop nest once: what one call of every function would cost at most)."""
    from strato.dialects.loop import ForOp

    total = 0
    for op in module.walk():
        if not isinstance(op, ForOp) or any(isinstance(inner, ForOp) for inner in op.body.walk()):
            continue
        steps = 1
        current = op
        while current is not None:
            if isinstance(current, ForOp):
                steps *= max(1, current.trip_count)
            current = current.parent_op()
        total += steps
    return total


def can_compile(module: ModuleOp, function: str | None = None) -> bool:
    """Whether the compiled evaluator takes the entry function: buffers only."""
    from xdsl.dialects.builtin import MemRefType

    from strato.interpreters.loop import loop_entry_function

    try:
        entry = loop_entry_function(module, function)
    except Exception:  # noqa: BLE001 - the interpreter reports it
        return False
    return not entry.function_type.outputs.data and all(
        isinstance(t, MemRefType) for t in entry.function_type.inputs.data
    )


def run_compiled_loops(
    module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None
) -> list[np.ndarray]:
    """The loop program compiled for this machine (one thread) and run in a child
    process (`strato.runtime.isolated`): the output buffers, as the loop interpreter
    gives them (floats start as NaN, so an element no one writes shows)."""
    from strato.diagnostics import StratoError
    from strato.interpreters.loop import loop_entry_function, output_flags
    from strato.runtime.isolated import run_isolated, shared_zeros
    from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
    from strato.targets.llvm.jit import JitModule

    entry = loop_entry_function(module, function)
    name = entry.sym_name.data
    types = entry.function_type.inputs.data
    flags = output_flags(entry)
    given = list(inputs)
    if len(given) != flags.count(False):
        raise StratoError(f"@{name} takes {flags.count(False)} inputs, got {len(given)}")
    args: list[np.ndarray] = []
    outputs: list[np.ndarray] = []
    for type_, is_output in zip(types, flags, strict=True):
        dtype = numpy_dtype(type_)
        if is_output:
            buffer = shared_zeros(type_.get_shape(), dtype)
            if dtype.kind == "f":
                buffer[...] = np.nan
            outputs.append(buffer)
            args.append(buffer)
        else:
            args.append(np.require(np.asarray(given.pop(0), dtype=dtype), requirements="C"))
    lowered = module.clone()
    objects = _compile_kernels_alone(lowered)
    convert_loops_to_llvm(lowered, threads=1)
    compiled = JitModule(lowered, objects=objects).function(name)
    run_isolated(lambda: compiled(*args), name, entry)
    return [np.array(output) for output in outputs]


_EVALUATOR_KERNELS: dict[str, object] = {}
"""Kernels the compiled evaluator built in this process, by key (a pass that leaves a
kernel as it was does not compile it again; nor does a second input)."""


def _compile_kernels_alone(module: ModuleOp) -> list:
    """Each distinct kernel of the loop-level `module` compiled on its own, as the llvm
    target's build does (one thread), unless this process or the compile cache (when it
    is on) has it; the calls in `module` then call the objects. The objects, for the JIT."""
    from strato.runtime.cache import cache_enabled
    from strato.runtime.threads import available_cores
    from strato.targets.llvm.build import call_compiled_kernels
    from strato.targets.llvm.host import host_target
    from strato.targets.llvm.kernel_objects import KernelBuild, compile_kernels

    build = KernelBuild(host_target(), 3, 1, fast_math=False)
    objects = compile_kernels(
        module, build, jobs=available_cores(), cache=cache_enabled(), memo=_EVALUATOR_KERNELS,  # type: ignore[arg-type]
    )
    if not objects:
        return []
    call_compiled_kernels(module, objects)
    return list({compiled.symbol: compiled for compiled in objects.values()}.values())


def compare(
    expected: Sequence[np.ndarray], actual: Sequence[np.ndarray], rtol: float, atol: float
) -> str | None:
    """Why `actual` differs from `expected` (None when they agree)."""
    if len(expected) != len(actual):
        return f"{len(expected)} results before, {len(actual)} after"
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape:
            return f"result {i} has shape {list(e.shape)} before, {list(a.shape)} after"
        if np.issubdtype(e.dtype, np.floating) or np.issubdtype(a.dtype, np.floating):
            e64, a64 = e.astype(np.float64), a.astype(np.float64)
            close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
            if not close.all():
                # Rounding a float computation differently (a reassociated sum, a fused
                # multiply-add) moves each result by a fraction of the magnitudes the
                # computation went through, not of the result itself: a result near 0
                # among large ones is within rtol of the largest (a 35-step LSTM's logits
                # differ by 5e-5 around 0 where the largest is 6.5).
                finite = np.isfinite(e64)
                scale = float(np.max(np.abs(e64[finite]))) if finite.any() else 0.0
                with np.errstate(invalid="ignore"):
                    close |= np.abs(a64 - e64) <= rtol * scale
            if not close.all():
                where = tuple(int(k) for k in np.argwhere(~close)[0])
                return (
                    f"result {i} differs at {list(where)}: {e64[where]!r} before, "
                    f"{a64[where]!r} after (rtol={rtol}, atol={atol})"
                )
        elif not np.array_equal(e, a):
            where = tuple(int(k) for k in np.argwhere(e != a)[0])
            return f"result {i} differs at {list(where)}: {e[where]!r} before, {a[where]!r} after (exact)"
    return None


def _run(module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None) -> list[np.ndarray] | str:
    """The results, or the text of the error the program raised while running."""
    try:
        with np.errstate(all="ignore"):
            return interpret(module, inputs, function)
    except Unsupported:
        raise
    except Exception as err:  # the program failing to run is a result to compare too
        return f"{type(err).__name__}: {err}"


def check_pipeline(
    ctx: Context,
    module: ModuleOp,
    passes: Sequence[ModulePass],
    n_inputs: int = 8,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    function: str | None = None,
    seed: int = 0,
    labels: Sequence[str] | None = None,
    inputs: Sequence[Sequence[np.ndarray]] | None = None,
    apply: Callable[[ModulePass, ModuleOp], None] | None = None,
) -> Report:
    """Apply `passes` to `module` in place, checking each against the IR before it on
    the same `n_inputs` inputs (half with edge values). Stops at the first pass that
    changes a result, or at IR that cannot be interpreted."""
    report = Report()
    labels = list(labels) if labels is not None else [p.name for p in passes]
    if inputs is None:
        try:
            inputs = make_inputs(module, n_inputs, seed, function)
        except Unsupported as err:
            report.unsupported = err
            return report
    try:
        expected = run_all(module, inputs, function)
    except Unsupported as err:
        report.unsupported = err
        return report
    for index, pass_ in enumerate(passes):
        before = ir_text(module)
        if apply is None:
            pass_.apply(ctx, module)
        else:
            apply(pass_, module)
        report.passes_checked.append(labels[index])
        try:
            actual = run_all(module, inputs, function)
        except Unsupported as err:
            report.unsupported = Unsupported(err.ops, f"{err.stage}, after {labels[index]}")
            return report
        found = first_difference(inputs, expected, actual, rtol, atol)
        if found is not None:
            x, e, a, reason = found
            report.difference = Difference(labels[index], index, x, e, a, before, ir_text(module), reason)
            return report
        expected = actual
    return report


Outcome = list[np.ndarray] | str
"""The results of a run, or the error it raised."""


def run_all(
    module: ModuleOp, inputs: Sequence[Sequence[np.ndarray]], function: str | None = None
) -> list[Outcome]:
    """`module` run on each of `inputs`; Unsupported when it cannot be interpreted."""
    return [_run(module, x, function) for x in inputs]


def first_difference(
    inputs: Sequence[Sequence[np.ndarray]],
    expected: Sequence[Outcome],
    actual: Sequence[Outcome],
    rtol: float,
    atol: float,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray] | None, str] | None:
    """The first input on which `actual` differs from `expected`: the input, both
    results and why. A program that failed before the pass may do anything after it."""
    for x, e, a in zip(inputs, expected, actual):
        if isinstance(e, str):
            continue
        if isinstance(a, str):
            return list(x), e, None, f"the program fails after the pass: {a}"
        reason = compare(e, a, rtol, atol)
        if reason is not None:
            return list(x), e, a, reason
    return None
