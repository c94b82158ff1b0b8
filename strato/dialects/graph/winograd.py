"""Winograd convolution on blocked tensors: a 3x3, stride-1 convolution computed in tiles
of m x m outputs with (m+2)^2 multiplications per tile and channel pair instead of 9 m^2
(Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).

For an output tile Y (m x m) of the zero-padded input's (m+2) x (m+2) window d and the
3x3 weight g of one (output, input) channel pair, F(m x m, 3 x 3) computes

    Y = A^T [ (G g G^T) . (B^T d B) ] A            (. elementwise, summed over input channels)

with the constant matrices of `winograd_matrices(m)`. G g G^T depends on the weights only
and is computed once, when the weights are constants (graph-winograd): the operator
takes that transformed weight U, laid out [alpha^2, M/bo, C/bi, bi, bo] (alpha = m + 2,
position a * alpha + b of the tile first), so that each tile position is a product of an
(input channels) x (output channels) matrix, read one output-channel vector at a time.

    %y = graph.blocked_winograd_conv %x, %u, %b padding [1, 1, 1, 1] tile 2 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x4x56x56x16xf32>, tensor<16x4x4x16x16xf32>, tensor<64xf32>) -> tensor<1x4x56x56x16xf32>

Its reference semantics (`evaluate`) are those steps in float64, so the interpreter
checks what the compiled kernel computes; the difference from the direct convolution
is round-off, which grows with m (m = 2 and m = 4 are defined).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, StringAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import FloatTensor, PatternKind, i64_array, static_shape
from strato.dialects.graph.blocked import BlockedChannelOp, blocked_layout
from strato.dialects.graph.nn import verify_bias
from strato.dialects.tensor_types import tensor_type_like

KERNEL = 3
"""The window the operator computes: 3 x 3."""

_HALF, _SIXTH = Fraction(1, 2), Fraction(1, 6)
_MATRICES: dict[int, tuple[list[list[Fraction]], ...]] = {
    # F(2, 3): interpolation points 0, 1, -1 (and infinity)
    2: (
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [_HALF, _HALF, _HALF], [_HALF, -_HALF, _HALF], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]],
    ),
    # F(4, 3): interpolation points 0, 1, -1, 2, -2 (and infinity)
    4: (
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        [
            [Fraction(1, 4), 0, 0],
            [-_SIXTH, -_SIXTH, -_SIXTH],
            [-_SIXTH, _SIXTH, -_SIXTH],
            [Fraction(1, 24), Fraction(1, 12), _SIXTH],
            [Fraction(1, 24), -Fraction(1, 12), _SIXTH],
            [0, 0, 1],
        ],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    ),
}
TILES = tuple(sorted(_MATRICES))
"""The output tile sizes m the operator is defined for."""


def winograd_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """B^T (alpha x alpha), G (alpha x 3) and A^T (m x alpha) of F(m x m, 3 x 3), in
    float64 (their entries are exact binary fractions or sixths)."""
    bt, g, at = _MATRICES[m]
    return tuple(np.array([[float(v) for v in row] for row in matrix]) for matrix in (bt, g, at))  # type: ignore[return-value]


def transform_weight(weight: np.ndarray, m: int, in_block: int, out_block: int) -> np.ndarray:
    """U = G g G^T of an [M, C, 3, 3] weight, laid out [alpha^2, M/bo, C/bi, bi, bo]."""
    _, g, _ = winograd_matrices(m)
    outputs, inputs = weight.shape[:2]
    # U[a, b] = sum over i, j of G[a, i] g[i, j] G[b, j]: one product of the (alpha^2 x 9)
    # matrix kron(G, G) with the taps, laid out first [9, M/bo, C/bi, bi, bo] (moving 9
    # values per channel pair, not alpha^2)
    taps = weight.reshape(outputs // out_block, out_block, inputs // in_block, in_block, KERNEL**2)
    taps = np.ascontiguousarray(taps.transpose(4, 0, 2, 3, 1), dtype=np.float64)
    u = np.kron(g, g) @ taps.reshape(KERNEL**2, -1)
    return u.reshape(-1, *taps.shape[1:]).astype(weight.dtype)


def tile_counts(op_shape: Sequence[int], m: int) -> tuple[int, int]:
    """Tiles along H and W of a result of spatial shape [.., OH, OW, ..]."""
    return -(-op_shape[2] // m), -(-op_shape[3] // m)


@irdl_op_definition
class BlockedWinogradConvOp(BlockedChannelOp):
    """3x3 stride-1 convolution of a blocked input by the Winograd algorithm F(m x m, 3 x 3)
    (the module's docstring): input [N, C/bi, H, W, bi] ("NCHW{bi}c"), transformed weight
    [(m+2)^2, M/bo, C/bi, bi, bo], optional bias [M], result [N, M/bo, OH, OW, bo]
    ("NCHW{bo}c") with OH = H + pad_top + pad_bottom - 2 (OW alike)."""

    name = "graph.blocked_winograd_conv"

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE

    input = operand_def(FloatTensor)
    weight = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    result = result_def(FloatTensor)

    padding = prop_def(DenseArrayBase.constr(i64))
    tile = prop_def(IntegerAttr[I64])
    out_layout = prop_def(StringAttr)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `padding` $padding `tile` $tile `layout` $layout "
        "`out_layout` $out_layout attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        padding: Sequence[int],
        tile: int,
        in_block: int,
        out_block: int,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        x, u = static_shape(input), static_shape(weight)
        out = (
            x[0],
            u[1],
            x[2] + padding[0] + padding[2] - KERNEL + 1,
            x[3] + padding[1] + padding[3] - KERNEL + 1,
            out_block,
        )
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            properties={
                "padding": i64_array(padding),
                "tile": IntegerAttr(tile, i64),
                "layout": StringAttr(blocked_layout(in_block)),
                "out_layout": StringAttr(blocked_layout(out_block)),
            },
            result_types=[tensor_type_like(input.type, out)],
        )

    @property
    def tile_size(self) -> int:
        return self.tile.value.data

    @property
    def alpha(self) -> int:
        return self.tile_size + KERNEL - 1

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """(top, left, bottom, right)."""
        return tuple(self.padding.get_values())  # type: ignore[return-value]

    @property
    def in_block(self) -> int:
        return self.block

    @property
    def out_block(self) -> int:
        return self._check_layout("out_layout", self.out_layout.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        in_block = self._check_layout("layout", self.layout.data)
        out_block = self._check_layout("out_layout", self.out_layout.data)
        if self.tile_size not in TILES:
            raise VerifyException(
                f"'{self.name}' tile {self.tile_size} is not one of {', '.join(map(str, TILES))}"
            )
        pads = tuple(self.padding.get_values())
        if len(pads) != 4 or any(p < 0 for p in pads):
            raise VerifyException(
                f"'{self.name}' padding must be four non-negative integers (top, left, "
                "bottom, right)"
            )
        x = self._check_blocked(self.input, in_block, "input")
        u = static_shape(self.weight)
        alpha = self.alpha
        expected = (alpha * alpha, None, x[1] // in_block, in_block, out_block)
        if len(u) != 5 or any(e is not None and e != s for e, s in zip(expected, u)):
            raise VerifyException(
                f"'{self.name}' weight must be [{alpha * alpha}, M/{out_block}, "
                f"{x[1] // in_block}, {in_block}, {out_block}], got {list(u)}"
            )
        verify_bias(self, self.bias, u[1] * out_block)
        height = x[2] + pads[0] + pads[2] - KERNEL + 1
        width = x[3] + pads[1] + pads[3] - KERNEL + 1
        if height < 1 or width < 1:
            raise VerifyException(f"'{self.name}' window does not fit the padded input")
        return (x[0], u[1], height, width, out_block)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x, u = inputs[0], inputs[1]
        m, alpha = self.tile_size, self.alpha
        bt, _, at = winograd_matrices(m)
        n, cb, height, width, bi = x.shape
        top, left, _, _ = self.pads
        out = static_shape(self.result)
        th, tw = tile_counts(out, m)
        padded = np.zeros((n, cb, th * m + 2, tw * m + 2, bi))
        rows, cols = min(height, th * m + 2 - top), min(width, tw * m + 2 - left)
        padded[:, :, top : top + rows, left : left + cols] = x[:, :, :rows, :cols]
        # windows[n, C, i, j, t, s, c]: rows i*m.., columns j*m.. of tile (i, j)
        windows = np.lib.stride_tricks.sliding_window_view(padded, (alpha, alpha), axis=(2, 3))
        windows = windows[:, :, ::m, ::m]
        v = np.einsum("at,nCijcts,bs->abnijCc", bt, windows, bt)
        uu = u.astype(np.float64).reshape(alpha, alpha, *u.shape[1:])
        product = np.einsum("abnijCc,abMCco->abnijMo", v, uu)
        y = np.einsum("pa,abnijMo,qb->nMipjqo", at, product, at)
        y = y.reshape(n, u.shape[1], th * m, tw * m, u.shape[4])[:, :, : out[2], : out[3]]
        if len(inputs) > 2:
            y = y + inputs[2].astype(np.float64).reshape(1, -1, 1, 1, u.shape[4])
        return [y.astype(x.dtype)]


OPS = (BlockedWinogradConvOp,)

__all__ = [
    "TILES",
    "BlockedWinogradConvOp",
    "tile_counts",
    "transform_weight",
    "winograd_matrices",
]
