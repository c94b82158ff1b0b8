"""Plugins: dialects, passes, targets, schedule templates and tensor intrinsics added to
strato from outside its source.

A plugin is a Python module that registers what it adds when it is loaded:

    # my_plugin/__init__.py
    import strato
    from my_plugin.dialect import MyDialect
    from my_plugin.passes import MyPass

    strato.register_dialect(MyDialect)
    strato.register_pass(MyPass)            # also usable as a class decorator
    strato.register_template(MY_TEMPLATE, target="llvm")   # strato.api has them too

Each goes into the registry of its layer (strato.context for dialects,
strato.transforms for passes, strato.targets.registry for targets,
strato.schedule.templates and strato.schedule.intrinsics for templates and intrinsics);
this module checks names, records who registered what, and takes it all back when a
plugin fails half-way.

A package makes its plugin found without any change to strato by naming it in the
`strato.plugins` entry-point group of its `pyproject.toml`:

    [project.entry-points."strato.plugins"]
    my-plugin = "my_plugin"                 # a module, or "module:function" to call

`strato-opt`, `strato` and `strato.compile` load every installed plugin once, on first
use; `strato-opt --load-plugin MODULE` loads one more explicitly. Everything a plugin
registers is listed under the plugin's name (`strato-opt --list-passes`,
`--list-dialects`). A plugin that cannot be loaded (an import error, a name that is
already taken) is reported by name as one line and leaves nothing of itself
registered; the rest of strato works as before.

Registering at run time, outside a plugin, works the same way; the entries are then
attributed to the calling module's package.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from strato.diagnostics import StratoError

if TYPE_CHECKING:
    from xdsl.ir import Dialect
    from xdsl.passes import ModulePass

    from strato.schedule.intrinsics import Intrinsic
    from strato.schedule.templates import Template
    from strato.targets.registry import Target

ENTRY_POINT_GROUP = "strato.plugins"
"""The entry-point group strato reads installed plugins from."""

STRATO = "strato"
XDSL = "xDSL"

PassFactory = Callable[[], "type[ModulePass]"]
P = TypeVar("P", bound="type[ModulePass]")


class PluginError(StratoError):
    """A registration strato refuses (a name already taken, something that is not a
    dialect or a pass), or a plugin that fails to load."""


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded and why (one line)."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"plugin '{self.name}' not loaded: {self.reason}"


@dataclass
class _Added:
    """What one plugin registered, to take back if it fails part-way."""

    dialects: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    templates: list[tuple[Template, str]] = field(default_factory=list)
    intrinsics: list[str] = field(default_factory=list)


_loading: list[tuple[str, _Added]] = []
_plugin_passes: dict[str, str] = {}
"""The passes plugins registered: name -> plugin."""
_loaded: dict[str, PluginFailure | None] = {}
_entry_points_loaded = False


# -- registration -------------------------------------------------------------------


def _source(source: str | None) -> str:
    """Who registers: the given name, else the plugin being loaded, else the package of
    the module that called strato's register function."""
    if source is not None:
        return source
    if _loading:
        return _loading[-1][0]
    frame = sys._getframe(2)
    module = frame.f_globals.get("__name__", "__main__")
    return module.split(".", 1)[0]


def _record(kind: str, name: object) -> None:
    if _loading:
        getattr(_loading[-1][1], kind).append(name)


def builtin_dialect_sources() -> dict[str, str]:
    """strato's own dialects and the upstream ones its context loads: name -> source."""
    from strato.context import STRATO_DIALECTS, UPSTREAM_DIALECTS

    sources = {dialect.name: XDSL for dialect in UPSTREAM_DIALECTS}
    sources.update({dialect.name: STRATO for dialect in STRATO_DIALECTS})
    return sources


