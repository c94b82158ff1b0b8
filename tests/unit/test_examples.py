"""Every example runs (the long ones in their --small form), the plugin example as an
installed package found through its entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
OPT = str(Path(sys.executable).with_name("strato-opt"))


def run(*args: str, site: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    result = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def install(project: Path, site: Path) -> None:
    """What `pip install PROJECT` leaves in site-packages, made from the project's
    pyproject.toml with the standard library alone (offline, and without the wheel
    package a fresh environment's setuptools would need to build): the packages, and a
    dist-info directory whose entry_points.txt is how strato finds the plugin."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    packages = [p.parent for p in project.glob("*/__init__.py")]
    for package in packages:
        shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
        f"Summary: {meta['description']}\n"
    )
    groups = meta.get("entry-points", {})
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()) + "\n"
            for group, points in groups.items()
        )
    )
    (info / "top_level.txt").write_text("".join(f"{p.name}\n" for p in packages))
    (info / "INSTALLER").write_text("test_examples\n")


@pytest.fixture(scope="module")
def silu_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/custom_dialect installed into a directory of its own, a temporary
    environment on PYTHONPATH where strato finds the plugin by its entry point."""
    site = tmp_path_factory.mktemp("silu") / "site-packages"
    install(EXAMPLES / "custom_dialect", site)
    assert (site / "strato_silu" / "__init__.py").is_file()
    return site


def test_the_installed_plugin_is_listed_under_its_entry_point_name(silu_site: Path) -> None:
    out = run(OPT, "--list-passes", site=silu_site).stdout
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()}
    assert rows["act-fuse-silu"] == "silu" and rows["act-expand-silu"] == "silu"
    dialects = run(OPT, "--list-dialects", site=silu_site).stdout
    assert any(line.split() == ["act", "silu", "silu"] for line in dialects.splitlines())


def test_strato_opt_runs_the_plugin_pass_and_lowers_its_op_checked_for_equivalence(silu_site: Path) -> None:
    source = str(EXAMPLES / "custom_dialect" / "silu.mlir")
    fused = run(OPT, source, "-p", "act-fuse-silu", "--check-equivalence=4", site=silu_site).stdout
    assert "act.silu" in fused and "graph.sigmoid" not in fused
    lowered = run(
        OPT, source, "-p", "act-fuse-silu,graph-fuse-ops,convert-graph-to-te,convert-te-to-loops",
        "--check-equivalence=4", site=silu_site,
    ).stdout
    assert 'stage = "silu"' in lowered and "act." not in lowered
    expanded = run(OPT, source, "-p", "act-fuse-silu,act-expand-silu", "--check-equivalence=4", site=silu_site).stdout
    assert "act.silu" not in expanded and "graph.sigmoid" in expanded


def test_load_plugin_from_a_source_tree() -> None:
    source = str(EXAMPLES / "custom_dialect" / "silu.mlir")
    out = run(OPT, "--load-plugin", "strato_silu", source, "-p", "act-fuse-silu",
              site=EXAMPLES / "custom_dialect").stdout
    assert "act.silu" in out


def test_custom_dialect_demo_compiles_with_the_plugin_pass(silu_site: Path) -> None:
    out = run(sys.executable, str(EXAMPLES / "custom_dialect" / "demo.py"), site=silu_site).stdout
    assert "act.silu after the graph-level optimizations: True" in out
    assert "passes checked: act-fuse-silu, act-expand-silu" in out


def test_compile_models() -> None:
    out = run(sys.executable, str(EXAMPLES / "compile_models.py"), "--small").stdout
    assert "('input' float32[1, 784]) -> ('logits' float32[1, 10])" in out
    assert "largest difference from the graph interpreter" in out


def test_hand_schedule() -> None:
    out = run(sys.executable, str(EXAMPLES / "hand_schedule.py"), "--small").stdout
    lines = [line for line in out.splitlines() if "x the canonical loops" in line]
    assert [line.split("  ")[0].strip() for line in lines] == ["canonical loops", "by hand", "default template"]


def test_tune_layer_plots_its_curve(tmp_path: Path) -> None:
    plot = tmp_path / "curve.png"
    out = run(sys.executable, str(EXAMPLES / "tune_layer.py"), "--small", "-o", str(plot)).stdout
    assert "xgb: 3 trials" in out and "random: 3 trials" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_vta_conv2d_reports_cycles() -> None:
    out = run(sys.executable, str(EXAMPLES / "vta_conv2d.py"), "--small").stdout
    assert out.count("compute utilization") == 2
    assert "fewer cycles than one" in out
