"""Element-wise operators: unary maps and binary ops with numpy broadcasting.

Every operator here computes each output element from the input elements at the same
(broadcast) position, so all are `injective` (unary) or `broadcast` (binary) for fusion.
Scalar parameters (LeakyRelu's alpha, Clip's bounds, Gelu's approximation) are
properties, printed as keywords after the operand:

    %y = graph.leaky_relu %x alpha 1.000000e-01 : tensor<4x8xf32>
    %z = graph.clip %y min 0.000000e+00 max 6.000000e+00 : tensor<4x8xf32>
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
)
from xdsl.irdl.operations import ParsePropInAttrDict
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    BroadcastBinaryOp,
    UnaryElementwiseOp,
    element_type,
)
from strato.dialects.tensor_types import numpy_dtype

# -- keyword parameters: `name value` pairs after the operands ----------------------

ParamKind = type[FloatAttr] | type[StringAttr]


def print_keyword_params(printer: Printer, op: Operation, kinds: Mapping[str, ParamKind]) -> None:
    """Print the set properties of `op` named in `kinds`, in order, as ` name value`:
    floats in MLIR's float syntax (f32 values round-trip), strings as bare words."""
    for name, kind in kinds.items():
        value = op.properties.get(name)
        if value is None:
            continue
        printer.print_string(f" {name} ")
        if kind is FloatAttr:
            assert isinstance(value, FloatAttr)
            printer.print_float(value.value.data, f32)
        else:
            assert isinstance(value, StringAttr)
            printer.print_string(value.data)


def parse_keyword_params(parser: Parser, kinds: Mapping[str, ParamKind]) -> dict[str, Attribute]:
    """Parse what `print_keyword_params` prints: each parameter is optional but they
    come in the order of `kinds`."""
    properties: dict[str, Attribute] = {}
    for name, kind in kinds.items():
        if parser.parse_optional_keyword(name) is None:
            continue
        if kind is FloatAttr:
            value = parser.parse_number(context_msg=f" as the value of '{name}'")
            properties[name] = FloatAttr(float(value), f32)
        else:
            properties[name] = StringAttr(parser.parse_identifier(context_msg=f" for '{name}'"))
    return properties


def check_finite(op: Operation, name: str) -> None:
    """A float parameter must be a finite number when it is set."""
    value = op.properties.get(name)
    if isinstance(value, FloatAttr) and not math.isfinite(value.value.data):
        raise VerifyException(f"'{op.name}' {name} must be finite, got {value.value.data}")


def float_param(op: Operation, name: str) -> float | None:
    value = op.properties.get(name)
    return value.value.data if isinstance(value, FloatAttr) else None


# -- numeric helpers of the reference semantics ---------------------------------------


def _in_f64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """Evaluate a float function in f64 and round once to the input's type (close to a
    correctly rounded libm, as the te interpreter does)."""

    def wrapped(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64)), dtype=x.dtype)

    return wrapped


_erf_f64 = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of an f64 array (numpy has none)."""
    return np.asarray(_erf_f64(x), dtype=np.float64)


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    """Gelu on f64: x * Phi(x), or its tanh approximation."""
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1.0 + np.tanh(inner))
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def truncating_divide(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Division as C and arith do it: floats divide, integers truncate toward zero."""
    if not np.issubdtype(np.result_type(lhs, rhs), np.integer):  # floats, bf16 included
        with np.errstate(all="ignore"):
            return np.divide(lhs, rhs)
    with np.errstate(all="ignore"):
        quotient = np.floor_divide(lhs, rhs)
        inexact = (np.remainder(lhs, rhs) != 0) & ((lhs < 0) != (rhs < 0))
    return quotient + inexact


# -- unary operators --------------------------------------------------------------


