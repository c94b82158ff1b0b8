"""If, Loop and Scan whose decisions are known at compile time: imported as the ops they
run, matching onnxruntime; an If the importer cannot select in runs on the host
(strato.staged, tests/unit/test_staged.py has the loops); oversized loops are
diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import RuntimeBranchError, StratoError
from strato.frontends.onnx import import_model
from strato.frontends.onnx.convert_control import MAX_UNROLLED_NODES
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

FLOAT = TensorProto.FLOAT


def _tensor(name: str, elem: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))


def _model(nodes, inputs, outputs, initializers=(), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "control", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    onnx.checker.check_model(model)
    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)
    actual = strato.compile(model, cache=False)(*feeds.values())
    for got, want in zip(actual, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return actual


@pytest.mark.parametrize("width", [4, 2], ids=["then", "else"])
def test_an_if_on_a_shape_takes_its_branch(width):
    """As the TorchScript exporter writes `if x.shape[1] > 3:`: the branch reads an outer
    value and has an initializer of its own."""
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t"])],
        "then",
        [],
        [_tensor("t", FLOAT, [2, width])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [_tensor("e", FLOAT, [2, width])]
    )
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        _const("one", np.int64(1)),
        helper.make_node("Gather", ["shape", "one"], ["columns"]),
        _const("three", np.int64(3)),
        helper.make_node("Greater", ["columns", "three"], ["wide"]),
        helper.make_node("If", ["wide"], ["y"], then_branch=then_branch, else_branch=else_branch),
    ]
    model = _model(nodes, [_tensor("x", FLOAT, [2, width])], [_tensor("y", FLOAT, [2, width])])
    x = np.arange(2 * width, dtype=np.float32).reshape(2, width)
    (y,) = _check(model, {"x": x})
    np.testing.assert_array_equal(y, 2 * x if width > 3 else -x)


def _loop_body(extra_nodes=(), condition: str = "cond_in") -> onnx.GraphProto:
    """A body adding x * (i + 1) to the carried sum, with that term as a scan output."""
    nodes = [
        _const("unit", np.int64(1)),
        helper.make_node("Add", ["i", "unit"], ["i1"]),
        helper.make_node("Cast", ["i1"], ["f"], to=FLOAT),
        helper.make_node("Mul", ["x", "f"], ["term"]),
        helper.make_node("Add", ["sum_in", "term"], ["sum_out"]),
        *extra_nodes,
        helper.make_node("Identity", [condition], ["cond_out"]),
    ]
    return helper.make_graph(
        nodes,
        "body",
        [
            _tensor("i", TensorProto.INT64, []),
            _tensor("cond_in", TensorProto.BOOL, []),
            _tensor("sum_in", FLOAT, [3]),
        ],
        [
            _tensor("cond_out", TensorProto.BOOL, []),
            _tensor("sum_out", FLOAT, [3]),
            _tensor("term", FLOAT, [3]),
        ],
    )


def _loop_model(nodes, terms: onnx.ValueInfoProto | None = None) -> onnx.ModelProto:
    """`nodes` (a Loop from x and a zero sum to total and its terms) as a model."""
    terms = _tensor("terms", FLOAT, [None, 3]) if terms is None else terms
    return _model(
        nodes,
        [_tensor("x", FLOAT, [3])],
        [_tensor("total", FLOAT, [3]), terms],
        [numpy_helper.from_array(np.zeros(3, np.float32), "zero")],
    )


@pytest.mark.parametrize("trips", [4, 0])
def test_a_loop_with_a_constant_trip_count_is_unrolled(trips):
    nodes = [
        _const("M", np.int64(trips)),
        _const("go", np.bool_(True)),
        helper.make_node("Loop", ["M", "go", "zero"], ["total", "terms"], body=_loop_body()),
    ]
    model = _loop_model(nodes)
    x = np.array([1.0, -2.0, 0.5], np.float32)
    total, terms = _check(model, {"x": x})
    assert terms.shape == (trips, 3)
    np.testing.assert_allclose(total, x * sum(range(1, trips + 1)))


def test_a_loop_stops_when_its_body_says_so():
    """No trip count: the body's condition (i + 1 < 3, known each iteration) ends it."""
    stop = [_const("limit", np.int64(3)), helper.make_node("Less", ["i1", "limit"], ["more"])]
    nodes = [
        _const("go", np.bool_(True)),
        helper.make_node("Loop", ["", "go", "zero"], ["total", "terms"], body=_loop_body(stop, "more")),
    ]
    model = _loop_model(nodes)
    _, terms = _check(model, {"x": np.ones(3, np.float32)})
    assert terms.shape == (3, 3)


