"""The LLVM target: LLVM IR emission, the llvmlite JIT, object files, and a small model
run end to end from the loop level."""

from __future__ import annotations

import ctypes
import io
import re
import time

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.parser import Parser

from strato.context import make_context
from strato.runtime.weight_blob import WeightBlob
from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
from strato.targets.llvm.emit import EmissionError, LLVMIRTarget, emit_llvm_ir
from strato.targets.llvm.host import target_machine
from strato.targets.llvm.jit import (
    JitError,
    JitModule,
    ObjectModule,
    compile_object,
    write_llvm_ir,
)
from strato.targets.llvm.kernels import compile_loops
from strato.targets.llvm.weights import pack_weights


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def lowered(text: str) -> ModuleOp:
    module = parse(text)
    convert_loops_to_llvm(module)
    return module


def dense_text(array: np.ndarray) -> str:
    values = ", ".join(repr(float(v)) for v in array.reshape(-1))
    shape = "x".join(str(d) for d in array.shape)
    return f"dense<[{values}]> : tensor<{shape}xf32>"


def mlp_module(weights: np.ndarray) -> ModuleOp:
    """relu(x · W + b) for x: 1x64, W: 64x32 (a constant global), b: 32, as two kernels
    called from an entry function through a heap buffer."""
    return parse(
        f"""
"memref.global"() <{{sym_name = "w", sym_visibility = "private", type = memref<64x32xf32>,
  initial_value = {dense_text(weights.reshape(-1))}, constant}}> : () -> ()

func.func @dense(%x: memref<1x64xf32>, %y: memref<1x32xf32> {{loop.output}}) attributes {{loop.kernel}} {{
  %w = memref.get_global @w : memref<64x32xf32>
  loop.for %i = 0 to 1 axis "i" {{
    loop.for %j = 0 to 32 vectorized axis "j" {{
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %y[%i, %j] : memref<1x32xf32>
      loop.for %k = 0 to 64 axis "k" {{
        %a = memref.load %x[%i, %k] : memref<1x64xf32>
        %b = memref.load %w[%k, %j] : memref<64x32xf32>
        %p = arith.mulf %a, %b : f32
        %acc = memref.load %y[%i, %j] : memref<1x32xf32>
        %s = arith.addf %acc, %p : f32
        memref.store %s, %y[%i, %j] : memref<1x32xf32>
      }}
    }}
  }}
  func.return
}}

func.func @bias_relu(%y: memref<1x32xf32>, %b: memref<32xf32>, %o: memref<1x32xf32> {{loop.output}})
    attributes {{loop.kernel}} {{
  loop.for %i = 0 to 1 axis "i" {{
    loop.for %j = 0 to 32 parallel axis "j" {{
      %v = memref.load %y[%i, %j] : memref<1x32xf32>
      %c = memref.load %b[%j] : memref<32xf32>
      %s = arith.addf %v, %c : f32
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %zero : f32
      memref.store %r, %o[%i, %j] : memref<1x32xf32>
    }}
  }}
  func.return
}}

func.func @main(%x: memref<1x64xf32>, %b: memref<32xf32>, %o: memref<1x32xf32> {{loop.output}}) {{
  %t = memref.alloc() : memref<1x32xf32>
  func.call @dense(%x, %t) : (memref<1x64xf32>, memref<1x32xf32>) -> ()
  func.call @bias_relu(%t, %b, %o) : (memref<1x32xf32>, memref<32xf32>, memref<1x32xf32>) -> ()
  memref.dealloc %t : memref<1x32xf32>
  func.return
}}
"""
    )


