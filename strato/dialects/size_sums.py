"""Run-time sizes computed from others: sums of sizes (`SizeSum`), which name the
class of dimensions they size at every level (a graph function's classes of
run-time dimensions, a te primitive's `te.size`s, a kernel's size arguments) by their
text, so that a level below computes them from the sizes they sum."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_TOKEN = re.compile(r'\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<op>[-+*]))')


@dataclass(frozen=True)
class SizeSum:
    """A run-time size computed from others: a sum of sizes, each times an int, plus
    an int (a concatenation along a run-time dimension: `past + sequence`). Its text,
    which names its class of dimensions, lists the terms by name, a name that is not
    an identifier in double quotes:

    >>> SizeSum.parse("sequence + past + 1")
    SizeSum(terms=(('past', 1), ('sequence', 1)), constant=1)
    >>> SizeSum((("past", 1), ("sequence", 2)), -1).text()
    'past + 2 * sequence - 1'
    """

    terms: tuple[tuple[str, int], ...]
    constant: int = 0

    @staticmethod
    def of(terms: Mapping[str, int], constant: int = 0) -> SizeSum:
        return SizeSum(tuple(sorted((n, c) for n, c in terms.items() if c)), constant)

    @staticmethod
    def parse(text: str) -> SizeSum | None:
        """The sum `text` spells, or None when it is a plain name (or not a sum)."""
        terms: dict[str, int] = {}
        constant = 0
        position, sign, first = 0, 1, True
        leading = _TOKEN.match(text)
        if leading is not None and leading["op"] == "-":
            position, sign = leading.end(), -1
        while position < len(text):
            if not first:
                token = _TOKEN.match(text, position)
                if token is None or token["op"] not in ("+", "-"):
                    return None
                sign, position = (1 if token["op"] == "+" else -1), token.end()
            first = False
            token = _TOKEN.match(text, position)
            if token is None or token["op"] is not None:
                return None
            position = token.end()
            if token["int"] is not None:
                count = int(token["int"])
                after = _TOKEN.match(text, position)
                if after is None or after["op"] != "*":
                    constant += sign * count
                    continue
                token = _TOKEN.match(text, after.end())
                if token is None or token["int"] is not None or token["op"] is not None:
                    return None
                position = token.end()
            else:
                count = 1
            name = token["name"] if token["name"] is not None else re.sub(r"\\(.)", r"\1", token["quoted"])
            terms[name] = terms.get(name, 0) + sign * count
        total = SizeSum.of(terms, constant)
        if text.strip() == "" or (len(total.terms) == 1 and total.terms[0][1] == 1 and not constant and _NAME.fullmatch(text.strip())):
            return None
        return total

    def text(self) -> str:
        parts: list[str] = []
        for name, count in self.terms:
            spelled = name if _NAME.fullmatch(name) else '"' + re.sub(r'(["\\])', r"\\\1", name) + '"'
            magnitude = abs(count)
            term = spelled if magnitude == 1 else f"{magnitude} * {spelled}"
            if not parts:
                parts.append(term if count > 0 else f"-{term}")
            else:
                parts.append(f"{'+' if count > 0 else '-'} {term}")
        if self.constant or not parts:
            if parts:
                parts.append(f"{'-' if self.constant < 0 else '+'} {abs(self.constant)}")
            else:
                parts.append(str(self.constant))
        return " ".join(parts)

    def plus(self, other: SizeSum) -> SizeSum:
        terms = dict(self.terms)
        for name, count in other.terms:
            terms[name] = terms.get(name, 0) + count
        return SizeSum.of(terms, self.constant + other.constant)

    def evaluate(self, sizes: Mapping[str, int]) -> int:
        return self.constant + sum(count * sizes[name] for name, count in self.terms)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.terms]

    @property
    def class_name(self) -> str:
        """The name of the class of dimensions of this size: the size's own when it is
        one, else the sum's text."""
        return self.terms[0][0] if self.is_name else self.text()

    @property
    def is_name(self) -> bool:
        """Whether the sum is one size itself (`sequence`)."""
        return not self.constant and len(self.terms) == 1 and self.terms[0][1] == 1


def size_sum(name: str) -> SizeSum:
    """The class named `name` as a sum: the sum its text spells (a class of dimensions
    computed from others), else the size itself."""
    return SizeSum.parse(name) or SizeSum(((name, 1),))


__all__ = ["SizeSum", "size_sum"]
