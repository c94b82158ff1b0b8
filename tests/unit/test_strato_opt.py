"""strato-opt's exit codes and messages: one diagnostic line for bad input, never a
Python traceback, `strato-opt: internal error` for bugs."""

from __future__ import annotations

import errno
import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from strato.diagnostics import StratoError
from strato.dialects.graph import ReluOp
from strato.tools import strato_opt
from strato.tools.strato_opt import main

RELU = """\
func.func @relu(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""

INT_RELU = """\
func.func @int_relu(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}
"""

LOCATED_ERROR = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): error: (?P<reason>.+)$")


@dataclass
class Run:
    status: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run_strato_opt(*argv: str) -> Run:
        status = main(list(argv))
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        return Run(status, captured.out, captured.err)

    return run_strato_opt


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], str]:
    def write_file(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write_file


# -- success --------------------------------------------------------------------------


def test_valid_input_round_trips(run, write) -> None:
    result = run(write("relu.mlir", RELU))
    assert result.status == 0
    assert result.err == ""
    assert "%r = graph.relu %a : tensor<4xf32>" in result.out


def test_help_and_version_exit_zero(run) -> None:
    result = run("--help")
    assert result.status == 0
    assert "convert-graph-to-te" in result.out
    assert run("--version").status == 0


def test_reads_stdin(run, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(INT_RELU.encode())))
    result = run()
    assert result.status == 1
    assert result.err_lines == [
        "<stdin>:2:3: error: 'graph.relu' expects float tensors, got tensor<4xi32>"
    ]


# -- bad IR: one located line, status 1 -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "col", "reason"),
    [
        (RELU.replace("%a : tensor", "%a tensor"), 2, 22, "Expected ':'"),
        (
            RELU.replace("graph.relu", "graph.frobnicate"),
            2,
            25,
            "Operation graph.frobnicate is not registered",
        ),
        (INT_RELU, 2, 3, "'graph.relu' expects float tensors, got tensor<4xi32>"),
        ("func.func @f() {\n", 2, 1, "in block definition"),
        ("%x = \n", 2, 1, "operation name expected"),
    ],
)
def test_bad_ir_is_one_located_line(run, write, text, line, col, reason) -> None:
    path = write("bad.mlir", text)
    result = run(path)
    assert result.status == 1
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    match = LOCATED_ERROR.match(result.err_lines[0])
    assert match is not None, result.err
    assert (match["file"], int(match["line"]), int(match["col"])) == (path, line, col)
    assert match["reason"] == reason


def test_verifier_error_points_at_the_nested_op(run, write) -> None:
    text = (
        "te.primitive @p {\n"
        '  %x = te.placeholder "x" : tensor<4xf32>\n'
        '  %r = te.compute "r" (%i) : tensor<4xf32> {\n'
        "    %v = te.read %x[%i, %i] : tensor<4xf32>\n"
        "    te.yield %v : f32\n"
        "  }\n"
        "  te.output %r : tensor<4xf32>\n"
        "}\n"
    )
    result = run(write("nested.mlir", text))
    assert result.status == 1
    assert result.err_lines[0].endswith(
        "nested.mlir:4:5: error: 'te.read' of a rank-1 tensor needs 1 indices, got 2"
    )


def test_disable_verify_lets_invalid_ir_through(run, write) -> None:
    result = run(write("int.mlir", INT_RELU), "--disable-verify")
    assert result.status == 0
    assert "graph.relu %a : tensor<4xi32>" in result.out


def test_non_utf8_input_is_a_usage_error(run, tmp_path) -> None:
    path = tmp_path / "latin1.mlir"
    path.write_bytes(b"// caf\xe9\n")
    result = run(str(path))
    assert result.status == 1
    assert result.err_lines == [
        f"strato-opt: error: input file '{path}' is not UTF-8 text (byte 6)"
    ]


# -- bad command lines: `strato-opt: error: ...`, status 1 ----------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-p", "no-such-pass"], "unknown pass 'no-such-pass'"),
        (["-p", "convert-graph-to-tee"], "did you mean 'convert-graph-to-te'?"),
        (["-p", "cse{bogus=1}"], "bad options for pass 'cse'"),
        (["-p", "cse,,dce"], "malformed pass pipeline 'cse,,dce'"),
        (["-p", "cse{"], "malformed pass pipeline 'cse{'"),
        (["-t", "wasm"], "unknown target 'wasm'"),
        (["-t", "interpret{seed=x}"], "bad options for target 'interpret'"),
        (["-t", "interpret{"], "malformed target 'interpret{'"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_bad_command_line_is_one_line(run, write, argv, message) -> None:
    result = run(write("relu.mlir", RELU), *argv)
    assert result.status == 1
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    assert result.err_lines[0].startswith("strato-opt: error: ")
    assert message in result.err_lines[0]


def test_missing_input_file(run, tmp_path) -> None:
    missing = tmp_path / "missing.mlir"
    result = run(str(missing))
    assert result.status == 1
    assert result.err_lines == [
        f"strato-opt: error: could not open input file '{missing}': No such file or directory"
    ]


def test_unwritable_output_file(run, write, tmp_path) -> None:
    result = run(write("relu.mlir", RELU), "-o", str(tmp_path / "no-dir" / "out.mlir"))
    assert result.status == 1
    assert result.err_lines[0].startswith("strato-opt: error: could not write output file")


def test_failed_run_writes_no_output_file(run, write, tmp_path) -> None:
    output = tmp_path / "out.mlir"
    result = run(write("int.mlir", INT_RELU), "-o", str(output))
    assert result.status == 1
    assert not output.exists()


# -- split input and verify-diagnostics -----------------------------------------------


def test_split_input_goes_on_after_a_failing_chunk(run, write) -> None:
    result = run(write("chunks.mlir", INT_RELU + "// -----\n" + RELU), "--split-input-file")
    assert result.status == 1
    assert result.err_lines == [
        f"{result.err_lines[0].split(':')[0]}:2:3: error: "
        "'graph.relu' expects float tensors, got tensor<4xi32>"
    ]
    assert result.out.startswith("// -----\n")
    assert "func.func @relu" in result.out


def test_split_chunks_report_lines_of_the_whole_file(run, write) -> None:
    result = run(write("chunks.mlir", RELU + "// -----\n" + INT_RELU), "--split-input-file")
    assert result.status == 1
    assert result.err_lines[0].endswith(
        ":7:3: error: 'graph.relu' expects float tensors, got tensor<4xi32>"
    )


def test_verify_diagnostics_passes_when_all_match(run, write) -> None:
    annotation = "  // expected-error @+1 {{expects float tensors}}\n"
    annotated = INT_RELU.replace("  %r = graph.relu", annotation + "  %r = graph.relu")
    path = write("ok.mlir", annotated + "// -----\n" + RELU)
    result = run(path, "--split-input-file", "--verify-diagnostics")
    assert result.status == 0
    assert result.err == ""


@pytest.mark.parametrize(
    ("annotation", "problems"),
    [
        ("", ["unexpected error: 'graph.relu' expects float tensors"]),
        (
            "  // expected-error @+1 {{something else}}\n",
            ["unexpected error", 'expected error "something else" was not produced'],
        ),
        (
            "  // expected-error @+2 {{expects float tensors}}\n",
            ["unexpected error", 'expected error "expects float tensors" was not produced'],
        ),
    ],
)
def test_verify_diagnostics_fails_on_a_mismatch(run, write, annotation, problems) -> None:
    text = INT_RELU.replace("  %r = graph.relu", annotation + "  %r = graph.relu")
    result = run(write("bad.mlir", text), "--verify-diagnostics")
    assert result.status == 1
    assert len(result.err_lines) == len(problems)
    for line, problem in zip(result.err_lines, problems):
        assert LOCATED_ERROR.match(line) is not None, line
        assert problem in line


def test_verify_diagnostics_fails_on_an_expectation_without_error(run, write) -> None:
    annotation = "  // expected-error @+1 {{never}}\n"
    text = RELU.replace("  %r = graph.relu", annotation + "  %r = graph.relu")
    result = run(write("unmet.mlir", text), "--verify-diagnostics")
    assert result.status == 1
    assert result.err_lines[0].endswith(':2:6: error: expected error "never" was not produced')


# -- errors raised by passes ----------------------------------------------------------


def _register(monkeypatch, pass_class: type[ModulePass]) -> None:
    original = strato_opt.StratoOptMain.register_all_passes

    def register_all_passes(self) -> None:
        original(self)
        self.register_pass(pass_class.name, lambda: pass_class)

    monkeypatch.setattr(strato_opt.StratoOptMain, "register_all_passes", register_all_passes)


def _first_relu(module: ModuleOp) -> ReluOp:
    return next(op for op in module.walk() if isinstance(op, ReluOp))


@dataclass(frozen=True)
class RejectReluPass(ModulePass):
    name = "test-reject-relu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise StratoError("relu is not supported here", op=_first_relu(op))


@dataclass(frozen=True)
class FailWithoutOpPass(ModulePass):
    name = "test-fail-without-op"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassFailedException("nothing to do")


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        relu = _first_relu(op)
        function = relu.parent_op()
        assert isinstance(function, func.FuncOp)
        function.body.block.last_op.detach()  # the function loses its terminator


@dataclass(frozen=True)
class RecursePass(ModulePass):
    name = "test-recurse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise RecursionError("maximum recursion depth exceeded")


@dataclass(frozen=True)
class CrashPass(ModulePass):
    name = "test-crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise KeyError("no such thing")


def test_pass_error_with_op_is_located_at_the_op(run, write, monkeypatch) -> None:
    _register(monkeypatch, RejectReluPass)
    path = write("relu.mlir", RELU)
    result = run(path, "-p", "test-reject-relu")
    assert result.status == 1
    assert result.err_lines == [f"{path}:2:3: error: relu is not supported here"]


def test_pass_failure_without_op_is_located_at_the_module(run, write, monkeypatch) -> None:
    _register(monkeypatch, FailWithoutOpPass)
    path = write("relu.mlir", RELU)
    result = run(path, "-p", "test-fail-without-op")
    assert result.status == 1
    assert result.err_lines == [f"{path}:1:1: error: nothing to do"]


def test_invalid_ir_after_a_pass_names_the_pass(run, write, monkeypatch) -> None:
    _register(monkeypatch, BreakIRPass)
    result = run(write("relu.mlir", RELU), "-p", "test-break-ir")
    assert result.status == 1
    assert len(result.err_lines) == 1
    assert LOCATED_ERROR.match(result.err_lines[0]) is not None
    assert result.err_lines[0].endswith("(in the IR produced by test-break-ir)")


def test_internal_error_is_reported_as_a_bug(run, write, monkeypatch) -> None:
    _register(monkeypatch, CrashPass)
    result = run(write("relu.mlir", RELU), "-p", "test-crash")
    assert result.status == 1
    assert result.err_lines[0] == (
        "strato-opt: internal error: KeyError: 'no such thing' (in pass 'test-crash')"
    )
    assert "--debug-traceback" in result.err_lines[1]
    assert len(result.err_lines) == 2


def test_debug_traceback_reraises(write, monkeypatch) -> None:
    _register(monkeypatch, CrashPass)
    with pytest.raises(strato_opt.InternalFailure) as info:
        main([write("relu.mlir", RELU), "-p", "test-crash", "--debug-traceback"])
    assert isinstance(info.value.__cause__, KeyError)


# -- the real process -----------------------------------------------------------------


def test_module_entry_point_reports_without_traceback(write) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_opt", write("int.mlir", INT_RELU)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert "error: 'graph.relu' expects float tensors" in result.stderr


def test_unterminated_string_on_a_long_line_fails_fast(write) -> None:
    # xDSL's string-literal regex backtracks exponentially here; strato-opt's parser
    # must not hang.
    line = '  %r = graph.relu"(%a) ' + "x, " * 40 + ": (tensor<4xf32>) -> tensor<4xf32>\n"
    text = RELU.replace("  %r = graph.relu %a : tensor<4xf32>\n", line)
    path = write("stray-quote.mlir", text)
    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_opt", path],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"{path}:2:18: error: End of file reached before closing string literal.\n"
    )


def _run_bounded(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """strato-opt in its own process; a hang fails the test through the timeout."""
    return subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_opt", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("prefix", ["", "@"])
def test_stray_quote_as_the_first_token_fails_fast(write, prefix) -> None:
    # The first token is lexed by the constructor of the parser: it must already use
    # the linear string-literal lexer (40 words would take hours with the other one).
    path = write("first-quote.mlir", prefix + '"' + "word " * 40 + "\n")
    result = _run_bounded(path)
    assert result.returncode == 1
    column = len(prefix) + 1
    assert result.stderr == (
        f"{path}:1:{column}: error: End of file reached before closing string literal.\n"
    )


def test_lex_error_in_the_first_token_of_a_chunk_spares_the_other_chunks(write) -> None:
    text = (
        RELU
        + "// -----\n"
        + '"' + "word " * 40 + "\n"
        + "// -----\n"
        + "`\n"
        + "// -----\n"
        + RELU.replace("@relu", "@after")
    )
    path = write("chunks.mlir", text)
    result = _run_bounded(path, "--split-input-file")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{path}:6:1: error: End of file reached before closing string literal.",
        f"{path}:8:1: error: Unexpected character: `",
    ]
    assert "func.func @relu" in result.stdout
    assert "func.func @after" in result.stdout


# -- hostile inputs: one located line, status 1, no traceback, no hang ---------------


def _func(body: str, args: str = "", results: str = "", name: str = "f") -> str:
    arrow = f" -> {results}" if results else ""
    return f"func.func @{name}({args}){arrow} {{\n{body}\n}}\n"


_HUGE = "tensor<99999999999x99999999999xf32>"
_TWO_BLOCKS = _func(
    "  cf.br ^bb1(%a : tensor<4xf32>)\n"
    "^bb1(%b: tensor<4xf32>):\n"
    "  %r = graph.relu %b : tensor<4xf32>\n"
    "  func.return %r : tensor<4xf32>",
    args="%a: tensor<4xf32>",
    results="tensor<4xf32>",
)
_RECURSIVE = _func(
    "  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  func.return %r : tensor<4xf32>",
    args="%a: tensor<4xf32>",
    results="tensor<4xf32>",
)
TE_READ_OUT_OF_BOUNDS = """\
te.primitive @p {
  %x = te.placeholder "x" : tensor<4xf32>
  %r = te.compute "r" (%i) : tensor<4xf32> {
    %c = arith.constant 100 : index
    %v = te.read %x[%c] : tensor<4xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = te.call @p(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""
LOOP_OUT_OF_BOUNDS = """\
func.func @oob(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" {
    %v = memref.load %a[%i] : memref<4xf32>
    %c = arith.constant 100000000 : index
    %j = arith.addi %i, %c : index
    memref.store %v, %o[%j] : memref<4xf32>
  }
  func.return
}
"""


def _annotated(annotation: str) -> str:
    return INT_RELU.replace("  %r = graph.relu", f"  // {annotation}\n  %r = graph.relu")


HOSTILE_INPUTS = [
    # lexing, the first token included
    pytest.param('"abc def', [], 1, "End of file reached before closing string literal", id="quote-first"),
    pytest.param("`", [], 1, "Unexpected character: `", id="backtick-first"),
    pytest.param('"\\q"', [], 1, "closing string literal", id="bad-escape-first"),
    pytest.param("%", [], 1, "Expected suffix identifier after '%'", id="percent-alone"),
    pytest.param("^", [], 1, "Expected suffix identifier after '^'", id="caret-alone"),
    pytest.param("!", [], 1, "Expected suffix identifier after '!'", id="bang-alone"),
    pytest.param("#", [], 1, "Expected suffix identifier after '#'", id="hash-alone"),
    pytest.param("\0", [], 1, "Unexpected character", id="nul-byte"),
    pytest.param("\ufeff" + RELU, [], 1, "Unexpected character", id="byte-order-mark"),
    pytest.param("\x01\x02", [], 1, "Unexpected character", id="control-characters"),
    pytest.param("0x", [], 1, "Could not parse entire input", id="bare-hex-prefix"),
    pytest.param("}", [], 1, "Could not parse entire input", id="close-brace"),
    pytest.param("(", [], 1, "Could not parse entire input", id="open-paren"),
    pytest.param("->", [], 1, "Could not parse entire input", id="arrow"),
    pytest.param("{-#", [], 1, "Expected a resource type key", id="open-file-metadata"),
    pytest.param(_func("  %é = arith.constant 1 : i32\n  func.return"), [], 2, "Expected suffix identifier", id="non-ascii-name"),
    pytest.param(RELU.replace("graph.relu %a", 'graph.relu "' + "x " * 30), [], 2, "closing string literal", id="quote-mid-line"),
    # nesting deeper than the recursive parser goes
    pytest.param(_func("  func.return", args="(" * 5000), [], 1, "nested too deeply to parse", id="deep-parentheses"),
    pytest.param(_func("  func.return").replace("@f()", "@f() attributes {x = " + "[" * 5000 + "]" * 5000 + "}"), [], 1, "nested too deeply to parse", id="deep-array-attribute"),
    pytest.param("builtin.module attributes {" + "a = {" * 6000 + "}" * 6001 + " {}\n", [], 1, "nested too deeply to parse", id="deep-dictionary"),
    pytest.param(_func("  func.return", args="%a: " + "tensor<" * 4000 + "f32" + ">" * 4000), [], 1, "nested too deeply to parse", id="deep-types"),
    pytest.param("builtin.module {" * 4000 + "}" * 4000 + "\n", [], 1, "nested too deeply to parse", id="deep-regions"),
    pytest.param(_func("  %c = arith.constant dense<" + "[" * 3000 + "1.0" + "]" * 3000 + "> : tensor<1xf32>\n  func.return"), [], 3, "Shape mismatch in dense literal", id="deep-dense-literal"),
    # sizes a few characters can ask for
    pytest.param(_func(f"  %c = graph.constant dense<1.0> : {_HUGE}\n  func.return %c : {_HUGE}", results=_HUGE), [], 2, "dense constant of 9999999999800000000001 elements is too large", id="huge-splat"),
    pytest.param(_func(f"  %c = arith.constant dense<1.0> : {_HUGE}\n  func.return"), [], 2, "is too large", id="huge-arith-splat"),
    pytest.param(_func('  %c = arith.constant dense<"0x01000000"> : tensor<99999999999xi32>\n  func.return'), [], 2, "is too large", id="huge-hex-splat"),
    pytest.param(_func("  %c = graph.constant dense<1.0> : tensor<99999999999xf32>\n  %r = graph.relu %c : tensor<99999999999xf32>\n  func.return"), ["-p", "graph-fold-constants"], 2, "is too large", id="huge-splat-folded"),
    pytest.param(_func("  func.return", args="%a: tensor<99999999999999999999999xf32>"), [], 1, "dimension 99999999999999999999999 is too large", id="dimension-over-int64"),
    pytest.param(_func("  func.return", args="%a: i99999999"), [], 1, "integer width 99999999 is too large", id="huge-integer-width"),
    pytest.param(_func("  %c = arith.constant 1 : i99999999\n  func.return"), [], 2, "integer width", id="huge-integer-width-constant"),
    pytest.param(_func("  %c = arith.constant 99999999999999999999999999999 : i32\n  func.return"), [], 2, "out of range for type i32", id="huge-integer-literal"),
    pytest.param(_func("  %c = arith.constant 300 : i8\n  func.return"), [], 2, "out of range for type i8", id="integer-out-of-range"),
    pytest.param(_func(f"  func.return %a : {_HUGE}", args=f"%a: {_HUGE}", results=_HUGE), ["-t", "interpret"], 1, "more than -t interpret allocates", id="huge-input-interpret"),
    pytest.param(_func("  func.return %a : tensor<4000000000xf32>", args="%a: tensor<4000000000xf32>", results="tensor<4000000000xf32>"), ["-t", "interpret"], 1, "4000000000 elements", id="large-input-interpret"),
    pytest.param(_func('  %c = graph.constant dense<"0x0102"> : tensor<4xf32>\n  func.return'), [], 3, "Shape mismatch in dense literal", id="hex-of-the-wrong-size"),
    pytest.param(_func("  %c = graph.constant dense<[1.5, 2.0]> : tensor<2xi32>\n  func.return"), [], 2, "Expected integer value", id="float-in-integer-dense"),
    pytest.param(_func("  %c = graph.constant dense<0x1FFFFFFFF> : tensor<2xf32>\n  func.return"), [], 2, "hex literal 0x1FFFFFFFF is not the bits of a f32 value", id="hex-float-too-wide"),
    # functions the passes and interpreters do not take
    pytest.param(_TWO_BLOCKS, ["-t", "interpret"], 1, "@f has 2 blocks; the interpreters run functions of a single block", id="two-blocks-interpret"),
    pytest.param(_TWO_BLOCKS, ["-p", "graph-fuse-ops"], 1, "@f has 2 blocks; graph-level passes (graph-fuse-ops)", id="two-blocks-fuse"),
    pytest.param(_TWO_BLOCKS, ["-p", "graph-plan-memory"], 1, "graph-level passes (graph-plan-memory)", id="two-blocks-plan-memory"),
    pytest.param(_TWO_BLOCKS, ["-p", "graph-alter-layout"], 1, "graph-level passes (graph-alter-layout)", id="two-blocks-alter-layout"),
    pytest.param(_TWO_BLOCKS, ["-p", "graph-default"], 1, "graph-level passes (graph-default)", id="two-blocks-default"),
    pytest.param(_TWO_BLOCKS, ["-p", "convert-graph-to-te,convert-te-to-loops"], 1, "single block", id="two-blocks-to-loops"),
    pytest.param(_RECURSIVE, ["-t", "interpret"], 2, "recursive call to @f", id="recursion-graph"),
    pytest.param(_RECURSIVE, ["-p", "convert-graph-to-te", "-t", "interpret"], 2, "recursive call to @f", id="recursion-te"),
    pytest.param(_func("  %r = func.call @g(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  func.return %r : tensor<4xf32>", args="%a: tensor<4xf32>", results="tensor<4xf32>") + _func("  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  func.return %r : tensor<4xf32>", args="%a: tensor<4xf32>", results="tensor<4xf32>", name="g"), ["-t", "interpret{function=f}"], 6, "recursive call to @f", id="mutual-recursion"),
    pytest.param(_func("  %r = func.call @nowhere(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  func.return %r : tensor<4xf32>", args="%a: tensor<4xf32>", results="tensor<4xf32>"), [], 2, "'@nowhere' could not be found", id="call-to-nowhere"),
    pytest.param("func.func private @f(tensor<4xf32>) -> tensor<4xf32>\n", ["-t", "interpret"], 1, "no function with a body to run", id="declaration-only-interpret"),
    pytest.param("// nothing here\n", ["-t", "interpret"], 1, "no function with a body to run", id="empty-interpret"),
    pytest.param(RELU + RELU.replace("@relu", "@relu2"), ["-t", "interpret"], 1, "cannot tell the entry function", id="two-entries-interpret"),
    pytest.param(RELU, ["-t", "interpret{function=nowhere}"], 1, "no function named @nowhere", id="missing-entry-interpret"),
    pytest.param(_func("  func.return %a : tensor<2xcomplex<f32>>", args="%a: tensor<2xcomplex<f32>>", results="tensor<2xcomplex<f32>>"), ["-t", "interpret"], 1, "cannot make a random input", id="complex-input-interpret"),
    pytest.param(_func("  func.return %a : tensor<*xf32>", args="%a: tensor<*xf32>", results="tensor<*xf32>"), ["-t", "interpret"], 1, "cannot make a random input", id="unranked-input-interpret"),
    pytest.param(_func("  func.return %a : tensor<?xf32>", args="%a: tensor<?xf32>", results="tensor<?xf32>"), ["-t", "interpret"], 1, "dynamic type", id="dynamic-input-interpret"),
    pytest.param(_func("  %c = arith.constant 1 : i32\n  func.return %c : i32", results="i32"), ["-t", "interpret"], 2, "the graph interpreter cannot run 'arith.constant'", id="scalar-ops-at-graph-level"),
    pytest.param(_func('  "foo.bar"() : () -> ()\n  func.return'), ["--allow-unregistered-dialect", "-t", "interpret"], 2, "cannot run 'builtin.unregistered'", id="unregistered-op-interpret"),
    pytest.param(_func('  "foo.bar"() : () -> ()\n  func.return'), ["--allow-unregistered-dialect", "-p", "convert-loops-to-llvm"], 2, "not supported by convert-loops-to-llvm", id="unregistered-op-to-llvm"),
    pytest.param(LOOP_OUT_OF_BOUNDS, ["-t", "interpret"], 6, "out of bounds of a buffer of shape [4]", id="out-of-bounds-loops"),
    pytest.param(LOOP_OUT_OF_BOUNDS.replace("0 to 4", "0 to 9223372036854775807"), ["-t", "interpret"], 2, "runs 9223372036854775807 steps, more than -t interpret runs", id="endless-loop-interpret"),
    pytest.param(_func("  %c = graph.constant dense<[1.0e10, 2.0]> : tensor<2xf16>\n  func.return"), [], 2, "a value does not fit its type", id="f16-overflow"),
    pytest.param(LOOP_OUT_OF_BOUNDS.replace("0 to 4", "0 to 4 step 0"), ["-t", "interpret"], 2, "step must be positive, got 0", id="loop-step-zero"),
    pytest.param(RELU, ["-p", "convert-loops-to-llvm"], 1, "is not supported by the llvm target", id="graph-to-llvm"),
    pytest.param(RELU, ["-t", "llvm"], 1, "lower the module with convert-loops-to-llvm", id="graph-as-llvm-ir"),
    # ill-formed IR
    pytest.param(_func("  func.return %nope : tensor<4xf32>", results="tensor<4xf32>"), [], 4, "values used but not defined", id="undefined-value"),
    pytest.param(_func("  %c = arith.constant 1 : i32\n  %c = arith.constant 2 : i32\n  func.return"), [], 3, "SSA value %c is already defined", id="redefined-value"),
    pytest.param(_func("  cf.br ^nowhere"), [], 4, "missing block declarations", id="undefined-block"),
    pytest.param(_func("  func.return %a, %a : tensor<4xf32>, tensor<4xf32>", args="%a: tensor<4xf32>", results="tensor<4xf32>"), [], 2, "same types as the function output types", id="wrong-return-count"),
    pytest.param(_func("  func.return").replace("@f()", "@f() attributes {x = #foo.bar}"), [], 1, "'foo.bar' is not registered", id="unknown-attribute"),
    pytest.param(_func("  func.return", args="%a: !foo.bar"), [], 1, "'foo.bar' is not registered", id="unknown-type"),
    pytest.param(_func("  func.return loc("), [], 3, "Unexpected location syntax", id="unterminated-location"),
    pytest.param(_func('  %r = "graph.relu"(%a) <{bogus = 1}> : (tensor<4xf32>) -> tensor<4xf32>\n  func.return', args="%a: tensor<4xf32>"), [], 2, "property 'bogus' is not defined", id="unknown-property"),
    pytest.param(_func('  %r = "graph.relu"(%a) ({}) : (tensor<4xf32>) -> tensor<4xf32>\n  func.return', args="%a: tensor<4xf32>"), [], 2, "Expected 0 regions", id="extra-region"),
    pytest.param(_func('  %r = "graph.relu"() : () -> tensor<4xf32>\n  func.return'), [], 2, "Expected 1 operand", id="missing-operand"),
    pytest.param(_func('  %r = "graph.constant"() : () -> tensor<4xf32>\n  func.return'), [], 2, "property 'value' expected", id="constant-without-value"),
    pytest.param("#a = 1 : i32\n#a = 2 : i32\n", [], 2, "re-declaration of alias '#a'", id="alias-redefined"),
    pytest.param("!a = !a\n", [], 2, "undefined symbol alias '!a'", id="self-alias"),
    pytest.param("builtin.module {}\nbuiltin.module {}\n", ["--no-implicit-module"], 2, "unexpected input after the top-level module", id="two-top-level-modules"),
    pytest.param(RELU, ["--no-implicit-module"], 1, "builtin.module operation expected", id="no-implicit-module"),
    pytest.param("builtin.module {\n^bb0(%a: i32):\n}\n", [], 1, "takes no block arguments", id="module-with-arguments"),
    pytest.param('"builtin.module"() ({\n^bb0:\n^bb1:\n}) : () -> ()\n', [], 1, "expected a single block", id="module-with-two-blocks"),
    # more shapes of bad input
    pytest.param(RELU.replace("\n", "\r\n").replace("%a : tensor", "%a tensor"), [], 2, "Expected ':'", id="crlf-line-ends"),
    pytest.param("%" + "x" * 100_000 + " = ", [], 1, "operation name expected", id="very-long-line"),
    pytest.param(_func('  %r = "graph.transpose"(%a) <{perm = array<i64: 99999999999999999999>}> : (tensor<4xf32>) -> tensor<4xf32>\n  func.return', args="%a: tensor<4xf32>"), [], 2, "out of range for type i64", id="huge-array-element"),
    pytest.param(_func("  func.return").replace("@f()", "@f() attributes {x = 99999999999999999999999 : i64}"), [], 1, "out of range for type i64", id="huge-integer-attribute"),
    pytest.param(_func('  %r = "graph.fused"() ({}) : () -> tensor<4xf32>\n  func.return'), [], 2, "expected a single block, but got 0 blocks", id="fused-without-block"),
    pytest.param('memref.global "private" constant @g : memref<99999999999xf32> = dense<1.0>\n', [], 1, "does not have a custom format", id="memref-global-custom-form"),
    pytest.param(_func('  %r = func.call @""() : () -> ()\n  func.return'), [], 2, "has 0 results, but was given 1", id="results-bound-to-a-void-call"),
    pytest.param(TE_READ_OUT_OF_BOUNDS, ["-t", "interpret"], 5, "out of bounds", id="te-read-out-of-bounds"),
    pytest.param(_func("  %r = te.call @nowhere(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  func.return %r : tensor<4xf32>", args="%a: tensor<4xf32>", results="tensor<4xf32>"), ["-t", "interpret"], 2, "is not a te.primitive", id="te-call-to-nowhere"),
    pytest.param('te.primitive @p {\n  %x = te.placeholder "x" : tensor<4xf32>\n  te.output %x : tensor<4xf32>\n}\n', ["-t", "interpret{function=p}"], 1, "no function with a body to run", id="interpret-a-primitive"),
    pytest.param(_func('  %p = graph.pad %a low [99999999999] high [1] mode "constant" : (tensor<4xf32>) -> tensor<100000000004xf32>\n  func.return %p : tensor<100000000004xf32>', args="%a: tensor<4xf32>", results="tensor<100000000004xf32>"), ["-t", "interpret"], 2, "100000000004 elements", id="huge-pad-interpret"),
    pytest.param(_func("  func.return %a : vector<4xf32>", args="%a: vector<4xf32>", results="vector<4xf32>"), ["-t", "interpret"], 1, "cannot make a random input of type vector<4xf32>", id="vector-input-interpret"),
    pytest.param(LOOP_OUT_OF_BOUNDS.replace("%j = arith.addi %i, %c : index", "%z = arith.constant 0 : index\n    %j = arith.divsi %i, %z : index"), ["-t", "interpret"], 6, "cannot run 'arith.divsi': integer division by zero", id="division-by-zero-loops"),
    # --verify-diagnostics annotations that cannot be read fail the run
    pytest.param(_annotated("expected-error @+1 {{oops"), ["--verify-diagnostics"], 2, "unterminated expected-error", id="annotation-unterminated"),
    pytest.param(_annotated("expected-bogus @+1 {{oops}}"), ["--verify-diagnostics"], 2, "unknown annotation 'expected-bogus'", id="annotation-unknown-kind"),
    pytest.param(_annotated("expected-error @+x {{oops}}"), ["--verify-diagnostics"], 2, "malformed designator '@+x'", id="annotation-bad-designator"),
    pytest.param(_annotated("expected-error @ {{oops}}"), ["--verify-diagnostics"], 2, "malformed designator '@'", id="annotation-empty-designator"),
    pytest.param(_annotated("expected-error-re @+1 {{{{[}}}}"), ["--verify-diagnostics"], 2, "invalid regex in expected-error-re", id="annotation-bad-regex"),
    pytest.param(_annotated("expected-error @-1000 {{oops}}"), ["--verify-diagnostics"], 2, "points outside the input", id="annotation-outside-the-input"),
    pytest.param(_annotated("expected-error oops"), ["--verify-diagnostics"], 2, "needs its expected text", id="annotation-without-braces"),
    pytest.param("// expected-error @above {{x}}\n" + RELU, ["--verify-diagnostics"], 1, "points outside the input", id="annotation-above-the-first-line"),
]


@pytest.mark.parametrize(("text", "argv", "line", "reason"), HOSTILE_INPUTS)
def test_hostile_input_is_one_located_line(run, write, text, argv, line, reason) -> None:
    path = write("hostile.mlir", text)
    result = run(path, *argv)
    assert result.status == 1
    assert len(result.err_lines) == 1, result.err
    match = LOCATED_ERROR.match(result.err_lines[0])
    assert match is not None, result.err
    assert (match["file"], int(match["line"])) == (path, line), result.err
    assert reason in match["reason"], result.err
    assert "internal error" not in result.err


# -- command-line habits of mlir-opt users --------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", ""], "-o needs a file name ('-' for stdout)"),
        (["-p", "cse", "-p", "dce"], "-p given after -p/--passes"),
        (["-p", "cse", "--pass-pipeline=builtin.module(dce)"], "--pass-pipeline given after"),
        (["--pass-pipeline=builtin.module(cse)", "--pass-pipeline=builtin.module(dce)"], "given after --pass-pipeline"),
        (["-p", "graph-alter-layout{block=4 block=8}"], "option 'block' given twice to pass 'graph-alter-layout'"),
        (["-p", "graph-alter-layout{block=4 block=8},cse"], "given twice"),
        (["--pass-pipeline=cse,dce"], "write it as 'builtin.module(pass,pass{option=value})'"),
        (["--pass-pipeline=builtin.module(func.func(cse))"], "nested pipeline 'func.func(...)'"),
        (["--pass-pipeline=builtin.module(cse"], "write it as 'builtin.module("),
        (["--pass-pipeline=builtin.module(nope)"], "unknown pass 'nope'"),
        (["-t", "interpret{seed=-1}"], "seed must be a non-negative integer, got -1"),
        (["--mlir-elide-elementsattrs-if-larger=-1"], "expected a number >= 0, got -1"),
        (["--mlir-elide-elementsattrs-if-larger=many"], "expected a number, got 'many'"),
    ],
)
def test_command_line_mistakes_are_one_line(run, write, argv, message) -> None:
    result = run(write("relu.mlir", RELU), *argv)
    assert result.status == 1
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    assert result.err_lines[0].startswith("strato-opt: error: ")
    assert message in result.err_lines[0]


def test_different_options_of_one_pass_are_accepted(run, write) -> None:
    result = run(write("relu.mlir", RELU), "-p", "graph-alter-layout{block=4},graph-alter-layout{block=8}")
    assert result.status == 0, result.err


def test_pass_pipeline_in_mlir_spelling_runs_the_same_passes(run, write) -> None:
    path = write("relu.mlir", RELU)
    short = run(path, "-p", "convert-graph-to-te,te-inline-stages")
    long = run(path, "--pass-pipeline", "builtin.module(convert-graph-to-te, te-inline-stages)")
    assert short.status == long.status == 0
    assert long.out == short.out
    assert "te.primitive" in long.out


def test_output_dash_is_stdout(run, write, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(write("relu.mlir", RELU), "-o", "-")
    assert result.status == 0
    assert "graph.relu" in result.out
    assert not (tmp_path / "-").exists()


def test_output_file_is_replaced_whole(run, write, tmp_path) -> None:
    output = tmp_path / "out.mlir"
    output.write_text("previous\n")
    output.chmod(0o640)
    result = run(write("relu.mlir", RELU), "-o", str(output))
    assert result.status == 0
    assert "graph.relu" in output.read_text()
    assert output.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir", "relu.mlir"]


def test_full_disk_leaves_the_previous_output_file(run, write, tmp_path, monkeypatch) -> None:
    def write_half_then_fail(stream, text) -> None:
        stream.write(text[: len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(strato_opt, "_write_text", write_half_then_fail)
    output = tmp_path / "out.mlir"
    output.write_text("previous\n")
    result = run(write("relu.mlir", RELU), "-o", str(output))
    assert result.status == 1
    assert result.err_lines == [
        f"strato-opt: error: could not write output file '{output}': No space left on device"
    ]
    assert output.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir", "relu.mlir"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_writing_to_a_full_device_is_an_error(run, write) -> None:
    result = run(write("relu.mlir", RELU), "-o", "/dev/full")
    assert result.status == 1
    assert result.err_lines == [
        "strato-opt: error: could not write output file '/dev/full': No space left on device"
    ]


def test_output_file_that_is_a_directory(run, write, tmp_path) -> None:
    result = run(write("relu.mlir", RELU), "-o", str(tmp_path))
    assert result.status == 1
    assert result.err_lines == [
        f"strato-opt: error: could not write output file '{tmp_path}': Is a directory"
    ]


@pytest.mark.parametrize(
    ("alias", "flag"),
    [
        ("--mlir-print-ir-after-all", "--print-ir-after-all"),
        ("--mlir-print-ir-before-all", "--print-ir-before-all"),
        ("--mlir-print-op-generic", "--print-op-generic"),
        ("--mlir-print-debuginfo", "--print-debuginfo"),
    ],
)
def test_mlir_opt_flag_aliases(run, write, alias, flag) -> None:
    path = write("relu.mlir", RELU)
    assert run(path, "-p", "cse", alias) == run(path, "-p", "cse", flag)


def test_mlir_timing_is_time_passes(run, write) -> None:
    result = run(write("relu.mlir", RELU), "-p", "cse", "--mlir-timing")
    assert result.status == 0
    assert "Execution time report" in result.err
    assert re.search(r"\(\s*\d+\.\d%\)  cse$", result.err, re.MULTILINE)


def test_ir_dumps_read_back(run, write) -> None:
    path = write("relu.mlir", RELU)
    dumped = run(path, "-p", "convert-graph-to-te,te-inline-stages", "--print-ir-after-all")
    assert dumped.status == 0
    assert dumped.err.count("// -----// IR Dump After") == 2
    again = run(write("dump.mlir", dumped.err), "--split-input-file")
    assert again.status == 0, again.err
    assert again.out.count("te.primitive") == 2


def test_print_ir_after_change_skips_passes_that_change_nothing(run, write) -> None:
    result = run(write("relu.mlir", RELU), "-p", "cse,convert-graph-to-te,dce", "--print-ir-after-change")
    assert result.status == 0
    headers = [line for line in result.err_lines if line.startswith("// -----// IR Dump")]
    assert headers == ["// -----// IR Dump After convert-graph-to-te //----- //"]


def test_print_ir_after_failure_dumps_what_the_pass_left(run, write, monkeypatch) -> None:
    _register(monkeypatch, BreakIRPass)
    result = run(write("relu.mlir", RELU), "-p", "cse,test-break-ir", "--print-ir-after-failure")
    assert result.status == 1
    assert result.err_lines[0] == "// -----// IR Dump After test-break-ir Failed //----- //"
    assert "graph.relu" in result.err
    assert LOCATED_ERROR.match(result.err_lines[-1]) is not None


def test_elided_constants_are_marked_and_do_not_read_back_silently(run, write) -> None:
    text = _func(
        "  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n"
        "  %s = graph.constant dense<[5.0]> : tensor<1xf32>\n"
        "  func.return %c : tensor<4xf32>",
        results="tensor<4xf32>",
    )
    printed = run(write("c.mlir", text), "--mlir-elide-elementsattrs-if-larger=2")
    assert printed.status == 0
    assert "graph.constant dense_resource<__elided__> : tensor<4xf32>" in printed.out
    assert "dense<5.000000e+00> : tensor<1xf32>" in printed.out
    path = write("elided.mlir", printed.out)
    again = run(path)
    assert again.status == 1
    assert len(again.err_lines) == 1
    assert again.err_lines[0].startswith(f"{path}:3:")
    assert "elided by --mlir-elide-elementsattrs-if-larger" in again.err_lines[0]


def test_list_passes_names_summary_and_origin(run) -> None:
    from strato.transforms import PASS_REGISTRY

    result = run("--list-passes")
    assert result.status == 0
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in result.out.splitlines()}
    assert set(PASS_REGISTRY) <= set(rows)
    assert rows["convert-graph-to-te"][0] == "strato"
    assert rows["cse"][0] == "xDSL"
    for name, (_, summary) in rows.items():
        assert summary.endswith("."), (name, summary)
        assert "no description" not in summary


def test_help_summaries_are_whole_sentences(run) -> None:
    from strato.transforms import PASS_REGISTRY

    result = run("--help")
    own = [name for name, where in PASS_REGISTRY.items() if where.startswith("strato.")]
    for name in own:
        line = next(line for line in result.out.splitlines() if line.split()[:1] == [name])
        assert line.rstrip().endswith("."), line


def test_out_of_bounds_store_in_compiled_code_is_a_diagnostic(run, write) -> None:
    # Compiled code runs in a child process: whether the store is caught by a check
    # or ends the child with a signal, strato-opt reports it in one located line.
    result = run(write("oob.mlir", LOOP_OUT_OF_BOUNDS), "-p", "convert-loops-to-llvm", "-t", "interpret")
    assert result.status == 1
    assert len(result.err_lines) == 1, result.err
    assert LOCATED_ERROR.match(result.err_lines[0]) is not None, result.err


@pytest.mark.parametrize(
    ("signal_number", "cause"),
    [
        (signal.SIGSEGV, "SIGSEGV (an access out of the bounds of a buffer, or a failed allocation)"),
        (signal.SIGFPE, "SIGFPE (an integer division by zero or an overflowing division)"),
    ],
)
def test_a_signal_in_compiled_code_names_the_function(signal_number, cause) -> None:
    from strato.tools.interpret_target import run_isolated

    function = func.FuncOp("kernel", ((), ()))
    with pytest.raises(StratoError) as info:
        run_isolated(lambda: os.kill(os.getpid(), signal_number), "kernel", function)
    assert info.value.message == f"the compiled code of @kernel was stopped by {cause}"
    assert info.value.op is function


def test_an_exception_in_the_child_reaches_the_parent() -> None:
    from strato.tools.interpret_target import run_isolated

    def fail() -> None:
        raise StratoError("bad buffer")

    with pytest.raises(StratoError, match="bad buffer"):
        run_isolated(fail, "kernel", func.FuncOp("kernel", ((), ())))


def test_compiled_code_writes_outputs_the_parent_reads(run, write) -> None:
    result = run(write("relu.mlir", LOOP_OUT_OF_BOUNDS.replace("%j = arith.addi %i, %c : index", "%j = arith.addi %i, %i : index").replace("0 to 4", "0 to 2")), "-p", "convert-loops-to-llvm", "-t", "interpret{print-inputs=true}")
    assert result.status == 0, result.err
    values = re.findall(r"-?\d\.\d{4}", result.out)
    inputs, outputs = values[:4], values[4:]
    assert outputs == [inputs[0], "0.0000", inputs[1], "0.0000"]


def test_deeper_than_the_stage_allows_is_located_at_the_deepest_op(run, write, monkeypatch) -> None:
    _register(monkeypatch, RecursePass)
    path = write("nested.mlir", "builtin.module {\n  builtin.module {\n" + RELU + "  }\n}\n")
    result = run(path, "-p", "test-recurse")
    assert result.status == 1
    assert result.err_lines == [
        f"{path}:4:3: error: IR nested 3 ops deep is too deep for pass 'test-recurse'"
    ]


def test_nesting_a_few_hundred_levels_deep_parses_and_prints(run, write) -> None:
    depth = 400
    result = run(write("deep.mlir", "builtin.module {" * depth + "}" * depth), "-p", "cse")
    assert result.status == 0, result.err
    assert result.out.count("builtin.module") == depth


def test_recursion_limit_is_restored_after_a_run(run, write) -> None:
    before = sys.getrecursionlimit()
    run(write("relu.mlir", RELU))
    assert sys.getrecursionlimit() == before


def test_hex_literals_in_float_constants_are_bit_patterns(run, write) -> None:
    text = _func(
        "  %c = graph.constant dense<[0x7FC00000, 0x3F800000, 2.5]> : tensor<3xf32>\n"
        "  %h = graph.constant dense<0x3C00> : tensor<2xf16>\n"
        "  %i = graph.constant dense<[0x7, 3]> : tensor<2xi32>\n"
        "  func.return %c : tensor<3xf32>",
        results="tensor<3xf32>",
    )
    result = run(write("hex.mlir", text))
    assert result.status == 0, result.err
    assert "dense<[0x7fc00000, 1.000000e+00, 2.500000e+00]> : tensor<3xf32>" in result.out
    assert "dense<1.000000e+00> : tensor<2xf16>" in result.out
    assert "dense<[7, 3]> : tensor<2xi32>" in result.out


def test_runs_on_the_calling_thread_when_no_large_stack_fits(run, write, monkeypatch) -> None:
    import threading

    def refuse(self) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    result = run(write("int.mlir", INT_RELU))
    assert result.status == 1
    assert result.err_lines[0].endswith(":2:3: error: 'graph.relu' expects float tensors, got tensor<4xi32>")