def test_mlp_end_to_end_matches_numpy():
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((64, 32)).astype(np.float32)
    x = rng.standard_normal((1, 64)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    jit = compile_loops(mlp_module(weights))
    out = np.full((1, 32), np.nan, np.float32)
    jit.function("main")(x, bias, out)
    np.testing.assert_allclose(
        out, np.maximum(x @ weights + bias, 0), rtol=1e-5, atol=1e-5
    )
    assert 'define void @"main"' in jit.llvm_ir
    # the kernels stay callable on their own
    y = np.empty((1, 32), np.float32)
    jit.function("dense")(x, y)
    np.testing.assert_allclose(y, x @ weights, rtol=1e-5, atol=1e-5)


def big_global_module(values: np.ndarray) -> ModuleOp:
    """@main copies a constant global of `values` (1-d f32) into its output."""
    type_ = MemRefType(f32, [values.size])
    initial = DenseIntOrFPElementsAttr(
        TensorType(f32, [values.size]), BytesAttr(values.tobytes())
    )
    global_op = memref.GlobalOp.get(
        StringAttr("big"), type_, initial, constant=UnitAttr()
    )
    main = parse(
        f"""
func.func @main(%o: memref<{values.size}xf32> {{loop.output}}) {{
  %g = memref.get_global @big : memref<{values.size}xf32>
  "memref.copy"(%g, %o) : (memref<{values.size}xf32>, memref<{values.size}xf32>) -> ()
  func.return
}}
"""
    )
    fn = next(op for op in main.ops if isinstance(op, func.FuncOp))
    fn.detach()
    return ModuleOp([global_op, fn])


def test_a_million_float_global_is_emitted_quickly_and_exactly():
    values = np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32)
    module = big_global_module(values)
    start = time.perf_counter()
    convert_loops_to_llvm(module)
    text = emit_llvm_ir(module)
    elapsed = time.perf_counter() - start
    assert elapsed < 5, f"lowering and emitting 4 MiB of weights took {elapsed:.1f}s"
    assert 'c"' in text  # one byte string, not a million constants
    out = np.empty_like(values)
    JitModule(text, opt_level=0).function("main")(out)
    np.testing.assert_array_equal(out, values)


def lowered_big_global(values: np.ndarray) -> ModuleOp:
    module = big_global_module(values)
    convert_loops_to_llvm(module)
    return module


def test_large_constants_leave_the_ir_for_an_aligned_blob():
    values = np.arange(300, dtype=np.float32)  # 1200 bytes: above the threshold
    module = lowered_big_global(values)
    blob = pack_weights(module, "net_")
    assert blob.offsets == {"net_big": 0}
    assert blob.data.ctypes.data % 64 == 0 and blob.bytes_of("net_big") == values.tobytes()
    text = emit_llvm_ir(module)
    assert '@"net_big" = external unnamed_addr constant [300 x float], align 64' in text
    assert 'c"' not in text and "@big" not in text
    out = np.empty_like(values)
    JitModule(module, weights=blob).function("main")(out)
    np.testing.assert_array_equal(out, values)


def test_small_constants_stay_inline():
    module = lowered_big_global(np.arange(8, dtype=np.float32))
    blob = pack_weights(module, "net_")
    assert not blob.symbols and blob.data.size == 0
    assert '@"big" = internal unnamed_addr constant [32 x i8] c"' in emit_llvm_ir(module)


def test_weights_bind_per_engine():
    """Two modules declaring the same weight symbol run side by side on their own bytes
    (no process-wide symbol), and a declared weight without bytes is refused."""
    first, second = np.arange(512, dtype=np.float32), -np.arange(512, dtype=np.float32)
    jits = []
    for values in (first, second):
        module = lowered_big_global(values)
        jits.append(JitModule(module, weights=pack_weights(module, "same_")))
    for jit, values in zip(jits, (first, second)):
        out = np.empty_like(values)
        jit.function("main")(out)
        np.testing.assert_array_equal(out, values)
    module = lowered_big_global(first)
    pack_weights(module, "same_")
    with pytest.raises(JitError, match="no bytes for the external constant 'same_big'"):
        JitModule(module)


def test_machine_code_loads_again_with_its_weights():
    values = np.linspace(-1, 1, 1024, dtype=np.float32)
    module = lowered_big_global(values)
    jit = JitModule(module, weights=pack_weights(module, "m_"))
    code = jit.machine_code()
    assert code.weights is jit.weights
    copy = WeightBlob.from_bytes(code.weights.data.tobytes(), code.weights.symbols)
    loaded = ObjectModule(code.object_code, code.imports, copy)
    out = np.empty_like(values)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(loaded.address("main"))(out.ctypes.data)
    np.testing.assert_array_equal(out, values)


