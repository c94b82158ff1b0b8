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
`max_tile_bytes` (they are computed whole, one stage after the other, so past the size
of a core's L2 cache each stage streams them through memory). One thread, against the
direct convolution: F(4, 3) took 0.34-0.42x its time from 14x14 to 56x56 (tiles of
0.6-6.9 MB: 56x56x256), and still 0.67x at 112x112x64 (6.9 MB); hence 8 MB. A
convolution no tile size fits stays direct.

Convolutions fused into groups (graph-fuse-ops ran first, as in the llvm target's
pipeline) change the same way: the transformed weight becomes the group's operand and
body argument in the old weight's place, and the group's label (its kernel's name)
names the Winograd convolution.

With `tuning_log` (and `tile=0`) the measurements choose instead of the rule: each
candidate's group is lowered alone (te, then loops, as the model's kernels are) direct
and with each tile, and the variant whose kernel has the fastest record in the log
(measured on `device`) is taken. `strato tune` measures all of them
(`LLVMTarget.tuning_alternatives`). A candidate none of whose variants was measured
follows the rule (`untuned=rule`) or stays direct (`untuned=direct`, what the llvm
target asks for unless it says -winograd).

The result differs from the direct convolution's by round-off: F(2, 3)'s transforms
are exact in binary (coefficients 0, 1, 1/2), F(4, 3)'s are not (sixths) and their
values reach 25x the input's (ResNet-18's layers: max error 1e-5 of the largest
output against 2e-6 direct). A non-finite input value spreads to the whole tile it
is in.

Requires: functions of graph ops in blocked layouts (graph-alter-layout), constants
folded. Leaves illegal: nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import graph, te
from strato.dialects.graph import static_shape
from strato.dialects.graph.blocked import blocked_layout, transform_layout
from strato.dialects.graph.winograd import TILES, tile_counts, transform_weight
from strato.dialects.loop import KERNEL_ATTR
from strato.dialects.tensor_types import array_from_dense, dense_from_array
from strato.schedule.workload import kernel_key, workload_key
from strato.transforms.convert_graph_to_te import build_primitive, kernel_parts
from strato.transforms.convert_te_to_loops import ConvertTeToLoopsPass
from strato.transforms.graph_fuse_ops import group_label, is_unit_block_view
from strato.transforms.te_inline_stages import TeInlineStagesPass

UNTUNED = ("rule", "direct")
"""What graph-winograd does with a convolution the tuning log has no record of: its
rule (`tile`, or the tile chosen by size), or nothing."""


def winograd_candidate(op: graph.BlockedConvOp, min_channels: int) -> bool:
    """Whether `op` is a convolution graph-winograd may compute by Winograd."""
    weight = _weight_constant(op)
    if weight is None or op.weight.type.element_type != f32:
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


def _group_of(op: Operation) -> graph.FusedOp | None:
    """The fused group `op` is in (graph-fuse-ops ran first), if any."""
    parent = op.parent_op()
    return parent if isinstance(parent, graph.FusedOp) else None


def _weight_constant(op: graph.BlockedConvOp) -> graph.ConstantOp | None:
    """The constant `op`'s weight is, seen through the operand of the group it is in."""
    weight = op.weight
    group = _group_of(op)
    if group is not None and isinstance(weight, BlockArgument):
        weight = group.inputs[weight.index]
    owner = weight.owner
    return owner if isinstance(owner, graph.ConstantOp) else None


def _in_block(op: graph.BlockedConvOp) -> int:
    """The input block of `op`'s Winograd form: its own, unless `op` reads its NCHW
    input as it is (blocks of one, through a unit-block view in its group: see
    graph-alter-layout). The input transform then moves a vector of channels per tile
    element, so the input is blocked as the output is (or by 8): with blocks of one,
    F(4, 3) on ResNet-18's C2 ran at 0.6x its blocked speed."""
    if op.in_block != 1 or _unit_view_input(op) is None:
        return op.in_block
    (_, channels, _, _), _ = op.unblocked_shapes()
    return next((b for b in (op.out_block, 8) if channels % b == 0), 1)


