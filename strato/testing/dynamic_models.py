"""ONNX models with dynamic axes built in code (seeded random weights), of operators
that take run-time dimensions: what `strato.compile` compiles once for every size.

    proto = encoder_block(width=256)   # x, r: [batch, sequence, 256]
    model = strato.compile(proto)      # one compile; model(x, r) at any sizes

The tests check them against onnxruntime; `benchmarks/dynamic_shapes.py` times them
against static compiles of each size.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Nodes(list):
    """ONNX nodes being built: calling it appends a node of one output, and gives that
    output's name."""

    def __call__(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.append(helper.make_node(op, inputs, [output], **attrs))
        return output


def _initializers(**arrays: np.ndarray) -> list[onnx.TensorProto]:
    return [
        numpy_helper.from_array(np.asarray(a, np.float32 if a.dtype.kind == "f" else a.dtype), n)
        for n, a in arrays.items()
    ]


def mlp(width: int = 16, hidden: int = 32, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """softmax(relu(x @ w1 + b1) @ w2^T + b2), x [batch, width]."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["p"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", classes])],
        _initializers(
            w1=rng.standard_normal((width, hidden)) / np.sqrt(width),
            b1=rng.standard_normal(hidden),
            w2=rng.standard_normal((classes, hidden)) / np.sqrt(hidden),
            b2=rng.standard_normal(classes),
        ),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def encoder_block(width: int = 32, hidden: int = 64, seed: int = 0) -> onnx.ModelProto:
    """A transformer's feed-forward half on x [batch, sequence, width] and a residual r
    of the same sizes: layer norm, dense + GELU, dense, the residual sum, and the sum
    centred on its mean."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Gelu", ["hb"], ["gl"]),
        helper.make_node("MatMul", ["gl", "w2"], ["o"]),
        helper.make_node("Add", ["o", "r"], ["y"]),
        helper.make_node("ReduceMean", ["y", "axes"], ["m"], keepdims=1),
        helper.make_node("Sub", ["y", "m"], ["z"]),
    ]
    dims = ["batch", "sequence", width]
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, dims),
        ],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, dims)],
        _initializers(
            g=rng.standard_normal(width),
            b=rng.standard_normal(width),
            w1=rng.standard_normal((width, hidden)) / np.sqrt(width),
            b1=rng.standard_normal(hidden),
            w2=rng.standard_normal((hidden, width)) / np.sqrt(hidden),
            axes=np.array([2], np.int64),
        ),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def attention(width: int = 16, seed: int = 0) -> onnx.ModelProto:
    """Single-head self-attention on x [batch, sequence, width]:
    softmax(q k^T / sqrt(width)) v, a softmax over the run-time sequence and a product
    contracting it."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["weights"], axis=-1),
        helper.make_node("MatMul", ["weights", "v"], ["y"]),
    ]
    return _self_attention("attention", nodes, width, rng, scale=np.array(np.sqrt(width), np.float32))


def multi_head_attention(width: int = 32, heads: int = 4, seed: int = 0) -> onnx.ModelProto:
    """Self-attention with `heads` heads on x [batch, sequence, width]: q, k and v split
    into heads by Reshape [0, 0, heads, width / heads] (0 copies a run-time dimension)
    and Transpose, softmax(q k^T / sqrt(head width)) v per head, and the heads merged
    back by Transpose and Reshape [0, 0, width]."""
    rng = np.random.default_rng(seed)
    head = width // heads
    nodes = []
    for name in ("q", "k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}0"]),
            helper.make_node("Reshape", [f"{name}0", "split"], [f"{name}1"]),
            helper.make_node("Transpose", [f"{name}1"], [name], perm=[0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["weights"], axis=-1),
        helper.make_node("MatMul", ["weights", "v"], ["heads"]),
        helper.make_node("Transpose", ["heads"], ["merged"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["merged", "merge"], ["y"]),
    ]
    return _self_attention(
        "multi_head_attention",
        nodes,
        width,
        rng,
        scale=np.array(np.sqrt(head), np.float32),
        split=np.array([0, 0, heads, head], np.int64),
        merge=np.array([0, 0, width], np.int64),
    )


def exported_attention(
    width: int = 32, heads: int = 4, exporter: str = "torchscript", seed: int = 0
) -> onnx.ModelProto:
    """`multi_head_attention` as torch's exporters write it: the shapes of the head split
    and merge computed from `Shape(x)` at run time, not constants.

    - "torchscript": `Shape` -> `Gather` of batch and sequence -> `Unsqueeze` ->
      `Concat` with the head count and the head width (itself `Div` and `Cast` of the
      gathered width); the merged heads are `Expand`ed to their own shape through the
      `-1` check (`ConstantOfShape`, `Mul` by -1, `Equal`, `Where`), and the output
      passes through `Reshape [-1, sequence, width]` (a view that infers the batch);
    - "dynamo": `Shape` with start and end of one dimension each, `Concat`, and
      `Reshape` with allowzero=1.
    """
    if exporter not in ("torchscript", "dynamo"):
        raise ValueError(f"exporter must be 'torchscript' or 'dynamo', not {exporter!r}")
    rng = np.random.default_rng(seed)
    head = width // heads
    nodes = make = _Nodes()
    if exporter == "torchscript":
        shape = make("Shape", ["x"], "shape")
        batch = make("Unsqueeze", [make("Gather", [shape, "i0"], "b"), "axis0"], "b1")
        sequence = make("Unsqueeze", [make("Gather", [shape, "i1"], "s"), "axis0"], "s1")
        per_head = make("Div", [make("Gather", [shape, "i2"], "w"), "heads"], "hw")
        per_head = make("Unsqueeze", [make("Cast", [per_head], "hw64", to=TensorProto.INT64), "axis0"], "hw1")
        split = make("Concat", [batch, sequence, "heads1", per_head], "split", axis=0)
        merge = make("Concat", [batch, sequence, make("Unsqueeze", ["w", "axis0"], "w1")], "merge", axis=0)
        zero = {}
    else:
        batch = make("Shape", ["x"], "b1", start=0, end=1)
        sequence = make("Shape", ["x"], "s1", start=1, end=2)
        split = make("Concat", [batch, sequence, "heads1", "head1"], "split", axis=0)
        merge = make("Concat", [batch, sequence, "width1"], "merge", axis=0)
        zero = {"allowzero": 1}
    for name in ("q", "k", "v"):
        make("MatMul", ["x", f"w{name}"], f"{name}0")
        make("Reshape", [f"{name}0", split], f"{name}1", **zero)
        make("Transpose", [f"{name}1"], name, perm=[0, 2, 1, 3])
    make("Transpose", ["k"], "kt", perm=[0, 1, 3, 2])
    make("MatMul", ["q", "kt"], "scores")
    make("Div", ["scores", "scale"], "scaled")
    make("Softmax", ["scaled"], "weights", axis=-1)
    make("MatMul", ["weights", "v"], "heads_out")
    make("Transpose", ["heads_out"], "merged", perm=[0, 2, 1, 3])
    y = make("Reshape", ["merged", merge], "y0", **zero)
    if exporter == "torchscript":
        ones = make("ConstantOfShape", [make("Shape", [merge], "rank")], "ones",
                    value=numpy_helper.from_array(np.ones(1, np.int64)))  # fmt: skip
        unset = make("Equal", [merge, make("Mul", [ones, "minus1"], "minus")], "unset")
        expanded = make("Expand", [y, make("Where", [unset, ones, merge], "target")], "y1")
        view = make("Concat", ["minus1", sequence, make("Unsqueeze", ["w", "axis0"], "w2")], "view", axis=0)
        y = make("Reshape", [expanded, view], "y2")
    make("Identity", [y], "y")
    constants = {
        "i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "i2": np.array(2, np.int64),
        "axis0": np.array([0], np.int64), "heads": np.array(heads, np.int64),
        "heads1": np.array([heads], np.int64), "head1": np.array([head], np.int64),
        "width1": np.array([width], np.int64), "minus1": np.array([-1], np.int64),
    }  # fmt: skip
    used = {name for node in nodes for name in node.input}
    constants = {name: array for name, array in constants.items() if name in used}
    return _self_attention(
        f"exported_attention_{exporter}",
        nodes,
        width,
        rng,
        scale=np.array(np.sqrt(head), np.float32),
        **constants,
    )


def token_embedding(vocab: int = 50, width: int = 16, positions: int = 64, seed: int = 0) -> onnx.ModelProto:
    """The input of a token model: input_ids and attention_mask [batch, sequence]
    (int64) to the token embeddings plus the position embeddings of 0 .. sequence - 1
    (`Range` to the sequence from `Shape`, `Unsqueeze`, `Gather`), zeroed where the mask
    is 0 (`Cast`, `Unsqueeze`, `Mul`) and given a bias of -10000 there (`Equal`,
    `Where`): y [batch, sequence, width]."""
    rng = np.random.default_rng(seed)
    nodes = make = _Nodes()
    tokens = make("Gather", ["wte", "input_ids"], "tokens")
    sequence = make("Gather", [make("Shape", ["input_ids"], "shape"), "one"], "sequence", axis=0)
    positions_ = make("Unsqueeze", [make("Range", ["zero", sequence, "one"], "range"), "axis0"], "positions")
    embedded = make("Add", [tokens, make("Gather", ["wpe", positions_], "position_embeddings")], "embedded")
    mask = make("Unsqueeze", [make("Cast", ["attention_mask"], "maskf", to=TensorProto.FLOAT), "axis2"], "mask")
    masked = make("Where", [make("Equal", ["attention_mask", "zero"], "padding"), "minus", "zerof"], "bias")
    make("Add", [make("Mul", [embedded, mask], "kept"), make("Unsqueeze", [masked, "axis2"], "bias3")], "y")
    constants = {
        "wte": rng.standard_normal((vocab, width)), "wpe": rng.standard_normal((positions, width)),
        "zero": np.array(0, np.int64), "one": np.array(1, np.int64),
        "axis0": np.array([0], np.int64), "axis2": np.array([2], np.int64),
        "minus": np.array(-10000.0, np.float32), "zerof": np.array(0.0, np.float32),
    }  # fmt: skip
    return _token_model("token_embedding", nodes, width, constants)


def counted_positions(table: int = 128, width: int = 8, seed: int = 5) -> onnx.ModelProto:
    """RoBERTa's position ids: the running count of the tokens of ids [batch, sequence]
    that are not padding (1) along the sequence (`CumSum`), times that mask, plus the
    padding index, read in a table of `table` rows: y [batch, sequence, width]."""
    rng = np.random.default_rng(seed)
    nodes = make = _Nodes()
    mask = make("Cast", [make("Not", [make("Equal", ["ids", "pad"], "is_pad")], "kept")], "mask", to=TensorProto.INT32)
    counted = make("Mul", [make("CumSum", [mask, "axis"], "count"), mask], "counted")
    positions_ = make("Add", [make("Cast", [counted], "wide", to=TensorProto.INT64), "pad"], "positions")
    make("Gather", ["table", positions_], "y", axis=0)
    graph = helper.make_graph(
        nodes,
        "positions",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", width])],
        _initializers(
            pad=np.array(1, np.int64), axis=np.array(1, np.int64),
            table=rng.standard_normal((table, width)).astype(np.float32),
        ),
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def exported_token_model(
    vocab: int = 50, width: int = 16, outputs: int = 24, positions: int = 64, seed: int = 0
) -> onnx.ModelProto:
    """The idioms torch's TorchScript exporter writes for transformers' BERT and GPT-2
    inputs, on input_ids and attention_mask [batch, sequence] (int64):

    - token types: a buffer of positions sliced to the sequence (`Slice` to a size), a
      buffer of types gathered there (`GatherElements`) and `Expand`ed to the batch
      (to `Shape(input_ids)`, a size the gathered tensor has 1 for), then embedded;
    - a Conv1D: `Reshape [-1, width]` (batch and sequence merged), `Gemm`, and
      `Reshape` back to `Shape(x)[:2] + [outputs]`;
    - the padding mask: `Flatten` of the mask (batch and sequence merged), gathered at
      `Range(batch) * sequence + Range(sequence)` unsqueezed to [batch, 1, 1, seq],
      `Reshape [-1]` and back to the index's shape, as a bias of -10000 where the mask
      is 0, added to the output.

    y [batch, sequence, outputs]."""
    rng = np.random.default_rng(seed)
    nodes = make = _Nodes()
    shape = make("Shape", ["input_ids"], "shape")
    batch = make("Unsqueeze", [make("Gather", [shape, "zero"], "b", axis=0), "axis0"], "b1")
    sequence = make("Gather", [shape, "one"], "s", axis=0)
    sequence1 = make("Unsqueeze", [sequence, "axis0"], "s1")
    # token types
    ranked = make("Slice", ["position_buffer", "start0", sequence1, "axis1"], "ranked")
    types = make("GatherElements", ["type_buffer", ranked], "types", axis=1)
    full = make("Expand", [types, make("Concat", [batch, sequence1], "bs", axis=0)], "full_types")
    hidden = make("Add", [make("Gather", ["wte", "input_ids"], "tokens"), make("Gather", ["wtt", full], "typed")], "h")
    # a Conv1D
    flat = make("Reshape", [hidden, "flat_shape"], "h2")
    product = make("Gemm", [flat, "w", "bias"], "y2")
    leading = make("Slice", [make("Shape", [hidden], "h_shape"), "start0", "end2", "axis0"], "leading")
    y = make("Reshape", [product, make("Concat", [leading, "outputs1"], "y_shape", axis=0)], "y3")
    # the padding mask
    mask = make("Flatten", [make("Cast", ["attention_mask"], "m", to=TensorProto.BOOL)], "flat_mask", axis=2)
    rows = make("Unsqueeze", [make("Range", ["zero", make("Gather", [shape, "zero"], "b0", axis=0), "one"], "rb"), "axes123"], "rows")
    columns = make("Unsqueeze", [make("Range", ["zero", sequence, "one"], "rs"), "axes012"], "columns")
    index = make("Add", [columns, make("Mul", [rows, sequence1], "row_starts")], "index")
    picked = make("Reshape", [make("Gather", [mask, index], "picked5", axis=0), "minus1"], "picked1")
    picked = make("Reshape", [picked, make("Shape", [index], "index_shape")], "picked")
    bias = make("Where", [picked, "zero_f", "minus_f"], "mask_bias")
    bias = make("Reshape", [bias, make("Concat", [batch, sequence1, "one1"], "bias_shape", axis=0)], "bias3")
    make("Add", [y, bias], "y")
    constants = {
        "wte": rng.standard_normal((vocab, width)), "wtt": rng.standard_normal((2, width)),
        "w": rng.standard_normal((width, outputs)) / np.sqrt(width), "bias": rng.standard_normal(outputs),
        "position_buffer": np.arange(positions, dtype=np.int64)[None],
        "type_buffer": (np.arange(positions, dtype=np.int64)[None] % 2),
        "zero": np.array(0, np.int64), "one": np.array(1, np.int64),
        "axis0": np.array([0], np.int64), "axis1": np.array([1], np.int64),
        "start0": np.array([0], np.int64), "end2": np.array([2], np.int64),
        "axes123": np.array([1, 2, 3], np.int64), "axes012": np.array([0, 1, 2], np.int64),
        "flat_shape": np.array([-1, width], np.int64), "outputs1": np.array([outputs], np.int64),
        "minus1": np.array([-1], np.int64), "one1": np.array([1], np.int64),
        "zero_f": np.array(0.0, np.float32), "minus_f": np.array(-10000.0, np.float32),
    }  # fmt: skip
    return _token_model("exported_token_model", nodes, outputs, constants)


def dynamo_masked_scores(width: int = 16, heads: int = 4, seed: int = 0) -> onnx.ModelProto:
    """The idioms torch.export's exporter writes for transformers' attention, on
    input_ids and attention_mask [batch, sequence] (int64): the padding mask gathered
    (`GatherND`) at the pairs (b, s) of `Range`s `Expand`ed to [batch, 1, 1, seq] (the
    shape of their `Max`) and concatenated; k transposed for the scores through
    [batch * heads, seq, head] (`Reshape [-1, seq, head]`, `Transpose [0, 2, 1]`,
    `Reshape` back). y [batch, sequence, width]: softmax(q k^T + mask bias) v, heads
    merged."""
    rng = np.random.default_rng(seed)
    head = width // heads
    nodes = make = _Nodes()
    shape = make("Shape", ["input_ids"], "shape")
    b = make("Gather", [shape, "zero"], "b", axis=0)
    s = make("Gather", [shape, "one"], "s", axis=0)
    b1, s1 = make("Unsqueeze", [b, "axis0"], "b1"), make("Unsqueeze", [s, "axis0"], "s1")
    hidden = make("Gather", ["wte", "input_ids"], "h")
    split = make("Concat", [b1, s1, "heads1", "head1"], "split", axis=0)
    q, k, v = (
        make("Transpose", [make("Reshape", [hidden, split], f"{n}4")], n, perm=[0, 2, 1, 3])
        for n in "qkv"
    )
    flat = make("Reshape", [k, make("Concat", ["minus1", s1, "head1"], "flat", axis=0)], "k3")
    kt = make("Transpose", [flat], "kt3", perm=[0, 2, 1])
    kt = make("Reshape", [kt, make("Concat", [b1, "heads1", "head1", s1], "kt_shape", axis=0)], "kt")
    # the padding mask at the pairs (b, s)
    rows = make("Unsqueeze", [make("Range", ["zero", b, "one"], "rb"), "axes123"], "rows")
    columns = make("Unsqueeze", [make("Range", ["zero", s, "one"], "rs"), "axes012"], "columns")
    grid = make("Shape", [make("Max", [rows, columns], "grid")], "grid_shape")
    pairs = [
        make("Unsqueeze", [make("Expand", [r, grid], f"{r}_full"), "minus1"], f"{r}_pairs")
        for r in (rows, columns)
    ]
    index = make("Concat", pairs, "index", axis=-1)
    mask = make("GatherND", [make("Cast", ["attention_mask"], "m", to=TensorProto.BOOL), index], "mask")
    bias = make("Where", [mask, "zero_f", "minus_f"], "bias")
    scores = make("Add", [make("MatMul", [q, kt], "qk"), bias], "scores")
    attended = make("MatMul", [make("Softmax", [scores], "p", axis=-1), v], "attended")
    merged = make("Transpose", [attended], "merged", perm=[0, 2, 1, 3])
    make("Reshape", [merged, make("Concat", [b1, s1, "width1"], "out_shape", axis=0)], "y")
    constants = {
        "wte": rng.standard_normal((50, width)), "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64), "axis0": np.array([0], np.int64),
        "axes123": np.array([1, 2, 3], np.int64), "axes012": np.array([0, 1, 2], np.int64),
        "minus1": np.array([-1], np.int64), "heads1": np.array([heads], np.int64),
        "head1": np.array([head], np.int64), "width1": np.array([width], np.int64),
        "zero_f": np.array(0.0, np.float32), "minus_f": np.array(-10000.0, np.float32),
    }  # fmt: skip
    return _token_model("dynamo_masked_scores", nodes, width, constants)

def _token_model(
    name: str, nodes: list[onnx.NodeProto], width: int, constants: dict[str, np.ndarray]
) -> onnx.ModelProto:
    """A model of `nodes` from input_ids and attention_mask [batch, sequence] (int64) to
    y [batch, sequence, width]."""
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*dims, width])],
        _initializers(**constants),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _self_attention(
    name: str, nodes: list, width: int, rng: np.random.Generator, **constants: np.ndarray
) -> onnx.ModelProto:
    """A model of `nodes` from x to y, both [batch, sequence, width], with random
    projections wq, wk and wv [width, width] and `constants`."""
    dims = ["batch", "sequence", width]
    projections = {f"w{n}": rng.standard_normal((width, width)) / np.sqrt(width) for n in "qkv"}
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
        _initializers(**projections, **constants),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


__all__ = [
    "attention",
    "dynamo_masked_scores",
    "encoder_block",
    "exported_attention",
    "exported_token_model",
    "mlp",
    "multi_head_attention",
    "token_embedding",
]
