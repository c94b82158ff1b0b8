"""Converters for ONNX recurrent operators: LSTM, GRU and RNN.

    LSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P)  ->  graph.lstm
    GRU(X, W, R, B, sequence_lens, initial_h)                 ->  the steps, unrolled
    RNN(X, W, R, B, sequence_lens, initial_h)                 ->  the steps, unrolled

GRU and RNN are unrolled over their (static) time steps into graph ops: one
`graph.dense` projects the inputs of every step at once, then each step is a
`graph.dense` of the state by the recurrent weights and the gate arithmetic
(sigmoid/tanh/relu, add, mul, sub); the states are concatenated into Y. So they need no
recurrence op of their own, and each step's element-wise gate math fuses into its
product.

`graph.lstm` is time-major (ONNX layout 0); a batch-major LSTM (layout 1) gets its X,
initial_h and initial_c transposed in and Y, Y_h and Y_c transposed out. A constant
sequence_lens that gives every sequence its full length is dropped. Only the default
activations (sigmoid, tanh, tanh) are supported, without clip and input_forget.
"""

from __future__ import annotations

import numpy as np

from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects import graph
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext

DEFAULT_ACTIVATIONS = ("sigmoid", "tanh", "tanh")

# ONNX LSTM inputs, by position.
X, W, R, B, SEQUENCE_LENS, INITIAL_H, INITIAL_C, P = range(8)

# layout 1 swaps the batch and time (or direction) axes.
SWAP_LEADING = (1, 0, 2)
Y_TO_BATCH_MAJOR = (2, 0, 1, 3)


