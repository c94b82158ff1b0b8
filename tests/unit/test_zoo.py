"""The model zoo's ONNX builders: valid models, realistic structure, O(1) activations.

Every model is checked twice: shrunk (batch 2, small widths) it must pass the full ONNX
checker and run in onnxruntime to finite, O(1) outputs of the documented shape; at its
default size, built through the registry, it must pass the checker with the documented
input and output shapes and the parameter count of its reference implementation, and
run as well.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

from strato import zoo
from strato.testing.optional import optional_module
from strato.zoo.dcgan import build_dcgan
from strato.zoo.dqn import build_dqn
from strato.zoo.lstm import build_lstm
from strato.zoo.mobilenet import build_mobilenet_v2, make_divisible
from strato.zoo.resnet import build_resnet18
from strato.zoo.transformer import build_transformer

ort = optional_module("onnxruntime")

ALLOWED_OPS = frozenset(
    """
    Conv ConvTranspose Gemm MatMul Relu LeakyRelu Clip Sigmoid Tanh Erf Softmax
    LayerNormalization BatchNormalization Add Sub Mul Div Pow Sqrt Exp Log Neg Abs Max Min Sum
    MaxPool AveragePool GlobalAveragePool Flatten Reshape Transpose Concat Split Slice Pad
    Squeeze Unsqueeze Gather Shape Cast Identity Dropout Constant Expand Where Equal
    ReduceMean ReduceSum ReduceMax LSTM
    """.split()
)
"""The ONNX operators the zoo's models may use."""

SHAPE_INPUTS = {
    "Reshape": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Expand": (1,),
    "Slice": (1, 2, 3, 4),
    "Pad": (1, 2, 3),
    "Clip": (1, 2),
    "Split": (1,),
}
"""Inputs, by op type, that the compiler folds at import: they must be constants."""


@dataclass(frozen=True)
class ZooCase:
    name: str
    builder: Any
    small: dict[str, Any]
    small_input: tuple[int, ...]
    small_output: tuple[int, ...]
    full_input: tuple[int, ...]
    full_output: tuple[int, ...]
    parameters: int
    """Trainable parameters at the default size (BN running statistics excluded)."""
    ops: frozenset[str] = field(default_factory=frozenset)


CASES = [
    ZooCase(
        "resnet18",
        build_resnet18,
        {"image_size": 32, "width": 8, "num_classes": 10},
        (2, 3, 32, 32),
        (2, 10),
        (1, 3, 224, 224),
        (1, 1000),
        11_689_512,  # torchvision resnet18
        frozenset({"Conv", "BatchNormalization", "Relu", "MaxPool", "Add", "GlobalAveragePool"}),
    ),
    ZooCase(
        "mobilenet_v2",
        build_mobilenet_v2,
        {"width_mult": 0.25, "image_size": 32, "num_classes": 10},
        (2, 3, 32, 32),
        (2, 10),
        (1, 3, 224, 224),
        (1, 1000),
        3_504_872,  # torchvision mobilenet_v2
        frozenset({"Conv", "BatchNormalization", "Clip", "Add", "GlobalAveragePool", "Gemm"}),
    ),
    ZooCase(
        "dqn",
        build_dqn,
        {"image_size": 36, "hidden": 64},
        (2, 4, 36, 36),
        (2, 18),
        (1, 4, 84, 84),
        (1, 18),
        1_693_362,
        frozenset({"Conv", "Relu", "Flatten", "Gemm"}),
    ),
    ZooCase(
        "dcgan",
        build_dcgan,
        {"nz": 16, "ngf": 8},
        (2, 16, 1, 1),
        (2, 3, 64, 64),
        (1, 100, 1, 1),
        (1, 3, 64, 64),
        3_576_704,  # the PyTorch DCGAN example's generator
        frozenset({"ConvTranspose", "BatchNormalization", "Relu", "Tanh"}),
    ),
    ZooCase(
        "transformer",
        build_transformer,
        {"seq_len": 16, "hidden": 32, "heads": 2, "ffn": 64},
        (2, 16, 32),
        (2, 16, 32),
        (1, 128, 256),
        (1, 128, 256),
        789_760,
        frozenset({"MatMul", "Softmax", "LayerNormalization", "Erf", "Transpose", "Reshape"}),
    ),
    ZooCase(
        "lstm",
        build_lstm,
        {"vocab": 100, "hidden": 32, "seq_len": 8},
        (8, 2),
        (8, 2, 100),
        (35, 1),
        (35, 1, 10000),
        19_780_400,  # Zaremba et al.'s medium model, as in PyTorch's word_language_model
        frozenset({"Gather", "LSTM", "Squeeze", "MatMul"}),
    ),
]
CASE_IDS = [case.name for case in CASES]

