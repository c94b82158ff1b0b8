"""The VTA template for int8 conv2d (and dense as a 1x1 conv): a tiled program in the vta dialect.

The template writes the schedule TVM's VTA conv2d schedule describes, directly as a vta
control program (the loop nest after cache_read/cache_write into the vta scopes and
tensorize to the 16x16 GEMM core):

    for each tile of `tile_h` output rows (all output columns):          unrolled: the
      for each group of `threads` output-channel tiles:                  DMA row pads differ
        for t in virtual threads:                     (loop.for ... virtual_thread)
          buffers inp / wgt / acc (one thread's share)
          GEMM reset of the acc tile                  [oc_tile][tile_h][OW] elements
          for each chunk of `ic_tile` input-channel blocks:
            LOAD INP, one 2-D padded load a channel block  [ic][rows in][cols in]
            LOAD WGT, one 2-D load                         [oc][ic][KH][KW]
            GEMM: loops (oc, output row), micro-ops (ic, kh, kw, output column)
          (with a bias: LOAD ACC the tile's bias, ALU ADD it to every position)
          ALU  SHR shift, MAX 0 (or -127 without relu), MIN 127 (requantize)
          STORE the tile, one 2-D store                    [oc][tile_h * OW]

Knobs: `tile_h` (output rows a tile), `oc_tile` and `ic_tile` (channel blocks of 16 a
tile and a reduction chunk) and `threads` (virtual threads, 1 or 2). A thread's buffers
must fit its share of each SRAM (`check`); `default_config` picks the largest tiles that
fit. The output-channel tiles of a row tile are spread over the virtual threads; when
their count is not a multiple of `threads`, the last group runs on fewer threads. Tokens
are not written here: vta-insert-dependence-tokens adds them, vta-inject-virtual-threads
then interleaves the threads.

DRAM arguments: x as NCHW1n16c elements, w as OIHW16o16i elements, out as NCHW1n16c
elements (strato.vta.layout), each with its logical shape in the `vta.shape` argument
attribute.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    i8,
    i32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue

from strato.diagnostics import StratoError
from strato.dialects import vta
from strato.dialects.loop import ForOp, LoopKind, MemoryScope, ScopeAttr
from strato.targets.vta.target import SHAPE_ATTR
from strato.vta.config import DEFAULT_CONFIG, VTAConfig


@dataclass(frozen=True)
class Conv2dWorkload:
    """An int8 conv2d: x [1, C, H, W], w [O, C, KH, KW], stride, symmetric padding, shift."""

    channels: int
    height: int
    width: int
    out_channels: int
    kernel_h: int
    kernel_w: int
    stride: int
    padding: int
    shift: int
    bias: bool = False
    """an int32 bias a channel (DRAM argument `b`, region acc), added before the shift"""
    relu: bool = True
    """clip to [0, 127] (else to [-127, 127])"""

    @property
    def out_height(self) -> int:
        return (self.height + 2 * self.padding - self.kernel_h) // self.stride + 1

    @property
    def out_width(self) -> int:
        return (self.width + 2 * self.padding - self.kernel_w) // self.stride + 1


@dataclass(frozen=True)
class VtaConv2dConfig:
    """The template's knobs."""

    tile_h: int
    oc_tile: int
    ic_tile: int
    threads: int = 2


@dataclass(frozen=True)
class _Shape:
    """Derived sizes of one tile."""

    wl: Conv2dWorkload
    cfg: VtaConv2dConfig
    block: int

    @property
    def cb(self) -> int:
        return self.wl.channels // self.block

    @property
    def ob(self) -> int:
        return self.wl.out_channels // self.block

    @property
    def taps(self) -> int:
        return self.wl.kernel_h * self.wl.kernel_w

    @property
    def in_h(self) -> int:
        return (self.cfg.tile_h - 1) * self.wl.stride + self.wl.kernel_h

    @property
    def in_w(self) -> int:
        return (self.wl.out_width - 1) * self.wl.stride + self.wl.kernel_w

    @property
    def inp_elements(self) -> int:
        return self.cfg.ic_tile * self.in_h * self.in_w

    @property
    def wgt_elements(self) -> int:
        return self.cfg.oc_tile * self.cfg.ic_tile * self.taps

    @property
    def acc_elements(self) -> int:
        return self.cfg.oc_tile * self.cfg.tile_h * self.wl.out_width


