"""Compile targets by name: what `strato.compile`, `strato run --target` and
`strato-opt -t` dispatch through.

A target string names a kind of target and its options, `-key=value` words or `-flag`
alone (which means "true"):

    llvm
    llvm -mcpu=skylake-avx512 -opt-level=2
    llvm -mattr=+avx2,-avx512f -fast-math

Each kind of target is a `Target` subclass, registered once under its `name`:

    target = get_target("llvm -mcpu=x86-64-v2")     # parsed, options checked
    module = ...                                     # imported, then target.pipeline() run
    model = target.build(module, entry, signature, public_name="mlp")

The built-in targets register themselves when their module is imported; the registry
imports them the first time it is asked for a target. Other packages call
`register_target(cls, source="their-package")`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from strato.diagnostics import StratoError

if TYPE_CHECKING:
    import xdsl.utils.target
    from xdsl.dialects.builtin import ModuleOp

    from strato.runtime.compiled_model import CompiledModel
    from strato.runtime.signature import Signature


class TargetError(StratoError):
    """A target string that does not parse, names no registered target, or gives a
    target an option it does not accept."""


_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class TargetSpec:
    """A parsed target string: the target's name and its options by key. A `-flag`
    word without `=` has the value "true"."""

    name: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.options.items()))))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TargetSpec):
            return NotImplemented
        return self.name == other.name and dict(self.options) == dict(other.options)

    def __str__(self) -> str:
        """The canonical target string: options sorted by key, flags without `=true`."""
        words = [self.name]
        for key in sorted(self.options):
            value = self.options[key]
            words.append(f"-{key}" if value == "true" else f"-{key}={value}")
        return " ".join(words)


def parse_target(text: str) -> TargetSpec:
    """`"llvm -mcpu=skylake-avx512 -fast-math"` -> TargetSpec("llvm", {...}).

    The first word is the name; every other word is `-key=value` or `-key`. A key given
    twice, an empty value, or a word without the leading `-` is a `TargetError`.
    """
    if not isinstance(text, str):
        raise TargetError(f"a target is a string such as 'llvm', got {type(text).__name__}")
    words = text.split()
    if not words:
        raise TargetError("the target string is empty (e.g. 'llvm')")
    name, *rest = words
    if not _NAME.match(name):
        raise TargetError(f"'{name}' is not a target name (e.g. 'llvm')")
    options: dict[str, str] = {}
    for word in rest:
        if not word.startswith("-") or word.startswith("--"):
            raise TargetError(
                f"target '{name}': '{word}' is not an option; options are -key=value or -flag"
            )
        key, equals, value = word[1:].partition("=")
        if not _KEY.match(key):
            raise TargetError(f"target '{name}': '{word}' is not an option name")
        if equals and not value:
            raise TargetError(f"target '{name}': option -{key} has an empty value")
        if key in options:
            raise TargetError(f"target '{name}': option -{key} is given twice")
        options[key] = value if equals else "true"
    return TargetSpec(name, options)


class Target:
    """One kind of compile target. A subclass sets `name`, `summary` and the options it
    accepts (`options`: key -> one line of help), and implements `pipeline`, `build` and
    `emitter`. An instance is a target with its options checked."""

    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[Mapping[str, str]] = {}
    """Accepted option keys, each with a one-line description."""

    def __init__(self, spec: TargetSpec) -> None:
        if spec.name != self.name:
            raise TargetError(f"target '{self.name}' cannot be built from '{spec}'")
        unknown = [key for key in spec.options if key not in self.options]
        if unknown:
            accepted = ", ".join(f"-{key}" for key in self.options) or "none"
            raise TargetError(
                f"target '{self.name}' has no option -{unknown[0]} (options: {accepted})"
            )
        self.spec = spec

    def option(self, key: str, default: str | None = None) -> str | None:
        """The value of option `key`, or `default` when it is not given."""
        return self.spec.options.get(key, default)

    def flag(self, key: str) -> bool:
        """Whether flag `key` is set (`-key`, `-key=true`/`1`; `-key=false`/`0` is off)."""
        value = self.spec.options.get(key)
        if value is None:
            return False
        lowered = value.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise TargetError(f"target '{self.name}': -{key} is a flag (true or false), got '{value}'")

    def pipeline(self) -> str:
        """The pass pipeline from the imported graph-level module to what `build` takes."""
        raise NotImplementedError

    def build(
        self, module: ModuleOp, entry_name: str, signature: Signature, *, public_name: str
    ) -> CompiledModel:
        """The lowered module, whose function `entry_name` runs the model, as a callable."""
        raise NotImplementedError

    def emitter(self) -> type[xdsl.utils.target.Target] | None:
        """The output target `strato-opt -t NAME` runs, if any."""
        return None

    def compiling(self) -> contextlib.AbstractContextManager[None]:
        """A context the whole compilation (pipeline and build) runs in, e.g. to make
        the target's CPU the one schedules read; nothing by default."""
        return contextlib.nullcontext()

    def cache_key(self) -> str:
        """What distinguishes this target's output from another's with the same options
        (e.g. the host CPU when none is named); the canonical target string by default."""
        return str(self.spec)

    def __str__(self) -> str:
        return str(self.spec)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.spec}'>"


