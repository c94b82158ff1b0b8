"""Compiled models saved to a `.strato` file and loaded again without compiling, and
the diagnostics for files that cannot be loaded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
from test_compile import small_mlp

import strato
from strato.targets.llvm.aot import FORMAT_VERSION, MANIFEST, OBJECT, ModelFileError
from strato.targets.llvm.host import host_target
from strato.tools import strato_cli

BATCH = 256
"""Large enough for parallel loops: the object imports the thread pool's entry."""

X = np.random.default_rng(3).standard_normal((BATCH, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def compiled():
    return strato.compile(small_mlp(batch=BATCH), threads=2, cache=False, name="tiny")


@pytest.fixture(scope="module")
def saved(compiled, tmp_path_factory):
    path = tmp_path_factory.mktemp("aot") / "tiny.strato"
    compiled.save(path)
    return path


def test_save_and_load_runs_the_same_code(compiled, saved):
    loaded = strato.load(saved)
    assert loaded.origin == str(saved)
    assert loaded.signature == compiled.signature
    assert loaded.target == compiled.target and loaded.entry_symbol == "tiny_run"
    np.testing.assert_array_equal(loaded(X)[0], compiled(X)[0])
    # the LLVM IR travels with the code: C header and object file as after compiling
    assert loaded.c_header() == compiled.c_header()
    assert loaded.llvm_ir == compiled.llvm_ir
    assert loaded.object_code() == compiled.object_code()
    # a loaded model can be saved again, byte for byte the same code
    again = saved.parent / "again.strato"
    loaded.save(again)
    np.testing.assert_array_equal(strato.load(again)(X)[0], compiled(X)[0])


def test_load_in_a_fresh_process(compiled, saved, tmp_path):
    """Nothing compiled in the process: libc, libm and the parallel runtime resolve."""
    assert "strato_parallel_for" in compiled.machine_code.imports
    np.save(tmp_path / "x.npy", X)
    script = textwrap.dedent(
        f"""
        import numpy as np, strato
        model = strato.load({str(saved)!r})
        np.save({str(tmp_path / "y.npy")!r}, model(np.load({str(tmp_path / "x.npy")!r}))[0])
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), compiled(X)[0])


def rewrite(saved, tmp_path, edit_manifest=None, object_code=None):
    """A copy of the saved archive with its manifest edited and/or another object (its
    other members, such as the weights, kept)."""
    with zipfile.ZipFile(saved) as archive:
        manifest = json.loads(archive.read(MANIFEST))
        code = archive.read(OBJECT)
        others = {n: archive.read(n) for n in archive.namelist() if n not in (MANIFEST, OBJECT)}
    if edit_manifest is not None:
        edit_manifest(manifest)
    if object_code is not None:
        code = object_code
    path = tmp_path / "edited.strato"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(MANIFEST, json.dumps(manifest))
        archive.writestr(OBJECT, code)
        for name, content in others.items():
            archive.writestr(name, content)
    return path


def _member(content: bytes) -> dict:
    return {"bytes": len(content)}


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def edit(manifest):
        target = manifest
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_set("strato_version", "0.0.1"), "compiled by strato 0.0.1, this is strato .*compile the model again"),
        (_set("format_version", 99), f"format version 99; this strato reads version {FORMAT_VERSION}"),
        (_set("format", "other"), "not a compiled strato model \\(unknown manifest format\\)"),
        (_set("entry", "abi", "packed"), "its entry follows the ABI 'packed'"),
        (_set("machine", "triple", "riscv64-unknown-linux-gnu"), "compiled for riscv64-unknown-linux-gnu \\(CPU .*\\), this machine is .* \\(CPU .*\\)"),
        (_set("machine", "features", "+sse2,+no-such-feature"), "compiled for CPU '.*' with no-such-feature, which this CPU .* lacks"),
        (_set("machine", "features", ""), None),  # the host's own CPU name: loads
        (_set("imports", ["strato_no_such_function"]), "needs strato_no_such_function, which this process does not provide"),
        (_set("inputs", [{"name": "x", "shape": [-1], "dtype": "float32"}]), "bad input or output"),
        (_set("members", OBJECT, "bytes", 1), "corrupt: model.o holds .* bytes, the manifest says 1"),
        (_set("entry", "symbol", "other_run"), "the object code has no entry other_run"),
        (lambda manifest: manifest.pop("target"), "'target' is missing"),
        (_set("weights", "tiny_main_w1", [64, 1 << 20]), "weight 'tiny_main_w1' has no place in weights.bin"),
        (_set("weights", "tiny_main_w1", [8, 16]), "weight 'tiny_main_w1' has no place in weights.bin"),
    ],
)
def test_mismatched_manifests_are_diagnosed(saved, tmp_path, edit, reason):
    path = rewrite(saved, tmp_path, edit)
    if reason is None:
        np.testing.assert_array_equal(strato.load(path)(X)[0], strato.load(saved)(X)[0])
        return
    with pytest.raises(ModelFileError, match=reason) as info:
        strato.load(path)
    assert info.value.location == str(path)


@pytest.mark.skipif(not host_target().triple.startswith("x86_64"), reason="x86-64 CPU names")
def test_cpu_names_are_checked(saved, tmp_path):
    path = rewrite(saved, tmp_path, _set("machine", "features", ""))
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read(MANIFEST))
    manifest["machine"]["cpu"] = "x86-64-v2"  # a psABI level this CPU has: loads
    path = rewrite(saved, tmp_path, lambda m: m.update(manifest))
    np.testing.assert_array_equal(strato.load(path)(X)[0], strato.load(saved)(X)[0])
    other = "znver4" if host_target().cpu != "znver4" else "sapphirerapids"
    path = rewrite(saved, tmp_path, lambda m: (m.update(manifest), m["machine"].update(cpu=other)))
    with pytest.raises(ModelFileError, match=f"compiled for CPU '{other}'"):
        strato.load(path)


def test_a_model_saved_for_another_system_is_one_line_naming_both(saved, tmp_path, capsys):
    """strato.load and `strato run` of a file compiled for another triple refuse it before
    any of its code reaches LLVM, naming the file's triple and CPU and this machine's."""
    path = rewrite(
        saved,
        tmp_path,
        lambda m: m["machine"].update(triple="aarch64-unknown-linux-gnu", cpu="cortex-a72", features=""),
    )
    host = host_target()
    with pytest.raises(ModelFileError) as info:
        strato.load(path)
    message = info.value.message
    assert "aarch64-unknown-linux-gnu (CPU cortex-a72)" in message
    assert f"{host.triple} (CPU {host.cpu})" in message
    assert strato_cli.main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"strato: error: {path}: compiled for aarch64")


@pytest.mark.skipif(host_target().triple != "x86_64-unknown-linux-gnu", reason="an x86-64 Linux spelling")
def test_another_spelling_of_this_machines_triple_loads(saved, tmp_path):
    path = rewrite(saved, tmp_path, _set("machine", "triple", "x86_64-linux-gnu"))
    np.testing.assert_array_equal(strato.load(path)(X)[0], strato.load(saved)(X)[0])


def test_corrupt_files_are_diagnosed(saved, tmp_path):
    data = saved.read_bytes()
    cases = {
        "truncated": data[: len(data) // 2],
        "not-a-zip": b"ONNX? no.",
        "empty": b"",
        # one flipped byte inside the object code (its zip CRC catches it)
        "flipped": data[:200] + bytes([data[200] ^ 0xFF]) + data[201:],
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.strato"
        path.write_bytes(content)
        with pytest.raises(ModelFileError) as info:
            strato.load(path)
        assert info.value.location == str(path)
        assert "\n" not in info.value.message
    no_manifest = tmp_path / "no-manifest.strato"
    with zipfile.ZipFile(no_manifest, "w") as archive:
        archive.writestr("other.txt", "x")
    with pytest.raises(ModelFileError, match="no manifest.json"):
        strato.load(no_manifest)
    garbage_object = rewrite(saved, tmp_path, object_code=b"\x7fELF garbage")
    with pytest.raises(ModelFileError, match="the manifest says"):
        strato.load(garbage_object)
    # a consistent manifest over bytes that are no object file: refused before LLVM
    # (whose object reader would crash the process) reads them
    for code, reason in [
        (b"\x7fELF garbage", "no ELF header"),
        (_half(strato.load(saved).machine_code.object_code), "lies outside the file"),
    ]:
        path = rewrite(saved, tmp_path, _set("members", OBJECT, _member(code)), object_code=code)
        with pytest.raises(ModelFileError, match=f"not a loadable object file: .*{reason}"):
            strato.load(path)
    # the same for a kernel's object
    with zipfile.ZipFile(saved) as archive:
        kernel = next(n for n in archive.namelist() if n.startswith("kernels/") and n.endswith(".o"))
        members = {n: archive.read(n) for n in archive.namelist()}
    manifest = json.loads(members.pop(MANIFEST))
    manifest["members"][kernel] = _member(b"\x7fELF garbage")
    members[kernel] = b"\x7fELF garbage"
    path = tmp_path / "bad-kernel.strato"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(MANIFEST, json.dumps(manifest))
        for name, content in members.items():
            archive.writestr(name, content)
    with pytest.raises(ModelFileError, match="not a loadable object file: no ELF header"):
        strato.load(path)
    with pytest.raises(ModelFileError, match="no such file"):
        strato.load(tmp_path / "missing.strato")
    with pytest.raises(ModelFileError, match="is a directory"):
        strato.load(tmp_path)


def test_a_model_without_machine_code_cannot_be_saved(compiled, tmp_path):
    from strato.runtime.compiled_model import CompiledModel

    model = CompiledModel(compiled.signature, lambda buffers: None, target="interpret")
    with pytest.raises(strato.diagnostics.StratoError, match="cannot be saved"):
        model.save(tmp_path / "x.strato")
    assert not os.path.exists(tmp_path / "x.strato")


def test_cli_compile_to_strato_and_run_it(tmp_path, capsys):
    import onnx

    onnx.save(small_mlp(), tmp_path / "tiny.onnx")
    output = tmp_path / "tiny.strato"
    assert strato_cli.main(["compile", str(tmp_path / "tiny.onnx"), "-o", str(output), "--no-cache"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {output} (")
    assert strato_cli.main(["run", str(output), "--repeat", "1", "--outputs", str(tmp_path / "y.npz")]) == 0
    out = capsys.readouterr().out
    assert f"model: {output} (compiled for llvm), loaded in" in out
    assert "no reference run" in out
    # the same numbers as compiling in this process
    x = strato_cli.random_inputs(strato.load(output), 0)
    with np.load(tmp_path / "y.npz") as outputs:
        np.testing.assert_array_equal(outputs["y"], strato.load(output)(*x)[0])
    # options that only apply to compiling are refused, in one line
    assert strato_cli.main(["run", str(output), "--batch", "4"]) == 1
    assert capsys.readouterr().err == (
        f"strato: error: {output}: --batch does not apply to a compiled model (it is already compiled)\n"
    )
    bad = tmp_path / "bad.strato"
    bad.write_bytes(b"PK\x03\x04 truncated")
    assert strato_cli.main(["run", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"strato: error: {bad}: not a compiled strato model") and err.count("\n") == 1


def test_manifest_describes_the_model(saved, compiled):
    with zipfile.ZipFile(io.BytesIO(saved.read_bytes())) as archive:
        manifest = json.loads(archive.read(MANIFEST))
    assert manifest["inputs"] == [{"name": "x", "shape": [BATCH, 16], "dtype": "float32"}]
    assert manifest["outputs"] == [{"name": "y", "shape": [BATCH, 5], "dtype": "float32"}]
    assert manifest["target"] == "llvm -threads=2"
    assert manifest["strato_version"] == strato.__version__
    assert manifest["machine"]["cpu"] == host_target().cpu
    assert manifest["entry"]["symbol"] == "tiny_run"
    # its intermediate buffers come from the runtime's workspace
    assert set(manifest["imports"]) >= {"strato_workspace_take", "strato_workspace_give"}


def _half(code: bytes) -> bytes:
    """The first half of an object file: its headers point past its end."""
    return code[: len(code) // 2]