def test_an_if_inside_a_loop_branches_on_the_iteration():
    """The nested If's condition (i is even) is known in each unrolled iteration."""
    then_branch = helper.make_graph(
        [helper.make_node("Identity", ["term"], ["picked_then"])], "then", [], [_tensor("picked_then", FLOAT, [3])]
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["term"], ["picked_else"])], "else", [], [_tensor("picked_else", FLOAT, [3])]
    )
    extra = [
        _const("two", np.int64(2)),
        helper.make_node("Mod", ["i", "two"], ["parity"]),
        _const("nought", np.int64(0)),
        helper.make_node("Equal", ["parity", "nought"], ["even"]),
        helper.make_node("If", ["even"], ["signed"], then_branch=then_branch, else_branch=else_branch),
    ]
    body = _loop_body(extra)
    body.output[2].name = "signed"
    nodes = [
        _const("M", np.int64(5)),
        helper.make_node("Loop", ["M", "", "zero"], ["total", "signed_terms"], body=body),
    ]
    model = _loop_model(nodes, _tensor("signed_terms", FLOAT, [5, 3]))
    _, signed = _check(model, {"x": np.array([1.0, 2.0, 3.0], np.float32)})
    np.testing.assert_allclose(signed[:, 0], [1, -2, 3, -4, 5])