SMALL_OPTIONS = {case.name: case.small for case in CASES} | {"mlp": {"sizes": (64, 48, 32, 10)}}
"""Test-sized builder options for every registered model, the MLP included."""


def shape_of(value: onnx.ValueInfoProto) -> tuple[int, ...]:
    return tuple(dim.dim_value for dim in value.type.tensor_type.shape.dim)


def trainable_parameters(model: onnx.ModelProto) -> int:
    return sum(
        int(np.prod(tensor.dims))
        for tensor in model.graph.initializer
        if not tensor.name.endswith((".running_mean", ".running_var"))
    )


def random_feeds(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    feeds = {}
    for value in model.graph.input:
        shape = shape_of(value)
        if value.type.tensor_type.elem_type == TensorProto.INT64:
            vocab = next(t.dims[0] for t in model.graph.initializer if t.name == "encoder.weight")
            feeds[value.name] = rng.integers(0, vocab, shape, dtype=np.int64)
        else:
            feeds[value.name] = rng.standard_normal(shape, dtype=np.float32)
    return feeds


def run(model: onnx.ModelProto) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    (output,) = session.run(["output"], random_feeds(model, np.random.default_rng(1)))
    return output


def check_well_formed(model: onnx.ModelProto, case: ZooCase) -> None:
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 17
    op_types = {node.op_type for node in model.graph.node}
    assert op_types <= ALLOWED_OPS, op_types - ALLOWED_OPS
    assert case.ops <= op_types
    # Static float32 tensors: every initializer is a float32 weight.
    assert all(t.data_type == TensorProto.FLOAT for t in model.graph.initializer)
    assert [o.name for o in model.graph.output] == ["output"]
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    constants = {t.name for t in model.graph.initializer}
    constants |= {node.output[0] for node in model.graph.node if node.op_type == "Constant"}
    for node in model.graph.node:
        for index in SHAPE_INPUTS.get(node.op_type, ()):
            if index < len(node.input) and node.input[index]:
                assert node.input[index] in constants, f"{node.name} input {index}"
    for tensor in model.graph.initializer:
        if tensor.name.endswith(".running_var"):
            assert (numpy_helper.to_array(tensor) > 0).all(), tensor.name


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_small_model_is_valid_and_runs(case: ZooCase) -> None:
    model = case.builder(batch=2, seed=3, **case.small)
    check_well_formed(model, case)
    assert [shape_of(i) for i in model.graph.input] == [case.small_input]
    assert shape_of(model.graph.output[0]) == case.small_output

    output = run(model)

    assert output.shape == case.small_output
    assert output.dtype == np.float32
    assert np.isfinite(output).all()
    assert 0.05 < output.std() < 20.0


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_full_size_model_from_the_registry(case: ZooCase) -> None:
    model = zoo.build_model(case.name)
    check_well_formed(model, case)
    assert [shape_of(i) for i in model.graph.input] == [case.full_input]
    assert shape_of(model.graph.output[0]) == case.full_output
    assert trainable_parameters(model) == case.parameters

    output = run(model)

    assert output.shape == case.full_output
    assert np.isfinite(output).all()
    # The initialisation keeps real-size activations O(1), not just the shrunk ones'.
    assert 0.2 < output.std() < 5.0


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_weights_follow_the_seed(case: ZooCase) -> None:
    first = case.builder(seed=7, **case.small)
    again = case.builder(seed=7, **case.small)
    other = case.builder(seed=8, **case.small)
    assert first.SerializeToString() == again.SerializeToString()
    assert first.graph.node == other.graph.node
    assert first.graph.initializer != other.graph.initializer


@pytest.mark.parametrize("name", sorted(SMALL_OPTIONS))
def test_builders_are_deterministic(name: str) -> None:
    # A model depends on its arguments only: building every other model in between
    # (same seed, other sizes) leaves no state behind that changes a byte.
    first = zoo.build_model(name, batch=2, seed=11, **SMALL_OPTIONS[name])
    for other in zoo.zoo_names():
        zoo.build_model(other, seed=11, **SMALL_OPTIONS[other])
    again = zoo.build_model(name, batch=2, seed=11, **SMALL_OPTIONS[name])
    assert first.SerializeToString() == again.SerializeToString()
    assert first.ir_version == 8
    assert [(o.domain, o.version) for o in first.opset_import] == [("", 17)]
    assert first.producer_name == "strato.zoo"


def test_registry_has_every_model() -> None:
    assert set(CASE_IDS) | {"mlp"} <= set(zoo.zoo_names())


def test_lstm_takes_int64_token_ids() -> None:
    model = build_lstm(vocab=100, hidden=32, seq_len=8)
    (tokens,) = model.graph.input
    assert tokens.name == "tokens"
    assert tokens.type.tensor_type.elem_type == TensorProto.INT64


def test_resnet18_structure() -> None:
    model = build_resnet18(image_size=32, width=8, num_classes=10)
    ops = Counter(node.op_type for node in model.graph.node)
    # Stem conv, 8 BasicBlocks of two 3x3 convs, 3 downsampling 1x1 convs.
    assert ops["Conv"] == 1 + 8 * 2 + 3
    assert ops["BatchNormalization"] == ops["Conv"]
    assert ops["Add"] == 8
    stem = model.graph.node[0]
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in stem.attribute}
    assert attributes["kernel_shape"] == [7, 7] and attributes["strides"] == [2, 2]


