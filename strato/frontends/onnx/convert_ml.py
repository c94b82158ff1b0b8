"""Operators of ONNX's classical machine-learning domain (`ai.onnx.ml`): Binarizer,
ArrayFeatureExtractor, LabelEncoder and TreeEnsemble, imported as default-domain nodes.

- Binarizer: y = 1 where x > threshold, else 0, in x's type (NaN gives 0).
- ArrayFeatureExtractor(x, indices): x's last axis gathered at the indices; a vector
  gives a [1, n] matrix, as onnxruntime (and ONNX's reference) do.
- TreeEnsemble (opset 5): see `convert_tree_ensemble`.
- LabelEncoder: each element of x mapped through keys -> values (the last value of a
  repeated key), elements without a key to the default (-1, -0.0 or "_Unused" by the
  values' type, or `default_tensor`): the elements compared with every key, the first
  match's value gathered. String keys and values are compared and given as ids of the
  string encoding (`strings`), which rewrites them before import.
"""

from __future__ import annotations

import functools

import numpy as np

from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.expansion import Expansion

ML_DOMAIN = "ai.onnx.ml"


def convert_binarizer(ctx: NodeContext) -> list[ImportedValue]:
    body = Expansion(ctx)
    x = ctx.input_name(0)
    dtype = body.dtype_of(x)
    threshold = body.constant(np.asarray(ctx.float_attr("threshold", 0.0), dtype))
    above = body.node("Greater", [x, threshold])
    one, zero = body.constant(np.asarray(1, dtype)), body.constant(np.asarray(0, dtype))
    return [body.result(body.node("Where", [above, one, zero]))]


def convert_array_feature_extractor(ctx: NodeContext) -> list[ImportedValue]:
    body = Expansion(ctx)
    shape = ctx.shape(0)
    indices = body.node("Reshape", [ctx.input_name(1), body.constant(np.array([-1]))])
    known = ctx.known(1)
    if known is not None and shape and np.any((known < -shape[-1]) | (known >= shape[-1])):
        raise ctx.error(
            f"indices {known.reshape(-1).tolist()} are out of range for the last axis "
            f"of size {shape[-1]}"
        )
    picked = body.node("Gather", [ctx.input_name(0), indices], axis=-1)
    if len(shape) == 1:
        picked = body.node("Unsqueeze", [picked, body.constant(np.array([0]))])
    return [body.result(picked)]


_DEFAULTS = {"floats": -0.0, "int64s": -1, "strings": "_Unused"}


