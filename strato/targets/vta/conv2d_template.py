"""The VTA template for int8 conv2d (and dense as a 1x1 conv): a schedule of the te kernel.

The layer is written as a te primitive over the VTA layouts (x [C/16, H, W, 1, 16] and
out [O/16, OH, OW, 1, 16] are NCHW1n16c, w [O/16, C/16, KH, KW, 16, 16] is OIHW16o16i):

    pad   (zero padding of x, when the layer pads)
    conv  sum over (c, kh, kw, l) of int32(pad[c, y*s+kh, q*s+kw, 0, l]) * int32(w[o, c, kh, kw, m, l])
    out   int8(min(max((conv + b[o, 0, m]) >> shift, 0 or -127), 127))

lowered to loops (convert-te-to-loops) and scheduled as TVM's VTA conv2d schedule:

    for each tile of `tile_h` output rows (unrolled: the DMA row pads differ)
      for each group of `threads` output-channel tiles
        for t in virtual threads (bind "vthread")
          conv computed in vta.acc (cache_write), its init is the GEMM reset
          (with a bias: b cached into vta.acc)
          for each chunk of `ic_tile` input-channel blocks
            pad (inlined) cached into vta.inp, w into vta.wgt (cache_read + compute_at)
            loops (oc, row, ic, kh, kw, column) around the 1 x 16 x 16 block
            tensorized with the vta.gemm intrinsic
          out: add the bias, shift, clip, truncate to int8 and store

`convert-loops-to-vta` then turns the cached copies into DMA loads, the GEMM nest into
one micro-op kernel, the epilogue into ALU ops and a store (`build_conv2d`). Tokens are
not written here: vta-insert-dependence-tokens adds them, vta-inject-virtual-threads then
interleaves the threads.

Knobs: `tile_h` (output rows a tile), `oc_tile` and `ic_tile` (channel blocks of 16 a
tile and a reduction chunk) and `threads` (virtual threads), which must divide the
number of output-channel tiles. A thread's buffers must fit its share of each SRAM
(`check`); `default_config` picks the largest tiles that fit.

DRAM arguments of the vta program: x as NCHW1n16c elements, w as OIHW16o16i elements,
(b as int32 elements of 1 x 16,) out as NCHW1n16c elements (strato.targets.vta.layout), each
activation and weight with its logical shape in the `vta.shape` argument attribute.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    ModuleOp,
    i64,
)
from xdsl.parser import Parser

from strato.diagnostics import StratoError
from strato.schedule import Schedule
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.emitter import SHAPE_ATTR
from strato.targets.vta.intrinsics import gemm_name


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
    if (s.ob // cfg.oc_tile) % cfg.threads:
        raise StratoError(
            f"VTA conv2d: {s.ob // cfg.oc_tile} output-channel tiles do not spread evenly over {cfg.threads} virtual threads"
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
    """The largest tiles (most GEMM work a load) that fit a thread's share of the buffers.

    When no tiling spreads the output-channel tiles evenly over `threads` virtual threads
    (an odd number of channel blocks over two), the layer runs on one thread fewer."""
    check_workload(wl, config)
    s0 = _Shape(wl, VtaConv2dConfig(1, 1, 1, threads), config.block_in)
    for count in range(max(threads, 1), 0, -1):
        best: tuple[tuple[int, ...], VtaConv2dConfig] | None = None
        for tile_h in _divisors(wl.out_height):
            for oc_tile in _divisors(s0.ob):
                for ic_tile in _divisors(s0.cb):
                    cfg = VtaConv2dConfig(tile_h, oc_tile, ic_tile, count)
                    try:
                        check(wl, cfg, config)
                    except StratoError:
                        continue
                    # prefer work a chunk (amortizes DMA latency)
                    s = _Shape(wl, cfg, config.block_in)
                    key = (s.acc_elements * ic_tile, ic_tile)
                    if best is None or key > best[0]:
                        best = (key, cfg)
        if best is not None:
            return best[1]
    raise StratoError(f"VTA conv2d: no tiling of {wl} fits the buffers")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def conv2d_te(wl: Conv2dWorkload, config: VTAConfig = DEFAULT_CONFIG) -> str:
    """The layer as a te primitive over the VTA layouts (see the module docstring)."""
    blk, batch = config.block_in, config.batch
    cb, ob = wl.channels // blk, wl.out_channels // config.block_out
    h, w, p, s = wl.height, wl.width, wl.padding, wl.stride
    oh, ow, kh, kw = wl.out_height, wl.out_width, wl.kernel_h, wl.kernel_w
    x_t = f"tensor<{cb}x{h}x{w}x{batch}x{blk}xi8>"
    w_t = f"tensor<{ob}x{cb}x{kh}x{kw}x{config.block_out}x{blk}xi8>"
    acc_t = f"tensor<{ob}x{oh}x{ow}x{batch}x{config.block_out}xi32>"
    out_t = f"tensor<{ob}x{oh}x{ow}x{batch}x{config.block_out}xi8>"
    lines = [
        "te.primitive @conv2d {",
        f'  %x = te.placeholder "x" : {x_t}',
        f'  %w = te.placeholder "w" : {w_t}',
    ]
    if wl.bias:
        lines.append(f'  %b = te.placeholder "b" : tensor<{ob}x{batch}x{config.block_out}xi32>')
    source, source_t = "%x", x_t
    if p:
        source, source_t = "%pad", f"tensor<{cb}x{h + 2 * p}x{w + 2 * p}x{batch}x{blk}xi8>"
        lines += [
            f'  %pad = te.compute "pad" (%c, %h, %v, %n, %l) : {source_t} {{',
            f"    %p = arith.constant {p} : index",
            f"    %hn = arith.constant {h} : index",
            f"    %wn = arith.constant {w} : index",
            "    %zero = arith.constant 0 : index",
            "    %hs = arith.subi %h, %p : index",
            "    %vs = arith.subi %v, %p : index",
            "    %h0 = arith.cmpi sge, %hs, %zero : index",
            "    %h1 = arith.cmpi slt, %hs, %hn : index",
            "    %v0 = arith.cmpi sge, %vs, %zero : index",
            "    %v1 = arith.cmpi slt, %vs, %wn : index",
            "    %hin = arith.andi %h0, %h1 : i1",
            "    %vin = arith.andi %v0, %v1 : i1",
            "    %in = arith.andi %hin, %vin : i1",
            "    %hc = arith.select %hin, %hs, %zero : index",
            "    %vc = arith.select %vin, %vs, %zero : index",
            f"    %e = te.read %x[%c, %hc, %vc, %n, %l] : {x_t}",
            "    %z = arith.constant 0 : i8",
            "    %r = arith.select %in, %e, %z : i8",
            "    te.yield %r : i8",
            "  }",
        ]
    lines += [
        f'  %acc = te.reduce "conv" sum (%o, %y, %q, %n, %m) over (%c : {cb}, %kh : {kh}, %kw : {kw}, %l : {blk})'
        f" init 0 : {acc_t} {{",
        f"    %s = arith.constant {s} : index",
        "    %ys = arith.muli %y, %s : index",
        "    %qs = arith.muli %q, %s : index",
        "    %yy = arith.addi %ys, %kh : index",
        "    %qq = arith.addi %qs, %kw : index",
        f"    %a = te.read {source}[%c, %yy, %qq, %n, %l] : {source_t}",
        f"    %k = te.read %w[%o, %c, %kh, %kw, %m, %l] : {w_t}",
        "    %a32 = arith.extsi %a : i8 to i32",
        "    %k32 = arith.extsi %k : i8 to i32",
        "    %prod = arith.muli %a32, %k32 : i32",
        "    te.yield %prod : i32",
        "  }",
        f'  %out = te.compute "out" (%o, %y, %q, %n, %m) : {out_t} {{',
        f"    %v = te.read %acc[%o, %y, %q, %n, %m] : {acc_t}",
    ]
    value = "%v"
    if wl.bias:
        lines += [
            f"    %bv = te.read %b[%o, %n, %m] : tensor<{ob}x{batch}x{config.block_out}xi32>",
            "    %vb = arith.addi %v, %bv : i32",
        ]
        value = "%vb"
    lines += [
        f"    %shift = arith.constant {wl.shift} : i32",
        f"    %sh = arith.shrsi {value}, %shift : i32",
        f"    %lo = arith.constant {0 if wl.relu else -127} : i32",
        "    %hi = arith.constant 127 : i32",
        "    %mx = arith.maxsi %sh, %lo : i32",
        "    %mn = arith.minsi %mx, %hi : i32",
        "    %t = arith.trunci %mn : i32 to i8",
        "    te.yield %t : i8",
        "  }",
        f"  te.output %out : {out_t}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def schedule_conv2d(sch: Schedule, wl: Conv2dWorkload, cfg: VtaConv2dConfig, config: VTAConfig = DEFAULT_CONFIG) -> None:
    """Apply the VTA schedule (module docstring) to the lowered kernel of `conv2d_te`."""
    check(wl, cfg, config)
    out, conv = sch.get_stage("out"), sch.get_stage("conv")
    acc = sch.cache_write(conv, "vta.acc")
    sch.compute_inline(conv)
    o, y, q, n, m = sch.get_loops(out)
    o_tiles, o_inner = sch.split(o, [None, cfg.oc_tile])
    group, thread = sch.split(o_tiles, [None, cfg.threads])
    row_tile, row = sch.split(y, [None, cfg.tile_h])
    sch.reorder(row_tile, group, thread, o_inner, row, q, n, m)
    sch.unroll(row_tile)
    sch.bind(thread, "vthread")
    sch.compute_at(acc, thread)
    if wl.bias:
        bias = sch.cache_read(out, "b", "vta.acc")
        sch.compute_at(bias, thread)
    loops = {loop.axis: loop for loop in sch.get_loops(acc)}
    chunk, inner = sch.split(loops["c"], [None, cfg.ic_tile])
    loops = {loop.axis: loop for loop in sch.get_loops(acc)}
    order = ["c.outer", "o", "y", "c.inner", "kh", "kw", "q", "n", "m", "l"]
    sch.reorder(*(loops[a] for a in order))
    inp = sch.cache_read(acc, "pad" if wl.padding else "x", "vta.inp")
    wgt = sch.cache_read(acc, "w", "vta.wgt")
    loops = {loop.axis: loop for loop in sch.get_loops(acc)}
    sch.compute_at(inp, loops["c.outer"])
    sch.compute_at(wgt, loops["c.outer"])
    if wl.padding:
        sch.compute_inline(sch.get_stage("pad"))
    sch.tensorize(sch.get_loop(acc, "n"), gemm_name(config))


def build_kernel(wl: Conv2dWorkload, cfg: VtaConv2dConfig, config: VTAConfig = DEFAULT_CONFIG) -> ModuleOp:
    """The layer's scheduled loop-level kernel (before convert-loops-to-vta)."""
    from strato.context import make_context
    from strato.transforms.convert_te_to_loops import lower_te_to_loops

    check(wl, cfg, config)
    module = Parser(make_context(), conv2d_te(wl, config)).parse_module()
    lower_te_to_loops(module)
    sch = Schedule(module)
    schedule_conv2d(sch, wl, cfg, config)
    sch.materialize()
    return module


