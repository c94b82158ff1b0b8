"""Who hears about the offloaded layers as they are compiled and simulated.

    def show(stage: str, done: int, total: int, name: str) -> None:
        ...  # stage is COMPILING or SIMULATING; `name` is the layer started, "" at the end

    with reporting_progress(show):
        model = strato.compile(model, target="vta")   # show("compiling", 0, 19, "layer1.0.conv1") ...
        model(x)                                       # show("simulating", 0, 19, "layer1.0.conv1") ...

`partition` reports each offloaded layer before it compiles it (with the CPU ops before
it), `run_partition` each one before it simulates it; both report `done == total` (and
no name) when they are through. Nothing is reported outside `reporting_progress`: a
display such as `strato run`'s bar sets it, the library itself prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

COMPILING = "compiling"
SIMULATING = "simulating"

LayerProgress = Callable[[str, int, int, str], None]
"""(stage, done, total, name): `done` of the `total` offloaded layers are through the
stage and `name` is the one that starts ("" when done == total)."""

_listener: ContextVar[LayerProgress | None] = ContextVar(
    "vta_layer_progress", default=None
)


@contextmanager
def reporting_progress(listener: LayerProgress | None) -> Iterator[None]:
    """Within the block, compiles and runs of offloaded layers report to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def report(stage: str, done: int, total: int, name: str = "") -> None:
    """Tell the listener, if any, that layer `name` starts (or, done == total, that all are through)."""
    listener = _listener.get()
    if listener is not None:
        listener(stage, done, total, name)


__all__ = ["COMPILING", "SIMULATING", "LayerProgress", "report", "reporting_progress"]
