"""The table of ONNX operators strato imports: op_type -> converter.

Adding an operator is a converter function in the `convert_<family>.py` module of its
family plus one line here. The importer checks every node against this table before it
converts anything, so an unsupported operator is reported up front.
"""

from __future__ import annotations

from strato.frontends.onnx.conversion import Converter
from strato.frontends.onnx.convert_constant import (
    convert_constant,
    convert_constant_of_shape,
    convert_range,
)
from strato.frontends.onnx.convert_elementwise import (
    convert_abs,
    convert_add,
    convert_clip,
    convert_div,
    convert_erf,
    convert_exp,
    convert_gelu,
    convert_leaky_relu,
    convert_log,
    convert_max,
    convert_min,
    convert_mul,
    convert_neg,
    convert_pow,
    convert_relu,
    convert_sigmoid,
    convert_sqrt,
    convert_sub,
    convert_sum,
    convert_tanh,
)
from strato.frontends.onnx.convert_layout import (
    convert_concat,
    convert_dropout,
    convert_expand,
    convert_flatten,
    convert_depth_to_space,
    convert_gather,
    convert_gather_elements,
    convert_identity,
    convert_pad,
    convert_reshape,
    convert_scatter_nd,
    convert_shape,
    convert_slice,
    convert_space_to_depth,
    convert_split,
    convert_squeeze,
    convert_tile,
    convert_transpose,
    convert_unsqueeze,
)
from strato.frontends.onnx.convert_linear import convert_gemm, convert_matmul
from strato.frontends.onnx.convert_logic import convert_cast, convert_cast_like, convert_equal, convert_where
from strato.frontends.onnx.convert_nn import (
    convert_average_pool,
    convert_conv,
    convert_conv_transpose,
    convert_global_average_pool,
    convert_max_pool,
)
from strato.frontends.onnx.convert_normalization import (
    convert_batch_normalization,
    convert_layer_normalization,
    convert_softmax,
)
from strato.frontends.onnx.convert_reduce import (
    convert_arg_max,
    convert_arg_min,
    convert_reduce_l1,
    convert_reduce_l2,
    convert_reduce_log_sum_exp,
    convert_reduce_max,
    convert_reduce_mean,
    convert_reduce_min,
    convert_reduce_prod,
    convert_reduce_sum,
    convert_reduce_sum_square,
)
from strato.frontends.onnx.convert_rnn import convert_lstm

ONNX_CONVERTERS: dict[str, Converter] = {
    "Abs": convert_abs,
    "Add": convert_add,
    "ArgMax": convert_arg_max,
    "ArgMin": convert_arg_min,
    "AveragePool": convert_average_pool,
    "BatchNormalization": convert_batch_normalization,
    "Cast": convert_cast,
    "CastLike": convert_cast_like,
    "Clip": convert_clip,
    "Concat": convert_concat,
    "Constant": convert_constant,
    "ConstantOfShape": convert_constant_of_shape,
    "Conv": convert_conv,
    "ConvTranspose": convert_conv_transpose,
    "DepthToSpace": convert_depth_to_space,
    "Div": convert_div,
    "Dropout": convert_dropout,
    "Erf": convert_erf,
    "Equal": convert_equal,
    "Exp": convert_exp,
    "Expand": convert_expand,
    "Flatten": convert_flatten,
    "Gather": convert_gather,
    "GatherElements": convert_gather_elements,
    "Gelu": convert_gelu,
    "Gemm": convert_gemm,
    "GlobalAveragePool": convert_global_average_pool,
    "Identity": convert_identity,
    "LSTM": convert_lstm,
    "LayerNormalization": convert_layer_normalization,
    "LeakyRelu": convert_leaky_relu,
    "Log": convert_log,
    "MatMul": convert_matmul,
    "Max": convert_max,
    "MaxPool": convert_max_pool,
    "Min": convert_min,
    "Mul": convert_mul,
    "Neg": convert_neg,
    "Pad": convert_pad,
    "Pow": convert_pow,
    "Range": convert_range,
    "ReduceL1": convert_reduce_l1,
    "ReduceL2": convert_reduce_l2,
    "ReduceLogSumExp": convert_reduce_log_sum_exp,
    "ReduceMax": convert_reduce_max,
    "ReduceMean": convert_reduce_mean,
    "ReduceMin": convert_reduce_min,
    "ReduceProd": convert_reduce_prod,
    "ReduceSum": convert_reduce_sum,
    "ReduceSumSquare": convert_reduce_sum_square,
    "Relu": convert_relu,
    "Reshape": convert_reshape,
    "ScatterND": convert_scatter_nd,
    "Shape": convert_shape,
    "Sigmoid": convert_sigmoid,
    "Slice": convert_slice,
    "Softmax": convert_softmax,
    "SpaceToDepth": convert_space_to_depth,
    "Split": convert_split,
    "Sqrt": convert_sqrt,
    "Squeeze": convert_squeeze,
    "Sub": convert_sub,
    "Sum": convert_sum,
    "Tanh": convert_tanh,
    "Tile": convert_tile,
    "Transpose": convert_transpose,
    "Unsqueeze": convert_unsqueeze,
    "Where": convert_where,
}


def supported_ops() -> list[str]:
    """The ONNX op types strato can import, sorted."""
    return sorted(ONNX_CONVERTERS)
