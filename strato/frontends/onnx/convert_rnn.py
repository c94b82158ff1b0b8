"""Converters for ONNX recurrent operators: LSTM, GRU and RNN.

    LSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P)  ->  graph.lstm
    GRU(X, W, R, B, sequence_lens, initial_h)                 ->  graph.gru
    RNN(X, W, R, B, sequence_lens, initial_h)                 ->  graph.rnn

The graph ops are time-major (ONNX layout 0); a batch-major layer (layout 1) gets its X,
initial_h (and initial_c) transposed in and Y, Y_h (and Y_c) transposed out. A constant
sequence_lens that gives every sequence its full length is dropped; one known only at
run time stays an operand. An LSTM takes only the default activations (sigmoid, tanh,
tanh), without clip and input_forget; GRU and RNN take any of ONNX's activations with
their alpha and beta, clip and (GRU) linear_before_reset.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects import graph
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


# -- GRU and RNN ----------------------------------------------------------------------

GRU_DEFAULTS = ("Sigmoid", "Tanh")
RNN_DEFAULTS = ("Tanh",)


def convert_gru(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GRU -> graph.gru (activations, clip, linear_before_reset), with transposes
    for layout 1."""
    return _convert_cell(ctx, graph.GruOp, GRU_DEFAULTS)


def convert_rnn(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX RNN -> graph.rnn (activations, clip), with transposes for layout 1."""
    return _convert_cell(ctx, graph.RnnOp, RNN_DEFAULTS)


def _convert_cell(
    ctx: NodeContext, op_class: type[graph.RecurrenceOp], defaults: tuple[str, ...]
) -> list[ImportedValue]:
    direction = ctx.attr("direction", "forward")
    if direction not in {d.value for d in graph.LstmDirection}:
        raise ctx.error(f"direction '{direction}' is not one of forward, reverse, bidirectional")
    num_directions = 2 if direction == graph.LstmDirection.BIDIRECTIONAL else 1
    functions = _cell_functions(ctx, defaults, num_directions)
    clip = ctx.attr("clip")
    if clip is not None and not clip > 0:
        raise ctx.error(f"clip={clip} must be positive")
    layout, x_shape, w_shape, r_shape = _layout_and_shapes(ctx)
    batch_major = layout == 1
    hidden = r_shape[2]
    if ctx.has_attr("hidden_size") and ctx.attr("hidden_size") != hidden:
        raise ctx.error(
            f"hidden_size={ctx.attr('hidden_size')} differs from the hidden size {hidden} "
            f"of R {list(r_shape)}"
        )
    steps = x_shape[1] if batch_major else x_shape[0]
    if steps == 0:
        raise ctx.error("X has no time steps")
    expected_w = (num_directions, op_class.GATES * hidden, x_shape[2])
    if w_shape != expected_w or r_shape[:2] != expected_w[:2]:
        raise ctx.error(
            f"W {list(w_shape)} and R {list(r_shape)} do not fit a {direction} {ctx.op_type} "
            f"of hidden size {hidden} over inputs of size {x_shape[2]}"
        )
    options: dict = {"activations": functions, "clip": None if clip is None else float(clip)}
    if op_class is graph.GruOp:
        options["linear_before_reset"] = bool(ctx.flag_attr("linear_before_reset"))
    try:
        op = op_class(
            direction,
            _time_major(ctx, X, batch_major),
            ctx.operand(W),
            ctx.operand(R),
            ctx.operand(B) if ctx.has_input(B) else None,
            _sequence_lens(ctx, steps),
            _time_major(ctx, INITIAL_H, batch_major) if ctx.has_input(INITIAL_H) else None,
            **options,
        )
        op.verify()
    except VerifyException as error:  # a shape the op rejects is bad input
        reason = str(error).removeprefix(f"'{op_class.name}' ")
        raise ctx.error(reason.splitlines()[0]) from None
    ctx.emit(op)
    results: list[ImportedValue] = list(op.results)
    if batch_major:
        for n, perm in enumerate((Y_TO_BATCH_MAJOR, SWAP_LEADING)):
            if _is_requested(ctx, n):
                results[n] = _transposed(ctx, op.results[n], perm)
    return results[: len(ctx.node.output)]


def _cell_functions(
    ctx: NodeContext, defaults: tuple[str, ...], num_directions: int
) -> list[graph.CellFunction]:
    """The activations of every direction with their parameters. activation_alpha and
    activation_beta are consumed in order by the activations that take the parameter,
    as onnxruntime reads them; an activation left without one takes the default of the
    ONNX operator of the same name."""
    given = ctx.attr("activations")
    names = (
        [a.decode() if isinstance(a, bytes) else str(a) for a in given]
        if given is not None
        else list(defaults) * num_directions
    )
    if len(names) != len(defaults) * num_directions:
        raise ctx.error(
            f"activations {names} must name {len(defaults)} functions for each of "
            f"{num_directions} directions"
        )
    alphas = list(ctx.attr("activation_alpha") or [])
    betas = list(ctx.attr("activation_beta") or [])
    functions = []
    for name in names:
        kind = graph.RnnActivation.from_onnx(name)
        if kind is None:
            raise ctx.error(
                f"activation {name} is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus"
            )
        function = graph.CellFunction.of(kind)
        alpha_default, beta_default = kind.parameters
        if alpha_default is not None and alphas:
            function = replace(function, alpha=float(alphas.pop(0)))
        if beta_default is not None and betas:
            function = replace(function, beta=float(betas.pop(0)))
        functions.append(function)
    if alphas or betas:
        raise ctx.error(
            f"activation_alpha/activation_beta have {len(alphas)}/{len(betas)} values more "
            f"than the activations {names} take"
        )
    return functions
