"""The base of every pattern that lowers one loop-level op to the llvm dialect."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable

from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern


class LLVMLoweringPattern(RewritePattern):
    """Lowers ops of type `source_op`; subclasses implement `lower`.

    Declaring the source op on the pattern (on its class, or in the constructor of a
    pattern parametrised by the op) lets the pass know, before rewriting, which ops it
    can lower, so unsupported input is reported up front with a reason.
    """

    source_op: type[Operation]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, self.source_op):
            return
        self.lower(op, rewriter)

    @abstractmethod
    def lower(self, op: Operation, rewriter: PatternRewriter) -> None: ...


def intrinsic_suffix(type_: Attribute) -> str:
    """The type part of a mangled intrinsic name: f32, f64, i32, ..."""
    return str(type_)


class LoweringDispatcher(RewritePattern):
    """Applies, to each op, the lowering pattern registered for its type.

    One dictionary lookup per op instead of trying every pattern in turn (xDSL's
    greedy applier), which matters for models with many kernels.
    """

    def __init__(self, patterns: Iterable[LLVMLoweringPattern]):
        self.by_type: dict[type[Operation], LLVMLoweringPattern] = {}
        for pattern in patterns:
            assert pattern.source_op not in self.by_type, (
                f"two lowerings of {pattern.source_op.name}"
            )
            self.by_type[pattern.source_op] = pattern

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        pattern = self.by_type.get(type(op))
        if pattern is not None:
            pattern.lower(op, rewriter)