class MathUnaryOp(UnaryElementwiseOp):
    """A unary element-wise op whose reference semantics is `compute` on numpy arrays."""

    @staticmethod
    def compute(x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(inputs[0])
        with np.errstate(all="ignore"):
            return [np.asarray(self.compute(x), dtype=x.dtype)]


class ParameterizedUnaryOp(UnaryElementwiseOp):
    """A unary element-wise op with scalar parameters (properties listed in `PARAMS`),
    printed as keywords between the operand and the type."""

    PARAMS: ClassVar[dict[str, ParamKind]] = {}
    assembly_format = None

    def __init__(self, input: SSAValue | Operation, properties: Mapping[str, Attribute]):
        value = SSAValue.get(input)
        IRDLOperation.__init__(
            self, operands=[value], result_types=[value.type], properties=dict(properties)
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        print_keyword_params(printer, self, self.PARAMS)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)

    @classmethod
    def parse(cls, parser: Parser) -> ParameterizedUnaryOp:
        operand = parser.parse_unresolved_operand()
        properties = parse_keyword_params(parser, cls.PARAMS)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        value = parser.resolve_operand(operand, type_)
        return cls.create(
            operands=[value], result_types=[type_], properties=properties, attributes=attributes
        )


@irdl_op_definition
class ReluOp(MathUnaryOp):
    """Rectified linear unit: result[i] = max(input[i], 0).

        %r = graph.relu %a : tensor<4x8xf32>
    """

    name = "graph.relu"

    @staticmethod
    def compute(x: np.ndarray) -> np.ndarray:
        return np.maximum(x, 0)


@irdl_op_definition
class LeakyReluOp(ParameterizedUnaryOp):
    """Leaky rectified linear unit: result[i] = input[i] if input[i] >= 0 else
    alpha * input[i].

        %r = graph.leaky_relu %a alpha 1.000000e-02 : tensor<4x8xf32>
    """

    name = "graph.leaky_relu"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"alpha": FloatAttr}

    alpha = prop_def(FloatAttr[Float32Type])

    def __init__(self, input: SSAValue | Operation, alpha: float = 0.01):
        super().__init__(input, {"alpha": FloatAttr(alpha, f32)})

    def verify_(self) -> None:
        check_finite(self, "alpha")
        super().verify_()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(inputs[0])
        alpha = self.alpha.value.data
        return [np.where(x >= 0, x, alpha * x).astype(x.dtype)]


@irdl_op_definition
class ClipOp(ParameterizedUnaryOp):
    """Clamps into [min, max]: result[i] = min(max(input[i], min), max); a missing bound
    does not clamp. When min > max every element becomes max (as in ONNX and numpy).

        %r = graph.clip %a min 0.000000e+00 max 6.000000e+00 : tensor<4x8xf32>
        %s = graph.clip %a max 1.000000e+00 : tensor<4x8xf32>
    """

    name = "graph.clip"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"min": FloatAttr, "max": FloatAttr}
    FLOAT_OPERANDS: ClassVar[bool] = False

    min = opt_prop_def(FloatAttr[Float32Type])
    max = opt_prop_def(FloatAttr[Float32Type])

    def __init__(
        self,
        input: SSAValue | Operation,
        min: float | None = None,
        max: float | None = None,
    ):
        properties = {}
        if min is not None:
            properties["min"] = FloatAttr(min, f32)
        if max is not None:
            properties["max"] = FloatAttr(max, f32)
        super().__init__(input, properties)

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        return float_param(self, "min"), float_param(self, "max")

    def verify_(self) -> None:
        check_finite(self, "min")
        check_finite(self, "max")
        super().verify_()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(inputs[0])
        low, high = self.bounds
        result = x
        if low is not None:
            result = np.maximum(result, np.asarray(low).astype(x.dtype))
        if high is not None:
            result = np.minimum(result, np.asarray(high).astype(x.dtype))
        return [np.asarray(result, dtype=x.dtype)]


@irdl_op_definition
class SigmoidOp(MathUnaryOp):
    """Logistic function: result[i] = 1 / (1 + exp(-input[i])).

        %r = graph.sigmoid %a : tensor<4x8xf32>
    """

    name = "graph.sigmoid"
    compute = staticmethod(_in_f64(lambda x: 1.0 / (1.0 + np.exp(-x))))