def register_dialect(dialect: Dialect, *, source: str | None = None) -> Dialect:
    """Make `dialect` (an `xdsl.ir.Dialect`) known to every context strato creates, so
    `strato-opt` parses its ops and passes may create them. A dialect whose name is
    taken (by strato, xDSL or another plugin) is a `PluginError`; registering the same
    dialect again does nothing. Returns `dialect`."""
    from xdsl.ir import Dialect

    from strato.context import add_dialect, added_dialects

    origin = _source(source)
    if not isinstance(dialect, Dialect):
        raise PluginError(f"{dialect!r} is not an xdsl Dialect ({origin})")
    name = dialect.name
    existing = added_dialects().get(name)
    if existing is not None:
        if existing[0] is dialect:
            return dialect
        raise PluginError(f"dialect '{name}' from {origin} clashes with the one from {existing[1]}")
    builtin = builtin_dialect_sources().get(name)
    if builtin is not None:
        raise PluginError(f"dialect '{name}' from {origin} clashes with {builtin}'s '{name}'")
    for op in dialect.operations:
        if not op.name.startswith(name + "."):
            raise PluginError(f"op '{op.name}' of dialect '{name}' ({origin}) is not named '{name}.<op>'")
    add_dialect(dialect, origin)
    _record("dialects", name)
    return dialect


def register_pass(
    pass_class: P | str, factory: PassFactory | str | None = None, *, source: str | None = None
) -> P | str:
    """Make a pass available by its CLI name to `strato-opt -p`, pipelines and
    `strato.compile(passes_before=..., passes_after=...)`.

    Either a `ModulePass` subclass (its `name` is the CLI name; usable as a class
    decorator), or a name and what to load lazily: a factory returning the class, or
    "module:Class". A name taken by strato, the xDSL passes strato-opt offers or another
    plugin is a `PluginError`; registering the same class again does nothing.
    """
    from strato.transforms import add_pass, added_passes, get_all_passes

    origin = _source(source)
    if isinstance(pass_class, str):
        name = pass_class
        if factory is None:
            raise PluginError(f"pass '{name}' ({origin}) needs a class or 'module:Class' to load")
        load = factory
    else:
        from xdsl.passes import ModulePass

        if not (isinstance(pass_class, type) and issubclass(pass_class, ModulePass)):
            raise PluginError(f"{pass_class!r} is not an xdsl ModulePass subclass ({origin})")
        name = getattr(pass_class, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"pass class {pass_class.__qualname__} ({origin}) has no name")
        cls = pass_class
        load = lambda: cls  # noqa: E731
    taken = added_passes().get(name)
    if taken is not None:
        if not isinstance(pass_class, str) and get_all_passes()[name]() is pass_class:
            return pass_class
        raise PluginError(f"pass '{name}' from {origin} clashes with the one from {taken}")
    builtin = builtin_pass_sources().get(name)
    if builtin is not None:
        raise PluginError(f"pass '{name}' from {origin} clashes with {builtin}'s '{name}'")
    add_pass(name, load, source=origin)
    _plugin_passes[name] = origin
    _record("passes", name)
    return pass_class


def register_target(cls: type[Target], *, source: str | None = None) -> type[Target]:
    """Make a compile target available to `strato.compile(target=...)`, `strato run
    --target` and `strato-opt -t` (see `strato.targets.registry.Target`). A name
    already taken is an error naming both sources. Returns `cls`."""
    from strato.targets.registry import register_target as register

    origin = _source(source)
    try:
        register(cls, source=origin)
    except StratoError as err:
        raise PluginError(err.message) from None
    _record("targets", cls.name)
    return cls


def register_template(template: Template, *, target: str = "llvm", source: str | None = None) -> Template:
    """Add a schedule template to `target`'s (see `strato.schedule.templates`): the
    target's default schedules try it before its own templates, so it schedules the
    stages its `matches` accepts. A name taken by another template of that target is a
    `PluginError`. Returns `template`."""
    from strato.schedule.templates import Template
    from strato.schedule.templates import register_template as register

    origin = _source(source)
    if not isinstance(template, Template):
        raise PluginError(f"{template!r} is not a strato schedule Template ({origin})")
    try:
        register(template, target=target, source=origin)
    except StratoError as err:
        raise PluginError(err.message) from None
    _record("templates", (template, target))
    return template


