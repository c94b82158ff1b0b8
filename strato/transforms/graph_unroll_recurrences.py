"""graph-unroll-recurrences: LSTM, GRU and RNN layers as their time steps, in graph ops.

A recurrent op is opaque to the graph passes: its strategy lowers it to one kernel that
unrolls every time step into stages of its own, so a 35-step, 650-wide LSTM is a kernel
of some 70 stages whose loops are compiled as one (and whose compile time grows with the
sequence). This pass writes the same computation with the graph's own ops instead:

    xw = dense(x, W_d, biases)               every step's input projection, one GEMM
    xw_0 .. xw_{S-1} = split(xw)             one piece per step
    per step, in the direction's time order:
        g = xw_t + dense(h, R_d)             the gates
        i, o, f, c~ = split(g)  ...          the cell, in element-wise ops
    y = concat(h of every step), y_h and y_c the last states

Every step is then the same small kernels (the recurrent GEMV with the cell fused into
it, after graph-fuse-ops), which loop-dedup-kernels compiles once however many steps
there are, and the input projection is a plain dense layer with its default schedule.

The step's arithmetic is the op's reference semantics (`LstmOp`, `GruOp`, `RnnOp`),
an absent initial state is a zero constant (the first step's recurrent product folds
away), and the per-direction slices of W, R, the biases and the peepholes are slices of
those operands, which fold when they are constants. An op with `sequence_lens` is left
as it is (its strategy masks finished sequences) unless the lengths are a constant equal
to the sequence length for the whole batch.

Requires: functions of graph ops. Leaves illegal: nothing.

Before:
    %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<2x1x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>) -> (tensor<2x1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>)
After:
    %x2 = graph.reshape %x : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
    %xw = graph.dense %x2, %w0 : ...                     (then split, a step's ops per step)
    %y = graph.concat %h0, %h1 axis 0 : ...
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from strato.dialects import graph
from strato.dialects.graph.base import static_shape
from strato.dialects.graph.rnn import CellFunction, LstmDirection, RnnActivation, runs_backward
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like


class _Emitter:
    """Builds graph ops in front of `anchor`, in order."""

    def __init__(self, anchor: Operation, element: TensorType):
        self.anchor = anchor
        self.like = element
        self.dtype = numpy_dtype(element.element_type)

    def add(self, op: Operation) -> SSAValue:
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        return op.results[0]

    def constant(self, array: np.ndarray) -> SSAValue:
        array = np.asarray(array, self.dtype)
        type_ = tensor_type_like(self.like, list(array.shape))
        value = DenseIntOrFPElementsAttr.from_list(type_, array.ravel().tolist())
        return self.add(graph.ConstantOp(value))

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(static_shape(value)) == tuple(shape):
            return value
        return self.add(graph.ReshapeOp(value, shape))

    def piece(self, value: SSAValue, axis: int, start: int, size: int) -> SSAValue:
        """value[.., start:start + size, ..] along `axis`."""
        shape = list(static_shape(value))
        if start == 0 and size == shape[axis]:
            return value
        starts = [0] * len(shape)
        starts[axis] = start
        shape[axis] = size
        return self.add(graph.SliceOp(value, starts, [1] * len(shape), shape))

    def split(self, value: SSAValue, axis: int, sizes: Sequence[int]) -> list[SSAValue]:
        if len(sizes) == 1:
            return [value]
        return list(self.add_op(graph.SplitOp(value, axis, sizes)).results)

    def add_op(self, op: Operation) -> Operation:
        self.add(op)
        return op

    def direction_slice(self, value: SSAValue, d: int) -> SSAValue:
        """value[d], for an operand stacked by direction."""
        shape = static_shape(value)
        return self.reshape(self.piece(value, 0, d, 1), shape[1:])

    def plus(self, a: SSAValue | None, b: SSAValue | None) -> SSAValue | None:
        if a is None or b is None:
            return a if b is None else b
        return self.add(graph.AddOp(a, b))

    def times(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(graph.MulOp(a, b))

    def activation(self, function: CellFunction, x: SSAValue, clip: float | None = None) -> SSAValue:
        if clip is not None:
            x = self.add(graph.ClipOp(x, -clip, clip))
        a, b = function.alpha, function.beta
        match function.kind:
            case RnnActivation.SIGMOID:
                return self.add(graph.SigmoidOp(x))
            case RnnActivation.TANH:
                return self.add(graph.TanhOp(x))
            case RnnActivation.RELU:
                return self.add(graph.ReluOp(x))
            case RnnActivation.AFFINE:
                return self.add(graph.AddOp(self.times(x, self.constant(a)), self.constant(b)))
            case RnnActivation.LEAKY_RELU:
                return self.add(graph.LeakyReluOp(x, a))
            case RnnActivation.THRESHOLDED_RELU:
                return self.add(graph.ThresholdedReluOp(x, alpha=a))
            case RnnActivation.SCALED_TANH:
                inner = self.add(graph.TanhOp(self.times(x, self.constant(b))))
                return self.times(inner, self.constant(a))
            case RnnActivation.HARD_SIGMOID:
                return self.add(graph.HardSigmoidOp(x, alpha=a, beta=b))
            case RnnActivation.ELU:
                return self.add(graph.EluOp(x, alpha=a))
            case RnnActivation.SOFTSIGN:
                return self.add(graph.SoftsignOp(x))
            case RnnActivation.SOFTPLUS:
                return self.add(graph.SoftplusOp(x))
        raise AssertionError(f"unknown activation {function.kind}")


@dataclass
class _Direction:
    """What every step of one direction reads: its input projection split by time, its
    recurrent weights (and bias), and its initial state."""

    steps: list[SSAValue]
    """xw of each time step t, [B, gates * H]."""
    recurrent: SSAValue
    recurrent_bias: SSAValue | None
    h: SSAValue
    backward: bool


def _lengths_are_full(op: Operation, steps: int) -> bool:
    """Whether the op has no sequence_lens, or constant ones that all equal `steps`."""
    lens = op.sequence_lens  # type: ignore[attr-defined]
    if lens is None:
        return True
    owner = lens.owner
    if not isinstance(owner, graph.ConstantOp):
        return False
    values = owner.value.get_values()
    return all(int(v) == steps for v in values)


def _direction_inputs(
    e: _Emitter,
    op: Operation,
    d: int,
    input_bias: Callable[[SSAValue], SSAValue | None],
    recurrent_bias: Callable[[SSAValue], SSAValue | None],
) -> _Direction:
    steps, batch, input_size = static_shape(op.x)  # type: ignore[attr-defined]
    gates_h = static_shape(op.w)[1]  # type: ignore[attr-defined]
    hidden = static_shape(op.r)[2]  # type: ignore[attr-defined]
    w = e.direction_slice(op.w, d)  # type: ignore[attr-defined]
    bias = op.bias  # type: ignore[attr-defined]
    bias_d = None if bias is None else e.direction_slice(bias, d)
    x2 = e.reshape(op.x, [steps * batch, input_size])  # type: ignore[attr-defined]
    projected = e.add(graph.DenseOp(x2, w, None if bias_d is None else input_bias(bias_d)))
    projected = e.reshape(projected, [steps, gates_h * batch])
    pieces = e.split(projected, 0, [1] * steps)
    initial = op.initial_h  # type: ignore[attr-defined]
    h = (
        e.constant(np.zeros((batch, hidden)))
        if initial is None
        else e.direction_slice(initial, d)
    )
    return _Direction(
        [e.reshape(p, [batch, gates_h]) for p in pieces],
        e.direction_slice(op.r, d),  # type: ignore[attr-defined]
        None if bias_d is None else recurrent_bias(bias_d),
        h,
        runs_backward(LstmDirection(op.direction.data), d),  # type: ignore[attr-defined]
    )


def _outputs(
    e: _Emitter, per_direction: list[list[SSAValue | None]], shape: tuple[int, int]
) -> SSAValue:
    """y [S, D, B, H] from the h of each (direction, time)."""
    batch, hidden = shape
    directions = len(per_direction)
    rows = []
    for t in range(len(per_direction[0])):
        parts = [e.reshape(per_direction[d][t], [1, 1, batch, hidden]) for d in range(directions)]  # type: ignore[arg-type]
        rows.append(parts[0] if directions == 1 else e.add(graph.ConcatOp(parts, 1)))
    return rows[0] if len(rows) == 1 else e.add(graph.ConcatOp(rows, 0))


def _stack(e: _Emitter, states: list[SSAValue], batch: int, hidden: int) -> SSAValue:
    parts = [e.reshape(s, [1, batch, hidden]) for s in states]
    return parts[0] if len(parts) == 1 else e.add(graph.ConcatOp(parts, 0))


def _unroll_lstm(op: graph.LstmOp) -> list[SSAValue]:
    directions, steps, batch, _, hidden = op.sizes()
    e = _Emitter(op, op.x.type)  # type: ignore[arg-type]
    gates = graph.LSTM_GATES * hidden

    def both_biases(b: SSAValue) -> SSAValue:
        return e.add(graph.AddOp(e.piece(b, 0, 0, gates), e.piece(b, 0, gates, gates)))

    ys, last_h, last_c = [], [], []
    for d in range(directions):
        inputs = _direction_inputs(e, op, d, both_biases, lambda b: None)
        h = inputs.h
        c = (
            e.constant(np.zeros((batch, hidden)))
            if op.initial_c is None
            else e.direction_slice(op.initial_c, d)
        )
        peep = None
        if op.peepholes is not None:
            p = e.direction_slice(op.peepholes, d)
            peep = [e.piece(p, 0, k * hidden, hidden) for k in range(3)]  # i, o, f
        y: list[SSAValue | None] = [None] * steps
        order = range(steps - 1, -1, -1) if inputs.backward else range(steps)
        for t in order:
            g = e.plus(inputs.steps[t], e.add(graph.DenseOp(h, inputs.recurrent)))
            pre_i, pre_o, pre_f, pre_c = e.split(g, 1, [hidden] * graph.LSTM_GATES)  # type: ignore[arg-type]
            if peep is not None:
                pre_i = e.plus(pre_i, e.times(peep[0], c))
                pre_f = e.plus(pre_f, e.times(peep[2], c))
            i = e.add(graph.SigmoidOp(pre_i))  # type: ignore[arg-type]
            f = e.add(graph.SigmoidOp(pre_f))  # type: ignore[arg-type]
            c = e.add(graph.AddOp(e.times(f, c), e.times(i, e.add(graph.TanhOp(pre_c)))))
            if peep is not None:
                pre_o = e.plus(pre_o, e.times(peep[1], c))
            o = e.add(graph.SigmoidOp(pre_o))  # type: ignore[arg-type]
            h = e.times(o, e.add(graph.TanhOp(c)))
            y[t] = h
        ys.append(y)
        last_h.append(h)
        last_c.append(c)
    return [
        _outputs(e, ys, (batch, hidden)),
        _stack(e, last_h, batch, hidden),
        _stack(e, last_c, batch, hidden),
    ]


def _unroll_cell(op: graph.GruOp | graph.RnnOp) -> list[SSAValue]:
    directions, steps, batch, _, hidden = op.sizes()
    e = _Emitter(op, op.x.type)  # type: ignore[arg-type]
    gru = isinstance(op, graph.GruOp)
    gates = (graph.GRU_GATES if gru else 1) * hidden
    after_product = gru and op.resets_after_product  # type: ignore[union-attr]
    clip = op.cell_clip

    def input_bias(b: SSAValue) -> SSAValue:
        wb, rb = e.piece(b, 0, 0, gates), e.piece(b, 0, gates, gates)
        if after_product:  # Rb goes into the recurrent product, inside the reset
            return wb
        return e.add(graph.AddOp(wb, rb))

    def recurrent_bias(b: SSAValue) -> SSAValue | None:
        return e.piece(b, 0, gates, gates) if after_product else None

    ys, last = [], []
    for d, functions in enumerate(op.cell_functions()):
        inputs = _direction_inputs(e, op, d, input_bias, recurrent_bias)
        h = inputs.h
        r = inputs.recurrent
        if gru and not after_product:
            r_zr, r_h = e.piece(r, 0, 0, 2 * hidden), e.piece(r, 0, 2 * hidden, hidden)
        y: list[SSAValue | None] = [None] * steps
        order = range(steps - 1, -1, -1) if inputs.backward else range(steps)
        for t in order:
            xw = inputs.steps[t]
            if not gru:
                pre = e.plus(xw, e.add(graph.DenseOp(h, r)))
                h = e.activation(functions[0], pre, clip)  # type: ignore[arg-type]
                y[t] = h
                continue
            f, g = functions
            x_zr, x_h = e.piece(xw, 1, 0, 2 * hidden), e.piece(xw, 1, 2 * hidden, hidden)
            if after_product:
                product = e.add(graph.DenseOp(h, r, inputs.recurrent_bias))
                p_zr, p_h = e.piece(product, 1, 0, 2 * hidden), e.piece(product, 1, 2 * hidden, hidden)
            else:
                p_zr = e.add(graph.DenseOp(h, r_zr))
            zr = e.activation(f, e.plus(x_zr, p_zr), clip)  # type: ignore[arg-type]
            z, reset = e.split(zr, 1, [hidden, hidden])
            if after_product:
                candidate = e.plus(x_h, e.times(reset, p_h))
            else:
                candidate = e.plus(x_h, e.add(graph.DenseOp(e.times(reset, h), r_h)))
            n = e.activation(g, candidate, clip)  # type: ignore[arg-type]
            # h' = (1 - z) . n + z . h = n + z . (h - n)
            h = e.add(graph.AddOp(n, e.times(z, e.add(graph.SubOp(h, n)))))
            y[t] = h
        ys.append(y)
        last.append(h)
    return [_outputs(e, ys, (batch, hidden)), _stack(e, last, batch, hidden)]


def unroll_recurrence(op: Operation) -> bool:
    """Replace one recurrent op by its time steps (see the module docstring); False when
    it is left as it is."""
    if not isinstance(op, graph.LstmOp | graph.GruOp | graph.RnnOp):
        return False
    _, steps, _, _, _ = op.sizes()
    if steps == 0 or not _lengths_are_full(op, steps):
        return False
    values = _unroll_lstm(op) if isinstance(op, graph.LstmOp) else _unroll_cell(op)
    for result, value in zip(op.results, values, strict=True):
        result.replace_all_uses_with(value)
    op.detach()
    op.erase()
    return True


@dataclass(frozen=True)
class GraphUnrollRecurrencesPass(ModulePass):
    """Write LSTM, GRU and RNN layers as their time steps in graph ops (see the module
    docstring), so each step's kernels compile once for every step."""

    name = "graph-unroll-recurrences"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            for inner in list(function.walk()):
                unroll_recurrence(inner)


__all__ = ["GraphUnrollRecurrencesPass", "unroll_recurrence"]
