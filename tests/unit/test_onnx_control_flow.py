"""If, Loop and Scan whose decisions are known at compile time: imported as the ops they
run, matching onnxruntime; an If on a run-time condition: if-converted when small, a
compiled graph.if otherwise, and on the host (strato.staged, tests/unit/test_staged.py
has the loops) when its branches differ in shape; oversized loops are diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import RuntimeBranchError, StratoError
from strato.frontends.onnx import import_model
from strato.frontends.onnx.convert_control import MAX_UNROLLED_NODES
from strato.targets.llvm.model import LLVMCompiledModel
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


def _rnn_scan(steps: int, input_axis: int, input_direction: int, output_axis: int, output_direction: int):
    """h <- tanh(h W + x U) over `steps` positions of x [4, 16] along `input_axis`, each
    position's pre-activation a scan output stacked along `output_axis`."""
    rng = np.random.default_rng(4)
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h", "W"], ["hw"]),
            helper.make_node("MatMul", ["x", "U"], ["xu"]),
            helper.make_node("Add", ["hw", "xu"], ["a"]),
            helper.make_node("Tanh", ["a"], ["h_out"]),
        ],
        "body",
        [_tensor("h", FLOAT, [4, 16]), _tensor("x", FLOAT, [4, 16])],
        [_tensor("h_out", FLOAT, [4, 16]), _tensor("a", FLOAT, [4, 16])],
    )
    xs = [4, 16]
    xs.insert(input_axis, steps)
    ys = [4, 16]
    ys.insert(output_axis, steps)
    node = helper.make_node(
        "Scan", ["h0", "xs"], ["h_last", "ys"], body=body, num_scan_inputs=1,
        scan_input_axes=[input_axis], scan_input_directions=[input_direction],
        scan_output_axes=[output_axis], scan_output_directions=[output_direction],
    )  # fmt: skip
    weights = [
        numpy_helper.from_array((rng.standard_normal((16, 16)) * 0.2).astype(np.float32), name)
        for name in ("W", "U")
    ]
    model = _model(
        [node], [_tensor("h0", FLOAT, [4, 16]), _tensor("xs", FLOAT, xs)],
        [_tensor("h_last", FLOAT, [4, 16]), _tensor("ys", FLOAT, ys)], weights,
    )  # fmt: skip
    feeds = {"h0": rng.standard_normal((4, 16)).astype(np.float32), "xs": rng.standard_normal(xs).astype(np.float32)}
    return model, feeds


@pytest.mark.parametrize(
    "axes", [(0, 0, 0, 0), (1, 1, 2, 1), (2, 0, 1, 1)], ids=["forward", "reversed", "inner-axes"]
)
def test_a_long_scan_is_a_graph_scan(axes):
    """30 positions of a 4-node body: one body in a graph.scan, the scan axes moved
    first and back, in either direction."""
    model, feeds = _rnn_scan(30, *axes)
    ops = _graph_ops(model)
    assert ops.count("graph.scan") == 1 and ops.count("graph.tanh") == 1
    _check(model, feeds)


def test_a_short_scan_and_one_of_constants_are_unrolled():
    """Unrolling a scan of 8 body nodes in all costs nothing; one that reads only
    constants is computed at import time, whatever its length."""
    model, feeds = _rnn_scan(2, 0, 0, 0, 0)
    assert "graph.scan" not in _graph_ops(model)
    _check(model, feeds)
    long_model, long_feeds = _rnn_scan(40, 0, 0, 0, 0)
    graph = long_model.graph
    for name in ("h0", "xs"):
        (value,) = [v for v in graph.input if v.name == name]
        graph.input.remove(value)
        graph.initializer.append(numpy_helper.from_array(long_feeds[name], name))
    assert set(_graph_ops(long_model)) <= {"builtin.module", "func.func", "func.return", "graph.constant"}


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


def _graph_ops(model: onnx.ModelProto) -> list[str]:
    return [op.name for op in import_model(model).walk()]


