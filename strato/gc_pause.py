"""Keep Python's cyclic garbage collector from rescanning large IR while it is built.

Lowering a model to the llvm dialect and emitting its LLVM IR create and drop hundreds
of thousands of IR objects. Reference counting frees most of them; the cyclic collector
meanwhile keeps rescanning every live object of the (large) module, which cost about a
third of convert-loops-to-llvm's time on ResNet-18. Inside `gc_paused()` it does not
run; the cycles the stage leaves (erased ops and their uses) are collected by the first
collection after it.

    with gc_paused():
        convert_loops_to_llvm(module)

A whole compilation runs in `gc_for_compiling()`: what existed before it (imports, the
caller's objects) is frozen out of every collection, and full collections, each a scan
of every live IR object, become rare; young cycles are still collected. On the zoo LSTM
the collector took a third of the compile (83 full collections over millions of live IR
objects) before.

    with gc_for_compiling():
        model = compile_model(...)
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


COMPILE_THRESHOLDS = (100_000, 50, 1000)
"""gc thresholds while compiling: a young collection every 100,000 allocations (CPython's
default is 700), an older one every 50 of those, and a full one rarely."""


@contextmanager
def gc_for_compiling() -> Iterator[None]:
    """Within the block, objects made before it are frozen (never scanned again) and the
    collector runs at `COMPILE_THRESHOLDS`; both are undone after it. Nested blocks
    keep the outer one's setting."""
    global _depth
    _depth += 1
    if _depth > 1:
        try:
            yield
        finally:
            _depth -= 1
        return
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*COMPILE_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        _depth -= 1


_depth = 0
