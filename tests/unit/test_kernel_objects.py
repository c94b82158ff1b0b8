"""The llvm target's per-kernel build: each distinct kernel compiled once, the same
object whichever process compiles it, and kept in the compile cache for other models."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import StringAttr

import strato
from strato import zoo
from strato.dialects.loop import KERNEL_ATTR
from strato.frontends.onnx import import_onnx
from strato.runtime import cache
from strato.targets.llvm import kernel_objects
from strato.targets.llvm.host import host_target
from strato.targets.llvm.kernel_objects import (
    PHASES,
    SYMBOL_PREFIX,
    KernelBuild,
    KernelObject,
    compile_kernels,
    schedule_and_compile_kernels,
)
from strato.targets.llvm.memref_to_llvm import heap_bytes
from strato.targets.registry import Stage, get_target, run_stages


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """The cache on, in a directory of this test's own."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(directory))
    return directory


def _scheduled(name: str = "mlp", **sizes):
    module = import_onnx(zoo.build_model(name, **sizes)).module
    run_stages(get_target("llvm -threads=2").lowering_stages(), module)
    return module


def _kernel_names(module) -> list[str]:
    return [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]


BUILD = KernelBuild(host_target(), opt_level=3, threads=2, fast_math=False)


class Progress:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.calls.append((done, total))

    @property
    def from_cache(self) -> int:
        """How many kernels the build found compiled (its first report)."""
        return self.calls[0][0]


def test_a_second_model_with_the_same_kernels_compiles_none(cache_dir):
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    first_progress, second_progress = Progress(), Progress()
    first = strato.compile(zoo.build_model("mlp", seed=0), progress=first_progress)
    assert first_progress.from_cache == 0
    done, total = first_progress.calls[-1]
    assert done == total > 0
    assert cache.kernel_count() == total
    # other weights: another model, whose kernels are the first one's
    second = strato.compile(zoo.build_model("mlp", seed=1), progress=second_progress)
    assert second_progress.calls == [(total, total)]
    expected = strato.compile(zoo.build_model("mlp", seed=1), cache=False)
    np.testing.assert_array_equal(second(x)[0], expected(x)[0])
    assert not np.array_equal(second(x)[0], first(x)[0])


def test_a_model_with_one_layer_changed_compiles_only_that_layer(cache_dir):
    """Recompiling after one layer changed (the last one's width) builds that layer's
    kernel only; the unchanged layers' kernels come from the cache."""
    first_progress, second_progress = Progress(), Progress()
    strato.compile(zoo.build_model("mlp", sizes=(64, 48, 48, 10)), progress=first_progress)
    total = first_progress.calls[-1][1]
    assert total == 3 and first_progress.from_cache == 0
    changed = zoo.build_model("mlp", sizes=(64, 48, 48, 12))
    compiled = strato.compile(changed, progress=second_progress)
    assert second_progress.calls[0] == (total - 1, total)
    assert second_progress.calls[-1] == (total, total)
    assert cache.kernel_count() == total + 1
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    expected = strato.compile(changed, cache=False)
    np.testing.assert_array_equal(compiled(x)[0], expected(x)[0])


def test_a_damaged_kernel_entry_is_compiled_again(cache_dir):
    module = _scheduled()
    objects = compile_kernels(module.clone(), BUILD, cache=True)
    entries = sorted((cache_dir / cache.KERNELS).glob(f"*/*{cache.KERNEL_SUFFIX}"))
    assert len(entries) == len({o.symbol for o in objects.values()})
    entries[0].write_bytes(b"not a zip archive")
    progress = Progress()
    again = compile_kernels(module.clone(), BUILD, cache=True, progress=progress)
    assert progress.from_cache == len(entries) - 1
    assert {name: o.object_code for name, o in again.items()} == {
        name: o.object_code for name, o in objects.items()
    }
    KernelObject.from_bytes(entries[0].read_bytes())  # rewritten whole


def test_kernels_in_the_memo_are_not_compiled_again():
    """A kernel in the caller's memo is taken from it, as the compile cache's would be;
    the hook hears the keys of the kernels compiled, which then join the memo."""
    module = _scheduled()
    memo: dict[str, KernelObject] = {}
    heard: list[list[str]] = []
    objects = compile_kernels(module.clone(), BUILD, memo=memo, compiling=heard.append)
    distinct = {o.symbol for o in objects.values()}
    assert len(heard) == 1 and len(heard[0]) == len(memo) == len(distinct)
    assert {o.symbol for o in memo.values()} == distinct
    again = compile_kernels(module.clone(), BUILD, memo=memo, compiling=heard.append)
    assert len(heard) == 1
    assert again == objects
    del memo[heard[0][0]]
    compile_kernels(module.clone(), BUILD, memo=memo, compiling=heard.append)
    assert heard[1:] == [[heard[0][0]]]


