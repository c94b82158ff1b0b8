"""What `pip install strato` (no extras) must be enough for: the compiler and the `strato`
command never import the test or tuning extras."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

_BLOCK_EXTRAS = """
import sys
for name in ("hypothesis", "xgboost", "onnxruntime", "pytest", "dask", "matplotlib"):
    sys.modules[name] = None  # `import name` now fails, as it does without the extra
"""


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _BLOCK_EXTRAS + code], capture_output=True, text=True, timeout=300
    )


def test_core_dependencies_are_small():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    core = {dep.split("=")[0].split(">")[0].split("[")[0] for dep in project["dependencies"]}
    assert core == {"xdsl", "llvmlite", "numpy", "onnx", "ml_dtypes"}
    extras = project["optional-dependencies"]
    assert any(dep.startswith("hypothesis") for dep in extras["test"])
    assert any(dep.startswith("xgboost-cpu") for dep in extras["tune"])


def test_strato_run_works_without_the_extras():
    result = _python(
        "from strato.tools.strato_cli import main\n"
        "sys.exit(main(['run', 'mlp', '--repeat', '1']))\n"
    )
    assert result.returncode == 0, result.stderr
    assert "the graph interpreter (onnxruntime is not installed)" in result.stdout


def test_program_generators_name_the_missing_extra():
    result = _python("import strato.testing.equivalence, strato.testing.reduce\nimport strato.testing.graph_programs\n")
    assert result.returncode == 1
    assert "ImportError: strato's program generators need hypothesis" in result.stderr
    assert "pip install 'strato[test]'" in result.stderr
