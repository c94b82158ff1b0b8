"""The pass registry: one pass a file, registered under its CLI name, resolved lazily;
strato.transforms registers its own, each target those its `passes` name (files of the
target's folder), and every name resolves to a pass of that name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.passes import ModulePass

import strato.transforms
from strato.pipeline import all_passes
from strato.targets.registry import BUILTIN_TARGET_MODULES, registered_targets
from strato.transforms import (
    PASS_REGISTRY,
    UPSTREAM_PASSES,
    get_all_passes,
    resolve_pass,
)

TRANSFORMS_DIR = Path(strato.transforms.__file__).parent
PASS_FILES = sorted(p.stem for p in TRANSFORMS_DIR.glob("*.py") if p.name != "__init__.py")


def cli_name(file_stem: str) -> str:
    return file_stem.replace("_", "-")


@pytest.mark.parametrize("stem", PASS_FILES)
def test_every_pass_file_is_registered_under_its_cli_name(stem: str) -> None:
    name = cli_name(stem)
    assert name in PASS_REGISTRY, f"strato/transforms/{stem}.py is not registered as '{name}'"
    module_name = PASS_REGISTRY[name].split(":")[0]
    assert module_name == f"strato.transforms.{stem}"


@pytest.mark.parametrize("name", sorted(PASS_REGISTRY))
def test_every_registered_name_resolves_to_a_pass_of_that_name(name: str) -> None:
    pass_class = resolve_pass(name)
    assert isinstance(pass_class, type) and issubclass(pass_class, ModulePass)
    assert pass_class.name == name


@pytest.mark.parametrize(
    "name", sorted(n for n, where in PASS_REGISTRY.items() if where.startswith("strato."))
)
def test_strato_passes_live_in_the_file_named_after_them(name: str) -> None:
    module_name = PASS_REGISTRY[name].split(":")[0]
    assert module_name == "strato.transforms." + name.replace("-", "_")
    assert (TRANSFORMS_DIR / (name.replace("-", "_") + ".py")).is_file()


def _builtin_target_passes() -> dict[str, tuple[str, str]]:
    """CLI name -> ("module:Class", the target's package) of strato's targets' passes."""
    passes = {}
    for name, (cls, source) in registered_targets().items():
        if source != "strato":
            continue
        package = cls.__module__.rsplit(".", 1)[0]
        for pass_name, spec in cls.passes.items():
            passes[pass_name] = (spec, package)
    return passes


def test_builtin_targets_are_registered_with_their_passes() -> None:
    packages = {module.rsplit(".", 1)[0] for module in BUILTIN_TARGET_MODULES}
    target_passes = _builtin_target_passes()
    assert {package for _, package in target_passes.values()} <= packages
    assert {"convert-loops-to-llvm", "graph-pack-dense", "convert-loops-to-vta"} <= set(target_passes)
    assert not set(target_passes) & set(PASS_REGISTRY), "a target's pass is also a generic one"


@pytest.mark.parametrize("name", sorted(_builtin_target_passes()))
def test_a_targets_passes_live_in_its_folder_in_files_named_after_them(name: str) -> None:
    spec, package = _builtin_target_passes()[name]
    module_name = spec.split(":")[0]
    assert module_name == f"{package}.{name.replace('-', '_')}"
    pass_class = all_passes()[name]()
    assert issubclass(pass_class, ModulePass) and pass_class.name == name


def test_factories_resolve_the_registered_class() -> None:
    factories = all_passes()
    expected = set(PASS_REGISTRY) | set(UPSTREAM_PASSES) | set(_builtin_target_passes())
    assert set(factories) == expected
    assert set(get_all_passes()) == expected  # the targets are loaded now
    name = next(iter(PASS_REGISTRY))
    assert factories[name]() is resolve_pass(name)


def test_strato_opt_offers_every_registered_pass() -> None:
    from strato.tools.strato_opt import StratoOptMain

    tool = StratoOptMain(args=[])
    assert set(PASS_REGISTRY) | set(_builtin_target_passes()) <= set(tool.available_passes)


def test_registry_and_strato_opt_start_up_import_no_pass() -> None:
    script = (
        "import sys\n"
        "from strato.tools.strato_opt import StratoOptMain\n"
        "StratoOptMain(args=[])\n"
        "loaded = [m for m in sys.modules if m.startswith('strato.transforms.')\n"
        "          or m.endswith(('_to_llvm', '_to_vta')) or 'graph_' in m or 'vta_in' in m]\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
