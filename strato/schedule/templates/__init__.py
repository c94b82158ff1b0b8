"""Default schedule templates, one module per kind of operator (see base.py).

    dense.py              dense, matmul, batched matmul (tensorized GEMM micro-kernel)
    conv2d.py             conv2d NCHW (output channels x columns register tile)
    conv2d_nchwc.py       conv2d NCHW{c} (channel block as lanes)
    depthwise_conv2d.py   depthwise / grouped conv2d NCHW
    conv2d_transpose.py   conv2d-transpose
    pooling.py            max / average / global pooling
    lstm.py               LSTM gate matmuls
    reduction.py          softmax, layer-norm, mean and any other reduction
    injective.py          elementwise and injective stages, fused chains

The first template (in this order) whose `matches` accepts a stage schedules it.
"""

from __future__ import annotations

from functools import cache

from strato.schedule.templates.base import (
    Knob,
    Template,
    register_template,
    registered_templates,
    template_for,
)


@cache
def load_templates() -> None:
    from strato.schedule.templates import (  # noqa: F401  (each registers itself)
        conv2d,
        conv2d_nchwc,
        conv2d_transpose,
        dense,
        depthwise_conv2d,
        injective,
        lstm,
        pooling,
    )
    from strato.schedule.templates.reduction import REDUCTION

    register_template(REDUCTION)  # last: every reduction the others leave


__all__ = ["Knob", "Template", "load_templates", "registered_templates", "template_for"]
