"""Hypothesis strategies for random small loop-level programs, to test code generation.

`loop_programs()` draws a module in the loop-level ABI: a kernel `@kernel` and an entry
function `@main` that calls it on its inputs and an output buffer. The kernel runs a
loop nest over the output (each loop of a random kind, some split in two with index
arithmetic joining them), optionally reduces over one more loop into the output buffer
(sum or max, from an initial store), and computes each value with an expression tree:

- leaves: loads of an input, of a constant `memref.global` or of a local scratch
  buffer, at indices computed from the induction variables with `arith` index ops
  (muli, addi, floordivsi, remsi: always in bounds), and f32 constants;
- nodes: addf, subf, mulf, divf (by a denominator kept away from zero), maximumf,
  minimumf, negf, and select on a cmpf of two leaves.

Comparisons only see leaves, so rounding differences in intermediate values between
two correct implementations cannot flip a branch. The entry function either calls the
kernel on its output directly, or on a heap buffer that it then copies (memref.copy)
or post-processes with a second kernel into the output.

`loop_programs(run_time_bound=True)` draws programs whose kernel's outermost loop runs
to a run-time bound `%n` (an `index` argument of the kernel and of `@main`, after the
buffers; `LoopProgram.sizes` gives its value, at most the output's first dimension):
only the output's first `n` rows are written (`LoopProgram.rows`). `view_programs()`
draws kernels that view flat buffers with run-time sizes, strides and offsets
(`memref.reinterpret_cast`), what loop-linearize-views rewrites.

    @given(program=loop_programs())
    def test(program):
        module = program.module()
        inputs = program.random_inputs(seed=0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
try:
    from hypothesis import strategies as st
except ImportError as err:  # the test extra is not installed
    from strato.testing import HYPOTHESIS_MISSING

    raise ImportError(HYPOTHESIS_MISSING) from err

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects.loop import LoopKind

Shape = tuple[int, ...]

_BINARY_OPS = ("addf", "subf", "mulf", "maximumf", "minimumf", "divf")
_CMPF_PREDICATES = ("olt", "ole", "ogt", "oge", "oeq", "one", "ult", "une")


def _memref(shape: Shape, scope: str | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    inner = f"{dims}xf32" if shape else "f32"
    if scope is not None:
        return f"memref<{inner}, #loop.scope<{scope}>>"
    return f"memref<{inner}>"


def _f32(value: float) -> str:
    return repr(float(np.float32(value)))


@dataclass
class LoopProgram:
    """A loop-level module as text, with the shapes of its entry function's buffers."""

    text: str
    input_shapes: list[Shape]
    output_shape: Shape
    entry: str = "main"
    sizes: list[int] = field(default_factory=list)
    """The run-time sizes the entry takes after its buffers (the bound `%n`)."""

    @property
    def rows(self) -> int:
        """The rows of the output the program writes: all, or the first `n`."""
        return self.sizes[0] if self.sizes else self.output_shape[0]

    def module(self) -> ModuleOp:
        return Parser(make_context(), self.text).parse_module()

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal(shape).astype(np.float32) for shape in self.input_shapes
        ]


