"""The table of ONNX operators strato imports: op_type -> converter.

Adding an operator is a converter function in the `convert_<family>.py` module of its
family plus one line here. The importer checks every node against this table before it
converts anything, so an unsupported operator is reported up front.
"""

from __future__ import annotations

from strato.frontends.onnx.conversion import Converter
from strato.frontends.onnx.convert_constant import convert_constant
from strato.frontends.onnx.convert_elementwise import convert_add, convert_mul, convert_relu
from strato.frontends.onnx.convert_layout import (
    convert_concat,
    convert_dropout,
    convert_expand,
    convert_flatten,
    convert_gather,
    convert_identity,
    convert_pad,
    convert_reshape,
    convert_shape,
    convert_slice,
    convert_split,
    convert_squeeze,
    convert_transpose,
    convert_unsqueeze,
)
from strato.frontends.onnx.convert_linear import convert_gemm, convert_matmul
from strato.frontends.onnx.convert_nn import (
    convert_average_pool,
    convert_conv,
    convert_conv_transpose,
    convert_global_average_pool,
    convert_max_pool,
)
from strato.frontends.onnx.convert_reduce import (
    convert_reduce_max,
    convert_reduce_mean,
    convert_reduce_sum,
)
from strato.frontends.onnx.convert_rnn import convert_lstm

ONNX_CONVERTERS: dict[str, Converter] = {
    "Add": convert_add,
    "AveragePool": convert_average_pool,
    "Concat": convert_concat,
    "Constant": convert_constant,
    "Conv": convert_conv,
    "ConvTranspose": convert_conv_transpose,
    "Dropout": convert_dropout,
    "Expand": convert_expand,
    "Flatten": convert_flatten,
    "Gather": convert_gather,
    "Gemm": convert_gemm,
    "GlobalAveragePool": convert_global_average_pool,
    "Identity": convert_identity,
    "LSTM": convert_lstm,
    "MatMul": convert_matmul,
    "MaxPool": convert_max_pool,
    "Mul": convert_mul,
    "Pad": convert_pad,
    "ReduceMax": convert_reduce_max,
    "ReduceMean": convert_reduce_mean,
    "ReduceSum": convert_reduce_sum,
    "Relu": convert_relu,
    "Reshape": convert_reshape,
    "Shape": convert_shape,
    "Slice": convert_slice,
    "Split": convert_split,
    "Squeeze": convert_squeeze,
    "Transpose": convert_transpose,
    "Unsqueeze": convert_unsqueeze,
}


def supported_ops() -> list[str]:
    """The ONNX op types strato can import, sorted."""
    return sorted(ONNX_CONVERTERS)
