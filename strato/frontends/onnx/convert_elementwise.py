"""Converters for ONNX element-wise operators.

Unary: Relu, LeakyRelu, Clip, Sigmoid, Tanh, Erf, Gelu, Sqrt, Exp, Log, Neg, Abs, Floor,
Ceil, Round, Sign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
Reciprocal, Softplus, Softsign, Mish, HardSwish, and
with float attributes Elu, Selu, Celu, HardSigmoid, ThresholdedRelu.
Binary, with numpy broadcasting (opset >= 7): Add, Sub, Mul, Div, Pow, Mod, PRelu (the
slope broadcasting to the input).
Variadic, with numpy broadcasting: Max, Min, Sum, lowered to a left-to-right chain of
`graph.maximum` / `graph.minimum` / `graph.add` (one input is the identity).

When every input is known at import time the result is folded with the graph op's own
reference semantics, so import-time and run-time results agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from strato.dialects import graph
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of

Convert = Callable[[NodeContext], list[ImportedValue]]


def _onnx_name(op_class: type) -> str:
    return op_class.name.split(".", 1)[1]


def folded(result: np.ndarray, like: np.ndarray) -> np.ndarray:
    """An import-time result with the element type of the input `like` (numpy promotes
    some mixes, e.g. with Python floats, to float64)."""
    return np.require(result, dtype=like.dtype, requirements="C")


# -- unary ------------------------------------------------------------------------


def _unary(op_class: type[graph.MathUnaryOp], onnx_name: str) -> Convert:
    def convert(ctx: NodeContext) -> list[ImportedValue]:
        x = ctx.value(0)
        if isinstance(x, np.ndarray):
            return [folded(op_class.compute(x), x)]
        return [ctx.emit(op_class(x)).results[0]]

    convert.__name__ = f"convert_{_onnx_name(op_class)}"
    convert.__doc__ = f"ONNX {onnx_name} -> {op_class.name}."
    return convert


convert_relu = _unary(graph.ReluOp, "Relu")
convert_sigmoid = _unary(graph.SigmoidOp, "Sigmoid")
convert_tanh = _unary(graph.TanhOp, "Tanh")
convert_erf = _unary(graph.ErfOp, "Erf")
convert_sqrt = _unary(graph.SqrtOp, "Sqrt")
convert_exp = _unary(graph.ExpOp, "Exp")
convert_log = _unary(graph.LogOp, "Log")
convert_neg = _unary(graph.NegOp, "Neg")
convert_abs = _unary(graph.AbsOp, "Abs")
convert_floor = _unary(graph.FloorOp, "Floor")
convert_ceil = _unary(graph.CeilOp, "Ceil")
convert_round = _unary(graph.RoundOp, "Round")
convert_sign = _unary(graph.SignOp, "Sign")
convert_sin = _unary(graph.SinOp, "Sin")
convert_cos = _unary(graph.CosOp, "Cos")
convert_tan = _unary(graph.TanOp, "Tan")
convert_asin = _unary(graph.AsinOp, "Asin")
convert_acos = _unary(graph.AcosOp, "Acos")
convert_atan = _unary(graph.AtanOp, "Atan")
convert_sinh = _unary(graph.SinhOp, "Sinh")
convert_cosh = _unary(graph.CoshOp, "Cosh")
convert_asinh = _unary(graph.AsinhOp, "Asinh")
convert_acosh = _unary(graph.AcoshOp, "Acosh")
convert_atanh = _unary(graph.AtanhOp, "Atanh")
convert_reciprocal = _unary(graph.ReciprocalOp, "Reciprocal")
convert_softplus = _unary(graph.SoftplusOp, "Softplus")
convert_softsign = _unary(graph.SoftsignOp, "Softsign")
convert_mish = _unary(graph.MishOp, "Mish")
convert_hard_swish = _unary(graph.HardSwishOp, "HardSwish")


def _with_float_params(
    op_class: type[graph.FloatParamsUnaryOp], onnx_name: str, attributes: dict[str, str]
) -> Convert:
    """A converter of an activation whose float attributes (ONNX name -> property in
    `attributes`) become the op's parameters, with the op's defaults (ONNX's)."""

    def convert(ctx: NodeContext) -> list[ImportedValue]:
        params = {}
        for onnx_attr, param in attributes.items():
            value = ctx.float_attr(onnx_attr, op_class.DEFAULTS[param])
            if not math.isfinite(value):
                raise ctx.error(f"attribute {onnx_attr}={value} is not a finite number")
            params[param] = value
        x = ctx.value(0)
        if isinstance(x, np.ndarray):
            detached = graph.ConstantOp.from_array(np.require(x, requirements="C"))
            return [folded(op_class(detached.result, **params).evaluate([x])[0], x)]
        return [ctx.emit(op_class(x, **params)).results[0]]

    convert.__name__ = f"convert_{_onnx_name(op_class)}"
    convert.__doc__ = f"ONNX {onnx_name} ({', '.join(attributes)}) -> {op_class.name}."
    return convert


convert_elu = _with_float_params(graph.EluOp, "Elu", {"alpha": "alpha"})
convert_selu = _with_float_params(graph.SeluOp, "Selu", {"alpha": "alpha", "gamma": "gamma"})
convert_hard_sigmoid = _with_float_params(
    graph.HardSigmoidOp, "HardSigmoid", {"alpha": "alpha", "beta": "beta"}
)
convert_thresholded_relu = _with_float_params(
    graph.ThresholdedReluOp, "ThresholdedRelu", {"alpha": "alpha"}
)
_convert_celu = _with_float_params(graph.CeluOp, "Celu", {"alpha": "alpha"})


def convert_celu(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Celu (alpha, nonzero) -> graph.celu."""
    if ctx.float_attr("alpha", 1.0) == 0.0:
        raise ctx.error("attribute alpha=0 is not supported (Celu divides by alpha)")
    return _convert_celu(ctx)


def convert_leaky_relu(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX LeakyRelu (alpha, default 0.01) -> graph.leaky_relu."""
    alpha = ctx.float_attr("alpha", 0.01)
    if not math.isfinite(alpha):
        raise ctx.error(f"attribute alpha={alpha} is not a finite number")
    x = ctx.value(0)
    if isinstance(x, np.ndarray):
        return [folded(np.where(x >= 0, x, np.float32(alpha) * x), x)]
    return [ctx.emit(graph.LeakyReluOp(x, alpha)).results[0]]


def convert_gelu(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Gelu (opset 20; approximate "none" or "tanh") -> graph.gelu."""
    approximate = ctx.attr("approximate", "none")
    if approximate not in graph.elementwise.GELU_APPROXIMATIONS:
        raise ctx.error(f"attribute approximate='{approximate}' is not supported (none, tanh)")
    x = ctx.value(0)
    if isinstance(x, np.ndarray):
        return [folded(graph.elementwise.gelu(x.astype(np.float64), approximate), x)]
    return [ctx.emit(graph.GeluOp(x, approximate)).results[0]]


# -- Clip -------------------------------------------------------------------------


def _clip_bound(ctx: NodeContext, index: int, name: str) -> float | ImportedValue | None:
    """Bound `index` (1 = min, 2 = max) of an opset >= 11 Clip: a float when it is known
    at import time, the runtime value otherwise, None when it is not given."""
    if not ctx.has_input(index):
        return None
    value = ctx.value(index)
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ctx.error(f"{name} must be a scalar, got shape {list(value.shape)}")
        return float(value.reshape(-1)[0])
    if shape_of(value) not in ((), (1,)):
        raise ctx.error(f"{name} must be a scalar, got shape {list(shape_of(value))}")
    return value


def convert_clip(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Clip -> graph.clip: min(max(x, min), max).

    Bounds are attributes before opset 11 and optional inputs after; bounds known at
    import time become the op's properties (an infinite bound clamps nothing), bounds
    only known at run time become `graph.maximum` / `graph.minimum` with that scalar.
    """
    if ctx.has_attr("min") or ctx.has_attr("max"):
        low: float | ImportedValue | None = ctx.float_attr("min", -math.inf)
        high: float | ImportedValue | None = ctx.float_attr("max", math.inf)
    else:
        low, high = _clip_bound(ctx, 1, "min"), _clip_bound(ctx, 2, "max")
    # an infinite bound clamps nothing
    if isinstance(low, float) and low == -math.inf:
        low = None
    if isinstance(high, float) and high == math.inf:
        high = None
    result = ctx.value(0)
    static: dict[str, float] = {}
    for key, bound, op_class in (("min", low, graph.MaximumOp), ("max", high, graph.MinimumOp)):
        if bound is None:
            continue
        if isinstance(bound, float) and not math.isnan(bound):
            static[key] = bound
            continue
        # a runtime bound, or NaN (which makes every element NaN): an element-wise op
        result = _clip_static(ctx, result, static)
        static = {}
        if isinstance(bound, float):
            bound = ctx.materialize(np.asarray(bound, dtype=_dtype_of(result)))
        if isinstance(result, np.ndarray):
            result = ctx.materialize(result)
        result = ctx.emit(op_class(result, bound)).results[0]
    return [_clip_static(ctx, result, static)]


def _dtype_of(value: ImportedValue) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    return numpy_dtype(value.type)


def _clip_static(ctx: NodeContext, x: ImportedValue, bounds: dict[str, float]) -> ImportedValue:
    if not bounds:
        return x
    if isinstance(x, np.ndarray):
        low, high = bounds.get("min"), bounds.get("max")
        result = x
        if low is not None:
            result = np.maximum(result, np.asarray(low).astype(x.dtype))
        if high is not None:
            result = np.minimum(result, np.asarray(high).astype(x.dtype))
        return folded(result, x)
    return ctx.emit(graph.ClipOp(x, bounds.get("min"), bounds.get("max"))).results[0]


# -- binary and variadic ---------------------------------------------------------------


def _operand(ctx: NodeContext, value: ImportedValue, index: int | None):
    """`value` as an SSA value: input `index` of the node (materialised once per ONNX
    name) or, for a value folded from several inputs (`index` None), a new constant."""
    if not isinstance(value, np.ndarray):
        return value
    return ctx.operand(index) if index is not None else ctx.materialize(value)


def _combine(
    ctx: NodeContext,
    op_class: type[graph.BroadcastBinaryOp],
    lhs: ImportedValue,
    lhs_index: int | None,
    rhs_index: int,
) -> ImportedValue:
    """op(lhs, input `rhs_index`), folded when both are known at import time."""
    rhs = ctx.value(rhs_index)
    ctx.broadcast(shape_of(lhs), shape_of(rhs))
    if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
        return folded(op_class.compute(lhs, rhs), lhs)
    lhs_value = _operand(ctx, lhs, lhs_index)
    return ctx.emit(op_class(lhs_value, _operand(ctx, rhs, rhs_index))).results[0]


def _binary(op_class: type[graph.BroadcastBinaryOp], onnx_name: str) -> Convert:
    def convert(ctx: NodeContext) -> list[ImportedValue]:
        return [_combine(ctx, op_class, ctx.value(0), 0, 1)]

    convert.__name__ = f"convert_{_onnx_name(op_class)}"
    convert.__doc__ = f"ONNX {onnx_name} -> {op_class.name}."
    return convert


convert_add = _binary(graph.AddOp, "Add")
convert_sub = _binary(graph.SubOp, "Sub")
convert_mul = _binary(graph.MulOp, "Mul")
convert_div = _binary(graph.DivOp, "Div")
convert_pow = _binary(graph.PowOp, "Pow")


def convert_prelu(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX PRelu -> graph.prelu; the slope broadcasts to the input (one way)."""
    shape = ctx.broadcast(ctx.shape(0), ctx.shape(1))
    if shape != ctx.shape(0):
        raise ctx.error(
            f"slope of shape {list(ctx.shape(1))} does not broadcast to the input's "
            f"shape {list(ctx.shape(0))}"
        )
    return [_combine(ctx, graph.PReluOp, ctx.value(0), 0, 1)]


def convert_mod(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Mod -> graph.mod: fmod=0 takes the divisor's sign (for floats since opset
    28; strato accepts it at every opset), fmod=1 the dividend's."""
    truncated = ctx.flag_attr("fmod", 0)
    lhs, rhs = ctx.value(0), ctx.value(1)
    ctx.broadcast(shape_of(lhs), shape_of(rhs))
    if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
        return [folded(graph.elementwise.remainder(lhs, rhs, truncated), lhs)]
    op = graph.ModOp(_operand(ctx, lhs, 0), _operand(ctx, rhs, 1), truncated)
    return [ctx.emit(op).results[0]]


def _variadic(op_class: type[graph.BroadcastBinaryOp], onnx_name: str) -> Convert:
    def convert(ctx: NodeContext) -> list[ImportedValue]:
        count = len(ctx.node.input)
        if count == 0:
            raise ctx.error("needs at least one input")
        result = ctx.value(0)
        for index in range(1, count):
            result = _combine(ctx, op_class, result, 0 if index == 1 else None, index)
        return [result]

    convert.__name__ = f"convert_{onnx_name.lower()}"
    convert.__doc__ = (
        f"ONNX {onnx_name} (variadic) -> a chain of {op_class.name}; one input is returned "
        "as it is."
    )
    return convert


convert_max = _variadic(graph.MaximumOp, "Max")
convert_min = _variadic(graph.MinimumOp, "Min")
convert_sum = _variadic(graph.AddOp, "Sum")


def convert_mean(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Mean (variadic, numpy broadcasting) -> the chain of graph.add of Sum, then
    graph.div by the number of inputs."""
    (total,) = convert_sum(ctx)
    count = len(ctx.node.input)
    if count == 1:
        return [total]
    if isinstance(total, np.ndarray):
        return [folded(graph.DivOp.compute(total, np.asarray(count, total.dtype)), total)]
    divisor = ctx.materialize(np.asarray(count, dtype=numpy_dtype(total.type)))
    return [ctx.emit(graph.DivOp(total, divisor)).results[0]]
