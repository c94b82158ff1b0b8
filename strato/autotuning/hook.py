"""How compilation picks knob values other than the defaults.

`schedule-default` asks `kernel_knobs(module, name)` for each kernel before it applies
the templates; the answer is {stage: {knob: value}} (empty: the defaults). It comes from,
in order: a config forced for that kernel name (`forced_configs`, what the tuner's
workers use to build one candidate), then the best record of the kernel's task in the
active tuning log (`use_tuning_log(path)` around `strato.compile`, or the pass option
`schedule-default{tuning_log=path}`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects.builtin import ModuleOp

from strato.autotuning.task import Config

_FORCED: ContextVar[dict[str, Config] | None] = ContextVar("strato_forced_configs", default=None)
_LOG: ContextVar[str | None] = ContextVar("strato_tuning_log", default=None)


@contextmanager
def forced_configs(configs: dict[str, Config]) -> Iterator[None]:
    """Schedule kernel `name` with `configs[name]` while the block runs."""
    token = _FORCED.set(configs)
    try:
        yield
    finally:
        _FORCED.reset(token)


@contextmanager
def use_tuning_log(path: str | None) -> Iterator[None]:
    """Schedule every kernel with the best record of its task in the log at `path`."""
    token = _LOG.set(path)
    try:
        yield
    finally:
        _LOG.reset(token)


def active_tuning_log() -> str | None:
    """The log of the innermost `use_tuning_log` block, if any."""
    return _LOG.get()


def kernel_knobs(module: ModuleOp, name: str, tuning_log: str | None = None) -> Config:
    forced = _FORCED.get()
    if forced is not None and name in forced:
        return forced[name]
    path = tuning_log or _LOG.get()
    if not path:
        return {}
    from strato.autotuning.database import Database
    from strato.autotuning.task import kernel_key, kernel_of

    best = Database.cached(path).best(kernel_key(kernel_of(module, name)))
    if best is None:
        return {}
    # a record written for other templates keeps only the knob values that still apply
    from strato.autotuning.task import stage_spaces

    chosen: Config = {}
    for space in stage_spaces(module, name):
        recorded = best.config.get(space.stage, {})
        chosen[space.stage] = {
            knob: recorded[knob]
            for knob, domain, _ in space.knobs
            if knob in recorded and recorded[knob] in domain
        }
    return chosen
