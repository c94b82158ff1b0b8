"""Source locations for diagnostics: which line of the input an op came from.

xDSL ops are parsed without a location, so a verifier error could not say where the bad
op is written. `LocatingParser` gives every op it reads a `FileLineColLoc` (the position
of its first token, results included, as in MLIR), unless the text already spells a
`loc(...)`. The location lives on the op, so it survives clones and printing it with
`--print-debuginfo` shows it.

    parser = LocatingParser(ctx, text, "model.mlir")
    module = parser.parse_module()
    location_of(module.body.block.first_op)   # SourceLocation("model.mlir", 1, 1)

`find_failing_op` maps a `VerifyException` raised by `module.verify()` back to the op
that raised it, since xDSL's exception does not carry the op.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

import numpy as np
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    CallSiteLoc,
    FileLineColLoc,
    DenseIntOrFPElementsAttr,
    FusedLoc,
    IntAttr,
    IntegerType,
    NameLoc,
    ShapedType,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer


@dataclass(frozen=True)
class SourceLocation:
    """A place in an input file; `line` and `column` are 1-based, None when unknown."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


def one_line(message: str) -> str:
    """A possibly multi-line message as one line (xDSL's constraint errors span several)."""
    parts = [part.strip() for part in str(message).splitlines()]
    text = " ".join(part for part in parts if part)
    if len(text) > MAX_MESSAGE_CHARS:
        # A message that quotes the input (a 3000-element shape) stays readable.
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text


MAX_MESSAGE_CHARS = 1000
MAX_DIMENSION = 2**63 - 1
# MLIR's limit on the width of an integer type.
MAX_INTEGER_WIDTH = 2**24 - 1
MAX_DENSE_ELEMENTS = 2**26


class LineIndex:
    """Maps character offsets of a text to file lines and columns; `first_line` is the
    line of the whole file on which the text starts."""

    def __init__(self, text: str, file: str, first_line: int = 1):
        self.file = file
        self.first_line = first_line
        # Start offsets of the lines; positions map to lines by bisection, so locating
        # every op of a large module stays linear.
        self._line_starts = [0]
        newline = text.find("\n")
        while newline != -1:
            self._line_starts.append(newline + 1)
            newline = text.find("\n", newline + 1)

    def location_at(self, position: int) -> SourceLocation:
        index = bisect.bisect_right(self._line_starts, position) - 1
        column = position - self._line_starts[index] + 1
        return SourceLocation(self.file, self.first_line + index, column)


class LocatingParser(Parser):
    """An MLIR parser that records where each op starts.

    `first_line` is the line of the whole file on which `text` starts, so that a chunk
    of a split input reports positions in the original file.
    """

    def __init__(self, ctx: Context, text: str, file: str, first_line: int = 1):
        # xDSL's constructor lexes the first token with its own lexer; start it on an
        # empty text and install the guarded lexer on the real one, so that no token,
        # the first included, is lexed by the backtracking string-literal regex.
        super().__init__(ctx, "", file)
        self.lines = LineIndex(text, file, first_line)
        self.file = file
        self.first_line = first_line
        self._parser_state = ParserState(GuardedLexer(Input(text, file)))

    def location_at(self, position: int) -> SourceLocation:
        """The file location of a character offset into the parsed text."""
        return self.lines.location_at(position)

    # -- limits on what a short text can make the parser build ------------------------

    def parse_shape_dimension(self, allow_dynamic: bool = True) -> int:
        start = self._current_token.span.start
        dimension = super().parse_shape_dimension(allow_dynamic)
        if dimension > MAX_DIMENSION:
            self.raise_error(
                f"dimension {dimension} is too large (at most 2**63 - 1)", start, self.pos
            )
        return dimension

    def _parse_optional_integer_or_float_type(self) -> TypeAttribute | None:
        start = self._current_token.span.start
        parsed = super()._parse_optional_integer_or_float_type()
        if isinstance(parsed, IntegerType) and parsed.width.data > MAX_INTEGER_WIDTH:
            self.raise_error(
                f"integer width {parsed.width.data} is too large "
                f"(at most {MAX_INTEGER_WIDTH} bits)",
                start,
                self.pos,
            )
        return parsed

    def parse_dense_int_or_fp_elements_attr(self, type: Any) -> DenseIntOrFPElementsAttr:
        if type is not None:
            self._check_dense_size(type, self.pos)
        return super().parse_dense_int_or_fp_elements_attr(type)

    def _parse_dense_literal_type(self) -> Any:
        start = self._current_token.span.start
        type = super()._parse_dense_literal_type()
        self._check_dense_size(type, start)
        return type

    def _check_dense_size(self, type: Attribute, start: int) -> None:
        # A splat `dense<1.0> : tensor<99999999999xf32>` is a few characters that xDSL
        # would expand into one Python value per element.
        if not isinstance(type, ShapedType):
            return
        elements = math.prod(type.get_shape())
        if elements > MAX_DENSE_ELEMENTS:
            self.raise_error(
                f"dense constant of {elements} elements is too large "
                f"(strato holds constants element by element, at most {MAX_DENSE_ELEMENTS})",
                start,
                self.pos,
            )

    def _parse_tensor_literal_element(self) -> Any:
        # MLIR reads a hex integer in a dense literal of floats as the bit pattern of
        # the value (`dense<0x7FC00000> : tensor<2xf32>` is NaN); xDSL would read the
        # integer's value (2.14e9).
        element = super()._parse_tensor_literal_element()
        value = element.value
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and element.span.text.lstrip("-").lower().startswith("0x")
        ):
            return _HexLiteralElement(element.is_negative, value, element.span)
        return element

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except ParseError:
            raise
        except DiagnosticException as err:
            # An attribute or op constructor rejected what was parsed; report it at the
            # op being read rather than as an unlocated error.
            raise ParseError(Span(start, start + 1, self.lexer.input), one_line(str(err)))
        except OverflowError as err:
            # A literal that does not fit its element type (1e10 as f16).
            raise ParseError(
                Span(start, start + 1, self.lexer.input),
                f"a value does not fit its type: {one_line(str(err))}",
            )
        if isinstance(op.location, UnknownLoc):
            op.location = file_location(self.location_at(start))
        return op