@irdl_op_definition
class TanhOp(MathUnaryOp):
    """Hyperbolic tangent, element by element.

        %r = graph.tanh %a : tensor<4x8xf32>
    """

    name = "graph.tanh"
    compute = staticmethod(_in_f64(np.tanh))


@irdl_op_definition
class ErfOp(MathUnaryOp):
    """Gauss error function, element by element.

        %r = graph.erf %a : tensor<4x8xf32>
    """

    name = "graph.erf"
    compute = staticmethod(_in_f64(erf))


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(ParameterizedUnaryOp):
    """Gaussian error linear unit: result[i] = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)),
    or with `approximate tanh` 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).

        %r = graph.gelu %a : tensor<4x8xf32>
        %s = graph.gelu %a approximate tanh : tensor<4x8xf32>
    """

    name = "graph.gelu"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"approximate": StringAttr}

    approximate = opt_prop_def(StringAttr)

    def __init__(self, input: SSAValue | Operation, approximate: str = "none"):
        properties = {} if approximate == "none" else {"approximate": StringAttr(approximate)}
        super().__init__(input, properties)

    @property
    def approximation(self) -> str:
        return "none" if self.approximate is None else self.approximate.data

    def verify_(self) -> None:
        if self.approximation not in GELU_APPROXIMATIONS:
            raise VerifyException(
                f"'graph.gelu' approximate must be one of {', '.join(GELU_APPROXIMATIONS)}, "
                f"got '{self.approximation}'"
            )
        super().verify_()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [_in_f64(lambda x: gelu(x, self.approximation))(inputs[0])]


@irdl_op_definition
class SqrtOp(MathUnaryOp):
    """Square root, element by element (NaN below zero).

        %r = graph.sqrt %a : tensor<4x8xf32>
    """

    name = "graph.sqrt"
    compute = staticmethod(_in_f64(np.sqrt))


@irdl_op_definition
class ExpOp(MathUnaryOp):
    """Natural exponential, element by element.

        %r = graph.exp %a : tensor<4x8xf32>
    """

    name = "graph.exp"
    compute = staticmethod(_in_f64(np.exp))


@irdl_op_definition
class LogOp(MathUnaryOp):
    """Natural logarithm, element by element (-inf at zero, NaN below).

        %r = graph.log %a : tensor<4x8xf32>
    """

    name = "graph.log"
    compute = staticmethod(_in_f64(np.log))


@irdl_op_definition
class NegOp(MathUnaryOp):
    """Negation: result[i] = -input[i] (integers wrap).

        %r = graph.neg %a : tensor<4x8xf32>
    """

    name = "graph.neg"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(x: np.ndarray) -> np.ndarray:
        return np.negative(x)


@irdl_op_definition
class AbsOp(MathUnaryOp):
    """Absolute value: result[i] = |input[i]| (integers wrap at the minimum).

        %r = graph.abs %a : tensor<4x8xf32>
    """

    name = "graph.abs"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(x: np.ndarray) -> np.ndarray:
        return np.abs(x)


@irdl_op_definition
class FloorOp(MathUnaryOp):
    """Rounds down to an integral value, element by element.

        %r = graph.floor %a : tensor<4x8xf32>
    """

    name = "graph.floor"
    compute = staticmethod(np.floor)


@irdl_op_definition
class CeilOp(MathUnaryOp):
    """Rounds up to an integral value, element by element.

        %r = graph.ceil %a : tensor<4x8xf32>
    """

    name = "graph.ceil"
    compute = staticmethod(np.ceil)


@irdl_op_definition
class RoundOp(MathUnaryOp):
    """Rounds to the nearest integral value, halves to even (2.5 -> 2, -1.5 -> -2).

        %r = graph.round %a : tensor<4x8xf32>
    """

    name = "graph.round"
    compute = staticmethod(np.rint)


@irdl_op_definition
class SignOp(MathUnaryOp):
    """-1, 0 or 1 by the sign of each element (NaN stays NaN; unsigned integers give 0
    or 1).

        %r = graph.sign %a : tensor<4x8xf32>
    """

    name = "graph.sign"
    FLOAT_OPERANDS: ClassVar[bool] = False
    compute = staticmethod(np.sign)


