"""The VTA GEMM core as a tensor intrinsic.

`vta.gemm.<B>x<BI>x<BO>` is one micro-op of VTA's GEMM core (vta.md section 3): for a
BATCH x BLOCK_OUT accumulator element, a BATCH x BLOCK_IN input element and a
BLOCK_OUT x BLOCK_IN weight element,

    out[i, j] += sum over k < BI of int32(inp[i, k]) * int32(wgt[j, k])

with int8 inputs and weights and int32 accumulation (wrapping). The default
configuration's intrinsic is `vta.gemm.1x16x16` (`gemm_name()`).

Its implementation does not rewrite the nest into scalar code: the matched loops stay as
they are (they compute exactly what the core computes) and are marked
`tensorized = "vta.gemm.<..>"`; `convert-loops-to-vta` folds the loops around such a
nest into the micro-op kernel of one `vta.gemm` (strato/targets/vta/convert_loops_to_vta.py).
All three operands must be contiguous along their lane axes (`unit_stride`), as the
on-chip element layouts are.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr

from strato.schedule.errors import ScheduleError
from strato.schedule.intrinsics import TENSORIZED_ATTR, Intrinsic, register_family
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig

if TYPE_CHECKING:
    from strato.schedule.tensorize import Match

FAMILY = "vta.gemm"

_NAME = re.compile(r"^vta\.gemm\.(\d+)x(\d+)x(\d+)$")


def gemm_name(config: VTAConfig = DEFAULT_CONFIG) -> str:
    """The intrinsic of `config`'s GEMM core."""
    return f"{FAMILY}.{config.batch}x{config.block_in}x{config.block_out}"


def description(batch: int, block_in: int, block_out: int) -> str:
    """The te description: one GEMM micro-op as an int32 sum reduction over k."""
    return f"""
te.primitive @vta_gemm {{
  %inp = te.placeholder "inp" : tensor<{batch}x{block_in}xi8>
  %wgt = te.placeholder "wgt" : tensor<{block_out}x{block_in}xi8>
  %out = te.reduce "out" sum (%i, %j) over (%k : {block_in}) init 0 : tensor<{batch}x{block_out}xi32> {{
    %x = te.read %inp[%i, %k] : tensor<{batch}x{block_in}xi8>
    %y = te.read %wgt[%j, %k] : tensor<{block_out}x{block_in}xi8>
    %x32 = arith.extsi %x : i8 to i32
    %y32 = arith.extsi %y : i8 to i32
    %p = arith.muli %x32, %y32 : i32
    te.yield %p : i32
  }}
  te.output %out : tensor<{batch}x{block_out}xi32>
}}
"""


def implement(match: Match) -> None:
    """Keep the matched nest (its semantics are the core's) and mark its loops."""
    name = StringAttr(match.intrinsic.name)
    for loop in match.loops.values():
        loop.attributes[TENSORIZED_ATTR] = name
    match.root.attributes[TENSORIZED_ATTR] = name


def _lower_description(text: str):
    """The description's canonical loop nest (convert-te-to-loops, loaded when first used)."""
    from strato.transforms.convert_te_to_loops import lower_te_text

    return lower_te_text(text)


def _make(name: str) -> Intrinsic:
    parsed = _NAME.match(name)
    if parsed is None:
        raise ScheduleError(f"cannot tensorize: '{name}' is not of the form {FAMILY}.<BATCH>x<BLOCK_IN>x<BLOCK_OUT>")
    batch, block_in, block_out = (int(g) for g in parsed.groups())
    if min(batch, block_in, block_out) < 1:
        raise ScheduleError(f"cannot tensorize: {name} has an empty block")
    return Intrinsic(
        name,
        description(batch, block_in, block_out),
        implement,
        {"inp": "k", "wgt": "k", "out": "j"},
        lower=_lower_description,
    )


register_family(FAMILY, _make)

__all__ = ["FAMILY", "description", "gemm_name"]