class _HexLiteralElement(Parser._TensorLiteralElement):
    """A hex integer in a dense literal: the bits of a float element."""

    def to_type(self, parser: Any, type: Any) -> Any:
        if not isinstance(type, AnyFloat):
            return super().to_type(parser, type)
        from strato.dialects.tensor_types import numpy_dtype

        width = type.bitwidth
        if self.is_negative or width not in (8, 16, 32, 64) or self.value >= 1 << width:
            parser.raise_error(
                f"hex literal {self.span.text} is not the bits of a {type} value",
                at_position=self.span.start,
                end_position=self.span.end,
            )
        bits = np.array(self.value, dtype=f"uint{width}")
        return float(bits.view(numpy_dtype(type)))


class GuardedLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal regex that cannot backtrack.

    xDSL 0.75 lexes string literals with `"(?:[^"\\\n\v\f]+|\\(...))*"`: the nested
    quantifier backtracks exponentially on an unterminated literal, so a stray `"` on a
    long line hangs the parser. The same language without the inner `+` lexes in
    linear time.
    """

    _unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
    )


def file_location(location: SourceLocation) -> FileLineColLoc:
    """The builtin location attribute of a source location."""
    return FileLineColLoc(
        StringAttr(location.file),
        IntAttr(location.line or 0),
        IntAttr(location.column or 0),
    )


def _from_attribute(location: Attribute) -> SourceLocation | None:
    if isinstance(location, FileLineColLoc):
        return SourceLocation(
            location.filename.data, location.line.data, location.column.data
        )
    if isinstance(location, NameLoc):
        return _from_attribute(location.location)
    if isinstance(location, CallSiteLoc):
        return _from_attribute(location.callee)
    if isinstance(location, FusedLoc):
        for inner in location.locations.data:
            if (found := _from_attribute(inner)) is not None:
                return found
    return None


def location_of(op: Operation) -> SourceLocation | None:
    """Where `op` is written, or, for an op a pass created, where its closest
    ancestor with a location is written; None when no ancestor has one."""
    current: Operation | None = op
    while current is not None:
        if (found := _from_attribute(current.location)) is not None:
            return found
        current = current.parent_op()
    return None


def _verify_message(op: Operation) -> str | None:
    try:
        op.verify()
    except DiagnosticException as err:
        return str(err)
    return None


def _first_failing_child(op: Operation) -> tuple[Operation, str] | None:
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                if (message := _verify_message(child)) is not None:
                    return child, message
    return None


def find_failing_op(root: Operation, message: str) -> Operation:
    """The innermost op under `root` whose verification raises `message`.

    xDSL verifies the ops of each region in order, nested ops before the op itself, and
    stops at the first failure; following the first failing child with the same message
    downwards finds the op that raised it. Used on the error path only.
    """
    current = root
    while (failing := _first_failing_child(current)) is not None:
        child, child_message = failing
        if child_message != message:
            break
        current = child
    return current


def deepest_op(root: Operation) -> tuple[Operation, int]:
    """The first most deeply nested op under `root` and its depth (root: 0), found
    without recursion, for IR nested too deeply for the recursive walks."""
    deepest, deepest_depth = root, 0
    stack: list[tuple[Operation, int]] = [(root, 0)]
    while stack:
        op, depth = stack.pop()
        if depth > deepest_depth:
            deepest, deepest_depth = op, depth
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                children = list(block.ops)
                stack.extend((child, depth + 1) for child in reversed(children))
    return deepest, deepest_depth
