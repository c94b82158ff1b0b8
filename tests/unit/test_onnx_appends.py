"""Loops that append one tensor per iteration to a list, then stack or concatenate it
(the TorchScript exporter's form of `outs.append(h)` in a loop, then `torch.stack` or
`torch.cat`): the list becomes a scan output (`strato.frontends.onnx.appends`), so the
loop compiles, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.frontends.onnx.appends import appends_as_scan_outputs
from strato.frontends.onnx.importer import import_model

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def appending_model(
    concat: dict,
    trips: int | None = None,
    extra_reader: bool = False,
    around: bool = False,
    while_positive: bool = False,
) -> onnx.ModelProto:
    """h <- tanh(h @ W) n times from x [2, 3, 4] (last axis 4), each h appended to a list
    that `concat` (ConcatFromSequence's attributes) joins; n a graph input, or the
    constant `trips`. The body's condition is an outer constant true, as TorchScript
    writes it; with `while_positive`, whether h's sum is positive (a while loop). With
    `around`, the list starts as [x] (SequenceConstruct) and gets 2 * h appended after
    the loop."""
    condition = [
        helper.make_node("ReduceSum", ["h_out"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond_out"]),
    ] if while_positive else [helper.make_node("Identity", ["true"], ["cond_out"])]  # fmt: skip
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["p"]),
            helper.make_node("Tanh", ["p"], ["h_out"]),
            helper.make_node("SequenceInsert", ["list_in", "h_out"], ["list_out"]),
            *condition,
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond", B, []),
            helper.make_tensor_value_info("h_in", F, [2, 3, 4]),
            helper.make_tensor_sequence_value_info("list_in", F, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", B, []),
            helper.make_tensor_value_info("h_out", F, [2, 3, 4]),
            helper.make_tensor_sequence_value_info("list_out", F, None),
        ],
    )
    nodes = [
        helper.make_node("Constant", [], ["true"], value=numpy_helper.from_array(np.array(True))),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.float32(0))),
        helper.make_node("SequenceConstruct", ["x"], ["empty"])
        if around else helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
        helper.make_node("Loop", ["n", "true", "x", "empty"], ["h", "list"], body=body),
    ]  # fmt: skip
    if around:
        nodes += [
            helper.make_node("Add", ["h", "h"], ["h2"]),
            helper.make_node("SequenceInsert", ["list", "h2"], ["whole"]),
            helper.make_node("ConcatFromSequence", ["whole"], ["y"], **concat),
        ]
    else:
        nodes.append(helper.make_node("ConcatFromSequence", ["list"], ["y"], **concat))
    outputs = [helper.make_tensor_value_info("y", F, None)]
    if extra_reader:
        nodes.append(helper.make_node("SequenceLength", ["list"], ["count"]))
        outputs.append(helper.make_tensor_value_info("count", I64, []))
    inputs = [helper.make_tensor_value_info("x", F, [2, 3, 4])]
    weight = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32) * 0.5
    initializers = [numpy_helper.from_array(weight, "W")]
    if trips is None:
        inputs.append(helper.make_tensor_value_info("n", I64, []))
    else:
        initializers.append(numpy_helper.from_array(np.array(trips, np.int64), "n"))
    graph = helper.make_graph(nodes, "appending", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _expected(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


CONCATS = {
    "stack": {"axis": 0, "new_axis": 1},
    "stack-inner": {"axis": 2, "new_axis": 1},
    "stack-last": {"axis": -1, "new_axis": 1},
    "cat": {"axis": 0, "new_axis": 0},
    "cat-inner": {"axis": 1, "new_axis": 0},
    "cat-last": {"axis": -1, "new_axis": 0},
}


@pytest.mark.parametrize("concat", list(CONCATS), ids=list(CONCATS))
def test_a_run_time_count_of_appends_runs_and_then_compiles_in_chunks(concat):
    model = appending_model(CONCATS[concat])
    rewritten = appends_as_scan_outputs(model)
    assert [n.op_type for n in rewritten.graph.node if n.op_type.startswith("Sequence")] == []
    compiled = strato.compile(model, cache=False)
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    for trips in (3, 12, 40, 12):  # chunks of 16 iterations, then of 64 after the 40
        feeds = {"x": x, "n": np.array(trips, np.int64)}
        for got, want in zip(compiled(*feeds.values()), _expected(model, feeds), strict=True):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    (loop,) = [step for step in compiled.steps if getattr(step, "node", None) is not None]
    assert loop._chunks.compiled is not None and loop._chunks.capacity == 64


@pytest.mark.parametrize("trips", [2, 40])
def test_a_known_count_of_appends_compiles(trips):
    """Short: unrolled; long: a graph.scan."""
    model = appending_model(CONCATS["stack"], trips=trips)
    ops = [op.name for op in import_model(model).walk()]
    assert ("graph.scan" in ops) == (trips == 40)
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    (got,) = strato.compile(model, cache=False)(x)
    (want,) = _expected(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("concat", ["stack-inner", "cat-last"])
def test_tensors_listed_before_and_after_the_loop_join_the_stack(concat):
    """`outs = [x]`, the loop appending, `outs.append(2 * h)` after it; and a while loop
    (its body may stop it) that appends, run on the host."""
    for while_positive in (False, True):
        model = appending_model(CONCATS[concat], around=True, while_positive=while_positive)
        rewritten = appends_as_scan_outputs(model)
        assert not any(n.op_type.startswith(("Sequence", "ConcatFrom")) for n in rewritten.graph.node)
        compiled = strato.compile(model, cache=False)
        rng = np.random.default_rng(4)
        for trips in (0, 5, 5):
            feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), "n": np.array(trips, np.int64)}
            for got, want in zip(compiled(*feeds.values()), _expected(model, feeds), strict=True):
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_list_read_otherwise_is_left_alone():
    model = appending_model(CONCATS["stack"], extra_reader=True)
    assert appends_as_scan_outputs(model) is model


def test_appended_tensors_of_no_static_shape_are_left_alone():
    """Tensors whose sizes the model does not fix may differ between iterations, which
    a concatenation allows and a stack does not."""
    model = appending_model(CONCATS["cat"])
    loop = next(node for node in model.graph.node if node.op_type == "Loop")
    body = loop.attribute[0].g
    for value in body.output:
        if value.name == "h_out":
            value.type.tensor_type.shape.dim[0].dim_param = "rows"
    for value in body.input:
        if value.name == "h_in":
            value.type.tensor_type.shape.dim[0].dim_param = "rows"
    assert appends_as_scan_outputs(model) is model