def test_a_run_time_if_with_a_gather_at_run_time_positions_is_a_compiled_branch():
    """Both branches cannot run: a gather at positions the untaken branch guards against
    could read out of range. So the If is a graph.if, compiled with the model, which
    runs only the branch taken."""
    model = _run_time_if(
        [helper.make_node("Gather", ["x", "where"], ["t"])],
        [helper.make_node("Identity", ["x"], ["e"])],
        inputs=[_tensor("where", TensorProto.INT64, [2])],
    )
    ops = _graph_ops(model)
    assert "graph.if" in ops and "graph.where" not in ops
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, LLVMCompiledModel)  # one model, not staged
    x = np.array([0.5, -1.0], np.float32)
    _check(model, {"flag": np.array(True), "x": x, "where": np.int64([1, 0])})
    (y,) = compiled(np.array(False), x, np.int64([7, -9]))  # out of range, not taken
    np.testing.assert_array_equal(y, x)


def _costly_if(flag_from_data: bool = True) -> onnx.ModelProto:
    """out = sigmoid(If(sum(x) > 0, relu(x @ W1), tanh(x @ W2)))."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), name)
        for name in ("W1", "W2")
    ]

    def branch(name, weight, activation):
        return helper.make_graph(
            [helper.make_node("MatMul", ["x", weight], [f"{name}_p"]),
             helper.make_node(activation, [f"{name}_p"], [f"{name}_out"])],
            name, [], [_tensor(f"{name}_out", FLOAT, [4, 16])],
        )  # fmt: skip

    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        _const("zero", np.float32(0)),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node(
            "If", ["c"], ["y"], then_branch=branch("then", "W1", "Relu"),
            else_branch=branch("else", "W2", "Tanh"),
        ),
        helper.make_node("Sigmoid", ["y"], ["out"]),
    ]
    return _model(nodes, [_tensor("x", FLOAT, [4, 16])], [_tensor("out", FLOAT, [4, 16])], weights)


@pytest.mark.parametrize("sign", [1, -1], ids=["then", "else"])
def test_a_run_time_if_with_costly_branches_runs_only_the_branch_taken(sign):
    """Branches holding a product are not both computed (if-conversion): the If is a
    graph.if whose branches are functions of their own, compiled into the model."""
    model = _costly_if()
    ops = _graph_ops(model)
    assert ops.count("graph.if") == 1 and "graph.where" not in ops
    x = sign * np.abs(np.random.default_rng(1).standard_normal((4, 16))).astype(np.float32)
    _check(model, {"x": x})


def test_a_small_run_time_if_is_if_converted():
    """Cheap branches (up to IF_CONVERT_MAX_NODES nodes, no costly operator) are both
    computed and selected between, so they fuse with their neighbours."""
    model = _run_time_if(
        [helper.make_node("Exp", ["x"], ["t"])],
        [helper.make_node("Neg", ["x"], ["e"])],
    )
    ops = _graph_ops(model)
    assert "graph.where" in ops and "graph.if" not in ops


@pytest.mark.parametrize("flags", [(True, True), (True, False), (False, True), (False, False)])
def test_nested_run_time_ifs_each_run_their_branch(flags):
    """An If in a branch of another, both on run-time conditions, with branches that
    return an input, a constant and a value computed in the branch."""
    inner = helper.make_node(
        "If", ["inner_flag"], ["inner_y"],
        then_branch=helper.make_graph(
            [helper.make_node("MatMul", ["x", "W"], ["p"]), helper.make_node("Relu", ["p"], ["ti"])],
            "inner_then", [], [_tensor("ti", FLOAT, [2, 8])]),
        else_branch=helper.make_graph(
            [_const("k", np.full((2, 8), 3.0, np.float32))], "inner_else", [], [_tensor("k", FLOAT, [2, 8])]),
    )  # fmt: skip
    outer = helper.make_node(
        "If", ["flag"], ["y"],
        then_branch=helper.make_graph(
            [inner, helper.make_node("MatMul", ["inner_y", "W"], ["q"])], "outer_then", [],
            [_tensor("q", FLOAT, [2, 8])]),
        else_branch=helper.make_graph(
            [helper.make_node("Identity", ["x"], ["ex"])], "outer_else", [], [_tensor("ex", FLOAT, [2, 8])]),
    )  # fmt: skip
    weight = numpy_helper.from_array(np.random.default_rng(2).standard_normal((8, 8)).astype(np.float32), "W")
    model = _model(
        [outer],
        [_tensor("flag", TensorProto.BOOL, []), _tensor("inner_flag", TensorProto.BOOL, [1]),
         _tensor("x", FLOAT, [2, 8])],
        [_tensor("y", FLOAT, [2, 8])],
        [weight],
    )  # fmt: skip
    assert _graph_ops(model).count("graph.if") == 2
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    _check(model, {"flag": np.array(flags[0]), "inner_flag": np.array([flags[1]]), "x": x})


def test_a_long_loop_with_scan_outputs_is_a_graph_scan():
    """A Loop of known trip count, too long to unroll, whose body never stops it: one
    body run over the iteration numbers, its terms stacked."""
    trips = 3000
    nodes = [
        _const("M", np.int64(trips)),
        helper.make_node("Loop", ["M", "", "zero"], ["total", "terms"], body=_loop_body()),
    ]
    model = _loop_model(nodes)
    ops = _graph_ops(model)
    assert ops.count("graph.scan") == 1 and ops.count("graph.mul") == 1
    x = np.array([1.0, -2.0, 0.5], np.float32)
    total, terms = _check(model, {"x": x})
    assert terms.shape == (trips, 3)
    np.testing.assert_allclose(terms[-1], x * trips)
    np.testing.assert_allclose(total, x * trips * (trips + 1) / 2, rtol=1e-3)


def test_a_loop_too_long_to_unroll_is_a_diagnostic():
    """A body that may stop the loop at any iteration: its scan outputs' length is
    known only by unrolling, which is too long."""
    stop = [_const("limit", np.int64(10**9)), helper.make_node("Less", ["i1", "limit"], ["more"])]
    nodes = [
        _const("M", np.int64(MAX_UNROLLED_NODES)),
        helper.make_node("Loop", ["M", "", "zero"], ["total", "terms"], body=_loop_body(stop, "more")),
    ]
    model = _loop_model(nodes)
    with pytest.raises(StratoError, match=rf"\(Loop\): it runs its body of 8 nodes {MAX_UNROLLED_NODES} times"):
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


# -- loops decided at run time: graph.loop -------------------------------------------------


def _state_body(nodes, state_shape=(2, 8)) -> onnx.GraphProto:
    """A body (i, cond_in, h_in) -> (cond_out, h_out) over a state of `state_shape`."""
    return helper.make_graph(
        nodes,
        "body",
        [_tensor("i", TensorProto.INT64, []), _tensor("cond_in", TensorProto.BOOL, []),
         _tensor("h_in", FLOAT, list(state_shape))],
        [_tensor("cond_out", TensorProto.BOOL, []), _tensor("h_out", FLOAT, list(state_shape))],
    )  # fmt: skip


def _recurrence(loop_inputs, extra_inputs=(), body_nodes=None) -> onnx.ModelProto:
    """h <- tanh(h @ W + x * i), through a Loop on `loop_inputs` (trip count, condition),
    W and x read from outside the body; y = h * 2 after the loop."""
    rng = np.random.default_rng(4)
    weight = numpy_helper.from_array((rng.standard_normal((8, 8)) * 0.5).astype(np.float32), "W")
    nodes = body_nodes or [
        helper.make_node("MatMul", ["h_in", "W"], ["p"]),
        helper.make_node("Cast", ["i"], ["fi"], to=FLOAT),
        helper.make_node("Mul", ["x", "fi"], ["xi"]),
        helper.make_node("Add", ["p", "xi"], ["q"]),
        helper.make_node("Tanh", ["q"], ["h_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ]
    graph_nodes = [
        helper.make_node("Loop", [*loop_inputs, "x"], ["h"], body=_state_body(nodes)),
        _const("two", np.float32(2)),
        helper.make_node("Mul", ["h", "two"], ["y"]),
    ]
    return _model(
        graph_nodes,
        [_tensor("x", FLOAT, [2, 8]), *extra_inputs],
        [_tensor("y", FLOAT, [2, 8])],
        [weight],
    )


@pytest.mark.parametrize("trips", [0, 1, 5])
def test_a_loop_of_a_run_time_trip_count_is_a_compiled_graph_loop(trips):
    """The trip count is a graph input: the Loop is a graph.loop, compiled with the model
    (no host step), its body reading outer values and its iteration number."""
    model = _recurrence(["M", ""], [_tensor("M", TensorProto.INT64, [])])
    assert _graph_ops(model).count("graph.loop") == 1
    assert isinstance(strato.compile(model, cache=False), LLVMCompiledModel)
    x = np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32)
    _check(model, {"x": x, "M": np.array(trips, np.int64)})


@pytest.mark.parametrize("limit", [-1.0, 0.5, 3.0])
def test_a_while_loop_on_a_condition_its_body_computes_is_a_graph_loop(limit):
    """No trip count: the body decides from the data whether to go on (at most 50
    iterations, bounded by a trip count known at import time, so the importer first
    tries to unroll it and falls back to graph.loop)."""
    body = [
        _const("decay", np.float32(0.5)),
        helper.make_node("Mul", ["h_in", "decay"], ["h_out"]),
        helper.make_node("ReduceSum", ["h_out"], ["total"], keepdims=0),
        helper.make_node("Abs", ["total"], ["size"]),
        helper.make_node("Greater", ["size", "limit"], ["cond_out"]),
    ]
    model = _recurrence(
        ["M", "go"], [_tensor("limit", FLOAT, []), _tensor("go", TensorProto.BOOL, [])], body
    )
    model.graph.node.insert(0, _const("M", np.int64(50)))
    assert _graph_ops(model).count("graph.loop") == 1
    x = np.full((2, 8), 4.0, np.float32)
    for go in (True, False):
        _check(model, {"x": x, "limit": np.array(limit, np.float32), "go": np.array(go)})


def parity_branching_body(then_branch: onnx.GraphProto, else_branch: onnx.GraphProto) -> list:
    """The nodes of a loop body (over h_in -> h_out) that takes `then_branch` on even
    iterations and `else_branch` on odd ones."""
    return [
        _const("two_i", np.int64(2)),
        helper.make_node("Mod", ["i", "two_i"], ["parity"]),
        _const("nought", np.int64(0)),
        helper.make_node("Equal", ["parity", "nought"], ["even"]),
        helper.make_node("If", ["even"], ["h_out"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ]


@pytest.mark.parametrize("trips", [0, 3])
def test_a_run_time_if_inside_a_run_time_loop(trips):
    """The body branches on the iteration's parity with costly branches: a graph.if in
    a graph.loop, both compiled."""
    rng = np.random.default_rng(6)
    weights = [
        numpy_helper.from_array((rng.standard_normal((8, 8)) * 0.5).astype(np.float32), name)
        for name in ("Wa", "Wb")
    ]

    def branch(name, weight):
        return helper.make_graph(
            [helper.make_node("MatMul", ["h_in", weight], [f"{name}_p"]),
             helper.make_node("Tanh", [f"{name}_p"], [f"{name}_out"])],
            name, [], [_tensor(f"{name}_out", FLOAT, [2, 8])],
        )  # fmt: skip

    body = parity_branching_body(branch("a", "Wa"), branch("b", "Wb"))
    model = _recurrence(["M", ""], [_tensor("M", TensorProto.INT64, [])], body)
    model.graph.initializer.extend(weights)
    ops = _graph_ops(model)
    assert ops.count("graph.loop") == 1 and ops.count("graph.if") == 1
    x = rng.standard_normal((2, 8)).astype(np.float32)
    _check(model, {"x": x, "M": np.array(trips, np.int64)})


def test_a_loop_too_long_to_unroll_without_scan_outputs_is_a_graph_loop():
    """A known trip count whose unrolled body would pass MAX_UNROLLED_NODES: without scan
    outputs, one body runs that many times (a graph.loop) instead of a refusal."""
    trips = MAX_UNROLLED_NODES // 6 + 1
    model = _recurrence(["M", ""])
    model.graph.node.insert(0, _const("M", np.int64(trips)))
    assert _graph_ops(model).count("graph.loop") == 1
    x = np.random.default_rng(8).standard_normal((2, 8)).astype(np.float32)
    _check(model, {"x": x})
