"""The te interpreter against numpy, and its diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from xdsl.parser import Parser

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.interpreters import te as te_interpreter
from strato.interpreters.te import run_te

DENSE_RELU = """
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<2x4xf32>
  %w = te.placeholder "w" : tensor<3x4xf32>
  %b = te.placeholder "b" : tensor<3xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.0 : tensor<2x3xf32> {
    %a = te.read %x[%i, %k] : tensor<2x4xf32>
    %c = te.read %w[%j, %k] : tensor<3x4xf32>
    %p = arith.mulf %a, %c : f32
    te.yield %p : f32
  }
  %r = te.compute "bias_relu" (%i, %j) : tensor<2x3xf32> {
    %v = te.read %d[%i, %j] : tensor<2x3xf32>
    %bj = te.read %b[%j] : tensor<3xf32>
    %s = arith.addf %v, %bj : f32
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    te.yield %m : f32
  }
  te.output %r, %d : tensor<2x3xf32>, tensor<2x3xf32>
}
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, -0.5, 0.5, -0.5], [-1.0, 0.0, 1.0, 2.0]]> : tensor<3x4xf32>
  %b = arith.constant dense<[0.25, -3.0, 1.0]> : tensor<3xf32>
  %r, %d = te.call @dense_relu(%x, %w, %b) : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  func.return %r, %d : tensor<2x3xf32>, tensor<2x3xf32>
}
"""

ROW_REDUCTIONS = """
te.primitive @rows {
  %a = te.placeholder "a" : tensor<3x5xf32>
  %s = te.reduce "rowsum" sum (%i) over (%k : 5) init 1.5 : tensor<3xf32> {
    %v = te.read %a[%i, %k] : tensor<3x5xf32>
    te.yield %v : f32
  }
  %m = te.reduce "rowmax" max (%i) over (%k : 5) init -100.0 : tensor<3xf32> {
    %v = te.read %a[%i, %k] : tensor<3x5xf32>
    te.yield %v : f32
  }
  %n = te.reduce "allmin" min () over (%k0 : 3, %k1 : 5) init 100.0 : tensor<f32> {
    %v = te.read %a[%k0, %k1] : tensor<3x5xf32>
    te.yield %v : f32
  }
  te.output %s, %m, %n : tensor<3xf32>, tensor<3xf32>, tensor<f32>
}
func.func @main(%a: tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<f32>) {
  %s, %m, %n = te.call @rows(%a) : (tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<f32>)
  func.return %s, %m, %n : tensor<3xf32>, tensor<3xf32>, tensor<f32>
}
"""


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def test_dense_relu_matches_numpy():
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    w = np.array([[1, 2, 3, 4], [0.5, -0.5, 0.5, -0.5], [-1, 0, 1, 2]], np.float32)
    b = np.array([0.25, -3.0, 1.0], np.float32)
    relu, dense = run_te(parse(DENSE_RELU), [x])
    np.testing.assert_allclose(dense, x @ w.T, rtol=1e-6)
    np.testing.assert_allclose(relu, np.maximum(x @ w.T + b, 0), rtol=1e-6)
    assert relu.dtype == np.float32 and relu.shape == (2, 3)


def test_row_sum_max_and_full_min_with_init():
    a = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    total, largest, smallest = run_te(parse(ROW_REDUCTIONS), [a])
    np.testing.assert_allclose(total, 1.5 + a.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(largest, a.max(axis=1))
    assert smallest.shape == () and smallest == a.min()


def test_init_takes_part_in_the_reduction():
    a = np.full((3, 5), -500.0, np.float32)
    _, largest, smallest = run_te(parse(ROW_REDUCTIONS), [a])
    np.testing.assert_array_equal(largest, [-100.0] * 3)
    assert smallest == -500.0


def test_broadcast_reads_and_index_arithmetic():
    text = """
    te.primitive @p {
      %a = te.placeholder "a" : tensor<2x3xf32>
      %b = te.placeholder "b" : tensor<1x3xf32>
      %r = te.compute "flip_add" (%i, %j) : tensor<2x3xf32> {
        %zero = arith.constant 0 : index
        %two = arith.constant 2 : index
        %rj = arith.subi %two, %j : index
        %x = te.read %a[%i, %rj] : tensor<2x3xf32>
        %y = te.read %b[%zero, %j] : tensor<1x3xf32>
        %s = arith.addf %x, %y : f32
        te.yield %s : f32
      }
      te.output %r : tensor<2x3xf32>
    }
    func.func @main(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
      %r = te.call @p(%a, %b) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
      func.return %r : tensor<2x3xf32>
    }
    """
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[10, 20, 30]], np.float32)
    (r,) = run_te(parse(text), [a, b])
    np.testing.assert_array_equal(r, a[:, ::-1] + b)


def test_select_exp_divide_and_integer_sum():
    text = """
    te.primitive @p {
      %a = te.placeholder "a" : tensor<4xf32>
      %q = te.placeholder "q" : tensor<2x3xi32>
      %r = te.compute "mix" (%i) : tensor<4xf32> {
        %x = te.read %a[%i] : tensor<4xf32>
        %z = arith.constant 0.0 : f32
        %lt = arith.cmpf olt, %x, %z : f32
        %e = math.exp %x : f32
        %two = arith.constant 2.0 : f32
        %h = arith.divf %x, %two : f32
        %s = arith.select %lt, %e, %h : f32
        te.yield %s : f32
      }
      %n = te.reduce "isum" sum (%i) over (%k : 3) init 7 : tensor<2xi32> {
        %v = te.read %q[%i, %k] : tensor<2x3xi32>
        te.yield %v : i32
      }
      te.output %r, %n : tensor<4xf32>, tensor<2xi32>
    }
    func.func @main(%a: tensor<4xf32>, %q: tensor<2x3xi32>) -> (tensor<4xf32>, tensor<2xi32>) {
      %r, %n = te.call @p(%a, %q) : (tensor<4xf32>, tensor<2x3xi32>) -> (tensor<4xf32>, tensor<2xi32>)
      func.return %r, %n : tensor<4xf32>, tensor<2xi32>
    }
    """
    a = np.array([-1.0, 0.0, 2.0, -3.0], np.float32)
    q = np.arange(6, dtype=np.int32).reshape(2, 3)
    r, n = run_te(parse(text), [a, q])
    np.testing.assert_allclose(r, np.where(a < 0, np.exp(a), a / 2), rtol=1e-6)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(n, 7 + q.sum(axis=1))
    assert n.dtype == np.int32


def test_large_stages_are_evaluated_in_slices(monkeypatch):
    monkeypatch.setattr(te_interpreter, "GRID_ELEMENT_LIMIT", 5)
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    expected = run_te(parse(DENSE_RELU), [x])
    monkeypatch.setattr(te_interpreter, "GRID_ELEMENT_LIMIT", 1 << 22)
    actual = run_te(parse(DENSE_RELU), [x])
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


def test_unknown_op_in_a_stage_is_named():
    text = """
    te.primitive @p {
      %a = te.placeholder "a" : tensor<4xi32>
      %r = te.compute "count" (%i) : tensor<4xi32> {
        %v = te.read %a[%i] : tensor<4xi32>
        %c = math.ctpop %v : i32
        te.yield %c : i32
      }
      te.output %r : tensor<4xi32>
    }
    func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
      %r = te.call @p(%a) : (tensor<4xi32>) -> tensor<4xi32>
      func.return %r : tensor<4xi32>
    }
    """
    with pytest.raises(StratoError, match="cannot evaluate 'math.ctpop'"):
        run_te(parse(text), [np.zeros(4, np.int32)])


def test_unknown_op_in_a_function_is_named():
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %r = graph.relu %a : tensor<4xf32>
      func.return %r : tensor<4xf32>
    }
    """
    with pytest.raises(StratoError, match="cannot run 'graph.relu'"):
        run_te(parse(text), [np.zeros(4, np.float32)])


