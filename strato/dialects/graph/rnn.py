"""Recurrent operators: LSTM, GRU and the simple RNN."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    FloatAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import AnyTensor, FloatTensor, GraphOp, PatternKind, static_shape
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like

T = TypeVar("T")

LSTM_GATES = 4
"""W, R and the biases stack the input, output, forget and cell gates, in that order."""

OPTIONAL_OPERANDS = ("bias", "sequence_lens", "initial_h", "initial_c", "peepholes")
"""The optional operands of graph.lstm, in operand order (also their syntax keywords)."""


class LstmDirection(StrEnum):
    """Which way an LSTM runs over time: forward, reverse, or both (two directions)."""

    FORWARD = "forward"
    REVERSE = "reverse"
    BIDIRECTIONAL = "bidirectional"


def runs_backward(direction: LstmDirection, d: int) -> bool:
    """Whether direction `d` (0 or 1) of an LSTM visits time steps from last to first."""
    return direction == LstmDirection.REVERSE or (
        direction == LstmDirection.BIDIRECTIONAL and d == 1
    )


@irdl_op_definition
class LstmOp(GraphOp):
    """A long short-term memory layer with ONNX's LSTM semantics (activations sigmoid,
    tanh, tanh; no clip; no coupled input and forget gates), time-major.

    Operands, with D directions (2 when bidirectional), S steps, batch B, input size I
    and hidden size H: x [S, B, I]; w [D, 4H, I] and r [D, 4H, H], the input and
    recurrent weights of the gates i, o, f, c stacked in that order; then, optional:
    `bias` [D, 8H] (the input biases Wb then the recurrent biases Rb), `sequence_lens`
    [B] (an integer tensor: the length of each sequence of the batch, every one S when
    absent), `initial_h` and `initial_c` [D, B, H] (zeros when absent) and `peepholes`
    [D, 3H] (the peephole weights of i, o, f; zeros when absent).

    Each direction runs over its steps t (0..S-1 forward, S-1..0 backward) with
        i = sigmoid(x_t Wi^T + h Ri^T + Wbi + Rbi + Pi . c)
        f = sigmoid(x_t Wf^T + h Rf^T + Wbf + Rbf + Pf . c)
        g = tanh(x_t Wc^T + h Rc^T + Wbc + Rbc)
        c' = f . c + i . g
        o = sigmoid(x_t Wo^T + h Ro^T + Wbo + Rbo + Po . c')
        h' = o . tanh(c')
    Steps at or past a sequence's length leave its state as it is and give zeros in y;
    an empty sequence (length 0) ends in zero states, as in onnxruntime.
    The results are y [S, D, B, H] (every step's h), y_h and y_c [D, B, H] (the final
    states).

        %y, %y_h, %y_c = graph.lstm forward %x, %w, %r bias %b : (tensor<35x1x650xf32>, tensor<1x2600x650xf32>, tensor<1x2600x650xf32>, tensor<1x5200xf32>) -> (tensor<35x1x1x650xf32>, tensor<1x1x650xf32>, tensor<1x1x650xf32>)

    The time steps form a recurrence, so the op is opaque: it is never fused.
    """

    name = "graph.lstm"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE
    # sequence_lens is an integer tensor; element types are checked in verify_
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    direction = prop_def(StringAttr)
    x = operand_def(FloatTensor)
    w = operand_def(FloatTensor)
    r = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    sequence_lens = opt_operand_def(AnyTensor)
    initial_h = opt_operand_def(FloatTensor)
    initial_c = opt_operand_def(FloatTensor)
    peepholes = opt_operand_def(FloatTensor)
    y = result_def(FloatTensor)
    y_h = result_def(FloatTensor)
    y_c = result_def(FloatTensor)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(NoMemoryEffect())

    def __init__(
        self,
        direction: LstmDirection | str,
        x: SSAValue | Operation,
        w: SSAValue | Operation,
        r: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        sequence_lens: SSAValue | Operation | None = None,
        initial_h: SSAValue | Operation | None = None,
        initial_c: SSAValue | Operation | None = None,
        peepholes: SSAValue | Operation | None = None,
    ):
        x, w, r = SSAValue.get(x), SSAValue.get(w), SSAValue.get(r)
        steps, batch, _ = static_shape(x)
        directions, hidden = static_shape(r)[0], static_shape(r)[2]
        state = tensor_type_like(x.type, [directions, batch, hidden])
        optional = (bias, sequence_lens, initial_h, initial_c, peepholes)
        super().__init__(
            operands=[x, w, r, *([] if v is None else [v] for v in optional)],
            properties={"direction": StringAttr(LstmDirection(direction).value)},
            result_types=[
                tensor_type_like(x.type, [steps, directions, batch, hidden]),
                state,
                state,
            ],
        )

    @property
    def lstm_direction(self) -> LstmDirection:
        return LstmDirection(self.direction.data)

    @property
    def num_directions(self) -> int:
        return 2 if self.lstm_direction == LstmDirection.BIDIRECTIONAL else 1

    def sizes(self) -> tuple[int, int, int, int, int]:
        """(directions, steps, batch, input size, hidden size)."""
        steps, batch, input_size = static_shape(self.x)
        return self.num_directions, steps, batch, input_size, static_shape(self.r)[2]

    def verify_(self) -> None:
        if self.direction.data not in set(LstmDirection):
            raise VerifyException(
                f"'graph.lstm' direction must be forward, reverse or bidirectional, got "
                f"'{self.direction.data}'"
            )
        super().verify_()
        element = self.x.type.element_type  # type: ignore[union-attr]
        if not isinstance(element, AnyFloat):
            raise VerifyException(f"'graph.lstm' expects float tensors, got {self.x.type}")
        floats = [v for v in self.operands if v is not self.sequence_lens]
        for value in (*floats, *self.results):
            if value.type.element_type != element:  # type: ignore[union-attr]
                raise VerifyException(
                    f"'graph.lstm' element type of {value.type} differs from that of x ({element})"
                )
        if len(static_shape(self.x)) != 3:
            raise VerifyException(
                f"'graph.lstm' x must be [steps, batch, input], got {self.x.type}"
            )
        if len(static_shape(self.r)) != 3:
            raise VerifyException(
                f"'graph.lstm' r must be [directions, 4 * hidden, hidden], got {self.r.type}"
            )
        d, s, b, i, h = self.sizes()
        g = LSTM_GATES * h
        self._expect("w", self.w, (d, g, i))
        self._expect("r", self.r, (d, g, h))
        self._expect("bias", self.bias, (d, 2 * g))
        self._expect("initial_h", self.initial_h, (d, b, h))
        self._expect("initial_c", self.initial_c, (d, b, h))
        self._expect("peepholes", self.peepholes, (d, 3 * h))
        if self.sequence_lens is not None:
            lens = self.sequence_lens.type
            assert isinstance(lens, TensorType)
            if not isinstance(lens.element_type, IntegerType):
                raise VerifyException(
                    f"'graph.lstm' sequence_lens must be an integer tensor, got {lens}"
                )
            self._expect("sequence_lens", self.sequence_lens, (b,))
        self._expect("y", self.y, (s, d, b, h))
        self._expect("y_h", self.y_h, (d, b, h))
        self._expect("y_c", self.y_c, (d, b, h))

    def _expect(self, what: str, value: SSAValue | None, shape: tuple[int, ...]) -> None:
        if value is None or static_shape(value) == shape:
            return
        raise VerifyException(
            f"'graph.lstm' {what} must have shape {list(shape)} "
            f"({self.lstm_direction.value}, {self._size_names()}), got "
            f"{list(static_shape(value))}"
        )

    def _size_names(self) -> str:
        d, s, b, i, h = self.sizes()
        return f"D={d} S={s} B={b} I={i} H={h}"

    # -- custom syntax: graph.lstm <direction> %x, %w, %r [bias %b] [sequence_lens %l]
    #    [initial_h %h] [initial_c %c] [peepholes %p] attr-dict : (types) -> (types)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.direction.data} ")
        printer.print_list((self.x, self.w, self.r), printer.print_operand)
        for keyword in OPTIONAL_OPERANDS:
            value = getattr(self, keyword)
            if value is not None:
                printer.print_string(f" {keyword} ")
                printer.print_operand(value)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : ")
        printer.print_operation_type(self)

    @classmethod
    def parse(cls, parser: Parser) -> LstmOp:
        pos = parser.pos
        direction = parser.parse_identifier()
        if direction not in set(LstmDirection):
            parser.raise_error(
                f"expected forward, reverse or bidirectional, got '{direction}'",
                pos,
                parser.pos,
            )
        operands = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        if len(operands) != 3:
            parser.raise_error("'graph.lstm' takes x, w and r, then keyword operands", pos)
        present: dict[str, Parser.UnresolvedOperand] = {}
        for keyword in OPTIONAL_OPERANDS:
            if parser.parse_optional_keyword(keyword) is not None:
                present[keyword] = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        function_type = parser.parse_function_type()
        unresolved = [*operands, *present.values()]
        if len(function_type.inputs) != len(unresolved) or len(function_type.outputs) != 3:
            parser.raise_error(
                f"'graph.lstm' has {len(unresolved)} operands and 3 results, the type says "
                f"{len(function_type.inputs)} and {len(function_type.outputs)}",
                type_pos,
                parser.pos,
            )
        values = parser.resolve_operands(unresolved, function_type.inputs.data, pos)
        named = dict(zip(present, values[3:]))
        op = cls.build(
            operands=[*values[:3], *([named[k]] if k in named else [] for k in OPTIONAL_OPERANDS)],
            result_types=list(function_type.outputs.data),
            properties={"direction": StringAttr(direction)},
        )
        op.attributes |= attrs
        return op

    def named_operands(self, values: Sequence[T]) -> dict[str, T]:
        """`values`, one per operand in operand order, keyed by operand name (only the
        optional operands that are present appear)."""
        names = ["x", "w", "r", *(n for n in OPTIONAL_OPERANDS if getattr(self, n) is not None)]
        return dict(zip(names, values, strict=True))

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        named = self.named_operands(inputs)
        return lstm_reference(
            self.lstm_direction,
            named["x"],
            named["w"],
            named["r"],
            bias=named.get("bias"),
            sequence_lens=named.get("sequence_lens"),
            initial_h=named.get("initial_h"),
            initial_c=named.get("initial_c"),
            peepholes=named.get("peepholes"),
            dtype=numpy_dtype(self.y.type),
        )


def lstm_reference(
    direction: LstmDirection,
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    *,
    bias: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    initial_c: np.ndarray | None = None,
    peepholes: np.ndarray | None = None,
    dtype: np.dtype | None = None,
) -> list[np.ndarray]:
    """The semantics of `graph.lstm` in numpy: [y, y_h, y_c] (see LstmOp)."""
    dtype = x.dtype if dtype is None else dtype
    steps, batch, _ = x.shape
    directions, _, hidden = r.shape
    y = np.zeros((steps, directions, batch, hidden), dtype)
    y_h = np.zeros((directions, batch, hidden), dtype)
    y_c = np.zeros((directions, batch, hidden), dtype)
    lens = np.full(batch, steps) if sequence_lens is None else np.asarray(sequence_lens)
    for d in range(directions):
        gate_bias = np.zeros(LSTM_GATES * hidden, dtype)
        if bias is not None:
            gate_bias = bias[d, : LSTM_GATES * hidden] + bias[d, LSTM_GATES * hidden :]
        p_i, p_o, p_f = (
            np.zeros((3, hidden), dtype) if peepholes is None else peepholes[d].reshape(3, hidden)
        )
        h = np.zeros((batch, hidden), dtype) if initial_h is None else initial_h[d].copy()
        c = np.zeros((batch, hidden), dtype) if initial_c is None else initial_c[d].copy()
        order = range(steps - 1, -1, -1) if runs_backward(direction, d) else range(steps)
        for t in order:
            gates = x[t] @ w[d].T + h @ r[d].T + gate_bias
            pre_i, pre_o, pre_f, pre_c = np.split(gates, LSTM_GATES, axis=1)
            i = _sigmoid(pre_i + p_i * c)
            f = _sigmoid(pre_f + p_f * c)
            c_next = f * c + i * np.tanh(pre_c)
            o = _sigmoid(pre_o + p_o * c_next)
            h_next = o * np.tanh(c_next)
            valid = (t < lens)[:, None]
            c = np.where(valid, c_next, c)
            h = np.where(valid, h_next, h)
            y[t, d] = np.where(valid, h_next, 0)
        # as onnxruntime: an empty sequence ends in a zero state, not the initial one
        empty = (lens == 0)[:, None]
        y_h[d], y_c[d] = np.where(empty, 0, h), np.where(empty, 0, c)
    return [y, y_h, y_c]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


# -- GRU and the simple RNN -----------------------------------------------------------

GRU_GATES = 3
"""W, R and each half of the biases stack the update (z), reset (r) and hidden (h) gates."""

RECURRENCE_OPERANDS = ("bias", "sequence_lens", "initial_h")
"""The optional operands of graph.gru and graph.rnn, in operand order (also their syntax
keywords)."""


class RnnActivation(StrEnum):
    """An activation function of a GRU or RNN cell (ONNX's list, in snake case)."""

    SIGMOID = "sigmoid"
    TANH = "tanh"
    RELU = "relu"
    AFFINE = "affine"
    LEAKY_RELU = "leaky_relu"
    THRESHOLDED_RELU = "thresholded_relu"
    SCALED_TANH = "scaled_tanh"
    HARD_SIGMOID = "hard_sigmoid"
    ELU = "elu"
    SOFTSIGN = "softsign"
    SOFTPLUS = "softplus"

    @property
    def parameters(self) -> tuple[float | None, float | None]:
        """The defaults of (alpha, beta), those of the ONNX operator of the same name;
        None for a parameter the function does not take."""
        return _ACTIVATION_PARAMETERS.get(self, (None, None))

    @classmethod
    def from_onnx(cls, name: str) -> RnnActivation | None:
        """The activation ONNX calls `name` (any case: `LeakyRelu`, `leakyrelu`)."""
        return _BY_ONNX_NAME.get(name.lower())


_ACTIVATION_PARAMETERS: dict[RnnActivation, tuple[float | None, float | None]] = {
    RnnActivation.AFFINE: (1.0, 0.0),
    RnnActivation.LEAKY_RELU: (0.01, None),
    RnnActivation.THRESHOLDED_RELU: (1.0, None),
    RnnActivation.SCALED_TANH: (1.0, 1.0),
    RnnActivation.HARD_SIGMOID: (0.2, 0.5),
    RnnActivation.ELU: (1.0, None),
}
_BY_ONNX_NAME = {a.value.replace("_", ""): a for a in RnnActivation}


def apply_activation(
    kind: RnnActivation, alpha: float, beta: float, x: np.ndarray
) -> np.ndarray:
    """An activation function of a recurrent cell in numpy (alpha and beta as given,
    whether or not the function reads them)."""
    a, b = x.dtype.type(alpha), x.dtype.type(beta)
    match kind:
        case RnnActivation.SIGMOID:
            return _sigmoid(x)
        case RnnActivation.TANH:
            return np.tanh(x)
        case RnnActivation.RELU:
            return np.maximum(x, 0)
        case RnnActivation.AFFINE:
            return a * x + b
        case RnnActivation.LEAKY_RELU:
            return np.where(x >= 0, x, a * x)
        case RnnActivation.THRESHOLDED_RELU:
            return np.where(x > a, x, 0).astype(x.dtype)
        case RnnActivation.SCALED_TANH:
            return a * np.tanh(b * x)
        case RnnActivation.HARD_SIGMOID:
            return np.clip(a * x + b, 0, 1)
        case RnnActivation.ELU:
            return np.where(x >= 0, x, a * (np.exp(x) - 1))
        case RnnActivation.SOFTSIGN:
            return x / (1 + np.abs(x))
        case RnnActivation.SOFTPLUS:
            return np.logaddexp(x, 0).astype(x.dtype)
    raise AssertionError(f"unknown activation {kind}")


@dataclass(frozen=True)
class CellFunction:
    """One activation of a recurrent cell with its parameters (unused ones are 0)."""

    kind: RnnActivation
    alpha: float = 0.0
    beta: float = 0.0

    @classmethod
    def of(cls, kind: RnnActivation | str) -> CellFunction:
        """The activation with its default parameters."""
        kind = RnnActivation(kind)
        alpha, beta = kind.parameters
        return cls(kind, alpha or 0.0, beta or 0.0)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return apply_activation(self.kind, self.alpha, self.beta, x)

    def syntax(self) -> str:
        """`tanh`, `leaky_relu(0.1)`, `hard_sigmoid(0.2, 0.5)`: the parameters it takes."""
        alpha, beta = self.kind.parameters
        pairs = ((self.alpha, alpha), (self.beta, beta))
        taken = [value for value, default in pairs if default is not None]
        return self.kind.value + (f"({', '.join(repr(v) for v in taken)})" if taken else "")


class RecurrenceOp(GraphOp):
    """What graph.gru and graph.rnn share: operands x, w, r, optional bias,
    sequence_lens and initial_h; results y and y_h; a direction; the activations of each
    direction with their parameters; an optional clip. Subclasses set GATES, the default
    activations of one direction and their name."""

    GATES: ClassVar[int]
    DEFAULT_ACTIVATIONS: ClassVar[tuple[RnnActivation, ...]]
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE
    # sequence_lens is an integer tensor; element types are checked in verify_
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    direction = prop_def(StringAttr)
    activations = prop_def(ArrayAttr[StringAttr])
    activation_alpha = prop_def(ArrayAttr[FloatAttr])
    activation_beta = prop_def(ArrayAttr[FloatAttr])
    clip = opt_prop_def(FloatAttr)
    x = operand_def(FloatTensor)
    w = operand_def(FloatTensor)
    r = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    sequence_lens = opt_operand_def(AnyTensor)
    initial_h = opt_operand_def(FloatTensor)
    y = result_def(FloatTensor)
    y_h = result_def(FloatTensor)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(NoMemoryEffect())

    def __init__(
        self,
        direction: LstmDirection | str,
        x: SSAValue | Operation,
        w: SSAValue | Operation,
        r: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        sequence_lens: SSAValue | Operation | None = None,
        initial_h: SSAValue | Operation | None = None,
        *,
        activations: Sequence[CellFunction] | None = None,
        clip: float | None = None,
        extra_properties: dict[str, Attribute] | None = None,
    ):
        x, w, r = SSAValue.get(x), SSAValue.get(w), SSAValue.get(r)
        direction = LstmDirection(direction)
        steps, batch, _ = static_shape(x)
        directions, hidden = static_shape(r)[0], static_shape(r)[2]
        if activations is None:
            count = 2 if direction == LstmDirection.BIDIRECTIONAL else 1
            activations = [CellFunction.of(a) for a in self.DEFAULT_ACTIVATIONS] * count
        properties: dict[str, Attribute] = {
            "direction": StringAttr(direction.value),
            **_activation_properties(activations),
            **(extra_properties or {}),
        }
        if clip is not None:
            properties["clip"] = FloatAttr(clip, f64)
        optional = (bias, sequence_lens, initial_h)
        super().__init__(
            operands=[x, w, r, *([] if v is None else [v] for v in optional)],
            properties=properties,
            result_types=[
                tensor_type_like(x.type, [steps, directions, batch, hidden]),
                tensor_type_like(x.type, [directions, batch, hidden]),
            ],
        )

    @property
    def recurrence_direction(self) -> LstmDirection:
        return LstmDirection(self.direction.data)

    @property
    def num_directions(self) -> int:
        return 2 if self.recurrence_direction == LstmDirection.BIDIRECTIONAL else 1

    @property
    def cell_clip(self) -> float | None:
        """The bound of |pre-activation| (None: no clip)."""
        return None if self.clip is None else float(self.clip.value.data)

    def cell_functions(self) -> list[list[CellFunction]]:
        """The activations of each direction, in the order the cell applies them."""
        functions = [
            CellFunction(RnnActivation(name.data), float(a.value.data), float(b.value.data))
            for name, a, b in zip(
                self.activations.data,
                self.activation_alpha.data,
                self.activation_beta.data,
                strict=True,
            )
        ]
        k = len(self.DEFAULT_ACTIVATIONS)
        return [functions[d * k : (d + 1) * k] for d in range(len(functions) // k)]

    def sizes(self) -> tuple[int, int, int, int, int]:
        """(directions, steps, batch, input size, hidden size)."""
        steps, batch, input_size = static_shape(self.x)
        return self.num_directions, steps, batch, input_size, static_shape(self.r)[2]

    def verify_(self) -> None:
        name = self.name
        if self.direction.data not in set(LstmDirection):
            raise VerifyException(
                f"'{name}' direction must be forward, reverse or bidirectional, got "
                f"'{self.direction.data}'"
            )
        for activation in self.activations.data:
            if activation.data not in set(RnnActivation):
                raise VerifyException(
                    f"'{name}' activation '{activation.data}' is not one of "
                    f"{', '.join(RnnActivation)}"
                )
        expected = len(self.DEFAULT_ACTIVATIONS) * self.num_directions
        counts = {
            len(self.activations.data),
            len(self.activation_alpha.data),
            len(self.activation_beta.data),
        }
        if counts != {expected}:
            raise VerifyException(
                f"'{name}' needs {expected} activations with an alpha and a beta each "
                f"({len(self.DEFAULT_ACTIVATIONS)} a direction), got "
                f"{len(self.activations.data)}, {len(self.activation_alpha.data)} and "
                f"{len(self.activation_beta.data)}"
            )
        if self.cell_clip is not None and not self.cell_clip > 0:
            raise VerifyException(f"'{name}' clip must be positive, got {self.cell_clip}")
        super().verify_()
        element = self.x.type.element_type  # type: ignore[union-attr]
        if not isinstance(element, AnyFloat):
            raise VerifyException(f"'{name}' expects float tensors, got {self.x.type}")
        floats = [v for v in self.operands if v is not self.sequence_lens]
        for value in (*floats, *self.results):
            if value.type.element_type != element:  # type: ignore[union-attr]
                raise VerifyException(
                    f"'{name}' element type of {value.type} differs from that of x ({element})"
                )
        if len(static_shape(self.x)) != 3:
            raise VerifyException(f"'{name}' x must be [steps, batch, input], got {self.x.type}")
        if len(static_shape(self.r)) != 3:
            raise VerifyException(
                f"'{name}' r must be [directions, {self._gates_times()}hidden, hidden], "
                f"got {self.r.type}"
            )
        d, s, b, i, h = self.sizes()
        g = self.GATES * h
        self._expect("w", self.w, (d, g, i))
        self._expect("r", self.r, (d, g, h))
        self._expect("bias", self.bias, (d, 2 * g))
        self._expect("initial_h", self.initial_h, (d, b, h))
        if self.sequence_lens is not None:
            lens = self.sequence_lens.type
            assert isinstance(lens, TensorType)
            if not isinstance(lens.element_type, IntegerType):
                raise VerifyException(
                    f"'{name}' sequence_lens must be an integer tensor, got {lens}"
                )
            self._expect("sequence_lens", self.sequence_lens, (b,))
        self._expect("y", self.y, (s, d, b, h))
        self._expect("y_h", self.y_h, (d, b, h))

    def _gates_times(self) -> str:
        return "" if self.GATES == 1 else f"{self.GATES} * "

    def _expect(self, what: str, value: SSAValue | None, shape: tuple[int, ...]) -> None:
        if value is None or static_shape(value) == shape:
            return
        d, s, b, i, h = self.sizes()
        raise VerifyException(
            f"'{self.name}' {what} must have shape {list(shape)} "
            f"({self.recurrence_direction.value}, D={d} S={s} B={b} I={i} H={h}), got "
            f"{list(static_shape(value))}"
        )

    # -- custom syntax: graph.gru <direction> %x, %w, %r [bias %b] [sequence_lens %l]
    #    [initial_h %h] [activations [f, g(alpha, beta), ...]] [clip <float>]
    #    [<flags of the subclass>] attr-dict : (types) -> (types)

    FLAGS: ClassVar[tuple[str, ...]] = ()
    """Unit properties of a subclass, printed as keywords after clip."""

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.direction.data} ")
        printer.print_list((self.x, self.w, self.r), printer.print_operand)
        for keyword in RECURRENCE_OPERANDS:
            value = getattr(self, keyword)
            if value is not None:
                printer.print_string(f" {keyword} ")
                printer.print_operand(value)
        functions = [f for per_direction in self.cell_functions() for f in per_direction]
        defaults = [CellFunction.of(a) for a in self.DEFAULT_ACTIVATIONS] * self.num_directions
        if functions != defaults:
            printer.print_string(f" activations [{', '.join(f.syntax() for f in functions)}]")
        if self.cell_clip is not None:
            printer.print_string(f" clip {self.cell_clip!r}")
        for flag in self.FLAGS:
            if self.properties.get(flag) is not None:
                printer.print_string(f" {flag}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_operation_type(self)

    @classmethod
    def parse(cls, parser: Parser) -> RecurrenceOp:
        name = cls.name
        pos = parser.pos
        direction = parser.parse_identifier()
        if direction not in set(LstmDirection):
            parser.raise_error(
                f"expected forward, reverse or bidirectional, got '{direction}'",
                pos,
                parser.pos,
            )
        operands = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        if len(operands) != 3:
            parser.raise_error(f"'{name}' takes x, w and r, then keyword operands", pos)
        present: dict[str, Parser.UnresolvedOperand] = {}
        for keyword in RECURRENCE_OPERANDS:
            if parser.parse_optional_keyword(keyword) is not None:
                present[keyword] = parser.parse_unresolved_operand()
        functions = None
        if parser.parse_optional_keyword("activations") is not None:
            functions = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: _parse_cell_function(parser)
            )
        clip = None
        if parser.parse_optional_keyword("clip") is not None:
            clip = float(parser.parse_number())
        properties: dict[str, Attribute] = {"direction": StringAttr(direction)}
        for flag in cls.FLAGS:
            if parser.parse_optional_keyword(flag) is not None:
                properties[flag] = UnitAttr()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        function_type = parser.parse_function_type()
        unresolved = [*operands, *present.values()]
        if len(function_type.inputs) != len(unresolved) or len(function_type.outputs) != 2:
            parser.raise_error(
                f"'{name}' has {len(unresolved)} operands and 2 results, the type says "
                f"{len(function_type.inputs)} and {len(function_type.outputs)}",
                type_pos,
                parser.pos,
            )
        if functions is None:
            count = 2 if direction == LstmDirection.BIDIRECTIONAL else 1
            functions = [CellFunction.of(a) for a in cls.DEFAULT_ACTIVATIONS] * count
        properties |= _activation_properties(functions)
        if clip is not None:
            properties["clip"] = FloatAttr(clip, f64)
        values = parser.resolve_operands(unresolved, function_type.inputs.data, pos)
        named = dict(zip(present, values[3:]))
        op = cls.build(
            operands=[
                *values[:3],
                *([named[k]] if k in named else [] for k in RECURRENCE_OPERANDS),
            ],
            result_types=list(function_type.outputs.data),
            properties=properties,
        )
        op.attributes |= attrs
        return op

    def named_operands(self, values: Sequence[T]) -> dict[str, T]:
        """`values`, one per operand in operand order, keyed by operand name (only the
        optional operands that are present appear)."""
        names = [
            "x",
            "w",
            "r",
            *(n for n in RECURRENCE_OPERANDS if getattr(self, n) is not None),
        ]
        return dict(zip(names, values, strict=True))


def _activation_properties(functions: Sequence[CellFunction]) -> dict[str, Attribute]:
    return {
        "activations": ArrayAttr([StringAttr(RnnActivation(f.kind).value) for f in functions]),
        "activation_alpha": ArrayAttr([FloatAttr(f.alpha, f64) for f in functions]),
        "activation_beta": ArrayAttr([FloatAttr(f.beta, f64) for f in functions]),
    }


def _parse_cell_function(parser: Parser) -> CellFunction:
    pos = parser.pos
    name = parser.parse_identifier()
    if name not in set(RnnActivation):
        parser.raise_error(
            f"expected an activation ({', '.join(RnnActivation)}), got '{name}'", pos, parser.pos
        )
    kind = RnnActivation(name)
    taken = [p is not None for p in kind.parameters]
    values: list[float] = []
    if parser.parse_optional_punctuation("(") is not None:
        values = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, lambda: float(parser.parse_number())
        )
        parser.parse_punctuation(")")
    if len(values) != sum(taken):
        parser.raise_error(
            f"activation {name} takes {sum(taken)} parameters, got {len(values)}", pos, parser.pos
        )
    defaults = CellFunction.of(kind)
    given = iter(values)
    alpha = next(given) if taken[0] else defaults.alpha
    beta = next(given) if taken[1] else defaults.beta
    return CellFunction(kind, alpha, beta)


@irdl_op_definition
class GruOp(RecurrenceOp):
    """A gated recurrent unit layer with ONNX's GRU semantics, time-major.

    Operands, with D directions (2 when bidirectional), S steps, batch B, input size I
    and hidden size H: x [S, B, I]; w [D, 3H, I] and r [D, 3H, H], the input and
    recurrent weights of the gates z (update), r (reset) and h (hidden) stacked in that
    order; then, optional: `bias` [D, 6H] (the input biases Wb then the recurrent biases
    Rb), `sequence_lens` [B] (an integer tensor: the length of each sequence of the
    batch, every one S when absent) and `initial_h` [D, B, H] (zeros when absent).
    Properties: the activations f and g of each direction with their alpha and beta
    (sigmoid and tanh by default), an optional `clip` c and `linear_before_reset`.

    Each direction runs over its steps t (0..S-1 forward, S-1..0 backward) with
        z = f(clip(x_t Wz^T + h Rz^T + Wbz + Rbz))
        r = f(clip(x_t Wr^T + h Rr^T + Wbr + Rbr))
        n = g(clip(x_t Wh^T + (r . h) Rh^T + Rbh + Wbh))        (default)
        n = g(clip(x_t Wh^T + r . (h Rh^T + Rbh) + Wbh))        (linear_before_reset)
        h' = (1 - z) . n + z . h
    where clip bounds a value to [-c, c] (no bound without `clip`). Steps at or past a
    sequence's length leave its state as it is and give zeros in y; an empty sequence
    (length 0) ends in a zero state, as in onnxruntime. The results are y [S, D, B, H]
    (every step's h) and y_h [D, B, H] (the final state).

        %y, %y_h = graph.gru forward %x, %w, %r bias %b activations [hard_sigmoid(0.2, 0.5), tanh] clip 5.0 linear_before_reset : (tensor<35x1x256xf32>, tensor<1x768x256xf32>, tensor<1x768x256xf32>, tensor<1x1536xf32>) -> (tensor<35x1x1x256xf32>, tensor<1x1x256xf32>)

    The activations are spelled only when they differ from the defaults; one that takes
    parameters lists them (alpha, then beta). The time steps form a recurrence, so the
    op is opaque: it is never fused.
    """

    name = "graph.gru"
    GATES: ClassVar[int] = GRU_GATES
    DEFAULT_ACTIVATIONS: ClassVar[tuple[RnnActivation, ...]] = (
        RnnActivation.SIGMOID,
        RnnActivation.TANH,
    )
    FLAGS: ClassVar[tuple[str, ...]] = ("linear_before_reset",)

    linear_before_reset = opt_prop_def(UnitAttr)

    def __init__(
        self,
        direction: LstmDirection | str,
        x: SSAValue | Operation,
        w: SSAValue | Operation,
        r: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        sequence_lens: SSAValue | Operation | None = None,
        initial_h: SSAValue | Operation | None = None,
        *,
        activations: Sequence[CellFunction] | None = None,
        clip: float | None = None,
        linear_before_reset: bool = False,
    ):
        super().__init__(
            direction,
            x,
            w,
            r,
            bias,
            sequence_lens,
            initial_h,
            activations=activations,
            clip=clip,
            extra_properties={"linear_before_reset": UnitAttr()} if linear_before_reset else None,
        )

    @property
    def resets_after_product(self) -> bool:
        """Whether the reset gate scales h Rh^T + Rbh (linear_before_reset) rather than h."""
        return self.linear_before_reset is not None

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        named = self.named_operands(inputs)
        return gru_reference(
            self.recurrence_direction,
            named["x"],
            named["w"],
            named["r"],
            bias=named.get("bias"),
            sequence_lens=named.get("sequence_lens"),
            initial_h=named.get("initial_h"),
            activations=self.cell_functions(),
            clip=self.cell_clip,
            linear_before_reset=self.resets_after_product,
            dtype=numpy_dtype(self.y.type),
        )


@irdl_op_definition
class RnnOp(RecurrenceOp):
    """A simple recurrent layer with ONNX's RNN semantics, time-major.

    Operands, with D directions (2 when bidirectional), S steps, batch B, input size I
    and hidden size H: x [S, B, I]; w [D, H, I] and r [D, H, H], the input and recurrent
    weights; then, optional: `bias` [D, 2H] (the input bias Wb then the recurrent bias
    Rb), `sequence_lens` [B] (an integer tensor: the length of each sequence of the
    batch, every one S when absent) and `initial_h` [D, B, H] (zeros when absent).
    Properties: the activation f of each direction with its alpha and beta (tanh by
    default) and an optional `clip` c.

    Each direction runs over its steps t (0..S-1 forward, S-1..0 backward) with
        h' = f(clip(x_t W^T + h R^T + Wb + Rb))
    where clip bounds a value to [-c, c] (no bound without `clip`). Steps at or past a
    sequence's length leave its state as it is and give zeros in y; an empty sequence
    (length 0) ends in a zero state, as in onnxruntime. The results are y [S, D, B, H]
    (every step's h) and y_h [D, B, H] (the final state).

        %y, %y_h = graph.rnn bidirectional %x, %w, %r bias %b activations [relu, leaky_relu(0.1)] : (tensor<35x1x256xf32>, tensor<2x256x256xf32>, tensor<2x256x256xf32>, tensor<2x512xf32>) -> (tensor<35x2x1x256xf32>, tensor<2x1x256xf32>)

    The activations are spelled only when they differ from the defaults. The time steps
    form a recurrence, so the op is opaque: it is never fused.
    """

    name = "graph.rnn"
    GATES: ClassVar[int] = 1
    DEFAULT_ACTIVATIONS: ClassVar[tuple[RnnActivation, ...]] = (RnnActivation.TANH,)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        named = self.named_operands(inputs)
        return rnn_reference(
            self.recurrence_direction,
            named["x"],
            named["w"],
            named["r"],
            bias=named.get("bias"),
            sequence_lens=named.get("sequence_lens"),
            initial_h=named.get("initial_h"),
            activations=self.cell_functions(),
            clip=self.cell_clip,
            dtype=numpy_dtype(self.y.type),
        )


def _run_recurrence(
    direction: LstmDirection,
    x: np.ndarray,
    hidden: int,
    directions: int,
    sequence_lens: np.ndarray | None,
    initial_h: np.ndarray | None,
    dtype: np.dtype,
    step,
) -> list[np.ndarray]:
    """[y, y_h] of a recurrence whose cell is step(d, x_t, h) -> h' (the masking of
    sequence_lens and the order of the steps are those of LstmOp)."""
    steps, batch, _ = x.shape
    y = np.zeros((steps, directions, batch, hidden), dtype)
    y_h = np.zeros((directions, batch, hidden), dtype)
    lens = np.full(batch, steps) if sequence_lens is None else np.asarray(sequence_lens)
    for d in range(directions):
        h = np.zeros((batch, hidden), dtype) if initial_h is None else initial_h[d].copy()
        order = range(steps - 1, -1, -1) if runs_backward(direction, d) else range(steps)
        for t in order:
            h_next = step(d, x[t], h).astype(dtype)
            valid = (t < lens)[:, None]
            h = np.where(valid, h_next, h)
            y[t, d] = np.where(valid, h_next, 0)
        y_h[d] = np.where((lens == 0)[:, None], 0, h)
    return [y, y_h]


def _clipped(value: np.ndarray, clip: float | None) -> np.ndarray:
    return value if clip is None else np.clip(value, -clip, clip)


def gru_reference(
    direction: LstmDirection,
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    *,
    bias: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    activations: Sequence[Sequence[CellFunction]] | None = None,
    clip: float | None = None,
    linear_before_reset: bool = False,
    dtype: np.dtype | None = None,
) -> list[np.ndarray]:
    """The semantics of `graph.gru` in numpy: [y, y_h] (see GruOp)."""
    dtype = x.dtype if dtype is None else dtype
    directions, _, hidden = r.shape
    g = GRU_GATES * hidden
    if activations is None:
        activations = [[CellFunction.of("sigmoid"), CellFunction.of("tanh")]] * directions
    biases = np.zeros((directions, 2 * g), dtype) if bias is None else bias

    def step(d: int, x_t: np.ndarray, h: np.ndarray) -> np.ndarray:
        f, g_ = activations[d]
        wb, rb = biases[d, :g], biases[d, g:]
        xw = x_t @ w[d].T + wb
        w_z, w_r, w_h = np.split(xw, GRU_GATES, axis=1)
        r_z, r_r, r_h = np.split(r[d], GRU_GATES, axis=0)
        rb_z, rb_r, rb_h = np.split(rb, GRU_GATES)
        z = f(_clipped(w_z + h @ r_z.T + rb_z, clip))
        reset = f(_clipped(w_r + h @ r_r.T + rb_r, clip))
        if linear_before_reset:
            n = g_(_clipped(w_h + reset * (h @ r_h.T + rb_h), clip))
        else:
            n = g_(_clipped(w_h + (reset * h) @ r_h.T + rb_h, clip))
        return (1 - z) * n + z * h

    return _run_recurrence(direction, x, hidden, directions, sequence_lens, initial_h, dtype, step)


def rnn_reference(
    direction: LstmDirection,
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    *,
    bias: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    activations: Sequence[Sequence[CellFunction]] | None = None,
    clip: float | None = None,
    dtype: np.dtype | None = None,
) -> list[np.ndarray]:
    """The semantics of `graph.rnn` in numpy: [y, y_h] (see RnnOp)."""
    dtype = x.dtype if dtype is None else dtype
    directions, _, hidden = r.shape
    if activations is None:
        activations = [[CellFunction.of("tanh")]] * directions
    biases = np.zeros((directions, 2 * hidden), dtype) if bias is None else bias

    def step(d: int, x_t: np.ndarray, h: np.ndarray) -> np.ndarray:
        (f,) = activations[d]
        total = x_t @ w[d].T + h @ r[d].T + biases[d, :hidden] + biases[d, hidden:]
        return f(_clipped(total, clip))

    return _run_recurrence(direction, x, hidden, directions, sequence_lens, initial_h, dtype, step)


OPS = (LstmOp, GruOp, RnnOp)

__all__ = [
    "GRU_GATES",
    "LSTM_GATES",
    "CellFunction",
    "GruOp",
    "LstmDirection",
    "LstmOp",
    "RecurrenceOp",
    "RnnActivation",
    "RnnOp",
    "apply_activation",
    "gru_reference",
    "lstm_reference",
    "rnn_reference",
    "runs_backward",
]
