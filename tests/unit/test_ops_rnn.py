"""Recurrent operators (graph.lstm): ONNX import against onnxruntime, the lowering
through the te and loop interpreters and the LLVM JIT, diagnostics, the ONNX node tests
and the LSTM layers of the zoo's language model. GRU and RNN (graph.gru, graph.rnn):
against onnxruntime through the graph interpreter and the JIT, diagnostics and node
tests; their own cases are in test_ops_gru_rnn.py."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import MemRefType
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph, te
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import loop_entry_function, output_flags, run_loops
from strato.interpreters.te import run_te
from strato.pipeline import LOWER_TO_LOOPS, run_pipeline
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

OUTPUTS = ("Y", "Y_h", "Y_c")


@dataclass(frozen=True)
class LstmCase:
    """One ONNX LSTM node: sizes, direction and which optional inputs it has."""

    steps: int = 3
    batch: int = 2
    input_size: int = 4
    hidden: int = 5
    direction: str = "forward"
    bias: bool = True
    initial_state: bool = False
    peepholes: bool = False
    sequence_lens: tuple[int, ...] | None = None
    layout: int = 0
    weights_as_inputs: bool = False
    outputs: tuple[str, ...] = OUTPUTS

    @property
    def directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    def arrays(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Every input of the node by ONNX name, X first."""
        rng = np.random.default_rng(seed)
        d, b, h = self.directions, self.batch, self.hidden

        def normal(*shape: int) -> np.ndarray:
            return rng.normal(0.0, 0.6, shape).astype(np.float32)

        arrays = {"X": normal(self.steps, b, self.input_size)}
        arrays["W"] = normal(d, 4 * h, self.input_size)
        arrays["R"] = normal(d, 4 * h, h)
        if self.bias:
            arrays["B"] = normal(d, 8 * h)
        if self.sequence_lens is not None:
            arrays["sequence_lens"] = np.array(self.sequence_lens, np.int32)
        if self.initial_state:
            arrays["initial_h"] = normal(d, b, h)
            arrays["initial_c"] = normal(d, b, h)
        if self.peepholes:
            arrays["P"] = normal(d, 3 * h)
        if self.layout == 1:
            for name in ("X", "initial_h", "initial_c"):
                if name in arrays:
                    arrays[name] = np.ascontiguousarray(arrays[name].transpose(1, 0, 2))
        return arrays

    def output_shapes(self) -> dict[str, list[int]]:
        s, d, b, h = self.steps, self.directions, self.batch, self.hidden
        if self.layout == 1:
            return {"Y": [b, s, d, h], "Y_h": [b, d, h], "Y_c": [b, d, h]}
        return {"Y": [s, d, b, h], "Y_h": [d, b, h], "Y_c": [d, b, h]}

    def model(self, seed: int = 0, **attributes) -> onnx.ModelProto:
        """The node with X (and, when `weights_as_inputs`, every input) as a graph input
        and the other inputs as initializers."""
        arrays = self.arrays(seed)
        order = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")
        inputs = [name if name in arrays else "" for name in order]
        while inputs[-1] == "":
            inputs.pop()
        node_outputs = [name if name in self.outputs else "" for name in OUTPUTS]
        while node_outputs[-1] == "":
            node_outputs.pop()
        attributes.setdefault("direction", self.direction)
        attributes.setdefault("hidden_size", self.hidden)
        if self.layout:
            attributes.setdefault("layout", self.layout)
        node = helper.make_node("LSTM", inputs, node_outputs, name="lstm", **attributes)
        fed = [n for n in arrays if n == "X" or self.weights_as_inputs]
        graph_inputs = [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(arrays[n].dtype), arrays[n].shape
            )
            for n in fed
        ]
        initializers = [numpy_helper.from_array(a, n) for n, a in arrays.items() if n not in fed]
        shapes = self.output_shapes()
        graph_outputs = [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n]) for n in self.outputs
        ]
        onnx_graph = helper.make_graph([node], "lstm", graph_inputs, graph_outputs, initializers)
        model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        return model

    def feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        arrays = self.arrays(seed)
        return {n: a for n, a in arrays.items() if n == "X" or self.weights_as_inputs}


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def expected_outputs(case: LstmCase, seed: int = 0) -> list[np.ndarray]:
    """onnxruntime's outputs for `case`; onnxruntime has no batch-major LSTM, so a
    layout-1 case runs as its layout-0 twin with the axes swapped around it."""
    if case.layout == 0:
        return onnxruntime_outputs(case.model(seed), case.feeds(seed))
    twin = replace(case, layout=0)
    outputs = onnxruntime_outputs(twin.model(seed), twin.feeds(seed))
    perms = {"Y": (2, 0, 1, 3), "Y_h": (1, 0, 2), "Y_c": (1, 0, 2)}
    return [out.transpose(perms[name]) for name, out in zip(case.outputs, outputs, strict=True)]


