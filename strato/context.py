"""The xDSL context that knows every dialect strato reads or writes.

strato's dialects and the upstream ones it reuses are always there; others (a plugin's)
are added with `add_dialect` (`strato.plugins.register_dialect` checks and calls it),
and every context made afterwards loads them too.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.cf import Cf
from xdsl.dialects.func import Func
from xdsl.dialects.llvm import LLVM
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.ir import Dialect

from strato.dialects.graph import Graph
from strato.dialects.loop import Loop
from strato.dialects.te import TE
from strato.dialects.vta import Vta

STRATO_DIALECTS: tuple[Dialect, ...] = (Graph, TE, Loop, Vta)
UPSTREAM_DIALECTS: tuple[Dialect, ...] = (Builtin, Func, Arith, Math, MemRef, Scf, Cf, LLVM)

_ADDED: dict[str, tuple[Dialect, str]] = {}
"""Dialects from elsewhere: name -> (dialect, source)."""


def add_dialect(dialect: Dialect, source: str) -> None:
    """Load `dialect` (of `source`, a plugin's name) into every context made from now on."""
    _ADDED[dialect.name] = (dialect, source)


def remove_dialect(name: str) -> None:
    """Stop loading the added dialect `name` (unknown names are ignored)."""
    _ADDED.pop(name, None)


def added_dialects() -> dict[str, tuple[Dialect, str]]:
    """The dialects added with `add_dialect`: name -> (dialect, source), in order."""
    return dict(_ADDED)


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh context with strato's dialects, the upstream ones it reuses and those
    added from elsewhere (plugins: `strato.plugins`)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in (*UPSTREAM_DIALECTS, *STRATO_DIALECTS):
        ctx.load_dialect(dialect)
    for dialect, _ in _ADDED.values():
        ctx.load_dialect(dialect)
    return ctx
