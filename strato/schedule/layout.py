"""Index maps for transform_layout: a buffer's dimensions named on the left, its new
dimensions on the right as a name, `name // c` or `name % c`:

    IndexMap.parse("n, c, h, w -> n, c // 8, h, w, c % 8", (1, 32, 7, 7))

Every old dimension appears either once by itself, or once as `// c` and once as `% c`
with the same c, so the map is one-to-one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import SSAValue


class LayoutError(ValueError):
    """An index map that is malformed or not one-to-one."""


_TERM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:(//|%)\s*(\d+))?\s*$")


@dataclass(frozen=True)
class IndexMap:
    """New dimension k is (source[k] // divisor) or (source[k] % modulus) or source[k]."""

    text: str
    terms: tuple[tuple[int, str | None, int], ...]
    old_shape: tuple[int, ...]

    @staticmethod
    def parse(text: str, shape: Sequence[int]) -> IndexMap:
        if "->" not in text:
            raise LayoutError(f"index map {text!r} has no '->'")
        left, right = text.split("->", 1)
        names = [n.strip() for n in left.split(",") if n.strip()]
        if len(names) != len(shape):
            raise LayoutError(f"index map {text!r} names {len(names)} dimensions, the buffer has {len(shape)}")
        if len(set(names)) != len(names):
            raise LayoutError(f"index map {text!r} names a dimension twice")
        terms: list[tuple[int, str | None, int]] = []
        for part in right.split(","):
            match = _TERM.match(part)
            if match is None or match.group(1) not in names:
                raise LayoutError(f"cannot read {part.strip()!r} in index map {text!r}")
            op, value = match.group(2), int(match.group(3) or 0)
            if op is not None and value <= 0:
                raise LayoutError(f"{part.strip()!r} divides by {value}")
            terms.append((names.index(match.group(1)), op, value))
        for d, name in enumerate(names):
            uses = [(op, v) for src, op, v in terms if src == d]
            plain = uses == [(None, 0)]
            split = sorted(uses, key=str) == sorted([("%", uses[0][1]), ("//", uses[0][1])], key=str) if len(uses) == 2 else False
            if not (plain or split):
                raise LayoutError(
                    f"dimension {name} must appear once, or once as '{name} // c' and once as "
                    f"'{name} % c', in index map {text!r}"
                )
        return IndexMap(text, tuple(terms), tuple(shape))

    def new_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        result = []
        for src, op, value in self.terms:
            if op is None:
                result.append(shape[src])
            elif op == "//":
                result.append(-(-shape[src] // value))
            else:
                result.append(value)
        return tuple(result)

    def apply(self, index: Sequence[int]) -> tuple[int, ...]:
        out = []
        for src, op, value in self.terms:
            i = index[src]
            out.append(i if op is None else i // value if op == "//" else i % value)
        return tuple(out)

    def emit(self, indices: Sequence[SSAValue], builder: Builder) -> list[SSAValue]:
        result = []
        for src, op, value in self.terms:
            index = indices[src]
            if op is None:
                result.append(index)
                continue
            c = builder.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result
            kind = arith.DivUIOp if op == "//" else arith.RemUIOp
            result.append(builder.insert(kind(index, c)).result)
        return result


__all__ = ["IndexMap", "LayoutError"]
