"""Schedule templates (base.py) and the registry that targets and plugins fill.

A target brings its own templates and makes the `ScheduleContext` its stages schedule
with (the CPU's: strato.targets.llvm.templates). Two registries let others take part
without changing the target:

    register_template(MY_TEMPLATE, target="llvm")   # a plugin's template for a target
    register_context_factory("llvm", factory)        # how a target's context is made

A target puts the templates registered for it ahead of its own in the contexts it makes,
so a plugin's template schedules the stages it matches (a new op's, or a better schedule
for a kind the target has). The context factories let a pass that names its target
(`schedule-default{target=llvm}`, as strato-opt runs it) get that target's context
without importing the target: `schedule_context("llvm", lanes=0, threads=2)`; a target
registers its factory when it is loaded (`strato.targets.registry`).
"""

from __future__ import annotations

from collections.abc import Callable

from strato.schedule.errors import ScheduleError
from strato.schedule.templates.base import Knob, ScheduleContext, Template

ContextFactory = Callable[[int, int], ScheduleContext]
"""`(lanes, threads) -> ScheduleContext` of a target; 0 for either means the target's
default (its machine's vector width, the available cores)."""

_TEMPLATES: dict[str, list[tuple[Template, str]]] = {}
_FACTORIES: dict[str, ContextFactory] = {}


def register_template(template: Template, *, target: str = "llvm", source: str = "strato") -> Template:
    """Add `template` to those of `target` (ahead of the target's own, in registration
    order). Registering the same template again does nothing; another template with the
    name of one registered for the target is a `ScheduleError` naming both sources."""
    entries = _TEMPLATES.setdefault(target, [])
    for existing, origin in entries:
        if existing is template:
            return template
        if existing.name == template.name:
            raise ScheduleError(
                f"template '{template.name}' for target '{target}' from {source} clashes "
                f"with the one from {origin}"
            )
    entries.append((template, source))
    return template


def unregister_template(template: Template, *, target: str = "llvm") -> None:
    """Remove `template` from `target`'s registered templates (unknown ones are ignored)."""
    entries = _TEMPLATES.get(target, [])
    entries[:] = [(t, origin) for t, origin in entries if t is not template]


def registered_templates(target: str) -> tuple[Template, ...]:
    """The templates registered for `target`, in registration order."""
    return tuple(template for template, _ in _TEMPLATES.get(target, []))


def template_sources(target: str) -> dict[str, str]:
    """name -> source of the templates registered for `target`."""
    return {template.name: origin for template, origin in _TEMPLATES.get(target, [])}


def register_context_factory(target: str, factory: ContextFactory) -> None:
    """Make `schedule_context(target, ...)` call `factory` (a target's own, once)."""
    _FACTORIES[target] = factory


def schedule_context(target: str, *, lanes: int = 0, threads: int = 0) -> ScheduleContext:
    """The schedule context of `target` for `lanes` fp32 vector lanes and `threads`
    threads (0: the target's defaults); a `ScheduleError` when no loaded target has that
    name."""
    factory = _FACTORIES.get(target)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES)) or "none loaded"
        raise ScheduleError(f"no schedule templates for target '{target}' (targets: {known})")
    return factory(lanes, threads)


__all__ = [
    "ContextFactory",
    "Knob",
    "ScheduleContext",
    "Template",
    "register_context_factory",
    "register_template",
    "registered_templates",
    "schedule_context",
    "template_sources",
    "unregister_template",
]