def check_workload(wl: Conv2dWorkload, config: VTAConfig = DEFAULT_CONFIG) -> None:
    """A diagnostic unless the template can run the workload with some tiling."""
    blk = config.block_in
    if config.batch != 1 or config.block_in != config.block_out:
        raise StratoError("the VTA conv2d template needs BATCH 1 and BLOCK_IN = BLOCK_OUT")
    if wl.channels % blk or wl.out_channels % blk:
        raise StratoError(f"conv2d channels {wl.channels} -> {wl.out_channels} are not multiples of {blk}")
    if wl.padding > 15 or wl.out_width < 2:
        raise StratoError("VTA conv2d: padding above 15 or a single output column is not supported")


def check(wl: Conv2dWorkload, cfg: VtaConv2dConfig, config: VTAConfig = DEFAULT_CONFIG) -> None:
    """A diagnostic unless the workload tiles by `cfg` and a thread's tile fits its SRAM share."""
    check_workload(wl, config)
    blk = config.block_in
    if min(cfg.tile_h, cfg.oc_tile, cfg.ic_tile, cfg.threads) < 1:
        raise StratoError(f"VTA conv2d knobs must be positive: {cfg}")
    s = _Shape(wl, cfg, blk)
    if wl.out_height % cfg.tile_h or s.ob % cfg.oc_tile or s.cb % cfg.ic_tile:
        raise StratoError(
            f"VTA conv2d: {wl.out_height} rows, {s.ob} and {s.cb} channel blocks do not tile by "
            f"{cfg.tile_h}, {cfg.oc_tile} and {cfg.ic_tile}"
        )
    t = cfg.threads
    for what, need, depth in (
        ("inp", s.inp_elements, config.inp_depth),
        ("wgt", s.wgt_elements, config.wgt_depth),
        ("acc", s.acc_elements + (cfg.oc_tile if wl.bias else 0), config.acc_depth),
    ):
        if need * t > depth:
            raise StratoError(f"VTA conv2d: a tile needs {need} {what} elements, a thread's share is {depth // t}")
    if s.taps * cfg.ic_tile * wl.out_width > config.uop_depth // (2 * t):
        raise StratoError("VTA conv2d: the GEMM kernel of a tile does not fit the micro-op buffer")