def test_serial_and_parallel_builds_give_the_same_objects(monkeypatch):
    module = _scheduled("resnet18", image_size=32, width=8, num_classes=10)
    serial = compile_kernels(module.clone(), BUILD, jobs=1)
    monkeypatch.setattr(kernel_objects, "MIN_PARALLEL_OPS", 0)
    progress = Progress()
    parallel = compile_kernels(module.clone(), BUILD, jobs=2, progress=progress)
    assert set(serial) == set(parallel) == set(_kernel_names(module))
    for name, compiled in serial.items():
        assert compiled.symbol.startswith(SYMBOL_PREFIX)
        assert parallel[name] == compiled, name
    distinct = len({o.symbol for o in serial.values()})
    assert progress.calls[0] == (0, distinct) and progress.calls[-1] == (
        distinct,
        distinct,
    )


def test_kernel_symbols_name_what_they_compute():
    """Renaming a kernel keeps its symbol; anything in its code changes it."""
    module = _scheduled()
    objects = compile_kernels(module.clone(), BUILD)
    faster = compile_kernels(
        module.clone(), KernelBuild(BUILD.machine, 3, 2, fast_math=True)
    )
    single = compile_kernels(
        module.clone(), KernelBuild(BUILD.machine, 3, 1, fast_math=False)
    )
    for name, compiled in objects.items():
        assert faster[name].symbol != compiled.symbol
        assert single[name].symbol != compiled.symbol
    renamed = module.clone()
    kernel = next(
        op
        for op in renamed.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    )
    original = kernel.sym_name.data
    kernel.sym_name = StringAttr("another_name")
    assert (
        kernel_objects.kernel_unit(renamed, kernel, BUILD).symbol
        == objects[original].symbol
    )


def test_a_taken_kernel_leaves_its_declaration_and_keeps_its_key():
    """`take=True` moves the kernel into its unit (no copy) and leaves a declaration of
    the same name and type; the key is the one a copied unit has."""
    module = _scheduled()
    kernel = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    )
    name, signature = kernel.sym_name.data, kernel.function_type
    copied = kernel_objects.kernel_unit(module, kernel, BUILD)
    taken = kernel_objects.kernel_unit(module, kernel, BUILD, take=True)
    assert taken.key == copied.key
    assert kernel.parent_op() is taken.module
    left = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name]
    assert len(left) == 1 and left[0] is not kernel
    assert left[0].is_declaration and left[0].function_type == signature
    assert KERNEL_ATTR not in left[0].attributes


@pytest.mark.parametrize("name", ["mlp", "transformer", "dcgan"])
def test_the_kernel_digest_tells_kernels_apart_as_their_printed_key_does(name):
    """`kernel_digest` (a walk, what keys compiled objects) and `kernel_key` (the
    printed kernel, what keys tuning records) agree on which scheduled kernels are the
    same; neither sees the kernel's name or the names of its values, and an attribute
    or a type changes the digest."""
    from strato.schedule.workload import kernel_digest, kernel_key

    sizes = {"seq_len": 16, "hidden": 32, "heads": 2, "ffn": 64} if name == "transformer" else {}
    module = _scheduled(name, **sizes)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]
    digests = [kernel_digest(kernel) for kernel in kernels]
    keys = [kernel_key(kernel) for kernel in kernels]
    assert len(set(digests)) == len(set(keys)) > 1
    assert len(set(zip(digests, keys, strict=True))) == len(set(keys))
    kernel = kernels[0].clone()
    kernel.sym_name = StringAttr("another_name")
    for op in kernel.walk():
        for result in op.results:
            result.name_hint = "renamed"
    assert kernel_digest(kernel) == digests[0]
    op = next(op for op in kernel.walk() if "stage" in op.attributes)
    op.attributes["stage"] = StringAttr("another_stage")
    assert kernel_digest(kernel) != digests[0]