def assert_close(actual, expected) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)


def run_jit(module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Compile a loop-level module with the LLVM JIT and run its entry function."""
    from strato.targets.llvm.kernels import compile_loops

    entry = loop_entry_function(module)
    given_inputs = iter(inputs)
    args, outputs = [], []
    for type_, is_output in zip(entry.function_type.inputs.data, output_flags(entry)):
        if not is_output:
            args.append(np.ascontiguousarray(next(given_inputs)))
            continue
        assert isinstance(type_, MemRefType)
        out = np.full(type_.get_shape(), np.nan, numpy_dtype(type_))
        args.append(out)
        outputs.append(out)
    compile_loops(module).function(entry.sym_name.data)(*args)
    return outputs


CASES = {
    "forward": LstmCase(),
    "reverse": LstmCase(direction="reverse"),
    "bidirectional": LstmCase(direction="bidirectional"),
    "no_bias": LstmCase(bias=False),
    "initial_state": LstmCase(initial_state=True),
    "peepholes": LstmCase(initial_state=True, peepholes=True),
    "peepholes_zero_state": LstmCase(peepholes=True),
    "bidirectional_everything": LstmCase(
        direction="bidirectional", initial_state=True, peepholes=True
    ),
    "batch_major": LstmCase(layout=1, initial_state=True),
    "batch_major_bidirectional": LstmCase(layout=1, direction="bidirectional"),
    "one_step": LstmCase(steps=1, batch=1),
    "full_sequence_lens": LstmCase(sequence_lens=(3, 3)),
    "short_sequences": LstmCase(sequence_lens=(2, 1), initial_state=True),
    "short_sequences_reverse": LstmCase(direction="reverse", sequence_lens=(1, 3)),
    "short_sequences_bidirectional": LstmCase(
        direction="bidirectional", sequence_lens=(3, 2), initial_state=True
    ),
    "empty_sequence": LstmCase(sequence_lens=(0, 2), initial_state=True),
    "weights_as_inputs": LstmCase(weights_as_inputs=True, initial_state=True, peepholes=True),
    "only_y": LstmCase(outputs=("Y",)),
    "only_y_c": LstmCase(outputs=("Y_c",)),
}


# -- import and the graph interpreter --------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_graph_interpreter_matches_onnxruntime(name):
    case = CASES[name]
    model, feeds = case.model(), case.feeds()
    imported = import_onnx(model)
    assert imported.output_names == list(case.outputs)
    actual = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    assert_close(actual, expected_outputs(case))


def test_import_gives_one_lstm_op_with_its_operands():
    module = import_onnx(CASES["bidirectional_everything"].model()).module
    (lstm,) = [op for op in module.walk() if isinstance(op, graph.LstmOp)]
    assert lstm.lstm_direction == graph.LstmDirection.BIDIRECTIONAL
    assert lstm.bias is not None and lstm.peepholes is not None
    assert lstm.initial_h is not None and lstm.initial_c is not None
    assert lstm.sequence_lens is None
    assert graph.pattern_kind_of(lstm) == graph.PatternKind.OPAQUE


def test_full_length_sequence_lens_is_dropped():
    module = import_onnx(CASES["full_sequence_lens"].model()).module
    (lstm,) = [op for op in module.walk() if isinstance(op, graph.LstmOp)]
    assert lstm.sequence_lens is None


def test_batch_major_lstm_is_transposed_in_and_out():
    module = import_onnx(CASES["batch_major"].model()).module
    perms = [op.permutation for op in module.walk() if isinstance(op, graph.TransposeOp)]
    # X is a graph input (a transpose); initial_h and initial_c are constants,
    # transposed at import; Y, Y_h and Y_c are transposed back.
    assert perms == [(1, 0, 2), (2, 0, 1, 3), (1, 0, 2), (1, 0, 2)]


@st.composite
def lstm_cases(draw) -> LstmCase:
    steps = draw(st.integers(1, 4))
    batch = draw(st.integers(1, 3))
    lens = None
    if draw(st.booleans()):
        lens = tuple(draw(st.lists(st.integers(0, steps), min_size=batch, max_size=batch)))
    return LstmCase(
        steps=steps,
        batch=batch,
        input_size=draw(st.integers(1, 4)),
        hidden=draw(st.integers(1, 4)),
        direction=draw(st.sampled_from(["forward", "reverse", "bidirectional"])),
        bias=draw(st.booleans()),
        initial_state=draw(st.booleans()),
        peepholes=draw(st.booleans()),
        sequence_lens=lens,
        layout=draw(st.sampled_from([0, 1])),
    )


@given(case=lstm_cases(), seed=st.integers(0, 2**16))
def test_graph_semantics_match_onnxruntime_on_random_lstms(case, seed):
    model, feeds = case.model(seed), case.feeds(seed)
    imported = import_onnx(model)
    actual = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    assert_close(actual, expected_outputs(case, seed))


# -- the strategy: te, loops, LLVM -------------------------------------------------------

LOWERED_CASES = [
    "forward",
    "bidirectional_everything",
    "batch_major",
    "short_sequences_bidirectional",
    "empty_sequence",
    "one_step",
]


@pytest.mark.parametrize("name", LOWERED_CASES)
def test_te_and_loop_interpreters_match_onnxruntime(name):
    case = CASES[name]
    model, feeds = case.model(), case.feeds()
    expected = expected_outputs(case)
    imported = import_onnx(model)
    inputs = [feeds[n] for n in imported.input_names]
    ctx, module = make_context(), imported.module
    run_pipeline(ctx, module, "convert-graph-to-te,te-inline-stages")
    module.verify()
    assert_close(run_te(module, inputs), expected)
    run_pipeline(ctx, module, "convert-te-to-loops")
    module.verify()
    assert_close(run_loops(module, inputs), expected)


@pytest.mark.parametrize("name", ["bidirectional_everything", "short_sequences_reverse"])
def test_llvm_jit_matches_onnxruntime(name):
    case = CASES[name]
    model, feeds = case.model(), case.feeds()
    imported = import_onnx(model)
    module = imported.module
    run_pipeline(make_context(), module, LOWER_TO_LOOPS)
    actual = run_jit(module, [feeds[n] for n in imported.input_names])
    assert_close(actual, onnxruntime_outputs(model, feeds))


def lstm_primitive(case: LstmCase) -> te.PrimitiveOp:
    module = import_onnx(case.model()).module
    run_pipeline(make_context(), module, "convert-graph-to-te")
    (primitive,) = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    return primitive


def stage_names(primitive: te.PrimitiveOp) -> list[str]:
    return [op.stage.data for op in primitive.body.block.ops if isinstance(op, te.StageOp)]


def test_two_stages_a_step_after_one_input_projection():
    names = stage_names(lstm_primitive(LstmCase(steps=4, initial_state=True)))
    per_step = [f"lstm_{kind}_{step}" for step in range(4) for kind in ("gates", "state")]
    assert names == ["lstm_input", "lstm_input_bias", *per_step, "lstm_y", "lstm_y_h", "lstm_y_c"]


def test_first_step_without_initial_state_has_no_recurrent_reduction():
    names = stage_names(lstm_primitive(LstmCase(steps=2, bias=False)))
    assert names == ["lstm_input", "lstm_state_0", "lstm_gates_1", "lstm_state_1"] + [
        "lstm_y",
        "lstm_y_h",
        "lstm_y_c",
    ]


def test_both_directions_share_the_stages_of_a_step():
    names = stage_names(lstm_primitive(LstmCase(steps=2, direction="bidirectional")))
    assert len(names) == len(stage_names(lstm_primitive(LstmCase(steps=2))))


def test_inlining_keeps_every_state_but_the_last_a_stage():
    """Each step's state is read by the next step's reduction, so te-inline-stages
    leaves it alone: a later step never recomputes an earlier one. The last state is
    read by the larger output stages, so it stays a stage too."""
    from strato.transforms.te_inline_stages import inline_stages

    primitive = lstm_primitive(LstmCase(steps=5))
    inline_stages(primitive)
    names = stage_names(primitive)
    assert names == ["lstm_input"] + [
        name for step in range(5) for name in (f"lstm_gates_{step}", f"lstm_state_{step}")
    ][1:] + ["lstm_y", "lstm_y_h", "lstm_y_c"]
    # the bias is inlined; the bodies stay small
    sizes = [
        len(list(op.body.walk())) for op in primitive.body.block.ops if isinstance(op, te.StageOp)
    ]
    assert max(sizes) < 400


# -- sequence lengths known only at run time ---------------------------------------------

RUNTIME_LENGTHS = """
func.func @main(%x: tensor<3x2x2xf32>, %lens: tensor<2xi32>) -> (tensor<3x2x2x3xf32>, tensor<2x2x3xf32>, tensor<2x2x3xf32>) {
  %w = graph.constant dense<0.25> : tensor<2x12x2xf32>
  %r = graph.constant dense<-0.125> : tensor<2x12x3xf32>
  %y, %y_h, %y_c = graph.lstm bidirectional %x, %w, %r sequence_lens %lens : (tensor<3x2x2xf32>, tensor<2x12x2xf32>, tensor<2x12x3xf32>, tensor<2xi32>) -> (tensor<3x2x2x3xf32>, tensor<2x2x3xf32>, tensor<2x2x3xf32>)
  func.return %y, %y_h, %y_c : tensor<3x2x2x3xf32>, tensor<2x2x3xf32>, tensor<2x2x3xf32>
}
"""


@pytest.mark.parametrize("lengths", [(3, 3), (2, 0), (1, 3)])
def test_runtime_sequence_lens_through_every_level(lengths):
    x = np.random.default_rng(3).normal(size=(3, 2, 2)).astype(np.float32)
    lens = np.array(lengths, np.int32)
    expected = graph.lstm_reference(
        graph.LstmDirection.BIDIRECTIONAL,
        x,
        np.full((2, 12, 2), 0.25, np.float32),
        np.full((2, 12, 3), -0.125, np.float32),
        sequence_lens=lens,
    )
    ctx = make_context()
    module = Parser(ctx, RUNTIME_LENGTHS).parse_module()
    assert_close(run_graph(module, [x, lens]), expected)
    run_pipeline(ctx, module, "convert-graph-to-te,te-inline-stages")
    assert_close(run_te(module, [x, lens]), expected)
    run_pipeline(ctx, module, "convert-te-to-loops")
    assert_close(run_jit(module, [x, lens]), expected)


def test_reference_zeroes_steps_past_the_sequence():
    x = np.ones((3, 2, 1), np.float32)
    w = np.ones((1, 4, 1), np.float32)
    r = np.ones((1, 4, 1), np.float32)
    y, y_h, _ = graph.lstm_reference(
        graph.LstmDirection.FORWARD, x, w, r, sequence_lens=np.array([1, 3])
    )
    assert np.all(y[1:, 0, 0] == 0) and np.all(y[:, 0, 1] != 0)
    assert y_h[0, 0, 0] == y[0, 0, 0, 0]


# -- diagnostics ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attributes, reason",
    [
        (
            {"activations": ["Relu", "Tanh", "Tanh"]},
            r"activations \['Relu', 'Tanh', 'Tanh'\] are not supported",
        ),
        ({"clip": 3.0}, "attribute clip is not supported"),
        ({"input_forget": 1}, "attribute input_forget=1 .* is not supported"),
        ({"activation_alpha": [0.5]}, "attribute activation_alpha is not supported"),
        ({"layout": 2}, "attribute layout=2 is not supported"),
        ({"hidden_size": 6}, "hidden_size=6 differs from the hidden size 5"),
    ],
)
def test_unsupported_attributes_are_diagnostics_naming_the_node(attributes, reason):
    model = LstmCase().model(**attributes)
    with pytest.raises(ModelImportError, match=r"node 'lstm' \(LSTM\): " + reason):
        import_onnx(model)


def test_default_activations_spelled_out_are_accepted():
    case = LstmCase(direction="bidirectional")
    model = case.model(activations=["Sigmoid", "Tanh", "Tanh"] * 2)
    imported = import_onnx(model)
    feeds = case.feeds()
    actual = run_graph(imported.module, [feeds["X"]])
    assert_close(actual, onnxruntime_outputs(model, feeds))


def test_sequence_lens_out_of_range_is_a_diagnostic():
    model = LstmCase(sequence_lens=(4, 1)).model()
    with pytest.raises(ModelImportError, match=r"sequence_lens \[4, 1\] must be one length"):
        import_onnx(model)


def test_lstm_op_rejects_mismatched_weights():
    x = graph.ConstantOp.from_array(np.zeros((3, 2, 4), np.float32))
    w = graph.ConstantOp.from_array(np.zeros((1, 20, 3), np.float32))
    r = graph.ConstantOp.from_array(np.zeros((1, 20, 5), np.float32))
    op = graph.LstmOp("forward", x, w, r)
    with pytest.raises(VerifyException, match=r"w must have shape \[1, 20, 4\]"):
        op.verify()


# -- the ONNX node tests and the zoo ----------------------------------------------------------


def lstm_node_tests():
    """ONNX's LSTM node test cases. Importing their generator module alone makes just
    them (onnx's loader generates every node case, which takes a while)."""
    import onnx.backend.test.case.node.lstm  # noqa: F401
    from onnx.backend.test.case.node import _NodeTestCases

    return {case.name: case for case in _NodeTestCases if case.name.startswith("test_lstm")}


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_onnx_node_tests(mode):
    from strato.testing.onnx_node_tests import run_node_test

    cases = lstm_node_tests()
    assert len(cases) == 6
    for name, case in cases.items():
        if name == "test_lstm_with_peepholes":
            continue  # its sequence_lens is an int32 graph input: see the tests below
        result = run_node_test(case, mode=mode)
        assert result.passed, f"{name}: {result.reason}"


def test_onnx_peephole_node_test_with_lengths_known_at_import():
    case = lstm_node_tests()["test_lstm_with_peepholes"]
    (inputs, references), *_ = case.data_sets
    feeds = {value.name: np.asarray(array) for value, array in zip(case.model.graph.input, inputs)}
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    (lens,) = [value for value in model.graph.input if value.name == "sequence_lens"]
    model.graph.input.remove(lens)
    model.graph.initializer.append(numpy_helper.from_array(feeds.pop("sequence_lens"), lens.name))
    imported = import_onnx(model)
    actual = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    assert len(actual) == len(references) == 1
    np.testing.assert_allclose(actual[0], references[0], rtol=case.rtol, atol=case.atol)


def zoo_lstm_layers(model: onnx.ModelProto) -> list[tuple[str, dict[str, np.ndarray]]]:
    weights = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    layers = []
    for node in model.graph.node:
        if node.op_type == "LSTM":
            layers.append((node.name, {n: weights[n] for n in node.input[1:]}))
    return layers


def test_zoo_language_model_lstm_layers_match_onnxruntime():
    """The LSTM layers of build_lstm at a small size, each as a float-input model, fed
    the embedded tokens (layer 0) or the previous layer's output, through the LLVM JIT."""
    from strato.zoo.lstm import build_lstm

    hidden, steps = 32, 8
    zoo_model = build_lstm(vocab=100, hidden=hidden, seq_len=steps)
    embedding = numpy_helper.to_array(
        next(i for i in zoo_model.graph.initializer if i.name == "encoder.weight")
    )
    tokens = np.random.default_rng(0).integers(0, 100, (steps, 1))
    x = embedding[tokens]  # [seq, batch, hidden], what Gather gives
    for name, weights in zoo_lstm_layers(zoo_model):
        w, r, b = weights.values()
        node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y"], hidden_size=hidden)
        layer = helper.make_model(
            helper.make_graph(
                [node],
                name,
                [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [steps, 1, 1, hidden])],
                [numpy_helper.from_array(a, n) for n, a in zip("WRB", (w, r, b))],
            ),
            opset_imports=[helper.make_opsetid("", 17)],
        )
        layer.ir_version = 8
        (expected,) = onnxruntime_outputs(layer, {"X": x})
        module = import_onnx(layer).module
        run_pipeline(make_context(), module, LOWER_TO_LOOPS)
        (actual,) = run_jit(module, [x])
        np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-5)
        x = actual[:, 0]