@irdl_op_definition
class SinOp(MathUnaryOp):
    """Sine (radians), element by element.

        %r = graph.sin %a : tensor<4x8xf32>
    """

    name = "graph.sin"
    compute = staticmethod(_in_f64(np.sin))


@irdl_op_definition
class CosOp(MathUnaryOp):
    """Cosine (radians), element by element.

        %r = graph.cos %a : tensor<4x8xf32>
    """

    name = "graph.cos"
    compute = staticmethod(_in_f64(np.cos))


@irdl_op_definition
class TanOp(MathUnaryOp):
    """Tangent (radians), element by element.

        %r = graph.tan %a : tensor<4x8xf32>
    """

    name = "graph.tan"
    compute = staticmethod(_in_f64(np.tan))


@irdl_op_definition
class AsinOp(MathUnaryOp):
    """Arcsine (radians in [-pi/2, pi/2]; NaN outside [-1, 1]), element by element.

        %r = graph.asin %a : tensor<4x8xf32>
    """

    name = "graph.asin"
    compute = staticmethod(_in_f64(np.arcsin))


@irdl_op_definition
class AcosOp(MathUnaryOp):
    """Arccosine (radians in [0, pi]; NaN outside [-1, 1]), element by element.

        %r = graph.acos %a : tensor<4x8xf32>
    """

    name = "graph.acos"
    compute = staticmethod(_in_f64(np.arccos))


@irdl_op_definition
class AtanOp(MathUnaryOp):
    """Arctangent (radians in (-pi/2, pi/2)), element by element.

        %r = graph.atan %a : tensor<4x8xf32>
    """

    name = "graph.atan"
    compute = staticmethod(_in_f64(np.arctan))


@irdl_op_definition
class SinhOp(MathUnaryOp):
    """Hyperbolic sine, element by element.

        %r = graph.sinh %a : tensor<4x8xf32>
    """

    name = "graph.sinh"
    compute = staticmethod(_in_f64(np.sinh))


@irdl_op_definition
class CoshOp(MathUnaryOp):
    """Hyperbolic cosine, element by element.

        %r = graph.cosh %a : tensor<4x8xf32>
    """

    name = "graph.cosh"
    compute = staticmethod(_in_f64(np.cosh))


@irdl_op_definition
class AsinhOp(MathUnaryOp):
    """Inverse hyperbolic sine, element by element.

        %r = graph.asinh %a : tensor<4x8xf32>
    """

    name = "graph.asinh"
    compute = staticmethod(_in_f64(np.arcsinh))


@irdl_op_definition
class AcoshOp(MathUnaryOp):
    """Inverse hyperbolic cosine (NaN below 1), element by element.

        %r = graph.acosh %a : tensor<4x8xf32>
    """

    name = "graph.acosh"
    compute = staticmethod(_in_f64(np.arccosh))


@irdl_op_definition
class AtanhOp(MathUnaryOp):
    """Inverse hyperbolic tangent (+/-inf at +/-1, NaN outside [-1, 1]), element by element.

        %r = graph.atanh %a : tensor<4x8xf32>
    """

    name = "graph.atanh"
    compute = staticmethod(_in_f64(np.arctanh))


@irdl_op_definition
class ReciprocalOp(MathUnaryOp):
    """result[i] = 1 / input[i] (+/-inf at +/-0).

        %r = graph.reciprocal %a : tensor<4x8xf32>
    """

    name = "graph.reciprocal"
    compute = staticmethod(_in_f64(lambda x: 1.0 / x))


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)), without overflow: max(x, 0) + log1p(exp(-|x|))."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


@irdl_op_definition
class SoftplusOp(MathUnaryOp):
    """Softplus: result[i] = log(1 + exp(input[i])).

        %r = graph.softplus %a : tensor<4x8xf32>
    """

    name = "graph.softplus"
    compute = staticmethod(_in_f64(softplus))


@irdl_op_definition
class SoftsignOp(MathUnaryOp):
    """Softsign: result[i] = input[i] / (1 + |input[i]|).

        %r = graph.softsign %a : tensor<4x8xf32>
    """

    name = "graph.softsign"
    compute = staticmethod(_in_f64(lambda x: x / (1.0 + np.abs(x))))


