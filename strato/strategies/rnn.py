"""Strategies of recurrent operators (LSTM, GRU, RNN).

graph-default writes recurrent layers as their time steps in graph ops before they get
here (graph-unroll-recurrences), so every step compiles once; these strategies lower
the ops it keeps (lengths that end sequences early) and pipelines without it.

A recurrence is not one tensor expression: step s reads the state of step s - 1. Each
strategy unrolls time into stages, all directions of a step in the same stages, named
after the op (`lstm_`, `gru_`, `rnn_`):

    <op>_input       xw[d, t, b, g] = sum_k x[t, b, k] * w[d, g, k]    (every step at once)
    <op>_input_bias  xw[d, t, b, g] + the biases that add to it        (when there is a bias)
    then per step s, for the time t that direction d visits at step s:
    <op>_gates_s     z[d, b, g] = sum_k h_{s-1}[d, b, k] * r[d, g, k]  (none at s = 0
                                                                        without initial_h)
    <op>_state_s     the new state, element-wise
    and the outputs
    <op>_y           y[t, d, b, j] = h of the step at which direction d visits t
    <op>_y_h (_y_c)  the last state

LSTM: the gates stage covers the four gates; the state stage holds [0, d, b, j] = c_s and
[1, d, b, j] = h_s:
    c_s = f . c_{s-1} + i . tanh(xw_c + z_c),  h_s = sigmoid(xw_o + z_o + P_o . c_s) . tanh(c_s)
RNN: the state stage is h_s = f(clip(xw + z)).
GRU: with linear_before_reset the gates stage covers the three gates and
    h_s = (1 - u) . n + u . h,  u = f(clip(xw_z + z_z)),  n = g(clip(xw_h + r . z_h))
with r = f(clip(xw_r + z_r)) (z_h includes Rbh). Without it the candidate's product reads
r . h, so a step has two more stages between gates (z and r only) and state:
    gru_reset_s      rh[d, b, j] = f(clip(xw_r + z_r)) . h_{s-1}
    gru_candidate_s  zc[d, b, j] = sum_k rh[d, b, k] * r[d, 2H + j, k]

so a step costs two stages (four for the default GRU): reductions over the hidden size
for the gates, and element-wise stages for the new state. The input projection needs no
state: it is one large reduction outside the recurrence. An element-wise stage read by
a reduction is never inlined (te-inline-stages), so no step recomputes an earlier one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
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
# Gate blocks of a GRU (update, reset, hidden).
GRU_Z, GRU_R, GRU_H = range(graph.GRU_GATES)

HiddenReader = Callable[[ScalarBuilder, list[SSAValue]], SSAValue]


class _RecurrenceBuilder:
    """What the stages of graph.lstm, graph.gru and graph.rnn share: the order of the
    steps, sequence lengths, the input projection, the products by R and the outputs."""

    PREFIX = ""
    GATES = 1

    def __init__(
        self,
        pb: PrimitiveBuilder,
        op: graph.LstmOp | graph.RecurrenceOp,
        inputs: Sequence[SSAValue],
        direction: graph.LstmDirection,
    ):
        self.pb = pb
        self.op = op
        self.operands = op.named_operands(inputs)
        self.dtype = element_type_of(inputs[0])
        self.directions, self.steps, self.batch, self.input_size, self.hidden = op.sizes()
        self.backward = [graph.runs_backward(direction, d) for d in range(self.directions)]

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

    def projected(
        self, s: ScalarBuilder, step: int, xw: SSAValue, idx: list[SSAValue], gate: int
    ) -> SSAValue:
        """xw of `gate` at the time direction d visits at `step` (idx = d, b, j)."""
        d, b, j = idx
        return s.read(xw, [d, self.time_index(s, d, step), b, self.gate_offset(s, gate, j)])

    # -- stages ---------------------------------------------------------------------

    def input_bias(self, s: ScalarBuilder, bias: SSAValue, d: SSAValue, g: SSAValue) -> SSAValue:
        """What the biases add to the input projection of gate row g: Wb + Rb."""
        rows = s.index(self.GATES * self.hidden)
        return s.add(s.read(bias, [d, g]), s.read(bias, [d, s.index_add(g, rows)]))

    def input_projection(self) -> SSAValue:
        """xw[d, t, b, g] = x[t, b, :] . w[d, g, :] (+ the biases, `input_bias`)."""
        x, w = self.operands["x"], self.operands["w"]
        shape = [self.directions, self.steps, self.batch, self.GATES * self.hidden]

        def product(s, idx, k):
            d, t, b, g = idx
            return s.mul(s.read(x, [t, b, k[0]]), s.read(w, [d, g, k[0]]))

        xw = self.pb.reduce(
            f"{self.PREFIX}_input", te.ReduceKind.SUM, shape, [self.input_size], product, self.dtype
        )
        bias = self.operands.get("bias")
        if bias is None:
            return xw

        def add_bias(s, idx):
            return s.add(s.read(xw, idx), self.input_bias(s, bias, idx[0], idx[3]))

        return self.pb.compute(f"{self.PREFIX}_input_bias", shape, add_bias, self.dtype)

    def recurrent_product(
        self, name: str, h: HiddenReader, first_row: int, rows: int
    ) -> SSAValue:
        """p[d, b, g] = h[d, b, :] . r[d, first_row + g, :] for g < rows: the gates'
        rows of R in one reduction over the hidden size."""
        r = self.operands["r"]
        shape = [self.directions, self.batch, rows]

        def product(s, idx, k):
            d, b, g = idx
            row = g if first_row == 0 else s.index_add(g, s.index(first_row))
            return s.mul(h(s, [d, b, k[0]]), s.read(r, [d, row, k[0]]))

        return self.pb.reduce(name, te.ReduceKind.SUM, shape, [self.hidden], product, self.dtype)

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

    def hidden_of(self, s: ScalarBuilder, state: SSAValue, idx: list[SSAValue]) -> SSAValue:
        """h at idx = (d, b, j) of a step's state stage."""
        return s.read(state, idx)

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

        return self.pb.compute(f"{self.PREFIX}_y", shape, body, self.dtype)

    def step_output(
        self,
        s: ScalarBuilder,
        states: list[SSAValue],
        step: int,
        d: SSAValue,
        b: SSAValue,
        j: SSAValue,
    ) -> SSAValue:
        value = self.hidden_of(s, states[step], [d, b, j])
        valid = self.is_valid(s, d, b, step)
        if valid is None:
            return value
        return s.select(valid, value, s.const(0.0))