def _label_table(ctx: NodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, values, default) of a LabelEncoder, a repeated key keeping its last value."""
    keys = next(
        (np.asarray(ctx.attr(f"keys_{kind}")) for kind in _DEFAULTS if ctx.has_attr(f"keys_{kind}")),
        ctx.attr("keys_tensor"),
    )
    values, default = None, None
    for kind, fallback in _DEFAULTS.items():
        if ctx.has_attr(f"values_{kind}"):
            dtype = {"floats": np.float32, "int64s": np.int64, "strings": np.int64}[kind]
            values = np.asarray(ctx.attr(f"values_{kind}"), dtype)
            default = np.asarray(ctx.attr(f"default_{kind[:-1]}", fallback), dtype)
    if values is None and ctx.has_attr("values_tensor"):
        values = np.asarray(ctx.attr("values_tensor"))
        default = ctx.attr("default_tensor")
        default = np.asarray(default).reshape(-1)[0] if default is not None else None
        if default is None:
            raise ctx.error("values_tensor needs a default_tensor")
        default = np.asarray(default, values.dtype)
    if keys is None or values is None:
        raise ctx.error("LabelEncoder needs keys (keys_*) and values (values_*)")
    keys, values = np.asarray(keys).reshape(-1), values.reshape(-1)
    if len(keys) != len(values):
        raise ctx.error(f"{len(keys)} keys but {len(values)} values")
    last = {key.item() if hasattr(key, "item") else key: i for i, key in enumerate(keys)}
    order = sorted(last.values())
    return keys[order], values[order], default


def convert_label_encoder(ctx: NodeContext) -> list[ImportedValue]:
    strings = any(ctx.has_attr(f"{side}_strings") for side in ("keys", "values")) or any(
        ctx.has_attr(name) and np.asarray(ctx.attr(name)).dtype.kind in "OUS"
        for name in ("keys_tensor", "values_tensor")
    )
    if strings:
        raise ctx.error(
            "string keys or values are compiled as ids of the model's strings, which only "
            "the ONNX backend's string encoding gives"
        )
    keys, values, default = _label_table(ctx)
    body = Expansion(ctx)
    x = ctx.input_name(0)
    dtype = body.dtype_of(x)
    flat = body.node("Unsqueeze", [x, body.constant(np.array([-1]))])
    matches = body.node("Equal", [flat, body.constant(keys.astype(dtype))])  # [..., K]
    found = body.node("ReduceMax", [body.cast(matches, np.int32), body.constant(np.array([-1]))], keepdims=0)
    first = body.node("ArgMax", [body.cast(matches, np.int32)], axis=-1, keepdims=0)
    mapped = body.node("Gather", [body.constant(values), first], axis=0)
    hit = body.cast(found, np.bool_)
    return [body.result(body.node("Where", [hit, mapped, body.constant(default)]))]


_MODES = ("LEQ", "LT", "GTE", "GT", "EQ", "NEQ", "MEMBER")
_COMPARES = ("LessOrEqual", "Less", "GreaterOrEqual", "Greater", "Equal")


def _forest(ctx: NodeContext) -> dict[str, np.ndarray]:
    """TreeEnsemble's nodes and leaves as slots: nodes first, then leaves, each leaf a
    slot that leads to itself; per slot its feature, split, mode, the slots its two
    branches lead to and whether a missing (NaN) value goes the true way."""
    def ints(name: str) -> np.ndarray:
        return np.asarray(ctx.attr(name, []), np.int64).reshape(-1)

    def tensor(name: str, dtype) -> np.ndarray:
        value = ctx.attr(name)
        return np.zeros(0, dtype) if value is None else np.asarray(value, dtype).reshape(-1)

    features, splits = ints("nodes_featureids"), tensor("nodes_splits", np.float64)
    modes = tensor("nodes_modes", np.int64)
    true_ids, false_ids = ints("nodes_truenodeids"), ints("nodes_falsenodeids")
    true_leaf, false_leaf = ints("nodes_trueleafs"), ints("nodes_falseleafs")
    weights, targets = tensor("leaf_weights", np.float64), ints("leaf_targetids")
    count, leaves = len(features), len(weights)
    lengths = {len(a) for a in (splits, modes, true_ids, false_ids, true_leaf, false_leaf)}
    if lengths != {count} or len(targets) != leaves:
        raise ctx.error("the nodes_* attributes (and leaf_* attributes) must have one entry per node (leaf)")
    if np.any(modes < 0) or np.any(modes >= len(_MODES)):
        raise ctx.error(f"nodes_modes {sorted(set(modes.tolist()))} must be in 0..6")
    missing = ints("nodes_missing_value_tracks_true")
    if missing.size == 0:
        missing = np.zeros(count, np.int64)
    members = tensor("membership_values", np.float64)
    groups = np.split(members, np.flatnonzero(np.isnan(members)) + 1)[: int(np.sum(modes == 6))]
    if len(groups) != int(np.sum(modes == 6)):
        raise ctx.error("membership_values must hold one NaN-ended set per MEMBER node")
    width = max([len(g) - 1 for g in groups] + [1])
    sets = np.full((count + leaves, width), np.nan)
    for node, group in zip(np.flatnonzero(modes == 6), groups, strict=True):
        sets[node, : len(group) - 1] = group[:-1]

    def slots(ids: np.ndarray, is_leaf: np.ndarray) -> np.ndarray:
        limit = np.where(is_leaf != 0, leaves, count)
        if np.any((ids < 0) | (ids >= limit)):
            raise ctx.error("a node's branch names a node or leaf that does not exist")
        return np.where(is_leaf != 0, count + ids, ids)

    own = np.arange(count, count + leaves)
    roots = ints("tree_roots")
    if roots.size == 0 or np.any((roots < 0) | (roots >= count)):
        raise ctx.error(f"tree_roots {roots.tolist()} must name nodes")
    root_is_leaf = (true_leaf[roots] != 0) & (false_leaf[roots] != 0) & (
        true_ids[roots] == false_ids[roots]
    )
    forest = {
        "feature": np.concatenate([features, np.zeros(leaves, np.int64)]),
        "split": np.concatenate([splits, np.zeros(leaves)]),
        "mode": np.concatenate([modes, np.zeros(leaves, np.int64)]),
        "true": np.concatenate([slots(true_ids, true_leaf), own]),
        "false": np.concatenate([slots(false_ids, false_leaf), own]),
        "missing": np.concatenate([missing != 0, np.zeros(leaves, bool)]),
        "sets": sets,
        "roots": np.where(root_is_leaf, count + true_ids[roots], roots),
        "weights": weights,
        "targets": targets,
    }
    forest["depth"] = np.asarray(_depth(forest, count))
    return forest


def _depth(forest: dict[str, np.ndarray], count: int) -> int:
    """The most branches any root-to-leaf path takes (a cycle is an error)."""
    depth = np.zeros(len(forest["true"]), np.int64)
    order: list[int] = []
    state = np.zeros(len(depth), np.int8)
    for root in forest["roots"].tolist():
        stack = [(root, False)]
        while stack:
            slot, done = stack.pop()
            if slot >= count or state[slot] == 2:
                continue
            if done:
                state[slot] = 2
                order.append(slot)
                continue
            if state[slot] == 1:
                raise ValueError("the trees have a cycle")
            state[slot] = 1
            stack.append((slot, True))
            stack.extend((int(forest[side][slot]), False) for side in ("true", "false"))
    for slot in order:
        below = [depth[forest[side][slot]] if forest[side][slot] < count else 0 for side in ("true", "false")]
        depth[slot] = 1 + max(below)
    return int(max(depth[forest["roots"]].max(initial=0), 0))


def convert_tree_ensemble(ctx: NodeContext) -> list[ImportedValue]:
    """TreeEnsemble: every tree walked for every row at once, one branch a step, for the
    deepest tree's depth (a leaf stays where it is); comparisons in float64, then each
    tree's leaf weight added to (averaged into, or the least or greatest of) its target."""
    try:
        forest = _forest(ctx)
    except ValueError as error:
        raise ctx.error(str(error)) from None
    aggregate = int(ctx.attr("aggregate_function", 1))
    post = int(ctx.attr("post_transform", 0))
    if aggregate not in (0, 1, 2, 3):
        raise ctx.error(f"aggregate_function {aggregate} is not one of 0..3")
    if post not in (0, 1, 2):
        raise ctx.error(f"post_transform {post} is not supported (NONE, SOFTMAX and LOGISTIC are)")
    shape = ctx.shape(0)
    if len(shape) != 2:
        raise ctx.error(f"input has shape {list(shape)}; TreeEnsemble takes [N, F]")
    body = Expansion(ctx)
    dtype = body.dtype_of(ctx.input_name(0))
    if np.any(forest["feature"] >= shape[1]) or np.any(forest["feature"] < 0):
        raise ctx.error(f"a node reads a feature outside the input's {shape[1]}")
    x = body.cast(ctx.input_name(0), np.float64)
    rows, trees = shape[0], len(forest["roots"])
    table = {name: body.constant(forest[name]) for name in ("feature", "split", "mode", "true", "false", "missing", "sets")}
    slot = body.node("Expand", [body.constant(forest["roots"].reshape(1, -1)), body.constant(np.array([rows, trees]))])

    def gathered(name: str, where: str) -> str:
        return body.node("Gather", [table[name], where], axis=0)

    for _ in range(int(forest["depth"])):
        at = functools.partial(gathered, where=slot)
        value = body.node("GatherElements", [x, at("feature")], axis=1)  # [N, T]
        split, mode = at("split"), at("mode")
        missing = body.node("IsNaN", [value])
        tracks = body.node("And", [missing, at("missing")])  # NaN goes the true way
        results = [body.node(op, [value, split]) for op in _COMPARES]
        results.append(body.node("Not", [results[4]]))  # NEQ
        member = body.node("Equal", [body.node("Unsqueeze", [value, body.constant(np.array([-1]))]), at("sets")])
        results.append(body.cast(body.node("ReduceMax", [body.cast(member, np.int32), body.constant(np.array([-1]))], keepdims=0), np.bool_))
        chosen = results[-1]
        for code in range(len(results) - 2, -1, -1):
            is_code = body.node("Equal", [mode, body.constant(np.int64(code))])
            chosen = body.node("Where", [is_code, results[code], chosen])
        taken = body.node("Or", [chosen, tracks])
        slot = body.node("Where", [taken, at("true"), at("false")])
    leaf = body.node("Sub", [slot, body.constant(np.int64(len(forest["feature"]) - len(forest["weights"])))])
    weight = body.node("Gather", [body.constant(forest["weights"]), leaf], axis=0)
    target = body.node("Gather", [body.constant(forest["targets"]), leaf], axis=0)
    n_targets = int(ctx.attr("n_targets", int(forest["targets"].max(initial=0)) + 1))
    hits = body.node("Equal", [body.node("Unsqueeze", [target, body.constant(np.array([-1]))]), body.constant(np.arange(n_targets))])
    weight = body.node("Unsqueeze", [weight, body.constant(np.array([-1]))])  # [N, T, 1]
    if aggregate in (0, 1):
        if aggregate == 0:
            weight = body.node("Div", [weight, body.constant(np.float64(trees))])
        kept = body.node("Where", [hits, weight, body.constant(np.float64(0))])
        y = body.node("ReduceSum", [kept, body.constant(np.array([1]))], keepdims=0)
    else:
        info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.finfo(np.float64)
        start = float(info.max) if aggregate == 2 else float(info.min)
        kept = body.node("Where", [hits, weight, body.constant(np.float64(start))])
        y = body.node("ReduceMin" if aggregate == 2 else "ReduceMax", [kept, body.constant(np.array([1]))], keepdims=0)
    if post == 1:
        y = body.node("Softmax", [y], axis=-1)
    elif post == 2:
        y = body.node("Sigmoid", [y])
    return [body.result(body.cast(y, dtype))]


ML_CONVERTERS = {
    "ArrayFeatureExtractor": convert_array_feature_extractor,
    "Binarizer": convert_binarizer,
    "LabelEncoder": convert_label_encoder,
    "TreeEnsemble": convert_tree_ensemble,
}
"""The `ai.onnx.ml` operators strato imports."""


__all__ = ["ML_CONVERTERS", "ML_DOMAIN"]