def test_out_of_bounds_read_is_a_diagnostic():
    text = """
    te.primitive @p {
      %a = te.placeholder "a" : tensor<4xf32>
      %r = te.compute "shift" (%i) : tensor<4xf32> {
        %one = arith.constant 1 : index
        %j = arith.addi %i, %one : index
        %v = te.read %a[%j] : tensor<4xf32>
        te.yield %v : f32
      }
      te.output %r : tensor<4xf32>
    }
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %r = te.call @p(%a) : (tensor<4xf32>) -> tensor<4xf32>
      func.return %r : tensor<4xf32>
    }
    """
    with pytest.raises(StratoError, match='stage "shift" reads index 1..4 of dimension 0'):
        run_te(parse(text), [np.zeros(4, np.float32)])


def test_wrong_inputs_are_diagnostics():
    module = parse(DENSE_RELU)
    with pytest.raises(StratoError, match="takes 1 inputs, got 0"):
        run_te(module, [])
    with pytest.raises(StratoError, match="has shape"):
        run_te(module, [np.zeros((4, 2), np.float32)])


def test_every_cmpf_predicate_orders_and_unorders_as_llvm_does():
    import numpy as np

    from strato.interpreters.te import _cmpf

    a = np.array([0.0, 1.0, np.nan, 2.0, np.nan])
    b = np.array([0.0, 2.0, 1.0, 1.0, np.nan])
    names = "false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".split()
    relations = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}
    nan = np.isnan(a) | np.isnan(b)
    for number, name in enumerate(names):
        if name in ("false", "true"):
            expected = np.full(a.shape, name == "true")
        elif name in ("ord", "uno"):
            expected = nan if name == "uno" else ~nan
        elif name[0] == "o":
            expected = relations[name[1:]] & ~nan
        else:
            expected = relations[name[1:]] | nan
        assert _cmpf(number, a, b).tolist() == expected.tolist(), name


