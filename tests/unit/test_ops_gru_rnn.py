"""graph.gru and graph.rnn: ONNX import against onnxruntime (directions, activations with
alpha and beta, clip, linear_before_reset, layouts, sequence lengths known at import or
at run time, initial state, optional outputs), random layers under hypothesis, the
lowering through the te and loop interpreters and the LLVM JIT, the stages a step
costs, and diagnostics."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from test_ops_rnn import assert_close, onnxruntime_outputs, run_jit
from xdsl.parser import Parser

from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph, te
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.pipeline import LOWER_TO_LOOPS, run_pipeline
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

OUTPUTS = ("Y", "Y_h")
GATES = {"GRU": 3, "RNN": 1}
DEFAULTS = {"GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
# Every ONNX activation with the parameters it takes (onnxruntime reads the alpha and
# beta lists in order, one value for each activation that takes the parameter).
PARAMETERS = {
    "Sigmoid": (False, False),
    "Tanh": (False, False),
    "Relu": (False, False),
    "Affine": (True, True),
    "LeakyRelu": (True, False),
    "ThresholdedRelu": (True, False),
    "ScaledTanh": (True, True),
    "HardSigmoid": (True, True),
    "Elu": (True, False),
    "Softsign": (False, False),
    "Softplus": (False, False),
}


@dataclass(frozen=True)
class CellCase:
    """One ONNX GRU or RNN node: sizes, direction, cell options and optional inputs."""

    op_type: str = "GRU"
    steps: int = 3
    batch: int = 2
    input_size: int = 4
    hidden: int = 3
    direction: str = "forward"
    bias: bool = True
    initial_h: bool = False
    sequence_lens: tuple[int, ...] | None = None
    layout: int = 0
    activations: tuple[str, ...] | None = None
    alphas: tuple[float, ...] = ()
    betas: tuple[float, ...] = ()
    clip: float | None = None
    linear_before_reset: bool = False
    lengths_as_input: bool = False
    outputs: tuple[str, ...] = OUTPUTS
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    def arrays(self, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        d, b, h, g = self.directions, self.batch, self.hidden, GATES[self.op_type]

        def normal(*shape: int) -> np.ndarray:
            return rng.normal(0.0, 0.7, shape).astype(np.float32)

        arrays = {"X": normal(self.steps, b, self.input_size)}
        arrays["W"] = normal(d, g * h, self.input_size)
        arrays["R"] = normal(d, g * h, h)
        if self.bias:
            arrays["B"] = normal(d, 2 * g * h)
        if self.sequence_lens is not None:
            arrays["sequence_lens"] = np.array(self.sequence_lens, np.int32)
        if self.initial_h:
            arrays["initial_h"] = normal(d, b, h)
        if self.layout == 1:
            for name in ("X", "initial_h"):
                if name in arrays:
                    arrays[name] = np.ascontiguousarray(arrays[name].transpose(1, 0, 2))
        return arrays

    def fed(self) -> set[str]:
        return {"X"} | ({"sequence_lens"} if self.lengths_as_input else set())

    def model(self, seed: int = 0) -> onnx.ModelProto:
        arrays = self.arrays(seed)
        order = ("X", "W", "R", "B", "sequence_lens", "initial_h")
        inputs = [name if name in arrays else "" for name in order]
        while inputs[-1] == "":
            inputs.pop()
        node_outputs = [name if name in self.outputs else "" for name in OUTPUTS]
        while node_outputs[-1] == "":
            node_outputs.pop()
        attributes = {"direction": self.direction, "hidden_size": self.hidden, **self.extra}
        if self.layout:
            attributes["layout"] = self.layout
        if self.activations is not None:
            attributes["activations"] = list(self.activations)
        if self.alphas:
            attributes["activation_alpha"] = list(self.alphas)
        if self.betas:
            attributes["activation_beta"] = list(self.betas)
        if self.clip is not None:
            attributes["clip"] = self.clip
        if self.linear_before_reset:
            attributes["linear_before_reset"] = 1
        node = helper.make_node(self.op_type, inputs, node_outputs, name="cell", **attributes)
        fed = [n for n in arrays if n in self.fed()]
        graph_inputs = [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(arrays[n].dtype), arrays[n].shape
            )
            for n in fed
        ]
        initializers = [numpy_helper.from_array(a, n) for n, a in arrays.items() if n not in fed]
        s, d, b, h = self.steps, self.directions, self.batch, self.hidden
        shapes = (
            {"Y": [b, s, d, h], "Y_h": [b, d, h]}
            if self.layout
            else {"Y": [s, d, b, h], "Y_h": [d, b, h]}
        )
        graph_outputs = [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n]) for n in self.outputs
        ]
        onnx_graph = helper.make_graph([node], "cell", graph_inputs, graph_outputs, initializers)
        model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        return model

    def feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        return {n: a for n, a in self.arrays(seed).items() if n in self.fed()}


def expected_outputs(case: CellCase, seed: int = 0) -> list[np.ndarray]:
    """onnxruntime's outputs; it has no batch-major GRU or RNN, so a layout-1 case runs
    as its layout-0 twin with the axes swapped around it."""
    if case.layout == 0:
        return onnxruntime_outputs(case.model(seed), case.feeds(seed))
    twin = replace(case, layout=0)
    outputs = onnxruntime_outputs(twin.model(seed), twin.feeds(seed))
    perms = {"Y": (2, 0, 1, 3), "Y_h": (1, 0, 2)}
    return [out.transpose(perms[name]) for name, out in zip(case.outputs, outputs, strict=True)]


def imported_inputs(case: CellCase, imported, seed: int = 0) -> list[np.ndarray]:
    feeds = case.feeds(seed)
    return [feeds[n] for n in imported.input_names]


CASES = {
    "gru": CellCase(),
    "gru_reverse_initial_h": CellCase(direction="reverse", initial_h=True),
    "gru_bidirectional_linear_before_reset": CellCase(
        direction="bidirectional", linear_before_reset=True, initial_h=True
    ),
    "gru_linear_before_reset_zero_state": CellCase(linear_before_reset=True),
    "gru_no_bias": CellCase(bias=False, initial_h=True),
    "gru_activations": CellCase(
        direction="bidirectional",
        activations=("HardSigmoid", "Softsign", "Sigmoid", "ScaledTanh"),
        alphas=(0.3, 0.9),
        betas=(0.4, 1.5),
    ),
    "gru_clip": CellCase(clip=0.4, initial_h=True),
    "gru_batch_major": CellCase(layout=1, initial_h=True, direction="bidirectional"),
    "gru_short_sequences": CellCase(sequence_lens=(3, 1), initial_h=True),
    "gru_short_sequences_bidirectional": CellCase(
        direction="bidirectional", sequence_lens=(2, 3), linear_before_reset=True
    ),
    "gru_empty_sequence": CellCase(sequence_lens=(0, 2), initial_h=True),
    "gru_lengths_at_run_time": CellCase(
        sequence_lens=(1, 3), lengths_as_input=True, direction="reverse"
    ),
    "gru_only_y_h": CellCase(outputs=("Y_h",)),
    "gru_only_y_batch_major": CellCase(outputs=("Y",), layout=1),
    "rnn": CellCase(op_type="RNN"),
    "rnn_bidirectional_initial_h": CellCase(
        op_type="RNN", direction="bidirectional", initial_h=True
    ),
    "rnn_activations": CellCase(
        op_type="RNN",
        direction="bidirectional",
        activations=("LeakyRelu", "Elu"),
        alphas=(0.2, 0.7),
    ),
    "rnn_affine_clip": CellCase(
        op_type="RNN", activations=("Affine",), alphas=(0.5,), betas=(0.25,), clip=1.0
    ),
    "rnn_thresholded_relu": CellCase(
        op_type="RNN", activations=("ThresholdedRelu",), alphas=(0.1,), initial_h=True
    ),
    "rnn_softplus_relu": CellCase(
        op_type="RNN", direction="bidirectional", activations=("Softplus", "Relu")
    ),
    "rnn_short_sequences_reverse": CellCase(
        op_type="RNN", direction="reverse", sequence_lens=(2, 0), initial_h=True
    ),
    "rnn_batch_major_one_step": CellCase(op_type="RNN", layout=1, steps=1, initial_h=True),
}


# -- import and the graph interpreter ---------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_graph_interpreter_matches_onnxruntime(name):
    case = CASES[name]
    imported = import_onnx(case.model())
    assert imported.output_names == list(case.outputs)
    actual = run_graph(imported.module, imported_inputs(case, imported))
    assert_close(actual, expected_outputs(case))


def test_import_gives_one_op_with_its_properties():
    module = import_onnx(CASES["gru_activations"].model()).module
    (gru,) = [op for op in module.walk() if isinstance(op, graph.GruOp)]
    assert gru.recurrence_direction == graph.LstmDirection.BIDIRECTIONAL
    assert [[f.syntax() for f in fs] for fs in gru.cell_functions()] == [
        ["hard_sigmoid(0.30000001192092896, 0.4000000059604645)", "softsign"],
        ["sigmoid", "scaled_tanh(0.8999999761581421, 1.5)"],
    ]
    assert not gru.resets_after_product and gru.cell_clip is None
    assert graph.pattern_kind_of(gru) == graph.PatternKind.OPAQUE
    module = import_onnx(CASES["gru_bidirectional_linear_before_reset"].model()).module
    (gru,) = [op for op in module.walk() if isinstance(op, graph.GruOp)]
    assert gru.resets_after_product and gru.initial_h is not None
    module = import_onnx(CASES["rnn_affine_clip"].model()).module
    (rnn,) = [op for op in module.walk() if isinstance(op, graph.RnnOp)]
    assert rnn.cell_clip == 1.0 and rnn.sequence_lens is None


def test_alphas_are_consumed_by_the_activations_that_take_one():
    """[Tanh, LeakyRelu] with activation_alpha [0.3]: Tanh takes no alpha, so 0.3 is
    LeakyRelu's (as onnxruntime reads it)."""
    case = CellCase(
        op_type="RNN", direction="bidirectional", activations=("Tanh", "LeakyRelu"), alphas=(0.3,)
    )
    module = import_onnx(case.model()).module
    (rnn,) = [op for op in module.walk() if isinstance(op, graph.RnnOp)]
    assert [f.alpha for (f,) in rnn.cell_functions()] == [0.0, pytest.approx(0.3)]
    assert_close(run_graph(module, [case.feeds()["X"]]), expected_outputs(case))