@irdl_op_definition
class MishOp(MathUnaryOp):
    """Mish: result[i] = x * tanh(softplus(x)).

        %r = graph.mish %a : tensor<4x8xf32>
    """

    name = "graph.mish"
    compute = staticmethod(_in_f64(lambda x: x * np.tanh(softplus(x))))


@irdl_op_definition
class HardSwishOp(MathUnaryOp):
    """Hard swish: result[i] = x * max(0, min(1, x / 6 + 1 / 2)).

        %r = graph.hard_swish %a : tensor<4x8xf32>
    """

    name = "graph.hard_swish"
    compute = staticmethod(_in_f64(lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)))


class FloatParamsUnaryOp(ParameterizedUnaryOp):
    """A unary op whose parameters are all finite floats, each with an ONNX default;
    `function` is its reference semantics on f64 arrays."""

    DEFAULTS: ClassVar[dict[str, float]] = {}

    def __init__(self, input: SSAValue | Operation, **params: float):
        unknown = set(params) - set(self.DEFAULTS)
        if unknown:
            raise TypeError(f"{self.name} has no parameter {', '.join(sorted(unknown))}")
        values = {**self.DEFAULTS, **params}
        super().__init__(input, {name: FloatAttr(values[name], f32) for name in self.PARAMS})

    def param(self, name: str) -> float:
        value = float_param(self, name)
        assert value is not None, f"{self.name} has no {name}"
        return value

    def verify_(self) -> None:
        for name in self.PARAMS:
            check_finite(self, name)
        super().verify_()

    def function(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [_in_f64(self.function)(inputs[0])]


def _elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


@irdl_op_definition
class EluOp(FloatParamsUnaryOp):
    """Exponential linear unit: x if x > 0 else alpha * (exp(x) - 1).

        %r = graph.elu %a alpha 1.000000e+00 : tensor<4x8xf32>
    """

    name = "graph.elu"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"alpha": FloatAttr}
    DEFAULTS: ClassVar[dict[str, float]] = {"alpha": 1.0}
    alpha = prop_def(FloatAttr[Float32Type])

    def function(self, x: np.ndarray) -> np.ndarray:
        return _elu(x, self.param("alpha"))


SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


@irdl_op_definition
class SeluOp(FloatParamsUnaryOp):
    """Scaled exponential linear unit: gamma * (x if x > 0 else alpha * (exp(x) - 1)).

        %r = graph.selu %a alpha 1.673263e+00 gamma 1.050701e+00 : tensor<4x8xf32>
    """

    name = "graph.selu"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"alpha": FloatAttr, "gamma": FloatAttr}
    DEFAULTS: ClassVar[dict[str, float]] = {"alpha": SELU_ALPHA, "gamma": SELU_GAMMA}
    alpha = prop_def(FloatAttr[Float32Type])
    gamma = prop_def(FloatAttr[Float32Type])

    def function(self, x: np.ndarray) -> np.ndarray:
        return self.param("gamma") * _elu(x, self.param("alpha"))


@irdl_op_definition
class CeluOp(FloatParamsUnaryOp):
    """Continuously differentiable ELU: max(0, x) + min(0, alpha * (exp(x / alpha) - 1));
    alpha is nonzero.

        %r = graph.celu %a alpha 1.000000e+00 : tensor<4x8xf32>
    """

    name = "graph.celu"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"alpha": FloatAttr}
    DEFAULTS: ClassVar[dict[str, float]] = {"alpha": 1.0}
    alpha = prop_def(FloatAttr[Float32Type])

    def verify_(self) -> None:
        if self.param("alpha") == 0.0:
            raise VerifyException("'graph.celu' alpha must be nonzero")
        super().verify_()

    def function(self, x: np.ndarray) -> np.ndarray:
        alpha = self.param("alpha")
        return np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha))


