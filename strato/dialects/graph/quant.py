"""Quantized tensors: linear (de)quantization and integer convolution / dense layers.

A quantized tensor holds 8-bit integers q that stand for the reals (q - zero_point) *
scale, per tensor or per channel (a 1-D scale along `axis`). The importer emits
`graph.quantize` / `graph.dequantize` for ONNX's QuantizeLinear / DequantizeLinear when
they are per tensor or per axis on 8-bit integers (int32 for a dequantized bias), and
`graph-fold-qdq` turns the dequantize -> conv/dense -> quantize groups of a QDQ model
into integer arithmetic:

    %q = graph.quantize %x, %s, %z axis 1 : (tensor<1x8x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8x4x4xui8>
    %f = graph.dequantize %q, %s, %z axis 1 : (tensor<1x8x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8x4x4xf32>
    %a = graph.qconv %q, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 pad_value 3 layout "NCHW" : (tensor<1x8x4x4xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>) -> tensor<1x16x4x4xi32>
    %d = graph.qdense %q2, %w2, %b2 : (tensor<1x64xui8>, tensor<10x64xi8>, tensor<10xi32>) -> tensor<1x10xi32>
    %y = graph.requantize %a, %m, %z2 axis 1 : (tensor<1x16x4x4xi32>, tensor<16xf32>, tensor<ui8>) -> tensor<1x16x4x4xui8>

Each op computes exactly what ONNX's reference operators compute, intermediate types
included:

- quantize: clip(round_half_even(x / scale) + zero_point, lo, hi) in f32, as the
  integer type (QuantizeLinear);
- dequantize: (f32(q) - f32(zero_point)) * scale in f32; for int32 q, f32(q) minus the
  zero point and times the scale in f64, rounded to f32 (numpy's promotion in
  DequantizeLinear);
- qconv / qdense: the int32 sum of products of the integers (the input padded with
  `pad_value`, the quantized zero of the input), plus the int32 bias: integer
  convolution without zero points (graph-fold-qdq folds the zero point of the input
  into the bias with the sums of the weights);
- requantize: round_half_even(f32(acc) * multiplier) + zero_point, clamped, as
  onnxruntime's integer kernels requantize (or, with `f64`, in f64 as ONNX's reference
  QLinearConv does), the multiplier being x_scale * w_scale / y_scale in f32.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    AnyTensor,
    GraphOp,
    PatternKind,
    element_type,
    static_shape,
)
from strato.dialects.graph.nn import (
    WindowOp,
    _group_sizes,
    _tap_window,
    _window_or_defaults,
    conv_output_shape,
    conv_properties,
    verify_bias,
)
from strato.dialects.tensor_types import numpy_dtype


def is_int(type_, width: int | None = None, signed: bool | None = None) -> bool:
    """Whether `type_` is an integer type (of `width` bits, signed or unsigned)."""
    if not isinstance(type_, IntegerType):
        return False
    if width is not None and type_.width.data != width:
        return False
    if signed is None:
        return True
    unsigned = type_.signedness.data == Signedness.UNSIGNED
    return unsigned != signed


def is_int8(type_) -> bool:
    """int8 or uint8 (a quantized 8-bit type; signless i8 counts as int8)."""
    return is_int(type_, 8)


def integer_range(type_) -> tuple[int, int]:
    info = np.iinfo(numpy_dtype(type_))
    return int(info.min), int(info.max)


def _f32_scale(op: GraphOp, scale: SSAValue, what: str) -> None:
    from xdsl.dialects.builtin import Float32Type

    if not isinstance(element_type(scale), Float32Type):
        raise VerifyException(f"'{op.name}' {what} must be f32, got {scale.type}")


def _check_per_axis(op: GraphOp, value: SSAValue, shape: Sequence[int], axis: int, what: str) -> None:
    """`value` is a scalar (rank 0) or one entry per element of `shape` along `axis`."""
    vshape = static_shape(value)
    if len(vshape) == 0:
        return
    if not 0 <= axis < len(shape):
        raise VerifyException(f"'{op.name}' axis {axis} is out of range for rank {len(shape)}")
    if len(vshape) != 1 or vshape[0] != shape[axis]:
        raise VerifyException(
            f"'{op.name}' {what} must be a scalar or have shape [{shape[axis]}] "
            f"(axis {axis}), got {list(vshape)}"
        )


def along_axis(value: np.ndarray, rank: int, axis: int) -> np.ndarray:
    """A scalar as it is, a 1-D array reshaped to broadcast along `axis` of a rank-`rank` array."""
    if value.ndim == 0:
        return value
    dims = [1] * rank
    dims[axis] = value.shape[0]
    return value.reshape(dims)


class _AxisOp(GraphOp):
    """quantize, dequantize and requantize: a tensor, a scale (or multiplier) and a zero
    point, each a scalar or one value per index of `axis`."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.BROADCAST
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    zero_point = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $scale `,` $zero_point `axis` $axis attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input, scale, zero_point, result_element, axis: int = 1):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input, scale, zero_point],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[TensorType(result_element, static_shape(input))],
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        _check_per_axis(self, self.scale, shape, self.axis_value, "scale")
        _check_per_axis(self, self.zero_point, shape, self.axis_value, "zero point")
        return shape

    def _broadcast(self, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rank = inputs[0].ndim
        return (
            along_axis(np.asarray(inputs[1]), rank, self.axis_value),
            along_axis(np.asarray(inputs[2]), rank, self.axis_value),
        )


@irdl_op_definition
class QuantizeOp(_AxisOp):
    """f32 -> int8 / uint8: clip(round_half_even(x / scale) + zero_point) (ONNX
    QuantizeLinear), the zero point's type the result's."""

    name = "graph.quantize"

    def verify_(self) -> None:
        super().verify_()
        _f32_scale(self, self.input, "input")
        _f32_scale(self, self.scale, "scale")
        if not is_int8(element_type(self.result)) or element_type(self.zero_point) != element_type(self.result):
            raise VerifyException(
                f"'{self.name}' result and zero point must be one 8-bit integer type, got "
                f"{element_type(self.zero_point)} and {element_type(self.result)}"
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        scale, zero = self._broadcast(inputs)
        x = inputs[0].astype(np.float32)
        value = np.rint(x / scale.astype(np.float32)) + zero.astype(np.float32)
        low, high = integer_range(element_type(self.result))
        return [np.clip(value, low, high).astype(numpy_dtype(element_type(self.result)))]


@irdl_op_definition
class DequantizeOp(_AxisOp):
    """int8 / uint8 (or int32) -> f32: (q - zero_point) * scale (ONNX DequantizeLinear)."""

    name = "graph.dequantize"

    def verify_(self) -> None:
        super().verify_()
        _f32_scale(self, self.scale, "scale")
        _f32_scale(self, self.result, "result")
        x = element_type(self.input)
        if not (is_int8(x) or is_int(x, 32, True)) or element_type(self.zero_point) != x:
            raise VerifyException(
                f"'{self.name}' input and zero point must be one 8-bit integer type or "
                f"int32, got {x} and {element_type(self.zero_point)}"
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        scale, zero = self._broadcast(inputs)
        value = inputs[0].astype(np.float32)
        wide = np.float64 if inputs[0].dtype.itemsize == 4 else np.float32
        value = value.astype(wide) - zero.astype(wide)
        return [(value * scale.astype(wide)).astype(np.float32)]


@irdl_op_definition
class RequantizeOp(_AxisOp):
    """int32 -> int8 / uint8 by an f32 multiplier (x_scale * w_scale / y_scale):

    - by default as onnxruntime's integer kernels requantize (MLAS):
      round_half_even(f32(acc) * multiplier), plus the zero point, clamped;
    - with `f64`, as ONNX's reference QLinearConv / QLinearMatMul compute:
      round_half_even(f64(acc) * f64(multiplier) + zero_point), clamped.

    The two differ only where the f32 product rounds across a half.

        %y = graph.requantize %acc, %m, %z axis 1 f64 : (tensor<1x8x4x4xi32>, tensor<8xf32>, tensor<ui8>) -> tensor<1x8x4x4xui8>
    """

    name = "graph.requantize"

    f64 = opt_prop_def(UnitAttr)

    assembly_format = (
        "$input `,` $scale `,` $zero_point `axis` $axis (`f64` $f64^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input, scale, zero_point, result_element, axis: int = 1, *, wide: bool = False):
        super().__init__(input, scale, zero_point, result_element, axis)
        if wide:
            self.properties["f64"] = UnitAttr()

    @property
    def wide(self) -> bool:
        return self.f64 is not None

    def verify_(self) -> None:
        super().verify_()
        _f32_scale(self, self.scale, "multiplier")
        if not is_int(element_type(self.input), 32, True):
            raise VerifyException(f"'{self.name}' input must be int32, got {self.input.type}")
        if not is_int8(element_type(self.result)) or element_type(self.zero_point) != element_type(self.result):
            raise VerifyException(
                f"'{self.name}' result and zero point must be one 8-bit integer type, got "
                f"{element_type(self.zero_point)} and {element_type(self.result)}"
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        multiplier, zero = self._broadcast(inputs)
        if self.wide:
            value = inputs[0].astype(np.float64) * multiplier.astype(np.float64)
            value = np.rint(value + zero.astype(np.float64))
        else:
            value = np.rint(inputs[0].astype(np.float32) * multiplier.astype(np.float32))
            value = value.astype(np.float64) + zero.astype(np.float64)
        low, high = integer_range(element_type(self.result))
        return [np.clip(value, low, high).astype(numpy_dtype(element_type(self.result)))]


PACK = 4
"""Input channels (conv) / reduction elements (dense) side by side in a packed weight:
the bytes one int8 dot-product step multiplies per output."""


def _oihw_of_packed(shape: Sequence[int]) -> tuple[int, ...]:
    if len(shape) != 5:
        return tuple(shape)
    kh, kw, cg, m, q = shape
    return (m, cg * q, kh, kw)


def pack_conv_weight(w: np.ndarray) -> np.ndarray:
    """OIHW [M, C, KH, KW] -> [KH, KW, C / 4, M, 4] (C a multiple of 4)."""
    m, c, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(m, c // PACK, PACK, kh, kw).transpose(3, 4, 1, 0, 2))


def unpack_conv_weight(w: np.ndarray) -> np.ndarray:
    kh, kw, cg, m, q = w.shape
    return np.ascontiguousarray(w.transpose(3, 2, 4, 0, 1).reshape(m, cg * q, kh, kw))


def pack_dense_weight(w: np.ndarray) -> np.ndarray:
    """[N, K] -> [K / 4, N, 4] (K a multiple of 4)."""
    n, k = w.shape
    return np.ascontiguousarray(w.reshape(n, k // PACK, PACK).transpose(1, 0, 2))


def unpack_dense_weight(w: np.ndarray) -> np.ndarray:
    kg, n, q = w.shape
    return np.ascontiguousarray(w.transpose(1, 0, 2).reshape(n, kg * q))


def _check_integer_product(op: GraphOp, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> None:
    if not is_int8(element_type(x)) or not is_int8(element_type(w)):
        raise VerifyException(
            f"'{op.name}' input and weight must be 8-bit integers, got {x.type} and {w.type}"
        )
    if bias is not None and not is_int(element_type(bias), 32, True):
        raise VerifyException(f"'{op.name}' bias must be int32, got {bias.type}")
    if not is_int(element_type(op.results[0]), 32, True):
        raise VerifyException(f"'{op.name}' result must be int32, got {op.results[0].type}")


@irdl_op_definition
class QConvOp(WindowOp):
    """2-d integer convolution: int8 / uint8 input [N, C, H, W] and weight
    [M, C / groups, KH, KW], int32 bias [M], int32 result:

        result[n, m, o..] = bias[m] + sum_{c, k..} x'[n, g*Cg + c, o*s + k*d ..] * w[m, c, k..]

    x' the input padded with `pad_value` (the integer that stands for 0.0), every
    product and sum exact in int32.
    """

    name = "graph.qconv"
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    weight = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    groups = prop_def(IntegerAttr[I64])
    pad_value = prop_def(IntegerAttr[I64])
    packed = opt_prop_def(UnitAttr)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `strides` $strides `padding` $padding "
        "`dilations` $dilations `groups` $groups `pad_value` $pad_value `layout` $layout "
        "(`packed` $packed^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input,
        weight,
        bias=None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int = 1,
        pad_value: int = 0,
        packed: bool = False,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        x, w = static_shape(input), static_shape(weight)
        if packed:
            w = _oihw_of_packed(w)
        strides, padding, dilations = _window_or_defaults(2, strides, padding, dilations)
        shape = conv_output_shape(x, w, strides, padding, dilations)
        properties = conv_properties(strides, padding, dilations, groups, "NCHW", "OIHW")
        del properties["kernel_layout"]
        properties["pad_value"] = IntegerAttr(pad_value, i64)
        if packed:
            properties["packed"] = UnitAttr()
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            properties=properties,
            result_types=[TensorType(IntegerType(32), shape)],
        )

    @property
    def group_count(self) -> int:
        return self.groups.value.data

    @property
    def pad_integer(self) -> int:
        return self.pad_value.value.data

    @property
    def is_packed(self) -> bool:
        return self.packed is not None

    @property
    def weight_shape(self) -> tuple[int, ...]:
        """The weight's shape as OIHW [M, C / groups, KH, KW], packed or not."""
        w = static_shape(self.weight)
        return _oihw_of_packed(w) if self.is_packed else w

    def verify_(self) -> None:
        super().verify_()
        _check_integer_product(self, self.input, self.weight, self.bias)
        low, high = integer_range(element_type(self.input))
        if not low <= self.pad_integer <= high:
            raise VerifyException(
                f"'{self.name}' pad_value {self.pad_integer} is outside the input type's "
                f"range [{low}, {high}]"
            )

    def infer_shape(self) -> tuple[int, ...] | None:
        x = self._check_input()
        w = static_shape(self.weight)
        if self.is_packed:
            if len(w) != 5 or w[4] != PACK or self.group_count != 1:
                raise VerifyException(
                    f"'{self.name}' packed weight must be [KH, KW, C/{PACK}, M, {PACK}] "
                    f"with one group, got {list(w)}"
                )
            w = _oihw_of_packed(w)
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(f"'{self.name}' takes a rank-4 input and weight (NCHW, OIHW)")
        self._check_window_attributes(2)
        groups = self.group_count
        _group_sizes(self.name, x[1], w[0], groups)
        if w[1] != x[1] // groups:
            raise VerifyException(
                f"'{self.name}' weight has {w[1]} input channels per group, expected "
                f"{x[1] // groups} ({x[1]} channels in {groups} groups)"
            )
        verify_bias(self, self.bias, w[0])
        shape = conv_output_shape(
            x, w, self.stride_values, self.padding.get_values(), self.dilation_values
        )
        self._check_output_sizes(shape[2:])
        return shape

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        weight = unpack_conv_weight(inputs[1]) if self.is_packed else inputs[1]
        x, w = inputs[0].astype(np.int64), weight.astype(np.int64)
        groups = self.group_count
        out_shape = static_shape(self.result)
        padded = np.pad(
            x,
            [(0, 0), (0, 0), *zip(self.pads_begin, self.pads_end)],
            constant_values=self.pad_integer,
        )
        n, m = out_shape[0], out_shape[1]
        cg, mg = x.shape[1] // groups, m // groups
        grouped = padded.reshape(n, groups, cg, *padded.shape[2:])
        kernels = w.reshape(groups, mg, cg, *w.shape[2:])
        acc = np.zeros((n, groups, mg, *out_shape[2:]), np.int64)
        for taps in itertools.product(*(range(k) for k in w.shape[2:])):
            window = _tap_window(taps, out_shape[2:], self.stride_values, self.dilation_values)
            patch = grouped[(slice(None), slice(None), slice(None), *window)]
            acc += np.einsum("ngc...,gmc->ngm...", patch, kernels[(..., *taps)])
        out = acc.reshape(out_shape)
        if len(inputs) > 2:
            out = out + inputs[2].astype(np.int64).reshape(m, 1, 1)
        return [out.astype(np.int32)]


@irdl_op_definition
class QDenseOp(GraphOp):
    """Integer fully connected layer: int8 / uint8 input [.., K] times int8 / uint8
    weight [N, K] transposed, plus the int32 bias [N], as int32:
    result[.., n] = sum_k x[.., k] * w[n, k] + bias[n]."""

    name = "graph.qdense"
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    input = operand_def(AnyTensor)
    weight = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)

    packed = opt_prop_def(UnitAttr)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? (`packed` $packed^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input, weight, bias=None, *, packed: bool = False):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        w = static_shape(weight)
        outputs = w[1] if packed else w[0]
        shape = (*static_shape(input)[:-1], outputs)
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[TensorType(IntegerType(32), shape)],
            properties={"packed": UnitAttr()} if packed else {},
        )

    @property
    def is_packed(self) -> bool:
        return self.packed is not None

    @property
    def weight_shape(self) -> tuple[int, ...]:
        """The weight's shape as [N, K], packed or not."""
        w = static_shape(self.weight)
        return (w[1], w[0] * w[2]) if self.is_packed and len(w) == 3 else w

    def verify_(self) -> None:
        super().verify_()
        _check_integer_product(self, self.input, self.weight, self.bias)

    def infer_shape(self) -> tuple[int, ...] | None:
        x, w = static_shape(self.input), static_shape(self.weight)
        if self.is_packed:
            if len(w) != 3 or w[2] != PACK:
                raise VerifyException(
                    f"'{self.name}' packed weight must be [K/{PACK}, N, {PACK}], got {list(w)}"
                )
            w = self.weight_shape
        if len(x) < 1 or len(w) != 2 or x[-1] != w[1]:
            raise VerifyException(
                f"'{self.name}' multiplies [.., K] by [N, K], got {list(x)} and {list(w)}"
            )
        if self.bias is not None and static_shape(self.bias) != (w[0],):
            raise VerifyException(
                f"'{self.name}' bias must have shape [{w[0]}], got {list(static_shape(self.bias))}"
            )
        return (*x[:-1], w[0])

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        weight = unpack_dense_weight(inputs[1]) if self.is_packed else inputs[1]
        out = np.matmul(inputs[0].astype(np.int64), weight.astype(np.int64).T)
        if len(inputs) > 2:
            out = out + inputs[2].astype(np.int64)
        return [out.astype(np.int32)]


def folded_bias(bias: np.ndarray | None, weights: np.ndarray, zero: int) -> np.ndarray | None:
    """The int32 bias of an integer product whose input zero point `zero` is folded in:
    bias - zero * (the sum of each output's weights, `weights` [outputs, ..]), since
    sum (x - zero) w = sum x w - zero sum w; None when it leaves int32."""
    sums = weights.reshape(weights.shape[0], -1).astype(np.int64).sum(axis=1)
    base = np.zeros(weights.shape[0], np.int64) if bias is None else bias.astype(np.int64)
    folded = base - zero * sums
    info = np.iinfo(np.int32)
    if folded.min(initial=0) < info.min or folded.max(initial=0) > info.max:
        return None
    return folded.astype(np.int32)


def sums_fit_int32(depth: int, x_type, w_type) -> bool:
    """Whether every sum of `depth` products of the two 8-bit types fits int32."""
    x_low, x_high = integer_range(x_type)
    w_low, w_high = integer_range(w_type)
    largest = max(abs(x_low), x_high) * max(abs(w_low), w_high)
    return depth * largest < 2**31


OPS = (QuantizeOp, DequantizeOp, RequantizeOp, QConvOp, QDenseOp)

__all__ = [
    "DequantizeOp",
    "QConvOp",
    "QDenseOp",
    "QuantizeOp",
    "RequantizeOp",
    "along_axis",
    "folded_bias",
    "integer_range",
    "is_int8",
    "pack_conv_weight",
    "pack_dense_weight",
    "sums_fit_int32",
]