class _LstmBuilder(_RecurrenceBuilder):
    """Adds the stages of one graph.lstm to a primitive."""

    PREFIX = "lstm"
    GATES = graph.LSTM_GATES

    def __init__(self, pb: PrimitiveBuilder, op: graph.LstmOp, inputs: Sequence[SSAValue]):
        super().__init__(pb, op, inputs, op.lstm_direction)

    def recurrent_gates(self, step: int, previous: _Previous) -> SSAValue:
        """z[d, b, g] = h_prev[d, b, :] . r[d, g, :], all four gates in one reduction."""

        def h(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
            value = previous.h(s, idx)
            assert value is not None
            return value

        return self.recurrent_product(
            f"lstm_gates_{step}", h, 0, graph.LSTM_GATES * self.hidden
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
        value = self.projected(s, step, xw, idx, gate)
        if z is not None:
            d, b, j = idx
            value = s.add(value, s.read(z, [d, b, self.gate_offset(s, gate, j)]))
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

    def hidden_of(self, s: ScalarBuilder, state: SSAValue, idx: list[SSAValue]) -> SSAValue:
        return s.read(state, [s.index(HIDDEN), *idx])

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
    """Where the state before an LSTM step is: the previous step's state stage, else the
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


# -- GRU and RNN ---------------------------------------------------------------------------


def activation(s: ScalarBuilder, function: graph.CellFunction, x: SSAValue) -> SSAValue:
    """A cell's activation function on a scalar (see graph.apply_activation)."""
    alpha, beta = s.const(function.alpha), s.const(function.beta)
    zero, one = s.const(0.0), s.const(1.0)
    match function.kind:
        case graph.RnnActivation.SIGMOID:
            return s.div(one, s.add(one, s.exp(s.neg(x))))
        case graph.RnnActivation.TANH:
            return s.tanh(x)
        case graph.RnnActivation.RELU:
            return s.max(x, zero)
        case graph.RnnActivation.AFFINE:
            return s.add(s.mul(alpha, x), beta)
        case graph.RnnActivation.LEAKY_RELU:
            return s.select(s.cmp("ge", x, zero), x, s.mul(alpha, x))
        case graph.RnnActivation.THRESHOLDED_RELU:
            return s.select(s.cmp("gt", x, alpha), x, zero)
        case graph.RnnActivation.SCALED_TANH:
            return s.mul(alpha, s.tanh(s.mul(beta, x)))
        case graph.RnnActivation.HARD_SIGMOID:
            return s.min(s.max(s.add(s.mul(alpha, x), beta), zero), one)
        case graph.RnnActivation.ELU:
            return s.select(s.cmp("ge", x, zero), x, s.mul(alpha, s.sub(s.exp(x), one)))
        case graph.RnnActivation.SOFTSIGN:
            return s.div(x, s.add(one, s.abs(x)))
        case graph.RnnActivation.SOFTPLUS:
            # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), finite for large x
            return s.add(s.max(x, zero), s.log(s.add(one, s.exp(s.neg(s.abs(x))))))
    raise AssertionError(f"unknown activation {function.kind}")


class _CellBuilder(_RecurrenceBuilder, ABC):
    """What the stages of graph.gru and graph.rnn share: one state h, activations per
    direction, clip."""

    def __init__(self, pb: PrimitiveBuilder, op: graph.RecurrenceOp, inputs: Sequence[SSAValue]):
        super().__init__(pb, op, inputs, op.recurrence_direction)
        self.functions = op.cell_functions()
        self.clip = op.cell_clip

    def activate(self, s: ScalarBuilder, d: SSAValue, position: int, x: SSAValue) -> SSAValue:
        """Activation `position` of direction d on clip(x)."""
        if self.clip is not None:
            x = s.min(s.max(x, s.const(-self.clip)), s.const(self.clip))
        functions = [per_direction[position] for per_direction in self.functions]
        if len(set(functions)) == 1:
            return activation(s, functions[0], x)
        return self.per_direction(s, d, [activation(s, f, x) for f in functions])

    def previous_h(self, state: SSAValue | None) -> HiddenReader | None:
        """A reader of h before a step: the previous state stage, else initial_h, else
        None (a zero state)."""
        source = state if state is not None else self.operands.get("initial_h")
        if source is None:
            return None
        return lambda s, idx: s.read(source, idx)

    def final_state(self, state: SSAValue) -> SSAValue:
        return self.pb.compute(
            f"{self.PREFIX}_y_h", self.state_shape, lambda s, idx: s.read(state, idx), self.dtype
        )

    @abstractmethod
    def step_state(self, step: int, xw: SSAValue, h: HiddenReader | None) -> SSAValue:
        """The state stage of `step` (and the stages it reads), given h before it."""

    def build(self) -> list[SSAValue]:
        xw = self.input_projection()
        h = self.previous_h(None)
        states: list[SSAValue] = []
        for step in range(self.steps):
            states.append(self.step_state(step, xw, h))
            h = self.previous_h(states[-1])
        return [self.outputs(states), self.final_state(states[-1])]


class _RnnBuilder(_CellBuilder):
    """Adds the stages of one graph.rnn to a primitive."""

    PREFIX = "rnn"
    GATES = 1

    def step_state(self, step: int, xw: SSAValue, h: HiddenReader | None) -> SSAValue:
        """h_s = f(clip(xw + h_{s-1} R^T)), masked."""
        z = None
        if h is not None:
            z = self.recurrent_product(f"rnn_gates_{step}", h, 0, self.hidden)

        def body(s, idx):
            d, b, j = idx
            total = self.projected(s, step, xw, idx, 0)
            if z is not None:
                total = s.add(total, s.read(z, idx))
            old = None if h is None else h(s, idx)
            return self.mask(s, idx, step, self.activate(s, d, 0, total), old)

        return self.pb.compute(f"rnn_state_{step}", self.state_shape, body, self.dtype)


class _GruBuilder(_CellBuilder):
    """Adds the stages of one graph.gru to a primitive."""

    PREFIX = "gru"
    GATES = graph.GRU_GATES

    def __init__(self, pb: PrimitiveBuilder, op: graph.GruOp, inputs: Sequence[SSAValue]):
        super().__init__(pb, op, inputs)
        self.linear_before_reset = op.resets_after_product

    def input_bias(self, s: ScalarBuilder, bias: SSAValue, d: SSAValue, g: SSAValue) -> SSAValue:
        """Wb + Rb for z and r; Wbh for h, plus Rbh unless it is added inside the reset
        product (linear_before_reset)."""
        both = super().input_bias(s, bias, d, g)
        if not self.linear_before_reset:
            return both
        is_candidate = s.index_cmp("sge", g, s.index(GRU_H * self.hidden))
        return s.select(is_candidate, s.read(bias, [d, g]), both)

    def recurrent_candidate_bias(self, s: ScalarBuilder, d: SSAValue, j: SSAValue) -> SSAValue:
        """Rbh[j] (0 without a bias)."""
        bias = self.operands.get("bias")
        if bias is None:
            return s.const(0.0)
        offset = (self.GATES + GRU_H) * self.hidden
        return s.read(bias, [d, s.index_add(j, s.index(offset))])

    def step_state(self, step: int, xw: SSAValue, h: HiddenReader | None) -> SSAValue:
        """h_s = (1 - u) . n + u . h_{s-1}, masked (see the module docstring)."""
        hidden = self.hidden
        gates = None
        if h is not None:
            rows = (3 if self.linear_before_reset else 2) * hidden
            gates = self.recurrent_product(f"gru_gates_{step}", h, 0, rows)

        def gate(s, idx, block):
            """clip-free pre-activation of gate `block` (z, r or, with
            linear_before_reset, h's recurrent product)."""
            value = self.projected(s, step, xw, idx, block)
            if gates is not None:
                d, b, j = idx
                value = s.add(value, s.read(gates, [d, b, self.gate_offset(s, block, j)]))
            return value

        candidate_product = None
        if h is not None and not self.linear_before_reset:

            def reset_times_h(s, idx):
                reset = self.activate(s, idx[0], 0, gate(s, idx, GRU_R))
                return s.mul(reset, h(s, idx))

            reset_h = self.pb.compute(
                f"gru_reset_{step}", self.state_shape, reset_times_h, self.dtype
            )
            candidate_product = self.recurrent_product(
                f"gru_candidate_{step}",
                lambda s, idx: s.read(reset_h, idx),
                GRU_H * hidden,
                hidden,
            )

        def body(s, idx):
            d, b, j = idx
            update = self.activate(s, d, 0, gate(s, idx, GRU_Z))
            pre_n = self.projected(s, step, xw, idx, GRU_H)
            if self.linear_before_reset:
                reset = self.activate(s, d, 0, gate(s, idx, GRU_R))
                product = self.recurrent_candidate_bias(s, d, j)
                if gates is not None:
                    product = s.add(
                        s.read(gates, [d, b, self.gate_offset(s, GRU_H, j)]), product
                    )
                pre_n = s.add(pre_n, s.mul(reset, product))
            elif candidate_product is not None:
                pre_n = s.add(pre_n, s.read(candidate_product, idx))
            n = self.activate(s, d, 1, pre_n)
            old = None if h is None else h(s, idx)
            if old is None:
                new = s.mul(s.sub(s.const(1.0), update), n)
            else:
                # (1 - u) . n + u . h = n + u . (h - n)
                new = s.add(n, s.mul(update, s.sub(old, n)))
            return self.mask(s, idx, step, new, old)

        return self.pb.compute(f"gru_state_{step}", self.state_shape, body, self.dtype)


@strategy(graph.LstmOp)
def lstm(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """The LSTM unrolled over time: an input projection, two stages a step, outputs."""
    assert isinstance(op, graph.LstmOp)
    return _LstmBuilder(pb, op, inputs).build()


@strategy(graph.GruOp)
def gru(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """The GRU unrolled over time: an input projection, two or four stages a step,
    outputs."""
    assert isinstance(op, graph.GruOp)
    return _GruBuilder(pb, op, inputs).build()


@strategy(graph.RnnOp)
def rnn(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """The simple RNN unrolled over time: an input projection, two stages a step,
    outputs."""
    assert isinstance(op, graph.RnnOp)
    return _RnnBuilder(pb, op, inputs).build()