def test_full_length_sequence_lens_is_dropped():
    module = import_onnx(CellCase(sequence_lens=(3, 3)).model()).module
    (gru,) = [op for op in module.walk() if isinstance(op, graph.GruOp)]
    assert gru.sequence_lens is None


def test_batch_major_gru_is_transposed_in_and_out():
    module = import_onnx(CASES["gru_batch_major"].model()).module
    perms = [op.permutation for op in module.walk() if isinstance(op, graph.TransposeOp)]
    # X (an input) is transposed in; initial_h, a constant, at import; Y and Y_h out
    assert perms == [(1, 0, 2), (2, 0, 1, 3), (1, 0, 2)]


@st.composite
def cell_cases(draw) -> CellCase:
    op_type = draw(st.sampled_from(["GRU", "RNN"]))
    steps = draw(st.integers(1, 4))
    batch = draw(st.integers(1, 3))
    direction = draw(st.sampled_from(["forward", "reverse", "bidirectional"]))
    directions = 2 if direction == "bidirectional" else 1
    activations, alphas, betas = None, [], []
    if draw(st.booleans()):
        count = len(DEFAULTS[op_type]) * directions
        activations = tuple(
            draw(st.lists(st.sampled_from(sorted(PARAMETERS)), min_size=count, max_size=count))
        )
        parameter = st.sampled_from([0.125, 0.5, 0.75, 1.5])
        for name in activations:
            takes_alpha, takes_beta = PARAMETERS[name]
            if takes_alpha:
                alphas.append(draw(parameter))
            if takes_beta:
                betas.append(draw(parameter))
    lens = None
    if draw(st.booleans()):
        lens = tuple(draw(st.lists(st.integers(0, steps), min_size=batch, max_size=batch)))
    return CellCase(
        op_type=op_type,
        steps=steps,
        batch=batch,
        input_size=draw(st.integers(1, 4)),
        hidden=draw(st.integers(1, 4)),
        direction=direction,
        bias=draw(st.booleans()),
        initial_h=draw(st.booleans()),
        sequence_lens=lens,
        layout=draw(st.sampled_from([0, 1])),
        activations=activations,
        alphas=tuple(alphas),
        betas=tuple(betas),
        clip=draw(st.sampled_from([None, 0.5, 2.0])),
        linear_before_reset=op_type == "GRU" and draw(st.booleans()),
    )


