"""TfIdfVectorizer: counts of a pool of n-grams in each row of token ids, as the ONNX
reference computes them.

The pool lists the n-grams by size (`ngram_counts[i]` is where the size-(i + 1) n-grams
start in `pool_int64s`); each n-gram has an id, its position in the pool counted over all
sizes, and `ngram_indexes[id]` is the output column its count goes to. Only the sizes
in [min_gram_length, max_gram_length] are counted. An n-gram of size n > 1 matches at
start s with skip distance d (1 <= d <= max_skip_count + 1) when its tokens are
x[s], x[s + d], ..., x[s + (n - 1) d]; a unigram is counted once per position (with d =
1 only). When the pool lists an n-gram twice, the later id counts, as the reference's
trie keeps the last id it was given.

Imported as default-domain nodes: for each size n and distance d, the n strided windows
of the row compared with the pool's columns, the n matches and-ed, summed over starts;
the counts of all n-grams go to their columns through one 0/1 matrix product (counts
are small integers, exact in float32), then weighted:

    TF     y = count
    IDF    y = weight (1 without weights) where count > 0, else 0
    TFIDF  y = weight * count (count without weights)

String pools work through the string encoding (`strings`), which gives pool strings
and input strings the same ids.
"""

from __future__ import annotations

import itertools

import numpy as np

from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.expansion import Expansion

MODES = ("TF", "IDF", "TFIDF")


def ngram_pool(ctx: NodeContext, pool: list[int]) -> dict[tuple[int, ...], int]:
    """Each n-gram of a counted size -> its id (0-based), the last id of a repeated one."""
    low, high = int(ctx.attr("min_gram_length")), int(ctx.attr("max_gram_length"))
    if not 1 <= low <= high:
        raise ctx.error(
            f"min_gram_length={low} and max_gram_length={high} must satisfy "
            "1 <= min_gram_length <= max_gram_length"
        )
    starts = [int(s) for s in ctx.attr("ngram_counts", [])]
    if any(b < a for a, b in itertools.pairwise(starts)) or any(
        not 0 <= s <= len(pool) for s in starts
    ):
        raise ctx.error(f"ngram_counts {starts} must rise within the pool's {len(pool)} items")
    grams: dict[tuple[int, ...], int] = {}
    next_id = 0
    for size, start in enumerate(starts, start=1):
        end = starts[size] if size < len(starts) else len(pool)
        count = (end - start) // size
        if low <= size <= high:
            for k in range(count):
                grams[tuple(pool[start + k * size : start + (k + 1) * size])] = next_id + k
        next_id += count
    return grams


def convert_tfidf_vectorizer(ctx: NodeContext) -> list[ImportedValue]:
    if ctx.has_attr("pool_strings"):
        raise ctx.error("pool_strings needs string inputs; strato reads them as ids")
    mode = ctx.attr("mode", "TF")
    if mode not in MODES:
        raise ctx.error(f"mode '{mode}' is not one of {', '.join(MODES)}")
    shape = ctx.shape(0)
    if len(shape) not in (1, 2):
        raise ctx.error(f"input has shape {list(shape)}; TfIdfVectorizer takes [C] or [N, C]")
    body = Expansion(ctx)
    dtype = body.dtype_of(ctx.input_name(0))
    if dtype not in (np.int32, np.int64):
        raise ctx.error(f"input has element type {dtype}; TfIdfVectorizer counts int32 or int64 ids")
    pool = [int(t) for t in ctx.attr("pool_int64s", [])]
    grams = ngram_pool(ctx, pool)
    indexes = [int(i) for i in ctx.attr("ngram_indexes", [])]
    if not indexes or min(indexes) < 0:
        raise ctx.error("ngram_indexes must list a non-negative output column per n-gram")
    if grams and max(grams.values()) >= len(indexes):
        raise ctx.error(
            f"the pool holds {max(grams.values()) + 1} n-grams but ngram_indexes gives "
            f"{len(indexes)} columns"
        )
    width = max(indexes) + 1
    weights = ctx.attr("weights")
    if weights is not None and len(weights) and len(weights) != width:
        raise ctx.error(f"weights has {len(weights)} entries for {width} output columns")
    skips = int(ctx.attr("max_skip_count", 0))
    if skips < 0:
        raise ctx.error(f"max_skip_count={skips} is negative")

    columns = shape[-1]
    rows = body.node("Reshape", [ctx.input_name(0), body.constant(np.array([-1, columns]))])
    batch = shape[0] if len(shape) == 2 else 1
    counts: list[str] = []
    column_of: list[int] = []
    for size in sorted({len(gram) for gram in grams}):
        sized = [gram for gram in grams if len(gram) == size]
        table = np.array(sized, dtype=dtype)  # [G, size]
        distances = [1] if size == 1 else range(1, skips + 2)
        total = None
        for distance in distances:
            starts = columns - (size - 1) * distance
            if starts <= 0:
                break
            match = None
            for k in range(size):
                window = body.node(
                    "Slice",
                    [
                        rows,
                        body.constant(np.array([k * distance])),
                        body.constant(np.array([k * distance + starts])),
                        body.constant(np.array([1])),
                    ],
                )
                window = body.node("Unsqueeze", [window, body.constant(np.array([2]))])
                equal = body.node("Equal", [window, body.constant(table[:, k])])  # [B, S, G]
                match = equal if match is None else body.node("And", [match, equal])
            found = body.node(
                "ReduceSum", [body.cast(match, np.float32), body.constant(np.array([1]))],
                keepdims=0,
            )
            total = found if total is None else body.node("Add", [total, found])
        if total is not None:
            counts.append(total)
            column_of.extend(indexes[grams[gram]] for gram in sized)
    if counts:
        scatter = np.zeros((len(column_of), width), dtype=np.float32)
        scatter[np.arange(len(column_of)), column_of] = 1.0
        joined = counts[0] if len(counts) == 1 else body.node("Concat", counts, axis=1)
        y = body.node("MatMul", [joined, body.constant(scatter)])
    else:
        y = body.constant(np.zeros((batch, width), dtype=np.float32))

    weight = np.asarray(weights if weights is not None and len(weights) else np.ones(width), np.float32)
    if mode == "IDF":
        positive = body.node("Greater", [y, body.constant(np.float32(0))])
        y = body.node("Where", [positive, body.constant(weight), body.constant(np.float32(0))])
    elif mode == "TFIDF" and weights is not None and len(weights):
        y = body.node("Mul", [y, body.constant(weight)])
    if len(shape) == 1:
        y = body.node("Reshape", [y, body.constant(np.array([width]))])
    return [body.result(y)]


__all__ = ["convert_tfidf_vectorizer", "ngram_pool"]
