"""Compile targets by name: what `strato.compile`, `strato run --target` and
`strato-opt -t` dispatch through.

A target string names a kind of target and its options, `-key=value` words or `-flag`
alone (which means "true"):

    llvm
    llvm -mcpu=skylake-avx512 -opt-level=2
    llvm -mattr=+avx2,-avx512f -fast-math

Each kind of target is a `Target` subclass, registered once under its `name`. A target
owns everything specific to it: its stages (named lists of pass instances configured for
its machine), the passes it adds to the pass registry, its schedule templates (the
`ScheduleContext` its stages schedule with), how it builds the lowered module into a
model, how it builds one kernel for the tuner, its `strato-opt -t` output and its cache
key. The compile driver only runs a target's stages, then its `build`:

    target = get_target("llvm -mcpu=x86-64-v2")     # parsed, options checked
    for stage in target.stages():                    # graph, te, loops, schedule, llvm
        ...                                          # stage.check, then stage.passes
    model = target.build(module, entry, signature, public_name="mlp")

The built-in targets are a folder under strato/targets/ each plus a line in
`BUILTIN_TARGET_MODULES`; the registry imports them the first time it is asked for a
target. Other packages call `register_target(cls, source="their-package")`.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from strato.diagnostics import StratoError

if TYPE_CHECKING:
    import xdsl.utils.target
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from strato.runtime.compiled_model import CompiledModel
    from strato.runtime.signature import Signature
    from strato.schedule.knobs import KnobSource
    from strato.schedule.templates import ScheduleContext


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


@dataclass(frozen=True)
class Stage:
    """A named step of a target's compilation: `passes`, in order, on a module that
    `check` (when given) accepts first (it raises a `StratoError` naming what it
    refuses)."""

    name: str
    passes: tuple[ModulePass, ...]
    check: Callable[[ModuleOp], None] | None = None


@dataclass(frozen=True)
class BuildOptions:
    """How `Target.build` goes about its work, not what it makes (the same model
    whatever these are): `jobs` processes at most (None: the cores available), the
    persistent compile cache for the parts it compiles (`cache`), and `progress(done,
    total)` called as its parts are built (a progress bar)."""

    jobs: int | None = None
    cache: bool = False
    progress: Callable[[int, int], None] | None = None


GRAPH_STAGE = "graph"
"""The stage extra graph-level passes go around (`strato.compile(passes_before=...,
passes_after=...)`): the one that optimizes the imported graph."""


@dataclass(frozen=True)
class BuiltKernel:
    """One kernel compiled by a target's `KernelBuilder`, loadable in another process:
    its code, what the code needs from the process that loads it, and its buffers
    (shape, numpy dtype, is_output) in parameter order."""

    kernel: str
    code: bytes = field(repr=False)
    imports: tuple[str, ...]
    buffers: tuple[tuple[tuple[int, ...], Any, bool], ...]
    symbol: str | None = None
    """The symbol of the kernel's code when it is not the kernel's name."""


class KernelBuilder:
    """How a target builds and loads one kernel alone (what the tuner measures)."""

    def build(self, module: ModuleOp, kernel: str) -> BuiltKernel:
        """Compile kernel `kernel` of the scheduled loop-level `module` (which holds it
        and the globals it reads)."""
        raise NotImplementedError

    def load(self, built: BuiltKernel) -> tuple[Callable[..., Any], object]:
        """The built kernel loaded into this process: a function of its buffers'
        addresses, and what must stay alive while it is called."""
        raise NotImplementedError

    def device(self) -> str:
        """The machine the code is built for, when it is not this host (its system and
        CPU: what a tuning record for it is tagged with); empty for this host."""
        return ""

    def runs_here(self) -> bool:
        """Whether the built code runs in this process (`load`); code for another
        system runs on its device, or here under an emulator (`time_emulated`)."""
        return True

    def for_this_host(self) -> KernelBuilder:
        """The same target's builder for this machine (what reference results of a
        device's kernels are computed with)."""
        return self

    def emulation_problem(self) -> str | None:
        """Why this machine cannot emulate the builder's (None: it can)."""
        return f"this target cannot emulate {self.device() or 'its machine'}"

    def time_emulated(
        self, built: BuiltKernel, arrays: list[Any], *, repeats: int, min_repeat_seconds: float,
        max_calls: int, threads: int, timeout: float,
    ) -> tuple[list[Any], list[float]]:
        """Run code for another system on `arrays` (numpy arrays, one per buffer) under an
        emulator of that system: its outputs after one call, and the seconds a call of
        each of `repeats` timed repeats."""
        raise NotImplementedError(f"this target cannot emulate {self.device() or 'its machine'}")


