"""The pass registry: one pass a file, registered under its CLI name, resolved lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.passes import ModulePass

import strato.transforms
from strato.transforms import PASS_REGISTRY, get_all_passes, resolve_pass

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


def test_factories_resolve_the_registered_class() -> None:
    factories = get_all_passes()
    assert set(factories) == set(PASS_REGISTRY)
    name = next(iter(PASS_REGISTRY))
    assert factories[name]() is resolve_pass(name)


def test_strato_opt_offers_every_registered_pass() -> None:
    from strato.tools.strato_opt import StratoOptMain

    tool = StratoOptMain(args=[])
    assert set(PASS_REGISTRY) <= set(tool.available_passes)


def test_registry_and_strato_opt_start_up_import_no_pass() -> None:
    script = (
        "import sys\n"
        "from strato.tools.strato_opt import StratoOptMain\n"
        "StratoOptMain(args=[])\n"
        "loaded = [m for m in sys.modules if m.startswith('strato.transforms.')]\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
