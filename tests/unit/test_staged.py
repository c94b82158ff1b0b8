"""Models with data-dependent-shape operators: compiled parts with NonZero, Unique and
NonMaxSuppression on the host between them, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import StratoError
from strato.staged import StagedModel

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model_of(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "staged",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(initializers).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], parts: int) -> StagedModel:
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, StagedModel)
    assert sum(not hasattr(step, "node") for step in compiled.steps) == parts
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = compiled(*feeds.values())
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    return compiled


def test_nonzero_between_two_compiled_parts():
    nodes = [
        helper.make_node("Sub", ["x", "t"], ["d"]),
        helper.make_node("Relu", ["d"], ["r"]),
        helper.make_node("NonZero", ["r"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["pos"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "pos"], ["picked"]),
        helper.make_node("Mul", ["picked", "two"], ["y"]),
    ]
    model = model_of(
        nodes, {"x": (F, [3, 4])}, {"y": F, "nz": I64},
        {"t": np.float32(0.5), "two": np.float32(2.0)},
    )
    rng = np.random.default_rng(0)
    for _ in range(3):  # a different count of positions each call
        check(model, {"x": rng.random((3, 4)).astype(np.float32)}, parts=2)


def test_detection_head_with_nms():
    """Scores by a sigmoid, NonMaxSuppression on the host, the kept boxes gathered and
    scaled by compiled code."""
    nodes = [
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou", "floor"], ["sel"]),
        helper.make_node("Gather", ["sel", "col"], ["which"], axis=1),
        helper.make_node("Squeeze", ["boxes", "zero"], ["flat"]),
        helper.make_node("Gather", ["flat", "which"], ["kept"], axis=0),
        helper.make_node("Mul", ["kept", "scale"], ["out"]),
    ]
    model = model_of(
        nodes,
        {"boxes": (F, [1, 12, 4]), "logits": (F, [1, 2, 12])},
        {"out": F, "sel": I64},
        {
            "limit": np.array([4], np.int64), "iou": np.array([0.3], np.float32),
            "floor": np.array([0.4], np.float32), "col": np.array(2, np.int64),
            "zero": np.array([0], np.int64), "scale": np.float32(10.0),
        },
    )
    rng = np.random.default_rng(1)
    for _ in range(3):
        corner = rng.random((1, 12, 2)).astype(np.float32)
        boxes = np.concatenate([corner, corner + rng.random((1, 12, 2)).astype(np.float32)], axis=-1)
        check(model, {"boxes": boxes, "logits": rng.standard_normal((1, 2, 12)).astype(np.float32)}, parts=2)


def test_unique_feeding_compiled_code_with_a_dynamic_input():
    nodes = [
        helper.make_node("Unique", ["x"], ["u", "first", "inverse", "counts"], sorted=1),
        helper.make_node("Cast", ["counts"], ["c"], to=F),
        helper.make_node("Mul", ["u", "c"], ["y"]),
    ]
    model = model_of(nodes, {"x": (F, ["n"])}, {"y": F, "inverse": I64})
    rng = np.random.default_rng(2)
    for n in (5, 9):
        check(model, {"x": rng.integers(0, 4, n).astype(np.float32)}, parts=1)


def test_a_host_operator_inside_a_subgraph_is_refused():
    branch = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["nz"], name="inner")],
        "branch", [], [helper.make_tensor_value_info("nz", I64, None)],
    )
    nodes = [
        helper.make_node("NonZero", ["x"], ["a"]),
        helper.make_node("If", ["c"], ["b"], name="choose", then_branch=branch, else_branch=branch),
    ]
    model = model_of(nodes, {"x": (F, [4]), "c": (TensorProto.BOOL, [])}, {"a": I64, "b": I64})
    with pytest.raises(StratoError, match=r"node 'inner' \(NonZero\) in a subgraph of node 'choose'"):
        strato.compile(model, cache=False)


def test_other_unsupported_operators_keep_their_diagnostic():
    nodes = [
        helper.make_node("NonZero", ["x"], ["a"]),
        helper.make_node("ImageDecoder", ["bytes"], ["img"], name="decode"),
    ]
    model = model_of(nodes, {"x": (F, [4]), "bytes": (TensorProto.UINT8, [10])}, {"a": I64, "img": TensorProto.UINT8})
    with pytest.raises(StratoError, match=r"ImageDecoder"):
        strato.compile(model, cache=False)


def test_a_text_pipeline_normalizes_on_the_host_and_counts_in_compiled_code():
    """StringNormalizer (host) -> TfIdfVectorizer on its strings (compiled, as ids) ->
    MatMul, against ONNX's reference."""
    from onnx.reference import ReferenceEvaluator

    weights = np.random.default_rng(3).standard_normal((4, 2)).astype(np.float32)
    nodes = [
        helper.make_node(
            "StringNormalizer", ["text"], ["words"], case_change_action="LOWER",
            is_case_sensitive=0, stopwords=["the", "a"],
        ),
        helper.make_node(
            "TfIdfVectorizer", ["words"], ["counts"], mode="TF", min_gram_length=1,
            max_gram_length=2, max_skip_count=0, ngram_counts=[0, 2],
            ngram_indexes=[0, 1, 2, 3], pool_strings=["cat", "dog", "cat", "dog", "dog", "cat"],
        ),
        helper.make_node("MatMul", ["counts", "w"], ["y"]),
    ]
    model = model_of(
        nodes, {"text": (TensorProto.STRING, [1, 7])}, {"y": F, "words": TensorProto.STRING},
        {"w": weights},
    )
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, StagedModel)
    reference = ReferenceEvaluator(model)
    for text in (["The", "cat", "DOG", "a", "dog", "Cat", "dog"], ["a", "the", "x", "cat", "cat", "dog", "A"]):
        feed = np.array([text], dtype=object)
        y, words = compiled(feed)
        expected_y, expected_words = reference.run(None, {"text": feed})
        assert words.tolist() == expected_words.tolist()
        np.testing.assert_allclose(y, expected_y, rtol=1e-6)


