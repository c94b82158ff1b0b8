"""`strato-opt --check-equivalence` and `--reduce` need no test extra: run here with
hypothesis made unimportable, as on a plain `pip install strato`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """\
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = graph.relu %x : tensor<2x8xf32>
  %z = graph.relu %y : tensor<2x8xf32>
  func.return %z : tensor<2x8xf32>
}
"""

WITHOUT_HYPOTHESIS = """\
import sys
sys.modules["hypothesis"] = None  # import hypothesis -> ImportError
from strato.tools import strato_opt
sys.exit(strato_opt.main(sys.argv[1:]))
"""


def _opt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_HYPOTHESIS, *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_check_equivalence_runs_without_hypothesis(tmp_path: Path) -> None:
    source = tmp_path / "relu.mlir"
    source.write_text(PROGRAM)
    pipeline = "graph-fuse-ops,convert-graph-to-te,convert-te-to-loops"
    done = _opt(str(source), "-p", pipeline, "--check-equivalence=3", "-o", str(tmp_path / "out.mlir"))
    assert done.returncode == 0, done.stderr
    assert "hypothesis" not in done.stderr
    # a line per program run (what, level, ops, evaluator, seconds), then the summary
    lines = done.stderr.splitlines()
    assert len(lines) == 5, done.stderr
    assert lines[0].startswith("strato-opt: note: equivalence: ran the program before the pipeline on 3 input(s) (graph level")
    assert "ran the IR after convert-te-to-loops on 3 input(s) (loop level" in lines[3]
    assert lines[4].startswith("strato-opt: note: equivalence: 3 pass(es) keep the results on 3 input(s)")
    assert "loop.for" in (tmp_path / "out.mlir").read_text()


def test_generators_say_they_need_hypothesis() -> None:
    done = subprocess.run(
        [sys.executable, "-c", 'import sys; sys.modules["hypothesis"] = None; import strato.testing.graph_programs'],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "pip install 'strato[test]'" in done.stderr
