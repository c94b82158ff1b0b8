"""Pause Python's cyclic garbage collector while a stage builds large IR.

Lowering a model to the llvm dialect and emitting its LLVM IR create and drop hundreds
of thousands of IR objects. Reference counting frees most of them; the cyclic collector
meanwhile keeps rescanning every live object of the (large) module, which cost about a
third of convert-loops-to-llvm's time on ResNet-18. Inside `gc_paused()` it does not
run; the cycles the stage leaves (erased ops and their uses) are collected by the first
collection after it.

    with gc_paused():
        convert_loops_to_llvm(module)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block, then restore its previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
