"""Normalization operators: softmax, layer normalization and batch normalization.

Softmax and layer normalization reduce over some axes and then rescale every element,
so each reads its input in several passes (a max or mean pass, then the element-wise
pass); batch normalization in inference form is a per-channel affine map.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    FloatTensor,
    GraphOp,
    PatternKind,
    broadcast_shapes,
    same_dims_as,
    static_shape,
)
from strato.dialects.graph.elementwise import (
    check_finite,
    parse_keyword_params,
    print_keyword_params,
)
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like

# -- reference semantics, shared with the importer's constant folding --------------


def softmax(x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) over `axes`, in f64, rounded to x's type."""
    wide = np.asarray(x, dtype=np.float64)
    axes = tuple(axes)
    if wide.size == 0:  # nothing to normalize (an empty run-time dimension)
        return np.asarray(x).copy()
    with np.errstate(all="ignore"):
        shifted = np.exp(wide - np.max(wide, axis=axes, keepdims=True))
        result = shifted / np.sum(shifted, axis=axes, keepdims=True)
    return result.astype(np.asarray(x).dtype)


def layer_norm(
    x: np.ndarray,
    axis: int,
    epsilon: float,
    scale: np.ndarray | None = None,
    bias: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(result, mean, inv_std_dev) of layer normalization over axes [axis, rank), in f64,
    rounded to x's type; mean and inv_std_dev keep the normalized axes with size 1."""
    dtype = np.asarray(x).dtype
    wide = np.asarray(x, dtype=np.float64)
    axes = tuple(range(axis, wide.ndim))
    with np.errstate(all="ignore"):
        mean = np.mean(wide, axis=axes, keepdims=True)
        variance = np.mean(np.square(wide - mean), axis=axes, keepdims=True)
        inv_std_dev = 1.0 / np.sqrt(variance + np.float64(np.float32(epsilon)))
        result = (wide - mean) * inv_std_dev
        if scale is not None:
            result = result * np.asarray(scale, dtype=np.float64)
        if bias is not None:
            result = result + np.asarray(bias, dtype=np.float64)
    return result.astype(dtype), mean.astype(dtype), inv_std_dev.astype(dtype)


def batch_norm(
    x: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    mean: np.ndarray,
    variance: np.ndarray,
    epsilon: float,
) -> np.ndarray:
    """(x - mean) / sqrt(variance + epsilon) * scale + bias per channel (axis 1), in
    f64, rounded to x's type."""
    dtype = np.asarray(x).dtype
    rank = np.asarray(x).ndim

    def channel(param: np.ndarray) -> np.ndarray:
        return np.asarray(param, dtype=np.float64).reshape((-1,) + (1,) * (rank - 2))

    with np.errstate(all="ignore"):
        std = np.sqrt(channel(variance) + np.float64(np.float32(epsilon)))
        result = (np.asarray(x, np.float64) - channel(mean)) / std * channel(scale) + channel(bias)
    return result.astype(dtype)


# -- operators ------------------------------------------------------------------


def _int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


@irdl_op_definition
class SoftmaxOp(GraphOp):
    """Softmax over `axes`: result = exp(x - m) / sum(exp(x - m)), with m the maximum and
    the sum taken over the listed axes (sorted, distinct). ONNX's Softmax normalizes over
    one axis (opset 13) or over all axes from `axis` on (older opsets).

        %p = graph.softmax %scores axes [2] : tensor<2x4x4xf32>

    Pattern kind out_elemwise_fusable: its last stage is element-wise over the input
    shape (the division by the sum), so element-wise consumers can be computed in that
    stage's loop nest; nothing fuses into its input, which is read in several passes
    (max, then exp) and would be recomputed in each.
    """

    name = "graph.softmax"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE
    RUN_TIME_DIMS: ClassVar[bool] = True

    T: ClassVar = VarConstraint("T", FloatTensor)
    input = operand_def(T)
    axes = prop_def(DenseArrayBase.constr(i64))
    result = result_def(T)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input `axes` $axes attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation, axes: Sequence[int]):
        value = SSAValue.get(input)
        super().__init__(
            operands=[value],
            properties={"axes": DenseArrayBase.from_list(i64, list(axes))},
            result_types=[value.type],
        )

    @property
    def reduced_axes(self) -> tuple[int, ...]:
        return tuple(self.axes.get_values())

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        axes = self.reduced_axes
        if not axes:
            raise VerifyException("'graph.softmax' needs at least one axis")
        if list(axes) != sorted(set(axes)):
            raise VerifyException(
                f"'graph.softmax' axes {list(axes)} must be sorted and distinct"
            )
        if axes[0] < 0 or axes[-1] >= len(shape):
            raise VerifyException(
                f"'graph.softmax' axes {list(axes)} out of range for rank {len(shape)}"
            )
        return shape

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [softmax(inputs[0], self.reduced_axes)]


