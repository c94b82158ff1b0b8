"""Models with operators whose output shapes depend on the data (NonZero, Unique,
NonMaxSuppression) or that transform strings (StringNormalizer, StringSplit,
StringConcat, RegexFullMatch): compiled parts, with those operators computed on the host
between them (`strato.runtime.host_ops`).

So are the nodes whose output shape follows from an input's VALUE known only at run time
(`strato.runtime.shape_ops`: Range, ConstantOfShape, Reshape, Expand, Tile, TopK,
Compress, OneHot, Slice, Pad, Split, Squeeze, Unsqueeze, the reductions, CenterCropPad,
AffineGrid, the windows, Resize, Upsample; also CumSum, CumProd and Trilu, whose axis or diagonal
the importer needs): a node of those operators runs on the host when one of the inputs
the importer needs at import time (its `IMPORT_TIME_INPUTS`, which the compiler passes
in) is not known at import time. Known, as the importer folds values
(`known_at_import`): an initializer, a Constant's output, a Shape or Size (every part
compiles for static sizes), and the output of a node all of whose inputs are known (not
of a random operator, of a node with subgraphs, or of a host node); in the body of a
Loop the importer unrolls, the iteration number too. A node whose such inputs are known
compiles as usual, so a model that imports stays one compiled model. A known value that
a later part reads (a Reshape's shape from a Constant, after a NonZero) is computed
again in that part, so its importer knows it too.

    n -> Range (host) -> [part 1: Cast, Add x] -> y

Each node of the graph gets a stage: the graph's inputs and initializers are at stage 0,
a compiled node is at the latest stage of its inputs, and a host operator's outputs are
one stage after its inputs. The compiled nodes of one stage form one part, a model of
its own whose inputs are the values it reads from earlier stages and whose outputs are
what later stages and the graph's outputs read; the host operators of stage k run after
part k. A part's inputs that a host operator computed have the sizes of the data, so
the part is compiled per call's sizes (`strato.specializing`), as is any part that reads
a graph input of dynamic size. A part that reads or gives strings is compiled on their
ids through the ONNX backend's string encoding (`strato.frontends.onnx.strings`).

    boxes, scores -> [part 0: Conv ... Sigmoid] -> NonMaxSuppression (host)
                  -> [part 1: Gather ... Concat] -> detections

Control flow decided at run time that the importer cannot compile (as `graph.loop` and
`graph.if`) runs on the host too: a Loop of the graph whose trip count or first
condition is known only at run time, or whose body computes its condition from such
values, and which has scan outputs or a state that changes shape, and an If of the graph
whose branches give values of other shapes (the importer raises `RuntimeBranchError`,
and the compiler stages the model with that If on the host). The
Loop's body becomes a model of its own (the iteration number, the condition, the carried
values and the outer values it reads in; the condition, the carried values and the scan
outputs out), compiled by the same `compile_part` and called once per iteration; an If's
branches become two such models (the outer values each reads in), and the condition
picks one. Their inputs' shapes are left open, so each compiles per the sizes its calls
bring (a carried value may grow), and a body or branch with host operators of its own
is staged in turn.

    n -> Loop (host: body = [part: Mul, Add, ReduceSum], called n times) -> [part] -> y

A Loop with scan outputs whose carried values keep their shapes runs in compiled chunks
from its second call on (`_Chunks`): the Loop compiled to run up to C iterations from
a given iteration number, which the importer makes a `graph.scan` that stops when the
body's condition fails or the trip count runs out, its scan outputs padded with zero
rows (`_chunk_model`). A call runs chunks until the loop stops, each from where the
last left off, and keeps the rows its iterations ran: one compile serves every trip
count, a loop without one (a `while` whose body decides), and a generation loop that
ends at a token. C is the power of two at least the iterations a run on the host made
(16 to 4096), so a call mostly runs one chunk.

    M, x -> Loop (chunks of 128 iterations: a graph.scan that stops; 37 ran) -> y

Operators inside a subgraph of a node that is not itself on the host (an If's branch, a
Loop's body the importer unrolls) stay compiled: a host operator there (any kind) is
refused, naming the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from strato.diagnostics import ModelImportError, StratoError
from strato.runtime.host_ops import HOST_OPS
from strato.runtime.shape_ops import SHAPE_OPS
from strato.runtime.signature import InputMismatchError

ImportTimeInputs = Mapping[str, Sequence[int]]
"""Per op type, the input positions the importer needs to know at import time (the ONNX
frontend's `IMPORT_TIME_INPUTS`)."""

STRUCTURE_ONLY = ("Shape", "Size", "SequenceLength")
"""Operators whose result depends only on their input's shape or length, which the
importer knows whatever the values: every part is compiled for static sizes (and
sequences of a static structure). The ONNX backend follows the same rule."""

_NOT_FOLDED = (
    "Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
    "RandomUniformLike",
)  # fmt: skip
"""Operators whose result is not known at import time even from known inputs."""


@dataclass
class _Part:
    """Compiled nodes of one stage: `run` takes `inputs` and gives `outputs` (names)."""

    run: Any
    inputs: list[str]
    outputs: list[str]


@dataclass
class _Host:
    node: onnx.NodeProto

    @property
    def reads(self) -> list[str]:
        """The values `run` takes, in order ("" for an absent optional input)."""
        return list(self.node.input)

    def run(self, values: list[np.ndarray | None]) -> list[np.ndarray]:
        compute = HOST_OPS.get(self.node.op_type) or SHAPE_OPS[self.node.op_type]
        return compute(self.node, values)

    def __str__(self) -> str:
        return self.node.op_type


@dataclass
class _Loop(_Host):
    """A Loop whose trip count or condition is known only at run time: its body is a
    compiled model of its own (the iteration number, the condition, the carried values
    and the outer values it reads in; the condition, the carried values and the scan
    outputs out), called once per iteration while the trip count and the condition
    allow. The scan outputs are stacked along a new first axis. A Loop with scan
    outputs runs in compiled chunks of iterations once it comes back (`_Chunks`)."""

    outer: list[str]
    body: Any
    empty_scans: list[tuple[np.dtype, tuple[int, ...]]]
    """Each scan output's element type and the shape of one iteration's slice where
    static (what a loop of no iteration gives: an empty stack of them)."""
    chunk: Callable[[int, list[tuple[np.dtype, tuple[int, ...]]]], Any] | None = None
    """For a Loop with scan outputs: the Loop compiled to run up to a number of
    iterations from a given one (`_chunk_model`; see `_Chunks`)."""

    def __post_init__(self) -> None:
        self._chunks = None if self.chunk is None else _Chunks(self.chunk)

    @property
    def reads(self) -> list[str]:
        return [*self.node.input, *self.outer]

    def __str__(self) -> str:
        chunks = self._chunks
        if chunks is not None and chunks.compiled is not None:
            return f"Loop (in compiled chunks of {chunks.capacity} iterations)"
        return "Loop"

    def run(self, values: list[np.ndarray | None]) -> list[np.ndarray]:
        given = len(self.node.input)
        count, condition = [*values[:2], None, None][:2]
        carried = list(values[2:given])
        outer = values[given:]
        trips = None if count is None else int(np.asarray(count).reshape(-1)[0])
        going = True if condition is None else bool(np.asarray(condition).reshape(-1)[0])
        if self._chunks is not None and going and (trips is None or trips > 0):
            results = self._chunks.run(trips, carried, outer)
            if results is not None:
                return results
        scans: list[list[np.ndarray]] = [[] for _ in self.empty_scans]
        iteration = 0
        while going and (trips is None or iteration < trips):
            results = self.body(
                np.array(iteration, np.int64), np.array(going, np.bool_), *carried, *outer
            )
            going = bool(np.asarray(results[0]).reshape(-1)[0])
            carried = list(results[1 : 1 + len(carried)])
            for stack, value in zip(scans, results[1 + len(carried) :], strict=True):
                stack.append(value)
            iteration += 1
        empty = self.empty_scans  # rows as the last run gave them, else as declared
        if self._chunks is not None and self._chunks.rows is not None:
            empty = self._chunks.rows
        stacked = [
            np.stack(stack) if stack else np.empty((0, *shape), dtype)
            for stack, (dtype, shape) in zip(scans, empty, strict=True)
        ]
        if self._chunks is not None and iteration:
            self._chunks.seen([(s.dtype, s.shape[1:]) for s in stacked], iteration)
        return [*carried, *stacked]


CHUNKED_AFTER_CALLS = 2
"""The call at which a Loop with scan outputs run on the host is compiled in chunks (the
calls before run the body once per iteration): a Loop run once never pays a compile."""

CHUNK_ITERATIONS = (16, 4096)
"""The fewest and the most iterations a compiled chunk of a Loop runs (`_Chunks`)."""

CHUNK_BYTES = 64 << 20
"""The most bytes a chunk's scan outputs take (rows for all its iterations)."""


class _Chunks:
    """A Loop with scan outputs run on the host, compiled to run up to C iterations from
    a given iteration number (`_chunk_model`: the importer makes it a `graph.scan` that
    stops, over C positions): a call runs chunks until the loop stops (its condition
    fails or its trip count runs out), each chunk's carried values the next one's, and
    stacks the rows the iterations ran. One compile serves every trip count, and a loop
    without one; C is the power of two (within `CHUNK_ITERATIONS` and `CHUNK_BYTES`)
    at least the iterations a run on the host made, so most calls run one chunk, and a
    call that took more than two makes the next compile longer chunks. A Loop the
    importer cannot compile so without unrolling it far (carried values that change
    shape) keeps running on the host."""

    def __init__(self, build: Callable[[int, list[tuple[np.dtype, tuple[int, ...]]]], Any]):
        self.build = build
        self.compiled: Any = None
        self.capacity = 0
        self.calls = 0
        self.iterations = 0
        """The most iterations a run on the host made."""
        self.rows: list[tuple[np.dtype, tuple[int, ...]]] | None = None
        """Each scan output's element type and row shape, as the last run on the host
        gave them (what the compiled chunk's outputs are declared with)."""
        self.refused = False

    def seen(self, rows: list[tuple[np.dtype, tuple[int, ...]]], iterations: int) -> None:
        """A run on the host gave rows of these types and shapes, over `iterations`."""
        self.rows = rows
        self.iterations = max(self.iterations, iterations)

    def run(
        self, trips: int | None, carried: list[np.ndarray | None], outer: list[np.ndarray | None]
    ) -> list[np.ndarray] | None:
        """The Loop's outputs (at most `trips` iterations), or None while it runs on the
        host."""
        if self.refused:
            return None
        if self.compiled is None:
            self.calls += 1
            if self.calls < CHUNKED_AFTER_CALLS or self.rows is None:
                return None
            if any(np.dtype(dtype).kind in "OSU" for dtype, _ in self.rows):
                self.refused = True  # strings: no compiled loop carries them
                return None
            capacity = self._capacity()
            try:
                self.compiled = self.build(capacity, self.rows)
            except StratoError:
                self.refused = True
                return None
            self.capacity = capacity
        limit = np.iinfo(np.int64).max if trips is None else trips
        stacks: list[list[np.ndarray]] = [[] for _ in self.rows or ()]
        iteration = chunks = 0
        while True:
            chunks += 1
            try:  # a model compiled per size compiles on its first call
                *values, runs, going = self.compiled(
                    *carried, *outer, np.array(iteration, np.int64), np.array(limit, np.int64)
                )
            except ModelImportError:
                self.refused, self.compiled = True, None
                return None
            ran = int(np.asarray(runs).reshape(-1)[0])
            carried = values[: len(carried)]
            for stack, rows in zip(stacks, values[len(carried) :], strict=True):
                stack.append(rows[:ran])
            iteration += ran
            if ran < self.capacity or not bool(np.asarray(going).reshape(-1)[0]) or iteration >= limit:
                break
        stacked = [stack[0] if len(stack) == 1 else np.concatenate(stack) for stack in stacks]
        self.iterations = max(self.iterations, iteration)
        if chunks > 2 and self._capacity() > self.capacity:
            self.compiled = None  # the next call compiles longer chunks
        return [*carried, *stacked]

    def _capacity(self) -> int:
        """The iterations of a chunk: the power of two at least the most iterations a
        call made, within `CHUNK_ITERATIONS` and `CHUNK_BYTES`."""
        assert self.rows is not None
        row_bytes = sum(np.dtype(d).itemsize * int(np.prod(r)) for d, r in self.rows)
        fewest, most = CHUNK_ITERATIONS
        capacity = max(fewest, 1 << max(self.iterations - 1, 0).bit_length())
        return min(capacity, most, max(1, CHUNK_BYTES // max(row_bytes, 1)))


class StagedModel:
    """A model run as compiled parts and host operators in turn (see the module
    docstring); callable like a compiled model."""

    def __init__(
        self,
        steps: Sequence[_Part | _Host],
        input_names: Sequence[str],
        output_names: Sequence[str],
        constants: Mapping[str, np.ndarray],
        input_types: Sequence[onnx.TypeProto] | None = None,
    ):
        self.steps = list(steps)
        self._input_names = list(input_names)
        self._output_names = list(output_names)
        self._constants = dict(constants)
        self._input_types = list(input_types) if input_types is not None else None
        self.origin = None

    @property
    def input_names(self) -> list[str]:
        return list(self._input_names)

    @property
    def output_names(self) -> list[str]:
        return list(self._output_names)

    @property
    def host_ops(self) -> list[str]:
        return [step.node.op_type for step in self.steps if isinstance(step, _Host)]

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        if len(arrays) != len(self._input_names):
            raise InputMismatchError(
                f"the model takes {len(self._input_names)} input(s) "
                f"({', '.join(self._input_names) or 'none'}), got {len(arrays)}"
            )
        if self._input_types is not None:
            for position, (name, array, declared) in enumerate(
                zip(self._input_names, arrays, self._input_types, strict=True)
            ):
                _check_input(position, name, array, declared)
        env: dict[str, np.ndarray] = dict(self._constants)
        env.update(zip(self._input_names, arrays, strict=True))
        for step in self.steps:
            if isinstance(step, _Host):
                node = step.node
                values = [env[name] if name else None for name in step.reads]
                results = step.run(values)
                env.update(zip([name for name in node.output if name], results, strict=True))
            else:
                results = step.run(*[env[name] for name in step.inputs])
                env.update(zip(step.outputs, results, strict=True))
        return [env[name] for name in self._output_names]

    @property
    def can_save(self) -> bool:
        return False

    def save(self, path: Any) -> None:
        from strato.diagnostics import StratoError

        raise StratoError(
            f"a model with host operators ({', '.join(self.host_ops)}) runs as several "
            "compiled parts and does not save to one file"
        )

    def __repr__(self) -> str:
        parts = sum(isinstance(step, _Part) for step in self.steps)
        hosts = [str(step) for step in self.steps if isinstance(step, _Host)]
        return f"<StagedModel: {parts} compiled part(s), host {', '.join(hosts)}>"


def _check_input(position: int, name: str, array: Any, declared: onnx.TypeProto) -> None:
    """An `InputMismatchError` unless `array` has the element type, rank and static sizes
    graph input `name` declares (what a compiled part checks of its own inputs; an input
    that only host operators read is checked here)."""
    what = f"input {position} '{name}'"
    if not isinstance(array, np.ndarray):
        raise InputMismatchError(f"{what}: expected a numpy array, got {type(array).__name__}")
    if not declared.HasField("tensor_type"):
        return
    tensor = declared.tensor_type
    if tensor.elem_type == onnx.TensorProto.STRING:
        if array.dtype.kind not in "OUS":
            raise InputMismatchError(f"{what}: dtype is {array.dtype.name}, expected strings")
    elif tensor.elem_type:
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if array.dtype != dtype:
            raise InputMismatchError(
                f"{what}: dtype is {array.dtype.name}, expected {np.dtype(dtype).name}"
            )
    dims = _dims(tensor)
    if dims is None:
        return
    shown = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    if array.ndim != len(dims) or any(
        d is not None and d != n for d, n in zip(dims, array.shape, strict=True)
    ):
        raise InputMismatchError(f"{what}: shape is {list(array.shape)}, expected {shown}")


def has_host_ops(
    model: onnx.ModelProto,
    import_time_inputs: ImportTimeInputs | None = None,
    host_ifs: frozenset[str] = frozenset(),
) -> bool:
    """Whether a node of `model`'s graph (or of a subgraph) runs on the host: an operator
    whose output sizes depend on the data, a string transform, or, given the importer's
    `import_time_inputs`, an operator of `SHAPE_OPS` whose input the importer needs at
    import time is known only at run time (see `known_at_import`), a Loop of the graph
    whose trip count or condition is known only then, or an If of the graph named (by
    its first output) in `host_ifs`. A Loop the model asks the importer to compile with
    padded rows (`PADDED_ROWS_KEY`) does not."""
    return _has_host_nodes(
        model.graph, import_time_inputs or {}, frozenset(), host_ifs=host_ifs,
        padded=padded_loop(model),
    )  # fmt: skip


def _has_host_nodes(
    graph: onnx.GraphProto,
    table: ImportTimeInputs,
    outer: frozenset,
    given: frozenset = frozenset(),
    host_ifs: frozenset[str] = frozenset(),
    padded: str | None = None,
) -> bool:
    hosts, known = _plan(
        graph, table, outer, refuse=False, given=given, host_ifs=host_ifs, padded=padded
    )
    return any(hosts) or any(
        _has_host_nodes(body, table, body_outer, body_given)
        for node in graph.node
        for body, body_outer, body_given in _scopes(node, known, table)
    )


def known_at_import(
    graph: onnx.GraphProto, import_time_inputs: ImportTimeInputs, outer: frozenset = frozenset()
) -> set[str]:
    """The values of `graph` the importer knows at import time, as it folds them: the
    initializers, the outputs of Constant nodes, of `STRUCTURE_ONLY` nodes (any input:
    every part is compiled for static sizes), and of nodes all of whose inputs are known
    (not those of random operators, of nodes with subgraphs or of host nodes). `outer`
    are the known values of the enclosing scopes (for a subgraph)."""
    return _plan(graph, import_time_inputs, outer, refuse=False)[1]


def _plan(
    graph: onnx.GraphProto,
    table: ImportTimeInputs,
    outer: frozenset,
    refuse: bool,
    given: frozenset = frozenset(),
    host_ifs: frozenset[str] = frozenset(),
    padded: str | None = None,
) -> tuple[list[bool], set[str]]:
    """Whether each node of `graph` runs on the host, and the values known at import
    time (`known_at_import`); `given` are the graph's inputs known (a body's, see
    `_scopes`). With `refuse`, a host node in a subgraph of a node is a
    `ModelImportError` naming both. The Loop whose first output is `padded` compiles
    (`PADDED_ROWS_KEY`)."""
    initializers = {init.name for init in graph.initializer}
    inputs = {value.name for value in graph.input}
    known = (set(outer) - inputs) | (inputs & given) | initializers | {""}
    hosts = []
    for node in graph.node:
        host = (
            node.op_type in HOST_OPS
            or _runtime_shape_input(node, table, known) is not None
            or (_runtime_loop(node, table, known) and node.output[0] != padded)
            or (node.op_type == "If" and node.output[0] in host_ifs)
        )
        hosts.append(host)
        if refuse and not (host and node.op_type in ("If", "Loop")):  # bodies compile alone
            for body, body_outer, body_given in _scopes(node, known, table):
                _refuse_host_nodes(node, body, table, body_outer, body_given)
        if host:
            continue
        if node.op_type == "Constant" or node.op_type in STRUCTURE_ONLY or (
            any(node.input)
            and all(name in known for name in node.input)
            and node.op_type not in _NOT_FOLDED
            and not _subgraphs(node)
        ):
            known.update(name for name in node.output if name)
    return hosts, known


def _scopes(
    node: onnx.NodeProto, known: set[str], table: ImportTimeInputs
) -> list[tuple[onnx.GraphProto, frozenset, frozenset]]:
    """Each subgraph of `node`, with the values known in the enclosing scopes and those
    of its own inputs the importer knows: a Loop of a known trip count and condition is
    unrolled, so its body knows the iteration number, the condition, and each carried
    value that starts known and that the body keeps known; a Scan's body knows the
    states that start known and stay so, and the slices of known scanned inputs."""
    outer = frozenset(known)
    scopes = []
    for body in _subgraphs(node):
        names = [value.name for value in body.input]
        fixed: set[str] = set()
        carried: list[tuple[str, str, str]] = []  # body input, its initial value, body output
        if node.op_type == "Loop":
            count, condition = [*node.input, "", ""][:2]
            if count and count in known and condition in known:
                fixed = set(names[:2])
                outputs = [value.name for value in body.output[1:]]
                carried = list(zip(names[2:], node.input[2:], outputs))
        elif node.op_type == "Scan":
            scanned = int(next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0))
            states = len(node.input) - scanned
            fixed = {
                name
                for name, value in zip(names[states:], node.input[states:])
                if value in known
            }
            outputs = [value.name for value in body.output[:states]]
            carried = list(zip(names[:states], node.input[:states], outputs))
        given = fixed | {name for name, initial, _ in carried if initial in known}
        while carried:  # what stays known from one iteration to the next
            inner = _plan(body, table, outer, refuse=False, given=frozenset(given))[1]
            kept = fixed | {name for name, _, out in carried if name in given and out in inner}
            if kept == given:
                break
            given = kept
        scopes.append((body, outer, frozenset(given)))
    return scopes


def _runtime_loop(node: onnx.NodeProto, table: ImportTimeInputs, known: set[str]) -> bool:
    """Whether `node` is a Loop the importer cannot unroll for want of its decisions: a
    trip count or a first condition known only at run time, or a condition its body
    computes from values known only then."""
    if node.op_type != "Loop" or node.domain not in ("", "ai.onnx"):
        return False
    count, condition = [*node.input, "", ""][:2]
    if (count and count not in known) or (condition and condition not in known):
        return True
    scopes = _scopes(node, known, table)
    if not scopes:
        return False
    body, outer, given = scopes[0]
    inner = _plan(body, table, outer, refuse=False, given=given)[1]
    return bool(body.output) and body.output[0].name not in inner


def _runtime_shape_input(node: onnx.NodeProto, table: ImportTimeInputs, known: set[str]) -> str | None:
    """The first input of `node` that the importer needs at import time but that is
    known only at run time, when `node`'s operator can run on the host (`SHAPE_OPS`)."""
    if node.op_type not in SHAPE_OPS or node.domain not in ("", "ai.onnx"):
        return None
    for position in table.get(node.op_type, ()):
        if position < len(node.input) and node.input[position] not in known:
            return node.input[position]
    return None


def _refuse_host_nodes(
    owner: onnx.NodeProto,
    body: onnx.GraphProto,
    table: ImportTimeInputs,
    outer: frozenset,
    given: frozenset,
) -> None:
    hosts, known = _plan(body, table, outer, refuse=True, given=given)
    for inner, host in zip(body.node, hosts, strict=True):
        if not host:
            continue
        where = f"node '{inner.name or inner.op_type}' ({inner.op_type}) in a subgraph of node '{owner.name or owner.op_type}'"
        runtime = _runtime_shape_input(inner, table, known)
        if inner.op_type in ("If", "Loop") and runtime is None:
            why = "its trip count or condition is known only when the model runs"
        elif inner.op_type in HOST_OPS or runtime is None:
            why = "its output size depends on the data"
        else:
            why = f"its output shape depends on the value of input '{runtime}', known only when the model runs"
        raise ModelImportError(
            f"{where}: {why}, which strato computes on the host only at the top level of a graph"
        )


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [
        graph
        for attr in node.attribute
        for graph in ([attr.g] if attr.HasField("g") else list(attr.graphs))
    ]


def _free_names(graph: onnx.GraphProto) -> set[str]:
    """The names a subgraph reads from its enclosing scopes."""
    defined = {value.name for value in graph.input} | {init.name for init in graph.initializer}
    free: set[str] = set()
    for node in graph.node:
        for name in _reads(node):
            if name not in defined:
                free.add(name)
        defined.update(node.output)
    free.update(value.name for value in graph.output if value.name not in defined)
    return free


def _reads(node: onnx.NodeProto) -> list[str]:
    """The values `node` reads: its inputs and what its subgraphs read from outside."""
    names = [name for name in node.input if name]
    for graph in _subgraphs(node):
        names.extend(sorted(_free_names(graph)))
    return names


def staged_model(
    model: onnx.ModelProto,
    compile_part: Callable[[onnx.ModelProto], Any],
    import_time_inputs: ImportTimeInputs | None = None,
    host_ifs: frozenset[str] = frozenset(),
    compile_loop: Callable[[onnx.ModelProto], Any] | None = None,
) -> StagedModel:
    """`model` as compiled parts and host operators; `compile_part` compiles a part.
    `import_time_inputs` (the importer's) decides which nodes of `SHAPE_OPS` run on the
    host: those whose such input is not known at import time. `compile_loop`, when
    given, compiles a host Loop whole for a trip count (`_CountedLoops`): as
    `compile_part` does, but refusing a loop it would unroll far."""
    inferred = _inferred_types(model)
    graph = model.graph
    is_host, known = _plan(
        graph, import_time_inputs or {}, frozenset(), refuse=True, host_ifs=host_ifs,
        padded=padded_loop(model),
    )  # fmt: skip
    initializers = {init.name: init for init in graph.initializer}
    inputs = [value for value in graph.input if value.name not in initializers]
    # a Constant node's tensor is an initializer of the parts and the host operators
    # that read it (no part is compiled for it alone)
    constant_nodes = {
        index: tensor
        for index, node in enumerate(graph.node)
        if (tensor := _constant_tensor(node)) is not None
    }
    initializers.update((tensor.name, tensor) for tensor in constant_nodes.values())
    stage: dict[str, int] = {value.name: 0 for value in inputs}
    stage.update((name, 0) for name in initializers)
    stage[""] = 0
    parts: dict[int, list[int]] = {}
    hosts: dict[int, list[onnx.NodeProto]] = {}
    reads: dict[int, list[str]] = {}
    for index, node in enumerate(graph.node):
        if index in constant_nodes:
            reads[index] = []
            continue
        read = _reads(node)
        reads[index] = read
        level = max((stage.get(name, 0) for name in read), default=0)
        if is_host[index]:
            hosts.setdefault(level, []).append(node)
            stage.update((name, level + 1) for name in node.output if name)
        else:
            parts.setdefault(level, []).append(index)
            stage.update((name, level) for name in node.output if name)

    # what each stage's nodes read, and what the graph's outputs read, decide the
    # outputs of each part
    read_at: dict[str, set[int]] = {}
    for index, node in enumerate(graph.node):
        level = max((stage.get(name, 0) for name in reads[index]), default=0)
        where = level if not is_host[index] else level + 0.5  # after part `level`
        for name in reads[index]:
            read_at.setdefault(name, set()).add(where)
    outputs = [value.name for value in graph.output]
    for name in outputs:
        read_at.setdefault(name, set()).add(float("inf"))

    # a value known at import time that a later part reads is computed again there, so
    # that part's importer knows it too (a Reshape's shape from a computed constant or a
    # Shape of part 0); what those nodes read in turn is read at that part's stage
    known_producer = {
        name: index
        for index, node in enumerate(graph.node)
        if not is_host[index]
        for name in node.output
        if name and name in known and name not in initializers
    }
    part_nodes: dict[int, list[int]] = {}
    for level, indices in parts.items():
        part_nodes[level] = _with_known_producers(graph, indices, known_producer)
        for index in set(part_nodes[level]) - set(indices):
            for name in reads[index]:
                if name not in known_producer:
                    read_at.setdefault(name, set()).add(level)
    steps: list[_Part | _Host] = []
    for level in range(max([*parts, *hosts], default=0) + 1):
        if level in part_nodes:
            nodes = [graph.node[index] for index in part_nodes[level]]
            steps.append(_part(model, nodes, level, read_at, initializers, inferred, compile_part))
        for node in hosts.get(level, []):
            if node.op_type == "Loop":
                steps.append(_loop(model, node, inferred, initializers, compile_part, compile_loop))
            elif node.op_type == "If":
                steps.append(_if(model, node, inferred, initializers, compile_part))
            else:
                steps.append(_Host(node))
    constants = {
        name: numpy_helper.to_array(init)
        for name, init in initializers.items()
        if any(isinstance(step, _Host) and name in step.reads for step in steps)
        or name in outputs
    }
    return StagedModel(
        steps, [value.name for value in inputs], outputs, constants, [value.type for value in inputs]
    )


def _constant_tensor(node: onnx.NodeProto) -> onnx.TensorProto | None:
    """The tensor of a Constant node given by its `value`, named as its output."""
    if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or not node.output[0]:
        return None
    for attr in node.attribute:
        if attr.name == "value" and attr.HasField("t"):
            tensor = onnx.TensorProto()
            tensor.CopyFrom(attr.t)
            tensor.name = node.output[0]
            return tensor
    return None


def _with_known_producers(
    graph: onnx.GraphProto, indices: list[int], known_producer: Mapping[str, int]
) -> list[int]:
    """The nodes at `indices`, with the nodes that compute the known values they read
    from outside them (and so on), by index in graph order."""
    chosen = set(indices)
    pending = [name for index in indices for name in _reads(graph.node[index])]
    while pending:
        index = known_producer.get(pending.pop())
        if index is None or index in chosen:
            continue
        chosen.add(index)
        pending.extend(_reads(graph.node[index]))
    return sorted(chosen)


def _part(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    level: int,
    read_at: Mapping[str, set],
    initializers: Mapping[str, onnx.TensorProto],
    inferred: Mapping[str, onnx.ValueInfoProto],
    compile_part: Callable[[onnx.ModelProto], Any],
) -> _Part:
    produced = [name for node in nodes for name in node.output if name]
    produced_set = set(produced)
    inputs: list[str] = []
    used_initializers: list[str] = []
    for node in nodes:
        for name in _reads(node):
            if name in produced_set or name in inputs or name in used_initializers:
                continue
            (used_initializers if name in initializers else inputs).append(name)
    outputs = [name for name in produced if any(where > level for where in read_at.get(name, ()))]
    graph = helper.make_graph(
        nodes,
        f"{model.graph.name or 'model'}_part{level}",
        [_declared(name, inferred) for name in inputs],
        [_declared(name, inferred, shape=False) for name in outputs],
        [initializers[name] for name in used_initializers],
    )
    return _Part(compile_part(_model_like(model, graph)), inputs, outputs)


def _model_like(model: onnx.ModelProto, graph: onnx.GraphProto) -> onnx.ModelProto:
    """`graph` as a model of `model`'s opsets, IR version and functions."""
    part = helper.make_model(graph, opset_imports=list(model.opset_import))
    part.ir_version = model.ir_version
    part.functions.extend(model.functions)
    return part


def _body_model(
    model: onnx.ModelProto,
    body: onnx.GraphProto,
    name: str,
    inputs: list[onnx.ValueInfoProto],
    inferred: Mapping[str, onnx.ValueInfoProto],
    initializers: Mapping[str, onnx.TensorProto],
) -> tuple[onnx.ModelProto, list[str]]:
    """A Loop's body or an If's branch as a model, and the outer values it reads from
    the enclosing graph: `inputs`, then those values, in (the enclosing graph's
    initializers it reads are its own); its outputs (shapes left open) out."""
    free = sorted(_free_names(body))
    outer = [name for name in free if name not in initializers]
    constants = [initializers[name] for name in free if name in initializers]
    nodes = list(body.node)
    outputs = []
    given = {value.name for value in inputs} | set(outer) | {c.name for c in constants}
    for position, value in enumerate(body.output):
        declared = onnx.ValueInfoProto()
        declared.CopyFrom(value)
        declared.type.tensor_type.ClearField("shape")  # an iteration's sizes may change
        if value.name in given or any(value.name == o.name for o in body.output[:position]):
            copy = f"{value.name}::output{position}"  # an input given back: its own output
            nodes.append(helper.make_node("Identity", [value.name], [copy]))
            declared.name = copy
        outputs.append(declared)
    graph = helper.make_graph(
        nodes, name, [*inputs, *(_declared(n, inferred) for n in outer)], outputs,
        [*constants, *body.initializer],
    )  # fmt: skip
    return _model_like(model, graph), outer


@dataclass
class _If(_Host):
    """An If whose condition is known only at run time and whose branches give values
    strato cannot select between (other shapes, or operators that may fault on the
    other branch's data): each branch is a compiled model of the outer values it reads;
    the condition picks the one that runs."""

    outer: list[str]
    branches: dict[bool, tuple[Any, list[int]]]
    """Per condition, the branch's model and the positions in `outer` of its inputs."""

    @property
    def reads(self) -> list[str]:
        return [*self.node.input, *self.outer]

    def run(self, values: list[np.ndarray | None]) -> list[np.ndarray]:
        condition = np.asarray(values[0])
        if condition.size != 1:
            raise InputMismatchError(
                f"node '{self.node.name or 'If'}' (If): its condition must hold one value, "
                f"got shape {list(condition.shape)}"
            )
        branch, positions = self.branches[bool(condition.reshape(-1)[0])]
        outer = values[len(self.node.input) :]
        return list(branch(*[outer[i] for i in positions]))


def _if(
    model: onnx.ModelProto,
    node: onnx.NodeProto,
    inferred: Mapping[str, onnx.ValueInfoProto],
    initializers: Mapping[str, onnx.TensorProto],
    compile_part: Callable[[onnx.ModelProto], Any],
) -> _If:
    graphs = {attr.name: attr.g for attr in node.attribute if attr.HasField("g")}
    if set(graphs) != {"then_branch", "else_branch"}:
        raise ModelImportError(f"node '{node.name or 'If'}' (If) needs then_branch and else_branch")
    prefix = f"{model.graph.name or 'model'}_{node.name or 'if'}"
    parts = {
        name: _body_model(model, graphs[name], f"{prefix}_{name}", [], inferred, initializers)
        for name in ("then_branch", "else_branch")
    }
    outer = sorted({value for _, reads in parts.values() for value in reads})
    branches = {
        taken: (compile_part(part), [outer.index(value) for value in reads])
        for taken, (part, reads) in zip((True, False), parts.values(), strict=True)
    }
    return _If(node, outer, branches)


def _loop(
    model: onnx.ModelProto,
    node: onnx.NodeProto,
    inferred: Mapping[str, onnx.ValueInfoProto],
    initializers: Mapping[str, onnx.TensorProto],
    compile_part: Callable[[onnx.ModelProto], Any],
    compile_loop: Callable[[onnx.ModelProto], Any] | None = None,
) -> _Loop:
    """A run-time Loop: its body as a model of its own, compiled by `compile_part`."""
    body = next(iter(_subgraphs(node)), None)
    if body is None or len(body.input) < 2 or len(body.output) < 1:
        raise ModelImportError(f"node '{node.name or 'Loop'}' (Loop) has no valid body")
    carried = len(body.input) - 2
    if len(node.input) - 2 != carried:
        raise ModelImportError(
            f"node '{node.name or 'Loop'}' (Loop) carries {len(node.input) - 2} values into "
            f"a body that takes {carried}"
        )
    inputs = [
        helper.make_tensor_value_info(body.input[0].name, onnx.TensorProto.INT64, []),
        helper.make_tensor_value_info(body.input[1].name, onnx.TensorProto.BOOL, []),
    ]
    for value, initial in zip(body.input[2:], node.input[2:], strict=True):
        declared = onnx.ValueInfoProto()
        declared.CopyFrom(value)
        if not declared.type.tensor_type.elem_type and initial in inferred:
            declared.type.CopyFrom(inferred[initial].type)
        declared.type.tensor_type.ClearField("shape")  # sizes may change between iterations
        inputs.append(declared)
    title = f"{model.graph.name or 'model'}_{node.name or 'loop'}_body"
    part, outer = _body_model(model, body, title, inputs, inferred, initializers)
    empty_scans = []
    for value, stacked in zip(body.output[1 + carried :], node.output[carried:], strict=False):
        tensor = value.type.tensor_type
        dims = _dims(tensor)
        if (dims is None or None in dims) and stacked in inferred:
            stacked_dims = _dims(_tensor_of(inferred[stacked].type))  # the Loop's output
            dims = stacked_dims[1:] if stacked_dims else None
        shape = tuple(dims) if dims is not None and None not in dims else ()
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type or onnx.TensorProto.FLOAT)
        empty_scans.append((np.dtype(dtype), shape))
    chunk = None
    if compile_loop is not None and len(body.output) > 1 + carried:

        def chunk(capacity: int, rows: list[tuple[np.dtype, tuple[int, ...]]]) -> Any:
            return compile_loop(
                _chunk_model(model, node, capacity, rows, outer, inferred, initializers)
            )

    return _Loop(node, outer, compile_part(part), empty_scans, chunk)


def _chunk_model(
    model: onnx.ModelProto,
    node: onnx.NodeProto,
    capacity: int,
    rows: list[tuple[np.dtype, tuple[int, ...]]],
    outer: list[str],
    inferred: Mapping[str, onnx.ValueInfoProto],
    initializers: Mapping[str, onnx.TensorProto],
) -> onnx.ModelProto:
    """The Loop `node` as a model that runs up to `capacity` of its iterations, from the
    iteration number `first` while it is below `limit` (the trip count) and the body's
    condition holds. Its inputs: the carried values, the outer values its body reads
    (`_Loop.reads` after the trip count and condition), `first` and `limit`; the
    enclosing graph's initializers its body reads are its own. Its outputs: the carried
    values, each scan output as `capacity` rows of `rows` (element type and shape per
    scan output, as a run on the host gave them; zeros past the last iteration run),
    how many iterations ran, and whether the loop goes on after them. The model asks
    the importer for those padded rows (`PADDED_ROWS_KEY`): a `graph.scan` that stops.

        Loop(M, c, v..) body(i, c, v..) -> (c', v'.., s..)
        ->
        Loop(capacity, "", true, 0, v..) body(j, _, go, n, v..), with i = first + j:
            go' = c' and i + 1 < limit -> (go', go', j + 1, v'.., s..)
    """
    prefix = f"{node.output[0]}::chunk::"
    (body,) = _subgraphs(node)

    def declared_as(name: str, fresh: str) -> onnx.ValueInfoProto:
        if name in initializers:  # an initial value the enclosing graph holds
            tensor = initializers[name]
            return helper.make_tensor_value_info(fresh, tensor.data_type, list(tensor.dims))
        declared = _declared(name, inferred)
        declared.name = fresh
        return declared

    scalar = helper.make_tensor_value_info
    int64, boolean = onnx.TensorProto.INT64, onnx.TensorProto.BOOL
    inputs, nodes, carried = [], [], []
    for k, name in enumerate(node.input[2:]):
        inputs.append(declared_as(name, f"{prefix}carried{k}"))
        carried.append(inputs[-1].name)
    for k, name in enumerate(outer):
        inputs.append(declared_as(name, f"{prefix}outer{k}"))
        nodes.append(helper.make_node("Identity", [inputs[-1].name], [name]))
    first, limit = f"{prefix}first", f"{prefix}limit"
    inputs += [scalar(first, int64, []), scalar(limit, int64, [])]

    def constant(name: str, value: np.ndarray) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value))

    def fresh(name: str) -> str:
        return f"{prefix}{name}"

    iteration, condition = body.input[0].name, body.input[1].name
    counting = onnx.GraphProto()
    counting.CopyFrom(body)
    del counting.input[:], counting.output[:], counting.node[:]
    counting.input.extend([
        scalar(fresh("j"), int64, []), scalar(fresh("unused"), boolean, []),
        scalar(fresh("going"), boolean, []), scalar(fresh("ran"), int64, []), *body.input[2:],
    ])  # fmt: skip
    given = body.output[0].name
    counting.node.extend([
        constant(fresh("one"), np.array(1, np.int64)),
        constant(fresh("scalar"), np.zeros(0, np.int64)),
        helper.make_node("Add", [fresh("j"), first], [iteration]),
        helper.make_node("Identity", [fresh("going")], [condition]),
        *body.node,
        helper.make_node("Add", [iteration, fresh("one")], [fresh("next")]),
        helper.make_node("Less", [fresh("next"), limit], [fresh("within")]),
        helper.make_node("And", [given, fresh("within")], [fresh("both")]),
        helper.make_node("Reshape", [fresh("both"), fresh("scalar")], [fresh("going_next")]),
        helper.make_node("Identity", [fresh("going_next")], [fresh("still")]),
        helper.make_node("Add", [fresh("j"), fresh("one")], [fresh("ran_next")]),
    ])  # fmt: skip
    counting.output.extend([
        scalar(fresh("going_next"), boolean, []), scalar(fresh("still"), boolean, []),
        scalar(fresh("ran_next"), int64, []), *body.output[1:],
    ])  # fmt: skip
    results = [name or fresh(f"unused{k}") for k, name in enumerate(node.output)]
    going, ran = fresh("going_out"), fresh("ran_out")
    nodes += [
        constant(fresh("capacity"), np.array(capacity, np.int64)),
        constant(fresh("start"), np.array(True)),
        constant(fresh("none"), np.array(0, np.int64)),
        helper.make_node(
            "Loop", [fresh("capacity"), "", fresh("start"), fresh("none"), *carried],
            [going, ran, *results], name=node.name, body=counting,
        ),
    ]  # fmt: skip
    constants = [initializers[name] for name in sorted(_free_names(body)) if name in initializers]
    outputs = []
    for k, name in enumerate(results):
        if k < len(carried):  # a carried value keeps its initial value's type and shape
            declared = onnx.ValueInfoProto()
            declared.CopyFrom(inputs[k])
            declared.name = name
        else:  # capacity rows of the shape the host's run gave
            dtype, row = rows[k - len(carried)]
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
            declared = helper.make_tensor_value_info(name, elem, [capacity, *row])
        outputs.append(declared)
    outputs += [scalar(ran, int64, []), scalar(going, boolean, [])]
    graph = helper.make_graph(nodes, f"{prefix}model", inputs, outputs, constants)
    chunked = _model_like(model, graph)
    helper.set_model_props(chunked, {PADDED_ROWS_KEY: going})
    return chunked


