"""strato-opt's exit codes and messages: one diagnostic line for bad input, never a
Python traceback, `strato-opt: internal error` for bugs."""

from __future__ import annotations

import io
import re
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


def test_pass_failure_without_op_names_the_file(run, write, monkeypatch) -> None:
    _register(monkeypatch, FailWithoutOpPass)
    path = write("relu.mlir", RELU)
    result = run(path, "-p", "test-fail-without-op")
    assert result.status == 1
    assert result.err_lines == [f"{path}: error: nothing to do"]


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
