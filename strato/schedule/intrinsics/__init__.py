"""Tensor intrinsics: what a hardware instruction or micro-kernel computes, and how.

An intrinsic is declared, as in the TVM paper, by a te description of what it computes
(a `te.primitive` whose one stage is the intrinsic's computation, on operands of the
intrinsic's shape) plus its implementation (a function that emits the code replacing a
matched loop nest). `tensorize` (strato.schedule.tensorize) lowers the description to its
canonical loop nest (with the intrinsic's `lower`, convert-te-to-loops'
`lower_te_text`) and matches a kernel's loop nest against it.

Operands are named by the description's placeholders and its reduce stage; `unit_stride`
says along which description axis an operand must move by one element per iteration in
the matched kernel (the vector dimension of a micro-kernel): the other strides of the
kernel's buffers are free, as a TVM intrinsic's buffers declare symbolic strides.

    intrinsic = get_intrinsic("cpu.fma_tile.8x32x64")
    intrinsic.description      # te text
    intrinsic.unit_stride      # {"b": "j", "c": "j"}

Names are looked up in the registry first, then by family: `cpu.fma_tile.<MR>x<NR>x<K>`
names a register-blocked fp32 micro-kernel of any tile (strato.targets.llvm.intrinsics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strato.schedule.errors import ScheduleError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from strato.schedule.tensorize import Match


TENSORIZED_ATTR = "tensorized"
"""String attribute naming the intrinsic on the loops that implement it."""


@dataclass(frozen=True)
class Intrinsic:
    """A named computation a loop nest can be replaced by."""

    name: str
    description: str
    """te text: one `te.primitive` whose last stage is what the intrinsic computes."""
    implement: Callable[[Match], None] = field(compare=False)
    """Replaces the matched loop nest (match.root) by the intrinsic's code."""
    unit_stride: dict[str, str] = field(default_factory=dict)
    """operand -> description axis along which it must be contiguous."""
    lower: Callable[[str], ModuleOp] = field(kw_only=True, compare=False)
    """The description's canonical loop nest, from its text (`strato.transforms.
    convert_te_to_loops.lower_te_text`)."""


_REGISTRY: dict[str, Intrinsic] = {}
_FAMILIES: dict[str, Callable[[str], Intrinsic]] = {}


def register_intrinsic(intrinsic: Intrinsic) -> Intrinsic:
    _REGISTRY[intrinsic.name] = intrinsic
    return intrinsic


def register_family(prefix: str, make: Callable[[str], Intrinsic]) -> None:
    """Intrinsics named `<prefix>.<parameters>`, made on first use by `make(name)`."""
    _FAMILIES[prefix] = make


def get_intrinsic(name: str) -> Intrinsic:
    """The intrinsic called `name`; ScheduleError when there is none."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    for prefix, make in _FAMILIES.items():
        if name.startswith(prefix + "."):
            return register_intrinsic(make(name))
    known = sorted(_REGISTRY) + [f"{p}.<parameters>" for p in sorted(_FAMILIES)]
    raise ScheduleError(
        f"cannot tensorize: no intrinsic named '{name}' (known: {', '.join(known) or 'none'})"
    )


def unregister_intrinsic(name: str) -> None:
    """Forget the intrinsic or family `name` (unknown names are ignored)."""
    _REGISTRY.pop(name, None)
    _FAMILIES.pop(name, None)


__all__ = [
    "TENSORIZED_ATTR",
    "Intrinsic",
    "get_intrinsic",
    "register_family",
    "register_intrinsic",
    "unregister_intrinsic",
]