@pytest.mark.parametrize("size", [1, 100, 4096 + 3, (1 << 20) + 5, 3 << 20])
def test_weight_buffers_are_aligned_zeroed_and_writable_at_any_size(size):
    from strato.runtime.weight_blob import ALIGNMENT, aligned_bytes

    data = aligned_bytes(size)
    assert data.shape == (size,) and data.dtype == np.uint8
    assert data.ctypes.data % ALIGNMENT == 0
    assert not data.any()
    data[:] = 7
    assert int(data.sum()) == 7 * size
    constants = {"a": b"\x01" * size, "b": b"\x02" * 3}
    blob = WeightBlob.pack(constants)
    assert all(blob.bytes_of(name) == value for name, value in constants.items())
    assert all(blob.address(name) % ALIGNMENT == 0 for name in constants)


def test_an_object_file_holds_its_weights():
    import llvmlite.binding as llvm

    values = np.arange(1024, dtype=np.float32)
    module = lowered_big_global(values)
    blob = pack_weights(module, "m_")
    text = emit_llvm_ir(module)
    without = compile_object(text)
    with_weights = compile_object(text, weights=blob)
    assert len(with_weights) >= len(without) + values.nbytes
    # the object defines the symbol itself: it loads with no blob at all
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(jit=True))
    engine.add_object_file(llvm.ObjectFileRef.from_data(with_weights))
    engine.finalize_object()
    out = np.empty_like(values)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.get_function_address("main"))(out.ctypes.data)
    np.testing.assert_array_equal(out, values)


