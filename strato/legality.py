"""The legality check run after each lowering: nothing the lowering removes may remain.

xDSL has no conversion-target framework; this is the one place that plays its role.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from xdsl.ir import Operation

from strato.diagnostics import LegalityError
from strato.walk import ops_under


def check_legal(
    root: Operation,
    pass_name: str,
    *,
    illegal_dialects: Iterable[str] = (),
    legal_dialects: Iterable[str] | None = None,
    is_legal: Callable[[Operation], bool] | None = None,
) -> None:
    """Raise `LegalityError` naming the first op under `root` that is illegal.

    An op is illegal when its dialect is in `illegal_dialects`, or when
    `legal_dialects` is given and its dialect is not in it, unless `is_legal` accepts it.
    `root` itself is not checked.
    """
    illegal = set(illegal_dialects)
    legal = None if legal_dialects is None else set(legal_dialects)
    for op in ops_under(root):
        if op is root:
            continue
        dialect = op.name.split(".", 1)[0]
        bad = dialect in illegal or (legal is not None and dialect not in legal)
        if bad and (is_legal is None or not is_legal(op)):
            raise LegalityError(
                f"'{op.name}' is still present after {pass_name}; "
                f"the pass could not lower it",
                op=op,
            )
