"""The `strato` command, run as a subprocess like a user would."""

from __future__ import annotations

import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from strato.tools import strato_cli


def strato(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("strato: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_run_mlp():
    result = strato("run", "mlp", "--repeat", "3", "--seed", "1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "output 'logits': shape [1, 10] float32" in out
    assert "latency: median" in out and "ms over 3 run(s)" in out
    line = next(l for l in out.splitlines() if l.startswith("max relative error vs"))
    assert float(line.rsplit(":", 1)[1]) < 1e-4


def test_run_with_batch():
    result = strato("run", "mlp", "--batch", "3", "--repeat", "1")
    assert result.returncode == 0, result.stderr
    assert "shape [3, 10]" in result.stdout


def test_compile_mlp_writes_parsable_llvm_ir(tmp_path):
    llvm = pytest.importorskip("llvmlite.binding")
    out = tmp_path / "x.ll"
    result = strato("compile", "mlp", "-o", str(out))
    assert result.returncode == 0, result.stderr
    module = llvm.parse_assembly(out.read_text())
    module.verify()
    assert any(not f.is_declaration for f in module.functions)


def test_run_onnx_file(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    result = strato("run", str(path), "--batch", "4", "--repeat", "1")
    assert result.returncode == 0, result.stderr
    assert "output 'y': shape [4, 8] float32" in result.stdout
    # Without --batch the symbolic dimension is reported.
    assert_one_line_error(strato("run", str(path)), str(path), "dynamic dimension 'n'")


def test_missing_file(tmp_path):
    path = str(tmp_path / "absent.onnx")
    assert_one_line_error(strato("run", path), path, "no such file")


def test_malformed_onnx(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x0a\xff\xff\xff not a model")
    assert_one_line_error(strato("compile", str(path), "-o", str(tmp_path / "g.ll")), str(path), "ONNX")


def unsupported_unary_op() -> str:
    """A standard unary ONNX operator strato does not import (yet)."""
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    candidates = ["Softsign", "Celu", "Hardmax", "Shrink", "ThresholdedRelu", "Mish"]
    return next(op for op in candidates if op not in ONNX_CONVERTERS)


def test_unsupported_op(tmp_path):
    op_type = unsupported_unary_op()
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"], name="soft")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "unsupported.onnx"
    onnx.save(model, path)
    assert_one_line_error(strato("run", str(path)), str(path), f"node 'soft' ({op_type})", "not supported")


def test_unknown_zoo_name():
    assert_one_line_error(strato("run", "resnet9000"), "unknown model 'resnet9000'", "mlp")


def test_unwritable_output(tmp_path):
    out = str(tmp_path / "no_such_dir" / "x.ll")
    assert_one_line_error(strato("compile", "mlp", "-o", out), out)


def test_internal_errors_are_reported_as_such(monkeypatch, capsys):
    """An unexpected exception is one line saying it is an internal error."""
    import strato as strato_package

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(strato_package, "compile", broken)
    assert strato_cli.main(["run", "mlp"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("strato: internal error: KeyError") and "bug" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_without_onnxruntime_checks_against_the_graph_interpreter(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    assert strato_cli.main(["run", "mlp", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("max relative error vs"))
    assert "the graph interpreter" in line and "onnxruntime is not installed" in line
    assert float(line.rsplit(":", 1)[1]) < 1e-4