def convert_lstm(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX LSTM (default activations) -> graph.lstm, with transposes for layout 1."""
    direction = ctx.attr("direction", "forward")
    if direction not in {d.value for d in graph.LstmDirection}:
        raise ctx.error(f"direction '{direction}' is not one of forward, reverse, bidirectional")
    num_directions = 2 if direction == graph.LstmDirection.BIDIRECTIONAL else 1
    _check_default_cell(ctx, num_directions)
    layout, x_shape, w_shape, r_shape = _layout_and_shapes(ctx)
    batch_major = layout == 1
    hidden = r_shape[2]
    if ctx.has_attr("hidden_size") and ctx.attr("hidden_size") != hidden:
        raise ctx.error(
            f"hidden_size={ctx.attr('hidden_size')} differs from the hidden size {hidden} "
            f"of R {list(r_shape)}"
        )
    steps = x_shape[1] if batch_major else x_shape[0]
    expected_w = (num_directions, graph.LSTM_GATES * hidden, x_shape[2])
    if w_shape != expected_w or r_shape[:2] != expected_w[:2]:
        raise ctx.error(
            f"W {list(w_shape)} and R {list(r_shape)} do not fit a {direction} LSTM of "
            f"hidden size {hidden} over inputs of size {x_shape[2]}"
        )

    x = _time_major(ctx, X, batch_major)
    optional = {
        "bias": ctx.operand(B) if ctx.has_input(B) else None,
        "sequence_lens": _sequence_lens(ctx, steps),
        "initial_h": _time_major(ctx, INITIAL_H, batch_major) if ctx.has_input(INITIAL_H) else None,
        "initial_c": _time_major(ctx, INITIAL_C, batch_major) if ctx.has_input(INITIAL_C) else None,
        "peepholes": ctx.operand(P) if ctx.has_input(P) else None,
    }
    try:
        lstm = graph.LstmOp(direction, x, ctx.operand(W), ctx.operand(R), **optional)
        lstm.verify()
    except VerifyException as error:  # a shape the op rejects is bad input
        reason = str(error).removeprefix("'graph.lstm' ")
        raise ctx.error(reason.splitlines()[0]) from None
    ctx.emit(lstm)
    results: list[ImportedValue] = list(lstm.results)
    if batch_major:
        perms = (Y_TO_BATCH_MAJOR, SWAP_LEADING, SWAP_LEADING)
        for n, perm in enumerate(perms):
            if _is_requested(ctx, n):
                results[n] = _transposed(ctx, lstm.results[n], perm)
    return results[: len(ctx.node.output)]


def _layout_and_shapes(
    ctx: NodeContext,
) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The checked `layout` attribute and the shapes of X, W and R (each of rank 3)."""
    layout = ctx.attr("layout", 0)
    if layout not in (0, 1):
        raise ctx.error(f"attribute layout={layout} is not supported (expected 0 or 1)")
    x_shape, w_shape, r_shape = ctx.shape(X), ctx.shape(W), ctx.shape(R)
    if len(x_shape) != 3 or len(w_shape) != 3 or len(r_shape) != 3:
        raise ctx.error(
            f"X, W and R must have rank 3, got shapes {list(x_shape)}, {list(w_shape)} "
            f"and {list(r_shape)}"
        )
    return layout, x_shape, w_shape, r_shape


def _is_requested(ctx: NodeContext, output: int) -> bool:
    return output < len(ctx.node.output) and ctx.node.output[output] != ""


def _check_default_cell(ctx: NodeContext, num_directions: int) -> None:
    """Only the default cell is supported: sigmoid/tanh/tanh, no clip, no input_forget."""
    activations = ctx.attr("activations")
    if activations is not None:
        names = [a.decode() if isinstance(a, bytes) else str(a) for a in activations]
        if tuple(n.lower() for n in names) != DEFAULT_ACTIVATIONS * num_directions:
            raise ctx.error(
                f"activations {names} are not supported (only the default Sigmoid, Tanh, Tanh)"
            )
    for name in ("activation_alpha", "activation_beta", "clip"):
        if ctx.has_attr(name):
            raise ctx.error(f"attribute {name} is not supported")
    if ctx.attr("input_forget", 0) != 0:
        raise ctx.error(
            "attribute input_forget=1 (coupled input and forget gates) is not supported"
        )


def _time_major(ctx: NodeContext, index: int, batch_major: bool) -> SSAValue:
    """Input `index` with its two leading axes swapped when the node is batch-major."""
    if not batch_major:
        return ctx.operand(index)
    constant = ctx.constant(index)
    if constant is not None:
        return ctx.materialize(np.transpose(constant, SWAP_LEADING), ctx.input_name(index))
    return _transposed(ctx, ctx.operand(index), SWAP_LEADING)


def _transposed(ctx: NodeContext, value: SSAValue, perm: tuple[int, ...]) -> SSAValue:
    return ctx.emit(graph.TransposeOp(value, perm)).results[0]


def _sequence_lens(ctx: NodeContext, steps: int) -> SSAValue | None:
    """The sequence_lens operand, or None when every sequence has the full length."""
    if not ctx.has_input(SEQUENCE_LENS):
        return None
    lengths = ctx.known(SEQUENCE_LENS)
    if lengths is None:
        return ctx.value(SEQUENCE_LENS)  # known at run time only: the op masks steps
    if lengths.dtype.kind not in "iu":
        raise ctx.error(f"sequence_lens must be an integer tensor, got {lengths.dtype}")
    if lengths.ndim != 1 or np.any(lengths < 0) or np.any(lengths > steps):
        raise ctx.error(
            f"sequence_lens {lengths.tolist()} must be one length in [0, {steps}] per batch item"
        )
    if np.all(lengths == steps):
        return None
    return ctx.emit(graph.ConstantOp.from_array(lengths.astype(np.int32))).results[0]


# -- GRU and RNN, unrolled -----------------------------------------------------------

_ACTIVATIONS = {
    "sigmoid": graph.SigmoidOp,
    "tanh": graph.TanhOp,
    "relu": graph.ReluOp,
}


class _Steps:
    """Graph ops on imported values (constants are materialized where an op needs one)."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx

    def ssa(self, value: ImportedValue) -> SSAValue:
        if isinstance(value, np.ndarray):
            return self.ctx.materialize(np.require(value, requirements="C"))
        return value

    def part(self, value: ImportedValue, axis: int, start: int, size: int) -> ImportedValue:
        """value[.., start:start + size, ..] along `axis`."""
        if isinstance(value, np.ndarray):
            picked = np.take(value, np.arange(start, start + size), axis=axis)
            return np.require(picked, requirements="C")
        shape = list(graph.static_shape(value))
        if start == 0 and size == shape[axis]:
            return value
        starts = [0] * len(shape)
        starts[axis] = start
        shape[axis] = size
        return self.emit(graph.SliceOp(value, starts, [1] * len(shape), shape))

    def row(self, value: ImportedValue, index: int) -> ImportedValue:
        """value[index], dropping the leading axis."""
        piece = self.part(value, 0, index, 1)
        return self.reshape(piece, _shape(piece)[1:])

    def reshape(self, value: ImportedValue, shape) -> ImportedValue:
        shape = tuple(int(d) for d in shape)
        if isinstance(value, np.ndarray):
            return value.reshape(shape)
        if graph.static_shape(value) == shape:
            return value
        return self.emit(graph.ReshapeOp(value, shape))

    def binary(self, op_class, lhs: ImportedValue, rhs: ImportedValue) -> ImportedValue:
        if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
            return np.asarray(op_class.compute(lhs, rhs), dtype=lhs.dtype)
        return self.emit(op_class(self.ssa(lhs), self.ssa(rhs)))

    def dense(
        self, x: ImportedValue, weight: ImportedValue, bias: ImportedValue | None
    ) -> SSAValue:
        """x @ weight^T + bias."""
        operands = [self.ssa(x), self.ssa(weight)]
        return self.emit(graph.DenseOp(*operands, None if bias is None else self.ssa(bias)))

    def activation(self, name: str, x: ImportedValue) -> SSAValue:
        return self.emit(_ACTIVATIONS[name](self.ssa(x)))

    def stack(self, values: list[ImportedValue], axis: int) -> ImportedValue:
        """The values, each given a new size-1 axis at `axis`, concatenated along it."""
        pieces = []
        for value in values:
            shape = list(_shape(value))
            shape.insert(axis, 1)
            pieces.append(self.ssa(self.reshape(value, shape)))
        if len(pieces) == 1:
            return pieces[0]
        return self.emit(graph.ConcatOp(pieces, axis))

    def emit(self, op) -> SSAValue:
        return self.ctx.emit(op).results[0]


def _shape(value: ImportedValue) -> tuple[int, ...]:
    return tuple(value.shape) if isinstance(value, np.ndarray) else graph.static_shape(value)


def _activations(ctx: NodeContext, defaults: tuple[str, ...], directions: int) -> list[list[str]]:
    """The activation names of each direction (lower case), checked."""
    given = ctx.attr("activations")
    names = (
        [a.decode() if isinstance(a, bytes) else str(a) for a in given]
        if given is not None
        else list(defaults) * directions
    )
    if len(names) != len(defaults) * directions:
        raise ctx.error(
            f"activations {names} must name {len(defaults)} functions for each of "
            f"{directions} directions"
        )
    for name in names:
        if name.lower() not in _ACTIVATIONS:
            raise ctx.error(
                f"activation {name} is not supported (Sigmoid, Tanh, Relu)"
            )
    for attribute in ("activation_alpha", "activation_beta", "clip"):
        if ctx.has_attr(attribute):
            raise ctx.error(f"attribute {attribute} is not supported")
    lowered = [n.lower() for n in names]
    k = len(defaults)
    return [lowered[d * k : (d + 1) * k] for d in range(directions)]


def _unrolled(ctx: NodeContext, gates: int, defaults: tuple[str, ...]) -> list[ImportedValue]:
    """The checks and the layout handling GRU and RNN share; the cell is `_gru_step`
    or `_rnn_step`."""
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(f"direction '{direction}' is not one of forward, reverse, bidirectional")
    directions = 2 if direction == "bidirectional" else 1
    activations = _activations(ctx, defaults, directions)
    layout, x_shape, w_shape, r_shape = _layout_and_shapes(ctx)
    hidden = r_shape[2]
    if ctx.has_attr("hidden_size") and ctx.attr("hidden_size") != hidden:
        raise ctx.error(f"hidden_size={ctx.attr('hidden_size')} differs from R's {hidden}")
    steps, batch = (x_shape[1], x_shape[0]) if layout == 1 else (x_shape[0], x_shape[1])
    expected_w = (directions, gates * hidden, x_shape[2])
    if w_shape != expected_w or r_shape != (directions, gates * hidden, hidden):
        raise ctx.error(
            f"W {list(w_shape)} and R {list(r_shape)} do not fit a {direction} {ctx.op_type} "
            f"of hidden size {hidden} over inputs of size {x_shape[2]}"
        )
    if ctx.has_input(B) and ctx.shape(B) != (directions, 2 * gates * hidden):
        raise ctx.error(
            f"B must have shape {[directions, 2 * gates * hidden]}, got {list(ctx.shape(B))}"
        )
    if ctx.has_input(SEQUENCE_LENS):
        lengths = ctx.known(SEQUENCE_LENS)
        if lengths is None or np.any(lengths != steps):
            raise ctx.error(
                "sequence_lens must be known at import time and give every sequence its "
                f"full length {steps}: shorter sequences are not supported"
            )
    if steps == 0:
        raise ctx.error("X has no time steps")
    ops = _Steps(ctx)
    x = ctx.value(X)
    if layout == 1:
        x = _swap_leading(ops, x)
    initial = ctx.value(INITIAL_H) if ctx.has_input(INITIAL_H) else None
    if initial is not None and layout == 1:
        initial = _swap_leading(ops, initial)
    dtype = x.dtype if isinstance(x, np.ndarray) else numpy_dtype(x.type)
    flat_x = ops.reshape(x, (steps * batch, x_shape[2]))
    outputs, finals = [], []
    for d in range(directions):
        weights = ops.row(ctx.value(W), d)
        recurrent = ops.row(ctx.value(R), d)
        biases = (
            ops.row(ctx.value(B), d)
            if ctx.has_input(B)
            else np.zeros(2 * gates * hidden, dtype)
        )
        input_bias = ops.part(biases, 0, 0, gates * hidden)
        recurrent_bias = ops.part(biases, 0, gates * hidden, gates * hidden)
        h = ops.row(initial, d) if initial is not None else np.zeros((batch, hidden), dtype)
        cell = _Cell(ops, ctx, hidden, recurrent, input_bias, recurrent_bias, activations[d])
        projected = ops.reshape(
            ops.dense(flat_x, weights, cell.input_bias), (steps, batch, gates * hidden)
        )
        order = range(steps - 1, -1, -1) if direction == "reverse" or d == 1 else range(steps)
        states: dict[int, ImportedValue] = {}
        for t in order:
            h = cell.step(ops.row(projected, t), h)
            states[t] = h
        outputs.append(ops.stack([states[t] for t in range(steps)], 0))
        finals.append(h)
    y = ops.stack(outputs, 1)  # [S, D, B, H]
    y_h = ops.stack(finals, 0)  # [D, B, H]
    if layout == 1:
        y = ops.emit(graph.TransposeOp(ops.ssa(y), Y_TO_BATCH_MAJOR))
        y_h = _swap_leading(ops, y_h)
    return [y, y_h][: len(ctx.node.output)]


def _swap_leading(ops: _Steps, value: ImportedValue) -> ImportedValue:
    if isinstance(value, np.ndarray):
        return np.array(np.transpose(value, SWAP_LEADING), order="C")
    return ops.emit(graph.TransposeOp(value, SWAP_LEADING))


class _Cell:
    """The weights of one direction and its step function."""

    def __init__(self, ops, ctx, hidden, recurrent, input_bias, recurrent_bias, activations):
        self.ops, self.hidden, self.activations = ops, hidden, activations
        self.recurrent = recurrent
        self.kind = ctx.op_type
        self.linear_before_reset = self.kind == "GRU" and ctx.flag_attr("linear_before_reset")
        if self.kind == "RNN":
            self.input_bias = ops.binary(graph.AddOp, input_bias, recurrent_bias)
            return
        # GRU: the z and r gates add both biases to the input projection; the candidate
        # adds Rbh inside the reset product when linear_before_reset is set
        zr = ops.binary(
            graph.AddOp,
            ops.part(input_bias, 0, 0, 2 * hidden),
            ops.part(recurrent_bias, 0, 0, 2 * hidden),
        )
        candidate_bias = ops.part(input_bias, 0, 2 * hidden, hidden)
        self.recurrent_candidate_bias = ops.part(recurrent_bias, 0, 2 * hidden, hidden)
        if not self.linear_before_reset:
            candidate_bias = ops.binary(graph.AddOp, candidate_bias, self.recurrent_candidate_bias)
        self.input_bias = _concat_vectors(ops, [zr, candidate_bias])
        self.recurrent_gates = ops.part(recurrent, 0, 0, 2 * hidden)
        self.recurrent_candidate = ops.part(recurrent, 0, 2 * hidden, hidden)

    def step(self, projected: ImportedValue, h: ImportedValue) -> ImportedValue:
        ops = self.ops
        if self.kind == "RNN":
            total = ops.binary(graph.AddOp, projected, ops.dense(h, self.recurrent, None))
            return ops.activation(self.activations[0], total)
        hidden = self.hidden
        f, g = self.activations
        gates = ops.binary(
            graph.AddOp,
            ops.part(projected, 1, 0, 2 * hidden),
            ops.dense(h, self.recurrent_gates, None),
        )
        z = ops.activation(f, ops.part(gates, 1, 0, hidden))
        r = ops.activation(f, ops.part(gates, 1, hidden, hidden))
        if self.linear_before_reset:
            recurrent = ops.dense(h, self.recurrent_candidate, self.recurrent_candidate_bias)
            recurrent = ops.binary(graph.MulOp, r, recurrent)
        else:
            recurrent = ops.dense(ops.binary(graph.MulOp, r, h), self.recurrent_candidate, None)
        candidate = ops.activation(
            g, ops.binary(graph.AddOp, ops.part(projected, 1, 2 * hidden, hidden), recurrent)
        )
        # (1 - z) * candidate + z * h
        kept = ops.binary(graph.MulOp, z, ops.binary(graph.SubOp, h, candidate))
        return ops.binary(graph.AddOp, candidate, kept)


def _concat_vectors(ops: _Steps, parts: list[ImportedValue]) -> ImportedValue:
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts)
    return ops.emit(graph.ConcatOp([ops.ssa(p) for p in parts], 0))


def convert_gru(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GRU (gates z, r, h; linear_before_reset) unrolled over its time steps."""
    return _unrolled(ctx, 3, ("Sigmoid", "Tanh"))


def convert_rnn(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX RNN (a simple recurrent layer) unrolled over its time steps."""
    return _unrolled(ctx, 1, ("Tanh",))
