"""LSTM gate matmuls (`lstm_input`, `lstm_gates_<t>`): batch x 4H gate pre-activations,
a reduction over the input or hidden size. The gate axis (contiguous in the output and in
the weights' rows) is vectorized inside the reduction when the weights are laid out
along it; else the reduction is left to LLVM's vectorizer.

Knobs: `vector_width`."""

from __future__ import annotations

from strato.schedule.templates.base import (
    Knob,
    Template,
    host_lanes,
    is_reduction,
    register_template,
    stage_kind,
)
from strato.schedule.templates.reduction import schedule_reduction

LSTM_GATES = register_template(
    Template(
        "lstm_gates",
        (Knob("vector_width", (1, 4, 8, 16, 32), host_lanes),),
        lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) in ("lstm_gates", "lstm_input"),
        schedule_reduction,
    )
)
