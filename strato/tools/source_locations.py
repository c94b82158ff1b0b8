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
import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    NameLoc,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation
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
    return " ".join(part for part in parts if part)


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
        if isinstance(op.location, UnknownLoc):
            op.location = file_location(self.location_at(start))
        return op


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
