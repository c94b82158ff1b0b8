"""The equivalence oracle: run a pipeline pass by pass, interpreting the IR before and
after each pass on the same inputs, and report the first pass that changes a result.

    report = check_pipeline(ctx, module, passes, n_inputs=8)
    if report.difference is not None:
        print(report.difference.describe())

The IR is interpreted at whatever level it is: graph, te or loop (the interpreter of
the level the entry function's ops belong to). An op with no interpreter is reported
by name (`Unsupported`), not as a crash. Floats compare with a tolerance (NaN equal to
NaN), integers and booleans exactly.

Loop programs too large for the loop interpreter run compiled (`run_compiled_loops`):
each kernel compiled on its own as `strato.compile` compiles it, once per distinct kernel
(`LoopCompiler`), so a pass that changes one kernel compiles that one only, and
`run_all` compiles a program once for all its inputs.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from strato.dialects.tensor_types import numpy_dtype

if TYPE_CHECKING:
    from strato.dialects.graph.dims import SizeBound
    from strato.targets.llvm.jit import JitFunction
    from strato.targets.llvm.kernel_objects import KernelObject


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
        if _takes_sizes(module, function):
            return _RunTimeEntry.of(entry).input_types()
        from strato.interpreters.loop import output_flags

        types = [t for t, out in zip(types, output_flags(entry)) if not out]
    return types


@dataclass(frozen=True)
class _RunTimeEntry:
    """A loop-level entry function that takes run-time sizes (`loop.size` arguments
    after its buffers), called as the levels above it are: each input buffer holds a
    tensor of its shape (a flat buffer's from `loop.shape`; `te.sizes` names the
    run-time dimensions), the sizes are those the inputs give, and each output buffer
    gives the tensor of its shape. `arguments`: per argument, ("input" | "output",
    the tensor's shape with -1 at run-time dimensions, their names), or ("size", name)."""

    name: str
    types: tuple[Attribute, ...]
    arguments: tuple[tuple[str, tuple[int, ...], tuple[str, ...]], ...]

    @staticmethod
    def of(entry: func.FuncOp) -> _RunTimeEntry:
        from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr

        from strato.dialects.loop import OUTPUT_ATTR, SHAPE_ATTR, SIZE_ATTR
        from strato.dialects.te import SIZES_ATTR

        types = tuple(entry.function_type.inputs.data)
        attrs = entry.arg_attrs.data if entry.arg_attrs is not None else [DictionaryAttr({})] * len(types)
        arguments = []
        for n, (type_, attr) in enumerate(zip(types, attrs, strict=True)):
            data = attr.data
            if SIZE_ATTR in data:
                arguments.append(("size", (), (data[SIZE_ATTR].data,)))  # type: ignore[union-attr]
                continue
            kind = "output" if OUTPUT_ATTR in data else "input"
            shape = tuple(type_.get_shape()) if isinstance(type_, MemRefType) else ()
            names: tuple[str, ...] = ()
            if any(d < 0 for d in shape):
                given = data.get(SIZES_ATTR)
                names = tuple(a.data for a in given.data) if given is not None else ()  # type: ignore[union-attr]
                stated = data.get(SHAPE_ATTR)
                if isinstance(stated, DenseArrayBase):
                    shape = tuple(int(d) for d in stated.get_values())
                if len(names) != sum(d < 0 for d in shape):
                    raise Unsupported(
                        ["run-time sizes"],
                        f"the loop level: argument {n} of @{entry.sym_name.data} ({type_}) does "
                        f"not name its run-time dimensions ('{SIZES_ATTR}', and '{SHAPE_ATTR}' "
                        "for a flat buffer)",
                    )
            arguments.append((kind, shape, names))
        return _RunTimeEntry(entry.sym_name.data, types, tuple(arguments))

    def _buffers(self, kind: str) -> list[tuple[Attribute, tuple[int, ...], tuple[str, ...]]]:
        return [
            (type_, shape, names)
            for type_, (role, shape, names) in zip(self.types, self.arguments, strict=True)
            if role == kind
        ]

    def input_types(self) -> list[Attribute]:
        """The types of the tensors the inputs hold (a memref of the tensor's shape)."""
        return [
            MemRefType(type_.element_type, shape) if isinstance(type_, MemRefType) else type_
            for type_, shape, _ in self._buffers("input")
        ]

    def dim_names(self) -> list[list[str | None]]:
        """Each input's name at each run-time dimension (None at static ones)."""
        result = []
        for _, shape, names in self._buffers("input"):
            given = iter(names)
            result.append([next(given) if d < 0 else None for d in shape])
        return result

    def call(
        self,
        module: ModuleOp,
        inputs: Sequence[np.ndarray],
        function: str | None,
        program: CompiledLoops | None = None,
    ) -> list[np.ndarray]:
        """The entry run on `inputs` (tensors of their shapes), interpreted or by the
        compiled `program`: its outputs as tensors of their shapes."""
        from strato.interpreters.loop import run_loops

        sizes: dict[str, int] = {}
        for array, (_, shape, names) in zip(inputs, self._buffers("input"), strict=True):
            given = iter(names)
            for axis, d in enumerate(shape):
                if d < 0:
                    sizes.setdefault(next(given), int(np.shape(array)[axis]))

        def at_sizes(type_: Attribute, shape: tuple[int, ...], names: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
            """The tensor's shape and its buffer's at the sizes."""
            given = iter(names)
            tensor = tuple(sizes[next(given)] if d < 0 else d for d in shape)
            rank = len(type_.get_shape()) if isinstance(type_, MemRefType) else 0
            return tensor, tensor if rank == len(tensor) else (int(np.prod(tensor, dtype=np.int64)),)

        arguments: list = []
        output_shapes, tensors = [], []
        given_inputs = iter(inputs)
        for type_, (role, shape, names) in zip(self.types, self.arguments, strict=True):
            if role == "size":
                if names[0] not in sizes:
                    raise Unsupported(["run-time sizes"], f"the loop level: no input of @{self.name} gives '{names[0]}'")
                arguments.append(sizes[names[0]])
            elif role == "input":
                array = next(given_inputs)
                if names:
                    array = np.ascontiguousarray(array).reshape(at_sizes(type_, shape, names)[1])
                arguments.append(array)
            else:
                tensor, buffer = at_sizes(type_, shape, names)
                tensors.append(tensor)
                output_shapes.append(buffer)
        if program is not None:
            outputs = program(arguments, output_shapes)
        else:
            outputs = run_loops(module, arguments, function, output_shapes)
        return [np.asarray(out).reshape(tensor) for out, tensor in zip(outputs, tensors, strict=True)]


def random_inputs(
    types: Sequence[Attribute],
    seed: int,
    edge: bool = False,
    dim_names: Sequence[Sequence[str | None]] | None = None,
    bounds: Mapping[str, SizeBound] | None = None,
) -> list[np.ndarray]:
    """Inputs for arguments of `types` (tensors or memrefs); every other seed, with edge
    values (zeros, negatives, NaN/Inf, integer extremes) mixed in when `edge`. A
    run-time (`?`) dimension takes a size drawn from 1 to 6 per name (`dim_names`: each
    argument's name at each run-time dimension), one size for each name; a name with
    `bounds` takes one of the first six sizes from 1 they admit (multiples of 8 from 8)."""
    from strato.testing.arrays import edge_array, random_array

    rng = np.random.default_rng(seed)
    sizes: dict[str, int] = {}
    arrays = []

    def draw(name: str | None, key: str) -> int:
        if key not in sizes:
            bound = (bounds or {}).get(name or "")
            sizes[key] = int(rng.integers(1, 7)) if bound is None else _admitted_size(rng, bound)
        return sizes[key]

    for n, t in enumerate(types):
        shape = tuple(t.get_shape())  # type: ignore[attr-defined]
        if any(d < 0 for d in shape):
            names = dim_names[n] if dim_names is not None else [None] * len(shape)
            shape = tuple(
                d if d >= 0 else draw(name, name or f"{n}_{a}")
                for a, (d, name) in enumerate(zip(shape, names, strict=True))
            )
        dtype = numpy_dtype(t.element_type)  # type: ignore[attr-defined]
        if edge:
            arrays.append(edge_array(rng, shape, dtype))
        else:
            arrays.append(random_array(rng, shape, dtype))
    return arrays


def _admitted_size(rng: np.random.Generator, bound: SizeBound) -> int:
    """One of the first six sizes from 1 (or the least) that `bound` admits; the least
    when it admits none of them."""
    start = max(bound.least, 1)
    start += -start % bound.multiple
    admitted = [s for s in range(start, start + 6 * bound.multiple, bound.multiple) if bound.admits(s)]
    return int(rng.choice(admitted)) if admitted else bound.least


def make_inputs(
    module: ModuleOp, n: int, seed: int = 0, function: str | None = None
) -> list[list[np.ndarray]]:
    """`n` inputs for the entry function of `module`: odd ones with edge values, at
    sizes drawn for its run-time dimensions (within the bounds it records of them:
    `graph.size_bounds`)."""
    from strato.dialects.graph.dims import size_bounds

    types = input_types(module, function)
    names = _run_time_dim_names(module, function)
    bounds = size_bounds(_entry(module, function)) if names is not None else None
    return [
        random_inputs(types, seed + k, edge=k % 2 == 1, dim_names=names, bounds=bounds)
        for k in range(n)
    ]


def _run_time_dim_names(module: ModuleOp, function: str | None) -> list[list[str | None]] | None:
    """The name of each run-time dimension of each input of the entry function (None
    at static dimensions): the classes of the graph level (`graph.dims`), the `te.sizes`
    of the te level and of a loop-level function that takes the sizes (`_RunTimeEntry`:
    an entry, or a kernel, both named by convert-te-to-loops); Unsupported for a
    loop-level function of run-time sizes that names none."""
    entry = _entry(module, function)
    if not any(isinstance(t, TensorType | MemRefType) and any(d < 0 for d in t.get_shape())
               for t in entry.function_type.inputs.data):  # fmt: skip
        return None
    level = level_of(module)
    if level == "loop" and _takes_sizes(module, function):
        return _RunTimeEntry.of(entry).dim_names()
    if level not in ("graph", "te"):
        raise Unsupported(
            ["run-time sizes"],
            f"the {level} level (a function that names no sizes: 'loop.size' on its index "
            "arguments, 'te.sizes' on its buffers, as convert-te-to-loops writes them)",
        )
    if level == "graph":
        from strato.dialects.graph.dims import RunTimeDims

        dims = RunTimeDims.of_function(entry)
        return [
            [dims.name(arg, d) if size < 0 else None for d, size in enumerate(arg.type.get_shape())]
            if isinstance(arg.type, TensorType)
            else []
            for arg in entry.args
        ]
    from strato.dialects.te import SIZES_ATTR

    result: list[list[str | None]] = []
    for n, t in enumerate(entry.function_type.inputs.data):
        given = entry.arg_attrs.data[n].data.get(SIZES_ATTR) if entry.arg_attrs else None
        names = iter([a.data for a in given.data] if given is not None else [])  # type: ignore[union-attr]
        shape = t.get_shape() if isinstance(t, TensorType) else ()
        result.append([next(names, None) if d < 0 else None for d in shape])
    return result


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
            if _takes_sizes(module, function):
                program = None
                if evaluator_of(module, function) == "compiled (LLVM)":
                    program = compile_loops_program(module, function)
                return _RunTimeEntry.of(_entry(module, function)).call(module, inputs, function, program)
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


RUN_TIME_TRIPS = 8
"""What `loop_steps` counts for a loop to a run-time bound: about what the inputs'
drawn sizes (1 to 6 each) give it."""

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
                steps *= RUN_TIME_TRIPS if current.is_dynamic else max(1, current.trip_count)
            current = current.parent_op()
        total += steps
    return total


def can_compile(module: ModuleOp, function: str | None = None) -> bool:
    """Whether the compiled evaluator takes the entry function: buffers, and run-time
    sizes after them."""
    from xdsl.dialects.builtin import IndexType, MemRefType

    from strato.interpreters.loop import loop_entry_function

    try:
        entry = loop_entry_function(module, function)
    except Exception:  # noqa: BLE001 - the interpreter reports it
        return False
    return not entry.function_type.outputs.data and all(
        isinstance(t, MemRefType | IndexType) for t in entry.function_type.inputs.data
    )


EVALUATOR_OPT_LEVEL = 1
"""LLVM's optimization level for the compiled evaluator's kernels and entry: the
evaluator checks what a program computes, not how fast. O1 compiles mobilenet_v2's
three loop-level programs in about 15% less time than O3 and runs them as fast (the
time goes to lowering, optimizing and code generation, not to running). The semantics
are O3's: no fast-math beyond the reduction flags the lowering sets at every level."""

EVALUATOR_WEIGHT_PREFIX = "strato_evaluator_"
"""The prefix of the weight symbols of the compiled evaluator's entry (`pack_weights`)."""


class LoopCompiler:
    """The compiled evaluator's compiler: a loop program compiled as `strato.compile`
    compiles a model (`strato.targets.llvm.kernel_objects`), each kernel on its own,
    keyed by its structural hash, and the entry linked against the kernels' objects.

    A kernel compiled once (in this process: `objects`, at most `memo_size` of them, the
    least recently used go first; or before, in the compile cache when it is on) is not
    compiled again: across the passes of an equivalence check, a pass that changes one
    kernel compiles only that one. `kernels_compiled` and `entries_compiled` count what
    was compiled."""

    def __init__(self, opt_level: int = EVALUATOR_OPT_LEVEL, memo_size: int = 1024):
        self.opt_level = opt_level
        self.memo_size = memo_size
        self.objects: OrderedDict[str, KernelObject] = OrderedDict()
        self.kernels_compiled = 0
        self.entries_compiled = 0

    def compile(self, module: ModuleOp, function: str | None = None) -> CompiledLoops:
        """The loop program `module` compiled (see `run_compiled_loops`); `module` is
        left as it is."""
        from strato.dialects.loop import KERNEL_ATTR
        from strato.interpreters.loop import loop_entry_function
        from strato.runtime.cache import cache_enabled
        from strato.runtime.threads import available_cores
        from strato.targets.llvm.build import call_compiled_kernels
        from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
        from strato.targets.llvm.entry_abi import finalize_entry
        from strato.targets.llvm.host import host_target
        from strato.targets.llvm.jit import JitModule
        from strato.targets.llvm.kernel_objects import KernelBuild, compile_kernels
        from strato.targets.llvm.weights import pack_weights

        entry = loop_entry_function(module, function)
        name = entry.sym_name.data
        lowered = module.clone()
        lowered_entry = loop_entry_function(lowered, name)
        # the entry is lowered here, whether or not it is a kernel
        lowered_entry.attributes.pop(KERNEL_ATTR, None)
        machine = host_target()
        build = KernelBuild(machine, self.opt_level, threads=1, fast_math=False)
        memo = _LeastRecentlyUsed(self.objects, self.memo_size)
        objects = compile_kernels(
            lowered,
            build,
            jobs=available_cores(),
            cache=cache_enabled(),
            memo=memo,
            compiling=self._count,
        )
        call_compiled_kernels(lowered, objects)
        convert_loops_to_llvm(lowered, threads=1)
        distinct = list({compiled.symbol: compiled for compiled in objects.values()}.values())
        failing = [compiled.symbol for compiled in distinct if compiled.returns_status]
        finalize_entry(lowered, name, name, failing)
        weights = pack_weights(lowered, EVALUATOR_WEIGHT_PREFIX)
        jit = JitModule(
            lowered, machine=machine, opt_level=self.opt_level, weights=weights, objects=distinct
        )
        self.entries_compiled += 1
        return CompiledLoops(entry, jit.function(name))

    def _count(self, keys: list[str]) -> None:
        self.kernels_compiled += len(keys)


class _LeastRecentlyUsed(MutableMapping):
    """`objects` as a memo of at most `size` entries (without their LLVM IR): a lookup
    makes an entry the most recent, a store beyond `size` drops the least recent."""

    def __init__(self, objects: OrderedDict[str, KernelObject], size: int):
        self.objects = objects
        self.size = size

    def __getitem__(self, key: str) -> KernelObject:
        found = self.objects[key]
        self.objects.move_to_end(key)
        return found

    def __setitem__(self, key: str, value: KernelObject) -> None:
        # the evaluator loads the object, and never reads the kernel's LLVM IR again
        self.objects[key] = replace(value, llvm_ir="")
        self.objects.move_to_end(key)
        while len(self.objects) > self.size:
            self.objects.popitem(last=False)

    def __delitem__(self, key: str) -> None:
        del self.objects[key]

    def __iter__(self):
        return iter(self.objects)

    def __len__(self) -> int:
        return len(self.objects)


LOOP_COMPILER = LoopCompiler()
"""The compiler of `run_compiled_loops` and `run_all`: its kernels are kept for the
life of the process."""


class CompiledLoops:
    """A loop program's entry compiled (`LoopCompiler.compile`), to run on inputs."""

    def __init__(self, entry: func.FuncOp, compiled: JitFunction):
        from strato.interpreters.loop import output_flags

        self.entry = entry
        self.compiled = compiled
        self.flags = output_flags(entry)

    def __call__(
        self, inputs: Sequence[np.ndarray | int], output_shapes: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]:
        """The program run on `inputs` (an int for an `index` argument: a run-time
        size) in a child process (`strato.runtime.isolated`): the output buffers, as
        the loop interpreter gives them (floats start as NaN, so an element no one
        writes shows); an output of run-time size takes its shape from `output_shapes`
        (one per output, in order)."""
        from strato.diagnostics import StratoError
        from strato.runtime.isolated import run_isolated, shared_zeros
        from strato.targets.llvm.entry_abi import STATUS_OK

        name = self.entry.sym_name.data
        types = self.entry.function_type.inputs.data
        flags = self.flags
        given = list(inputs)
        if len(given) != flags.count(False):
            raise StratoError(f"@{name} takes {flags.count(False)} inputs, got {len(given)}")
        args: list[np.ndarray | int] = []
        outputs: list[np.ndarray] = []
        for type_, is_output in zip(types, flags, strict=True):
            if isinstance(type_, IndexType):
                args.append(int(given.pop(0)))  # type: ignore[arg-type]
                continue
            dtype = numpy_dtype(type_)
            if is_output:
                shape = type_.get_shape()
                if any(n < 0 for n in shape):
                    shape = tuple((output_shapes or ())[len(outputs)])
                buffer = shared_zeros(shape, dtype)
                if dtype.kind == "f":
                    buffer[...] = np.nan
                outputs.append(buffer)
                args.append(buffer)
            else:
                args.append(np.require(np.asarray(given.pop(0), dtype=dtype), requirements="C"))
        compiled = self.compiled

        def call() -> None:
            status = compiled(*args)
            if status != STATUS_OK:
                raise StratoError(f"@{name} ran out of memory (status {status})")

        run_isolated(call, name, self.entry)
        return [np.array(output) for output in outputs]


def compile_loops_program(module: ModuleOp, function: str | None = None) -> CompiledLoops:
    """The loop program `module` compiled by `LOOP_COMPILER`, to run on any inputs."""
    return LOOP_COMPILER.compile(module, function)


def run_compiled_loops(
    module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None
) -> list[np.ndarray]:
    """The loop program compiled for this machine (one thread; its kernels each on their
    own, those compiled before taken again: `LoopCompiler`) and run in a child process
    (`strato.runtime.isolated`): the output buffers, as the loop interpreter gives them
    (floats start as NaN, so an element no one writes shows)."""
    return compile_loops_program(module, function)(inputs)


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


def _run(
    evaluate: Callable[[Sequence[np.ndarray]], list[np.ndarray]], inputs: Sequence[np.ndarray]
) -> list[np.ndarray] | str:
    """The results, or the text of the error the program raised while running."""
    try:
        with np.errstate(all="ignore"):
            return evaluate(inputs)
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
    """`module` run on each of `inputs`; Unsupported when it cannot be interpreted. A
    program the compiled evaluator runs is compiled once for all the inputs."""
    if evaluator_of(module, function) != "compiled (LLVM)":
        return [_run(lambda x: interpret(module, x, function), x) for x in inputs]
    try:
        program = compile_loops_program(module, function)
    except Exception as err:  # noqa: BLE001 - as the program failing on each input
        return [f"{type(err).__name__}: {err}" for _ in inputs]
    if _takes_sizes(module, function):
        entry = _RunTimeEntry.of(_entry(module, function))
        return [_run(lambda x: entry.call(module, x, function, program), x) for x in inputs]
    return [_run(program, x) for x in inputs]


def _takes_sizes(module: ModuleOp, function: str | None) -> bool:
    """Whether the entry function takes run-time sizes (`loop.size` arguments)."""
    from strato.dialects.loop import SIZE_ATTR

    entry = _entry(module, function)
    return entry.arg_attrs is not None and any(
        SIZE_ATTR in attr.data for attr in entry.arg_attrs.data
    )


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