def test_a_dynamic_batch_beside_host_operators_stages_and_specializes_each_part():
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("NonZero", ["r"], ["nz"]),
            helper.make_node("Range", ["s", "l", "d"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
            *(helper.make_tensor_value_info(n, TensorProto.INT64, []) for n in "sld"),
        ],
        [
            helper.make_tensor_value_info("nz", TensorProto.INT64, None),
            helper.make_tensor_value_info("y", TensorProto.INT64, None),
        ],
    )
    model = strato.compile(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert isinstance(model, StagedModel) and model.host_ops == ["NonZero", "Range"]
    for batch in (2, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32)
        nonzero, steps = model(x, np.array(1), np.array(9), np.array(3))
        np.testing.assert_array_equal(nonzero, np.array(np.nonzero(np.maximum(x, 0))))
        np.testing.assert_array_equal(steps, np.arange(1, 9, 3))


# --- control flow decided at run time: a Loop's body or an If's branches compiled alone ---

B = TensorProto.BOOL


def loop_body(nodes, carried, scans=(), initializers=()) -> onnx.GraphProto:
    """A Loop body: (i, cond_in, *carried) -> (cond_out, *carried outputs, *scans); each
    carried entry is (name in, name out, element type)."""
    return helper.make_graph(
        nodes,
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            *(helper.make_tensor_value_info(n, t, None) for n, _, t in carried),
        ],
        [
            helper.make_tensor_value_info("cond_out", B, []),
            *(helper.make_tensor_value_info(out, t, None) for _, out, t in carried),
            *(helper.make_tensor_value_info(n, t, None) for n, t in scans),
        ],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(initializers).items()],
    )


def test_a_loop_of_a_run_time_trip_count_runs_its_compiled_body():
    """y <- y * 0.5 + x, M times (M a graph input), each iteration's sum stacked; x * w
    is computed by a compiled part before the loop and read by the body from outside."""
    model = _run_time_trip_count_model()
    for trips in (0, 1, 5):
        feeds = {"M": np.array(trips, np.int64), "x": np.float32([1, -1, 2]), "y0": np.ones(3, np.float32)}
        compiled = check(model, feeds, parts=2)
    assert compiled.host_ops == ["Loop"]
    assert compiled(*feeds.values())[1].shape == (5,)


