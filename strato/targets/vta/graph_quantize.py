"""graph-quantize: symmetric int8 quantization of conv2d and dense, calibrated on sample inputs.

Every 2-D `graph.conv` (groups 1) and `graph.dense` whose weight is a `graph.constant` of
f32 is rewritten into integer arithmetic as VTA computes it:

    x_q   = cast<i8>(clip(round(x * 2^-ex), -127, 127))          quantize the input
    acc   = conv(cast<i32>(x_q), cast<i32>(w_q)) (+ bias_q)        int32 accumulation
    q     = clip(acc >> s, lo, 127)     s = ey - ex - ew           shift-and-clip requantization
    y     = cast<f32>(cast<i8>(q)) * 2^ey                          dequantize for the consumers

All scales are powers of two, so requantization is an arithmetic right shift. Weights get
ew = ceil(log2(max|w| / 127)) from their values; inputs and outputs get ex and ey the same
way from the largest magnitude seen when the float function runs on the calibration
samples. A conv or dense whose only user is `graph.relu` absorbs it (lo = 0, the VTA
epilogue `clip(acc >> s, 0, 127)`); otherwise lo = -127. The arithmetic shift is written
with existing graph ops as (acc - mod(acc, 2^s)) / 2^s (floored, exact in int32); the bias
is quantized at 2^(ex + ew) and added to the accumulator.

A conv whose input and output channels are multiples of 16 gets the VTA data layouts as
attributes, `vta_layout = "NCHW1n16c"` and `vta_kernel_layout = "OIHW16o16i"`: the target
packs its operands in those element orders (strato.targets.vta.layout); other convs (a first
layer with 3 channels) stay for the CPU.

Options: `calibration=FILE.npz` holds the samples (arrays `arg0`, `arg1`, ... with a
leading sample axis, one per function argument); without it `samples=N` (default 4)
inputs are drawn uniformly from [-1, 1] with `seed` (default 0).

Requires: graph-level functions without calls. Leaves illegal: nothing.

Before:

    %w = graph.constant dense<...> : tensor<16x16x3x3xf32>
    %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] ... -> tensor<1x16x8x8xf32>
    %r = graph.relu %y : tensor<1x16x8x8xf32>

After (ex = -6, ew = -7, ey = -5, s = 8):

    %xs = graph.mul %x, %c64 ; graph.round ; graph.clip min -127 max 127 ; graph.cast to i8
    %xi = graph.cast %xq : tensor<1x16x8x8xi8> to tensor<1x16x8x8xi32>
    %wq = graph.constant dense<...> : tensor<16x16x3x3xi8>
    %wi = graph.cast %wq : ... to tensor<16x16x3x3xi32>
    %acc = graph.conv %xi, %wi ... {vta_layout = "NCHW1n16c", vta_kernel_layout = "OIHW16o16i"}
    %m = graph.mod %acc, %c256 ; graph.sub ; graph.div %_, %c256 ; graph.clip min 0 max 127
    %q = graph.cast %_ : ... to tensor<1x16x8x8xi8>
    %r = graph.mul (graph.cast %q to f32), %c0.03125
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, ModuleOp, StringAttr, f32, i8, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph.base import static_shape
from strato.dialects.tensor_types import array_from_dense, dense_from_array

QMAX = 127
VTA_LAYOUT_ATTR = "vta_layout"
VTA_KERNEL_LAYOUT_ATTR = "vta_kernel_layout"
VTA_BLOCK = 16


def power_of_two_exponent(max_abs: float) -> int:
    """The smallest e with max_abs / 2^e <= 127 (0 for an all-zero tensor)."""
    if max_abs <= 0 or not math.isfinite(max_abs):
        return 0
    return math.ceil(math.log2(max_abs / QMAX))


def quantize_array(values: np.ndarray, exponent: int) -> np.ndarray:
    """round(values / 2^exponent) clipped to [-127, 127], as int8."""
    scaled = np.round(np.asarray(values, dtype=np.float64) * 2.0**-exponent)
    return np.clip(scaled, -QMAX, QMAX).astype(np.int8)


@dataclass(frozen=True)
class QuantizedLayer:
    """What calibration decided for one conv or dense: exponents, shift, relu absorbed."""

    op: Operation
    input_exponent: int
    weight_exponent: int
    output_exponent: int
    relu: Operation | None

    @property
    def shift(self) -> int:
        return self.output_exponent - self.input_exponent - self.weight_exponent


def _quantizable(op: Operation) -> bool:
    if not isinstance(op, graph.ConvOp | graph.DenseOp):
        return False
    weight = op.operands[1].owner
    if not isinstance(weight, graph.ConstantOp) or not isinstance(weight.result.type.element_type, Float32Type):
        return False
    if not isinstance(op.operands[0].type.element_type, Float32Type):
        return False
    if op.bias is not None and not isinstance(op.bias.owner, graph.ConstantOp):
        return False
    if isinstance(op, graph.ConvOp):
        return len(static_shape(op.operands[0])) == 4 and op.group_count == 1
    return True


def _only_relu_user(op: Operation) -> Operation | None:
    uses = list(op.results[0].uses)
    if len(uses) == 1 and isinstance(uses[0].operation, graph.ReluOp):
        return uses[0].operation
    return None


def _calibration_samples(function: func.FuncOp, path: str, samples: int, seed: int) -> list[list[np.ndarray]]:
    types = function.function_type.inputs.data
    if path:
        try:
            data = np.load(path)
        except (OSError, ValueError) as e:
            raise StratoError(f"graph-quantize: cannot read calibration file {path}: {e}") from None
        missing = [f"arg{i}" for i in range(len(types)) if f"arg{i}" not in data]
        if missing:
            raise StratoError(f"graph-quantize: calibration file {path} has no array {missing[0]}")
        for i, type_ in enumerate(types):
            shape = tuple(type_.get_shape())
            if data[f"arg{i}"].shape[1:] != shape:
                raise StratoError(
                    f"graph-quantize: calibration array arg{i} has shape {list(data[f'arg{i}'].shape)}, "
                    f"expected [samples, {', '.join(map(str, shape))}]"
                )
        count = min(len(data[f"arg{i}"]) for i in range(len(types)))
        return [[data[f"arg{i}"][s] for i in range(len(types))] for s in range(count)]
    if samples < 1:
        raise StratoError(f"graph-quantize: samples={samples} must be positive")
    rng = np.random.default_rng(seed)
    return [
        [rng.uniform(-1, 1, t.get_shape()).astype(np.float32) for t in types] for _ in range(samples)
    ]


def _max_magnitudes(function: func.FuncOp, samples: Sequence[Sequence[np.ndarray]]) -> dict[SSAValue, float]:
    """Largest |value| of every SSA value over the samples (the float function, interpreted)."""
    peaks: dict[SSAValue, float] = {}
    for inputs in samples:
        env: dict[SSAValue, np.ndarray] = {}
        for arg, value in zip(function.args, inputs, strict=True):
            env[arg] = np.asarray(value, dtype=np.float32).reshape(static_shape(arg))
        for op in function.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if not isinstance(op, graph.GraphOp):
                raise StratoError(f"graph-quantize cannot calibrate through '{op.name}'", op=op)
            results = op.evaluate([env[v] for v in op.operands])
            env.update(zip(op.results, results, strict=True))
        for value, array in env.items():
            if np.issubdtype(array.dtype, np.floating) and array.size:
                peaks[value] = max(peaks.get(value, 0.0), float(np.max(np.abs(array))))
    return peaks


def calibrate(function: func.FuncOp, samples: Sequence[Sequence[np.ndarray]]) -> list[QuantizedLayer]:
    """The quantization decisions for every quantizable conv and dense of `function`."""
    layers = [op for op in function.body.block.ops if _quantizable(op)]
    if not layers:
        return []
    peaks = _max_magnitudes(function, samples)
    decided = []
    for op in layers:
        relu = _only_relu_user(op)
        weight = array_from_dense(op.operands[1].owner.value)
        ex = power_of_two_exponent(peaks.get(op.operands[0], 0.0))
        ew = power_of_two_exponent(float(np.max(np.abs(weight))) if weight.size else 0.0)
        output = relu.results[0] if relu is not None else op.results[0]
        ey = max(power_of_two_exponent(peaks.get(output, 0.0)), ex + ew)  # the shift is never negative
        decided.append(QuantizedLayer(op, ex, ew, ey, relu))
    return decided


@dataclass
class _Builder:
    """Inserts graph ops before an anchor op."""

    anchor: Operation
    ops: list[Operation] = field(default_factory=list)

    def add(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        self.ops.append(op)
        return op.results[0]

    def scalar(self, value: float | int, element_type) -> SSAValue:
        dtype = np.float32 if isinstance(element_type, Float32Type) else np.int32
        return self.add(graph.ConstantOp(dense_from_array(np.array(value, dtype=dtype), element_type)))

    def cast(self, value: SSAValue, element_type) -> SSAValue:
        return self.add(graph.CastOp(value, element_type))


def _quantize_input(b: _Builder, value: SSAValue, exponent: int) -> SSAValue:
    scaled = b.add(graph.MulOp(value, b.scalar(2.0**-exponent, f32)))
    rounded = b.add(graph.RoundOp(scaled))
    clipped = b.add(graph.ClipOp(rounded, -QMAX, QMAX))
    return b.cast(b.cast(clipped, i8), i32)


def _shift_right(b: _Builder, value: SSAValue, shift: int) -> SSAValue:
    """Arithmetic (floored) right shift by a constant, with mod/sub/div."""
    if shift == 0:
        return value
    divisor = b.scalar(1 << shift, i32)
    remainder = b.add(graph.ModOp(value, divisor))
    exact = b.add(graph.SubOp(value, remainder))
    return b.add(graph.DivOp(exact, divisor))


def rewrite_layer(layer: QuantizedLayer) -> None:
    """Replace one conv or dense (and its absorbed relu) by its integer form."""
    op = layer.op
    b = _Builder(op)
    x = _quantize_input(b, op.operands[0], layer.input_exponent)
    weight = array_from_dense(op.operands[1].owner.value)
    w8 = b.add(graph.ConstantOp(dense_from_array(quantize_array(weight, layer.weight_exponent), i8)))
    w = b.cast(w8, i32)
    bias = None
    if op.bias is not None:
        bias_values = array_from_dense(op.bias.owner.value).astype(np.float64)
        scaled = np.round(bias_values * 2.0 ** -(layer.input_exponent + layer.weight_exponent))
        bias = b.add(graph.ConstantOp(dense_from_array(np.clip(scaled, -(2**31), 2**31 - 1).astype(np.int32), i32)))
    if isinstance(op, graph.ConvOp):
        acc = b.add(
            graph.ConvOp(
                x,
                w,
                bias,
                strides=op.stride_values,
                padding=op.padding.get_values(),
                dilations=op.dilation_values,
            )
        )
        _, channels, _, _ = static_shape(op.operands[0])
        if channels % VTA_BLOCK == 0 and static_shape(op.operands[1])[0] % VTA_BLOCK == 0:
            acc.owner.attributes[VTA_LAYOUT_ATTR] = StringAttr(f"NCHW1n{VTA_BLOCK}c")
            acc.owner.attributes[VTA_KERNEL_LAYOUT_ATTR] = StringAttr(f"OIHW{VTA_BLOCK}o{VTA_BLOCK}i")
    else:
        acc = b.add(graph.DenseOp(x, w, bias))
    acc.name_hint = op.results[0].name_hint
    shifted = _shift_right(b, acc, layer.shift)
    clipped = b.add(graph.ClipOp(shifted, 0 if layer.relu is not None else -QMAX, QMAX))
    q = b.cast(clipped, i8)
    result = b.add(graph.MulOp(b.cast(q, f32), b.scalar(2.0**layer.output_exponent, f32)))
    replaced = layer.relu if layer.relu is not None else op
    result.name_hint = replaced.results[0].name_hint
    replaced.results[0].replace_all_uses_with(result)
    if layer.relu is not None:
        Rewriter.erase_op(layer.relu)
    weight_op, bias_op = op.operands[1].owner, op.bias.owner if op.bias is not None else None
    Rewriter.erase_op(op)
    for producer in (weight_op, bias_op):
        if producer is not None and not producer.results[0].uses:
            Rewriter.erase_op(producer)


def quantize_function(function: func.FuncOp, samples: Sequence[Sequence[np.ndarray]]) -> list[QuantizedLayer]:
    """Calibrate on `samples` and rewrite every quantizable layer of `function`; the decisions."""
    layers = calibrate(function, samples)
    for layer in layers:
        rewrite_layer(layer)
    return layers


@dataclass(frozen=True)
class GraphQuantizePass(ModulePass):
    """Symmetric int8 quantization of conv2d and dense with power-of-two scales."""

    name = "graph-quantize"

    calibration: str = ""
    samples: int = 4
    seed: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if not isinstance(function, func.FuncOp) or not function.body.blocks:
                continue
            if not any(_quantizable(o) for o in function.body.block.ops):
                continue
            samples = _calibration_samples(function, self.calibration, self.samples, self.seed)
            quantize_function(function, samples)


__all__ = [
    "GraphQuantizePass",
    "QuantizedLayer",
    "calibrate",
    "power_of_two_exponent",
    "quantize_array",
    "quantize_function",
    "rewrite_layer",
]