@irdl_op_definition
class HardSigmoidOp(FloatParamsUnaryOp):
    """Hard sigmoid: max(0, min(1, alpha * x + beta)).

        %r = graph.hard_sigmoid %a alpha 2.000000e-01 beta 5.000000e-01 : tensor<4x8xf32>
    """

    name = "graph.hard_sigmoid"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"alpha": FloatAttr, "beta": FloatAttr}
    DEFAULTS: ClassVar[dict[str, float]] = {"alpha": 0.2, "beta": 0.5}
    alpha = prop_def(FloatAttr[Float32Type])
    beta = prop_def(FloatAttr[Float32Type])

    def function(self, x: np.ndarray) -> np.ndarray:
        return np.clip(self.param("alpha") * x + self.param("beta"), 0.0, 1.0)


@irdl_op_definition
class ThresholdedReluOp(FloatParamsUnaryOp):
    """Thresholded rectified linear unit: x if x > alpha else 0.

        %r = graph.thresholded_relu %a alpha 1.000000e+00 : tensor<4x8xf32>
    """

    name = "graph.thresholded_relu"
    PARAMS: ClassVar[dict[str, ParamKind]] = {"alpha": FloatAttr}
    DEFAULTS: ClassVar[dict[str, float]] = {"alpha": 1.0}
    alpha = prop_def(FloatAttr[Float32Type])

    def function(self, x: np.ndarray) -> np.ndarray:
        return np.where(x > self.param("alpha"), x, 0.0)


# -- binary operators -------------------------------------------------------------