# -- GRU and RNN ------------------------------------------------------------------------


def recurrent_model(
    op_type: str,
    *,
    steps: int = 3,
    batch: int = 2,
    input_size: int = 4,
    hidden: int = 3,
    direction: str = "forward",
    layout: int = 0,
    initial_h: bool = False,
    weights_as_inputs: bool = False,
    seed: int = 0,
    **attributes,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A GRU or RNN node with random weights and bias, and its graph inputs."""
    rng = np.random.default_rng(seed)
    gates = 3 if op_type == "GRU" else 1
    d = 2 if direction == "bidirectional" else 1

    def normal(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.7, shape).astype(np.float32)

    x = normal(batch, steps, input_size) if layout else normal(steps, batch, input_size)
    params = {
        "W": normal(d, gates * hidden, input_size),
        "R": normal(d, gates * hidden, hidden),
        "B": normal(d, 2 * gates * hidden),
    }
    names = ["X", "W", "R", "B"]
    if initial_h:
        params["sequence_lens"] = np.full(batch, steps, np.int32)
        params["initial_h"] = normal(batch, d, hidden) if layout else normal(d, batch, hidden)
        names += ["sequence_lens", "initial_h"]
    inputs = {"X": x}
    if weights_as_inputs:
        inputs.update({n: params.pop(n) for n in ("W", "R", "B")})
    node = helper.make_node(
        op_type, names, ["Y", "Y_h"], name="node", hidden_size=hidden, direction=direction,
        layout=layout, **attributes,
    )
    onnx_graph = helper.make_graph(
        [node],
        "recurrent",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Y_h")],
        [numpy_helper.from_array(a, n) for n, a in params.items()],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model)
    for value, known in zip(model.graph.output, inferred.graph.output):
        value.type.CopyFrom(known.type)
    return model, inputs


RECURRENT_CASES = {
    "gru": ("GRU", {}),
    "gru_reverse_initial_h": ("GRU", {"direction": "reverse", "initial_h": True}),
    "gru_bidirectional_linear_before_reset": (
        "GRU",
        {"direction": "bidirectional", "linear_before_reset": 1},
    ),
    "gru_batch_major": ("GRU", {"layout": 1, "initial_h": True}),
    "gru_runtime_weights": ("GRU", {"weights_as_inputs": True, "steps": 2}),
    "rnn": ("RNN", {}),
    "rnn_relu_bidirectional": (
        "RNN",
        {"direction": "bidirectional", "activations": ["Relu", "Tanh"]},
    ),
    "rnn_batch_major_one_step": ("RNN", {"layout": 1, "steps": 1, "initial_h": True}),
}


@pytest.mark.parametrize("name", RECURRENT_CASES)
def test_gru_and_rnn_match_onnxruntime(name):
    import strato

    op_type, options = RECURRENT_CASES[name]
    model, inputs = recurrent_model(op_type, **options)
    if options.get("layout"):
        # onnxruntime has no batch-major GRU or RNN: ONNX's reference is the oracle
        from onnx.reference import ReferenceEvaluator

        expected = ReferenceEvaluator(model).run(None, inputs)
    else:
        expected = onnxruntime_outputs(model, inputs)
    imported = import_onnx(model)
    actual = run_graph(imported.module, list(inputs.values()))
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
    for a, e in zip(strato.compile(model)(*inputs.values()), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_gru_imports_as_one_graph_gru():
    model, _ = recurrent_model("GRU", steps=4)
    ops = [op.name for op in import_onnx(model).function.body.block.ops]
    assert ops.count("graph.gru") == 1
    assert "graph.dense" not in ops


@pytest.mark.parametrize(
    "op_type, options, reason",
    [
        ("RNN", {"activations": ["Swish"]}, r"activation Swish is not one of Relu, Tanh"),
        ("GRU", {"clip": -1.0}, r"clip=-1.0 must be positive"),
        ("RNN", {"activations": ["Tanh", "Tanh"]}, r"activations \['Tanh', 'Tanh'\] must name 1 functions for each of 1 directions"),
    ],
)
def test_gru_and_rnn_diagnostics(op_type, options, reason):
    model, _ = recurrent_model(op_type, **options)
    with pytest.raises(ModelImportError, match=rf"node 'node' \({op_type}\): {reason}"):
        import_onnx(model)


def test_shorter_sequences_match_onnxruntime():
    model, inputs = recurrent_model("GRU", initial_h=True)
    lengths = [t for t in model.graph.initializer if t.name == "sequence_lens"][0]
    lengths.CopyFrom(numpy_helper.from_array(np.array([3, 1], np.int32), "sequence_lens"))
    imported = import_onnx(model)
    actual = run_graph(imported.module, list(inputs.values()))
    for a, e in zip(actual, onnxruntime_outputs(model, inputs), strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_gru_and_rnn_onnx_node_tests(mode):
    from test_ops_layout import check_node_tests

    check_node_tests(r"^test_(gru|rnn|simple_rnn)", mode, {})
