"""graph-winograd: 3x3 stride-1 blocked convolutions with constant weights computed by the
Winograd algorithm F(m x m, 3 x 3) (`graph.blocked_winograd_conv`).

A direct 3x3 convolution makes 9 multiply-adds per output and input channel; F(2x2, 3x3)
makes 16 per 2x2 outputs (4 per output), F(4x4, 3x3) 36 per 4x4 (2.25 per output), plus
the transforms of the input and output tiles, whose cost does not grow with the channels.
The weight's transform G g G^T is computed here, once, in float64:

    %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c"
    ->
    %u = graph.constant dense<..> : tensor<16x4x4x16x16xf32>           (G g G^T, [alpha^2, M/bo, C/bi, bi, bo])
    %y = graph.blocked_winograd_conv %x, %u padding [1, 1, 1, 1] tile 2 layout "NCHW16c" out_layout "NCHW16c"

A convolution changes when its weight is a float32 constant laid out OIHW{i}i{o}o,
groups 1, stride and dilation 1, and it has at least `min_channels` input and output
channels (below that the transforms cost more than the multiplications saved). The
tile size m is `tile` (2 or 4), or with `tile=0` (the default) the largest of 4 and 2
that gives the image at least `min_tiles` tiles (a 7x7 layer has 4 tiles of 4x4 but
16 of 2x2: with fewer, each transformed weight is read for too few tiles, and the
product waits on memory) and whose transformed input and products each take at most
`max_tile_bytes` (they are computed whole, one stage after the other: past the size
of a core's L2 cache each stage streams them through memory; a 56x56x64 layer's
F(4, 3) tiles take 1.8 MB). A convolution no tile size fits stays direct.

The result differs from the direct convolution's by round-off: F(2, 3)'s transforms
are exact in binary (coefficients 0, 1, 1/2), F(4, 3)'s are not (sixths) and their
values reach 25x the input's (ResNet-18's layers: max error 1e-5 of the largest
output against 2e-6 direct). A non-finite input value spreads to the whole tile it
is in.

Requires: functions of graph ops in blocked layouts (graph-alter-layout), constants
folded. Leaves illegal: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.graph.blocked import transform_layout
from strato.dialects.graph.winograd import TILES, tile_counts, transform_weight
from strato.dialects.tensor_types import array_from_dense, dense_from_array


def winograd_candidate(op: graph.BlockedConvOp, min_channels: int) -> bool:
    """Whether `op` is a convolution graph-winograd may compute by Winograd."""
    weight = op.weight.owner
    if not isinstance(weight, graph.ConstantOp) or op.weight.type.element_type != f32:
        return False
    blocks = op.kernel_blocks
    (_, channels, _, _), (outputs, _, kh, kw) = op.unblocked_shapes()
    return (
        (kh, kw) == (3, 3)
        and op.stride_values == (1, 1)
        and op.dilation_values == (1, 1)
        and op.group_count == 1
        and blocks.order == "io"
        and min(channels, outputs) >= min_channels
    )


def choose_tile(
    op: graph.BlockedConvOp, tile: int, min_tiles: int, max_tile_bytes: int
) -> int | None:
    """m for `op` (a candidate): `tile` when given, else the largest that gives at least
    `min_tiles` tiles per image and transformed tensors of at most `max_tile_bytes`;
    None when none does."""
    (batch, channels, _, _), (outputs, _, _, _) = op.unblocked_shapes()
    result = static_shape(op.result)
    for m in (tile,) if tile else sorted(TILES, reverse=True):
        tiles = prod(tile_counts(result, m))
        largest = batch * (m + 2) ** 2 * tiles * max(channels, outputs) * 4
        if tile or (tiles >= min_tiles and largest <= max_tile_bytes):
            return m
    return None


def _rewrite(op: graph.BlockedConvOp, tile: int) -> graph.BlockedWinogradConvOp:
    weight = op.weight.owner
    assert isinstance(weight, graph.ConstantOp)
    oihw = transform_layout(array_from_dense(weight.value), op.kernel_layout.data, "OIHW")
    u = graph.ConstantOp(
        dense_from_array(transform_weight(oihw, tile, op.in_block, op.out_block), f32)
    )
    if op.weight.name_hint is not None:
        u.result.name_hint = f"{op.weight.name_hint}.winograd"
    Rewriter.insert_op(u, InsertPoint.before(op))
    return graph.BlockedWinogradConvOp(
        op.input,
        u,
        op.bias,
        padding=tuple(op.padding.get_values()),
        tile=tile,
        in_block=op.in_block,
        out_block=op.out_block,
    )


@dataclass(frozen=True)
class GraphWinogradPass(ModulePass):
    """3x3 stride-1 blocked convolutions with constant weights and at least
    `min_channels` input and output channels as Winograd convolutions F(m x m, 3 x 3):
    m = `tile`, or (0) the largest with `min_tiles` tiles per image whose transformed
    tensors take at most `max_tile_bytes` each."""

    name = "graph-winograd"

    tile: int = 0
    min_channels: int = 32
    min_tiles: int = 16
    max_tile_bytes: int = 1 << 20

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.tile and self.tile not in TILES:
            raise StratoError(
                f"graph-winograd: tile must be 0 (chosen per layer) or one of "
                f"{', '.join(map(str, TILES))}, got {self.tile}"
            )
        for conv in [o for o in op.walk() if isinstance(o, graph.BlockedConvOp)]:
            if not winograd_candidate(conv, self.min_channels):
                continue
            tile = choose_tile(conv, self.tile, self.min_tiles, self.max_tile_bytes)
            if tile is None:
                continue
            new = _rewrite(conv, tile)
            Rewriter.insert_op(new, InsertPoint.before(conv))
            new.result.name_hint = conv.result.name_hint
            conv.result.replace_all_uses_with(new.result)
            weight = conv.weight.owner
            Rewriter.erase_op(conv)
            if isinstance(weight, graph.ConstantOp) and not weight.result.uses:
                Rewriter.erase_op(weight)
