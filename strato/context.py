"""The xDSL context that knows every dialect strato reads or writes."""

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


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh context with strato's dialects, the upstream ones it reuses and those
    plugins registered (`strato.plugins`)."""
    from strato.plugins import plugin_dialects

    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in (*UPSTREAM_DIALECTS, *STRATO_DIALECTS, *plugin_dialects()):
        ctx.load_dialect(dialect)
    return ctx
