"""The `strato` command, run as a subprocess like a user would."""

from __future__ import annotations

import re
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

    candidates = ["Softsign", "Celu", "Hardmax", "Shrink", "ThresholdedRelu", "Mish", "Bernoulli"]
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


# -- the command line as mlir-opt and tvmc users expect --------------------------------


def _relu_model(path, shape=("n", 8)) -> str:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return str(path)


USAGE_ERRORS = [
    (["run", "mlp", "--batch", "0"], "--batch: must be at least 1, got 0"),
    (["run", "mlp", "--batch", "-2"], "--batch: must be at least 1"),
    (["run", "mlp", "--repeat", "0"], "--repeat: must be at least 1"),
    (["run", "mlp", "--seed", "-1"], "--seed: must not be negative"),
    (["run", "mlp", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["run"], "required: MODEL"),
    ([], "required: COMMAND"),
    (["explode", "mlp"], "invalid choice: 'explode'"),
    (["compile", "mlp", "-o"], "expected one argument"),
    (["compile", "mlp", "-o", ""], "the output path is empty"),
    (["compile", "mlp", "-o", "mlp.h"], "the C header is written beside it"),
    (["run", "mlp", "--input-shapes", "x:[1.5,4]"], "dimensions must be integers"),
    (["run", "mlp", "--input-shapes", "x:[a,4]"], "input_shapes leaves 'a' of 'x' open"),
    (["run", "mlp", "--input-shapes", "x:[1.5,4]"], "dimensions must be integers"),
    (["run", "mlp", "--input-shapes", "x:[-1,4]"], "dimension -1 is negative"),
    (["run", "mlp", "--input-shapes", f"x:[{2**70},4]"], "does not fit in memory"),
    (["run", "mlp", "--input-shapes", "x"], "is not NAME:[D0,D1,...]"),
]


@pytest.mark.parametrize("argv,fragment", USAGE_ERRORS, ids=[" ".join(a) or "nothing" for a, _ in USAGE_ERRORS])
def test_usage_errors_are_one_line_with_exit_status_1(argv, fragment, capsys):
    assert strato_cli.main(argv) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("strato: error: "), captured.err
    assert fragment in lines[0]
    assert "usage:" not in captured.err and captured.out == ""


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exited:
        strato_cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"strato {strato_package_version()}"
    with pytest.raises(SystemExit) as exited:
        strato_cli.main(["run", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for option in ("--input-shapes", "--inputs", "--outputs", "--traceback", "--verbose"):
        assert option in out


def strato_package_version() -> str:
    import strato as package

    return package.__version__


def test_traceback_is_accepted_after_the_command(monkeypatch):
    import strato as package

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(package, "compile", broken)
    for argv in (["--traceback", "run", "mlp"], ["run", "mlp", "--traceback"]):
        with pytest.raises(KeyError):
            strato_cli.main(argv)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_model_path_must_be_a_regular_file(kind, tmp_path):
    import os

    if kind == "fifo":
        path = str(tmp_path / "model.onnx")
        os.mkfifo(path)  # opening it for reading would block forever
    elif kind == "directory":
        path = str(tmp_path)
    else:
        path = "/dev/zero"  # reading it never ends
    result = strato("run", path)
    line = assert_one_line_error(result, path)
    assert "not a regular file" in line or "is a directory" in line


def test_run_with_input_shapes_inputs_and_outputs(tmp_path):
    import numpy as np

    model = _relu_model(tmp_path / "relu.onnx")
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8)
    np.savez(tmp_path / "in.npz", x=x)
    out = tmp_path / "out.npz"
    result = strato(
        "run", model, "--input-shapes", "x:[3,8]", "--inputs", str(tmp_path / "in.npz"),
        "--outputs", str(out), "--repeat", "2", "--threads", "1",
    )
    assert result.returncode == 0, result.stderr
    assert "output 'y': shape [3, 8] float32" in result.stdout
    assert "onnxruntime latency: median" in result.stdout and "strato / onnxruntime = " in result.stdout
    # the peer runs on the model's threads, not on onnxruntime's default (every core)
    assert "run(s) on 1 thread(s)" in result.stdout
    with np.load(out) as saved:
        assert saved.files == ["y"]
        np.testing.assert_array_equal(saved["y"], np.maximum(x, 0))


def test_inputs_file_errors_name_the_file(tmp_path):
    import numpy as np

    model = _relu_model(tmp_path / "relu.onnx", shape=(2, 8))
    wrong_name = tmp_path / "wrong.npz"
    np.savez(wrong_name, z=np.zeros((2, 8), np.float32))
    assert_one_line_error(strato("run", model, "--inputs", str(wrong_name)), str(wrong_name), "no array 'x'")
    wrong_shape = tmp_path / "shape.npz"
    np.savez(wrong_shape, x=np.zeros((3, 8), np.float32))
    assert_one_line_error(strato("run", model, "--inputs", str(wrong_shape)), str(wrong_shape), "shape is [3, 8]")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip")
    assert_one_line_error(strato("run", model, "--inputs", str(garbage)), str(garbage), ".npz")


def test_verbose_reports_every_stage_with_its_time():
    result = strato("run", "mlp", "-v", "--repeat", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    stages = ("import", "graph-fuse-ops", "convert-te-to-loops", "schedule-default", "build")
    for stage in stages:
        assert any(line.startswith(f"strato: {stage}") and line.endswith(" s") for line in lines), result.stderr
    assert "strato: build: 3 distinct kernel(s), 0 from the compile cache ..." in lines
    assert not any("Traceback" in line for line in lines)


def test_compile_to_stdout_writes_no_file(tmp_path):
    result = strato("compile", "mlp", "-o", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("; ModuleID") and re.search(r'define i32 @"?mlp_run"?\(', result.stdout)
    assert list(tmp_path.iterdir()) == []


def test_compile_writes_the_header_beside_the_output(tmp_path):
    result = strato("compile", "mlp", "-o", str(tmp_path / "net.ll"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.h", "net.ll"]
    assert "int32_t mlp_run(const float *input, float *logits);" in (tmp_path / "net.h").read_text()


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch, capsys):
    """A full disk (ENOSPC while writing) leaves the previous file as it was and no
    temporary file behind."""
    import errno
    import os

    target = tmp_path / "mlp.ll"
    target.write_text("previous contents")
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, file):
            self.file = file

        def write(self, data):
            self.file.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self.file, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode)))
    assert strato_cli.main(["compile", "mlp", "-o", str(target)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"strato: error: {target}: cannot write the LLVM IR: No space left on device"
    assert target.read_text() == "previous contents"
    assert [p.name for p in tmp_path.iterdir()] == ["mlp.ll"]


def test_import_writes_graph_ir_that_strato_opt_reads(tmp_path):
    model = _relu_model(tmp_path / "relu.onnx", shape=(2, 8))
    out = tmp_path / "relu.mlir"
    result = strato("import", model, "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("builtin.module {") and "graph.relu" in text and "\t" not in text
    opt = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_opt", str(out), "-t", "interpret"],
        capture_output=True, text=True, timeout=300,
    )
    assert opt.returncode == 0, opt.stderr


def test_targets_stages_prints_the_pipeline_that_strato_opt_runs_alike(tmp_path):
    """`strato targets --stages TARGET` names each stage's passes with their options; the
    pipeline it prints, run by strato-opt on the imported model, gives the scheduled
    loops that `strato compile --dump-ir` shows for the same target."""
    result = strato("targets", "--stages", "llvm -threads=1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["graph", "te", "loops", "schedule", "build"]
    assert "graph-pack-dense{lanes=" in lines[0] and "schedule-default{lanes=" in lines[3]
    pipeline = lines[-1].removeprefix("strato-opt -p '").removesuffix("'")
    to_loops = pipeline[: pipeline.index(",convert-loops-to-llvm")]
    model = _relu_model(tmp_path / "relu.onnx", shape=(4, 32))
    assert strato("import", model, "-o", str(tmp_path / "relu.mlir")).returncode == 0
    opt = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_opt", str(tmp_path / "relu.mlir"), "-p", to_loops],
        capture_output=True, text=True, timeout=300,
    )
    assert opt.returncode == 0, opt.stderr
    dump = tmp_path / "dump"
    result = strato("compile", model, "--threads", "1", "-o", str(tmp_path / "m.ll"), "--dump-ir", str(dump))
    assert result.returncode == 0, result.stderr
    (scheduled,) = dump.glob("*-schedule-default.mlir")
    assert opt.stdout.strip() == scheduled.read_text().strip()
    bad = strato("targets", "--stages", "no-such-target")
    assert_one_line_error(bad, "unknown target 'no-such-target'")


def test_dump_ir_files_are_readable_mlir(tmp_path):
    """Every stage's dump is MLIR text that strato-opt reads back."""
    model = _relu_model(tmp_path / "relu.onnx", shape=(2, 8))
    dump = tmp_path / "dump"
    result = strato("compile", model, "-o", str(tmp_path / "m.ll"), "--dump-ir", str(dump))
    assert result.returncode == 0, result.stderr
    files = sorted(dump.iterdir())
    assert files[0].name == "01-graph.mlir" and files[-1].suffix == ".ll"
    for path in files[:-1]:
        assert path.read_text().startswith("builtin.module {"), path.name
        opt = subprocess.run(
            [sys.executable, "-m", "strato.tools.strato_opt", str(path), "-o", "/dev/null"],
            capture_output=True, text=True, timeout=300,
        )
        assert opt.returncode == 0, (path.name, opt.stderr)



def test_out_of_memory_in_generated_code_is_one_line(tmp_path):
    """The Expand [1, 8] -> [2^30, 8] -> ReduceSum model needs a 32 GiB intermediate: with
    the address space limited to 16 GiB, malloc fails and `strato run` says so in one
    line instead of dying of a segmentation fault."""
    import resource

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_llvm_target import expand_then_sum

    path = tmp_path / "expand.onnx"
    onnx.save(expand_then_sum(2**30), path)

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))

    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", "run", str(path), "--repeat", "1"],
        capture_output=True, text=True, timeout=600, preexec_fn=limit_memory,
    )
    assert_one_line_error(result, "out of memory: the model could not allocate its intermediate buffers")


def test_run_times_onnxruntime_on_the_models_thread_count():
    from strato.runtime.threads import available_cores
    from strato.tools.strato_cli import _model_threads

    assert _model_threads("llvm -threads=1") == 1
    assert _model_threads("llvm -mcpu=znver4 -threads=3 -fast-math") == 3
    assert _model_threads("llvm") == available_cores()
