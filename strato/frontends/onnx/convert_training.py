"""ONNX's optimizer operators (domain `ai.onnx.preview.training`): Adagrad, Adam and
Momentum, one step of each for every tensor they update, as the ONNX reference computes
it, in the element type of the tensors:

    Adagrad   r = R / (1 + T * decay_factor);  g = norm_coefficient * X + G
              H' = H + g * g;  X' = X - r * g / (sqrt(H') + epsilon)
    Adam      g = norm_coefficient * X + G;  V' = alpha * V + (1 - alpha) * g
              H' = beta * H + (1 - beta) * g * g
              r = R * sqrt(1 - beta^T) / (1 - alpha^T) when T > 0, else R
              X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') + epsilon))
    Momentum  g = norm_coefficient * X + G;  V' = alpha * V + (beta if T > 0 else 1) * g
              X' = X - R * V' (standard) or X - R * (g + alpha * V') (nesterov)

R (the learning rate) and T (the step count) may be run-time values. The inputs are R, T,
then the tensors X, their gradients G, then their states (V, H); the outputs the new
tensors, then the new states.
"""

from __future__ import annotations

import numpy as np

from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.expansion import Expansion

TRAINING_DOMAIN = "ai.onnx.preview.training"


class _Step(Expansion):
    """An optimizer step's arithmetic, in the element type of the tensors it updates."""

    def __init__(self, ctx: NodeContext, dtype: np.dtype):
        super().__init__(ctx)
        self.dtype = dtype

    def scalar(self, value: float) -> str:
        return self.constant(np.asarray(value, self.dtype))

    def add(self, a: str, b: str) -> str:
        return self.node("Add", [a, b])

    def sub(self, a: str, b: str) -> str:
        return self.node("Sub", [a, b])

    def mul(self, a: str, b: str) -> str:
        return self.node("Mul", [a, b])

    def div(self, a: str, b: str) -> str:
        return self.node("Div", [a, b])

    def pow(self, a: str, b: str) -> str:
        return self.node("Pow", [a, b])

    def sqrt(self, a: str) -> str:
        return self.node("Sqrt", [a])

    def where(self, condition: str, a: str, b: str) -> str:
        return self.node("Where", [condition, a, b])

    def started(self) -> str:
        """Whether T (the node's input 1) is above 0."""
        return self.node("Greater", [self.ctx.node.input[1], self.constant(np.int64(0))])

    def times(self, factor: float, name: str) -> str:
        return self.mul(self.scalar(factor), name)


def _groups(ctx: NodeContext, states: int) -> tuple[int, _Step, str, str]:
    """The number of updated tensors, the step builder, and R and T in the tensors' type
    (T also kept as a float of that type)."""
    count, remainder = divmod(len(ctx.node.input) - 2, 2 + states)
    if remainder or count < 1:
        raise ctx.error(
            f"takes R, T and {2 + states} inputs per tensor it updates, got {len(ctx.node.input)} inputs"
        )
    x = ctx.value(2)
    dtype = x.dtype if isinstance(x, np.ndarray) else numpy_dtype(x.type)
    if dtype.kind != "f":
        raise ctx.error(f"the tensors it updates must be floats, got {dtype}")
    step = _Step(ctx, dtype)
    rate = step.cast(ctx.node.input[0], dtype)
    count_t = step.cast(ctx.node.input[1], dtype)
    return count, step, rate, count_t


def _regularized(step: _Step, ctx: NodeContext, x: str, g: str) -> str:
    norm = ctx.float_attr("norm_coefficient", 0.0)
    return step.add(step.times(norm, x), g) if norm else g


def convert_adagrad(ctx: NodeContext) -> list[ImportedValue]:
    count, step, rate, t = _groups(ctx, 1)
    decay, epsilon = ctx.float_attr("decay_factor", 0.0), ctx.float_attr("epsilon", 1e-6)
    r = step.div(rate, step.add(step.scalar(1.0), step.times(decay, t)))
    names = ctx.node.input
    xs, hs = [], []
    for k in range(count):
        x, g, h = names[2 + k], names[2 + count + k], names[2 + 2 * count + k]
        g = _regularized(step, ctx, x, g)
        h_new = step.add(h, step.mul(g, g))
        adaptive = step.add(step.sqrt(h_new), step.scalar(epsilon))
        xs.append(step.sub(x, step.div(step.mul(r, g), adaptive)))
        hs.append(h_new)
    return [step.result(name) for name in xs + hs]


def convert_adam(ctx: NodeContext) -> list[ImportedValue]:
    count, step, rate, t = _groups(ctx, 2)
    alpha, beta = ctx.float_attr("alpha", 0.9), ctx.float_attr("beta", 0.999)
    epsilon = ctx.float_attr("epsilon", 1e-6)
    post = ctx.float_attr("norm_coefficient_post", 0.0)
    one = step.scalar(1.0)
    corrected = step.div(
        step.mul(rate, step.sqrt(step.sub(one, step.pow(step.scalar(beta), t)))),
        step.sub(one, step.pow(step.scalar(alpha), t)),
    )
    r = step.where(step.started(), corrected, rate)
    names = ctx.node.input
    xs, vs, hs = [], [], []
    for k in range(count):
        x, g = names[2 + k], names[2 + count + k]
        v, h = names[2 + 2 * count + k], names[2 + 3 * count + k]
        g = _regularized(step, ctx, x, g)
        v_new = step.add(step.times(alpha, v), step.times(1.0 - alpha, g))
        h_new = step.add(step.times(beta, h), step.times(1.0 - beta, step.mul(g, g)))
        root = step.add(step.sqrt(h_new), step.scalar(epsilon))
        x_new = step.sub(x, step.mul(r, step.div(v_new, root)))
        xs.append(step.times(1.0 - post, x_new) if post else x_new)
        vs.append(v_new)
        hs.append(h_new)
    return [step.result(name) for name in xs + vs + hs]


def convert_momentum(ctx: NodeContext) -> list[ImportedValue]:
    count, step, rate, _ = _groups(ctx, 1)
    alpha, beta = ctx.float_attr("alpha", 0.0), ctx.float_attr("beta", 0.0)
    mode = ctx.attr("mode", "standard")
    if mode not in ("standard", "nesterov"):
        raise ctx.error(f"mode '{mode}' is not 'standard' or 'nesterov'")
    scale = step.where(step.started(), step.scalar(beta), step.scalar(1.0))
    names = ctx.node.input
    xs, vs = [], []
    for k in range(count):
        x, g, v = names[2 + k], names[2 + count + k], names[2 + 2 * count + k]
        g = _regularized(step, ctx, x, g)
        v_new = step.add(step.times(alpha, v), step.mul(scale, g))
        direction = v_new if mode == "standard" else step.add(g, step.times(alpha, v_new))
        xs.append(step.sub(x, step.mul(rate, direction)))
        vs.append(v_new)
    return [step.result(name) for name in xs + vs]


TRAINING_CONVERTERS = {
    "Adagrad": convert_adagrad,
    "Adam": convert_adam,
    "Momentum": convert_momentum,
}
"""The `ai.onnx.preview.training` operators strato imports, by op type."""


__all__ = ["TRAINING_CONVERTERS", "TRAINING_DOMAIN"]
