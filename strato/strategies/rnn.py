"""Strategies of recurrent operators (LSTM).

A recurrence is not one tensor expression: step s reads the state of step s - 1. The
LSTM strategy unrolls time into stages, all directions of a step in the same stages:

    lstm_input       xw[d, t, b, g] = sum_k x[t, b, k] * w[d, g, k]    (every step at once)
    lstm_input_bias  xw[d, t, b, g] + bias[d, g] + bias[d, 4H + g]     (when there is a bias)
    then per step s, for the time t that direction d visits at step s:
    lstm_gates_s     z[d, b, g] = sum_k h_{s-1}[d, b, k] * r[d, g, k]  (none at s = 0
                                                                        without initial_h)
    lstm_state_s     [0, d, b, j]: c_s = f . c_{s-1} + i . tanh(xw_c + z_c)
                     [1, d, b, j]: h_s = sigmoid(xw_o + z_o + P_o . c_s) . tanh(c_s)
    and the outputs
    lstm_y           y[t, d, b, j] = h of the step at which direction d visits t
    lstm_y_h/_y_c    the two halves of the last state

so a step costs two stages: one reduction for the four gates, and one element-wise stage
for the new state. The input projection needs no state: it is one large reduction outside
the recurrence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
)

# Gate blocks of W, R and the biases (ONNX stacks them i, o, f, c).
GATE_I, GATE_O, GATE_F, GATE_C = range(graph.LSTM_GATES)
# Blocks of the peephole weights (i, o, f).
PEEP_I, PEEP_O, PEEP_F = range(3)
# The two halves of a step's state stage.
CELL, HIDDEN = 0, 1


class _LstmBuilder:
    """Adds the stages of one graph.lstm to a primitive."""

    def __init__(self, pb: PrimitiveBuilder, op: graph.LstmOp, inputs: Sequence[SSAValue]):
        self.pb = pb
        self.op = op
        self.operands = op.named_operands(inputs)
        self.dtype = element_type_of(inputs[0])
        self.directions, self.steps, self.batch, self.input_size, self.hidden = op.sizes()
        self.backward = [graph.runs_backward(op.lstm_direction, d) for d in range(self.directions)]

    @property
    def state_shape(self) -> list[int]:
        return [self.directions, self.batch, self.hidden]

    def time_of_step(self, step: int, d: int) -> int:
        """The time index direction `d` visits at `step`."""
        return self.steps - 1 - step if self.backward[d] else step

    # -- scalar helpers -----------------------------------------------------------

    def per_direction(self, s: ScalarBuilder, d: SSAValue, values: list[SSAValue]) -> SSAValue:
        """values[d] for the direction index `d` (values are all of one type)."""
        if len(values) == 1:
            return values[0]
        is_first = s.index_cmp("eq", d, s.index(0))
        return s.select(is_first, values[0], values[1])

    def time_index(self, s: ScalarBuilder, d: SSAValue, step: int) -> SSAValue:
        times = [self.time_of_step(step, n) for n in range(self.directions)]
        if len(set(times)) == 1:
            return s.index(times[0])
        return s.index_select(
            s.index_cmp("eq", d, s.index(0)), s.index(times[0]), s.index(times[1])
        )

    def is_valid(self, s: ScalarBuilder, d: SSAValue, b: SSAValue, step: int) -> SSAValue | None:
        """Whether the time visited at `step` lies within sequence b (None: always)."""
        lens = self.operands.get("sequence_lens")
        if lens is None:
            return None
        length = s.read(lens, [b])
        checks = [
            s.cmp("lt", s.const(self.time_of_step(step, n), length.type), length)
            for n in range(self.directions)
        ]
        return self.per_direction(s, d, checks)

    def sigmoid(self, s: ScalarBuilder, value: SSAValue) -> SSAValue:
        one = s.const(1.0)
        return s.div(one, s.add(one, s.exp(s.neg(value))))

    def gate_offset(self, s: ScalarBuilder, gate: int, j: SSAValue) -> SSAValue:
        return s.index_add(s.index(gate * self.hidden), j)

    # -- stages ---------------------------------------------------------------------

    def input_projection(self) -> SSAValue:
        """xw[d, t, b, g] = x[t, b, :] . w[d, g, :] (+ both biases)."""
        x, w = self.operands["x"], self.operands["w"]
        gates = graph.LSTM_GATES * self.hidden
        shape = [self.directions, self.steps, self.batch, gates]

        def product(s, idx, k):
            d, t, b, g = idx
            return s.mul(s.read(x, [t, b, k[0]]), s.read(w, [d, g, k[0]]))

        xw = self.pb.reduce(
            "lstm_input", te.ReduceKind.SUM, shape, [self.input_size], product, self.dtype
        )
        bias = self.operands.get("bias")
        if bias is None:
            return xw

        def add_bias(s, idx):
            d, g = idx[0], idx[3]
            both = s.add(s.read(bias, [d, g]), s.read(bias, [d, s.index_add(g, s.index(gates))]))
            return s.add(s.read(xw, idx), both)

        return self.pb.compute("lstm_input_bias", shape, add_bias, self.dtype)

    def recurrent_gates(self, step: int, previous: _Previous) -> SSAValue:
        """z[d, b, g] = h_prev[d, b, :] . r[d, g, :], all four gates in one reduction."""
        r = self.operands["r"]
        shape = [self.directions, self.batch, graph.LSTM_GATES * self.hidden]

        def product(s, idx, k):
            d, b, g = idx
            h = previous.h(s, [d, b, k[0]])
            assert h is not None
            return s.mul(h, s.read(r, [d, g, k[0]]))

        return self.pb.reduce(
            f"lstm_gates_{step}", te.ReduceKind.SUM, shape, [self.hidden], product, self.dtype
        )

    def pre_activation(
        self,
        s: ScalarBuilder,
        step: int,
        xw: SSAValue,
        z: SSAValue | None,
        idx: list[SSAValue],
        gate: int,
    ) -> SSAValue:
        d, b, j = idx
        g = self.gate_offset(s, gate, j)
        value = s.read(xw, [d, self.time_index(s, d, step), b, g])
        if z is not None:
            value = s.add(value, s.read(z, [d, b, g]))
        return value

    def peephole(
        self, s: ScalarBuilder, idx: list[SSAValue], block: int, c: SSAValue, value: SSAValue
    ) -> SSAValue:
        """value + P[block] . c (value when there are no peepholes)."""
        p = self.operands.get("peepholes")
        if p is None:
            return value
        d, _, j = idx
        return s.add(value, s.mul(s.read(p, [d, self.gate_offset(s, block, j)]), c))

    def state(self, step: int, xw: SSAValue, z: SSAValue | None, previous: _Previous) -> SSAValue:
        """state_s[0] = c_s = f . c + i . tanh(g) and state_s[1] = h_s = o . tanh(c_s),
        each the previous one where the step is past the sequence.

        c and h share one stage so that the next step's reduction reads it: element-wise
        stages whose readers are all element-wise get inlined into them, which along a
        chain of cell states would recompute every earlier step in every later one."""

        def body(s, idx):
            part, cell_idx = idx[0], idx[1:]
            pre_i = self.pre_activation(s, step, xw, z, cell_idx, GATE_I)
            pre_c = self.pre_activation(s, step, xw, z, cell_idx, GATE_C)
            candidate = s.tanh(pre_c)
            old_c = previous.c(s, cell_idx)
            if old_c is None:
                # A zero cell state: no forget term, no peepholes.
                c = s.mul(self.sigmoid(s, pre_i), candidate)
            else:
                i = self.sigmoid(s, self.peephole(s, cell_idx, PEEP_I, old_c, pre_i))
                pre_f = self.pre_activation(s, step, xw, z, cell_idx, GATE_F)
                f = self.sigmoid(s, self.peephole(s, cell_idx, PEEP_F, old_c, pre_f))
                c = s.add(s.mul(f, old_c), s.mul(i, candidate))
            pre_o = self.pre_activation(s, step, xw, z, cell_idx, GATE_O)
            o = self.sigmoid(s, self.peephole(s, cell_idx, PEEP_O, c, pre_o))
            h = s.mul(o, s.tanh(c))
            old_h = previous.h(s, cell_idx)
            is_cell = s.index_cmp("eq", part, s.index(CELL))
            return s.select(
                is_cell,
                self.mask(s, cell_idx, step, c, old_c),
                self.mask(s, cell_idx, step, h, old_h),
            )

        shape = [2, *self.state_shape]
        return self.pb.compute(f"lstm_state_{step}", shape, body, self.dtype)

    def mask(
        self,
        s: ScalarBuilder,
        idx: list[SSAValue],
        step: int,
        value: SSAValue,
        old: SSAValue | None,
    ) -> SSAValue:
        """`value` where the step lies within the sequence, else `old` (0 when None, and
        at the last step of an empty sequence)."""
        d, b, _ = idx
        valid = self.is_valid(s, d, b, step)
        if valid is None:
            return value
        zero = s.const(0.0)
        if old is None:
            return s.select(valid, value, zero)
        if step == self.steps - 1:
            # The final state of an empty sequence is zero, not the initial state.
            length = s.read(self.operands["sequence_lens"], [b])
            empty = s.cmp("eq", length, s.const(0, length.type))
            old = s.select(empty, zero, old)
        return s.select(valid, value, old)

    def outputs(self, states: list[SSAValue]) -> SSAValue:
        """y[t, d, b, j] = h of the step at which direction d visits t (0 past the end)."""
        shape = [self.steps, self.directions, self.batch, self.hidden]

        def body(s, idx):
            t, d, b, j = idx
            if all(self.backward):
                step = s.index_sub(s.index(self.steps - 1), t)
            elif any(self.backward):
                reversed_t = s.index_sub(s.index(self.steps - 1), t)
                step = s.index_select(s.index_cmp("eq", d, s.index(0)), t, reversed_t)
            else:
                step = t
            value = self.step_output(s, states, self.steps - 1, d, b, j)
            for n in range(self.steps - 2, -1, -1):
                here = s.index_cmp("eq", step, s.index(n))
                value = s.select(here, self.step_output(s, states, n, d, b, j), value)
            return value

        return self.pb.compute("lstm_y", shape, body, self.dtype)

    def step_output(
        self,
        s: ScalarBuilder,
        states: list[SSAValue],
        step: int,
        d: SSAValue,
        b: SSAValue,
        j: SSAValue,
    ) -> SSAValue:
        value = s.read(states[step], [s.index(HIDDEN), d, b, j])
        valid = self.is_valid(s, d, b, step)
        if valid is None:
            return value
        return s.select(valid, value, s.const(0.0))

    def final(self, name: str, state: SSAValue, part: int) -> SSAValue:
        """y_h (part HIDDEN) or y_c (part CELL): that half of the last state."""
        return self.pb.compute(
            name,
            self.state_shape,
            lambda s, idx: s.read(state, [s.index(part), *idx]),
            self.dtype,
        )

    def build(self) -> list[SSAValue]:
        xw = self.input_projection()
        previous = _Previous(None, self.operands.get("initial_h"), self.operands.get("initial_c"))
        states: list[SSAValue] = []
        for step in range(self.steps):
            z = self.recurrent_gates(step, previous) if previous.has_h else None
            states.append(self.state(step, xw, z, previous))
            previous = _Previous(states[-1], None, None)
        last = states[-1]
        return [
            self.outputs(states),
            self.final("lstm_y_h", last, HIDDEN),
            self.final("lstm_y_c", last, CELL),
        ]


@dataclass(frozen=True)
class _Previous:
    """Where the state before a step is: the previous step's state stage, else the
    initial state (h0, c0), else zero (None)."""

    state: SSAValue | None
    h0: SSAValue | None
    c0: SSAValue | None

    @property
    def has_h(self) -> bool:
        return self.state is not None or self.h0 is not None

    def h(self, s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue | None:
        return self._read(s, idx, HIDDEN, self.h0)

    def c(self, s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue | None:
        return self._read(s, idx, CELL, self.c0)

    def _read(
        self, s: ScalarBuilder, idx: list[SSAValue], part: int, initial: SSAValue | None
    ) -> SSAValue | None:
        if self.state is not None:
            return s.read(self.state, [s.index(part), *idx])
        if initial is not None:
            return s.read(initial, idx)
        return None


@strategy(graph.LstmOp)
def lstm(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """The LSTM unrolled over time: an input projection, two stages a step, outputs."""
    assert isinstance(op, graph.LstmOp)
    return _LstmBuilder(pb, op, inputs).build()
