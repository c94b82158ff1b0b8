"""Einstein summation: products of tensors summed over the letters the output lacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import AnyTensor, GraphOp, PatternKind, static_shape
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like


class EinsumError(ValueError):
    """An equation that does not describe its operands."""


def parse_einsum(equation: str) -> tuple[list[str], str]:
    """The input terms and the output term of a normalised equation
    ("ij,jk->ik": ASCII letters only, an explicit output)."""
    inputs, arrow, output = equation.partition("->")
    if not arrow:
        raise EinsumError(f"equation '{equation}' has no '->' and output term")
    terms = inputs.split(",")
    for term in (*terms, output):
        for char in term:
            if not (char.isascii() and char.isalpha()):
                raise EinsumError(f"equation '{equation}' has the invalid character '{char}'")
    return terms, output


def einsum_letter_sizes(
    equation: str, shapes: Sequence[Sequence[int]]
) -> tuple[dict[str, int], str]:
    """The size of every letter of `equation` over operands of `shapes` (a size-1
    dimension broadcasts against the letter's size elsewhere), and the output term."""
    terms, output = parse_einsum(equation)
    if len(terms) != len(shapes):
        raise EinsumError(
            f"equation '{equation}' has {len(terms)} input terms for {len(shapes)} operands"
        )
    sizes: dict[str, int] = {}
    for n, (term, shape) in enumerate(zip(terms, shapes)):
        if len(term) != len(shape):
            raise EinsumError(
                f"term '{term}' has {len(term)} letters for operand {n} of rank {len(shape)}"
            )
        for letter, size in zip(term, shape):
            known = sizes.get(letter, size)
            if known != size and 1 not in (known, size):
                raise EinsumError(f"letter '{letter}' has sizes {known} and {size}")
            sizes[letter] = max(known, size) if 1 in (known, size) else size
    if len(set(output)) != len(output):
        raise EinsumError(f"output '{output}' of equation '{equation}' repeats a letter")
    missing = [letter for letter in output if letter not in sizes]
    if missing:
        raise EinsumError(
            f"output '{output}' of equation '{equation}' names '{missing[0]}', which no input has"
        )
    return sizes, output


@irdl_op_definition
class EinsumOp(GraphOp):
    """Einstein summation over a normalised equation: one term of letters per
    operand, `->`, the output's letters (explicit, each once, ASCII letters only; the
    ONNX importer expands ellipses and implicit outputs).

    result[output letters] = sum over the letters no output has of the product of
    every operand at its letters. A letter names one size: a size-1 dimension
    broadcasts against the letter's size in another operand, and a letter twice in
    one term reads that term's diagonal. Out-elementwise-fusable (a reduction over the
    contracted letters, as matmul).

        %s = graph.einsum "bhqd,bhkd->bhqk" %q, %k : (tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x6xf32>
        %t = graph.einsum "ii->" %m : (tensor<3x3xf32>) -> tensor<f32>
    """

    name = "graph.einsum"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE
    FLOAT_OPERANDS: ClassVar[bool] = False

    inputs = var_operand_def(AnyTensor)
    equation = prop_def(StringAttr)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$equation $inputs attr-dict `:` functional-type($inputs, results)"

    def __init__(self, equation: str, inputs: Sequence[SSAValue | Operation]):
        values = [SSAValue.get(value) for value in inputs]
        sizes, output = einsum_letter_sizes(equation, [static_shape(v) for v in values])
        shape = tuple(sizes[letter] for letter in output)
        super().__init__(
            operands=[values],
            properties={"equation": StringAttr(equation)},
            result_types=[tensor_type_like(values[0].type, shape)],
        )

    @property
    def letter_sizes(self) -> dict[str, int]:
        return einsum_letter_sizes(self.equation.data, [static_shape(v) for v in self.inputs])[0]

    @property
    def terms(self) -> tuple[list[str], str]:
        """The input terms and the output term."""
        return parse_einsum(self.equation.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        if not self.inputs:
            raise VerifyException(f"'{self.name}' needs at least one operand")
        try:
            sizes, output = einsum_letter_sizes(
                self.equation.data, [static_shape(v) for v in self.inputs]
            )
        except EinsumError as err:
            raise VerifyException(f"'{self.name}' {err}") from None
        return tuple(sizes[letter] for letter in output)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        result = einsum_reference(self.equation.data, inputs)
        return [np.asarray(result, dtype=numpy_dtype(self.result.type))]


def einsum_reference(equation: str, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """A normalised equation evaluated with numpy, in the first operand's type (numpy
    broadcasts ellipsis dimensions only: size-1 dimensions are expanded first)."""
    sizes, _ = einsum_letter_sizes(equation, [np.shape(a) for a in arrays])
    terms, _ = parse_einsum(equation)
    dtype = np.asarray(arrays[0]).dtype
    # numpy's einsum knows no bfloat16 (an ml_dtypes type): it computes in f32
    compute = np.float32 if dtype.name == "bfloat16" else dtype
    expanded = [
        np.broadcast_to(np.asarray(a, dtype=compute), tuple(sizes[letter] for letter in term))
        for a, term in zip(arrays, terms)
    ]
    return np.asarray(np.einsum(equation, *expanded), dtype=dtype)


OPS = (EinsumOp,)

__all__ = ["EinsumError", "EinsumOp", "einsum_letter_sizes", "einsum_reference", "parse_einsum"]