@given(case=cell_cases(), seed=st.integers(0, 2**16))
def test_graph_semantics_match_onnxruntime_on_random_layers(case, seed):
    imported = import_onnx(case.model(seed))
    actual = run_graph(imported.module, imported_inputs(case, imported, seed))
    assert_close(actual, expected_outputs(case, seed))


# -- the strategy: te, loops, LLVM ------------------------------------------------------

LOWERED_CASES = [
    "gru",
    "gru_bidirectional_linear_before_reset",
    "gru_activations",
    "gru_short_sequences_bidirectional",
    "gru_empty_sequence",
    "gru_clip",
    "rnn_activations",
    "rnn_softplus_relu",
    "rnn_short_sequences_reverse",
    "rnn_batch_major_one_step",
]


@pytest.mark.parametrize("name", LOWERED_CASES)
def test_te_and_loop_interpreters_match_onnxruntime(name):
    case = CASES[name]
    expected = expected_outputs(case)
    imported = import_onnx(case.model())
    inputs = imported_inputs(case, imported)
    ctx, module = make_context(), imported.module
    run_pipeline(ctx, module, "convert-graph-to-te,te-inline-stages")
    module.verify()
    assert_close(run_te(module, inputs), expected)
    run_pipeline(ctx, module, "convert-te-to-loops")
    module.verify()
    assert_close(run_loops(module, inputs), expected)


