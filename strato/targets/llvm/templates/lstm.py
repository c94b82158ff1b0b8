"""Recurrent layers' gate matmuls (LSTM, GRU, RNN): the input projection
(`gru_input`, `rnn_input`, every step at once; `lstm_input` is the dense template's,
registered first) and each step's products by the recurrent weights (`lstm_gates_<t>`,
`gru_gates_<t>`, `gru_candidate_<t>`, `rnn_gates_<t>`): batch x gate pre-activations, a
reduction over the input or hidden size.

The gate axis (contiguous in the output) is vectorized inside the reduction when the
weights are laid out along it; as given ([d, gate, k]) they are not, and each output
is a dot product along k, contiguous in the weights' row and in h, whose `reassoc`
updates LLVM's loop vectorizer turns into vector FMAs over k with four accumulators.
For batch-1 gate products (GEMVs) that is the fast form: a gate-major copy of R made
each call, so that the gate axis vectorizes here, measured 2.7x slower on a GRU of
hidden size 256 over 35 steps (benchmarks/recurrent.py). Neither the matrix-vector
schedule (templates/gemv.py) for the gate products nor the dense template's GEMM tile
for `gru_input` is used: each of their primitives rebuilds the whole kernel, which has
several stages a step, so compile time grows with the square of the steps (that GRU,
5 steps, gemv: 14 s -> 35 s at the same speed; 35 steps, GEMM tile for gru_input:
33 s -> 552 s for 0.514 -> 0.497 ms).

Knobs: `vector_width`."""

from __future__ import annotations

from strato.schedule.templates.base import (
    Knob,
    Template,
    is_reduction,
    machine_lanes,
    stage_kind,
)
from strato.targets.llvm.templates.reduction import schedule_reduction

GATE_PRODUCTS = frozenset(
    {
        "lstm_input",
        "lstm_gates",
        "gru_input",
        "gru_gates",
        "gru_candidate",
        "rnn_input",
        "rnn_gates",
    }
)
"""The kinds (`stage_kind`) of the stages this template schedules."""

LSTM_GATES = Template(
    "lstm_gates",
    (Knob("vector_width", (1, 4, 8, 16, 32), machine_lanes),),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) in GATE_PRODUCTS,
    schedule_reduction,
)
