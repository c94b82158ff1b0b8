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


# Where an annotation may start: `expected-` and a word, as a word of its own.
_ANNOTATION_START = re.compile(r"(?<![\w-])expected-(?P<kind>[A-Za-z]+)(?P<regex>-re)?")
_DESIGNATOR = re.compile(r"@(?P<designator>\S*)")
_VALID_DESIGNATOR = re.compile(r"[+-]\d+|above|below|unknown")


class MalformedAnnotation(Exception):
    """An `expected-...` annotation that cannot be read; it fails the check instead of
    being ignored, so a typo cannot make a test pass."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(str(diagnostic))
        self.diagnostic = diagnostic


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


@dataclass(frozen=True)
class _Annotation:
    severity: str
    is_regex: bool
    designator: str | None
    text: str
    index: int  # line index in the chunk
    column: int  # 1-based


def _read_annotations(line: str, index: int, file: str, first_line: int) -> list[_Annotation]:
    """The annotations on one line; MalformedAnnotation for one that cannot be read."""
    found: list[_Annotation] = []
    for start in _ANNOTATION_START.finditer(line):
        kind = start.group("kind")
        position = start.end()
        rest = line[position:]
        stripped = rest.lstrip()
        designator: str | None = None
        if stripped.startswith("@"):
            match = _DESIGNATOR.match(stripped)
            assert match is not None
            designator = match.group("designator").split("{{")[0]
            stripped = stripped[1 + len(designator) :].lstrip()
        location = SourceLocation(file, first_line + index, start.start() + 1)
        spelled = start.group(0)

        def malformed(reason: str) -> MalformedAnnotation:
            return MalformedAnnotation(Diagnostic("error", f"{reason}", location))

        if kind not in SEVERITIES:
            if designator is None and not stripped.startswith("{{"):
                continue  # prose such as "expected-output", not an annotation
            raise malformed(
                f"unknown annotation '{spelled}': use expected-error, expected-warning, "
                "expected-remark or expected-note"
            )
        if designator is not None and _VALID_DESIGNATOR.fullmatch(designator) is None:
            raise malformed(
                f"malformed designator '@{designator}' in {spelled}: use @+N, @-N, @above, "
                "@below or @unknown"
            )
        if not stripped.startswith("{{"):
            raise malformed(f"{spelled} needs its expected text in '{{{{...}}}}'")
        close = stripped.rfind("}}")
        if close < 2:
            raise malformed(f"unterminated {spelled}: no '}}}}' closes the expected text")
        text = stripped[2:close]
        is_regex = start.group("regex") is not None
        if is_regex:
            try:
                re.compile(_regex_of(text))
            except re.error as err:
                raise malformed(f"invalid regex in {spelled}: {err}") from None
        found.append(_Annotation(kind, is_regex, designator, text, index, start.start() + 1))
    return found


def parse_expectations(text: str, file: str, first_line: int = 1) -> list[Expectation]:
    """The annotations of `text`, whose first line is line `first_line` of `file`;
    MalformedAnnotation for one that cannot be read or points outside `text`."""
    lines = text.split("\n")
    annotations: list[_Annotation] = []
    for index, line in enumerate(lines):
        annotations.extend(_read_annotations(line, index, file, first_line))
    annotated = {annotation.index for annotation in annotations}

    def nearest_plain_line(index: int, step: int) -> int:
        index += step
        while index in annotated and 0 <= index < len(lines):
            index += step
        return index

    expectations: list[Expectation] = []
    for annotation in annotations:
        designator = annotation.designator
        target: int | None
        if designator is None:
            target = annotation.index
        elif designator == "unknown":
            target = None
        elif designator == "above":
            target = nearest_plain_line(annotation.index, -1)
        elif designator == "below":
            target = nearest_plain_line(annotation.index, +1)
        else:
            target = annotation.index + int(designator)
        location = SourceLocation(file, first_line + annotation.index, annotation.column)
        if target is not None and not 0 <= target < len(lines):
            where = "@" + designator if designator else ""
            raise MalformedAnnotation(
                Diagnostic(
                    "error",
                    f"expected-{annotation.severity} {where} points outside the input "
                    f"(line {first_line + target})".replace("  ", " "),
                    location,
                )
            )
        expectations.append(
            Expectation(
                severity=annotation.severity,
                text=annotation.text,
                is_regex=annotation.is_regex,
                line=None if target is None else first_line + target,
                annotation=location,
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
