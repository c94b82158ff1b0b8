"""Object files of compiled models link into C programs with only the C library, libm and
pthreads (`cc main.c m.o -lm -lpthread`), at any thread count, and give onnxruntime's
outputs; two models' objects link into one program.

gcc is on the development machine and in CI; the tests skip only without it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import subprocess

import numpy as np
import pytest
from c_programs import (
    LINK_LIBRARIES,
    c_driver,
    link_program,
    run_program,
    undefined_symbols,
)
from test_zoo_end_to_end import SMALL_OPTIONS, random_feeds, run_onnxruntime

import strato
from strato import zoo
from strato.targets.llvm.parallel_runtime import PARALLEL_FOR_SYMBOL

GCC = shutil.which("gcc")
NM = shutil.which("nm")
pytestmark = pytest.mark.skipif(
    GCC is None or NM is None, reason="no gcc or nm on this machine"
)

RTOL = 1e-4
ATOL_SCALE = 1e-5
"""As in test_zoo_end_to_end: an absolute floor, a fraction of the output's largest
magnitude, for outputs that cancel to nearly zero."""


def _provided_by_system_libraries(name: str) -> bool:
    """Whether the C library, libm or libpthread of this machine defines `name`."""
    for library in ("c", "m", "pthread"):
        path = ctypes.util.find_library(library)
        if path is not None and hasattr(ctypes.CDLL(path), name):
            return True
    return False


def assert_close(actual, expected, name: str) -> None:
    assert len(actual) == len(expected)
    for out, ref in zip(actual, expected, strict=True):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        atol = ATOL_SCALE * float(np.abs(ref).max()) if ref.size else 0.0
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", zoo.zoo_names())
def test_a_zoo_model_links_at_default_threads_and_matches_onnxruntime(name, tmp_path):
    model = zoo.build_model(name, batch=1, seed=0, **SMALL_OPTIONS[name])
    compiled = strato.compile(model, name=name)
    program = link_program(tmp_path, compiled, [GCC])
    needed = undefined_symbols(tmp_path / f"{name}.o", NM)
    assert PARALLEL_FOR_SYMBOL not in needed
    foreign = sorted(
        symbol for symbol in needed if not _provided_by_system_libraries(symbol)
    )
    assert not foreign, f"{name}.o needs {foreign} from outside libc, libm and pthreads"
    feeds = random_feeds(model, seed=1)
    assert_close(
        run_program(program, compiled, feeds), run_onnxruntime(model, feeds), name
    )


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_an_object_carries_its_thread_pool_at_any_thread_count(threads, tmp_path):
    """The full-size MLP has kernels large enough for parallel loops: from two threads
    on, the object holds the pool (it needs pthread_create, not the pool's entry)."""
    model = zoo.build_model("mlp", batch=2, seed=0)
    compiled = strato.compile(model, name="mlp", target=f"llvm -threads={threads}")
    program = link_program(tmp_path, compiled, [GCC])
    needed = undefined_symbols(tmp_path / "mlp.o", NM)
    assert PARALLEL_FOR_SYMBOL not in needed
    assert ("pthread_create" in needed) == (threads > 1), sorted(needed)
    feeds = random_feeds(model, seed=1)
    assert_close(
        run_program(program, compiled, feeds), run_onnxruntime(model, feeds), "mlp"
    )


_TWO_MODELS = r"""
#include <stdio.h>
#include "mlp.h"
#include "wide.h"

static float x[2 * 784], a[2 * 10], b[2 * 10];

int main(void) {
    for (int i = 0; i < 2 * 784; ++i) x[i] = (float)(i % 13) * 0.0625f - 0.375f;
    for (int round = 0; round < 3; ++round) {
        if (mlp_run(x, a) != MLP_OK || wide_run(x, b) != WIDE_OK) return 2;
    }
    for (int i = 0; i < 2 * 10; ++i) printf("%.9g %.9g\n", a[i], b[i]);
    return 0;
}
"""


def test_two_models_with_thread_pools_link_into_one_program(tmp_path):
    """Each object's pool (and kernels, and weights) is its own: nothing clashes, and
    calls into both models, one after the other, run their parallel loops."""
    x = ((np.arange(2 * 784) % 13) * 0.0625 - 0.375).astype(np.float32).reshape(2, 784)
    expected = []
    for name, sizes in (("mlp", (784, 1024, 1024, 10)), ("wide", (784, 2048, 10))):
        compiled = strato.compile(
            zoo.build_model("mlp", batch=2, seed=len(sizes), sizes=sizes),
            name=name,
            target="llvm -threads=2",
        )
        compiled.save_object(tmp_path / f"{name}.o")
        compiled.save_c_header(tmp_path / f"{name}.h")
        assert "pthread_create" in undefined_symbols(tmp_path / f"{name}.o", NM)
        expected.append(compiled(x)[0].reshape(-1))
    (tmp_path / "main.c").write_text(_TWO_MODELS)
    build = subprocess.run(
        [GCC, "-std=c11", "-Wall", "-Werror", "-o", "both", "main.c", "mlp.o", "wide.o", *LINK_LIBRARIES],
        check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    run = subprocess.run(
        [str(tmp_path / "both")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    printed = np.array(
        [line.split() for line in run.stdout.splitlines()], dtype=np.float32
    )
    np.testing.assert_allclose(printed[:, 0], expected[0], rtol=RTOL, atol=1e-5)
    np.testing.assert_allclose(printed[:, 1], expected[1], rtol=RTOL, atol=1e-5)


def test_the_header_gives_the_link_line():
    compiled = strato.compile(
        zoo.build_model("mlp", batch=1, seed=0, **SMALL_OPTIONS["mlp"]), name="mlp"
    )
    assert "cc main.c mlp.o -lm -lpthread" in compiled.c_header()


def test_run_time_control_flow_links_into_one_object(tmp_path):
    """A graph.loop whose body holds a graph.if (a recurrence of a run-time trip count,
    branching on each iteration's parity): one object, the control flow in it, run for
    several trip counts."""
    from onnx import TensorProto, helper
    from test_onnx_control_flow import _recurrence, _tensor, parity_branching_body

    rng = np.random.default_rng(7)

    def branch(name: str, activation: str):
        return helper.make_graph(
            [helper.make_node("MatMul", ["h_in", "W"], [f"{name}_p"]),
             helper.make_node(activation, [f"{name}_p"], [f"{name}_out"])],
            name, [], [_tensor(f"{name}_out", TensorProto.FLOAT, [2, 8])],
        )  # fmt: skip

    body = parity_branching_body(branch("a", "Tanh"), branch("b", "Sigmoid"))
    model = _recurrence(["M", ""], [_tensor("M", TensorProto.INT64, [])], body)
    compiled = strato.compile(model, name="branching")
    assert type(compiled).__name__ == "LLVMCompiledModel"
    program = link_program(tmp_path, compiled, [GCC])
    x = rng.standard_normal((2, 8)).astype(np.float32)
    for trips in (0, 1, 4):
        feeds = [x, np.array(trips, np.int64)]
        assert_close(run_program(program, compiled, feeds), run_onnxruntime(model, feeds), f"M={trips}")


def test_a_compiled_scan_links_into_one_object(tmp_path):
    """A Scan too long to unroll (a graph.scan, read backwards along an inner axis, its
    output stacked on another): one object, the loop over positions in it."""
    from test_onnx_control_flow import _graph_ops, _rnn_scan

    model, feeds = _rnn_scan(30, 1, 1, 2, 1)
    assert "graph.scan" in _graph_ops(model)
    compiled = strato.compile(model, name="scanning")
    program = link_program(tmp_path, compiled, [GCC])
    arrays = list(feeds.values())
    assert_close(run_program(program, compiled, arrays), run_onnxruntime(model, arrays), "scan")


def _sequence_model():
    """y[b] = mean over the sequence of tanh(x[b] @ W): dynamic batch and sequence."""
    from onnx import TensorProto, helper, numpy_helper
    from test_onnx_control_flow import _tensor

    weight = np.random.default_rng(6).standard_normal((16, 16)).astype(np.float32)
    return helper.make_model(
        helper.make_graph(
            [helper.make_node("MatMul", ["x", "W"], ["p"]), helper.make_node("Tanh", ["p"], ["t"]),
             helper.make_node("ReduceMean", ["t"], ["y"], axes=[1], keepdims=0)],
            "sized", [_tensor("x", TensorProto.FLOAT, ["batch", "sequence", 16])],
            [_tensor("y", TensorProto.FLOAT, ["batch", 16])], [numpy_helper.from_array(weight, "W")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip


def _run_sized(tmp_path, compiled, size, x, entry="sized_run") -> list[np.ndarray]:
    """Link a driver of `entry` (taking `size` first) with sized.o and run it on `x`;
    the outputs as the model compiled for x's shape declares them."""
    one = strato.compile(compiled.recipe.model, input_shapes={"x": x.shape}, name="sized")
    stem = "run_" + "x".join(str(n) for n in size)
    (tmp_path / f"{stem}.c").write_text(c_driver(one, entry, size))
    build = subprocess.run(
        [GCC, "-std=c11", "-Wall", "-Werror", "-o", stem, f"{stem}.c", "sized.o", *LINK_LIBRARIES],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    return run_program(tmp_path / stem, one, [x])


def test_the_compiled_sizes_of_a_dynamic_model_link_into_one_object(tmp_path):
    """A model with two named dimensions, called at three sizes: one object holds them,
    its entry takes the sizes before the buffers and runs the size compiled for them (or
    returns NO_SUCH_SIZE); the sizes share one copy of the weights."""
    rng = np.random.default_rng(5)
    model = _sequence_model()
    compiled = strato.compile(model, name="sized", run_time_dims=False)  # per size
    inputs = {size: rng.standard_normal((*size, 16)).astype(np.float32) for size in ((1, 4), (2, 8), (3, 5))}
    for x in inputs.values():
        compiled(x)
    compiled.save_object(tmp_path / "sized.o")
    compiled.save_c_header(tmp_path / "sized.h")
    header = compiled.c_header()
    assert "int32_t sized_run(int64_t batch, int64_t sequence, const float *x, float *y);" in header
    assert "#define SIZED_NO_SUCH_SIZE 2" in header
    weights = [line for line in compiled.llvm_ir.splitlines() if line.startswith("@sized_run_w")]
    assert len(weights) == 1  # [16, 16] once, for every size
    assert [tuple(size["x"][:2]) for size in compiled.sizes] == list(inputs)
    for size, x in inputs.items():
        assert_close(_run_sized(tmp_path, compiled, size, x), run_onnxruntime(model, [x]), f"size {size}")
    x = rng.standard_normal((4, 4, 16)).astype(np.float32)
    with pytest.raises(AssertionError, match=r"^\(12, "):  # exit 10 + SIZED_NO_SUCH_SIZE
        _run_sized(tmp_path, compiled, (4, 4), x)


def test_a_model_compiled_once_links_and_runs_at_any_size(tmp_path):
    """A model of run-time sizes: one object, whose entry takes the batch and sequence
    after the buffers, runs at sizes the driver chooses, as onnxruntime does, and
    refuses a negative size."""
    from types import SimpleNamespace

    from strato.testing.dynamic_models import encoder_block

    proto = encoder_block()
    compiled = strato.compile(proto, name="dyn", cache=False, run_time_dims=True)
    assert compiled.signature.sizes == ("batch", "sequence")
    compiled.save_object(tmp_path / "dyn.o")
    compiled.save_c_header(tmp_path / "dyn.h")
    rng = np.random.default_rng(8)
    for batch, sequence in ((1, 3), (2, 17)):
        sizes = {"batch": batch, "sequence": sequence}
        at = SimpleNamespace(
            entry_symbol="dyn_run",
            **{
                side: [spec.at(sizes) for spec in specs]
                for side, specs in (("inputs", compiled.inputs), ("outputs", compiled.outputs))
            },
        )
        stem = f"dyn_{batch}x{sequence}"
        (tmp_path / f"{stem}.c").write_text(c_driver(at, after=(batch, sequence)))
        build = subprocess.run(
            [GCC, "-std=c11", "-Wall", "-Werror", "-o", stem, f"{stem}.c", "dyn.o", *LINK_LIBRARIES],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert build.returncode == 0, build.stderr
        x, r = (rng.standard_normal((batch, sequence, 32)).astype(np.float32) for _ in range(2))
        outputs = run_program(tmp_path / stem, at, [x, r])
        assert_close(outputs, run_onnxruntime(proto, [x, r]), stem)
    # a negative size: DYN_NO_SUCH_SIZE before any buffer is touched
    assert "#define DYN_NO_SUCH_SIZE 2" in compiled.c_header()
    (tmp_path / "dyn_negative.c").write_text(c_driver(at, after=(-1, 17)))
    build = subprocess.run(
        [GCC, "-std=c11", "-Wall", "-Werror", "-o", "dyn_negative", "dyn_negative.c", "dyn.o", *LINK_LIBRARIES],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    with pytest.raises(AssertionError, match=r"^\(12, "):  # exit 10 + DYN_NO_SUCH_SIZE
        run_program(tmp_path / "dyn_negative", at, [x, r])


def test_a_separable_dimension_of_the_object_takes_any_size(tmp_path, monkeypatch):
    """Calls split along the batch (the model is separable along it) compile batch 1 of
    each sequence length; the object's entry runs that size once per sample for any
    batch, including batches never called."""
    import strato.separable

    monkeypatch.setattr(strato.separable, "MIN_SAMPLE_ELEMENTS", 0)  # split every call
    rng = np.random.default_rng(7)
    model = _sequence_model()
    compiled = strato.compile(model, name="sized", run_time_dims=False)  # per size
    for size in ((3, 4), (2, 8)):
        compiled(rng.standard_normal((*size, 16)).astype(np.float32))
    assert [size["x"][:2] for size in compiled.sizes] == [(1, 4), (1, 8)]
    compiled.save_object(tmp_path / "sized.o")
    compiled.save_c_header(tmp_path / "sized.h")
    assert "(and any batch with the other sizes: sized_run_1x4 once per sample" in compiled.c_header()
    for size in ((3, 4), (5, 8), (1, 8)):
        x = rng.standard_normal((*size, 16)).astype(np.float32)
        assert_close(_run_sized(tmp_path, compiled, size, x), run_onnxruntime(model, [x]), f"size {size}")
