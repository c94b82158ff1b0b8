"""graph-raise-composites: recognize operators that exporters write out as chains of
element-wise ops and reductions, and replace each chain by the one op it computes.

Exporters decompose what ONNX had no operator for (before opset 20 GELU, before 17
LayerNormalization): the chain costs a kernel (or several) and a round trip of its
tensor through memory, where the op is an epilogue the producer's kernel fuses
(graph-fuse-ops: a dense layer + bias + GELU is one kernel) or one row-wise kernel.
Each pattern matches the general form, with its operands in any order, its constants
within float32 rounding, and every intermediate value used only inside the chain:

- `RaiseGeluErf`: x * (1 + erf(x / sqrt 2)) * 0.5, the factors 0.5 and 1 / sqrt 2 as
  Mul or Div by constants and in any position of the product, becomes graph.gelu.
- `RaiseGeluTanh`: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), x^3 as Pow(x, 3)
  or a product of three x, becomes graph.gelu approximate tanh.
- `RaiseLayerNorm`: with m = ReduceMean(x) and d = x - m over the last axes (keepdims),
  d / sqrt(ReduceMean(d^2) + epsilon) (d^2 as Pow(d, 2) or d * d), optionally then
  * scale and + bias (constants of the normalized shape), becomes graph.layer_norm.

Requires: functions of graph ops, constants folded (graph-fold-constants), so that the
constants of a chain are graph.constant ops. Leaves illegal: nothing.

Before:

    %c = graph.constant dense<1.41421354> : tensor<f32>
    %d = graph.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %e = graph.erf %d : tensor<4x8xf32>
    %one = graph.constant dense<1.0> : tensor<f32>
    %a = graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %m = graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %half = graph.constant dense<0.5> : tensor<f32>
    %y = graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

After:

    %y = graph.gelu %x : tensor<4x8xf32>
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.tensor_types import array_from_dense

RTOL = 1e-4
"""How close a chain's constant must be to the one the op implies (float32 literals of
1 / sqrt 2 and sqrt(2 / pi) are written with 7 to 9 digits)."""


def _scalar(value: SSAValue) -> float | None:
    """The value of a constant that holds one number (any shape of size 1), else None."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    array = array_from_dense(owner.value)
    if array.size != 1 or not np.issubdtype(array.dtype, np.floating):
        return None
    return float(array.reshape(()))


def _close(value: float | None, expected: float) -> bool:
    return value is not None and math.isclose(value, expected, rel_tol=RTOL)


def _shape(value: SSAValue) -> tuple[int, ...]:
    return static_shape(value)


def _use_count(value: SSAValue) -> int:
    return sum(1 for _ in value.uses)


def _only_use_in(value: SSAValue, chain: set[Operation]) -> bool:
    """Is every use of `value` by an op of the chain?"""
    return all(use.operation in chain for use in value.uses)


@dataclass
class _Product:
    """A value as a product: the constant factor and the other factors, with the ops
    of the product tree (whose intermediate results nothing else reads)."""

    constant: float
    factors: list[SSAValue]
    ops: list[Operation]


def _product(value: SSAValue, root: bool = True) -> _Product:
    """`value` as constant * prod(factors), looking through Mul and through Div by a
    constant; an op below the root is looked through only when `value` has one use."""
    op = value.owner
    constant = _scalar(value)
    if constant is not None:
        return _Product(constant, [], [])
    if not root and _use_count(value) != 1:
        return _Product(1.0, [value], [])
    if isinstance(op, graph.MulOp):
        left, right = _product(op.lhs, False), _product(op.rhs, False)
        return _Product(
            left.constant * right.constant, left.factors + right.factors, [op, *left.ops, *right.ops]
        )
    if isinstance(op, graph.DivOp):
        divisor = _scalar(op.rhs)
        if divisor is not None and divisor != 0.0:
            left = _product(op.lhs, False)
            return _Product(left.constant / divisor, left.factors, [op, *left.ops])
    return _Product(1.0, [value], [])


def _one_plus(value: SSAValue, kind: type[Operation]) -> tuple[Operation, Operation] | None:
    """(the Add, the `kind` op) when `value` = 1 + kind(..) in either order, each used
    once."""
    add = value.owner
    if not isinstance(add, graph.AddOp) or _use_count(value) != 1:
        return None
    for one, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        inner = other.owner
        if _close(_scalar(one), 1.0) and isinstance(inner, kind) and _use_count(other) == 1:
            return add, inner
    return None


