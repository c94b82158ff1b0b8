"""The equivalence oracle, strato-opt --check-equivalence / --reduce / --print-ir-diff,
and a deliberately wrong pass (x * 2 -> x + x + x) caught on a generated program."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from strato.context import make_context
from strato.dialects import graph
from strato.testing.equivalence import check_pipeline, compare, ir_text
from strato.testing.reduce import count_ops
from strato.tools import strato_opt
from strato.tools.strato_opt import main
from strato.transforms import resolve_pass


class _TimesTwoIsThrice(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        other = op.rhs.owner
        if not isinstance(other, graph.ConstantOp):
            return
        values = other.evaluate([])[0]
        if values.size == 0 or not np.all(values == 2.0):
            return
        twice = graph.AddOp(op.lhs, op.lhs)
        thrice = graph.AddOp(twice, op.lhs)
        rewriter.replace(op, [twice, thrice], [thrice.result])


@dataclass(frozen=True)
class WrongDoublingPass(ModulePass):
    """Rewrites x * 2 into x + x + x: wrong on purpose, for the oracle to catch."""

    name = "test-wrong-doubling"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_TimesTwoIsThrice()).rewrite_module(op)


PROGRAM = """
func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %two = graph.constant dense<2.0> : tensor<2x3xf32>
  %a = graph.relu %x : tensor<2x3xf32>
  %b = graph.tanh %y : tensor<2x3xf32>
  %c = graph.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = graph.mul %c, %two : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = graph.sigmoid %d : tensor<2x3xf32>
  %f = graph.sub %e, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}
"""


@pytest.fixture
def wrong_pass(monkeypatch) -> None:
    original = strato_opt.StratoOptMain.register_all_passes

    def register_all_passes(self) -> None:
        original(self)
        self.register_pass(WrongDoublingPass.name, lambda: WrongDoublingPass)

    monkeypatch.setattr(strato_opt.StratoOptMain, "register_all_passes", register_all_passes)


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def test_compare_floats_with_tolerance_integers_exactly():
    assert compare([np.float32([1.0, np.nan])], [np.float32([1.00001, np.nan])], 1e-4, 0) is None
    assert "differs at [1]" in compare([np.float32([1, 2])], [np.float32([1, 2.1])], 1e-4, 0)
    assert "exact" in compare([np.int32([7])], [np.int32([8])], 1.0, 1.0)
    assert "shape" in compare([np.zeros(2)], [np.zeros(3)], 0, 0)


def test_compare_a_result_near_zero_within_rtol_of_the_largest():
    # rounding moves a result by a fraction of the magnitudes computed, not of itself
    expected = np.float32([6.5, 5.0e-4, -2.0])
    assert compare([expected], [np.float32([6.5, 5.2e-4, -2.0])], 1e-4, 1e-5) is None
    assert "differs at [1]" in compare([expected], [np.float32([6.5, 2.0e-3, -2.0])], 1e-4, 1e-5)
    assert "differs at [2]" in compare([expected], [np.float32([6.5, 5.0e-4, -2.01])], 1e-4, 1e-5)


def test_oracle_names_the_first_wrong_pass():
    module = _parse(PROGRAM)
    ctx = make_context()
    passes = [resolve_pass("cse")(), WrongDoublingPass(), resolve_pass("cse")()]
    report = check_pipeline(ctx, module, passes, n_inputs=4)
    assert report.difference is not None
    assert report.difference.pass_name == "test-wrong-doubling"
    assert report.difference.index == 1
    text = report.difference.describe()
    assert "graph.mul" in report.difference.ir_before and "graph.mul" not in report.difference.ir_after
    assert "input 0" in text and "before, result 0" in text and "after, result 0" in text


def test_oracle_passes_a_correct_pipeline():
    module = _parse(PROGRAM)
    report = check_pipeline(make_context(), module, [resolve_pass("graph-fold-constants")()], 4)
    assert report.difference is None and report.unsupported is None
    assert report.passes_checked == ["graph-fold-constants"]


def test_a_missing_interpreter_is_reported_by_op_name():
    text = PROGRAM.replace("graph.relu %x", '"test.mystery"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> //')
    ctx = make_context()
    ctx.allow_unregistered = True
    module = Parser(ctx, text).parse_module()
    report = check_pipeline(ctx, module, [], 2)
    assert report.unsupported is not None and "test.mystery" in str(report.unsupported)


def test_check_equivalence_catches_the_wrong_pass(wrong_pass, tmp_path: Path, capsys):
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)
    status = main([str(source), "-p", "cse,test-wrong-doubling", "--check-equivalence=3"])
    err = capsys.readouterr().err
    assert status == 1
    assert "error: pass 'test-wrong-doubling' changes the result" in err
    assert "// IR before the pass:" in err and "// IR after the pass:" in err
    # a correct pipeline passes and prints its result
    assert main([str(source), "-p", "cse", "--check-equivalence"]) == 0


def test_print_ir_diff_shows_what_each_pass_changed(tmp_path: Path, capsys):
    source = tmp_path / "p.mlir"
    twice = PROGRAM.replace("%b = graph.tanh %y", "%b = graph.relu %x")
    source.write_text(twice)
    assert main([str(source), "-p", "graph-fold-constants,cse", "--print-ir-diff"]) == 0
    err = capsys.readouterr().err
    # graph-fold-constants changes nothing here: no diff; cse drops the second relu
    assert "before graph-fold-constants" not in err
    assert "--- before cse\n+++ after cse\n" in err
    removed = [line for line in err.splitlines() if line.startswith("-  ")]
    assert [line.split("=")[1].split()[0] for line in removed] == ["graph.relu", "graph.add"]
    assert "+    %c = graph.add %a, %a" in err


def _doubling_program(seed: int) -> ModuleOp:
    """A generated program with more than 10 ops, extended by a final x * 2."""
    import random

    from strato.testing.fuzz import draw_program

    kinds = ("graph.mul", "graph.add", "graph.relu", "graph.exp", "graph.sub", "graph.tanh")
    rng = random.Random(seed)
    program = draw_program(rng, 14, kinds)
    while count_ops(program.module) <= 12:
        program = draw_program(rng, 14, kinds)
    module = program.module
    function = next(op for op in module.walk() if op.name == "func.func")
    block = function.body.block
    ret = block.last_op
    value = ret.operands[0]
    two = graph.ConstantOp.from_array(np.full(value.type.get_shape(), 2.0, np.float32))
    mul = graph.MulOp(value, two.result)
    block.insert_ops_before([two, mul], ret)
    ret.operands[0] = mul.result
    module.verify()
    return module


def test_wrong_pass_is_caught_on_a_generated_program_and_reduced(wrong_pass, tmp_path: Path, capsys):
    module = _doubling_program(0)
    assert count_ops(module) > 10
    source = tmp_path / "generated.mlir"
    source.write_text(ir_text(module))
    reduced = tmp_path / "reduced.mlir"
    status = main(
        [str(source), "-p", "cse,test-wrong-doubling", "--check-equivalence=8", f"--reduce={reduced}"]
    )
    assert status == 1
    assert "pass 'test-wrong-doubling' changes the result" in capsys.readouterr().err
    text = reduced.read_text()
    assert "// RUN: not strato-opt %s -p 'cse,test-wrong-doubling'" in text
    small = _parse(text)
    assert count_ops(small) <= 10
    assert any(op.name == "graph.mul" for op in small.walk())
    # the reduced program still shows the difference, and nothing else does
    assert check_pipeline(make_context(), small, [WrongDoublingPass()], 8).difference is not None
