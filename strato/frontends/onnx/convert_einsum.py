"""Converter for ONNX Einsum: the equation lowered to transposes, reshapes, sums and
batched matrix products.

Operands are contracted left to right. Before each product, a letter that no later
operand and not the output uses, and that only one side has, is summed away
(`graph.reduce_sum`); the two sides are then transposed to [batch, free, contracted] and
[batch, contracted, free], flattened to three dimensions and multiplied
(`graph.matmul`); the product is unflattened, and the last result transposed to the
output's order:

    Einsum("bij,bjk->bik", x, y)  ->  graph.matmul %x, %y
    Einsum("ij->ji", x)           ->  graph.transpose %x [1, 0]
    Einsum("bhid,bhjd->bhij")     ->  transpose(y), reshapes, graph.matmul, reshape
    Einsum("ii->i", x)            ->  graph.reshape to [n * n], graph.slice step n + 1

A letter twice in one term takes the diagonal first (the two dimensions moved last,
merged, and sliced with a stride of n + 1). An ellipsis stands for the same (right-aligned, broadcasting) dimensions in every term.
Size-1 dimensions broadcast against their letter's size in the other operand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.base import element_type
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of

_ELLIPSIS = "..."


@dataclass
class Term:
    """A tensor and the letter of each of its dimensions."""

    value: ImportedValue
    letters: list[str]

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.value)

    def size(self, letter: str) -> int:
        return self.shape[self.letters.index(letter)]


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
        if any(letters.count(letter) > 2 for letter in letters):
            raise ctx.error(f"term '{term}' has a letter more than twice")
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


class _Builder:
    """Graph ops, or numpy when the operand is known at import time."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx

    def _operand(self, value: ImportedValue) -> SSAValue:
        if isinstance(value, np.ndarray):
            return self.ctx.materialize(np.require(value, requirements="C"))
        return value

    def transpose(self, term: Term, letters: list[str]) -> Term:
        perm = [term.letters.index(letter) for letter in letters]
        if perm == list(range(len(perm))):
            return Term(term.value, letters)
        if isinstance(term.value, np.ndarray):
            return Term(np.array(np.transpose(term.value, perm), order="C"), letters)
        return Term(self.ctx.emit(graph.TransposeOp(term.value, perm)).results[0], letters)

    def reshape(self, value: ImportedValue, shape: Sequence[int]) -> ImportedValue:
        shape = tuple(int(d) for d in shape)
        if isinstance(value, np.ndarray):
            return value.reshape(shape)
        if shape_of(value) == shape:
            return value
        return self.ctx.emit(graph.ReshapeOp(value, shape)).results[0]

    def sum_out(self, term: Term, letters: set[str]) -> Term:
        axes = [d for d, letter in enumerate(term.letters) if letter in letters]
        if not axes:
            return term
        kept = [letter for letter in term.letters if letter not in letters]
        if isinstance(term.value, np.ndarray):
            total = np.sum(term.value, axis=tuple(axes), dtype=term.value.dtype)
            return Term(np.asarray(total), kept)
        op = self.ctx.emit(graph.ReduceSumOp(term.value, axes))
        return Term(op.results[0], kept)

    def diagonals(self, term: Term) -> Term:
        """The term with each letter it repeats taken once, along the diagonal."""
        for letter in dict.fromkeys(term.letters):
            if term.letters.count(letter) < 2:
                continue
            first = term.letters.index(letter)
            second = term.letters.index(letter, first + 1)
            size = term.shape[first]
            if term.shape[second] != size:
                raise self.ctx.error(
                    f"letter '{letter}' has sizes {size} and {term.shape[second]} in one term"
                )
            others = [d for d in range(len(term.letters)) if d not in (first, second)]
            perm = [*others, first, second]
            value = term.value
            if perm != list(range(len(perm))):
                value = self._transposed(value, perm)
            rest = [term.shape[d] for d in others]
            flat = self.reshape(value, [*rest, size * size])
            starts = [0] * (len(rest) + 1)
            steps = [1] * len(rest) + [size + 1]
            shape = [*rest, size]
            if isinstance(flat, np.ndarray):
                diagonal: ImportedValue = np.array(flat[..., :: size + 1], order="C")
            else:
                diagonal = self.ctx.emit(graph.SliceOp(flat, starts, steps, shape)).results[0]
            term = Term(diagonal, [*(term.letters[d] for d in others), letter])
        return term

    def _transposed(self, value: ImportedValue, perm: list[int]) -> ImportedValue:
        if isinstance(value, np.ndarray):
            return np.array(np.transpose(value, perm), order="C")
        return self.ctx.emit(graph.TransposeOp(value, perm)).results[0]

    def broadcast(self, term: Term, sizes: dict[str, int]) -> Term:
        shape = tuple(sizes[letter] for letter in term.letters)
        if shape == term.shape:
            return term
        if isinstance(term.value, np.ndarray):
            return Term(np.broadcast_to(term.value, shape).copy(), term.letters)
        return Term(self.ctx.emit(graph.BroadcastToOp(term.value, shape)).results[0], term.letters)

    def matmul(self, lhs: ImportedValue, rhs: ImportedValue) -> ImportedValue:
        if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
            return np.matmul(lhs, rhs).astype(lhs.dtype)
        op = graph.MatmulOp(self._operand(lhs), self._operand(rhs))
        return self.ctx.emit(op).results[0]