def _gelu_parts(op: graph.MulOp | graph.DivOp, kind: type[Operation]):
    """(x, the chain's ops, the argument of `kind`) when `op` computes
    0.5 * x * (1 + kind(arg)), else None."""
    product = _product(op.result)
    if not _close(product.constant, 0.5) or len(product.factors) != 2:
        return None
    for x, t in (product.factors, product.factors[::-1]):
        parts = _one_plus(t, kind)
        if parts is None:
            continue
        add, inner = parts
        return x, [*product.ops, add, inner], inner.operands[0]
    return None


def _is_power_of(value: SSAValue, x: SSAValue, exponent: int) -> list[Operation] | None:
    """The ops computing `value` = x ** exponent (Pow by a constant, or a product of
    `exponent` copies of x), each used once, else None."""
    op = value.owner
    if isinstance(op, graph.PowOp) and op.lhs is x and _close(_scalar(op.rhs), float(exponent)):
        return [op] if _use_count(value) == 1 else None
    product = _product(value, root=_use_count(value) == 1)
    if product.constant == 1.0 and len(product.factors) == exponent and all(f is x for f in product.factors):
        return product.ops
    return None


def _replaceable(root: Operation, chain: Sequence[Operation]) -> bool:
    """Do the chain's intermediate results have no reader outside it?"""
    ops = set(chain) | {root}
    return all(_only_use_in(r, ops) for op in ops if op is not root for r in op.results)


def _replace(
    rewriter: PatternRewriter, root: Operation, chain: Sequence[Operation], build: Callable[[], list[Operation]]
) -> bool:
    """Replace `root` by the ops `build` makes (the last one's result standing for
    root's) when the chain is `_replaceable` and the type stays; erase the chain and
    the constants only it read."""
    if not _replaceable(root, chain):
        return False
    new = build()
    if new[-1].results[0].type != root.results[0].type:
        for op in reversed(new):
            op.erase()
        return False
    constants = [
        v.owner for op in {*chain, root} for v in op.operands if isinstance(v.owner, graph.ConstantOp)
    ]
    rewriter.replace(root, new, [new[-1].results[0]])
    left = [op for op in dict.fromkeys(chain) if op is not root] + list(dict.fromkeys(constants))
    while left:
        dead = [op for op in left if all(not r.uses for r in op.results)]
        if not dead:
            break
        for op in dead:
            rewriter.erase(op)
        left = [op for op in left if op not in dead]
    return True


class RaiseGeluErf(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.MulOp | graph.DivOp):  # the product's last factor
            return
        parts = _gelu_parts(op, graph.ErfOp)
        if parts is None:
            return
        x, chain, argument = parts
        scaled = _product(argument, root=_use_count(argument) == 1)
        if scaled.factors != [x] or not _close(scaled.constant, 1.0 / math.sqrt(2.0)):
            return
        _replace(rewriter, op, [*chain, *scaled.ops], lambda: [graph.GeluOp(x)])


class RaiseGeluTanh(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.MulOp | graph.DivOp):  # the product's last factor
            return
        parts = _gelu_parts(op, graph.TanhOp)
        if parts is None:
            return
        x, chain, argument = parts
        scaled = _product(argument, root=_use_count(argument) == 1)
        if len(scaled.factors) != 1 or not _close(scaled.constant, math.sqrt(2.0 / math.pi)):
            return
        cubic = scaled.factors[0].owner
        if not isinstance(cubic, graph.AddOp) or _use_count(cubic.result) != 1:
            return
        for linear, term in ((cubic.lhs, cubic.rhs), (cubic.rhs, cubic.lhs)):
            if linear is not x or _use_count(term) != 1:
                continue
            product = _product(term, root=True)
            if not _close(product.constant, 0.044715):
                continue
            cube = _cube_ops(product, x)
            if cube is None:
                continue
            ops = [*chain, *scaled.ops, cubic, *product.ops, *cube]
            if _replace(rewriter, op, ops, lambda: [graph.GeluOp(x, "tanh")]):
                return


def _cube_ops(product: _Product, x: SSAValue) -> list[Operation] | None:
    """The ops that make the product's factors x^3 (beyond the product's own), or None."""
    if len(product.factors) == 3 and all(f is x for f in product.factors):
        return []
    if len(product.factors) == 1:
        return _is_power_of(product.factors[0], x, 3)
    return None