def test_the_names_of_run_time_sizes_do_not_change_a_kernels_keys():
    """A kernel of run-time sizes names them on its arguments (te.sizes, loop.size,
    loop.shape of a flat buffer) for the checker; its digest and its key (tuning
    records) are those of the same kernel without them, whatever the names, and the
    key leaves the kernel's attributes as they were."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

    from strato.context import make_context
    from strato.pipeline import run_pipeline
    from strato.schedule.workload import kernel_digest, kernel_key
    from strato.testing.dynamic_models import encoder_block

    module = import_onnx(encoder_block(), run_time_dims=True).module
    run_pipeline(make_context(), module, "graph-fuse-ops,convert-graph-to-te,te-inline-stages,convert-te-to-loops")
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]
    named = [k for k in kernels if any("te.sizes" in a.data for a in k.arg_attrs.data)]
    assert named, "no kernel names its sizes"
    for kernel in named:
        attrs = kernel.arg_attrs
        unnamed, renamed = kernel.clone(), kernel.clone()
        unnamed.arg_attrs = ArrayAttr([
            DictionaryAttr({k: v for k, v in a.data.items() if k not in ("te.sizes", "loop.size", "loop.shape")})
            for a in attrs.data
        ])  # fmt: skip
        renamed.arg_attrs = ArrayAttr([
            DictionaryAttr({
                k: (ArrayAttr([StringAttr("other") for _ in v.data]) if k == "te.sizes" else StringAttr("other") if k == "loop.size" else v)
                for k, v in a.data.items()
            })
            for a in attrs.data
        ])  # fmt: skip
        assert kernel_key(kernel) == kernel_key(unnamed) == kernel_key(renamed)
        assert kernel_digest(kernel) == kernel_digest(unnamed) == kernel_digest(renamed)
        assert kernel.arg_attrs == attrs


def test_a_damaged_object_is_refused():
    with pytest.raises(ValueError, match="not a compiled kernel"):
        KernelObject.from_bytes(b"PK\x03\x04 truncated")


def _unscheduled(name: str = "mlp", **sizes):
    """The model's loop-level module as the llvm target's schedule-default pass takes it
    (its kernels deduplicated, not scheduled), and that pass."""
    module = import_onnx(zoo.build_model(name, **sizes)).module
    stages = get_target("llvm -threads=2").stages()
    *before, schedule = stages[-1].passes
    run_stages([*stages[:-1], Stage("dedup", tuple(before))], module)
    return module, schedule


@pytest.mark.parametrize("parallel", [False, True])
def test_kernels_scheduled_where_they_are_compiled_are_those_the_pass_schedules(
    monkeypatch, cache_dir, parallel
):
    if parallel:
        monkeypatch.setattr(kernel_objects, "MIN_PARALLEL_OPS", 0)
    module, schedule = _unscheduled("resnet18", image_size=32, width=8, num_classes=10)
    scheduled = module.clone()
    run_stages([Stage("schedule", (schedule,))], scheduled)
    expected = compile_kernels(scheduled.clone(), BUILD, jobs=2)
    context = schedule.context()
    kernels = schedule_and_compile_kernels(module.clone(), BUILD, context, jobs=2, cache=True)
    assert {name: kernel.compiled for name, kernel in kernels.items()} == expected
    assert all(kernel.fresh for kernel in kernels.values())
    assert cache.kernel_count() == len({kernel.key for kernel in kernels.values()})
    for name, kernel in kernels.items():
        function = next(op for op in scheduled.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)
        assert kernel.heap_bytes == sum(
            heap_bytes(op) for op in function.walk() if isinstance(op, memref.AllocOp)
        )
    again = schedule_and_compile_kernels(module.clone(), BUILD, context, jobs=2, cache=True)
    assert not any(kernel.fresh for kernel in again.values())
    assert {name: kernel.compiled for name, kernel in again.items()} == expected
    # each kernel's CPU seconds by phase, in whichever process built it: every phase
    # when compiled, the schedule and key only when found in the cache
    for compiled, found in ((kernels[name], again[name]) for name in kernels):
        assert list(compiled.seconds) == list(PHASES)
        assert list(found.seconds) == list(PHASES[:2])
        assert all(seconds >= 0 for seconds in (*compiled.seconds.values(), *found.seconds.values()))
        assert compiled.templates == found.templates
    assert sum(kernel.seconds["machine code"] for kernel in kernels.values()) > 0
    assert {"conv2d_nchwc", "injective"} <= {t for kernel in kernels.values() for t in kernel.templates}


def test_a_compile_nobody_watches_schedules_its_kernels_in_the_build(monkeypatch):
    """Without after_stage (nor progress or tuning log), the llvm build schedules the
    kernels where it compiles them; the model is the one the staged compile gives."""
    calls = []
    original = kernel_objects.schedule_and_compile_kernels

    def spy(*args, **kwargs):
        calls.append(kwargs.get("jobs"))
        return original(*args, **kwargs)

    monkeypatch.setattr(kernel_objects, "schedule_and_compile_kernels", spy)
    model = zoo.build_model("mlp", seed=0)
    heard: list[str] = []
    deferred = strato.compile(model, target="llvm -threads=2", cache=False, before_stage=heard.append)
    assert len(calls) == 1
    assert heard[-1] == "schedule-default"
    seen: list[str] = []
    staged = strato.compile(
        model, target="llvm -threads=2", cache=False, after_stage=lambda stage, module: seen.append(stage)
    )
    assert len(calls) == 1 and seen[-1] == "schedule-default"
    assert deferred.ir_parts == staged.ir_parts
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    np.testing.assert_array_equal(deferred(x)[0], staged(x)[0])
