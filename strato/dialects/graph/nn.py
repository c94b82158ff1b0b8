"""Neural-network operators: convolution and pooling.

Every operator here works on channel-first tensors [N, C, spatial..] with one to three
spatial dimensions (layouts "NCW", "NCHW", "NCDHW"); the layout is a property of the op
so that a layout pass can later introduce blocked variants (NCHW{c}) explicitly.

Windows are described the same way by every op, one entry per spatial dimension:
`strides`, `dilations` and, for the pools, `kernel`; `padding` holds the begin paddings
of all spatial dimensions followed by their end paddings ([h_begin, w_begin, h_end,
w_end] in 2-D, the order of ONNX's `pads`). ONNX's `auto_pad` is resolved into explicit
padding when a model is imported.

    %y = graph.conv %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
    %p = graph.max_pool %y kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
    %g = graph.global_avg_pool %p layout "NCHW" : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>

Every op here is out_elemwise_fusable: each computes a reduction over a window (or the
whole spatial extent) per output element, after which element-wise consumers (bias,
batch-norm scale, relu, flatten) can be computed in the same kernel. That is TVM's
choice for conv2d, conv2d_transpose and all pools, global_avg_pool included: the
average is a sum followed by an element-wise scale, which is exactly the "reduction,
then element-wise epilogue" shape of the kind. (Declaring the global pool a reduction
would instead let element-wise producers fuse into its input; in CNNs that producer is
the relu at the end of a conv group, which already belongs to that group.)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
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
    FloatTensor,
    GraphOp,
    PatternKind,
    element_type,
    i64_array,
    static_shape,
)
from strato.dialects.tensor_types import tensor_type_like

_SPATIAL_LETTERS = "DHW"
MAX_SPATIAL_RANK = len(_SPATIAL_LETTERS)


def channel_first_layout(spatial_rank: int, prefix: str = "NC") -> str:
    """The channel-first layout name of a tensor with `spatial_rank` spatial dimensions:
    "NCHW" for 2-D; with prefix "OI" the layout of a convolution weight ("OIHW")."""
    assert 1 <= spatial_rank <= MAX_SPATIAL_RANK, spatial_rank
    return prefix + _SPATIAL_LETTERS[MAX_SPATIAL_RANK - spatial_rank :]


# -- shape rules, shared with the importer ------------------------------------------------


def window_extent(kernel: int, dilation: int) -> int:
    """The number of input positions a dilated window spans."""
    return (kernel - 1) * dilation + 1


def conv_output_size(
    size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int
) -> int:
    """The output size of a convolution along one spatial dimension."""
    return (size + pad_begin + pad_end - window_extent(kernel, dilation)) // stride + 1


def pool_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int,
    ceil_mode: bool,
) -> int:
    """The output size of a pooling along one spatial dimension. In ceil mode a last,
    partial window is kept when it starts inside the input or the begin padding."""
    span = size + pad_begin + pad_end - window_extent(kernel, dilation)
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def conv_transpose_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int,
    output_padding: int,
) -> int:
    """The output size of a transposed convolution along one spatial dimension."""
    return (
        stride * (size - 1) + output_padding + window_extent(kernel, dilation) - pad_begin - pad_end
    )


def conv_output_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, ...]:
    """The result shape of `graph.conv` ([N, M, O..])."""
    rank = len(input_shape) - 2
    return (
        input_shape[0],
        weight_shape[0],
        *(
            conv_output_size(
                input_shape[2 + d],
                weight_shape[2 + d],
                strides[d],
                padding[d],
                padding[rank + d],
                dilations[d],
            )
            for d in range(rank)
        ),
    )


def conv_transpose_output_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilations: Sequence[int],
    groups: int,
) -> tuple[int, ...]:
    """The result shape of `graph.conv_transpose` ([N, M, O..])."""
    rank = len(input_shape) - 2
    return (
        input_shape[0],
        weight_shape[1] * groups,
        *(
            conv_transpose_output_size(
                input_shape[2 + d],
                weight_shape[2 + d],
                strides[d],
                padding[d],
                padding[rank + d],
                dilations[d],
                output_padding[d],
            )
            for d in range(rank)
        ),
    )


def pool_output_shape(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[int, ...]:
    """The result shape of a pooling ([N, C, O..])."""
    rank = len(input_shape) - 2
    return (
        *input_shape[:2],
        *(
            pool_output_size(
                input_shape[2 + d],
                kernel[d],
                strides[d],
                padding[d],
                padding[rank + d],
                dilations[d],
                ceil_mode,
            )
            for d in range(rank)
        ),
    )


# -- the shared part of the windowed operators ------------------------------------------


def _tap_window(
    taps: Sequence[int],
    counts: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[slice, ...]:
    """The spatial slices of the padded input that kernel tap `taps` touches in
    `counts` consecutive windows per dimension: o * stride + k * dilation for each o."""
    return tuple(
        slice(k * dilations[d], k * dilations[d] + (counts[d] - 1) * strides[d] + 1, strides[d])
        for d, k in enumerate(taps)
    )



def _format(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _window_or_defaults(
    rank: int,
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    dilations: Sequence[int] | None,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The window of a builder call, with unit strides and dilations and no padding
    where none are given."""
    return (
        tuple(strides or (1,) * rank),
        tuple(padding or (0,) * (2 * rank)),
        tuple(dilations or (1,) * rank),
    )