def default_config(wl: Conv2dWorkload, threads: int = 2, config: VTAConfig = DEFAULT_CONFIG) -> VtaConv2dConfig:
    """The largest tiles (most GEMM work a load) that fit a thread's share of the buffers."""
    check_workload(wl, config)
    s0 = _Shape(wl, VtaConv2dConfig(1, 1, 1, threads), config.block_in)
    best: tuple[tuple[int, ...], VtaConv2dConfig] | None = None
    for tile_h in _divisors(wl.out_height):
        for oc_tile in _divisors(s0.ob):
            for ic_tile in _divisors(s0.cb):
                cfg = VtaConv2dConfig(tile_h, oc_tile, ic_tile, threads)
                try:
                    check(wl, cfg, config)
                except StratoError:
                    continue
                # prefer work a chunk (amortizes DMA latency), then an even spread over threads
                s = _Shape(wl, cfg, config.block_in)
                groups_even = (s.ob // oc_tile) % threads == 0
                key = (groups_even, s.acc_elements * ic_tile, ic_tile)
                if best is None or key > best[0]:
                    best = (key, cfg)
    if best is None:
        raise StratoError(f"VTA conv2d: no tiling of {wl} fits the buffers")
    return best[1]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _memref(elements: int, shape: tuple[int, int], element, scope: MemoryScope | None = None) -> MemRefType:
    if scope is None:
        return MemRefType(element, [elements, *shape])
    return MemRefType(element, [elements, *shape], memory_space=ScopeAttr(scope))


class _Writer:
    def __init__(self, block: Block):
        self.block = block

    def add(self, op):
        self.block.insert_op_before(op, self.block.last_op) if self._has_yield() else self.block.add_op(op)
        return op

    def _has_yield(self) -> bool:
        last = self.block.last_op
        return last is not None and last.name == "loop.yield"

    def const(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    def affine(self, terms: list[tuple[SSAValue, int]], constant: int) -> SSAValue:
        """sum(v * c) + constant, as index arithmetic."""
        total = self.const(constant)
        for value, coeff in terms:
            if coeff == 0:
                continue
            product = value if coeff == 1 else self.add(arith.MuliOp(value, self.const(coeff))).result
            total = self.add(arith.AddiOp(total, product)).result
        return total

    def loop(self, extent: int, kind: LoopKind = LoopKind.SERIAL, axis: str | None = None) -> tuple[ForOp, Block]:
        op, body = ForOp.build(0, extent, 1, kind, axis)
        self.add(op)
        return op, body


def build_conv2d(wl: Conv2dWorkload, cfg: VtaConv2dConfig, config: VTAConfig = DEFAULT_CONFIG) -> ModuleOp:
    """`func.func @conv2d(%x, %w, %out)` in the vta dialect, without tokens."""
    check(wl, cfg, config)
    blk = config.block_in
    s = _Shape(wl, cfg, blk)
    oh, ow = wl.out_height, wl.out_width
    x_type = _memref(s.cb * wl.height * wl.width, (1, blk), i8)
    w_type = _memref(s.ob * s.cb * s.taps, (blk, blk), i8)
    out_type = _memref(s.ob * oh * ow, (1, blk), i8)
    inp_type = _memref(s.inp_elements, (1, blk), i8, MemoryScope.VTA_INP)
    wgt_type = _memref(s.wgt_elements, (blk, blk), i8, MemoryScope.VTA_WGT)
    # the bias of the tile's channel blocks sits after the accumulator tile
    acc_type = _memref(s.acc_elements + (cfg.oc_tile if wl.bias else 0), (1, blk), i32, MemoryScope.VTA_ACC)
    arg_types = [x_type, w_type, out_type]
    if wl.bias:
        arg_types.append(_memref(s.ob, (1, blk), i32))
    entry = Block(arg_types=arg_types)
    x, w, out = entry.args[:3]
    bias = entry.args[3] if wl.bias else None
    for arg, name in zip(entry.args, ("x", "w", "out", "b")):
        arg.name_hint = name
    top = _Writer(entry)
    zero = top.const(0)

    oc_tiles = s.ob // cfg.oc_tile
    full, rest = divmod(oc_tiles, cfg.threads)
    for ht in range(oh // cfg.tile_h):
        # the input rows of this row tile, and the DMA row padding where they leave x
        first_in = ht * cfg.tile_h * wl.stride - wl.padding
        lo, hi = max(first_in, 0), min(first_in + s.in_h, wl.height)
        pads_y = (lo - first_in, first_in + s.in_h - hi)
        groups = [(full, cfg.threads, 0)] if full else []
        if rest:
            groups.append((1, rest, full * cfg.threads))
        for count, threads, first_tile in groups:
            _, group_body = top.loop(count, axis=f"oc.group.{ht}")
            group = _Writer(group_body)
            _, thread_body = group.loop(threads, LoopKind.VIRTUAL_THREAD, axis="vthread")
            body = _Writer(thread_body)
            g, t = group_body.args[0], thread_body.args[0]
            inp = body.add(vta.BufferOp(0, inp_type)).result
            wgt = body.add(vta.BufferOp(0, wgt_type)).result
            acc = body.add(vta.BufferOp(0, acc_type)).result
            inp.name_hint, wgt.name_hint, acc.name_hint = "inp", "wgt", "acc"
            body.add(vta.GemmOp(acc, inp, wgt, [[s.acc_elements, 1, 0, 0]], [[0, 0, 0]], reset=True))
            if bias is not None:
                dram_b = body.affine([(g, cfg.threads * cfg.oc_tile), (t, cfg.oc_tile)], first_tile * cfg.oc_tile)
                body.add(vta.LoadOp(bias, dram_b, acc, body.const(s.acc_elements), 1, cfg.oc_tile, cfg.oc_tile))
            _, chunk_body = body.loop(s.cb // cfg.ic_tile, axis="ic.chunk")
            chunk = _Writer(chunk_body)
            k = chunk_body.args[0]
            for ci in range(cfg.ic_tile):
                # channel block k * ic_tile + ci, input rows lo..hi, all columns
                dram = chunk.affine([(k, cfg.ic_tile * wl.height * wl.width)], ci * wl.height * wl.width + lo * wl.width)
                cols = min(wl.width, s.in_w - wl.padding)
                pad = (pads_y[0], pads_y[1], wl.padding, s.in_w - wl.padding - cols)
                sram = chunk.const(ci * s.in_h * s.in_w)
                chunk.add(vta.LoadOp(x, dram, inp, sram, hi - lo, cols, wl.width, pad))
            # output-channel tile o = first_tile + g * threads + t: its weights for chunk k
            row = s.cb * s.taps
            dram_w = chunk.affine(
                [(g, cfg.threads * cfg.oc_tile * row), (t, cfg.oc_tile * row), (k, cfg.ic_tile * s.taps)],
                first_tile * cfg.oc_tile * row,
            )
            chunk.add(vta.LoadOp(w, dram_w, wgt, zero, cfg.oc_tile, cfg.ic_tile * s.taps, row))
            chunk.add(vta.GemmOp(acc, inp, wgt, *_conv_kernel(wl, cfg, s)))
            loops, uops = [[s.acc_elements, 1, 1]], [[0, 0]]
            if bias is not None:
                # acc[oc][p] += bias[oc]: the source stays on the channel's bias element
                plane_tile = cfg.tile_h * ow
                body.add(
                    vta.AluOp("add", acc, [[cfg.oc_tile, plane_tile, 1], [plane_tile, 1, 0]], [[0, s.acc_elements]])
                )
            body.add(vta.AluOp("shr", acc, loops, uops, wl.shift))
            body.add(vta.AluOp("max", acc, loops, uops, 0 if wl.relu else -127))
            body.add(vta.AluOp("min", acc, loops, uops, 127))
            plane = oh * ow
            dram_out = body.affine(
                [(g, cfg.threads * cfg.oc_tile * plane), (t, cfg.oc_tile * plane)],
                first_tile * cfg.oc_tile * plane + ht * cfg.tile_h * ow,
            )
            body.add(vta.StoreOp(acc, zero, out, dram_out, cfg.oc_tile, cfg.tile_h * ow, plane))
    entry.add_op(func.ReturnOp())
    shapes = [
        (1, wl.channels, wl.height, wl.width),
        (wl.out_channels, wl.channels, wl.kernel_h, wl.kernel_w),
        (1, wl.out_channels, oh, ow),
    ]
    attrs = [DictionaryAttr({SHAPE_ATTR: DenseArrayBase.from_list(i64, list(shape))}) for shape in shapes]
    if wl.bias:
        attrs.append(DictionaryAttr({}))
    function = func.FuncOp("conv2d", (arg_types, []), Region(entry), arg_attrs=ArrayAttr(attrs))
    return ModuleOp([function])


def _conv_kernel(wl: Conv2dWorkload, cfg: VtaConv2dConfig, s: _Shape) -> tuple[list[list[int]], list[list[int]]]:
    """GEMM loops (output-channel block, output row) and micro-ops (ic, kh, kw, column)."""
    ow = wl.out_width
    loops = [
        [cfg.oc_tile, cfg.tile_h * ow, 0, cfg.ic_tile * s.taps],
        [cfg.tile_h, ow, wl.stride * s.in_w, 0],
    ]
    uops = []
    for ci in range(cfg.ic_tile):
        for kh in range(wl.kernel_h):
            for kw in range(wl.kernel_w):
                for col in range(ow):
                    src = ci * s.in_h * s.in_w + kh * s.in_w + col * wl.stride + kw
                    uops.append([col, src, ci * s.taps + kh * wl.kernel_w + kw])
    return loops, uops


__all__ = ["Conv2dWorkload", "VtaConv2dConfig", "build_conv2d", "check", "check_workload", "default_config"]