PADDED_ROWS_KEY = "strato.padded_loop"
"""A model whose metadata gives this key the name of a Loop's first output asks the
importer to compile that Loop, of known trip count and a body that may stop it, as a
`graph.scan` that `stops`, each scan output given as the trip count's rows, zeros past
the last iteration run: not ONNX's semantics, so only a model that counts the
iterations itself and keeps those rows asks for it (`_chunk_model`)."""


def padded_loop(model: onnx.ModelProto) -> str | None:
    """The first output of the Loop `model` asks to compile with padded rows
    (`PADDED_ROWS_KEY`), if any."""
    return next((p.value for p in model.metadata_props if p.key == PADDED_ROWS_KEY), None)


def _declared(
    name: str, inferred: Mapping[str, onnx.ValueInfoProto], shape: bool = True
) -> onnx.ValueInfoProto:
    """A part's input (typed, with what inference knows of its shape) or output (typed
    when inference knows the type)."""
    value = inferred.get(name)
    if value is None:
        if not shape:
            return helper.make_empty_tensor_value_info(name)
        raise ModelImportError(
            f"value '{name}' passes to a compiled part but its element type is unknown "
            "(ONNX shape inference gave none)"
        )
    declared = onnx.ValueInfoProto()
    declared.CopyFrom(value)
    if not shape:
        _tensor_of(declared.type).ClearField("shape")
    return declared


def _inferred_types(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Each value's type as ONNX shape inference gives it (the graph's own annotations
    where it gives none)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - inference is best effort; missing types are reported
        inferred = model.graph
    values = {}
    for value in (*model.graph.value_info, *inferred.value_info, *inferred.input, *inferred.output):
        if _tensor_of(value.type).elem_type:
            values[value.name] = value
    return values


def _dims(tensor: onnx.TypeProto.Tensor) -> list[int | None] | None:
    """A tensor type's sizes (None for a symbolic or unknown one), or None when it has
    no shape."""
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]


def _tensor_of(type_: onnx.TypeProto) -> onnx.TypeProto.Tensor:
    """The tensor type of a tensor, or of a sequence's elements (an empty one else)."""
    if type_.HasField("sequence_type"):
        type_ = type_.sequence_type.elem_type
    return type_.tensor_type if type_.HasField("tensor_type") else onnx.TypeProto.Tensor()


__all__ = ["STRUCTURE_ONLY", "StagedModel", "has_host_ops", "known_at_import", "staged_model"]