def register_intrinsic(intrinsic: Intrinsic, *, source: str | None = None) -> Intrinsic:
    """Make a tensor intrinsic available to `tensorize` by its name (see
    `strato.schedule.intrinsics`). A name already taken is a `PluginError`."""
    from strato.schedule.intrinsics import Intrinsic, get_intrinsic
    from strato.schedule.intrinsics import register_intrinsic as register

    origin = _source(source)
    if not isinstance(intrinsic, Intrinsic):
        raise PluginError(f"{intrinsic!r} is not a strato Intrinsic ({origin})")
    try:
        existing = get_intrinsic(intrinsic.name)
    except StratoError:
        existing = None
    if existing is not None:
        if existing is intrinsic:
            return intrinsic
        raise PluginError(f"intrinsic '{intrinsic.name}' from {origin} is already defined")
    register(intrinsic)
    _record("intrinsics", intrinsic.name)
    return intrinsic


# -- what is registered -------------------------------------------------------------


def builtin_pass_sources() -> dict[str, str]:
    """strato's passes (its targets' included) and xDSL's: name -> source. (strato-opt
    offers only the xDSL passes that apply to strato's dialects, but every xDSL name is
    reserved.)"""
    from xdsl.transforms import get_all_passes as upstream_passes

    from strato.targets.registry import registered_targets
    from strato.transforms import get_all_passes, pass_source

    registered_targets()  # the built-in targets' passes are strato's
    plugins = set(plugin_passes())
    sources = {name: XDSL for name in upstream_passes()}
    for name in get_all_passes():
        if name not in plugins:
            sources[name] = pass_source(name) or STRATO
    return sources


def plugin_passes() -> dict[str, PassFactory]:
    """name -> factory of the passes plugins registered (the form xDSL's pipeline
    parser takes)."""
    from strato.transforms import get_all_passes

    everything = get_all_passes()
    return {name: everything[name] for name in _plugin_passes if name in everything}


def pass_source(name: str) -> str | None:
    """Where the pass `name` comes from: "strato", "xDSL", a plugin's name, or None."""
    from strato.transforms import pass_source as registry_source

    source = registry_source(name)
    if source is not None:
        return source
    return builtin_pass_sources().get(name)


def plugin_dialects() -> list[Dialect]:
    """The dialects plugins registered, in registration order."""
    from strato.context import added_dialects

    return [dialect for dialect, _ in added_dialects().values()]


def registered_dialects() -> dict[str, tuple[Dialect, str]]:
    """Every dialect strato's contexts load: name -> (dialect, source)."""
    from strato.context import STRATO_DIALECTS, UPSTREAM_DIALECTS, added_dialects

    entries = {d.name: (d, XDSL) for d in UPSTREAM_DIALECTS}
    entries.update({d.name: (d, STRATO) for d in STRATO_DIALECTS})
    entries.update(added_dialects())
    return entries


# -- loading ------------------------------------------------------------------------


@contextmanager
def _loading_plugin(name: str) -> Iterator[None]:
    """Attribute registrations to `name`; take them all back if loading fails."""
    added = _Added()
    _loading.append((name, added))
    try:
        yield
    except BaseException:
        _take_back(added)
        raise
    finally:
        _loading.pop()


def _take_back(added: _Added) -> None:
    from strato.context import remove_dialect
    from strato.schedule.intrinsics import unregister_intrinsic
    from strato.schedule.templates import unregister_template
    from strato.targets.registry import unregister_target
    from strato.transforms import remove_pass

    for name in added.dialects:
        remove_dialect(name)
    for name in added.passes:
        remove_pass(name)
        _plugin_passes.pop(name, None)
    for name in added.targets:
        unregister_target(name)
    for template, target in added.templates:
        unregister_template(template, target=target)
    for name in added.intrinsics:
        unregister_intrinsic(name)


