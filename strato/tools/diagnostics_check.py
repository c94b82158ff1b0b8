"""Diagnostics as records, and the `--verify-diagnostics` check of MLIR's annotations.

A test states the diagnostics it expects in comments, next to the IR that causes them:

    // expected-error @+1 {{'graph.relu' expects float tensors}}
    %r = graph.relu %a : tensor<4xi32>
    %s = graph.relu %r : tensor<4xi32>  // expected-error {{expects float tensors}}

The designator after `@` is `+N`/`-N` (lines below/above), `above`/`below` (the nearest
line that is not itself an annotation) or `unknown` (a diagnostic with no line). The text
between `{{` and `}}` must occur in the message; with `expected-error-re` the parts
inside nested `{{...}}` are regular expressions. Severities: error, warning, remark, note.

`check_diagnostics` pairs produced diagnostics with expectations and returns what does
not pair up, as diagnostics to print: an unexpected one, or one expected but not produced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from strato.tools.source_locations import SourceLocation

SEVERITIES = ("error", "warning", "remark", "note")


@dataclass(frozen=True)
class Diagnostic:
    """One message for the user: `file:line:col: severity: message`."""

    severity: str
    message: str
    location: SourceLocation | str | None = None

    def __str__(self) -> str:
        if self.location is None:
            return f"{self.severity}: {self.message}"
        return f"{self.location}: {self.severity}: {self.message}"

    @property
    def line(self) -> int | None:
        if isinstance(self.location, SourceLocation):
            return self.location.line
        if isinstance(self.location, str):
            match = re.fullmatch(r".*:(\d+)(?::\d+)?", self.location)
            if match is not None:
                return int(match.group(1))
        return None

    @property
    def file(self) -> str | None:
        if isinstance(self.location, SourceLocation):
            return self.location.file
        if isinstance(self.location, str):
            match = re.fullmatch(r"(.*?)(?::\d+){1,2}", self.location)
            return self.location if match is None else match.group(1)
        return None


_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|remark|note)(?P<regex>-re)?"
    r" *(?:@(?P<designator>[+-]\d+|above|below|unknown))?"
    r" *\{\{(?P<text>.*)\}\}"
)


@dataclass
class Expectation:
    """One `expected-<severity>` annotation; `line` None means an unknown location."""

    severity: str
    text: str
    is_regex: bool
    line: int | None
    annotation: SourceLocation
    matched: bool = field(default=False)

    def matches(self, diagnostic: Diagnostic, file: str) -> bool:
        if self.matched or diagnostic.severity != self.severity:
            return False
        if self.line is None:
            if diagnostic.line is not None:
                return False
        elif diagnostic.line != self.line or diagnostic.file != file:
            return False
        if self.is_regex:
            return re.search(_regex_of(self.text), diagnostic.message) is not None
        return self.text in diagnostic.message


def _regex_of(text: str) -> str:
    """`foo {{[0-9]+}} bar` as a regex: literal text, with `{{...}}` parts as regexes."""
    pattern = []
    position = 0
    for match in re.finditer(r"\{\{(.*?)\}\}", text):
        pattern.append(re.escape(text[position : match.start()]))
        pattern.append(f"(?:{match.group(1)})")
        position = match.end()
    pattern.append(re.escape(text[position:]))
    return "".join(pattern)


def parse_expectations(text: str, file: str, first_line: int = 1) -> list[Expectation]:
    """The annotations of `text`, whose first line is line `first_line` of `file`."""
    lines = text.split("\n")
    annotations: list[tuple[int, re.Match[str]]] = []
    for index, line in enumerate(lines):
        match = _ANNOTATION.search(line)
        if match is not None:
            annotations.append((index, match))
    annotated = {index for index, _ in annotations}

    def nearest_plain_line(index: int, step: int) -> int:
        index += step
        while index in annotated and 0 <= index < len(lines):
            index += step
        return index

    expectations: list[Expectation] = []
    for index, match in annotations:
        designator = match.group("designator")
        target: int | None
        if designator is None:
            target = index
        elif designator == "unknown":
            target = None
        elif designator == "above":
            target = nearest_plain_line(index, -1)
        elif designator == "below":
            target = nearest_plain_line(index, +1)
        else:
            target = index + int(designator)
        expectations.append(
            Expectation(
                severity=match.group("severity"),
                text=match.group("text"),
                is_regex=match.group("regex") is not None,
                line=None if target is None else first_line + target,
                annotation=SourceLocation(file, first_line + index, match.start() + 1),
            )
        )
    return expectations


def check_diagnostics(
    produced: list[Diagnostic], expectations: list[Expectation], file: str
) -> list[Diagnostic]:
    """The mismatches between produced diagnostics and expectations, as errors to
    report (empty when every diagnostic was expected and every expectation met)."""
    problems: list[Diagnostic] = []
    for diagnostic in produced:
        for expectation in expectations:
            if expectation.matches(diagnostic, file):
                expectation.matched = True
                break
        else:
            problems.append(
                Diagnostic(
                    "error",
                    f"unexpected {diagnostic.severity}: {diagnostic.message}",
                    diagnostic.location,
                )
            )
    for expectation in expectations:
        if not expectation.matched:
            problems.append(
                Diagnostic(
                    "error",
                    f'expected {expectation.severity} "{expectation.text}" was not produced',
                    expectation.annotation,
                )
            )
    return problems