def test_mobilenet_v2_structure() -> None:
    model = build_mobilenet_v2(image_size=32, num_classes=10)
    ops = Counter(node.op_type for node in model.graph.node)
    # Stem, 17 inverted residual blocks (the first without expansion), last 1x1 conv.
    assert ops["Conv"] == 1 + (2 + 16 * 3) + 1
    assert ops["Add"] == 10
    assert ops["Clip"] == 1 + (1 + 16 * 2) + 1
    depthwise = [
        node
        for node in model.graph.node
        if node.op_type == "Conv" and any(a.name == "group" and a.i > 1 for a in node.attribute)
    ]
    assert len(depthwise) == 17
    weights = {t.name: t for t in model.graph.initializer}
    for node in depthwise:
        (group,) = [a.i for a in node.attribute if a.name == "group"]
        assert list(weights[node.input[1]].dims) == [group, 1, 3, 3]


def test_make_divisible_matches_the_mobilenet_rule() -> None:
    assert make_divisible(32 * 0.25) == 8
    assert make_divisible(16 * 0.25) == 8
    assert make_divisible(96 * 0.35) == 32
    assert make_divisible(1280 * 1.4) == 1792


def test_transformer_matches_a_numpy_encoder_block() -> None:
    batch, seq, hidden, heads, ffn = 2, 6, 16, 2, 24
    model = build_transformer(batch=batch, seq_len=seq, hidden=hidden, heads=heads, ffn=ffn)
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    x = np.random.default_rng(5).standard_normal((batch, seq, hidden)).astype(np.float32)

    def linear(v: np.ndarray, name: str) -> np.ndarray:
        return v @ w[f"{name}.weight"] + w[f"{name}.bias"]

    def layer_norm(v: np.ndarray, name: str) -> np.ndarray:
        centred = v - v.mean(-1, keepdims=True)
        normed = centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-5)
        return normed * w[f"{name}.weight"] + w[f"{name}.bias"]

    def split_heads(v: np.ndarray) -> np.ndarray:
        return v.reshape(batch, seq, heads, hidden // heads).transpose(0, 2, 1, 3)

    q, k, v = (split_heads(linear(x, f"attention.{n}")) for n in ("query", "key", "value"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hidden // heads)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    h = layer_norm(linear(context, "attention.output") + x, "attention.norm")
    inner = linear(h, "ffn.intermediate")
    erf = np.vectorize(math.erf)
    gelu = 0.5 * inner * (1.0 + erf(inner / np.sqrt(2.0)))
    expected = layer_norm(linear(gelu, "ffn.output") + h, "ffn.norm")

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (actual,) = session.run(["output"], {"input": x})
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("builder", "options"),
    [
        (build_resnet18, {"image_size": 48}),
        (build_mobilenet_v2, {"image_size": 16}),
        (build_dqn, {"image_size": 35}),
        (build_transformer, {"hidden": 30, "heads": 4}),
        (build_lstm, {"layers": 0}),
    ],
)
def test_impossible_sizes_are_rejected(builder: Any, options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        builder(**options)
