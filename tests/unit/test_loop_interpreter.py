"""The loop interpreter on hand-written loop programs, and its diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from xdsl.parser import Parser

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.interpreters.loop import loop_entry_function, run_loops

# softmax-like kernel over rows: a local max buffer, exp, a sum, a division; a caller
# that passes a constant global and an intermediate buffer and copies an input out.
PROGRAM = """
func.func @row_softmax(%a: memref<2x3xf32>, %out: memref<2x3xf32> {loop.output}) attributes {loop.kernel} {
  %mx = memref.alloc() : memref<2xf32, #loop.scope<local>>
  %sum = memref.alloc() : memref<2xf32, #loop.scope<local>>
  loop.for %i = 0 to 2 parallel attributes {stage = "max"} {
    %init = arith.constant -1.0e30 : f32
    memref.store %init, %mx[%i] : memref<2xf32, #loop.scope<local>>
    loop.for %k = 0 to 3 {
      %v = memref.load %a[%i, %k] : memref<2x3xf32>
      %acc = memref.load %mx[%i] : memref<2xf32, #loop.scope<local>>
      %m = arith.maximumf %acc, %v : f32
      memref.store %m, %mx[%i] : memref<2xf32, #loop.scope<local>>
    }
  }
  loop.for %i = 0 to 2 attributes {stage = "sum"} {
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %sum[%i] : memref<2xf32, #loop.scope<local>>
    loop.for %k = 0 to 3 unrolled {
      %v = memref.load %a[%i, %k] : memref<2x3xf32>
      %m = memref.load %mx[%i] : memref<2xf32, #loop.scope<local>>
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      %acc = memref.load %sum[%i] : memref<2xf32, #loop.scope<local>>
      %s = arith.addf %acc, %e : f32
      memref.store %s, %sum[%i] : memref<2xf32, #loop.scope<local>>
    }
  }
  loop.for %i = 0 to 2 attributes {stage = "div"} {
    loop.for %j = 0 to 3 vectorized {
      %v = memref.load %a[%i, %j] : memref<2x3xf32>
      %m = memref.load %mx[%i] : memref<2xf32, #loop.scope<local>>
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      %s = memref.load %sum[%i] : memref<2xf32, #loop.scope<local>>
      %q = arith.divf %e, %s : f32
      memref.store %q, %out[%i, %j] : memref<2x3xf32>
    }
  }
  memref.dealloc %mx : memref<2xf32, #loop.scope<local>>
  memref.dealloc %sum : memref<2xf32, #loop.scope<local>>
  func.return
}
func.func @scale_clamp(%a: memref<2x3xf32>, %w: memref<3xf32>, %out: memref<2x3xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 2 {
    loop.for %j = 0 to 3 {
      %v = memref.load %a[%i, %j] : memref<2x3xf32>
      %c = memref.load %w[%j] : memref<3xf32>
      %p = arith.mulf %v, %c : f32
      %n = arith.negf %p : f32
      %lim = arith.constant 0.5 : f32
      %big = arith.cmpf ogt, %n, %lim : f32
      %r = arith.select %big, %lim, %n : f32
      memref.store %r, %out[%i, %j] : memref<2x3xf32>
    }
  }
  func.return
}
"memref.global"() <{sym_name = "w", type = memref<3xf32>, initial_value = dense<[1.0, -2.0, 0.5]> : tensor<3xf32>, sym_visibility = "private", constant}> : () -> ()
func.func @main(%x: memref<2x3xf32>, %y: memref<2x3xf32> {loop.output}, %z: memref<2x3xf32> {loop.output}) {
  %w = memref.get_global @w : memref<3xf32>
  %h = memref.alloc() : memref<2x3xf32>
  func.call @scale_clamp(%x, %w, %h) : (memref<2x3xf32>, memref<3xf32>, memref<2x3xf32>) -> ()
  func.call @row_softmax(%h, %y) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  memref.dealloc %h : memref<2x3xf32>
  "memref.copy"(%x, %z) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  func.return
}
"""


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def reference(x: np.ndarray) -> np.ndarray:
    w = np.array([1.0, -2.0, 0.5], np.float32)
    h = np.minimum(-(x * w), np.float32(0.5))
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_hand_written_program_matches_numpy():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    y, z = run_loops(parse(PROGRAM), [x])
    np.testing.assert_allclose(y, reference(x), rtol=1e-6)
    np.testing.assert_array_equal(z, x)
    assert y.dtype == np.float32


def test_a_kernel_runs_on_its_own():
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    (y,) = run_loops(parse(PROGRAM), [x], function="row_softmax")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)


def test_entry_is_the_function_that_is_not_a_kernel():
    module = parse(PROGRAM)
    assert loop_entry_function(module).sym_name.data == "main"


def test_steps_and_unwritten_outputs():
    text = """
    func.func @evens(%a: memref<6xf32>, %out: memref<6xf32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 6 step 2 {
        %v = memref.load %a[%i] : memref<6xf32>
        memref.store %v, %out[%i] : memref<6xf32>
      }
      func.return
    }
    """
    a = np.arange(6, dtype=np.float32)
    (out,) = run_loops(parse(text), [a])
    np.testing.assert_array_equal(out[::2], a[::2])
    # elements nothing wrote stay NaN, so a lowering that forgets them is caught
    assert np.isnan(out[1::2]).all()


def test_index_math_and_integer_buffers():
    text = """
    func.func @k(%a: memref<2x3xi32>, %out: memref<3x2xi32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 3 {
        loop.for %j = 0 to 2 {
          %v = memref.load %a[%j, %i] : memref<2x3xi32>
          %two = arith.constant 2 : i32
          %q = arith.divsi %v, %two : i32
          %m = arith.maxsi %q, %two : i32
          memref.store %m, %out[%i, %j] : memref<3x2xi32>
        }
      }
      func.return
    }
    """
    a = np.array([[-7, 3, 9], [5, -1, 12]], np.int32)
    (out,) = run_loops(parse(text), [a])
    np.testing.assert_array_equal(out, np.maximum(np.trunc(a.T / 2).astype(np.int32), 2))


def test_out_of_bounds_store_is_a_diagnostic():
    text = """
    func.func @k(%out: memref<4xf32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 5 {
        %z = arith.constant 0.0 : f32
        memref.store %z, %out[%i] : memref<4xf32>
      }
      func.return
    }
    """
    with pytest.raises(StratoError, match=r"'memref.store' at index \[4\] is out of bounds"):
        run_loops(parse(text), [])


def test_unknown_op_is_named():
    text = """
    func.func @k(%a: memref<4xi32>, %out: memref<4xi32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 4 {
        %v = memref.load %a[%i] : memref<4xi32>
        %c = math.ctpop %v : i32
        memref.store %c, %out[%i] : memref<4xi32>
      }
      func.return
    }
    """
    with pytest.raises(StratoError, match="cannot .*'math.ctpop'"):
        run_loops(parse(text), [np.zeros(4, np.int32)])


def test_wrong_inputs_are_diagnostics():
    module = parse(PROGRAM)
    with pytest.raises(StratoError, match="takes 1 inputs, got 2"):
        run_loops(module, [np.zeros((2, 3)), np.zeros((2, 3))])
    with pytest.raises(StratoError, match="has shape"):
        run_loops(module, [np.zeros((3, 2), np.float32)])


RUN_TIME = """
func.func @halves(%x: memref<?xf32>, %y: memref<?x2xf32> {loop.output}, %n: index, %s: index) attributes {loop.kernel} {
  %v = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 2], strides: [%s, 1] : memref<?xf32> to memref<?x2xf32, strided<[?, 1]>>
  loop.for %i = 0 to %n axis "i" {
    loop.for %j = 0 to 2 axis "j" {
      %a = memref.load %v[%i, %j] : memref<?x2xf32, strided<[?, 1]>>
      memref.store %a, %y[%i, %j] : memref<?x2xf32>
    }
  }
  func.return
}
"""


def test_run_time_sizes_views_and_output_shapes():
    module = parse(RUN_TIME)
    x = np.arange(6, dtype=np.float32)
    (y,) = run_loops(module, [x, 3, 2], output_shapes=[(3, 2)])
    np.testing.assert_array_equal(y, x.reshape(3, 2))
    (y,) = run_loops(module, [x, 0, 2], output_shapes=[(0, 2)])
    assert y.shape == (0, 2)
    with pytest.raises(StratoError, match=r"output 0 of @halves is memref<\?x2xf32>: give its shape"):
        run_loops(module, [x, 3, 2])
    with pytest.raises(StratoError, match=r"output 0 of @halves has shape \[3, 3\], expected \['\?', 2\]"):
        run_loops(module, [x, 3, 2], output_shapes=[(3, 3)])
    with pytest.raises(StratoError, match="row-major strides only"):
        run_loops(module, [x, 3, 1], output_shapes=[(3, 2)])
    with pytest.raises(StratoError, match="out of bounds"):
        run_loops(module, [x, 4, 2], output_shapes=[(4, 2)])
