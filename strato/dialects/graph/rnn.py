"""Recurrent operators: LSTM."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar, TypeVar

import numpy as np
from xdsl.dialects.builtin import AnyFloat, IntegerType, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
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


OPS = (LstmOp,)

__all__ = [
    "LSTM_GATES",
    "LstmDirection",
    "LstmOp",
    "lstm_reference",
    "runs_backward",
]
