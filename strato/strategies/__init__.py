"""Operator strategies: the tensor expression of each graph operator.

A strategy is a function `(pb, op, inputs) -> outputs`: given the `PrimitiveBuilder` of
the primitive being built, the graph op, and the te values its operands map to inside the
primitive (placeholders, or stages of ops fused before it), it adds the op's stages and
returns the te values of its results. One primitive may hold the stages of several ops
(a fused group): strategies never create placeholders themselves.

Strategies are registered per op class with `@strategy(OpClass)`; `strategy_for(op)`
finds one. Families of ops live in modules named after them (elementwise, linalg, layout).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from strato.strategies.builder import PrimitiveBuilder

Strategy = Callable[[PrimitiveBuilder, Operation, Sequence[SSAValue]], list[SSAValue]]

_STRATEGIES: dict[type[Operation], Strategy] = {}


def strategy(*op_types: type[Operation]) -> Callable[[Strategy], Strategy]:
    """Register the decorated function as the strategy of `op_types`."""

    def register(fn: Strategy) -> Strategy:
        for op_type in op_types:
            _STRATEGIES[op_type] = fn
        return fn

    return register


def strategy_for(op: Operation) -> Strategy | None:
    _load_all()
    for cls in type(op).__mro__:
        if cls in _STRATEGIES:
            return _STRATEGIES[cls]
    return None


def _load_all() -> None:
    # Importing the family modules registers their strategies.
    from strato.strategies import blocked, einsum, elementwise, layout, linalg, logic, nn, normalization, quant, reduce, resize, rnn  # noqa: F401