_REGISTRY: dict[str, tuple[type[Target], str]] = {}

BUILTIN_TARGET_MODULES = (
    "strato.targets.llvm.target",
    "strato.targets.vta.compile_target",
)
"""Modules that register strato's own targets when imported (a missing one is skipped)."""

_builtins_loaded = False
_broken_builtins: dict[str, str] = {}
"""Built-in target modules that failed to import: module -> the reason."""


def register_target(cls: type[Target], *, source: str = "strato") -> None:
    """Make `cls` available under `cls.name`. Registering the same class again is a
    no-op; another class under a taken name is a `TargetError` naming both sources."""
    if not (isinstance(cls, type) and issubclass(cls, Target)):
        raise TargetError(f"{cls!r} is not a strato Target subclass ({source})")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise TargetError(f"target class {cls.__qualname__} ({source}) has no valid name")
    if not isinstance(getattr(cls, "summary", None), str):
        raise TargetError(f"target '{name}' ({source}) has no summary line")
    existing = _REGISTRY.get(name)
    if existing is not None:
        if existing[0] is cls:
            return
        raise TargetError(
            f"target '{name}' from {source} clashes with the one from {existing[1]}"
        )
    _REGISTRY[name] = (cls, source)


def unregister_target(name: str) -> None:
    """Remove the target registered as `name` (a plugin that failed half-way); unknown
    names are ignored."""
    _REGISTRY.pop(name, None)


def _load_builtin_targets() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for module in BUILTIN_TARGET_MODULES:
        try:
            if importlib.util.find_spec(module) is not None:
                importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - one broken target must not hide the others
            _broken_builtins[module] = f"{type(err).__name__}: {err}"


def registered_targets() -> dict[str, tuple[type[Target], str]]:
    """Every registered target: name -> (class, source), built-in ones included."""
    _load_builtin_targets()
    return dict(_REGISTRY)


def get_target(text: str | TargetSpec | Target) -> Target:
    """The target a string, spec or instance stands for, its options checked.
    An unknown name is a `TargetError` listing the registered targets."""
    if isinstance(text, Target):
        return text
    spec = text if isinstance(text, TargetSpec) else parse_target(text)
    targets = registered_targets()
    entry = targets.get(spec.name)
    if entry is None:
        broken = "".join(
            f"; {module} failed to load ({reason})" for module, reason in _broken_builtins.items()
        )
        raise TargetError(
            f"unknown target '{spec.name}' (available: {', '.join(sorted(targets)) or 'none'})"
            + broken
        )
    return entry[0](spec)


__all__ = [
    "BUILTIN_TARGET_MODULES",
    "Target",
    "TargetError",
    "TargetSpec",
    "get_target",
    "parse_target",
    "register_target",
    "registered_targets",
    "unregister_target",
]