@pytest.mark.parametrize(
    "name", ["gru_activations", "gru_lengths_at_run_time", "rnn_affine_clip", "rnn_activations"]
)
def test_llvm_jit_matches_onnxruntime(name):
    case = CASES[name]
    imported = import_onnx(case.model())
    module = imported.module
    run_pipeline(make_context(), module, LOWER_TO_LOOPS)
    actual = run_jit(module, imported_inputs(case, imported))
    assert_close(actual, expected_outputs(case))


@pytest.mark.parametrize("activation", sorted(PARAMETERS))
def test_every_activation_lowers_as_it_evaluates(activation):
    """Each activation on values both sides of 0 and of its alpha, through the te
    interpreter, against the op's own numpy semantics."""
    takes_alpha, takes_beta = PARAMETERS[activation]
    case = CellCase(
        op_type="RNN",
        steps=2,
        batch=3,
        hidden=4,
        initial_h=True,
        activations=(activation,),
        alphas=(0.6,) if takes_alpha else (),
        betas=(0.3,) if takes_beta else (),
    )
    imported = import_onnx(case.model())
    inputs = imported_inputs(case, imported)
    expected = run_graph(imported.module, inputs)
    run_pipeline(make_context(), imported.module, "convert-graph-to-te,te-inline-stages")
    assert_close(run_te(imported.module, inputs), expected)


def primitive_stages(case: CellCase) -> list[str]:
    module = import_onnx(case.model()).module
    run_pipeline(make_context(), module, "convert-graph-to-te")
    (primitive,) = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    return [op.stage.data for op in primitive.body.block.ops if isinstance(op, te.StageOp)]


def test_stages_of_a_gru_step():
    names = primitive_stages(CellCase(steps=3))
    per_step = [
        f"gru_{kind}_{step}"
        for step in (1, 2)
        for kind in ("gates", "reset", "candidate", "state")
    ]
    assert names == ["gru_input", "gru_input_bias", "gru_state_0", *per_step, "gru_y", "gru_y_h"]


def test_a_gru_resetting_after_the_product_has_two_stages_a_step():
    names = primitive_stages(CellCase(steps=3, initial_h=True, linear_before_reset=True))
    per_step = [f"gru_{kind}_{step}" for step in range(3) for kind in ("gates", "state")]
    assert names == ["gru_input", "gru_input_bias", *per_step, "gru_y", "gru_y_h"]


def test_stages_of_an_rnn_step():
    names = primitive_stages(CellCase(op_type="RNN", steps=2, bias=False, initial_h=True))
    per_step = [f"rnn_{kind}_{step}" for step in range(2) for kind in ("gates", "state")]
    assert names == ["rnn_input", *per_step, "rnn_y", "rnn_y_h"]


def test_inlining_keeps_each_step_a_stage():
    """Every state and reset stage is read by a reduction, so te-inline-stages keeps it:
    no step recomputes an earlier one."""
    from strato.transforms.te_inline_stages import inline_stages

    module = import_onnx(CellCase(steps=4).model()).module
    run_pipeline(make_context(), module, "convert-graph-to-te")
    (primitive,) = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    inline_stages(primitive)
    names = [op.stage.data for op in primitive.body.block.ops if isinstance(op, te.StageOp)]
    for step in range(1, 4):
        assert {f"gru_state_{step - 1}", f"gru_reset_{step}", f"gru_candidate_{step}"} <= set(
            names
        )