def _unit_view_input(op: graph.BlockedConvOp) -> graph.LayoutTransformOp | None:
    """The unit-block view (NCHW -> NCHW1c) `op` reads in its group, if it reads one."""
    owner = op.input.owner
    if _group_of(op) is not None and is_unit_block_view(owner):
        assert isinstance(owner, graph.LayoutTransformOp)
        return owner
    return None


def _transformed_type(op: graph.BlockedConvOp, tile: int) -> TensorType:
    """The type of `op`'s weight transformed for F(tile x tile, 3 x 3)."""
    (_, channels, _, _), (outputs, _, _, _) = op.unblocked_shapes()
    alpha = tile + 2
    in_block = _in_block(op)
    return TensorType(
        f32, [alpha * alpha, outputs // op.out_block, channels // in_block, in_block, op.out_block]
    )


def _winograd_op(op: graph.BlockedConvOp, weight: SSAValue, tile: int) -> graph.BlockedWinogradConvOp:
    in_block, x = _in_block(op), op.input
    if in_block != op.in_block:
        # the group's view of the NCHW input becomes a transform to that block
        view = _unit_view_input(op)
        assert view is not None
        blocked = graph.LayoutTransformOp(view.input, view.src_layout.data, blocked_layout(in_block))
        blocked.result.name_hint = view.result.name_hint
        Rewriter.insert_op(blocked, InsertPoint.before(view))
        x = blocked.result
    return graph.BlockedWinogradConvOp(
        x,
        weight,
        op.bias,
        padding=tuple(op.padding.get_values()),
        tile=tile,
        in_block=in_block,
        out_block=op.out_block,
    )


def _replace(op: graph.BlockedConvOp, new: graph.BlockedWinogradConvOp) -> None:
    # the memory plan's attributes (where in the arena the result goes) stay with it
    new.attributes.update(op.attributes)
    Rewriter.insert_op(new, InsertPoint.before(op))
    new.result.name_hint = op.result.name_hint
    op.result.replace_all_uses_with(new.result)
    Rewriter.erase_op(op)


def _rewrite_in_group(group: graph.FusedOp, op: graph.BlockedConvOp, tile: int) -> bool:
    """`op`, in `group`, as a Winograd convolution whose transformed weight is a new
    argument of the group's body in the place of the old weight's; True when the old
    weight's argument lost its last use and was erased (the caller inserts the new
    operand and, then, removes the old one)."""
    old = op.weight
    assert isinstance(old, BlockArgument)
    body = group.body.block
    new_arg = body.insert_arg(_transformed_type(op, tile), old.index)
    if old.name_hint is not None:
        new_arg.name_hint = f"{old.name_hint}.winograd"
    view = _unit_view_input(op)
    _replace(op, _winograd_op(op, new_arg, tile))
    if view is not None and not view.result.uses:
        Rewriter.erase_op(view)
    group.label = StringAttr(group_label(kernel_parts(group)[0]))
    if old.uses:
        return False
    body.erase_arg(old)
    return True


def rewrite(op: graph.BlockedConvOp, tile: int) -> None:
    """Replace candidate `op` (bare or in a fused group) by its Winograd convolution
    F(tile x tile, 3 x 3), its weight transformed into a new constant."""
    weight = _weight_constant(op)
    assert weight is not None
    oihw = transform_layout(array_from_dense(weight.value), op.kernel_layout.data, "OIHW")
    u = graph.ConstantOp(
        dense_from_array(transform_weight(oihw, tile, _in_block(op), op.out_block), f32)
    )
    if weight.result.name_hint is not None:
        u.result.name_hint = f"{weight.result.name_hint}.winograd"
    group = _group_of(op)
    Rewriter.insert_op(u, InsertPoint.before(group or op))
    if group is None:
        _replace(op, _winograd_op(op, u.result, tile))
    else:
        index = op.weight.index  # type: ignore[union-attr]
        erased = _rewrite_in_group(group, op, tile)
        operands = list(group.operands)
        operands.insert(index, u.result)
        if erased:
            del operands[index + 1]
        group.operands = operands
    if not weight.result.uses:
        Rewriter.erase_op(weight)


class _KernelKeys:
    """The tuning-task key (`kernel_key`) of the kernel a convolution's group becomes,
    direct or by Winograd: the group lowered alone as the target's te and loop stages
    lower it in the model (the same kernel, so the same key as the task `strato tune`
    measured)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def key(self, primitive: te.PrimitiveOp) -> str:
        module = ModuleOp([primitive])
        TeInlineStagesPass().apply(self.ctx, module)
        ConvertTeToLoopsPass().apply(self.ctx, module)
        (kernel,) = (o for o in module.ops if isinstance(o, func.FuncOp) and KERNEL_ATTR in o.attributes)
        return kernel_key(kernel)

    def variants(self, op: graph.BlockedConvOp, direct: te.PrimitiveOp) -> dict[int, str]:
        """The kernel key of `op`'s group with `op` direct (`direct`, its primitive) and
        by each Winograd tile."""
        keys = {0: self.key(direct)}
        group = _group_of(op)
        for tile in TILES:
            if group is None:
                weight = Block(arg_types=[_transformed_type(op, tile)]).args[0]
                new = _winograd_op(op, weight, tile)
                keys[tile] = self.key(build_primitive("candidate", *kernel_parts(new)))
                new.erase()
                continue
            clone = group.clone()
            inner = next(o for o in clone.body.block.ops if isinstance(o, graph.BlockedConvOp))
            _rewrite_in_group(clone, inner, tile)
            keys[tile] = self.key(build_primitive("candidate", *kernel_parts(clone)))
            clone.erase()
        return keys


@dataclass(frozen=True)
class GraphWinogradPass(ModulePass):
    """3x3 stride-1 blocked convolutions with constant weights and at least
    `min_channels` input and output channels as Winograd convolutions F(m x m, 3 x 3):
    m = `tile`, or (0) the largest with `min_tiles` tiles per image whose transformed
    tensors take at most `max_tile_bytes` each. With `tuning_log` (and `tile` 0), each
    takes whichever of direct, F(2, 3) and F(4, 3) has the fastest kernel in the log
    (measured on `device`: see `strato.schedule.database.record_target`; on `threads`
    threads where the log has such records, 0: any); one the log
    has no record of follows the rule (`untuned=rule`) or stays direct
    (`untuned=direct`)."""

    name = "graph-winograd"

    tile: int = 0
    min_channels: int = 32
    min_tiles: int = 16
    max_tile_bytes: int = 8 << 20
    tuning_log: str = ""
    device: str = ""
    threads: int = 0
    untuned: str = "rule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.tile and self.tile not in TILES:
            raise StratoError(
                f"graph-winograd: tile must be 0 (chosen per layer) or one of "
                f"{', '.join(map(str, TILES))}, got {self.tile}"
            )
        if self.untuned not in UNTUNED:
            raise StratoError(
                f"graph-winograd: untuned must be {' or '.join(UNTUNED)}, got '{self.untuned}'"
            )
        tuned = self._tuned(ctx) if self.tuning_log and not self.tile else None
        for conv in [o for o in op.walk() if isinstance(o, graph.BlockedConvOp)]:
            if not winograd_candidate(conv, self.min_channels):
                continue
            tile = tuned(conv) if tuned is not None else None
            if tile is None and (tuned is None or self.untuned == "rule"):
                tile = choose_tile(conv, self.tile, self.min_tiles, self.max_tile_bytes)
            if tile:
                rewrite(conv, tile)

    def _tuned(self, ctx: Context) -> Callable[[graph.BlockedConvOp], int | None]:
        """The choice by the tuning log: a convolution's tile (0: direct), or None when
        the log measured none of its kernels."""
        from strato.schedule.database import Database

        db = Database.cached(self.tuning_log)
        keys = _KernelKeys(ctx)
        chosen: dict[str, int | None] = {}

        def choice(conv: graph.BlockedConvOp) -> int | None:
            # equal groups (a te-level key, cheap) are looked up once
            direct = build_primitive("candidate", *kernel_parts(_group_of(conv) or conv))
            workload = workload_key(direct)
            if workload not in chosen:
                seconds = {
                    tile: best.seconds
                    for tile, key in keys.variants(conv, direct).items()
                    if (best := db.best(key, self.device, self.threads or None)) is not None
                }
                chosen[workload] = min(seconds, key=seconds.__getitem__) if seconds else None
            return chosen[workload]

        return choice
