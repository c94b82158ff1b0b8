"""One transformer encoder block (Vaswani et al., 2017, in the post-LayerNorm form BERT
uses), as an ONNX model.

At the default sizes (sequence 128, hidden 256, 4 heads, FFN 1024) the block has 789,760
parameters. With `d = hidden / heads`:

    input [batch, seq, hidden]
      -> query, key, value: MatMul + Add, each Reshape [batch, seq, heads, d]
         q, v: Transpose -> [batch, heads, seq, d];  k: Transpose -> [batch, heads, d, seq]
      -> scores = MatMul(q, k) / sqrt(d) -> Softmax(axis -1)
      -> context = MatMul(probs, v) -> Transpose -> Reshape [batch, seq, hidden]
      -> attention output: MatMul + Add -> + input -> LayerNormalization
      -> FFN: MatMul + Add (ffn) -> GELU -> MatMul + Add (hidden) -> + -> LayerNormalization
      -> output [batch, seq, hidden]

GELU is the exact, Erf-based one, 0.5 * x * (1 + erf(x / sqrt 2)), since the Gelu operator
only exists from opset 20. There is no attention mask and Dropout is omitted (inference).
MatMul weights are [in, out], as exporters write them. Reshape shapes and the scalar
constants are Constant nodes, so the initializers are exactly the parameters.

Weights are drawn from the fan-in (variance 1 / fan_in; 2 / fan_in before the GELU and for
the query and key), so for standard normal inputs the scaled attention scores have standard
deviation about 2 (the softmax is neither uniform nor one-hot) and the LayerNorms see O(1)
activations.
"""

from __future__ import annotations

import numpy as np
import onnx

from strato.zoo.onnx_graph import GraphBuilder, value_info

LAYER_NORM_EPSILON = 1e-5

QUERY_KEY_GAIN = 2.0
"""Variance gain of the query and key projections: scaled scores get standard deviation
about 2, so the softmax is peaked the way a trained model's is, not near uniform."""

BIAS_STD = 0.02
"""Standard deviation of the projections' biases."""


def _linear(
    g: GraphBuilder, x: str, name: str, fan_in: int, fan_out: int, gain: float = 1.0
) -> str:
    return g.matmul_add(x, name, fan_in, fan_out, gain=gain, bias_std=BIAS_STD)


def _layer_norm(g: GraphBuilder, x: str, name: str, hidden: int, output: str | None = None) -> str:
    """LayerNormalization over the last axis; its result is `output`, or `name`."""
    gamma = g.rng.uniform(0.8, 1.2, hidden)
    beta = g.rng.normal(0.0, 0.1, hidden)
    inputs = [x, g.weight(f"{name}.weight", gamma), g.weight(f"{name}.bias", beta)]
    return g.node(
        "LayerNormalization", inputs, name, output=output, axis=-1, epsilon=LAYER_NORM_EPSILON
    )


def _gelu(g: GraphBuilder, x: str, name: str) -> str:
    sqrt2 = g.constant(f"{name}.sqrt2", np.array(np.sqrt(2.0), np.float32))
    one = g.constant(f"{name}.one", np.array(1.0, np.float32))
    half = g.constant(f"{name}.half", np.array(0.5, np.float32))
    y = g.node("Div", [x, sqrt2], f"{name}.div")
    y = g.node("Erf", [y], f"{name}.erf")
    y = g.node("Add", [y, one], f"{name}.add")
    y = g.node("Mul", [x, y], f"{name}.mul")
    return g.node("Mul", [y, half], name)


def build_transformer(
    batch: int = 1,
    seed: int = 0,
    seq_len: int = 128,
    hidden: int = 256,
    heads: int = 4,
    ffn: int = 1024,
) -> onnx.ModelProto:
    """One encoder block over `seq_len` positions of width `hidden`, `heads` attention
    heads and an FFN of width `ffn`, weights from `seed`.

        model = build_transformer(seq_len=16, hidden=32, heads=2, ffn=64)  # a test-sized one
    """
    if hidden % heads != 0:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    head_dim = hidden // heads
    g = GraphBuilder(seed)
    split_heads = g.constant(
        "attention.split_heads", np.array([batch, seq_len, heads, head_dim], np.int64)
    )
    merge_heads = g.constant("attention.merge_heads", np.array([batch, seq_len, hidden], np.int64))
    scale = g.constant("attention.scale", np.array(np.sqrt(head_dim), np.float32))

    def projected_heads(name: str, perm: list[int], gain: float) -> str:
        y = _linear(g, "input", f"attention.{name}", hidden, hidden, gain)
        y = g.node("Reshape", [y, split_heads], f"attention.{name}.split")
        return g.node("Transpose", [y], f"attention.{name}.heads", perm=perm)

    q = projected_heads("query", [0, 2, 1, 3], QUERY_KEY_GAIN)
    k = projected_heads("key", [0, 2, 3, 1], QUERY_KEY_GAIN)
    v = projected_heads("value", [0, 2, 1, 3], 1.0)
    scores = g.node("MatMul", [q, k], "attention.scores")
    scores = g.node("Div", [scores, scale], "attention.scaled_scores")
    probs = g.node("Softmax", [scores], "attention.probs", axis=-1)
    context = g.node("MatMul", [probs, v], "attention.context")
    context = g.node("Transpose", [context], "attention.context.seq_major", perm=[0, 2, 1, 3])
    context = g.node("Reshape", [context, merge_heads], "attention.context.merged")
    x = _linear(g, context, "attention.output", hidden, hidden)
    x = g.node("Add", [x, "input"], "attention.residual")
    x = _layer_norm(g, x, "attention.norm", hidden)
    y = _linear(g, x, "ffn.intermediate", hidden, ffn, gain=2.0)
    y = _gelu(g, y, "ffn.gelu")
    y = _linear(g, y, "ffn.output", ffn, hidden)
    y = g.node("Add", [y, x], "ffn.residual")
    _layer_norm(g, y, "ffn.norm", hidden, output="output")
    shape = [batch, seq_len, hidden]
    return g.finish(
        "transformer_encoder_block", [value_info("input", shape)], [value_info("output", shape)]
    )
