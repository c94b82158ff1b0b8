"""The README's examples run as written: its Python blocks, the `strato` commands on
built-in models, and the strato-opt tour on the MLIR it shows."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(sys.executable).parent


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def commands(tool: str) -> list[str]:
    """The `tool ...` lines of the README's sh blocks, without their comments."""
    lines = []
    for block in blocks("sh"):
        for line in block.splitlines():
            if line.startswith(f"{tool} "):
                lines.append(line.split("  #")[0].split(" #")[0].strip())
    return lines


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_readme_has_examples():
    assert blocks("python") and commands("strato") and commands("strato-opt") and blocks("mlir")


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_blocks_run_as_written(index, tmp_path):
    result = run([sys.executable, "-c", blocks("python")[index]], tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mlp.o").stat().st_size > 0
    assert "int32_t mlp_run(" in (tmp_path / "mlp.h").read_text()


BUILTIN_COMMANDS = [line for line in commands("strato") if " mlp" in line]


@pytest.mark.parametrize("line", BUILTIN_COMMANDS)
def test_strato_commands_on_builtin_models_run_as_written(line, tmp_path):
    result = run(shlex.split(line), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_strato_opt_tour_runs_as_written(tmp_path):
    (tmp_path / "mlp.mlir").write_text(blocks("mlir")[0])
    (tmp_path / "tests.mlir").write_text(blocks("mlir")[0])
    for line in commands("strato-opt"):
        if "--help" in line or "--verify-diagnostics" in line:
            continue
        result = run(shlex.split(line), tmp_path)
        assert result.returncode == 0, (line, result.stderr)
