"""The CPU's schedule templates, one module per kind of operator (see
strato.schedule.templates for what a template is).

    dense.py              dense, matmul, batched matmul (tensorized GEMM micro-kernel)
    dense_int8.py         integer dense (u8 x s8 -> i32, tensorized cpu.dot_i8)
    gemv.py               one-row products (matrix-vector)
    conv2d.py             conv2d NCHW (output channels x columns register tile)
    conv2d_nchwc.py       conv2d NCHW{c} (channel block as lanes), depthwise ones too
    conv3d.py             conv3d NCDHW (columns x output-channel vectors register tile)
    conv2d_int8.py        integer conv2d (u8 x s8 -> i32, tensorized cpu.dot_i8)
    depthwise_conv2d_int8.py  integer depthwise conv2d (i32 register tile over columns)
    depthwise_conv2d.py   depthwise / grouped conv2d NCHW
    conv2d_transpose.py   conv2d-transpose
    pooling.py            max / average / global pooling
    lstm.py               LSTM gate matmuls
    reduction.py          softmax, layer-norm, mean and any other reduction
    winograd.py           Winograd convolution: tile transforms, products over positions
    injective.py          elementwise and injective stages, fused chains

The first template of `CPU_TEMPLATES` (after those plugins register for the llvm target)
whose `matches` accepts a stage schedules it.
"""

from __future__ import annotations

from strato.schedule.templates.base import Template
from strato.targets.llvm.templates.conv2d import CONV2D
from strato.targets.llvm.templates.conv2d_int8 import CONV2D_INT8
from strato.targets.llvm.templates.conv2d_nchwc import (
    CONV2D_NCHWC,
    DEPTHWISE_CONV2D_NCHWC,
)
from strato.targets.llvm.templates.conv2d_transpose import CONV2D_TRANSPOSE
from strato.targets.llvm.templates.conv3d import CONV3D
from strato.targets.llvm.templates.dense import DENSE
from strato.targets.llvm.templates.dense_int8 import DENSE_INT8
from strato.targets.llvm.templates.depthwise_conv2d import DEPTHWISE_CONV2D
from strato.targets.llvm.templates.depthwise_conv2d_int8 import DEPTHWISE_CONV2D_INT8
from strato.targets.llvm.templates.injective import INJECTIVE
from strato.targets.llvm.templates.lstm import LSTM_GATES
from strato.targets.llvm.templates.pooling import POOLING
from strato.targets.llvm.templates.reduction import REDUCTION
from strato.targets.llvm.templates.winograd import (
    WINOGRAD_INPUT,
    WINOGRAD_OUTPUT,
    WINOGRAD_PRODUCT,
)

CPU_TEMPLATES: tuple[Template, ...] = (
    WINOGRAD_INPUT,
    WINOGRAD_PRODUCT,
    WINOGRAD_OUTPUT,
    CONV3D,  # before CONV2D, which takes any regular convolution
    CONV2D,
    DEPTHWISE_CONV2D_INT8,  # before CONV2D_INT8, which takes any integer conv2d
    CONV2D_INT8,
    DEPTHWISE_CONV2D_NCHWC,  # before CONV2D_NCHWC, which takes any blocked conv2d
    CONV2D_NCHWC,
    CONV2D_TRANSPOSE,
    DENSE,
    DENSE_INT8,
    DEPTHWISE_CONV2D,
    INJECTIVE,
    LSTM_GATES,
    POOLING,
    REDUCTION,  # last: every reduction the others leave
)
"""The CPU's templates in the order they are tried."""

__all__ = ["CPU_TEMPLATES"]