class ChannelFirstOp(GraphOp):
    """An operator on a channel-first tensor [N, C, spatial..] (its first operand)."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    layout = prop_def(StringAttr)

    @property
    def data_layout(self) -> str:
        return self.layout.data

    @property
    def spatial_rank(self) -> int:
        return len(static_shape(self.operands[0])) - 2

    def _check_input(self) -> tuple[int, ...]:
        """The input shape, once its rank and the layout are known to be valid."""
        shape = static_shape(self.operands[0])
        rank = len(shape) - 2
        if rank < 1 or rank > MAX_SPATIAL_RANK:
            raise VerifyException(
                f"'{self.name}' input must be [N, C, spatial..] with 1 to "
                f"{MAX_SPATIAL_RANK} spatial dimensions, got rank {len(shape)}"
            )
        expected = channel_first_layout(rank)
        if self.data_layout != expected:
            raise VerifyException(
                f"'{self.name}' layout \"{self.data_layout}\" is not supported for a "
                f'rank-{len(shape)} input; expected "{expected}"'
            )
        return shape


class SlidingWindowOp(GraphOp):
    """The window properties of an operator sliding a window over spatial dimensions,
    in any layout (channel-first here, blocked in blocked.py): one stride and one
    dilation per spatial dimension, the begin paddings followed by the end paddings,
    and the layout of the data."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    strides = prop_def(DenseArrayBase.constr(i64))
    padding = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    layout = prop_def(StringAttr)

    @property
    def stride_values(self) -> tuple[int, ...]:
        return tuple(self.strides.get_values())

    @property
    def dilation_values(self) -> tuple[int, ...]:
        return tuple(self.dilations.get_values())

    @property
    def pads_begin(self) -> tuple[int, ...]:
        values = tuple(self.padding.get_values())
        return values[: len(values) // 2]

    @property
    def pads_end(self) -> tuple[int, ...]:
        values = tuple(self.padding.get_values())
        return values[len(values) // 2 :]


class WindowOp(SlidingWindowOp, ChannelFirstOp):
    """An operator sliding a window over the spatial dimensions of its input."""

    def _check_window_attributes(self, rank: int) -> None:
        for name, values in (
            ("strides", self.stride_values),
            ("dilations", self.dilation_values),
        ):
            if len(values) != rank:
                raise VerifyException(
                    f"'{self.name}' {name} must have {rank} entries (one per spatial "
                    f"dimension), got {len(values)}"
                )
            if any(v < 1 for v in values):
                raise VerifyException(
                    f"'{self.name}' {name} must be positive, got {_format(values)}"
                )
        padding = tuple(self.padding.get_values())
        if len(padding) != 2 * rank:
            raise VerifyException(
                f"'{self.name}' padding must have {2 * rank} entries (begin, then end, "
                f"per spatial dimension), got {len(padding)}"
            )
        if any(p < 0 for p in padding):
            raise VerifyException(
                f"'{self.name}' padding must be non-negative, got {_format(padding)}"
            )

    def _check_output_sizes(self, sizes: Sequence[int]) -> None:
        for dim, size in enumerate(sizes):
            if size < 1:
                raise VerifyException(
                    f"'{self.name}' window does not fit the padded input along spatial "
                    f"dimension {dim}"
                )


# -- convolution ----------------------------------------------------------------------


def _group_sizes(name: str, channels: int, outputs: int, groups: int) -> None:
    if groups < 1:
        raise VerifyException(f"'{name}' groups must be positive, got {groups}")
    if channels % groups:
        raise VerifyException(
            f"'{name}' input channels {channels} are not divisible by groups {groups}"
        )
    if outputs % groups:
        raise VerifyException(
            f"'{name}' output channels {outputs} are not divisible by groups {groups}"
        )


def verify_bias(op: GraphOp, bias: SSAValue | None, outputs: int) -> None:
    """The check of a convolution's optional `bias`: one value per output channel."""
    if bias is not None and static_shape(bias) != (outputs,):
        raise VerifyException(
            f"'{op.name}' bias must have shape [{outputs}], got {list(static_shape(bias))}"
        )


class ConvolutionOp(WindowOp):
    """What convolution and transposed convolution share: a weight, an optional bias,
    groups and the weight's layout."""

    input = operand_def(FloatTensor)
    weight = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    result = result_def(FloatTensor)

    groups = prop_def(IntegerAttr[I64])
    kernel_layout = prop_def(StringAttr)

    traits = traits_def(NoMemoryEffect())

    # the prefix of the weight layout: output then input channels, or the reverse
    KERNEL_PREFIX: ClassVar[str] = "OI"

    @property
    def group_count(self) -> int:
        return self.groups.value.data

    @property
    def kernel_shape(self) -> tuple[int, ...]:
        return static_shape(self.weight)[2:]

    def _check_weight(self, input_shape: Sequence[int]) -> tuple[int, ...]:
        weight = static_shape(self.weight)
        if len(weight) != len(input_shape):
            raise VerifyException(
                f"'{self.name}' weight must have rank {len(input_shape)} like the input, "
                f"got rank {len(weight)}"
            )
        expected = channel_first_layout(len(weight) - 2, self.KERNEL_PREFIX)
        if self.kernel_layout.data != expected:
            raise VerifyException(
                f"'{self.name}' kernel_layout \"{self.kernel_layout.data}\" is not "
                f'supported for a rank-{len(weight)} weight; expected "{expected}"'
            )
        return weight



def conv_properties(
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    groups: int,
    layout: str,
    kernel_layout: str,
) -> dict:
    return {
        "strides": i64_array(strides),
        "padding": i64_array(padding),
        "dilations": i64_array(dilations),
        "groups": IntegerAttr(groups, i64),
        "layout": StringAttr(layout),
        "kernel_layout": StringAttr(kernel_layout),
    }


@irdl_op_definition
class ConvOp(ConvolutionOp):
    """N-d convolution (cross-correlation) with groups, strides, padding and dilations.

    input is [N, C, X..], weight is [M, C / groups, K..] (layout "OIHW" in 2-D), the
    optional bias is [M]. Output channel m belongs to group g = m / (M / groups) and
    reads the input channels of that group; with x' the input zero-padded by `padding`:

        result[n, m, o..] = bias[m] + sum_{c < C/groups, k..}
            x'[n, g * C/groups + c, o * stride + k * dilation ..] * weight[m, c, k..]

    The output size per spatial dimension is
    (X + pad_begin + pad_end - ((K - 1) * dilation + 1)) / stride + 1, rounded down.

        %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    """

    name = "graph.conv"
    # quantized graphs convolve int32 tensors (int8 values, exact int32 accumulation)
    FLOAT_OPERANDS: ClassVar[bool] = False

    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `strides` $strides `padding` $padding "
        "`dilations` $dilations `groups` $groups `layout` $layout "
        "`kernel_layout` $kernel_layout attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int = 1,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        x, w = static_shape(input), static_shape(weight)
        rank = len(x) - 2
        strides, padding, dilations = _window_or_defaults(rank, strides, padding, dilations)
        shape = conv_output_shape(x, w, strides, padding, dilations)
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            properties=conv_properties(
                strides,
                padding,
                dilations,
                groups,
                channel_first_layout(rank),
                channel_first_layout(rank, "OI"),
            ),
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def is_depthwise(self) -> bool:
        """One group per input channel, each giving one output channel."""
        groups = self.group_count
        outputs, per_group = static_shape(self.weight)[:2]
        return groups > 1 and per_group == 1 and outputs == groups == static_shape(self.input)[1]

    def infer_shape(self) -> tuple[int, ...] | None:
        x = self._check_input()
        w = self._check_weight(x)
        rank = len(x) - 2
        self._check_window_attributes(rank)
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
        x, w = inputs[0], inputs[1]
        rank = x.ndim - 2
        groups = self.group_count
        out_shape = static_shape(self.result)
        padded = np.pad(
            x.astype(np.float64),
            [(0, 0), (0, 0), *zip(self.pads_begin, self.pads_end)],
        )
        n, m = out_shape[0], out_shape[1]
        cg, mg = x.shape[1] // groups, m // groups
        grouped = padded.reshape(n, groups, cg, *padded.shape[2:])
        kernels = w.astype(np.float64).reshape(groups, mg, cg, *w.shape[2:])
        acc = np.zeros((n, groups, mg, *out_shape[2:]))
        for taps in itertools.product(*(range(k) for k in w.shape[2:])):
            window = _tap_window(taps, out_shape[2:], self.stride_values, self.dilation_values)
            patch = grouped[(slice(None), slice(None), slice(None), *window)]
            acc += np.einsum("ngc...,gmc->ngm...", patch, kernels[(..., *taps)])
        out = acc.reshape(out_shape)
        if len(inputs) > 2:
            out = out + inputs[2].reshape(m, *([1] * rank))
        return [out.astype(x.dtype)]


@irdl_op_definition
class ConvTransposeOp(ConvolutionOp):
    """N-d transposed convolution (the gradient of `graph.conv` with respect to its
    input), with groups, strides, padding, output padding and dilations.

    input is [N, C, X..], weight is [C, M / groups, K..] (layout "IOHW" in 2-D), the
    optional bias is [M]. Each input element scatters into the full output at
    i * stride + k * dilation; `padding` then crops the full output at both ends and
    `output_padding` extends it at the end. Equivalently, for output channel m of group
    g = m / (M / groups):

        result[n, m, o..] = bias[m] + sum_{c < C/groups, k..} x[n, g * C/groups + c, i..]
            * weight[g * C/groups + c, m mod (M/groups), k..]
            over the taps where o + pad_begin - k * dilation = i * stride, 0 <= i < X.

    The output size is stride * (X - 1) + output_padding + (K - 1) * dilation + 1
    - pad_begin - pad_end.

        %y = graph.conv_transpose %x, %w strides [2, 2] padding [0, 0, 0, 0] output_padding [1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x8x8xf32>
    """

    name = "graph.conv_transpose"
    KERNEL_PREFIX: ClassVar[str] = "IO"

    output_padding = prop_def(DenseArrayBase.constr(i64))

    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `strides` $strides `padding` $padding "
        "`output_padding` $output_padding `dilations` $dilations `groups` $groups "
        "`layout` $layout `kernel_layout` $kernel_layout attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        output_padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int = 1,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        x, w = static_shape(input), static_shape(weight)
        rank = len(x) - 2
        strides, padding, dilations = _window_or_defaults(rank, strides, padding, dilations)
        output_padding = tuple(output_padding or (0,) * rank)
        shape = conv_transpose_output_shape(
            x, w, strides, padding, output_padding, dilations, groups
        )
        properties = conv_properties(
            strides,
            padding,
            dilations,
            groups,
            channel_first_layout(rank),
            channel_first_layout(rank, "IO"),
        )
        properties["output_padding"] = i64_array(output_padding)
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            properties=properties,
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def output_padding_values(self) -> tuple[int, ...]:
        return tuple(self.output_padding.get_values())

    def infer_shape(self) -> tuple[int, ...] | None:
        x = self._check_input()
        w = self._check_weight(x)
        rank = len(x) - 2
        self._check_window_attributes(rank)
        extra = self.output_padding_values
        if len(extra) != rank:
            raise VerifyException(
                f"'{self.name}' output_padding must have {rank} entries (one per spatial "
                f"dimension), got {len(extra)}"
            )
        if any(p < 0 for p in extra):
            raise VerifyException(
                f"'{self.name}' output_padding must be non-negative, got {_format(extra)}"
            )
        groups = self.group_count
        outputs = w[1] * groups
        if w[0] != x[1]:
            raise VerifyException(
                f"'{self.name}' weight has {w[0]} input channels, the input has {x[1]}"
            )
        _group_sizes(self.name, x[1], outputs, groups)
        verify_bias(self, self.bias, outputs)
        shape = conv_transpose_output_shape(
            x,
            w,
            self.stride_values,
            self.padding.get_values(),
            extra,
            self.dilation_values,
            groups,
        )
        self._check_output_sizes(shape[2:])
        return shape

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        # The reference scatters (the strategy gathers), so each checks the other.
        x, w = inputs[0], inputs[1]
        rank = x.ndim - 2
        groups = self.group_count
        out_shape = static_shape(self.result)
        n, m = out_shape[0], out_shape[1]
        cg, mg = x.shape[1] // groups, m // groups
        strides, dilations = self.stride_values, self.dilation_values
        full = [
            max(
                strides[d] * (x.shape[2 + d] - 1) + (w.shape[2 + d] - 1) * dilations[d] + 1,
                self.pads_begin[d] + out_shape[2 + d],
            )
            for d in range(rank)
        ]
        acc = np.zeros((n, groups, mg, *full))
        grouped = x.astype(np.float64).reshape(n, groups, cg, *x.shape[2:])
        kernels = w.astype(np.float64).reshape(groups, cg, mg, *w.shape[2:])
        for taps in itertools.product(*(range(k) for k in w.shape[2:])):
            window = _tap_window(taps, x.shape[2:], strides, dilations)
            acc[(slice(None), slice(None), slice(None), *window)] += np.einsum(
                "ngc...,gcm->ngm...", grouped, kernels[(..., *taps)]
            )
        crop = tuple(
            slice(self.pads_begin[d], self.pads_begin[d] + out_shape[2 + d]) for d in range(rank)
        )
        out = acc[(slice(None), slice(None), slice(None), *crop)].reshape(out_shape)
        if len(inputs) > 2:
            out = out + inputs[2].reshape(m, *([1] * rank))
        return [out.astype(x.dtype)]


# -- pooling --------------------------------------------------------------------------


def _pool_properties(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    dilations: Sequence[int] | None,
    ceil_mode: bool,
) -> tuple[dict, tuple[int, ...]]:
    """The properties of a pooling and its result shape."""
    rank = len(input_shape) - 2
    strides, padding, dilations = _window_or_defaults(rank, strides, padding, dilations)
    properties = pool_properties(
        kernel, strides, padding, dilations, ceil_mode, channel_first_layout(rank)
    )
    shape = pool_output_shape(input_shape, kernel, strides, padding, dilations, ceil_mode)
    return properties, shape


def pool_properties(
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
    layout: str,
) -> dict:
    """The properties of a pooling in `layout` (channel-first or blocked)."""
    properties = {
        "kernel": i64_array(kernel),
        "strides": i64_array(strides),
        "padding": i64_array(padding),
        "dilations": i64_array(dilations),
        "layout": StringAttr(layout),
    }
    if ceil_mode:
        properties["ceil_mode"] = UnitAttr()
    return properties


class PoolOp(WindowOp):
    """A pooling window: `kernel` taps per spatial dimension, optional ceil mode."""

    input = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    kernel = prop_def(DenseArrayBase.constr(i64))
    ceil_mode = opt_prop_def(UnitAttr)

    traits = traits_def(NoMemoryEffect())

    def _build(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        strides: Sequence[int] | None,
        padding: Sequence[int] | None,
        dilations: Sequence[int] | None,
        ceil_mode: bool,
        flags: Sequence[str] = (),
        with_indices: bool = False,
    ) -> None:
        """Initialise a pooling op: its window properties, the unit `flags` given, and
        its result (plus an i64 index tensor of the same shape `with_indices`)."""
        input = SSAValue.get(input)
        properties, shape = _pool_properties(
            static_shape(input), kernel, strides, padding, dilations, ceil_mode
        )
        for flag in flags:
            properties[flag] = UnitAttr()
        result_types = [tensor_type_like(input.type, shape)]
        if with_indices:
            result_types.append(TensorType(i64, shape))
        super().__init__(operands=[input], properties=properties, result_types=result_types)

    @property
    def kernel_shape(self) -> tuple[int, ...]:
        return tuple(self.kernel.get_values())

    @property
    def is_ceil_mode(self) -> bool:
        return self.ceil_mode is not None

    def output_sizes(self) -> list[int]:
        shape = pool_output_shape(
            static_shape(self.input),
            self.kernel_shape,
            self.stride_values,
            self.padding.get_values(),
            self.dilation_values,
            self.is_ceil_mode,
        )
        return list(shape[2:])

    def padded_extents(self) -> list[int]:
        """The extent of the padded input each spatial dimension of the windows reads:
        the input with its padding, or more where a ceil-mode window runs past it."""
        x = static_shape(self.input)
        sizes = self.output_sizes()
        return [
            max(
                x[2 + d] + self.pads_begin[d] + self.pads_end[d],
                (sizes[d] - 1) * self.stride_values[d]
                + window_extent(self.kernel_shape[d], self.dilation_values[d]),
            )
            for d in range(len(sizes))
        ]

    def infer_shape(self) -> tuple[int, ...] | None:
        x = self._check_input()
        rank = len(x) - 2
        kernel = self.kernel_shape
        if len(kernel) != rank:
            raise VerifyException(
                f"'{self.name}' kernel must have {rank} entries (one per spatial "
                f"dimension), got {len(kernel)}"
            )
        if any(k < 1 for k in kernel):
            raise VerifyException(f"'{self.name}' kernel must be positive, got {_format(kernel)}")
        self._check_window_attributes(rank)
        sizes = self.output_sizes()
        self._check_output_sizes(sizes)
        return (x[0], x[1], *sizes)

    def _windows(self, padded: np.ndarray):
        """The strided views of `padded` (already padded to `padded_extents`), one per
        kernel tap, each shaped like the result."""
        sizes = self.output_sizes()
        for taps in itertools.product(*(range(k) for k in self.kernel_shape)):
            window = _tap_window(taps, sizes, self.stride_values, self.dilation_values)
            yield padded[(slice(None), slice(None), *window)]

    def _pad(self, x: np.ndarray, value: float) -> np.ndarray:
        extents = self.padded_extents()
        widths = [
            (self.pads_begin[d], extents[d] - self.pads_begin[d] - x.shape[2 + d])
            for d in range(x.ndim - 2)
        ]
        return np.pad(x, [(0, 0), (0, 0), *widths], constant_values=value)


def verify_float_or_integer(op: GraphOp, value: SSAValue) -> None:
    """The element check of the max pools: floats or integers wider than i1."""
    type_ = element_type(value)
    if not isinstance(type_, AnyFloat) and not (
        isinstance(type_, IntegerType) and type_.width.data > 1
    ):
        raise VerifyException(f"'{op.name}' expects float or integer tensors, got {value.type}")


def lowest_value(dtype: np.dtype) -> float | int:
    """The identity of max: -inf for floats, the smallest integer otherwise."""
    if np.issubdtype(dtype, np.floating):
        return float("-inf")
    return int(np.iinfo(dtype).min)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """Max pooling: the largest input element of each window.

    result[n, c, o..] = max over taps k.. of x[n, c, o * stride - pad_begin + k * dilation ..]
    over the taps inside the input; padding never wins (it is -inf, or the lowest value
    of an integer type: max pooling works on integer tensors too). In ceil mode the
    output size is rounded up (a last partial window is kept when it starts inside the
    input or its begin padding).

        %p = graph.max_pool %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    """

    name = "graph.max_pool"
    FLOAT_OPERANDS: ClassVar[bool] = False

    assembly_format = (
        "$input `kernel` $kernel `strides` $strides `padding` $padding `dilations` "
        "$dilations (`ceil_mode` $ceil_mode^)? `layout` $layout attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: bool = False,
    ):
        self._build(input, kernel, strides, padding, dilations, ceil_mode)

    def verify_(self) -> None:
        verify_float_or_integer(self, self.input)
        super().verify_()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        padded = self._pad(x, lowest_value(x.dtype))
        windows = self._windows(padded)
        out = next(windows).copy()
        for window in windows:
            np.maximum(out, window, out=out)
        return [out]


def _flat_input_indices(shape: Sequence[int], column_major: bool) -> np.ndarray:
    """The flat index of every element of a tensor [N, C, X..] as ONNX's MaxPool reports
    it: (n * C + c) * (X0 * X1 * ..) plus the spatial position in row-major order, or in
    column-major order (x0 + x1 * X0 + x2 * X0 * X1 ..) when `column_major`."""
    spatial = tuple(shape[2:])
    positions = np.arange(int(np.prod(spatial)), dtype=np.int64).reshape(spatial)
    if column_major:
        positions = positions.reshape(spatial[::-1]).T
    channels = np.arange(shape[0] * shape[1], dtype=np.int64)
    channels = channels.reshape(*shape[:2], *[1] * len(spatial))
    return channels * positions.size + positions


@irdl_op_definition
class MaxPoolWithIndicesOp(PoolOp):
    """Max pooling that also returns where each maximum is: the first result is
    `graph.max_pool`'s, the second the i64 flat index into the input of the element
    that won its window, (n * C + c) * (X0 * X1 * ..) plus the spatial position in
    row-major order, or in column-major order (x0 + x1 * X0 + ..) with `column_major`
    (ONNX's MaxPool `Indices` with storage_order 1). Padding never wins; among equal
    maxima the first tap of the window (in row-major tap order) wins; a NaN maximum
    (NaNs propagate as in `graph.max_pool`) reports the window's first NaN.

        %p, %i = graph.max_pool_with_indices %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>)

    Opaque for fusion: two results, and the indices are usually a model output.
    """

    name = "graph.max_pool_with_indices"
    FLOAT_OPERANDS: ClassVar[bool] = False
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE

    # redeclared so that the values come before the indices
    result = result_def(FloatTensor)
    indices = result_def(AnyTensor)
    column_major = opt_prop_def(UnitAttr)

    assembly_format = (
        "$input `kernel` $kernel `strides` $strides `padding` $padding `dilations` "
        "$dilations (`ceil_mode` $ceil_mode^)? (`column_major` $column_major^)? "
        "`layout` $layout attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: bool = False,
        column_major: bool = False,
    ):
        flags = ["column_major"] if column_major else []
        self._build(input, kernel, strides, padding, dilations, ceil_mode, flags, True)

    @property
    def is_column_major(self) -> bool:
        return self.column_major is not None

    def verify_(self) -> None:
        verify_float_or_integer(self, self.input)
        super().verify_()
        indices = self.indices.type
        assert isinstance(indices, TensorType)
        if indices.element_type != i64:
            raise VerifyException(f"'{self.name}' indices must be an i64 tensor, got {indices}")
        values = static_shape(self.result)
        if indices.get_shape() != values:
            raise VerifyException(
                f"'{self.name}' indices shape {list(indices.get_shape())} differs from "
                f"the result shape {list(values)}"
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        padded = self._pad(x, lowest_value(x.dtype))
        positions = self._pad(_flat_input_indices(x.shape, self.is_column_major), -1)
        (best,) = MaxPoolOp.evaluate(self, inputs)
        where = np.full(best.shape, -1, dtype=np.int64)
        for window, position in zip(self._windows(padded), self._windows(positions)):
            # the first tap inside the input holding the maximum (a NaN, when it is one)
            hits = window == best
            if np.issubdtype(x.dtype, np.floating):
                hits |= np.isnan(window)
            where = np.where((where < 0) & (position >= 0) & hits, position, where)
        return [best, where]


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pooling: the mean of each window.

    result[n, c, o..] = (sum over the taps inside the input of
    x[n, c, o * stride - pad_begin + k * dilation ..]) / count(o..), where count is the
    number of taps inside the input, or with `count_include_pad` the number of taps
    inside the input and its padding (taps a ceil-mode window puts past the end padding
    never count).

        %p = graph.avg_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 1, 1] dilations [1, 1] count_include_pad layout "NCHW" : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
    """

    name = "graph.avg_pool"

    count_include_pad = opt_prop_def(UnitAttr)

    assembly_format = (
        "$input `kernel` $kernel `strides` $strides `padding` $padding `dilations` "
        "$dilations (`ceil_mode` $ceil_mode^)? (`count_include_pad` $count_include_pad^)? "
        "`layout` $layout attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: bool = False,
        count_include_pad: bool = False,
    ):
        flags = ["count_include_pad"] if count_include_pad else []
        self._build(input, kernel, strides, padding, dilations, ceil_mode, flags)

    @property
    def counts_padding(self) -> bool:
        return self.count_include_pad is not None

    def counted_range(self, dim: int) -> tuple[int, int]:
        """The positions of the padded input (as `padded_extents` lays it out) that a
        window counts along spatial dimension `dim`: [begin, end)."""
        size = static_shape(self.input)[2 + dim]
        if self.counts_padding:
            return 0, self.pads_begin[dim] + size + self.pads_end[dim]
        return self.pads_begin[dim], self.pads_begin[dim] + size

    def window_counts(self) -> np.ndarray:
        """How many taps each output window counts, shaped like the result's spatial
        dimensions."""
        extents = self.padded_extents()
        mask = np.zeros(extents)
        mask[tuple(slice(*self.counted_range(d)) for d in range(len(extents)))] = 1.0
        counts = np.zeros(self.output_sizes())
        for window in self._windows(mask[np.newaxis, np.newaxis]):
            counts += window[0, 0]
        return counts

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        padded = self._pad(x.astype(np.float64), 0.0)
        total = sum(self._windows(padded))
        return [(total / self.window_counts()).astype(x.dtype)]


@irdl_op_definition
class GlobalAvgPoolOp(ChannelFirstOp):
    """The mean over all spatial dimensions: [N, C, X..] -> [N, C, 1..],
    result[n, c, 0..] = sum over x.. of input[n, c, x..] / (X0 * X1 * ..).

        %g = graph.global_avg_pool %x layout "NCHW" : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
    """

    name = "graph.global_avg_pool"

    input = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input `layout` $layout attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation):
        input = SSAValue.get(input)
        x = static_shape(input)
        super().__init__(
            operands=[input],
            properties={"layout": StringAttr(channel_first_layout(len(x) - 2))},
            result_types=[tensor_type_like(input.type, (*x[:2], *([1] * (len(x) - 2))))],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        x = self._check_input()
        return (*x[:2], *([1] * (len(x) - 2)))

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        axes = tuple(range(2, x.ndim))
        return [x.astype(np.float64).mean(axis=axes, keepdims=True).astype(x.dtype)]


OPS = (ConvOp, ConvTransposeOp, MaxPoolOp, MaxPoolWithIndicesOp, AvgPoolOp, GlobalAvgPoolOp)

__all__ = [
    "MAX_SPATIAL_RANK",
    "AvgPoolOp",
    "ChannelFirstOp",
    "ConvOp",
    "ConvTransposeOp",
    "ConvolutionOp",
    "GlobalAvgPoolOp",
    "MaxPoolOp",
    "MaxPoolWithIndicesOp",
    "PoolOp",
    "SlidingWindowOp",
    "WindowOp",
    "channel_first_layout",
    "conv_output_shape",
    "conv_output_size",
    "conv_transpose_output_shape",
    "conv_transpose_output_size",
    "lowest_value",
    "pool_output_shape",
    "pool_output_size",
    "window_extent",
]
