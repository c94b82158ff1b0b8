"""The table of ONNX operators strato imports: op_type -> converter.

Adding an operator is a converter function in the `convert_<family>.py` module of its
family plus one line here. The importer checks every node against this table before it
converts anything, so an unsupported operator is reported up front.
"""

from __future__ import annotations

from strato.frontends.onnx.conversion import Converter
from strato.frontends.onnx.convert_constant import convert_constant
from strato.frontends.onnx.convert_elementwise import convert_add, convert_mul, convert_relu
from strato.frontends.onnx.convert_linear import convert_gemm, convert_matmul
from strato.frontends.onnx.convert_rnn import convert_lstm

ONNX_CONVERTERS: dict[str, Converter] = {
    "Add": convert_add,
    "Constant": convert_constant,
    "Gemm": convert_gemm,
    "LSTM": convert_lstm,
    "MatMul": convert_matmul,
    "Mul": convert_mul,
    "Relu": convert_relu,
}


def supported_ops() -> list[str]:
    """The ONNX op types strato can import, sorted."""
    return sorted(ONNX_CONVERTERS)
