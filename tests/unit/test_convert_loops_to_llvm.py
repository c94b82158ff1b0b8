"""convert-loops-to-llvm: what it leaves, what it rejects, and that it keeps the meaning
of random loop programs (checked against the loop interpreter through the JIT)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects.loop import DynamicBoundError, ForOp, LoopKind
from strato.interpreters.loop import run_loops
from strato.targets.llvm.convert_loops_to_llvm import (
    ConvertLoopsToLLVMPass,
    convert_loops_to_llvm,
)
from strato.targets.llvm.jit import JitModule
from strato.targets.llvm.kernels import compile_loops
from strato.targets.llvm.loop_to_llvm import LOOP_KIND_ATTR
from strato.testing.llvm_programs import LoopProgram, loop_programs
from strato.transforms import resolve_pass


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def lower(text: str) -> ModuleOp:
    module = parse(text)
    ConvertLoopsToLLVMPass().apply(make_context(), module)
    module.verify()
    return module


RELU = """
func.func @relu(%a: memref<8xf32>, %o: memref<8xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 8 KIND axis "i" {
    %v = memref.load %a[%i] : memref<8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %o[%i] : memref<8xf32>
  }
  func.return
}
"""


def test_registered_under_its_cli_name():
    from strato.targets.registry import registered_targets

    registered_targets()  # the llvm target registers its passes when it is registered
    assert resolve_pass("convert-loops-to-llvm") is ConvertLoopsToLLVMPass
    assert ConvertLoopsToLLVMPass.name == "convert-loops-to-llvm"


def test_leaves_only_llvm_ops():
    module = lower(RELU.replace("KIND", "serial"))
    names = {op.name for op in module.walk() if op is not module}
    assert names and all(name.startswith("llvm.") for name in names)


def test_pointer_arguments_keep_their_memref_type_and_output_marker():
    module = lower(RELU.replace("KIND", "serial"))
    (fn,) = [op for op in module.ops if isinstance(op, llvm.FuncOp)]
    assert fn.arg_attrs is not None
    first, second = (attrs.data for attrs in fn.arg_attrs.data)
    assert str(first["strato.memref_type"]) == "memref<8xf32>"
    assert "loop.output" in second and "loop.output" not in first
    assert "loop.kernel" in fn.attributes


_STAYS_A_LOOP = {LoopKind.SERIAL, LoopKind.VIRTUAL_THREAD}


@pytest.mark.parametrize("kind", list(LoopKind))
def test_each_loop_kind_is_generated_as_its_kind_and_computes_the_serial_result(
    kind: LoopKind,
):
    module = parse(RELU.replace("KIND", kind.value))
    lowered = module.clone()
    convert_loops_to_llvm(lowered, threads=2)
    back_edges = [op for op in lowered.walk() if LOOP_KIND_ATTR in op.attributes]
    loads = [op for op in lowered.walk() if isinstance(op, llvm.LoadOp)]
    if kind == LoopKind.PARALLEL:
        # a task of the thread pool: the body function loops over its chunk, the task
        # loads the two buffer pointers from the context
        calls = [op for op in lowered.walk() if isinstance(op, llvm.CallOp)]
        callees = sorted(op.callee.root_reference.data for op in calls)
        assert callees == ["relu_parallel_0", "strato_parallel_for"]
        assert sorted(str(op.dereferenced_value.type) for op in loads) == ["!llvm.ptr", "!llvm.ptr", "f32"]
    elif kind in _STAYS_A_LOOP:
        assert len(back_edges) == (0 if kind == LoopKind.SERIAL else 1)
        assert [str(op.dereferenced_value.type) for op in loads] == ["f32"]
    elif kind == LoopKind.VECTORIZED:
        assert not back_edges and not any(isinstance(op, llvm.BrOp) for op in lowered.walk())
        assert [str(op.dereferenced_value.type) for op in loads] == ["vector<8xf32>"]
    else:
        # left for LLVM to unroll fully: one copy of the body, its back edge marked
        assert kind == LoopKind.UNROLLED
        assert [op.attributes[LOOP_KIND_ATTR].data for op in back_edges] == ["unrolled"]
        assert [str(op.dereferenced_value.type) for op in loads] == ["f32"]
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    out = np.empty(8, np.float32)
    JitModule(lowered).function("relu")(x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_local_buffers_go_on_the_stack_and_large_ones_on_the_heap():
    module = lower(
        """
        func.func @f(%o: memref<1xf32> {loop.output}) {
          loop.for %i = 0 to 4 {
            %s = memref.alloc() : memref<16xf32, #loop.scope<local>>
            %big = memref.alloc() : memref<65536xf32, #loop.scope<local>>
            memref.dealloc %big : memref<65536xf32, #loop.scope<local>>
            memref.dealloc %s : memref<16xf32, #loop.scope<local>>
          }
          func.return
        }
        """
    )
    (fn,) = [op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks]
    entry = fn.body.blocks.first
    assert entry is not None
    assert any(isinstance(op, llvm.AllocaOp) for op in entry.ops), (
        "alloca hoisted to the entry"
    )
    callees = [
        op.callee.string_value() for op in module.walk() if isinstance(op, llvm.CallOp)
    ]
    assert callees == ["strato_workspace_take", "strato_workspace_give"]


def test_aligned_allocations_come_from_the_workspace():
    """The workspace's buffers are 64-byte aligned: an allocation asking for that takes
    one; one asking for more is refused, never given less."""
    module = lower(
        """
        func.func @f() {
          %b = memref.alloc() {alignment = 64 : i64} : memref<10xf32>
          memref.dealloc %b : memref<10xf32>
          func.return
        }
        """
    )
    callees = [
        op.callee.string_value() for op in module.walk() if isinstance(op, llvm.CallOp)
    ]
    assert callees == ["strato_workspace_take", "strato_workspace_give"]
    with pytest.raises(StratoError, match="an alignment of 128 bytes .at most 64."):
        lower(
            """
            func.func @f() {
              %b = memref.alloc() {alignment = 128 : i64} : memref<10xf32>
              memref.dealloc %b : memref<10xf32>
              func.return
            }
            """
        )


# -- diagnostics -------------------------------------------------------------------------


def lowering_error(text: str) -> StratoError:
    module = parse(text)
    with pytest.raises(StratoError) as info:
        convert_loops_to_llvm(module)
    return info.value


def test_a_vta_buffer_is_rejected_naming_the_op_and_scope():
    error = lowering_error(
        """
        func.func @f() {
          %b = memref.alloc() : memref<16x16xi8, #loop.scope<vta.inp>>
          func.return
        }
        """
    )
    assert error.message.startswith("'memref.alloc' cannot be lowered to llvm")
    assert "vta.inp" in error.message and "vta target" in error.message
    assert error.op is not None and error.op.name == "memref.alloc"


def test_a_vta_function_argument_is_rejected():
    error = lowering_error(
        """
        func.func @f(%a: memref<16xi32, #loop.scope<vta.acc>>) {
          func.return
        }
        """
    )
    assert "'func.func'" in error.message and "vta.acc" in error.message


def test_an_unsupported_op_is_rejected_by_name():
    error = lowering_error(
        """
        func.func @f(%a: i32, %b: i32) -> i32 {
          %low, %high = arith.mulsi_extended %a, %b : i32
          func.return %low : i32
        }
        """
    )
    assert error.message == "'arith.mulsi_extended' is not supported by convert-loops-to-llvm"
    assert error.op is not None and error.op.name == "arith.mulsi_extended"


def test_a_run_time_size_after_the_first_is_rejected_naming_the_remedy():
    error = lowering_error(
        """
        func.func @f(%a: memref<4x?xf32>) {
          func.return
        }
        """
    )
    assert "dynamic size after its first dimension" in error.message
    assert "memref.reinterpret_cast" in error.message


# -- run-time sizes ----------------------------------------------------------------------

RUN_TIME = """
func.func @affine(%x: memref<?xf32>, %y: memref<?xf32> {loop.output}, %n: index, %m: index) attributes {loop.kernel} {
  %xv = memref.reinterpret_cast %x to offset: [0], sizes: [%n, %m], strides: [%m, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
  %yv = memref.reinterpret_cast %y to offset: [0], sizes: [%n, %m], strides: [%m, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
  loop.for %i = LB to %n step STEP KIND axis "i" {
    loop.for %j = 0 to %m INNER axis "j" {
      %v = memref.load %xv[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %v, %two : f32
      memref.store %d, %yv[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
    }
  }
  func.return
}
"""


@pytest.mark.parametrize("kind", ["serial", "parallel", "vectorized", "unrolled"])
@pytest.mark.parametrize("lb, step", [(0, 1), (2, 3)])
def test_loops_over_run_time_sizes_compile_once_and_run_at_every_size(kind, lb, step):
    """Rows lb, lb + step, .. < n of an n x m view are doubled, the others untouched,
    by the JIT (parallel loops through the pool's run-time trip count, on two threads)
    and by the loop interpreter alike; the sizes include none at all and fewer than lb."""
    text = RUN_TIME.replace("LB", str(lb)).replace("STEP", str(step))
    text = text.replace("KIND", kind).replace("INNER", "vectorized" if kind == "serial" else "")
    module = parse(text)
    module.verify()
    function = compile_loops(module, threads=2).function("affine")
    rng = np.random.default_rng(lb)
    for n, m in [(0, 3), (1, 1), (2, 5), (lb + 1, 4), (37, 19), (300, 2)]:
        x = rng.standard_normal(n * m).astype(np.float32)
        y = np.full(n * m, -7.0, np.float32)
        function(x, y, n, m)
        expected = np.full((n, m), -7.0, np.float32)
        expected[lb::step] = 2 * x.reshape(n, m)[lb::step]
        np.testing.assert_array_equal(y.reshape(n, m), expected)
        if n * m <= 64:
            (interpreted,) = run_loops(module, [x, n, m], output_shapes=[(n * m,)])
            np.testing.assert_array_equal(interpreted.reshape(n, m)[lb::step], expected[lb::step])


def test_a_buffer_of_run_time_size_comes_from_the_workspace_and_goes_back():
    module = parse(
        """
        func.func @twice(%a: memref<?x4xf32>, %o: memref<?x4xf32> {loop.output}, %n: index) attributes {loop.kernel} {
          %t = memref.alloc(%n) : memref<?x4xf32, #loop.scope<local>>
          loop.for %i = 0 to %n parallel axis "i" {
            loop.for %j = 0 to 4 vectorized axis "j" {
              %v = memref.load %a[%i, %j] : memref<?x4xf32>
              %d = arith.addf %v, %v : f32
              memref.store %d, %t[%i, %j] : memref<?x4xf32, #loop.scope<local>>
            }
          }
          loop.for %i = 0 to %n axis "k" {
            loop.for %j = 0 to 4 axis "l" {
              %v = memref.load %t[%i, %j] : memref<?x4xf32, #loop.scope<local>>
              memref.store %v, %o[%i, %j] : memref<?x4xf32>
            }
          }
          memref.dealloc %t : memref<?x4xf32, #loop.scope<local>>
          func.return
        }
        """
    )
    lowered = module.clone()
    convert_loops_to_llvm(lowered, 2)
    calls = [op.callee.string_value() for op in lowered.walk() if isinstance(op, llvm.CallOp)]
    assert calls.count("strato_workspace_take") == 1 and calls.count("strato_workspace_give") == 1
    function = compile_loops(module, threads=2).function("twice")
    for n in (1, 5, 999):
        a = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
        out = np.zeros((n, 4), np.float32)
        function(a, out, n)
        np.testing.assert_array_equal(out, 2 * a)
        (interpreted,) = run_loops(module, [a, n], output_shapes=[(n, 4)])
        np.testing.assert_array_equal(interpreted, 2 * a)
    with pytest.raises(ValueError, match="whole rows of 16 bytes"):
        function(np.zeros(6, np.float32), np.zeros((1, 4), np.float32), 1)


def test_a_view_whose_type_gives_its_layout_is_the_buffer_itself():
    """A cast to rows of run-time count keeps its static strides: no linearization, the
    same pointer; a copy of run-time size is refused by name."""
    module = parse(
        """
        func.func @k(%x: memref<?xf32>, %y: memref<?x2xf32> {loop.output}, %n: index) attributes {loop.kernel} {
          %v = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 2], strides: [2, 1] : memref<?xf32> to memref<?x2xf32>
          loop.for %i = 0 to %n axis "i" {
            loop.for %j = 0 to 2 axis "j" {
              %a = memref.load %v[%i, %j] : memref<?x2xf32>
              memref.store %a, %y[%i, %j] : memref<?x2xf32>
            }
          }
          func.return
        }
        """
    )
    y = np.zeros((3, 2), np.float32)
    compile_loops(module, threads=1).function("k")(np.arange(6, dtype=np.float32), y, 3)
    np.testing.assert_array_equal(y.ravel(), np.arange(6))
    error = lowering_error(
        """
        func.func @f(%a: memref<?xf32>, %b: memref<?xf32>) {
          "memref.copy"(%a, %b) : (memref<?xf32>, memref<?xf32>) -> ()
          func.return
        }
        """
    )
    assert "known at run time only" in error.message


def test_what_needs_the_iterations_refuses_a_run_time_bound_by_name():
    module = parse(RUN_TIME.replace("LB", "0").replace("STEP", "1").replace("KIND", "").replace("INNER", ""))
    (outer,) = [op for op in module.walk() if isinstance(op, ForOp) and op.is_dynamic and op.axis.data == "i"]
    with pytest.raises(DynamicBoundError, match="loop 'i' has a run-time upper bound"):
        _ = outer.trip_count
    assert outer.bound is outer.dynamic_ub


def test_nothing_is_rewritten_when_the_input_is_rejected():
    text = """
        func.func @f(%o: memref<4xf32> {loop.output}) {
          %b = memref.alloc() : memref<4xf32, #loop.scope<vta.wgt>>
          func.return
        }
        """
    module = parse(text)
    before = str(module)
    with pytest.raises(StratoError):
        convert_loops_to_llvm(module)
    assert str(module) == before


# -- equivalence -------------------------------------------------------------------------


def run_jit(
    program: LoopProgram, module: ModuleOp, inputs: list[np.ndarray]
) -> np.ndarray:
    out = np.full(program.output_shape, np.nan, np.float32)
    compile_loops(module, opt_level=2).function(program.entry)(*inputs, out, *program.sizes)
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=loop_programs())
def test_lowered_programs_compute_what_the_interpreter_computes(program: LoopProgram):
    module = program.module()
    inputs = program.random_inputs(seed=0)
    (expected,) = run_loops(module, inputs, program.entry)
    np.testing.assert_allclose(
        run_jit(program, module, inputs), expected, rtol=1e-5, atol=1e-5
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=loop_programs(run_time_bound=True))
def test_lowered_programs_with_a_run_time_bound_compute_what_the_interpreter_computes(
    program: LoopProgram,
):
    """The kernel's outer loop runs to an index argument (of any kind: parallel ones
    through the pool's run-time trip count): the rows it writes agree."""
    module = program.module()
    inputs = program.random_inputs(seed=0)
    (expected,) = run_loops(module, [*inputs, *program.sizes], program.entry)
    rows = program.rows
    np.testing.assert_allclose(
        run_jit(program, module, inputs)[:rows], expected[:rows], rtol=1e-5, atol=1e-5
    )


def test_memref_alloca_is_hoisted_to_the_entry_block():
    module = lower(
        """
        func.func @f(%o: memref<4xf32> {loop.output}) {
          loop.for %i = 0 to 4 {
            %s = memref.alloca() : memref<1xf32>
            %c0 = arith.constant 0 : index
            %v = arith.constant 2.0 : f32
            memref.store %v, %s[%c0] : memref<1xf32>
            %w = memref.load %s[%c0] : memref<1xf32>
            memref.store %w, %o[%i] : memref<4xf32>
          }
          func.return
        }
        """
    )
    (fn,) = [op for op in module.ops if isinstance(op, llvm.FuncOp)]
    allocas = [op for op in module.walk() if isinstance(op, llvm.AllocaOp)]
    assert len(allocas) == 1 and allocas[0].parent_block() is fn.body.blocks.first
    out = np.zeros(4, np.float32)
    JitModule(module).function("f")(out)
    np.testing.assert_array_equal(out, [2, 2, 2, 2])


def test_the_lowered_module_prints_and_parses_back():
    module = lower(RELU.replace("KIND", "parallel"))
    reparsed = parse(str(module))
    reparsed.verify()
    assert str(reparsed) == str(module)
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    out = np.empty(8, np.float32)
    JitModule(reparsed).function("relu")(x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