def _one_line(err: BaseException) -> str:
    message = err.message if isinstance(err, StratoError) else str(err)
    message = " ".join(message.split())
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def plugin_arguments(args: Sequence[str] | None) -> list[str]:
    """The MODULE of each `--load-plugin MODULE` (or `--load-plugin=MODULE`) in `args`,
    read before the full parse: plugins add passes and targets the parser accepts."""
    modules: list[str] = []
    words = list(args or ())
    for index, word in enumerate(words):
        if word == "--":
            break
        if word == "--load-plugin" and index + 1 < len(words):
            modules.append(words[index + 1])
        elif word.startswith("--load-plugin="):
            modules.append(word.split("=", 1)[1])
    return modules


def load_plugin(spec: str, *, name: str | None = None) -> PluginFailure | None:
    """Load the plugin `spec`: a module ("my_plugin") whose import registers what it
    adds, or "module:function" whose function is then called with no arguments.

    Returns None on success, or the failure (the plugin then leaves nothing
    registered). A plugin is loaded once; loading it again returns the first outcome.
    """
    name = name or spec
    if spec in _loaded:
        return _loaded[spec]
    package = spec.partition(":")[0].split(".", 1)[0]
    if package != "strato":
        _plugin_packages.setdefault(package, name)
    failure = None
    try:
        with _loading_plugin(name):
            module_name, _, function = spec.partition(":")
            loaded: object = importlib.import_module(module_name)
            if function:
                for part in function.split("."):
                    loaded = getattr(loaded, part)
                if not callable(loaded):
                    raise PluginError(f"'{spec}' is not a function")
                loaded()
    except Exception as err:  # noqa: BLE001 - a broken plugin must not break strato
        failure = PluginFailure(name, _one_line(err))
    _loaded[spec] = failure
    return failure


def installed_plugins() -> dict[str, str]:
    """The plugins installed packages declare: entry-point name -> "module[:function]"."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_plugins(extra: tuple[str, ...] | list[str] = ()) -> list[PluginFailure]:
    """Load every installed plugin (once per process), then the modules in `extra`;
    the failures, each naming its plugin."""
    global _entry_points_loaded
    failures: list[PluginFailure] = []
    if not _entry_points_loaded:
        _entry_points_loaded = True
        try:
            installed = installed_plugins()
        except Exception as err:  # noqa: BLE001 - unreadable package metadata
            failures.append(PluginFailure(ENTRY_POINT_GROUP, _one_line(err)))
            installed = {}
        for name, spec in sorted(installed.items()):
            failure = load_plugin(spec, name=name)
            if failure is not None:
                failures.append(failure)
    for spec in extra:
        failure = load_plugin(spec)
        if failure is not None:
            failures.append(failure)
    return failures


_plugin_packages: dict[str, str] = {}
"""The top-level package of each plugin loaded -> the plugin's name."""


@dataclass(frozen=True)
class PluginFrame:
    """Where in a plugin's code an error was raised."""

    plugin: str
    filename: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.line} in {self.function}"


def plugin_frame(error: BaseException) -> PluginFrame | None:
    """The innermost frame of `error`'s traceback (or of what it was raised from) in
    the code of a loaded plugin, or None when no plugin code is on it: an error a
    plugin's pass, target or template raised is the plugin's, not strato's."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = None
        for frame, line in traceback.walk_tb(current.__traceback__):
            package = str(frame.f_globals.get("__name__", "")).split(".", 1)[0]
            if package in _plugin_packages:
                found = PluginFrame(_plugin_packages[package], frame.f_code.co_filename, line, frame.f_code.co_name)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def loaded_plugins() -> dict[str, PluginFailure | None]:
    """Each plugin loaded so far ("module[:function]") -> None, or why it failed."""
    return dict(_loaded)


__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginError",
    "PluginFailure",
    "PluginFrame",
    "builtin_dialect_sources",
    "builtin_pass_sources",
    "installed_plugins",
    "load_plugin",
    "load_plugins",
    "loaded_plugins",
    "pass_source",
    "plugin_dialects",
    "plugin_frame",
    "plugin_passes",
    "register_dialect",
    "register_intrinsic",
    "register_pass",
    "register_target",
    "register_template",
    "registered_dialects",
]