def _run_time_trip_count_model(constant_start: bool = False) -> onnx.ModelProto:
    """y <- y * 0.5 + x * w, M times from y0 (a graph input, or with `constant_start`
    an initializer of ones), each iteration's sum stacked; then z = y * y."""
    body = loop_body(
        [
            helper.make_node("Mul", ["y_in", "half"], ["h"]),
            helper.make_node("Add", ["h", "xw"], ["y_out"]),
            helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        [("y_in", "y_out", F)],
        [("s", F)],
        {"half": np.float32(0.5)},
    )
    return model_of(
        [
            helper.make_node("Mul", ["x", "w"], ["xw"]),
            helper.make_node("Loop", ["M", "", "y0"], ["y", "sums"], body=body),
            helper.make_node("Mul", ["y", "y"], ["z"]),
        ],
        {"M": (I64, []), "x": (F, [3]), **({} if constant_start else {"y0": (F, [3])})},
        {"z": F, "sums": F},
        {"w": np.float32([1, 2, 3]), **({"y0": np.ones(3, np.float32)} if constant_start else {})},
    )


def _loop_step(compiled: StagedModel):
    (step,) = [step for step in compiled.steps if getattr(step, "node", None) is not None]
    return step


@pytest.mark.parametrize("constant_start", [False, True], ids=["input", "initializer"])
def test_a_loop_run_again_runs_in_compiled_chunks_at_every_trip_count(constant_start):
    """The loop above, run on the host at its first call (12 iterations), then compiled
    to run chunks of 16 (a graph.scan that stops): every trip count after runs them,
    one that takes three chunks (after which chunks of 64 are compiled), one chunk's
    worth exactly, and none at all."""
    model = _run_time_trip_count_model(constant_start)
    x, y0 = np.float32([1, -1, 2]), np.ones(3, np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = strato.compile(model, cache=False)
    for trips in (12, 13, 40, 16, 0, 1):
        feeds = {"M": np.array(trips, np.int64), "x": x, **({} if constant_start else {"y0": y0})}
        for a, e in zip(compiled(*feeds.values()), session.run(None, feeds), strict=True):
            assert a.shape == e.shape
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    chunks = _loop_step(compiled)._chunks
    assert chunks.compiled is not None and chunks.capacity == 64 and not chunks.refused


@pytest.mark.parametrize("constant_trips", [False, True], ids=["input", "initializer"])
def test_a_loop_whose_body_stops_it_runs_in_chunks_and_gives_the_rows_it_ran(constant_trips):
    """A generation-style loop: y <- y * 0.5 + x and i * y stacked (two scan outputs,
    one of a second element type), until the sum of y passes a run-time limit or the
    trip count runs out. From the second call it runs in compiled chunks (of 16
    iterations); calls that stop after one iteration, midway, or never all give
    exactly the rows their iterations ran, as onnxruntime does."""
    body = loop_body(
        [
            helper.make_node("Mul", ["y_in", "half"], ["h"]),
            helper.make_node("Add", ["h", "x"], ["y_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Mul", ["y_out", "fi"], ["scaled"]),
            helper.make_node("Cast", ["y_out"], ["rounded"], to=I64),
            helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Less", ["s", "limit"], ["cond_out"]),
        ],
        [("y_in", "y_out", F)],
        [("scaled", F), ("rounded", I64)],
        {"half": np.float32(0.5)},
    )
    model = model_of(
        [helper.make_node("Loop", ["M", "", "y0"], ["y", "rows", "ints"], body=body)],
        {"x": (F, [3]), "y0": (F, [3]), "limit": (F, []), **({} if constant_trips else {"M": (I64, [])})},
        {"y": F, "rows": F, "ints": I64},
        {"M": np.array(12, np.int64)} if constant_trips else {},
    )  # fmt: skip
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, StagedModel)
    ran = []
    for limit in (100.0, 100.0, -1.0, 6.2, 100.0, 5.5):
        feeds = {"x": np.float32([1, 2, 0.5]), "y0": np.ones(3, np.float32), "limit": np.array(limit, np.float32)}
        if not constant_trips:
            feeds["M"] = np.array(12, np.int64)
        expected = session.run(None, feeds)
        actual = compiled(*feeds.values())
        for a, e in zip(actual, expected, strict=True):
            assert a.shape == e.shape and a.dtype == e.dtype
            np.testing.assert_allclose(a, e, rtol=1e-6)
        ran.append(len(expected[1]))
    assert ran == [12, 12, 1, 3, 12, 2]  # never stopped, stopped at once, midway
    chunks = _loop_step(compiled)._chunks
    assert chunks.compiled is not None and chunks.capacity == 16 and not chunks.refused
    assert repr(compiled).endswith("host Loop (in compiled chunks of 16 iterations)>")


def test_a_while_loop_with_scan_outputs_runs_in_compiled_chunks():
    """No trip count (as TorchScript writes a `for` with a `break`, or a `while`): the
    body's condition alone stops the loop, here after a data-dependent number of
    iterations (y doubles until its sum passes the limit); its rows are stacked."""
    body = loop_body(
        [
            helper.make_node("Add", ["y_in", "y_in"], ["y_out"]),
            helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Less", ["s", "limit"], ["cond_out"]),
        ],
        [("y_in", "y_out", F)],
        [("s", F)],
    )
    model = model_of(
        [helper.make_node("Loop", ["", "go", "y0"], ["y", "sums"], body=body)],
        {"go": (TensorProto.BOOL, []), "y0": (F, [3]), "limit": (F, [])}, {"y": F, "sums": F},
    )  # fmt: skip
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = strato.compile(model, cache=False)
    for go, limit in ((True, 1e3), (True, 1e6), (True, 1e30), (False, 1e3), (True, 1.0)):
        feeds = {"go": np.array(go), "y0": np.float32([1, 2, 3]), "limit": np.array(limit, np.float32)}
        for a, e in zip(compiled(*feeds.values()), session.run(None, feeds), strict=True):
            assert a.shape == e.shape
            np.testing.assert_allclose(a, e, rtol=1e-6)
    chunks = _loop_step(compiled)._chunks
    assert chunks.compiled is not None and not chunks.refused


@pytest.fixture(scope="module")
def short_chunks():
    """The generation-style loop below, staged with chunks of 2 to 8 iterations (so
    that calls run several, and grow them), and run once on the host and once more so
    that its chunks are compiled."""
    body = loop_body(
        [
            helper.make_node("Mul", ["y_in", "half"], ["h"]),
            helper.make_node("Add", ["h", "x"], ["y_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Mul", ["y_out", "fi"], ["scaled"]),
            helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Less", ["s", "limit"], ["cond_out"]),
        ],
        [("y_in", "y_out", F)],
        [("scaled", F)],
        {"half": np.float32(0.5)},
    )
    model = model_of(
        [helper.make_node("Loop", ["M", "go", "y0"], ["y", "rows"], body=body)],
        {"M": (I64, []), "go": (B, []), "x": (F, [3]), "y0": (F, [3]), "limit": (F, [])},
        {"y": F, "rows": F},
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("strato.staged.CHUNK_ITERATIONS", (2, 8))
        compiled = strato.compile(model, cache=False)
        feeds = [np.array(3), np.array(True), np.ones(3, np.float32), np.zeros(3, np.float32), np.array(1e9, np.float32)]
        for _ in range(2):
            compiled(*feeds)
        yield compiled


def _stopping_reference(trips, go, x, y0, limit):
    """What the loop of `short_chunks` gives, by ONNX Loop's rules."""
    y, rows, i = y0, [], 0
    while go and i < trips:
        y = (y * np.float32(0.5) + x).astype(np.float32)
        rows.append(y * np.float32(i))
        go = bool(np.float32(y.sum(dtype=np.float32)) < limit)
        i += 1
    return y, np.array(rows, np.float32).reshape(len(rows), 3)


@settings(max_examples=25, deadline=None)
@given(
    trips=st.integers(0, 40), go=st.booleans(), limit=st.floats(-10, 40, width=32),
    x=st.lists(st.floats(-2, 4, width=32), min_size=3, max_size=3),
)  # fmt: skip
def test_compiled_chunks_give_the_loops_rows_at_any_trip_count_and_stop(short_chunks, trips, go, limit, x):
    """Drawn trip counts, first conditions, limits and inputs: the chunks (of 2 to 8
    iterations, grown as calls go) give the rows the loop ran, no more, and its last
    state, as the loop's own rules do."""
    feeds = [np.array(trips), np.array(go), np.float32(x), np.ones(3, np.float32), np.array(limit, np.float32)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("strato.staged.CHUNK_ITERATIONS", (2, 8))
        y, rows = short_chunks(*feeds)
    want_y, want_rows = _stopping_reference(*feeds)
    assert rows.shape == want_rows.shape
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rows, want_rows, rtol=1e-5, atol=1e-5)
    assert not _loop_step(short_chunks)._chunks.refused


def test_a_loop_whose_state_grows_stays_on_the_host():
    """A trip count that comes back, but a carried value that grows each iteration: no
    graph.scan can carry it, so the body keeps running per iteration."""
    body = loop_body(
        [
            helper.make_node("Concat", ["y_in", "one"], ["y_out"], axis=0),
            helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        [("y_in", "y_out", F)],
        [("s", F)],
        {"one": np.float32([1])},
    )
    model = model_of(
        [helper.make_node("Loop", ["M", "", "y0"], ["y", "sums"], body=body)],
        {"M": (I64, []), "y0": (F, [1])}, {"y": F, "sums": F},
    )  # fmt: skip
    feeds = {"M": np.array(20, np.int64), "y0": np.ones(1, np.float32)}
    compiled = check(model, feeds, parts=0)
    for _ in range(2):
        assert compiled(*feeds.values())[0].shape == (21,)
    step = _loop_step(compiled)
    assert step._chunks.refused
    # the body ran at 20 sizes of its state: all kept (small), so no call compiles again
    assert len(step.body.sizes) == 20


def test_a_while_loop_whose_state_grows_runs_until_its_condition_fails():
    """A generation loop: append twice the last element while the sum is below a limit
    (the body computes the condition from run-time values; the state grows each step)."""
    body = loop_body(
        [
            helper.make_node("Slice", ["y_in", "m1", "end"], ["last"]),
            helper.make_node("Mul", ["last", "two"], ["next"]),
            helper.make_node("Concat", ["y_in", "next"], ["y_out"], axis=0),
            helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"]),
        ],
        [("y_in", "y_out", F)],
        initializers={"m1": np.int64([-1]), "end": np.int64([2**40])},
    )
    model = model_of(
        [helper.make_node("Loop", ["", "go", "y0"], ["y"], body=body)],
        {"limit": (F, []), "go": (B, []), "y0": (F, [1])},
        {"y": F},
        {"two": np.float32(2)},
    )
    for limit, length in ((0.5, 2), (10.0, 4), (100.0, 7)):
        feeds = {"limit": np.array(limit, np.float32), "go": np.array(True), "y0": np.ones(1, np.float32)}
        compiled = check(model, feeds, parts=0)
        assert compiled(*feeds.values())[0].shape == (length,)
    feeds["go"] = np.array(False)  # no iteration: the initial state
    np.testing.assert_array_equal(compiled(*feeds.values())[0], feeds["y0"])


def branches_of_other_shapes() -> onnx.ModelProto:
    """if sum(x) > 0: concat(x, x) else: x * 3, then + 1: the branches' shapes differ,
    so no select can pick between them."""
    then_branch = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["t"], axis=0)], "then", [],
        [helper.make_tensor_value_info("t", F, None)],
    )  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "three"], ["e"])], "else", [],
        [helper.make_tensor_value_info("e", F, None)],
    )  # fmt: skip
    return model_of(
        [
            helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["c"]),
            helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch),
            helper.make_node("Add", ["y", "one"], ["z"]),
        ],
        {"x": (F, [3])},
        {"z": F},
        {"zero": np.float32(0), "one": np.float32(1), "three": np.float32(3)},
    )