def stats_shape(shape: Sequence[int], axis: int) -> tuple[int, ...]:
    """The shape of the mean and inverse standard deviation of a layer normalization:
    the normalized axes kept with size 1."""
    return (*shape[:axis], *([1] * (len(shape) - axis)))


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Layer normalization over the axes [axis, rank):

        result = (x - mean) / sqrt(variance + epsilon) * scale + bias

    with mean and (biased) variance over the normalized axes; `scale` and `bias` are
    optional and broadcast to the normalized part of the shape, x.shape[axis:]. With
    two more results it also returns the mean and 1 / sqrt(variance + epsilon), of shape
    x.shape[:axis] followed by ones.

        %y = graph.layer_norm %x scale %g bias %b axis 2 epsilon 9.99999974e-06 : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
        %y, %mean, %inv = graph.layer_norm %x axis 1 epsilon 1.000000e-05 : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)

    Pattern kind out_elemwise_fusable: the last stage is element-wise over the input
    shape (normalize, scale, shift), so element-wise consumers (a residual add, an
    activation) fuse into it; its input is read in three passes (mean, variance,
    normalize), so producers are not fused into it.
    """

    name = "graph.layer_norm"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(FloatTensor)
    scale = opt_operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    axis = prop_def(IntegerAttr.constr(type=i64))
    epsilon = prop_def(FloatAttr[Float32Type])
    result = result_def(FloatTensor)
    stats = var_result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        input: SSAValue | Operation,
        axis: int,
        epsilon: float = 1e-5,
        scale: SSAValue | Operation | None = None,
        bias: SSAValue | Operation | None = None,
        with_stats: bool = False,
    ):
        value = SSAValue.get(input)
        shape = static_shape(value)
        stats = [tensor_type_like(value.type, stats_shape(shape, axis))] * 2
        super().__init__(
            operands=[value, [] if scale is None else [scale], [] if bias is None else [bias]],
            properties={"axis": _int_attr(axis), "epsilon": FloatAttr(epsilon, f32)},
            result_types=[value.type, stats if with_stats else []],
        )

    @property
    def normalized_axis(self) -> int:
        return self.axis.value.data

    @property
    def mean(self) -> SSAValue | None:
        return self.stats[0] if self.stats else None

    @property
    def inv_std_dev(self) -> SSAValue | None:
        return self.stats[1] if self.stats else None

    def verify_(self) -> None:
        super().verify_()
        shape = static_shape(self.input)
        axis = self.normalized_axis
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"'graph.layer_norm' axis {axis} out of range for rank {len(shape)}"
            )
        check_finite(self, "epsilon")
        if self.epsilon.value.data < 0:
            raise VerifyException(
                f"'graph.layer_norm' epsilon must not be negative, got {self.epsilon.value.data}"
            )
        normalized = shape[axis:]
        for what, operand in (("scale", self.scale), ("bias", self.bias)):
            if operand is None:
                continue
            param = static_shape(operand)
            if len(param) > len(normalized) or broadcast_shapes(param, normalized) != normalized:
                raise VerifyException(
                    f"'graph.layer_norm' {what} shape {list(param)} does not broadcast to "
                    f"the normalized shape {list(normalized)}"
                )
        if len(self.stats) not in (0, 2):
            raise VerifyException(
                f"'graph.layer_norm' has 1 or 3 results (with mean and inverse standard "
                f"deviation), got {1 + len(self.stats)}"
            )
        expected = stats_shape(shape, axis)
        for stat in self.stats:
            assert isinstance(stat.type, TensorType)
            if not isinstance(stat.type.element_type, AnyFloat):
                raise VerifyException(
                    f"'graph.layer_norm' statistics must be float tensors, got {stat.type}"
                )
            if stat.type.get_shape() != expected:
                raise VerifyException(
                    f"'graph.layer_norm' statistics shape {list(stat.type.get_shape())} "
                    f"differs from {list(expected)}"
                )

    def infer_shape(self) -> tuple[int, ...] | None:
        return static_shape(self.input)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self, results=range(len(self.results)))

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        scale = inputs[1] if self.scale is not None else None
        bias = inputs[-1] if self.bias is not None else None
        result, mean, inv_std_dev = layer_norm(
            inputs[0], self.normalized_axis, self.epsilon.value.data, scale, bias
        )
        if not self.stats:
            return [result]
        return [
            result,
            mean.astype(numpy_dtype(self.stats[0].type)),
            inv_std_dev.astype(numpy_dtype(self.stats[1].type)),
        ]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        for keyword, operand in (("scale", self.scale), ("bias", self.bias)):
            if operand is not None:
                printer.print_string(f" {keyword} ")
                printer.print_operand(operand)
        printer.print_string(f" axis {self.normalized_axis}")
        print_keyword_params(printer, self, {"epsilon": FloatAttr})
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(
            [o.type for o in self.operands], [r.type for r in self.results]
        )

    @classmethod
    def parse(cls, parser: Parser) -> LayerNormOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        segments = [1, 0, 0]
        for n, keyword in enumerate(("scale", "bias"), start=1):
            if parser.parse_optional_keyword(keyword) is not None:
                operands.append(parser.parse_unresolved_operand())
                segments[n] = 1
        parser.parse_keyword("axis")
        axis = parser.parse_integer(allow_boolean=False)
        properties = parse_keyword_params(parser, {"epsilon": FloatAttr})
        if "epsilon" not in properties:
            parser.raise_error("'graph.layer_norm' expects 'epsilon' after the axis")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands(operands, function_type.inputs.data, pos)
        properties["axis"] = _int_attr(axis)
        properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, segments)
        return cls.create(
            operands=values,
            result_types=list(function_type.outputs.data),
            properties=properties,
            attributes=attributes,
        )


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Batch normalization in inference form, per channel c (axis 1) of an
    [N, C, D1, ...] input:

        result[n, c, ...] = (x[n, c, ...] - mean[c]) / sqrt(variance[c] + epsilon)
                            * scale[c] + bias[c]

        %y = graph.batch_norm %x, %scale, %bias, %mean, %var epsilon 1.000000e-05 : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>

    Pattern kind broadcast: each output element reads one input element and
    per-channel parameters (the simplify-inference pass folds it into a preceding
    convolution or dense layer).
    """

    name = "graph.batch_norm"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.BROADCAST

    input = operand_def(FloatTensor)
    scale = operand_def(FloatTensor)
    bias = operand_def(FloatTensor)
    mean = operand_def(FloatTensor)
    variance = operand_def(FloatTensor)
    epsilon = prop_def(FloatAttr[Float32Type])
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())

    def __init__(
        self,
        input: SSAValue | Operation,
        scale: SSAValue | Operation,
        bias: SSAValue | Operation,
        mean: SSAValue | Operation,
        variance: SSAValue | Operation,
        epsilon: float = 1e-5,
    ):
        value = SSAValue.get(input)
        super().__init__(
            operands=[value, scale, bias, mean, variance],
            properties={"epsilon": FloatAttr(epsilon, f32)},
            result_types=[value.type],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        if len(shape) < 2:
            raise VerifyException(
                f"'graph.batch_norm' input must have rank >= 2 (N, C, ...), got rank {len(shape)}"
            )
        for what in ("scale", "bias", "mean", "variance"):
            param = static_shape(getattr(self, what))
            if param != (shape[1],):
                raise VerifyException(
                    f"'graph.batch_norm' {what} must have shape [{shape[1]}] (one value a "
                    f"channel), got {list(param)}"
                )
        check_finite(self, "epsilon")
        return shape

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [batch_norm(*inputs, epsilon=self.epsilon.value.data)]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        print_keyword_params(printer, self, {"epsilon": FloatAttr})
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [self.result.type])

    @classmethod
    def parse(cls, parser: Parser) -> BatchNormOp:
        pos = parser.pos
        operands = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        properties = parse_keyword_params(parser, {"epsilon": FloatAttr})
        if "epsilon" not in properties:
            parser.raise_error("'graph.batch_norm' expects 'epsilon' after the operands")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        values = parser.resolve_operands(operands, function_type.inputs.data, pos)
        return cls.create(
            operands=values,
            result_types=list(function_type.outputs.data),
            properties=properties,
            attributes=attributes,
        )


OPS = (SoftmaxOp, LayerNormOp, BatchNormOp)

__all__ = ["BatchNormOp", "LayerNormOp", "SoftmaxOp", "stats_shape"]