def test_gate_products_get_the_recurrent_gates_template():
    module = import_onnx(CellCase(steps=2, hidden=8, batch=1).model()).module
    run_pipeline(make_context(), module, f"{LOWER_TO_LOOPS},schedule-default")
    (kernel,) = [op for op in module.walk() if "schedule.template" in op.attributes]
    templates = {k: v.data for k, v in kernel.attributes["schedule.template"].data.items()}
    for stage in ("gru_input", "gru_gates_1", "gru_candidate_1"):
        assert templates[stage] == "lstm_gates"


# -- sequence lengths known only at run time ----------------------------------------------

RUNTIME_LENGTHS = """
func.func @main(%x: tensor<3x2x2xf32>, %lens: tensor<2xi32>) -> (tensor<3x2x2x3xf32>, tensor<2x2x3xf32>) {
  %w = graph.constant dense<0.25> : tensor<2x9x2xf32>
  %r = graph.constant dense<-0.125> : tensor<2x9x3xf32>
  %y, %y_h = graph.gru bidirectional %x, %w, %r sequence_lens %lens activations [sigmoid, tanh, hard_sigmoid(0.5, 0.25), relu] clip 2.0 : (tensor<3x2x2xf32>, tensor<2x9x2xf32>, tensor<2x9x3xf32>, tensor<2xi32>) -> (tensor<3x2x2x3xf32>, tensor<2x2x3xf32>)
  func.return %y, %y_h : tensor<3x2x2x3xf32>, tensor<2x2x3xf32>
}
"""


@pytest.mark.parametrize("lengths", [(3, 3), (2, 0), (1, 3)])
def test_runtime_sequence_lens_through_every_level(lengths):
    x = np.random.default_rng(3).normal(size=(3, 2, 2)).astype(np.float32)
    lens = np.array(lengths, np.int32)
    functions = [
        [graph.CellFunction.of("sigmoid"), graph.CellFunction.of("tanh")],
        [
            graph.CellFunction(graph.RnnActivation.HARD_SIGMOID, 0.5, 0.25),
            graph.CellFunction.of("relu"),
        ],
    ]
    expected = graph.gru_reference(
        graph.LstmDirection.BIDIRECTIONAL,
        x,
        np.full((2, 9, 2), 0.25, np.float32),
        np.full((2, 9, 3), -0.125, np.float32),
        sequence_lens=lens,
        activations=functions,
        clip=2.0,
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
    w = np.ones((1, 1, 1), np.float32)
    r = np.ones((1, 1, 1), np.float32)
    y, y_h = graph.rnn_reference(
        graph.LstmDirection.FORWARD, x, w, r, sequence_lens=np.array([1, 3])
    )
    assert np.all(y[1:, 0, 0] == 0) and np.all(y[:, 0, 1] != 0)
    assert y_h[0, 0, 0] == y[0, 0, 0, 0]


# -- diagnostics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, reason",
    [
        (
            CellCase(op_type="RNN", activations=("Swish",)),
            r"activation Swish is not one of Relu, Tanh, Sigmoid",
        ),
        (
            CellCase(activations=("Sigmoid",)),
            r"activations \['Sigmoid'\] must name 2 functions for each of 1 directions",
        ),
        (
            CellCase(op_type="RNN", activations=("Tanh",), alphas=(0.5,)),
            r"activation_alpha/activation_beta have 1/0 values more than the activations",
        ),
        (CellCase(clip=0.0), r"clip=0.0 must be positive"),
        (CellCase(layout=2), r"attribute layout=2 is not supported"),
        (CellCase(extra={"hidden_size": 7}), r"hidden_size=7 differs from the hidden size 3"),
        (CellCase(sequence_lens=(4, 1)), r"sequence_lens \[4, 1\] must be one length"),
        (CellCase(direction="sideways"), r"direction 'sideways' is not one of"),
    ],
)
def test_unsupported_attributes_are_diagnostics_naming_the_node(case, reason):
    with pytest.raises(ModelImportError, match=rf"node 'cell' \({case.op_type}\): {reason}"):
        import_onnx(case.model())


def test_gru_op_rejects_mismatched_weights():
    x = graph.ConstantOp.from_array(np.zeros((3, 2, 4), np.float32))
    w = graph.ConstantOp.from_array(np.zeros((1, 9, 3), np.float32))
    r = graph.ConstantOp.from_array(np.zeros((1, 9, 3), np.float32))
    with pytest.raises(Exception, match=r"w must have shape \[1, 9, 4\]"):
        graph.GruOp("forward", x, w, r).verify()