@dataclass
class _Body:
    """Text of one function body under construction, with fresh SSA names."""

    indent: int = 1
    lines: list[str] = field(default_factory=list)
    counter: int = 0
    open_loops: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def add(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def op(self, prefix: str, text: str) -> str:
        name = self.fresh(prefix)
        self.add(f"{name} = {text}")
        return name

    def index(self, value: int) -> str:
        return self.op("c", f"arith.constant {value} : index")

    def open_loop(self, header: str) -> None:
        self.add(header + " {")
        self.indent += 1
        self.open_loops += 1

    def close_loops(self) -> None:
        for _ in range(self.open_loops):
            self.indent -= 1
            self.add("}")
        self.open_loops = 0


@dataclass
class _Buffer:
    name: str
    shape: Shape
    type: str


@st.composite
def _index_into(draw: st.DrawFn, body: _Body, ivs: list[str], size: int) -> str:
    """An index in [0, size) computed from the induction variables."""
    if size == 1 or not ivs or draw(st.integers(0, 5)) == 0:
        return body.index(draw(st.integers(0, size - 1)))
    terms: list[str] = []
    for _ in range(draw(st.integers(1, 2))):
        iv = draw(st.sampled_from(ivs))
        scale = draw(st.integers(1, 3))
        terms.append(
            iv
            if scale == 1
            else body.op("m", f"arith.muli {iv}, {body.index(scale)} : index")
        )
    value = terms[0]
    for term in terms[1:]:
        value = body.op("s", f"arith.addi {value}, {term} : index")
    offset = draw(st.integers(0, 3))
    if offset:
        value = body.op("s", f"arith.addi {value}, {body.index(offset)} : index")
    if draw(st.booleans()):
        value = body.op("q", f"arith.floordivsi {value}, {body.index(2)} : index")
    return body.op("r", f"arith.remsi {value}, {body.index(size)} : index")


@st.composite
def _leaf(draw: st.DrawFn, body: _Body, ivs: list[str], sources: list[_Buffer]) -> str:
    if not sources or draw(st.integers(0, 4)) == 0:
        value = draw(st.integers(-8, 8)) / 4
        return body.op("k", f"arith.constant {_f32(value)} : f32")
    source = draw(st.sampled_from(sources))
    indices = [draw(_index_into(body, ivs, size)) for size in source.shape]
    return body.op(
        "v", f"memref.load {source.name}[{', '.join(indices)}] : {source.type}"
    )


@st.composite
def _expression(
    draw: st.DrawFn, body: _Body, ivs: list[str], sources: list[_Buffer], depth: int
) -> str:
    choice = draw(st.integers(0, 9)) if depth > 0 else 0
    if choice <= 2:
        return draw(_leaf(body, ivs, sources))
    if choice == 3:
        operand = draw(_expression(body, ivs, sources, depth - 1))
        return body.op("n", f"arith.negf {operand} : f32")
    if choice == 4:
        a = draw(_leaf(body, ivs, sources))
        b = draw(_leaf(body, ivs, sources))
        predicate = draw(st.sampled_from(_CMPF_PREDICATES))
        cond = body.op("p", f"arith.cmpf {predicate}, {a}, {b} : f32")
        if_true = draw(_expression(body, ivs, sources, depth - 1))
        if_false = draw(_expression(body, ivs, sources, depth - 1))
        return body.op("sel", f"arith.select {cond}, {if_true}, {if_false} : f32")
    op = draw(st.sampled_from(_BINARY_OPS))
    lhs = draw(_expression(body, ivs, sources, depth - 1))
    rhs = draw(_expression(body, ivs, sources, depth - 1))
    if op == "divf":
        # rhs * rhs + 1 >= 1 keeps the quotient finite
        square = body.op("sq", f"arith.mulf {rhs}, {rhs} : f32")
        one = body.op("k", "arith.constant 1.0 : f32")
        rhs = body.op("den", f"arith.addf {square}, {one} : f32")
    return body.op("e", f"arith.{op} {lhs}, {rhs} : f32")


_KINDS = [kind.value for kind in LoopKind]


@st.composite
def _open_loops(
    draw: st.DrawFn, body: _Body, shape: Shape, axis: str, first_bound: str | None = None
) -> list[str]:
    """Open a loop nest over `shape`, some dims split into an outer loop stepping by a
    tile and an inner loop over the tile; the index of each dim. With `first_bound` (an
    index value), the first dim's loop runs to it instead (never split)."""
    indices: list[str] = []
    for d, size in enumerate(shape):
        kind = draw(st.sampled_from(_KINDS))
        kind_text = "" if kind == "serial" else f" {kind}"
        if d == 0 and first_bound is not None:
            iv = body.fresh(f"{axis}{d}")
            body.open_loop(f'loop.for {iv} = 0 to {first_bound}{kind_text} axis "{axis}{d}"')
            indices.append(iv)
            continue
        tiles = [t for t in range(2, size) if size % t == 0]
        if tiles and draw(st.booleans()):
            tile = draw(st.sampled_from(tiles))
            outer = body.fresh(f"{axis}{d}o")
            body.open_loop(
                f'loop.for {outer} = 0 to {size} step {tile}{kind_text} axis "{axis}{d}o"'
            )
            inner = body.fresh(f"{axis}{d}i")
            body.open_loop(f'loop.for {inner} = 0 to {tile} axis "{axis}{d}i"')
            indices.append(body.op("ix", f"arith.addi {outer}, {inner} : index"))
            continue
        iv = body.fresh(f"{axis}{d}")
        body.open_loop(f'loop.for {iv} = 0 to {size}{kind_text} axis "{axis}{d}"')
        indices.append(iv)
    return indices


@st.composite
def _kernel(
    draw: st.DrawFn,
    inputs: list[_Buffer],
    global_buffer: _Buffer | None,
    out_shape: Shape,
    run_time_bound: bool = False,
) -> str:
    body = _Body()
    out = _Buffer("%out", out_shape, _memref(out_shape))
    sources = list(inputs)
    if global_buffer is not None:
        name = body.op(
            "g", f"memref.get_global @{global_buffer.name} : {global_buffer.type}"
        )
        sources.append(_Buffer(name, global_buffer.shape, global_buffer.type))
    indices = draw(_open_loops(body, out_shape, "i", "%n" if run_time_bound else None))
    out_ref = f"%out[{', '.join(indices)}] : {out.type}"

    scratch_type = _memref((2,), "local")
    scratch: str | None = None
    scalars: list[str] = []
    if draw(st.booleans()):
        # a kernel-private buffer allocated per iteration, written and read back
        scratch = body.op("t", f"memref.alloc() : {scratch_type}")
        value = draw(_expression(body, indices, sources, 2))
        slot = body.index(draw(st.integers(0, 1)))
        body.add(f"memref.store {value}, {scratch}[{slot}] : {scratch_type}")
        scalars.append(body.op("v", f"memref.load {scratch}[{slot}] : {scratch_type}"))

    def expression(ivs: list[str]) -> str:
        value = draw(_expression(body, ivs, sources, 3))
        for scalar in scalars:
            value = body.op("e", f"arith.addf {value}, {scalar} : f32")
        return value

    if draw(st.booleans()):
        combine = draw(st.sampled_from(["addf", "maximumf"]))
        init = draw(st.integers(-4, 4)) / 2
        init_value = body.op("k", f"arith.constant {_f32(init)} : f32")
        body.add(f"memref.store {init_value}, {out_ref}")
        extent = draw(st.integers(1, 4))
        kind = draw(st.sampled_from(_KINDS))
        k = body.fresh("k")
        body.add(
            f'loop.for {k} = 0 to {extent}{"" if kind == "serial" else " " + kind} axis "k" {{'
        )
        body.indent += 1
        term = expression([*indices, k])
        acc = body.op("acc", f"memref.load {out_ref}")
        total = body.op("red", f"arith.{combine} {acc}, {term} : f32")
        body.add(f"memref.store {total}, {out_ref}")
        body.indent -= 1
        body.add("}")
    else:
        body.add(f"memref.store {expression(indices)}, {out_ref}")
    if scratch is not None:
        body.add(f"memref.dealloc {scratch} : {scratch_type}")
    body.close_loops()
    body.add("func.return")

    args = [f"{b.name}: {b.type}" for b in inputs] + [
        f"%out: {out.type} {{loop.output}}"
    ] + (["%n: index"] if run_time_bound else [])
    header = f"func.func @kernel({', '.join(args)}) attributes {{loop.kernel}} {{"
    return "\n".join([header, *body.lines, "}"])


def _post_kernel(out_shape: Shape) -> str:
    """@post(%t, %out): out = max(2 * t - 1, -t), elementwise."""
    body = _Body()
    type_ = _memref(out_shape)
    ivs: list[str] = []
    for d, size in enumerate(out_shape):
        iv = body.fresh(f"p{d}")
        body.open_loop(f'loop.for {iv} = 0 to {size} axis "p{d}"')
        ivs.append(iv)
    ref = f"[{', '.join(ivs)}] : {type_}"
    v = body.op("v", f"memref.load %t{ref}")
    two = body.op("k", "arith.constant 2.0 : f32")
    one = body.op("k", "arith.constant 1.0 : f32")
    scaled = body.op("e", f"arith.mulf {v}, {two} : f32")
    shifted = body.op("e", f"arith.subf {scaled}, {one} : f32")
    neg = body.op("n", f"arith.negf {v} : f32")
    result = body.op("e", f"arith.maximumf {shifted}, {neg} : f32")
    body.add(f"memref.store {result}, %out{ref}")
    body.close_loops()
    body.add("func.return")
    header = f"func.func @post(%t: {type_}, %out: {type_} {{loop.output}}) attributes {{loop.kernel}} {{"
    return "\n".join([header, *body.lines, "}"])


def _shape(draw: st.DrawFn, max_rank: int = 2, max_dim: int = 4) -> Shape:
    rank = draw(st.integers(1, max_rank))
    return tuple(draw(st.integers(1, max_dim)) for _ in range(rank))


@st.composite
def loop_programs(draw: st.DrawFn, run_time_bound: bool = False) -> LoopProgram:
    """A random loop-level program (see the module docstring)."""
    out_shape = _shape(draw, max_dim=6)
    sizes = [draw(st.integers(0, out_shape[0]))] if run_time_bound else []
    input_shapes = [_shape(draw) for _ in range(draw(st.integers(1, 2)))]
    inputs = [
        _Buffer(f"%in{n}", shape, _memref(shape))
        for n, shape in enumerate(input_shapes)
    ]

    parts: list[str] = []
    global_buffer: _Buffer | None = None
    if draw(st.booleans()):
        size = draw(st.integers(1, 6))
        values = [draw(st.integers(-8, 8)) / 4 for _ in range(size)]
        type_ = _memref((size,))
        dense = ", ".join(_f32(v) for v in values)
        parts.append(
            f'"memref.global"() <{{sym_name = "weights", sym_visibility = "private", type = {type_}, '
            f"initial_value = dense<[{dense}]> : tensor<{size}xf32>, constant}}> : () -> ()"
        )
        global_buffer = _Buffer("weights", (size,), type_)

    parts.append(draw(_kernel(inputs, global_buffer, out_shape, run_time_bound)))

    out_type = _memref(out_shape)
    in_args = ", ".join(b.name for b in inputs)
    in_types = ", ".join(b.type for b in inputs)
    params = ", ".join(f"{b.name}: {b.type}" for b in inputs)
    bound, bound_arg, bound_type = ("", "", "")
    if run_time_bound:
        bound, bound_arg, bound_type = (", %n: index", ", %n", ", index")
    main = [f"func.func @main({params}, %out: {out_type} {{loop.output}}{bound}) {{"]
    route = draw(st.sampled_from(["direct", "copy", "post"]))
    if route == "direct":
        main.append(
            f"  func.call @kernel({in_args}, %out{bound_arg}) : ({in_types}, {out_type}{bound_type}) -> ()"
        )
    else:
        main.append(f"  %tmp = memref.alloc() : {out_type}")
        main.append(
            f"  func.call @kernel({in_args}, %tmp{bound_arg}) : ({in_types}, {out_type}{bound_type}) -> ()"
        )
        if route == "copy":
            main.append(f'  "memref.copy"(%tmp, %out) : ({out_type}, {out_type}) -> ()')
        else:
            main.append(
                f"  func.call @post(%tmp, %out) : ({out_type}, {out_type}) -> ()"
            )
            parts.append(_post_kernel(out_shape))
        main.append(f"  memref.dealloc %tmp : {out_type}")
    main += ["  func.return", "}"]
    parts.append("\n".join(main))
    return LoopProgram("\n\n".join(parts) + "\n", input_shapes, out_shape, sizes=sizes)


@dataclass
class ViewProgram:
    """A kernel that views a flat input and a flat output with run-time sizes
    (`memref.reinterpret_cast`) and computes the output's elements from the input's:
    `sizes` are the view's dimensions, passed after the two buffers as `index` values
    (each dynamic one, then the offset when it is dynamic); the input holds `offset`
    elements before the view."""

    text: str
    sizes: tuple[int, ...]
    offset: int
    arguments: list[int]
    entry: str = "view"

    def module(self) -> ModuleOp:
        return Parser(make_context(), self.text).parse_module()

    def random_input(self, seed: int) -> np.ndarray:
        count = self.offset + int(np.prod(self.sizes))
        return np.random.default_rng(seed).standard_normal(count).astype(np.float32)

    @property
    def output_size(self) -> int:
        return int(np.prod(self.sizes))


@st.composite
def view_programs(draw: st.DrawFn) -> ViewProgram:
    """A random `ViewProgram`: a view of rank 1 to 3 whose dimensions are each static
    or run-time values, row-major strides (products of the later sizes, computed in the
    kernel when one of those is a run-time value), a static or run-time offset into the
    input, loops of random kinds over the view (to a run-time bound where the dimension
    is one), and y[i..] = f(x[i..], x[mirror of i..]) with index arithmetic on the sizes."""
    rank = draw(st.integers(1, 3))
    sizes = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dynamic = [draw(st.booleans()) for _ in range(rank)]
    offset = draw(st.integers(0, 3))
    dynamic_offset = draw(st.booleans())
    body = _Body()
    params = ["%x: memref<?xf32>", "%y: memref<?xf32> {loop.output}"]
    arguments: list[int] = []
    size_values: list[str] = []
    for d, (size, is_dynamic) in enumerate(zip(sizes, dynamic, strict=True)):
        if is_dynamic:
            params.append(f"%s{d}: index")
            arguments.append(size)
            size_values.append(f"%s{d}")
        else:
            size_values.append(body.index(size))
    offset_text = str(offset)
    if dynamic_offset:
        params.append("%off: index")
        arguments.append(offset)
        offset_text = "%off"
    # row-major strides: static where every later size is, else computed
    strides: list[str] = []
    static_strides: list[int | None] = []
    for d in range(rank):
        later = range(d + 1, rank)
        if not any(dynamic[k] for k in later):
            static_strides.append(int(np.prod([sizes[k] for k in later])))
            strides.append(str(static_strides[-1]))
            continue
        static_strides.append(None)
        value = body.index(1)
        for k in later:
            value = body.op("st", f"arith.muli {value}, {size_values[k]} : index")
        strides.append(value)
    shape_text = "x".join("?" if dynamic[d] else str(sizes[d]) for d in range(rank))
    layout = ", ".join("?" if s is None else str(s) for s in static_strides)
    sizes_text = ", ".join(size_values[d] if dynamic[d] else str(sizes[d]) for d in range(rank))
    strides_text = ", ".join(strides)

    def view(buffer: str, at: str, offset_layout: str) -> tuple[str, str]:
        type_ = f"memref<{shape_text}xf32, strided<[{layout}]{offset_layout}>>"
        name = body.op(
            "v",
            f"memref.reinterpret_cast {buffer} to offset: [{at}], sizes: [{sizes_text}], "
            f"strides: [{strides_text}] : memref<?xf32> to {type_}",
        )
        return name, type_

    x_view, x_type = view("%x", offset_text, ", offset: ?" if dynamic_offset else f", offset: {offset}")
    y_view, y_type = view("%y", "0", "")
    ivs = []
    for d in range(rank):
        kind = draw(st.sampled_from(_KINDS))
        kind_text = "" if kind == "serial" else f" {kind}"
        bound = size_values[d] if dynamic[d] else str(sizes[d])
        iv = body.fresh(f"i{d}")
        body.open_loop(f'loop.for {iv} = 0 to {bound}{kind_text} axis "i{d}"')
        ivs.append(iv)
    # the mirror of the last index: size - 1 - i, from the size value
    one = body.index(1)
    last = body.op("m", f"arith.subi {size_values[-1]}, {one} : index")
    mirror = body.op("m", f"arith.subi {last}, {ivs[-1]} : index")
    a = body.op("a", f"memref.load {x_view}[{', '.join(ivs)}] : {x_type}")
    b = body.op("b", f"memref.load {x_view}[{', '.join([*ivs[:-1], mirror])}] : {x_type}")
    op = draw(st.sampled_from(["addf", "mulf", "subf", "maximumf"]))
    value = body.op("e", f"arith.{op} {a}, {b} : f32")
    body.add(f"memref.store {value}, {y_view}[{', '.join(ivs)}] : {y_type}")
    body.close_loops()
    body.add("func.return")
    header = f"func.func @view({', '.join(params)}) attributes {{loop.kernel}} {{"
    text = "\n".join([header, *body.lines, "}"]) + "\n"
    return ViewProgram(text, sizes, offset, arguments)
