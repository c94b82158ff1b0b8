"""The compile cache: a second compilation of the same model with the same options loads
its machine code; anything that changes the code misses; broken entries are rebuilt."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from test_compile import small_mlp

import strato
from strato import compiler
from strato.runtime import cache
from strato.targets.registry import get_target

X = np.random.default_rng(5).standard_normal((2, 16)).astype(np.float32)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """The cache on, in a directory of this test's own."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def compilations(monkeypatch):
    """The number of real (uncached) compilations so far."""
    calls = []
    original = compiler._compile_model

    def counting(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(compiler, "_compile_model", counting)
    return calls


def entries(directory):
    cache.wait_for_writes()  # strato.compile writes its entry in the background
    return sorted(directory.glob("*/*.strato"))


def test_second_compile_loads_from_the_cache(cache_dir, compilations):
    first = strato.compile(small_mlp())
    assert first.origin is None and len(compilations) == 1
    (entry,) = entries(cache_dir)
    second = strato.compile(small_mlp())
    assert len(compilations) == 1
    assert second.origin == f"the compile cache ({entry})"
    np.testing.assert_array_equal(second(X)[0], first(X)[0])
    assert second.signature == first.signature and second.target == first.target
    assert second.llvm_ir == first.llvm_ir  # `strato compile -o X.ll/.o` works from a hit


def test_what_changes_the_code_misses(cache_dir, compilations, tmp_path):
    strato.compile(small_mlp())
    strato.compile(small_mlp(seed=1))  # other weights
    strato.compile(small_mlp(), fast_math=True)  # other target options
    strato.compile(small_mlp(), name="renamed")  # another entry symbol
    assert len(compilations) == 4 and len(entries(cache_dir)) == 4
    renamed = strato.compile(small_mlp(), name="renamed")
    assert len(compilations) == 4 and renamed.entry_symbol == "renamed_run"
    # a file is keyed by its bytes: rewriting it with other weights misses
    path = tmp_path / "m.onnx"
    onnx.save(small_mlp(seed=2), path)
    strato.compile(str(path))
    strato.compile(str(path))
    assert len(compilations) == 5
    onnx.save(small_mlp(seed=3), path)
    strato.compile(str(path))
    assert len(compilations) == 6


def test_key_covers_options_and_the_cpu():
    model = small_mlp()
    key = compiler.compile_cache_key
    base = key(model, get_target("llvm"), None)
    assert base == key(small_mlp(), get_target("llvm"), None)
    others = [
        key(model, get_target("llvm -opt-level=2"), None),
        key(model, get_target("llvm -mcpu=x86-64-v2"), None),
        key(model, get_target("llvm -mattr=-avx2"), None),
        key(model, get_target("llvm"), {"x": (2, 16)}),
        key(model, get_target("llvm"), None, name="other"),
        key(model, get_target("llvm"), None, hooks=("cse", None)),
        key("mlp", get_target("llvm"), None),
    ]
    assert len({base, *others}) == len(others) + 1
    # the host CPU is part of the key of a target that does not name one
    assert get_target("llvm").cache_key() != get_target("llvm -mcpu=x86-64-v2").cache_key()
    assert key(object(), get_target("llvm"), None) is None  # not a model: no key


def test_a_models_key_covers_its_weights_nodes_and_header():
    """A ModelProto's key is taken field by field (its weights' bytes as they are): any
    change of a weight byte, a node, an input or the opsets is another key."""
    model = small_mlp()
    key = lambda m: compiler.compile_cache_key(m, get_target("llvm"), None)
    base = key(model)

    def changed(edit) -> str:
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        edit(copy)
        return key(copy)

    def flip_weight_byte(m):
        tensor = m.graph.initializer[0]
        data = bytearray(tensor.raw_data)
        data[3] ^= 1
        tensor.raw_data = bytes(data)

    def swap_weights(m):  # the same bytes under the other names
        a, b = m.graph.initializer[0], m.graph.initializer[1]
        a.name, b.name = b.name, a.name

    others = [
        changed(flip_weight_byte),
        changed(swap_weights),
        changed(lambda m: m.graph.node[0].output.__setitem__(0, "renamed")),
        changed(lambda m: m.graph.input[0].type.tensor_type.shape.dim[0].__setattr__("dim_param", "n")),
        changed(lambda m: m.opset_import[0].__setattr__("version", m.opset_import[0].version - 1)),
        changed(lambda m: m.__setattr__("producer_name", "other")),
    ]
    assert all(tensor.HasField("raw_data") for tensor in model.graph.initializer)
    assert changed(lambda m: None) == base
    assert len({base, *others}) == len(others) + 1


def test_cache_can_be_turned_off(cache_dir, compilations, monkeypatch):
    strato.compile(small_mlp(), cache=False)
    assert entries(cache_dir) == []
    monkeypatch.setenv("STRATO_CACHE", "0")
    strato.compile(small_mlp())
    strato.compile(small_mlp(), cache=True)  # the environment wins
    assert entries(cache_dir) == [] and len(compilations) == 3
    monkeypatch.setenv("STRATO_CACHE", "1")
    strato.compile(small_mlp())
    hit = strato.compile(small_mlp())
    assert hit.origin is not None and len(compilations) == 4
    # asking for the IR of every stage compiles
    stages = []
    strato.compile(small_mlp(), after_stage=lambda name, module: stages.append(name))
    assert len(compilations) == 5 and stages[0] == "graph"
    strato.compile(small_mlp(), cache=False)
    assert len(compilations) == 6


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_corrupt_entry_is_rebuilt(cache_dir, compilations, damage):
    first = strato.compile(small_mlp())
    (entry,) = entries(cache_dir)
    data = entry.read_bytes()
    entry.write_bytes({"truncate": data[: len(data) // 3], "garbage": b"x" * 100}[damage])
    rebuilt = strato.compile(small_mlp())
    assert rebuilt.origin is None and len(compilations) == 2
    np.testing.assert_array_equal(rebuilt(X)[0], first(X)[0])
    # the entry is whole again
    cache.wait_for_writes()
    np.testing.assert_array_equal(strato.load(entry)(X)[0], first(X)[0])
    assert strato.compile(small_mlp()).origin is not None and len(compilations) == 2


def test_an_unwritable_cache_costs_only_the_speed_up(tmp_path, monkeypatch, compilations):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(blocker))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = strato.compile(small_mlp())
        cache.wait_for_writes()
    assert model.origin is None
    assert any("cannot write the compile cache" in str(w.message) for w in caught)
    assert len(compilations) == 1


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path / "a"))
    assert cache.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("STRATO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "strato"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "strato"


def test_cli_uses_the_cache(cache_dir, compilations, capsys):
    from strato.tools import strato_cli

    assert strato_cli.main(["run", "mlp", "--repeat", "1"]) == 0
    assert strato_cli.main(["run", "mlp", "--repeat", "1"]) == 0
    assert len(compilations) == 1
    out = capsys.readouterr().out.splitlines()
    assert "loaded from the compile cache in" in [line for line in out if line.startswith("model:")][1]
    assert strato_cli.main(["run", "mlp", "--repeat", "1", "--no-cache"]) == 0
    assert len(compilations) == 2


def test_cli_cache_command(cache_dir, capsys):
    from strato.tools import strato_cli

    strato.compile(small_mlp())
    assert strato_cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    kernels = cache.kernel_count()
    assert kernels == 3  # the MLP's three kernels
    assert out.startswith(f"compile cache: {cache_dir}, on\n1 compiled model(s) and 3 compiled kernel(s), ")
    assert strato_cli.main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out == f"removed {1 + kernels} compiled model(s) and kernel(s) from {cache_dir}\n"
    assert entries(cache_dir) == [] and cache.kernel_count() == 0


def test_external_weights_are_part_of_the_key(cache_dir, compilations, tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(small_mlp(), path, save_as_external_data=True, location="w.bin", size_threshold=0)
    weights = tmp_path / "w.bin"
    first = strato.compile(str(path))
    # other weights of the same size, the .onnx file unchanged
    data = np.frombuffer(weights.read_bytes(), np.float32)
    weights.write_bytes((data * 2).astype(np.float32).tobytes())
    second = strato.compile(str(path))
    assert len(compilations) == 2 and second.origin is None
    assert not np.array_equal(second(X)[0], first(X)[0])


def test_loaded_plugins_are_part_of_the_key(monkeypatch):
    from strato import plugins

    model, target = small_mlp(), get_target("llvm")
    before = compiler.compile_cache_key(model, target, None)
    monkeypatch.setitem(plugins._loaded, "json", None)  # a module loaded as a plugin
    with_plugin = compiler.compile_cache_key(model, target, None)
    assert with_plugin != before
    assert with_plugin == compiler.compile_cache_key(model, target, None)


def test_least_recently_used_entries_are_evicted(cache_dir, compilations, monkeypatch):
    import os
    import time

    strato.compile(small_mlp(seed=1))
    (first,) = entries(cache_dir)
    size = first.stat().st_size
    # the three models share their kernels (the same shapes): room for them and two
    # models, not three
    kernels = sum(path.stat().st_size for path in cache_dir.glob("kernels/*/*"))
    monkeypatch.setenv("STRATO_CACHE_MAX_MB", str((kernels + 2.5 * size) / 1e6))
    strato.compile(small_mlp(seed=2))
    second = next(path for path in entries(cache_dir) if path != first)
    # both long unused, the first longer (explicit times: a file system's clock may be
    # coarser than the milliseconds between two writes) ...
    now = time.time_ns()
    os.utime(first, ns=(now - 10**10,) * 2)
    os.utime(second, ns=(now - 5 * 10**9,) * 2)
    assert strato.compile(small_mlp(seed=1)).origin is not None  # ... until this hit
    strato.compile(small_mlp(seed=3))
    assert len(compilations) == 3
    assert first in entries(cache_dir) and second not in entries(cache_dir)
    assert len(entries(cache_dir)) == 2
