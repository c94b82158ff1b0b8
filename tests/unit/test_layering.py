"""strato's packages form layers: an import goes only to the same layer or a lower one
(imports inside functions included), so no two packages import each other, directly or
through others. docs/architecture.md draws the same picture."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import strato

ROOT = Path(strato.__file__).resolve().parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("diagnostics", "dialects", "context", "legality", "gc_pause", "walk", "zoo"),
    ("runtime", "specializing", "separable", "staged"),
    ("interpreters", "strategies"),
    ("frontends",),
    ("schedule",),
    ("transforms",),
    ("targets",),
    ("pipeline",),
    ("autotuning",),
    ("compiler", "onnx_backend", "plugins"),
    ("testing", "api"),
    ("tools", "bench", "vta"),
)
"""strato's top-level packages and modules, lowest layer first."""

LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str | None:
    """The top-level package or module of a dotted strato module name (None: the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "strato" else None


def _imports() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the import sites, for every strato import
    between two different units of strato's source."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(relative.parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        module = module.removesuffix(".__init__")
        source = _unit(module)
        if source is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    names = [".".join([*base, *([node.module] if node.module else [])])]
                else:
                    names = [node.module] if node.module else []
            else:
                continue
            for name in names:
                target = _unit(name) if name.startswith("strato.") else None
                if target is not None and target != source:
                    edges[(source, target)].append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {name}")
    return edges


def test_every_package_has_a_layer():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    missing = sorted((packages | modules) - set(LAYER))
    assert not missing, f"packages without a layer in LAYERS: {missing}"


def test_imports_go_only_down_the_layers():
    upward = [
        f"{source} (layer {LAYER[source]}) imports {target} (layer {LAYER[target]}): {sites[0]}"
        for (source, target), sites in sorted(_imports().items())
        if LAYER[target] > LAYER[source]
    ]
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_no_import_cycle_between_packages():
    edges: dict[str, set[str]] = defaultdict(set)
    for source, target in _imports():
        edges[source].add(target)
    # depth-first search for a back edge; the cycle it closes is reported
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = 1
        path.append(unit)
        for nxt in sorted(edges[unit]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[unit] = 2
        return None

    for unit in sorted(list(edges)):
        if unit not in state:
            cycle = visit(unit)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)