@pytest.mark.parametrize("x", [[1, 2, 3], [-1, -2, 0]])
def test_an_if_whose_branches_differ_in_shape_runs_the_branch_its_condition_takes(x):
    compiled = check(branches_of_other_shapes(), {"x": np.float32(x)}, parts=2)
    assert compiled.host_ops == ["If"]


def test_an_if_with_a_branch_that_could_fault_on_the_other_branchs_data_runs_one_branch():
    """The then branch gathers at run-time positions, valid only when it is taken: an
    If that computes both branches could read out of bounds, so it runs one, compiled
    with the model as a graph.if (no host step)."""
    then_branch = helper.make_graph(
        [helper.make_node("Gather", ["table", "index"], ["t"], axis=0)], "then", [],
        [helper.make_tensor_value_info("t", F, None)],
    )  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["fallback"], ["e"])], "else", [],
        [helper.make_tensor_value_info("e", F, None)],
    )  # fmt: skip
    model = model_of(
        [
            helper.make_node("Less", ["index", "size"], ["inside"]),
            helper.make_node("If", ["inside"], ["y"], then_branch=then_branch, else_branch=else_branch),
        ],
        {"index": (I64, []), "fallback": (F, [])},
        {"y": F},
        {"table": np.float32([10, 20, 30]), "size": np.int64(3)},
    )
    compiled = strato.compile(model, cache=False)
    assert not isinstance(compiled, StagedModel)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for index in (1, 7):
        feeds = {"index": np.array(index, np.int64), "fallback": np.array(-1, np.float32)}
        (expected,) = session.run(None, feeds)
        (actual,) = compiled(*feeds.values())
        np.testing.assert_array_equal(actual, expected)


