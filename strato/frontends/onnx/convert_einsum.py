"""Converter for ONNX Einsum: graph.einsum with the equation normalised.

The importer resolves what depends on the operands' ranks, so that graph.einsum's
equation is plain: an ellipsis becomes letters of its own (right-aligned, the same in
every term; renamed to ASCII letters no term uses), and an implicit output becomes the
explicit one (the ellipsis' letters, then the letters used once, in alphabetical order):

    Einsum("...ij,...jk", x: [2, 3, 4], y: [4, 5])
        -> graph.einsum "aij,jk->aik" %x, %y : (...) -> tensor<2x3x5xf32>
    Einsum("bhqd,bhkd->bhqk", q, k)  -> graph.einsum "bhqd,bhkd->bhqk" %q, %k

Size-1 dimensions broadcast against their letter's size in another operand, and a
letter repeated in one term reads a diagonal (graph.einsum's semantics). An Einsum of
known operands is folded with numpy. Attention-style and other batched matrix products
stay fast: their te stage is scheduled by the GEMM template (`strategies/einsum.py`).
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from strato.dialects import graph
from strato.dialects.graph.einsum import EinsumError, einsum_letter_sizes, einsum_reference
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of

_ELLIPSIS = "..."


def parse_equation(
    ctx: NodeContext, equation: str, ranks: Sequence[int]
) -> tuple[list[list[str]], list[str]]:
    """The letters of each input term and of the output; an ellipsis becomes letters of
    its own (characters that are not ASCII letters), aligned from the right."""
    text = equation.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(
            f"equation '{equation}' has {len(terms)} input terms for {len(ranks)} inputs"
        )
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks):
        if _ELLIPSIS in term:
            ellipsis_rank = max(ellipsis_rank, rank - (len(term) - len(_ELLIPSIS)))
    ellipsis_letters = [chr(0x100 + n) for n in range(ellipsis_rank)]
    parsed = []
    for n, (term, rank) in enumerate(zip(terms, ranks)):
        letters = _letters(ctx, term, equation)
        if _ELLIPSIS in term:
            covered = rank - (len(term) - len(_ELLIPSIS))
            if covered < 0:
                raise ctx.error(
                    f"term '{term}' has more letters than input {n} has dimensions ({rank})"
                )
            at = letters.index(_ELLIPSIS)
            letters[at : at + 1] = ellipsis_letters[ellipsis_rank - covered :]
        if len(letters) != rank:
            raise ctx.error(
                f"term '{term}' has {len(letters)} letters for input {n} of rank {rank}"
            )
        parsed.append(letters)
    if arrow:
        result = _letters(ctx, output, equation)
        if _ELLIPSIS in result:
            at = result.index(_ELLIPSIS)
            result[at : at + 1] = ellipsis_letters
    else:
        counts: dict[str, int] = {}
        for letters in parsed:
            for letter in letters:
                counts[letter] = counts.get(letter, 0) + 1
        once = sorted(letter for letter, c in counts.items() if c == 1 and letter.isascii())
        result = [*ellipsis_letters, *once]
    every = {letter for letters in parsed for letter in letters}
    if len(set(result)) != len(result) or not set(result) <= every:
        raise ctx.error(
            f"output '{output}' of equation '{equation}' repeats a letter or names one no input has"
        )
    return parsed, result


def _letters(ctx: NodeContext, term: str, equation: str) -> list[str]:
    letters: list[str] = []
    rest = term
    while rest:
        if rest.startswith(_ELLIPSIS):
            if _ELLIPSIS in letters:
                raise ctx.error(f"term '{term}' of equation '{equation}' has two ellipses")
            letters.append(_ELLIPSIS)
            rest = rest[len(_ELLIPSIS) :]
            continue
        if not (rest[0].isascii() and rest[0].isalpha()):
            raise ctx.error(f"equation '{equation}' has the invalid character '{rest[0]}'")
        letters.append(rest[0])
        rest = rest[1:]
    return letters


def normalized_equation(terms: Sequence[Sequence[str]], output: Sequence[str]) -> str:
    """The equation graph.einsum takes: the letters an ellipsis stood for renamed to
    ASCII letters no term uses, and the output explicit."""
    every = [letter for letters in (*terms, output) for letter in letters]
    free = iter(c for c in string.ascii_letters if c not in every)
    names: dict[str, str] = {}
    for letter in dict.fromkeys(every):
        if letter.isascii():
            names[letter] = letter
        else:
            names[letter] = next(free)

    def spell(letters: Sequence[str]) -> str:
        return "".join(names[letter] for letter in letters)

    return ",".join(spell(letters) for letters in terms) + "->" + spell(output)


def convert_einsum(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Einsum -> graph.einsum with its equation normalised (see the module
    docstring); folded with numpy when every input is known."""
    equation = ctx.attr("equation")
    if not isinstance(equation, str):
        raise ctx.error("attribute equation is required")
    count = len(ctx.node.input)
    if count < 1:
        raise ctx.error("Einsum needs at least one input")
    values = [ctx.value(n) for n in range(count)]
    terms, output = parse_equation(ctx, equation, [len(shape_of(v)) for v in values])
    if len({letter for letters in (*terms, output) for letter in letters}) > 52:
        raise ctx.error(f"equation '{equation}' needs more than 52 distinct letters")
    normalized = normalized_equation(terms, output)
    try:
        einsum_letter_sizes(normalized, [shape_of(v) for v in values])
    except EinsumError as err:
        raise ctx.error(str(err)) from None
    if all(isinstance(v, np.ndarray) for v in values):
        return [einsum_reference(normalized, values)]
    operands = [
        ctx.materialize(np.require(v, requirements="C")) if isinstance(v, np.ndarray) else v
        for v in values
    ]
    return [ctx.emit(graph.EinsumOp(normalized, operands)).results[0]]