def test_splat_and_zero_globals():
    module = lowered(
        """
"memref.global"() <{sym_name = "half", sym_visibility = "private", type = memref<3xf32>,
  initial_value = dense<0.5> : tensor<3xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "zero", sym_visibility = "private", type = memref<3xf32>,
  initial_value = dense<0.0> : tensor<3xf32>, constant}> : () -> ()
func.func @main(%o: memref<3xf32> {loop.output}, %z: memref<3xf32> {loop.output}) {
  %h = memref.get_global @half : memref<3xf32>
  %g = memref.get_global @zero : memref<3xf32>
  "memref.copy"(%h, %o) : (memref<3xf32>, memref<3xf32>) -> ()
  "memref.copy"(%g, %z) : (memref<3xf32>, memref<3xf32>) -> ()
  func.return
}
"""
    )
    text = emit_llvm_ir(module)
    assert "zeroinitializer" in text
    out, zeros = np.full(3, np.nan, np.float32), np.full(3, np.nan, np.float32)
    JitModule(text).function("main")(out, zeros)
    np.testing.assert_array_equal(out, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(zeros, [0, 0, 0])


def test_libm_and_intrinsics_resolve_in_the_jit():
    module = lowered(
        """
func.func @f(%a: memref<5xf32>, %o: memref<5xf32> {loop.output}) {
  loop.for %i = 0 to 5 {
    %x = memref.load %a[%i] : memref<5xf32>
    %e = math.exp %x : f32
    %t = math.tanh %e : f32
    %r = math.erf %t : f32
    %s = math.sqrt %e : f32
    %l = math.log %s : f32
    %sum = arith.addf %r, %l : f32
    memref.store %sum, %o[%i] : memref<5xf32>
  }
  func.return
}
"""
    )
    from math import erf

    x = np.linspace(-1, 1, 5, dtype=np.float32)
    out = np.empty(5, np.float32)
    JitModule(module).function("f")(x, out)
    e = np.exp(x.astype(np.float64))
    expected = np.array([erf(v) for v in np.tanh(e)]) + np.log(np.sqrt(e))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_scalar_arguments_and_results():
    module = lowered(
        """
func.func @affine(%x: f64, %n: index) -> f64 {
  %f = arith.index_cast %n : index to i64
  %g = arith.sitofp %f : i64 to f64
  %r = arith.mulf %x, %g : f64
  func.return %r : f64
}
"""
    )
    assert JitModule(module).function("affine")(1.5, 4) == 6.0


def test_jit_checks_buffers_against_the_memref_types():
    jit = compile_loops(mlp_module(np.zeros((64, 32), np.float32)))
    dense = jit.function("dense")
    x = np.zeros((1, 64), np.float32)
    with pytest.raises(ValueError, match="must hold 128 bytes"):
        dense(x, np.zeros(16, np.float32))
    with pytest.raises(ValueError, match="dtype float32"):
        dense(x.astype(np.float64), np.zeros((1, 32), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        dense(np.zeros((64, 2), np.float32)[:, :1].T, np.zeros((1, 32), np.float32))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        dense(x)
    with pytest.raises(KeyError):
        jit.function("missing")


def test_emission_of_a_loop_level_module_asks_for_the_lowering():
    module = parse("func.func @f() {\n  func.return\n}\n")
    with pytest.raises(
        EmissionError, match="lower the module with convert-loops-to-llvm"
    ):
        emit_llvm_ir(module)


def test_invalid_llvm_ir_is_a_jit_error():
    with pytest.raises(JitError, match="invalid LLVM IR"):
        JitModule("define void @f() {\n  ret i32 0\n}\n")


def test_llvm_target_writes_ir_text():
    module = lowered("func.func @f(%a: memref<2xf32>) {\n  func.return\n}\n")
    output = io.StringIO()
    LLVMIRTarget().emit(make_context(), module, output)
    assert LLVMIRTarget.name == "llvm"
    assert 'define void @"f"(ptr %"a")' in output.getvalue()


def test_object_files_and_ir_files(tmp_path):
    module = lowered("func.func @f(%a: memref<2xf32>) {\n  func.return\n}\n")
    assert compile_object(module).startswith(b"\x7fELF")
    assert compile_object(module, portable=True, opt_level=2).startswith(b"\x7fELF")
    path = tmp_path / "f.ll"
    write_llvm_ir(module, path)
    assert "define void" in path.read_text()


INTEGER_AND_CONTROL_FLOW = """
func.func @floordiv(%a: i32, %b: i32) -> i32 {
  %r = arith.floordivsi %a, %b : i32
  func.return %r : i32
}
func.func @ceildiv(%a: i32, %b: i32) -> i32 {
  %r = arith.ceildivsi %a, %b : i32
  func.return %r : i32
}
func.func @ceildivu(%a: i32, %b: i32) -> i32 {
  %r = arith.ceildivui %a, %b : i32
  func.return %r : i32
}
func.func @minmax(%a: i64, %b: i64) -> i64 {
  %lo = arith.minsi %a, %b : i64
  %hi = arith.maxui %a, %b : i64
  %r = arith.subi %hi, %lo : i64
  func.return %r : i64
}
func.func @to_int(%x: f32) -> i32 {
  %r = arith.fptosi %x : f32 to i32
  func.return %r : i32
}
func.func @from_unsigned(%a: i32) -> f64 {
  %r = arith.uitofp %a : i32 to f64
  func.return %r : f64
}
func.func @sum_to(%n: index) -> f32 {
  %zero = arith.constant 0.0 : f32
  %lb = arith.constant 0 : index
  %st = arith.constant 1 : index
  %s = scf.for %i = %lb to %n step %st iter_args(%acc = %zero) -> (f32) {
    %w = arith.index_cast %i : index to i32
    %f = arith.sitofp %w : i32 to f32
    %c2 = arith.constant 2 : index
    %odd = arith.remsi %i, %c2 : index
    %c0 = arith.constant 0 : index
    %even = arith.cmpi eq, %odd, %c0 : index
    %t = scf.if %even -> (f32) {
      scf.yield %f : f32
    } else {
      scf.yield %zero : f32
    }
    %n2 = arith.addf %acc, %t : f32
    scf.yield %n2 : f32
  }
  func.return %s : f32
}
func.func @count(%n: index) -> index {
  %c0 = arith.constant 0 : index
  cf.br ^loop(%c0 : index)
^loop(%i: index):
  %c3 = arith.constant 3 : index
  %next = arith.addi %i, %c3 : index
  %done = arith.cmpi sge, %next, %n : index
  cf.cond_br %done, ^exit, ^loop(%next : index)
^exit:
  func.return %next : index
}
"""


def test_integer_expansions_and_control_flow():
    jit = compile_loops(parse(INTEGER_AND_CONTROL_FLOW))
    for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (0, 5)]:
        assert jit.function("floordiv")(a, b) == a // b
        assert jit.function("ceildiv")(a, b) == -(-a // b)
    for a, b in [(7, 2), (0, 3), (6, 3), (-1, 2)]:
        ua = a % 2**32
        assert jit.function("ceildivu")(a, b) % 2**32 == -(-ua // b)
    assert jit.function("minmax")(-5, 3) == 0  # minsi(-5, 3) = maxui(-5, 3) = -5
    assert jit.function("minmax")(2, 3) == 1
    assert jit.function("to_int")(3.75) == 3
    assert jit.function("to_int")(-3.75) == -3
    assert jit.function("to_int")(1e20) == 2**31 - 1  # saturating, never undefined
    assert jit.function("from_unsigned")(-1) == 2.0**32 - 1
    assert jit.function("sum_to")(5) == 6.0  # 0 + 2 + 4
    assert jit.function("count")(10) == 12


# -- the C ABI of a compiled model: entry name, status, checked allocations, header -----


def expand_then_sum(rows: int):
    """x[1, 8] -> Expand to [rows, 8] (an intermediate of rows * 32 bytes) -> ReduceSum."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [
            helper.make_node("Expand", ["x", "shape"], ["big"]),
            helper.make_node("ReduceSum", ["big", "axes"], ["y"], keepdims=1),
        ],
        "expand_sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [
            numpy_helper.from_array(np.array([rows, 8], np.int64), "shape"),
            numpy_helper.from_array(np.array([0], np.int64), "axes"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def test_entry_is_named_after_the_model_and_kernels_are_internal():
    import llvmlite.binding as llvm

    import strato

    model = strato.compile(expand_then_sum(16), name="net")
    assert model.entry_symbol == "net_run"
    module = llvm.parse_assembly(model.llvm_ir)
    defined = {f.name: f for f in module.functions if not f.is_declaration}
    assert "main" not in defined and "net_run" in defined
    assert defined["net_run"].linkage == llvm.Linkage.external
    assert len(defined) > 1
    for name, function in defined.items():
        if name != "net_run":
            assert function.linkage == llvm.Linkage.internal, name
    np.testing.assert_array_equal(model(np.ones((1, 8), np.float32))[0], np.full((1, 8), 16, np.float32))


_OUT_OF_MEMORY_CHILD = """
import resource, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_llvm_target import expand_then_sum
import strato
from strato.runtime.compiled_model import ModelMemoryError

model = strato.compile(expand_then_sum(2**30))   # a 32 GiB intermediate
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # malloc fails, whatever the machine
x = np.ones((1, 8), np.float32)
for attempt in range(2):
    try:
        model(x)
    except ModelMemoryError as err:
        assert isinstance(err, MemoryError)
        print("clean:", err.message)
small = strato.compile(expand_then_sum(4))
print("after:", small(x)[0].tolist())
"""


def test_a_failed_allocation_is_a_memory_error_not_a_crash():
    import pathlib
    import subprocess
    import sys

    tests = str(pathlib.Path(__file__).parent)
    result = subprocess.run(
        [sys.executable, "-c", _OUT_OF_MEMORY_CHILD.format(tests=tests)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr  # a signal gives a negative code
    lines = result.stdout.splitlines()
    assert lines[:2] == ["clean: out of memory: the model could not allocate its intermediate buffers"] * 2
    assert lines[2] == "after: [[4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]]"


def test_an_absurd_footprint_is_refused_at_compile_time():
    import strato
    from strato.diagnostics import StratoError

    with pytest.raises(StratoError, match="more than a 64-bit address space holds") as raised:
        strato.compile(expand_then_sum(2**50))
    assert "\n" not in str(raised.value)


def test_failure_path_frees_what_the_entry_holds():
    """The entry's failure block frees every buffer it allocated (free(NULL) for those not
    yet allocated or already freed), so a failed call leaks nothing."""
    import strato

    ir = strato.compile("mlp", name="net").llvm_ir
    entry = ir[re.search(r'define i32 @"?net_run"?', ir).start():]
    entry = entry[: entry.index("\n}")]
    failure = entry[entry.index("failure:"):]
    allocations = len(re.findall(r'call (ccc )?ptr @"?(malloc|aligned_alloc|strato_workspace_take)"?\(', entry))
    assert allocations == len(re.findall(r'call (ccc )?void @"?free"?\(', failure)) >= 1
    assert "ret i32 0" in entry and re.search(r'ret i32 %"?status"?', failure)


_C_PROGRAM = """
#include <stdio.h>
#include "net.h"

int main(void) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, -8};
    float y[8] = {0};
    int32_t status = net_run(x, y);
    if (status != NET_OK) return 2;
    for (int i = 0; i < 8; ++i) printf("%g ", y[i]);
    printf("\\n");
    return 0;
}
"""


def test_object_and_header_link_into_a_c_program(tmp_path):
    """gcc is on the development machine; the test needs it and skips only without it."""
    import shutil
    import subprocess

    import strato

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc on this machine")
    model = strato.compile(expand_then_sum(3), name="net")
    model.save_object(tmp_path / "net.o")
    model.save_c_header(tmp_path / "net.h")
    header = (tmp_path / "net.h").read_text()
    assert "int32_t net_run(const float *x, float *y);" in header
    (tmp_path / "main.c").write_text(_C_PROGRAM)
    build = subprocess.run(
        [gcc, "-std=c11", "-Wall", "-Werror", "-o", "prog", "main.c", "net.o", "-lm"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["3", "6", "9", "12", "15", "18", "21", "-24"]
    # Two models link into one program: nothing but the entries is global.
    other = strato.compile(expand_then_sum(2), name="other")
    other.save_object(tmp_path / "other.o")
    both = subprocess.run(
        [gcc, "-std=c11", "-o", "both", "main.c", "net.o", "other.o", "-lm"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert both.returncode == 0, both.stderr


def test_header_types_follow_the_signature():
    from strato.runtime.signature import Signature, TensorSpec
    from strato.targets.llvm.c_header import c_header

    signature = Signature(
        (
            TensorSpec("ids", (35,), np.dtype(np.int64)),
            TensorSpec("mask", (35,), np.dtype(np.bool_)),
            TensorSpec("x-1", (2, 2), np.dtype(np.float16)),
        ),
        (TensorSpec("out", (1,), np.dtype(np.float64)),),
    )
    header = c_header("lm_run", signature)
    assert "int32_t lm_run(const int64_t *ids, const bool *mask, const uint16_t *x_1, double *out);" in header
    assert "#define LM_OUT_OF_MEMORY 1" in header and "LLVM " in header


_C_DENSE_PROGRAM = """
#include <stdio.h>
#include "dense.h"

int main(void) {
    float x[32], y[16];
    for (int i = 0; i < 32; ++i) x[i] = (float)(i % 7) - 3.0f;
    if (dense_run(x, y) != DENSE_OK) return 2;
    for (int i = 0; i < 16; ++i) printf("%.9g ", y[i]);
    printf("\\n");
    return 0;
}
"""


def test_an_object_with_weights_links_into_a_c_program(tmp_path):
    """The weights of a model (a 2 KiB matrix, in the blob when JIT-compiled) are inside
    the object file written for C: linking needs nothing else."""
    import shutil
    import subprocess

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import strato

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc on this machine")
    weight = np.random.default_rng(3).standard_normal((32, 16)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    compiled = strato.compile(model, name="dense", cache=False)
    assert compiled.weights.nbytes >= weight.nbytes and compiled.weight_symbols
    for name in compiled.weight_symbols:
        assert re.search(rf'@"?{re.escape(name)}"? = external', compiled.llvm_ir)
    inline = [int(n) for n in re.findall(r'\[(\d+) x i8\] c"', compiled.llvm_ir)]
    assert all(size < 1024 for size in inline), inline
    compiled.save_object(tmp_path / "dense.o")
    compiled.save_c_header(tmp_path / "dense.h")
    (tmp_path / "main.c").write_text(_C_DENSE_PROGRAM)
    build = subprocess.run(
        [gcc, "-std=c11", "-Wall", "-Werror", "-o", "prog", "main.c", "dense.o", "-lm"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    x = (np.arange(32) % 7 - 3).astype(np.float32)[None, :]
    printed = np.array([float(v) for v in run.stdout.split()], np.float32)
    np.testing.assert_allclose(printed, (x @ weight)[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(compiled(x)[0][0], printed, rtol=1e-6, atol=1e-6)