@pytest.mark.parametrize("limit", [7, 1 << 22])
@pytest.mark.parametrize(
    "dtype, node",
    [
        (np.float32, "Conv"),
        (np.int32, "ReduceSum"),
        (np.float16, "ReduceSum"),
        (np.float32, "ReduceMax"),
    ],
)
def test_reductions_fold_in_the_loop_nests_order(monkeypatch, limit, dtype, node):
    """A reduction evaluated in slices of its first reduction axis, whatever the grid
    limit, gives exactly what the canonical loop nest computes, each partial result
    rounded in the element type (float16 through the general fold)."""
    from onnx import helper, numpy_helper

    from strato.frontends.onnx import import_onnx
    from strato.interpreters.loop import run_loops
    from strato.pipeline import run_pipeline

    rng = np.random.default_rng(3)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    if node == "Conv":
        x = rng.standard_normal((1, 5, 6, 6)).astype(dtype)
        weights = [numpy_helper.from_array(rng.standard_normal((4, 5, 3, 3)).astype(dtype), "w")]
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])]
        out = [1, 4, 6, 6]
    else:
        x = (rng.integers(-50, 50, (3, 7, 9)) if dtype == np.int32 else rng.standard_normal((3, 7, 9))).astype(dtype)
        weights = [numpy_helper.from_array(np.array([1, 2], np.int64), "axes")]
        nodes = [helper.make_node(node, ["x", "axes"], ["y"], keepdims=0)]
        out = [3]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, out)], weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    te_module = import_onnx(model).module
    run_pipeline(make_context(), te_module, "graph-default,convert-graph-to-te,te-inline-stages")
    loop_module = te_module.clone()
    run_pipeline(make_context(), loop_module, "convert-te-to-loops")
    monkeypatch.setattr(te_interpreter, "GRID_ELEMENT_LIMIT", limit)
    (got,) = run_te(te_module, [x])
    (want,) = run_loops(loop_module, [x])
    np.testing.assert_array_equal(got, want)
