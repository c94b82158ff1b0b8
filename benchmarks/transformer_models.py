"""Transformer encoders shaped as torch exports them, built in code with seeded weights.

    vit = build_vit(hidden=384, layers=6, heads=12)        # ViT-B/16-like, 197 tokens
    bert = build_bert(seq_len=128, hidden=512, heads=8)    # BERT-like, with a padding mask

Both follow what the TorchScript exporter writes for transformers' models (opset 17):
dense layers are MatMul by a [in, out] weight then Add of the bias; heads are split by
Reshape [1, seq, heads, d] and Transpose [0, 2, 1, 3], the key by Transpose [0, 2, 3, 1]
(the exporter folds the k.transpose(-1, -2) into the permutation); the scores are
scaled either by Mul of q and k by d^-1/4 each (`scaled_dot_product_attention`, the
default, `scale="sdpa"`) or by Div of the product by sqrt(d) (`scale="div"`, the eager
attention of older exports); the GELU is the Erf form. `layer_norm="decomposed"` writes
each LayerNormalization as older exporters do: ReduceMean, Sub, Pow 2, ReduceMean, Add
epsilon, Sqrt, Div, Mul, Add.

ViT: a 16x16 stride-16 Conv patch embedding, Reshape + Transpose to [1, 196, hidden],
Concat of the class token, Add of the position embedding, pre-LayerNorm layers, a final
LayerNorm. BERT: token and position embeddings (Gather), LayerNorm, post-LayerNorm
layers, and the padding mask as the additive (1 - mask) * -10000 over [1, 1, 1, seq].
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from strato.zoo.onnx_graph import GraphBuilder, value_info

BIAS_STD = 0.02


def _layer_norm(g: GraphBuilder, x: str, name: str, hidden: int, form: str, epsilon: float) -> str:
    gamma = g.weight(f"{name}.weight", g.rng.uniform(0.8, 1.2, hidden))
    beta = g.weight(f"{name}.bias", g.rng.normal(0.0, 0.1, hidden))
    if form == "op":
        return g.node("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=epsilon)
    two = g.constant(f"{name}.two", np.array(2.0, np.float32))
    eps = g.constant(f"{name}.eps", np.array(epsilon, np.float32))
    mean = g.node("ReduceMean", [x], f"{name}.mean", axes=[-1])
    centered = g.node("Sub", [x, mean], f"{name}.sub")
    square = g.node("Pow", [centered, two], f"{name}.pow")
    variance = g.node("ReduceMean", [square], f"{name}.var", axes=[-1])
    shifted = g.node("Add", [variance, eps], f"{name}.add_eps")
    std = g.node("Sqrt", [shifted], f"{name}.sqrt")
    normed = g.node("Div", [centered, std], f"{name}.div")
    scaled = g.node("Mul", [normed, gamma], f"{name}.mul")
    return g.node("Add", [scaled, beta], name)


def _gelu(g: GraphBuilder, x: str, name: str) -> str:
    sqrt2 = g.constant(f"{name}.sqrt2", np.array(np.sqrt(2.0), np.float32))
    one = g.constant(f"{name}.one", np.array(1.0, np.float32))
    half = g.constant(f"{name}.half", np.array(0.5, np.float32))
    y = g.node("Div", [x, sqrt2], f"{name}.div")
    y = g.node("Erf", [y], f"{name}.erf")
    y = g.node("Add", [y, one], f"{name}.add")
    y = g.node("Mul", [x, y], f"{name}.mul")
    return g.node("Mul", [y, half], name)


def _linear(g: GraphBuilder, x: str, name: str, fan_in: int, fan_out: int, gain: float = 1.0) -> str:
    return g.matmul_add(x, name, fan_in, fan_out, gain=gain, bias_std=BIAS_STD)


def _attention(
    g: GraphBuilder, x: str, name: str, seq: int, hidden: int, heads: int, scale: str,
    mask: str | None,
) -> str:
    d = hidden // heads
    split = g.constant(f"{name}.split", np.array([1, seq, heads, d], np.int64))
    merge = g.constant(f"{name}.merge", np.array([1, seq, hidden], np.int64))

    def head(kind: str, perm: list[int]) -> str:
        y = _linear(g, x, f"{name}.{kind}", hidden, hidden, gain=2.0 if kind != "value" else 1.0)
        y = g.node("Reshape", [y, split], f"{name}.{kind}.split")
        return g.node("Transpose", [y], f"{name}.{kind}.heads", perm=perm)

    q = head("query", [0, 2, 1, 3])
    k = head("key", [0, 2, 3, 1])
    v = head("value", [0, 2, 1, 3])
    if scale == "sdpa":
        root = g.constant(f"{name}.root_scale", np.array(d**-0.25, np.float32))
        q = g.node("Mul", [q, root], f"{name}.q_scaled")
        k = g.node("Mul", [k, root], f"{name}.k_scaled")
        scores = g.node("MatMul", [q, k], f"{name}.scores")
    else:
        sqrt_d = g.constant(f"{name}.sqrt_d", np.array(np.sqrt(d), np.float32))
        scores = g.node("MatMul", [q, k], f"{name}.raw_scores")
        scores = g.node("Div", [scores, sqrt_d], f"{name}.scores")
    if mask is not None:
        scores = g.node("Add", [scores, mask], f"{name}.masked")
    probs = g.node("Softmax", [scores], f"{name}.probs", axis=-1)
    context = g.node("MatMul", [probs, v], f"{name}.context")
    context = g.node("Transpose", [context], f"{name}.context.seq_major", perm=[0, 2, 1, 3])
    context = g.node("Reshape", [context, merge], f"{name}.context.merged")
    return _linear(g, context, f"{name}.output", hidden, hidden)


def build_vit(
    seed: int = 0, image_size: int = 224, patch: int = 16, hidden: int = 384, layers: int = 6,
    heads: int = 12, mlp: int | None = None, scale: str = "sdpa", layer_norm: str = "op",
) -> onnx.ModelProto:
    """A ViT encoder on one image: [1, 3, image_size, image_size] -> [1, tokens, hidden]."""
    mlp = mlp or 4 * hidden
    grid = image_size // patch
    seq = grid * grid + 1
    g = GraphBuilder(seed)
    x = g.conv("pixels", "patch_embed", 3, hidden, kernel=patch, stride=patch, gain=1.0,
               same_padding=False, bias=True)  # fmt: skip
    flat = g.constant("patch_embed.flat", np.array([1, hidden, grid * grid], np.int64))
    x = g.node("Reshape", [x, flat], "patch_embed.flatten")
    x = g.node("Transpose", [x], "patch_embed.tokens", perm=[0, 2, 1])
    cls = g.weight("cls_token", g.rng.normal(0.0, 0.02, (1, 1, hidden)))
    x = g.node("Concat", [cls, x], "tokens", axis=1)
    pos = g.weight("pos_embed", g.rng.normal(0.0, 0.02, (1, seq, hidden)))
    x = g.node("Add", [x, pos], "embedded")
    for n in range(layers):
        p = f"layer{n}"
        y = _layer_norm(g, x, f"{p}.ln1", hidden, layer_norm, 1e-12)
        y = _attention(g, y, f"{p}.attention", seq, hidden, heads, scale, None)
        x = g.node("Add", [y, x], f"{p}.residual1")
        y = _layer_norm(g, x, f"{p}.ln2", hidden, layer_norm, 1e-12)
        y = _linear(g, y, f"{p}.fc1", hidden, mlp, gain=2.0)
        y = _gelu(g, y, f"{p}.gelu")
        y = _linear(g, y, f"{p}.fc2", mlp, hidden)
        x = g.node("Add", [y, x], f"{p}.residual2")
    _layer_norm(g, x, "final_norm", hidden, "op", 1e-12)
    g.nodes[-1].output[0] = "output"
    return g.finish(
        "vit_encoder", [value_info("pixels", [1, 3, image_size, image_size])],
        [value_info("output", [1, seq, hidden])],
    )


def build_bert(
    seed: int = 0, seq_len: int = 128, hidden: int = 512, layers: int = 4, heads: int = 8,
    ffn: int | None = None, vocab: int = 1000, scale: str = "div", layer_norm: str = "op",
) -> onnx.ModelProto:
    """A BERT encoder: input_ids and attention_mask [1, seq_len] (int64) -> [1, seq_len, hidden]."""
    ffn = ffn or 4 * hidden
    g = GraphBuilder(seed)
    words = g.weight("word_embeddings", g.rng.normal(0.0, 1.0, (vocab, hidden)))
    positions = g.weight("position_embeddings", g.rng.normal(0.0, 0.1, (1, seq_len, hidden)))
    x = g.node("Gather", [words, "input_ids"], "embed.words", axis=0)
    x = g.node("Add", [x, positions], "embed.sum")
    x = _layer_norm(g, x, "embed.norm", hidden, layer_norm, 1e-12)
    axes = g.constant("mask.axes", np.array([1, 2], np.int64))
    one = g.constant("mask.one", np.array(1.0, np.float32))
    low = g.constant("mask.low", np.array(-10000.0, np.float32))
    m = g.node("Unsqueeze", ["attention_mask", axes], "mask.unsqueeze")
    m = g.node("Cast", [m], "mask.float", to=TensorProto.FLOAT)
    m = g.node("Sub", [one, m], "mask.inverted")
    mask = g.node("Mul", [m, low], "mask.additive")
    for n in range(layers):
        p = f"layer{n}"
        y = _attention(g, x, f"{p}.attention", seq_len, hidden, heads, scale, mask)
        y = g.node("Add", [y, x], f"{p}.residual1")
        x = _layer_norm(g, y, f"{p}.ln1", hidden, layer_norm, 1e-12)
        y = _linear(g, x, f"{p}.intermediate", hidden, ffn, gain=2.0)
        y = _gelu(g, y, f"{p}.gelu")
        y = _linear(g, y, f"{p}.output", ffn, hidden)
        y = g.node("Add", [y, x], f"{p}.residual2")
        x = _layer_norm(g, y, f"{p}.ln2", hidden, layer_norm, 1e-12)
    g.nodes[-1].output[0] = "output"
    return g.finish(
        "bert_encoder",
        [value_info("input_ids", [1, seq_len], TensorProto.INT64),
         value_info("attention_mask", [1, seq_len], TensorProto.INT64)],
        [value_info("output", [1, seq_len, hidden])],
    )  # fmt: skip
