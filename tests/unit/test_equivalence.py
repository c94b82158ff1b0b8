"""The equivalence oracle, strato-opt --check-equivalence / --reduce / --print-ir-diff,
and a deliberately wrong pass (x * 2 -> x + x + x) caught on a generated program."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp
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


def _products_by_constants(module: ModuleOp) -> list[tuple[graph.MulOp, graph.ConstantOp]]:
    """Every graph.mul of `module` whose right operand is a graph.constant, with it."""
    return [
        (op, op.rhs.owner)
        for op in module.walk()
        if isinstance(op, graph.MulOp) and isinstance(op.rhs.owner, graph.ConstantOp)
    ]


@dataclass(frozen=True)
class WrongScalePass(ModulePass):
    """Rewrites x * C (C a constant) into x + C: wrong on purpose, even for a splat C."""

    name = "test-wrong-scale"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for mul, _ in _products_by_constants(op):
            add = graph.AddOp(mul.lhs, mul.rhs)
            mul.parent.insert_op_before(add, mul)
            mul.result.replace_all_uses_with(add.result)
            mul.detach()
            mul.erase()


@dataclass(frozen=True)
class FirstElementPass(ModulePass):
    """Multiplies by the first element of a constant instead of the constant: wrong on
    purpose, unless the constant is a splat."""

    name = "test-first-element"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for mul, constant in _products_by_constants(op):
            values = constant.evaluate([])[0]
            first = graph.ConstantOp.from_array(np.full(values.shape, values.flat[0], values.dtype))
            mul.parent.insert_op_before(first, mul)
            mul.operands[1] = first.result


@pytest.fixture
def wrong_passes(monkeypatch) -> None:
    original = strato_opt.StratoOptMain.register_all_passes

    def register_all_passes(self) -> None:
        original(self)
        for pass_ in (WrongDoublingPass, WrongScalePass, FirstElementPass):
            self.register_pass(pass_.name, lambda pass_=pass_: pass_)

    monkeypatch.setattr(strato_opt.StratoOptMain, "register_all_passes", register_all_passes)


def _dense(rng: np.random.Generator, *shape: int) -> str:
    """A graph.constant of random values (none of them 0, 1 or 2), in MLIR."""
    values = rng.uniform(0.1, 0.9, shape).astype(np.float32)
    return str(graph.ConstantOp.from_array(values))


def _run_reproducer(path: Path) -> tuple[int, str, list[str]]:
    """The reproducer's RUN line run through strato-opt's main: its status, stderr and
    the error its CHECK line expects."""
    import shlex

    text = path.read_text()
    run = next(line for line in text.splitlines() if line.startswith("// RUN: "))
    words = shlex.split(run.removeprefix("// RUN: "))
    assert words[:2] == ["not", "strato-opt"] and words[-3:] == ["|", "filecheck", "%s"]
    assert words[-4] == "2>&1"
    args = [str(path) if word == "%s" else word for word in words[2:-4]]
    check = next(line for line in text.splitlines() if line.startswith("// CHECK: "))
    status = main(args)
    return status, check.removeprefix("// CHECK: ").replace("{{.*}}", ""), args


def _reduce(capsys, source: Path, pipeline: str) -> tuple[str, str, ModuleOp]:
    """strato-opt SOURCE -p PIPELINE --check-equivalence=4 --reduce: the reproducer's
    text, the report line, and the reduced program."""
    reduced = source.with_suffix(".reduced.mlir")
    status = main([str(source), "-p", pipeline, "--check-equivalence=4", f"--reduce={reduced}"])
    err = capsys.readouterr().err
    assert status == 1
    assert "warning" not in err
    report = next(line for line in err.splitlines() if line.startswith("reduced to "))
    assert report.endswith(f": {reduced}")
    text = reduced.read_text()
    return text, report, _parse(text)


def _constant_arrays(module: ModuleOp) -> list[np.ndarray]:
    return [op.evaluate([])[0] for op in module.walk() if isinstance(op, graph.ConstantOp)]


def _argument_shapes(module: ModuleOp) -> list[tuple[int, ...]]:
    function = next(op for op in module.walk() if op.name == "func.func")
    return [arg.type.get_shape() for arg in function.body.block.args]


def test_reduce_a_50_op_program_with_one_wrong_rewrite_to_a_few_ops(wrong_passes, tmp_path: Path, capsys):
    """50 graph ops on 16x32 tensors, dense constants among them, and one x * 2 the pass
    rewrites wrongly: the reproducer has under 5 ops (the x * 2), its constant a splat
    and its argument shapes smaller; run again by its RUN line, it fails the same way."""
    rng = np.random.default_rng(0)
    t = "tensor<16x32xf32>"
    lines = [f"func.func @main(%x: {t}, %y: {t}) -> {t} {{"]
    previous, ops = "%x", 0
    for i in range(12):
        constant = _dense(rng, 16, 32).replace("%0", f"%c{i}", 1)
        lines += [
            f"  {constant}",
            f"  %a{i} = graph.add {previous}, %c{i} : ({t}, {t}) -> {t}",
            f"  %b{i} = graph.tanh %a{i} : {t}",
            f"  %s{i} = graph.sub %b{i}, %y : ({t}, {t}) -> {t}",
        ]
        previous, ops = f"%s{i}", ops + 4
        if i == 6:
            lines += [
                f"  %two = graph.constant dense<2.0> : {t}",
                f"  %twice = graph.mul {previous}, %two : ({t}, {t}) -> {t}",
            ]
            previous, ops = "%twice", ops + 2
    lines += [f"  func.return {previous} : {t}", "}"]
    assert ops == 50
    source = tmp_path / "chain.mlir"
    source.write_text("\n".join(lines) + "\n")

    text, report, small = _reduce(capsys, source, "cse,test-wrong-doubling")
    assert count_ops(small) < 5
    assert any(op.name == "graph.mul" for op in small.walk())
    # the report and the header say what was reduced: ops, constants, shapes
    assert report.startswith(f"reduced to {count_ops(small)} ops (from 50); constants: 1 splat (from 12 dense")
    assert "arguments: " in report and "(from 16x32xf32, 16x32xf32)" in report
    summary = report.removeprefix("reduced to ").removesuffix(f": {tmp_path / 'chain.reduced.mlir'}")
    assert f"\n// Reduced to {summary}.\n" in text
    (two,) = _constant_arrays(small)
    assert np.all(two == 2.0)
    assert all(np.prod(shape) < 16 * 32 for shape in _argument_shapes(small))
    assert small.is_structurally_equivalent(_parse(ir_text(small)))
    # the reproducer, run again by its RUN line, fails the same check
    status, expected, args = _run_reproducer(tmp_path / "chain.reduced.mlir")
    assert args[1:] == ["-p", "cse,test-wrong-doubling", "--check-equivalence=4"]
    assert status == 1 and expected in capsys.readouterr().err
    assert expected == "error: pass 'test-wrong-doubling' changes the result"


def test_reduce_makes_large_dense_constants_splats_and_shapes_small(wrong_passes, tmp_path: Path, capsys):
    """A 64x64 dense weight and a 64-element bias on 64x64 arguments, and a pass wrong for
    any x * C: the reproducer keeps x * C with C a splat (0, the simplest value that
    still shows the difference), every shape 1x1, and still fails when run again."""
    rng = np.random.default_rng(1)
    t = "tensor<64x64xf32>"
    source = tmp_path / "big.mlir"
    source.write_text(
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f"  {_dense(rng, 64, 64).replace('%0', '%w', 1)}\n"
        f"  {_dense(rng, 64).replace('%0', '%v', 1)}\n"
        f"  %a = graph.add %x, %v : ({t}, tensor<64xf32>) -> {t}\n"
        f"  %b = graph.mul %a, %w : ({t}, {t}) -> {t}\n"
        f"  %c = graph.tanh %b : {t}\n"
        f"  %d = graph.sub %c, %y : ({t}, {t}) -> {t}\n"
        f"  func.return %d : {t}\n"
        "}\n"
    )
    text, report, small = _reduce(capsys, source, "test-wrong-scale")
    assert [op.name for op in small.walk() if op.name.startswith("graph.")] == ["graph.constant", "graph.mul"]
    assert "dense<0.000000e+00> : tensor<1x1xf32>" in text
    (zero,) = _constant_arrays(small)
    assert zero.shape == (1, 1) and np.all(zero == 0)
    assert _argument_shapes(small) == [(1, 1)]
    assert report == (
        f"reduced to 2 ops (from 6); constants: 1 splat (from 2 dense of {64 * 64 + 64} elements); "
        f"arguments: 1x1xf32 (from 64x64xf32, 64x64xf32): {tmp_path / 'big.reduced.mlir'}"
    )
    # still fails, as written
    status, expected, _ = _run_reproducer(tmp_path / "big.reduced.mlir")
    assert status == 1 and expected in capsys.readouterr().err


def test_reduce_keeps_a_constant_dense_when_a_splat_no_longer_fails(wrong_passes, tmp_path: Path, capsys):
    """A pass wrong only for constants that are no splat: the 32x64 constant keeps two
    different elements (0 and 1, the simplest) and its shape shrinks to two elements."""
    rng = np.random.default_rng(2)
    t = "tensor<32x64xf32>"
    source = tmp_path / "first.mlir"
    source.write_text(
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"  {_dense(rng, 32, 64).replace('%0', '%w', 1)}\n"
        f"  %a = graph.tanh %x : {t}\n"
        f"  %b = graph.mul %a, %w : ({t}, {t}) -> {t}\n"
        f"  func.return %b : {t}\n"
        "}\n"
    )
    _, report, small = _reduce(capsys, source, "test-first-element")
    (w,) = _constant_arrays(small)
    assert w.size == 2 and sorted(w.flat) == [0.0, 1.0]
    assert "constants: 1 dense of 2 elements (from 1 dense of 2048 elements)" in report
    assert all(np.prod(shape) <= 2 for shape in _argument_shapes(small))
    status, expected, _ = _run_reproducer(tmp_path / "first.reduced.mlir")
    assert status == 1 and expected in capsys.readouterr().err


def test_reduce_simplifies_scalar_attributes():
    """A property that holds while leaky_relu's alpha is not 0 (as a pass that rewrites
    it into relu would be wrong): alpha 0.333 becomes 1, the clip after it goes and the
    argument shrinks to 1x1."""
    from strato.testing.reduce import reduce_module

    module = _parse(
        """
        func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
          %l = graph.leaky_relu %x alpha 0.333333343 : tensor<8x16xf32>
          %c = graph.clip %l min -1.5 max 2.5 : tensor<8x16xf32>
          func.return %c : tensor<8x16xf32>
        }
        """
    )

    def leaky_is_not_relu(candidate: ModuleOp) -> bool:
        leaky = [op for op in candidate.walk() if isinstance(op, graph.LeakyReluOp)]
        return bool(leaky) and leaky[0].alpha.value.data != 0.0

    small = reduce_module(module, leaky_is_not_relu)
    (leaky,) = [op for op in small.walk() if op.name.startswith("graph.")]
    assert isinstance(leaky, graph.LeakyReluOp) and leaky.alpha.value.data == 1.0
    assert _argument_shapes(small) == [(1, 1)]


def test_reduce_makes_te_level_dense_constants_splats():
    """At the te level graph constants are dense `arith.constant`s passed to te.call: a
    property that needs the bias to be a constant not all 0 makes it a splat of 1
    (and the weight an argument); shapes stay (te is not reshaped)."""
    from strato.testing.reduce import reduce_module

    module = _parse(
        """
        func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
          %w = graph.constant dense<[[0.5, 0.25, -1.0, 2.0], [1.5, 0.75, 3.0, -2.0], [0.1, 0.2, 0.3, 0.4]]> : tensor<3x4xf32>
          %b = graph.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
          %y = graph.dense %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
          func.return %y : tensor<2x3xf32>
        }
        """
    )
    resolve_pass("convert-graph-to-te")().apply(make_context(), module)

    def bias_is_not_zero(candidate: ModuleOp) -> bool:
        call = next(op for op in candidate.walk() if op.name == "te.call")
        bias = call.operands[2].owner
        return bias.name == "arith.constant" and np.any(bias.value.get_values())

    small = reduce_module(module, bias_is_not_zero)
    text = ir_text(small)
    main = next(op for op in small.walk() if op.name == "func.func")
    constants = [op for op in main.walk() if op.name == "arith.constant"]
    # the weight became an argument (fewer ops first), the bias a splat of 1
    assert [str(op.value) for op in constants] == ["dense<1.000000e+00> : tensor<3xf32>"]
    # te is not reshaped: the call keeps its types
    call = next(op for op in main.walk() if op.name == "te.call")
    assert [str(t) for t in call.operand_types] == ["tensor<2x4xf32>", "tensor<3x4xf32>", "tensor<3xf32>"]
    assert "te.primitive @dense_0" in text


RUN_TIME_PROGRAM = """
func.func @main(%x: tensor<?x?x8xf32> {graph.sizes = ["batch", "seq"]}, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %d = graph.matmul %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %r = graph.relu %d : tensor<?x?x8xf32>
  %s = graph.softmax %r axes [1] : tensor<?x?x8xf32>
  func.return %s : tensor<?x?x8xf32>
}
"""


@dataclass(frozen=True)
class OffByOneBoundPass(ModulePass):
    """Stops every loop to a run-time bound one iteration early: wrong on purpose, at
    the loop level of a program of run-time sizes."""

    name = "test-off-by-one-bound"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects import arith

        from strato.dialects.loop import ForOp

        for loop in [inner for inner in op.walk() if isinstance(inner, ForOp) and inner.is_dynamic]:
            one = arith.ConstantOp.from_int_and_width(1, IndexType())
            shorter = arith.SubiOp(loop.bound, one)
            loop.parent_block().insert_ops_before([one, shorter], loop)
            loop.operands[0] = shorter.result


def test_the_loop_level_of_run_time_sizes_is_checked():
    """A program of run-time batch and sequence, lowered through blocks of rows and
    kernels of run-time sizes and scheduled: each level is run on the same inputs (the
    loop level's functions take flat buffers, the sizes the inputs give, and
    loop.shape / te.sizes say what each holds), and a loop-level pass that stops a
    run-time loop early is caught."""
    from strato.targets.registry import get_target

    get_target("llvm").schedule_context()  # loads schedule-default's templates
    passes = [
        resolve_pass("graph-fuse-ops")(),
        resolve_pass("convert-graph-to-te")(row_blocks=(4, 1)),
        resolve_pass("convert-te-to-loops")(),
        resolve_pass("schedule-default")(),
    ]
    report = check_pipeline(make_context(), _parse(RUN_TIME_PROGRAM), passes, n_inputs=4)
    assert report.unsupported is None and report.difference is None, report.unsupported
    assert report.passes_checked[-2:] == ["convert-te-to-loops", "schedule-default"]
    report = check_pipeline(
        make_context(), _parse(RUN_TIME_PROGRAM), [*passes, OffByOneBoundPass()], n_inputs=4
    )
    assert report.difference is not None and report.difference.pass_name == "test-off-by-one-bound"


def test_the_compiled_evaluator_runs_programs_of_run_time_sizes(monkeypatch):
    """A loop program of run-time sizes too large to interpret runs compiled (its sizes
    passed after the buffers, its outputs shaped by them): the same results as the
    interpreter, and the wrong pass caught the same way."""
    from strato.targets.registry import get_target
    from strato.testing import equivalence

    get_target("llvm").schedule_context()  # loads schedule-default's templates
    module = _parse(RUN_TIME_PROGRAM)
    lowering = [
        resolve_pass("graph-fuse-ops")(),
        resolve_pass("convert-graph-to-te")(row_blocks=(4, 1)),
        resolve_pass("convert-te-to-loops")(),
        resolve_pass("schedule-default")(),
    ]
    inputs = equivalence.make_inputs(module, 3, seed=7)
    for pass_ in lowering:
        pass_.apply(make_context(), module)
    assert equivalence.evaluator_of(module) == "loop interpreter"
    interpreted = equivalence.run_all(module, inputs)
    monkeypatch.setattr(equivalence, "MAX_INTERPRETED_LOOP_STEPS", 0)
    assert equivalence.evaluator_of(module) == "compiled (LLVM)"
    compiled = equivalence.run_all(module, inputs)
    for x, a, b in zip(inputs, interpreted, compiled, strict=True):
        assert not isinstance(a, str) and not isinstance(b, str), (a, b)
        assert a[0].shape == x[0].shape
        np.testing.assert_allclose(b[0], a[0], rtol=1e-5, atol=1e-6)
    report = check_pipeline(
        make_context(), _parse(RUN_TIME_PROGRAM), [*lowering, OffByOneBoundPass()], n_inputs=4
    )
    assert report.difference is not None and report.difference.pass_name == "test-off-by-one-bound"