class RaiseLayerNorm(RewritePattern):
    """Matched from the Div: (x - mean) / sqrt(var + eps), then an optional * scale and
    + bias of the normalized shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DivOp, rewriter: PatternRewriter) -> None:
        centered, std = op.lhs, op.rhs
        sub = centered.owner
        sqrt = std.owner
        if not isinstance(sub, graph.SubOp) or not isinstance(sqrt, graph.SqrtOp):
            return
        x, mean = sub.lhs, sub.rhs
        reduce = mean.owner
        axes = _last_axes(reduce, x)
        if axes is None or reduce.input is not x or _shape(centered) != _shape(x):  # type: ignore[union-attr]
            return
        shifted = sqrt.input.owner
        if not isinstance(shifted, graph.AddOp):
            return
        for variance, eps in ((shifted.lhs, shifted.rhs), (shifted.rhs, shifted.lhs)):
            epsilon = _scalar(eps)
            second = variance.owner
            if epsilon is None or _last_axes(second, centered) != axes:
                continue
            square = second.input  # type: ignore[union-attr]
            square_ops = _is_power_of(square, centered, 2)
            if square_ops is None:
                continue
            chain = [reduce, sub, second, *square_ops, shifted, sqrt]
            self._rewrite(rewriter, op, x, axes, epsilon, chain)  # type: ignore[arg-type]
            return

    def _rewrite(
        self, rewriter: PatternRewriter, op: graph.DivOp, x: SSAValue, axes: int, epsilon: float,
        chain: list[Operation],
    ) -> None:
        normalized = _shape(x)[-axes:]
        if any(dim < 0 for dim in normalized):
            return  # a layer norm takes static normalized axes
        root: Operation = op
        affine: list[SSAValue | None] = []
        for kind in (graph.MulOp, graph.AddOp):
            user = _single_user(root.results[0])
            operand = None if user is None else _affine_operand(user, kind, root.results[0], normalized)
            affine.append(operand)
            if operand is None:
                break
            chain.append(root)
            root = user  # type: ignore[assignment]
        scale, bias = (affine + [None, None])[:2]

        def build() -> list[Operation]:
            ops: list[Operation] = []
            vectors: list[SSAValue | None] = []
            for vector in (scale, bias):
                if vector is not None and _shape(vector) != normalized:
                    ops.append(graph.ReshapeOp(vector, list(normalized)))
                    vector = ops[-1].results[0]
                vectors.append(vector)
            ops.append(graph.LayerNormOp(x, len(_shape(x)) - axes, epsilon, vectors[0], vectors[1]))
            return ops

        _replace(rewriter, root, chain, build)


def _last_axes(op: Operation | None, x: SSAValue) -> int | None:
    """How many trailing axes of `x` the ReduceMean `op` averages (keepdims), else None."""
    if not isinstance(op, graph.ReduceMeanOp) or op.keepdims is None:
        return None
    rank = len(_shape(x))
    axes = sorted(a % rank for a in op.axes.get_values())
    if not axes or axes != list(range(rank - len(axes), rank)):
        return None
    return len(axes)


def _single_user(value: SSAValue) -> Operation | None:
    return value.get_user_of_unique_use()


def _affine_operand(
    op: Operation, kind: type[Operation], value: SSAValue, normalized: tuple[int, ...]
) -> SSAValue | None:
    """The constant other operand of `op` (a `kind` reading `value`) when it holds a
    vector of the normalized shape (with leading ones or not), else None."""
    if not isinstance(op, kind):
        return None
    other = op.operands[1] if op.operands[0] is value else op.operands[0]
    if other is value or not isinstance(other.owner, graph.ConstantOp):
        return None
    shape = _shape(other)
    if len(shape) < len(normalized) or shape[len(shape) - len(normalized) :] != normalized:
        return None
    if any(d != 1 for d in shape[: len(shape) - len(normalized)]):
        return None
    return other


def raise_composites_patterns() -> list[RewritePattern]:
    """The rewrites of graph-raise-composites."""
    return [RaiseGeluErf(), RaiseGeluTanh(), RaiseLayerNorm()]


@dataclass(frozen=True)
class GraphRaiseCompositesPass(ModulePass):
    """Replace exported chains of element-wise ops by the GELU or layer normalization
    they compute."""

    name = "graph-raise-composites"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(raise_composites_patterns()), apply_recursively=False
        ).rewrite_module(op)


__all__ = ["GraphRaiseCompositesPass", "raise_composites_patterns"]
