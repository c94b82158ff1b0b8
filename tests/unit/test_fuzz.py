"""The pass fuzzer: a bounded profile over strato's passes, a finding reduced and
written for a deliberately wrong pass, and the `strato fuzz-passes` command."""

from __future__ import annotations

from pathlib import Path

from strato.testing.fuzz import fuzz_passes
from strato.tools.strato_cli import main as strato_main

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from strato.dialects import graph
from strato.testing.equivalence import check_pipeline
from strato.testing.reduce import count_ops
from test_equivalence import _parse


@dataclass(frozen=True)
class SwappedSubPass(ModulePass):
    """Swaps the operands of every graph.sub of same-shaped operands: wrong on purpose."""

    name = "test-swapped-sub"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sub in [o for o in op.walk() if isinstance(o, graph.SubOp)]:
            if sub.lhs.type == sub.rhs.type:
                lhs, rhs = sub.lhs, sub.rhs
                sub.operands = [rhs, lhs]


def test_bounded_fuzz_profile_finds_nothing(tmp_path: Path):
    stats = fuzz_passes(seconds=60, out_dir=tmp_path, seed=0, max_ops=4, n_inputs=2, max_programs=4)
    assert stats.programs == 4
    assert stats.passes_run > 0
    assert not stats.findings, [(f.kind, f.pass_name, f.detail, f.path) for f in stats.findings]


def test_a_wrong_pass_becomes_a_reduced_finding(tmp_path: Path):
    stats = fuzz_passes(
        seconds=120,
        out_dir=tmp_path,
        seed=3,
        max_ops=6,
        n_inputs=4,
        max_programs=40,
        graph_passes=("cse", SwappedSubPass.name),
        extra_passes=(SwappedSubPass,),
        kinds=("graph.sub", "graph.relu", "graph.exp", "graph.add", "graph.tanh"),
    )
    found = [f for f in stats.findings if f.kind == "difference"]
    assert found and {f.pass_name for f in found} == {SwappedSubPass.name}
    assert found[0].path is not None and found[0].ops <= 10
    text = found[0].path.read_text()
    assert "// RUN: not strato-opt %s -p '" in text and "--check-equivalence" in text
    module = _parse(text)
    assert any(op.name == "graph.sub" for op in module.walk())
    assert count_ops(module) == found[0].ops
    # the written program still shows the difference
    assert check_pipeline(Context(), module, [SwappedSubPass()], 4).difference is not None


def test_fuzz_passes_command(tmp_path: Path, capsys):
    status = strato_main(["fuzz-passes", "--seconds", "30", "--programs", "2", "--max-ops", "3", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "fuzz-passes: 2 programs" in err and "0 findings" in err


def test_a_program_over_its_time_limit_is_abandoned_not_a_finding(tmp_path: Path):
    stats = fuzz_passes(
        seconds=60, out_dir=tmp_path, seed=3, max_ops=3, n_inputs=1, max_programs=2,
        program_seconds=1e-4,
    )  # fmt: skip
    assert stats.programs == 2 and stats.timeouts == 2
    assert stats.findings == [] and not any(tmp_path.iterdir())


def test_programs_drawn_from_different_seeds_differ():
    import random

    from strato.testing.equivalence import ir_text
    from strato.testing.fuzz import draw_program

    texts = {ir_text(draw_program(random.Random(seed), 6).module) for seed in range(4)}
    assert len(texts) == 4