def test_a_scan_runs_its_body_along_the_axis_in_both_directions():
    """A running sum over axis 1 read backwards, the scan output stacked on axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "column"], ["acc_out"]), helper.make_node("Identity", ["acc_out"], ["seen"])],
        "body",
        [_tensor("acc", FLOAT, [2]), _tensor("column", FLOAT, [2])],
        [_tensor("acc_out", FLOAT, [2]), _tensor("seen", FLOAT, [2])],
    )
    node = helper.make_node(
        "Scan", ["init", "x"], ["final", "partials"], body=body, num_scan_inputs=1,
        scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1],
    )  # fmt: skip
    model = _model(
        [node],
        [_tensor("init", FLOAT, [2]), _tensor("x", FLOAT, [2, 5])],
        [_tensor("final", FLOAT, [2]), _tensor("partials", FLOAT, [2, 5])],
    )
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    final, partials = _check(model, {"init": np.ones(2, np.float32), "x": x})
    np.testing.assert_allclose(final, 1 + x.sum(axis=1))
    np.testing.assert_allclose(partials[:, 0], 1 + x[:, 4])


def _run_time_if(then_nodes, else_nodes, then_shape=(2,), else_shape=(2,), inputs=()) -> onnx.ModelProto:
    """y = If(flag) on a graph input flag, each branch computing its output from x."""
    then_branch = helper.make_graph(then_nodes, "then", [], [_tensor("t", FLOAT, list(then_shape))])
    else_branch = helper.make_graph(else_nodes, "else", [], [_tensor("e", FLOAT, list(else_shape))])
    node = helper.make_node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)
    graph_inputs = [_tensor("flag", TensorProto.BOOL, []), _tensor("x", FLOAT, [2]), *inputs]
    return _model([node], graph_inputs, [_tensor("y", FLOAT, list(then_shape))])


@pytest.mark.parametrize("flag", [True, False])
def test_an_if_on_a_run_time_condition_selects_between_its_branches(flag):
    model = _run_time_if(
        [helper.make_node("Exp", ["x"], ["t"])],
        [helper.make_node("Neg", ["x"], ["e"])],
    )
    x = np.array([0.5, -1.0], np.float32)
    (y,) = _check(model, {"flag": np.array(flag), "x": x})
    np.testing.assert_allclose(y, np.exp(x) if flag else -x, rtol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_a_run_time_if_whose_branches_differ_in_shape_runs_on_the_host(flag):
    """The importer cannot select between [2] and [4] (a RuntimeBranchError naming the
    node); strato.compile runs the If on the host, each branch compiled alone."""
    model = _run_time_if(
        [helper.make_node("Identity", ["x"], ["t"])],
        [helper.make_node("Concat", ["x", "x"], ["e"], axis=0)],
        then_shape=("n",),
        else_shape=("n",),
    )
    with pytest.raises(RuntimeBranchError, match=r"\(If\): its condition is known only at run time and its branches give output 0 as float32 \[2\] and float32 \[4\]") as error:
        import_model(model)
    assert error.value.node == "y"
    x = np.array([0.5, -1.0], np.float32)
    (y,) = _check(model, {"flag": np.array(flag), "x": x})
    assert y.shape == ((2,) if flag else (4,))


def test_a_run_time_if_with_a_gather_at_run_time_positions_runs_on_the_host():
    """Both branches would run: a gather at positions the untaken branch guards against
    could read out of range. So the If runs on the host, computing one branch."""
    model = _run_time_if(
        [helper.make_node("Gather", ["x", "where"], ["t"])],
        [helper.make_node("Identity", ["x"], ["e"])],
        inputs=[_tensor("where", TensorProto.INT64, [2])],
    )
    with pytest.raises(RuntimeBranchError, match=r"then_branch has a Gather that reads at positions known only at run time"):
        import_model(model)
    x = np.array([0.5, -1.0], np.float32)
    _check(model, {"flag": np.array(True), "x": x, "where": np.int64([1, 0])})
    _check(model, {"flag": np.array(False), "x": x, "where": np.int64([7, -9])})


def test_a_loop_too_long_to_unroll_is_a_diagnostic():
    nodes = [
        _const("M", np.int64(MAX_UNROLLED_NODES)),
        helper.make_node("Loop", ["M", "", "zero"], ["total", "terms"], body=_loop_body()),
    ]
    model = _loop_model(nodes)
    with pytest.raises(StratoError, match=rf"\(Loop\): it runs its body of 6 nodes {MAX_UNROLLED_NODES} times"):
        strato.compile(model)


def test_sequences_built_in_the_model_are_static_lists():
    """SplitToSequence, SequenceLength driving a Loop that reads each element with
    SequenceAt and SequenceInsert, ConcatFromSequence: all known at import time."""
    body = helper.make_graph(
        [
            helper.make_node("SequenceAt", ["pieces", "i"], ["piece"]),
            helper.make_node("Mul", ["piece", "piece"], ["square"]),
            helper.make_node("SequenceInsert", ["acc_in", "square"], ["acc_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [_tensor("i", TensorProto.INT64, []), _tensor("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("acc_in", FLOAT, None)],
        [_tensor("cond_out", TensorProto.BOOL, []), helper.make_tensor_sequence_value_info("acc_out", FLOAT, None)],
    )  # fmt: skip
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["pieces"], axis=1),
        helper.make_node("SequenceLength", ["pieces"], ["count"]),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=FLOAT),
        helper.make_node("Loop", ["count", "", "empty"], ["squares"], body=body),
        helper.make_node("ConcatFromSequence", ["squares"], ["y"], axis=1),
    ]
    model = _model(nodes, [_tensor("x", FLOAT, [2, 3])], [_tensor("y", FLOAT, [2, 3])])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = _check(model, {"x": x})
    np.testing.assert_array_equal(y, x * x)