def test_a_run_time_loop_inside_an_unrolled_loop_is_refused_naming_both():
    inner = loop_body(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Identity", ["a_in"], ["a_out"])],
        [("a_in", "a_out", F)],
    )
    outer_body = loop_body(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Loop", ["n", "", "b_in"], ["b_out"], body=inner, name="inner"),
        ],
        [("b_in", "b_out", F)],
    )
    model = model_of(
        [helper.make_node("Loop", ["three", "", "x"], ["y"], body=outer_body, name="outer")],
        {"n": (I64, []), "x": (F, [2])},
        {"y": F},
        {"three": np.int64(3)},
    )
    with pytest.raises(StratoError, match="node 'inner' .* subgraph of node 'outer'.*known only when the model runs"):
        strato.compile(model, cache=False)


def test_an_if_after_a_run_time_loop_runs_on_the_host_too():
    """What torch.jit.script exports for `for _ in range(steps): h = tanh(h * w)`, then
    `h * 2 if h.sum() > 0 else cat([h, h])`: the If is in the part after the Loop, which
    is compiled for the sizes the loop gives and staged in turn."""
    body = loop_body(
        [
            helper.make_node("Mul", ["h_in", "w"], ["hw"]),
            helper.make_node("Tanh", ["hw"], ["h_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        [("h_in", "h_out", F)],
    )
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["h", "two"], ["t"])], "then", [],
        [helper.make_tensor_value_info("t", F, None)],
    )  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Concat", ["h", "h"], ["e"], axis=0)], "else", [],
        [helper.make_tensor_value_info("e", F, None)],
    )  # fmt: skip
    model = model_of(
        [
            helper.make_node("Loop", ["steps", "", "x"], ["h"], body=body),
            helper.make_node("ReduceSum", ["h"], ["s"], keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["c"]),
            helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch),
        ],
        {"x": (F, [2, 3]), "steps": (I64, [])},
        {"y": F},
        {"w": np.float32([1, -2, 0.5]), "two": np.float32(2), "zero": np.float32(0)},
    )
    rng = np.random.default_rng(0)
    for steps in (0, 2):
        for _ in range(3):
            feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32), "steps": np.array(steps, np.int64)}
            check(model, feeds, parts=1)