class Target:
    """One kind of compile target. A subclass sets `name`, `summary` and the options it
    accepts (`options`: key -> one line of help), the passes it adds to the pass
    registry (`passes`), and implements `stages` (or the simpler `pipeline`) and `build`;
    a target whose default schedules can be tuned implements `schedule_context` and
    `kernel_builder`, one with an IR output for `strato-opt -t` `emitter`. An instance is
    a target with its options checked."""

    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[Mapping[str, str]] = {}
    """Accepted option keys, each with a one-line description."""
    passes: ClassVar[Mapping[str, str]] = {}
    """The passes the target brings: CLI name -> "module:Class" (registered with the
    target, so `strato-opt -p` and pipelines find them)."""

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

    def with_options(self, **options: str) -> Target:
        """This target with `options` added or replaced (keys spelled as in target
        strings: `with_options(threads="1")`)."""
        merged = {**self.spec.options, **{key.replace("_", "-"): value for key, value in options.items()}}
        return type(self)(TargetSpec(self.name, merged))

    def pipeline(self) -> str:
        """The pass pipeline from the imported graph-level module to what `build` takes,
        in strato-opt's `-p` syntax: what a simple target gives instead of `stages`."""
        raise NotImplementedError

    def stages(self, *, tuning_log: str | None = None) -> tuple[Stage, ...]:
        """The named stages from the imported graph-level module to what `build` takes,
        each with its passes configured for this target; `tuning_log` is a tuning log the
        default schedules take their knob values from (ignored by targets that have none).

        By default `pipeline()` parsed: up to its graph-default (the "graph" stage, where
        extra graph passes go), then the rest."""
        from xdsl.passes import PassPipeline

        from strato.transforms import get_all_passes

        passes = PassPipeline.parse_spec(get_all_passes(), self.pipeline()).passes
        split = next((i + 1 for i, p in enumerate(passes) if p.name == "graph-default"), 0)
        stages = [Stage(GRAPH_STAGE, passes[:split]), Stage("lower", passes[split:])]
        return tuple(stage for stage in stages if stage.passes)

    def build(
        self,
        module: ModuleOp,
        entry_name: str,
        signature: Signature,
        *,
        public_name: str,
        options: BuildOptions = BuildOptions(),
    ) -> CompiledModel:
        """The lowered module, whose function `entry_name` runs the model, as a callable
        (`options`: processes, cache and progress reports, where the target has use for
        them)."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Start, in the background, what this target's builds and compiled models need
        whatever the model (a JIT's runtime); `strato.compile` calls it first. Nothing by
        default."""

    def build_passes(self) -> tuple[ModulePass, ...]:
        """The passes `build` applies to what the stages leave, as `strato-opt -p` runs
        them on a whole module (the build may apply them to each kernel apart); none by
        default."""
        return ()

    def schedule_context(self, knobs: KnobSource | None = None) -> ScheduleContext | None:
        """The context this target's default schedules use (its templates, machine and
        threads), with `knobs` choosing knob values other than the defaults; None for a
        target without schedule templates."""
        return None

    def lowering_stages(self) -> tuple[Stage, ...]:
        """The stages that lower the imported model to unscheduled loop-level kernels
        (what the tuner extracts its tasks from); empty for a target without them."""
        return ()

    def tuning_alternatives(self) -> tuple[str, ...]:
        """Target strings whose lowerings of a model hold other algorithms for some of its
        kernels (a convolution by Winograd): the tuner measures their kernels too, and a
        compile with the tuning log takes, per layer, the fastest measured. None by
        default."""
        return ()

    def kernel_builder(self) -> KernelBuilder | None:
        """How this target builds one scheduled kernel alone (for the tuner), if it can."""
        return None

    def emitter(self) -> type[xdsl.utils.target.Target] | None:
        """The output target `strato-opt -t NAME` runs, if any."""
        return None

    def cache_key(self) -> str:
        """What distinguishes this target's output from another's with the same options
        (e.g. the host CPU when none is named); the canonical target string by default."""
        return str(self.spec)

    def __str__(self) -> str:
        return str(self.spec)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.spec}'>"


def run_stages(
    stages: Sequence[Stage],
    module: ModuleOp,
    *,
    before: Callable[[str], None] | None = None,
    after: Callable[[str, ModuleOp], None] | None = None,
) -> None:
    """Apply each stage to `module` in place: its check, then its passes in order;
    `before` hears each pass's name before it runs, `after` sees the module after it."""
    from strato.context import make_context

    ctx = make_context()
    for stage in stages:
        if stage.check is not None:
            stage.check(module)
        for stage_pass in stage.passes:
            if before is not None:
                before(stage_pass.name)
            stage_pass.apply(ctx, module)
            if after is not None:
                after(stage_pass.name, module)


_REGISTRY: dict[str, tuple[type[Target], str]] = {}

BUILTIN_TARGET_MODULES = (
    "strato.targets.llvm.target",
    "strato.targets.vta.target",
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
    _register_passes(cls, source)
    _REGISTRY[name] = (cls, source)


def _register_passes(cls: type[Target], source: str) -> None:
    """Add the target's passes to the pass registry; all or none."""
    from strato.transforms import add_pass, remove_pass

    added: list[str] = []
    try:
        for pass_name, spec in cls.passes.items():
            if not isinstance(spec, str) or ":" not in spec:
                raise TargetError(
                    f"target '{cls.name}' ({source}): pass '{pass_name}' is not given as 'module:Class'"
                )
            add_pass(pass_name, spec, source=source)
            added.append(pass_name)
    except KeyError as err:
        for pass_name in added:
            remove_pass(pass_name)
        raise TargetError(f"target '{cls.name}': {err.args[0]}") from None


def unregister_target(name: str) -> None:
    """Remove the target registered as `name` (a plugin that failed half-way), and the
    passes only it brought; unknown names are ignored."""
    from strato.transforms import remove_pass

    entry = _REGISTRY.pop(name, None)
    if entry is None:
        return
    still = {p for cls, _ in _REGISTRY.values() for p in cls.passes}
    for pass_name in entry[0].passes:
        if pass_name not in still:
            remove_pass(pass_name)


def load_builtin_targets() -> None:
    """Import strato's own targets (once), which registers them and their passes."""
    _load_builtin_targets()


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
    "GRAPH_STAGE",
    "BuildOptions",
    "BuiltKernel",
    "KernelBuilder",
    "Stage",
    "Target",
    "TargetError",
    "TargetSpec",
    "get_target",
    "load_builtin_targets",
    "parse_target",
    "register_target",
    "registered_targets",
    "run_stages",
    "unregister_target",
]