def contract(
    ctx: NodeContext, build: _Builder, lhs: Term, rhs: Term, keep: set[str]
) -> Term:
    """The product of two terms, summing the letters they share that `keep` lacks."""
    lhs = build.sum_out(lhs, {l for l in lhs.letters if l not in keep and l not in rhs.letters})
    rhs = build.sum_out(rhs, {l for l in rhs.letters if l not in keep and l not in lhs.letters})
    shared = [l for l in lhs.letters if l in rhs.letters]
    sizes: dict[str, int] = {}
    for term in (lhs, rhs):
        for letter in term.letters:
            size = term.size(letter)
            known = sizes.get(letter, size)
            if known != size and 1 not in (known, size):
                raise ctx.error(f"letter '{letter}' has sizes {known} and {size}")
            sizes[letter] = max(known, size) if 1 in (known, size) else size
    batch = [l for l in shared if l in keep]
    summed = [l for l in shared if l not in keep]
    left = [l for l in lhs.letters if l not in shared]
    right = [l for l in rhs.letters if l not in shared]
    lhs = build.broadcast(build.transpose(lhs, batch + left + summed), sizes)
    rhs = build.broadcast(build.transpose(rhs, batch + summed + right), sizes)

    def count(letters: list[str]) -> int:
        return math.prod(sizes[l] for l in letters)

    a = build.reshape(lhs.value, (count(batch), count(left), count(summed)))
    b = build.reshape(rhs.value, (count(batch), count(summed), count(right)))
    product = build.matmul(a, b)
    letters = batch + left + right
    return Term(build.reshape(product, [sizes[l] for l in letters]), letters)


def convert_einsum(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Einsum -> graph.matmul, transpose, reshape, reduce_sum and broadcast_to
    (see the module docstring); folded with numpy when every input is known."""
    equation = ctx.attr("equation")
    if not isinstance(equation, str):
        raise ctx.error("attribute equation is required")
    count = len(ctx.node.input)
    if count < 1:
        raise ctx.error("Einsum needs at least one input")
    values = [ctx.value(n) for n in range(count)]
    terms_letters, output = parse_equation(ctx, equation, [len(shape_of(v)) for v in values])
    if all(isinstance(v, np.ndarray) for v in values):
        return [np.asarray(np.einsum(equation.replace(" ", ""), *values))]
    if count > 1 and not all(_is_float(v) for v in values):
        raise ctx.error("Einsum of several integer tensors is not supported (products are float)")
    build = _Builder(ctx)
    terms = [build.diagonals(Term(v, letters)) for v, letters in zip(values, terms_letters)]
    current = terms[0]
    for n, term in enumerate(terms[1:], start=1):
        keep = set(output).union(*(t.letters for t in terms[n + 1 :]))
        current = contract(ctx, build, current, term, keep)
    current = build.sum_out(current, {l for l in current.letters if l not in output})
    return [build.transpose(current, output).value]


def _is_float(value: ImportedValue) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "f"
    return isinstance(element_type(value), AnyFloat)