def build_conv2d(wl: Conv2dWorkload, cfg: VtaConv2dConfig, config: VTAConfig = DEFAULT_CONFIG) -> ModuleOp:
    """`func.func @conv2d(%x, %w, [%b,] %out)` in the vta dialect, without tokens: the
    scheduled kernel through convert-loops-to-vta, with the logical shapes of x, w and
    out as `vta.shape` argument attributes."""
    from strato.targets.vta.convert_loops_to_vta import convert_loops_to_vta

    module = build_kernel(wl, cfg, config)
    convert_loops_to_vta(module, config)
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    shapes = {
        "x": (1, wl.channels, wl.height, wl.width),
        "w": (wl.out_channels, wl.channels, wl.kernel_h, wl.kernel_w),
        "out": (1, wl.out_channels, wl.out_height, wl.out_width),
    }
    attrs = []
    for arg in function.args:
        shape = shapes.get(arg.name_hint or "")
        attrs.append(DictionaryAttr({SHAPE_ATTR: DenseArrayBase.from_list(i64, list(shape))} if shape else {}))
    function.arg_attrs = ArrayAttr(attrs)
    return module


__all__ = [
    "Conv2dWorkload",
    "VtaConv2dConfig",
    "build_conv2d",
    "build_kernel",
    "check",
    "check_workload",
    "conv2d_te",
    "default_config",
    "schedule_conv2d",
]