@irdl_op_definition
class AddOp(BroadcastBinaryOp):
    """Element-wise sum with numpy broadcasting: result[i] = lhs[i'] + rhs[i''].

        %r = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.add"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs + rhs


@irdl_op_definition
class SubOp(BroadcastBinaryOp):
    """Element-wise difference with numpy broadcasting: result[i] = lhs[i'] - rhs[i''].

        %r = graph.sub %a, %b : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    """

    name = "graph.sub"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs - rhs


@irdl_op_definition
class MulOp(BroadcastBinaryOp):
    """Element-wise product with numpy broadcasting: result[i] = lhs[i'] * rhs[i''].

        %r = graph.mul %a, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.mul"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs * rhs


@irdl_op_definition
class DivOp(BroadcastBinaryOp):
    """Element-wise quotient with numpy broadcasting: result[i] = lhs[i'] / rhs[i''];
    integer division truncates toward zero.

        %r = graph.div %a, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    """

    name = "graph.div"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return truncating_divide(lhs, rhs)


@irdl_op_definition
class PowOp(BroadcastBinaryOp):
    """Element-wise power with numpy broadcasting: result[i] = lhs[i'] ** rhs[i''].

    The exponent may have another element type than the base; the result has the
    base's.

        %r = graph.pow %a, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    """

    name = "graph.pow"
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    def verify_(self) -> None:
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        if element_type(self.lhs) != result_type.element_type:
            raise VerifyException(
                f"'graph.pow' base element type {element_type(self.lhs)} differs from "
                f"result element type {result_type.element_type}"
            )
        super().verify_()

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """lhs ** rhs in the element type of lhs: floats in f64 rounded once, integers
        exactly (truncated toward zero for negative exponents)."""
        base, exponent = np.asarray(lhs), np.asarray(rhs)
        with np.errstate(all="ignore"):
            if base.dtype.kind == "f":
                result = np.power(base.astype(np.float64), exponent.astype(np.float64))
            elif exponent.dtype.kind in "iu" and not np.any(exponent < 0):
                result = np.power(base, exponent.astype(base.dtype))
            else:
                wide = np.power(base.astype(np.float64), exponent.astype(np.float64))
                result = np.trunc(wide)
        return np.asarray(result).astype(base.dtype)


@irdl_op_definition
class MaximumOp(BroadcastBinaryOp):
    """Element-wise maximum with numpy broadcasting (NaN if either side is NaN).

        %r = graph.maximum %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.maximum"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return np.maximum(lhs, rhs)


@irdl_op_definition
class MinimumOp(BroadcastBinaryOp):
    """Element-wise minimum with numpy broadcasting (NaN if either side is NaN).

        %r = graph.minimum %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.minimum"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return np.minimum(lhs, rhs)


@irdl_op_definition
class PReluOp(BroadcastBinaryOp):
    """Parametric rectified linear unit: result[i] = lhs[i] if lhs[i] >= 0 else
    rhs[i''] * lhs[i], the slope `rhs` broadcasting to the input.

        %r = graph.prelu %a, %s : (tensor<2x8x4xf32>, tensor<8x1xf32>) -> tensor<2x8x4xf32>
    """

    name = "graph.prelu"
    FLOAT_OPERANDS: ClassVar[bool] = False

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return np.where(lhs < 0, rhs * lhs, lhs)


@irdl_op_definition
class ModOp(BroadcastBinaryOp):
    """Element-wise remainder with numpy broadcasting: by default with the divisor's
    sign (floored, Python's % and numpy's mod); with `fmod` with the dividend's
    (truncated, C's fmod). An integer divided by zero gives 0, a float NaN.

        %r = graph.mod %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
        %s = graph.mod %x, %y {fmod} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "graph.mod"
    FLOAT_OPERANDS: ClassVar[bool] = False

    fmod = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, fmod: bool = False):
        super().__init__(lhs, rhs)
        if fmod:
            self.properties["fmod"] = UnitAttr()

    @property
    def truncated(self) -> bool:
        return self.fmod is not None

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        dtype = numpy_dtype(self.result.type)
        return [np.asarray(remainder(inputs[0], inputs[1], self.truncated), dtype=dtype)]


def remainder(lhs: np.ndarray, rhs: np.ndarray, truncated: bool) -> np.ndarray:
    """graph.mod's reference: numpy's fmod or mod, with 0 for integer division by 0."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    with np.errstate(all="ignore"):
        result = np.fmod(lhs, rhs) if truncated else np.mod(lhs, rhs)
    if lhs.dtype.kind in "iu":
        result = np.where(rhs == 0, 0, result)
    return result


OPS = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    PowOp,
    MaximumOp,
    MinimumOp,
    ReluOp,
    LeakyReluOp,
    ClipOp,
    SigmoidOp,
    TanhOp,
    ErfOp,
    GeluOp,
    SqrtOp,
    ExpOp,
    LogOp,
    NegOp,
    AbsOp,
    FloorOp,
    CeilOp,
    RoundOp,
    SignOp,
    SinOp,
    CosOp,
    TanOp,
    AsinOp,
    AcosOp,
    AtanOp,
    SinhOp,
    CoshOp,
    AsinhOp,
    AcoshOp,
    AtanhOp,
    ReciprocalOp,
    SoftplusOp,
    SoftsignOp,
    MishOp,
    HardSwishOp,
    EluOp,
    SeluOp,
    CeluOp,
    HardSigmoidOp,
    ThresholdedReluOp,
    PReluOp,
    ModOp,
)

__all__ = [
    "AbsOp",
    "AcosOp",
    "AcoshOp",
    "AddOp",
    "AsinOp",
    "AsinhOp",
    "AtanOp",
    "AtanhOp",
    "CeilOp",
    "CeluOp",
    "ClipOp",
    "CosOp",
    "CoshOp",
    "DivOp",
    "EluOp",
    "ErfOp",
    "ExpOp",
    "FloatParamsUnaryOp",
    "FloorOp",
    "GeluOp",
    "HardSigmoidOp",
    "HardSwishOp",
    "LeakyReluOp",
    "LogOp",
    "MathUnaryOp",
    "MaximumOp",
    "MinimumOp",
    "MishOp",
    "ModOp",
    "MulOp",
    "NegOp",
    "PReluOp",
    "ParameterizedUnaryOp",
    "PowOp",
    "ReciprocalOp",
    "ReluOp",
    "RoundOp",
    "SeluOp",
    "SigmoidOp",
    "SignOp",
    "SinOp",
    "SinhOp",
    "SoftplusOp",
    "SoftsignOp",
    "SqrtOp",
    "SubOp",
    "TanOp",
    "TanhOp",
    "ThresholdedReluOp",
]
