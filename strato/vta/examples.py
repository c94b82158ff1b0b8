"""Hand-built VTA programs: a tiled int8 GEMM and a small conv2d, with one or two virtual threads.

Both are written directly against the runtime (`CommandQueue`): 2-D DMA loads (the conv's
spatial padding comes from LOAD padding), GEMM micro-op kernels, an ALU epilogue
`clip(acc >> shift, 0, 127)`, 2-D stores, and the dependence tokens of a tiled loop:

    per tile group, per reduction step k:
      for each thread t: load   pop(compute->load)  LOAD INP/WGT into t's half  push(load->compute)
      for each thread t: compute pop(load->compute) [k = 0: pop(store->compute), reset ACC]
                                 GEMM  push(compute->load)
    for each thread t: compute ALU epilogue push(compute->store)
    for each thread t: store  pop(compute->store) STORE  push(store->compute)

with one compute->load and one store->compute token pushed per thread before the loop and
popped after it. With two threads every on-chip buffer is split in halves and the tasks of
the two threads are interleaved, so the load module fills one thread's half while the GEMM
core works on the other's: the cycle model shows the gain.

    python -m strato.vta.examples      # cycles and utilization, one vs two virtual threads
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from strato.vta.bundle import Bundle, TensorPlacement
from strato.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.vta.errors import VTAError
from strato.vta.isa import AluOp, Stage
from strato.vta.layout import activation_layout, pack_activations, pack_weights, weight_layout
from strato.vta.runtime import CommandQueue, UopKernel


@dataclass
class Tile:
    """The tasks of one output tile; `thread` selects the half of every buffer it uses."""

    load: Callable[[CommandQueue, int], None]  # (queue, k)
    reset: Callable[[CommandQueue], None]
    gemm: Callable[[CommandQueue, int], None]
    epilogue: Callable[[CommandQueue], None]
    store: Callable[[CommandQueue], None]


def emit_tiles(q: CommandQueue, tiles: Sequence[Tile], k_steps: int, threads: int) -> None:
    """Emit tiles `threads` at a time (tile i on thread i % threads), interleaving their tasks."""
    if len(tiles) % threads:
        # a short last group would pop another thread's token and race with its own loads
        raise VTAError(f"{len(tiles)} tiles do not split over {threads} virtual threads")
    for _ in range(threads):
        q.dep_push(Stage.COMPUTE, Stage.LOAD)
    for _ in range(threads):
        q.dep_push(Stage.STORE, Stage.COMPUTE)
    for first in range(0, len(tiles), threads):
        group = tiles[first : first + threads]
        for k in range(k_steps):
            for tile in group:
                q.dep_pop(Stage.COMPUTE, Stage.LOAD)
                tile.load(q, k)
                q.dep_push(Stage.LOAD, Stage.COMPUTE)
            for tile in group:
                q.dep_pop(Stage.LOAD, Stage.COMPUTE)
                if k == 0:
                    q.dep_pop(Stage.STORE, Stage.COMPUTE)
                    tile.reset(q)
                tile.gemm(q, k)
                q.dep_push(Stage.COMPUTE, Stage.LOAD)
        for tile in group:
            tile.epilogue(q)
            q.dep_push(Stage.COMPUTE, Stage.STORE)
        for tile in group:
            q.dep_pop(Stage.COMPUTE, Stage.STORE)
            tile.store(q)
            q.dep_push(Stage.STORE, Stage.COMPUTE)
    for _ in range(threads):
        q.dep_pop(Stage.COMPUTE, Stage.LOAD)
    for _ in range(threads):
        q.dep_pop(Stage.STORE, Stage.COMPUTE)


def _reset_and_epilogue(acc_base: int, count: int, shift: int, key: object) -> tuple[Callable, Callable]:
    def reset(q: CommandQueue) -> None:
        def init(k: UopKernel) -> None:
            k.loop(count, 1, 0)
            k.push(acc_base)

        q.gemm(("reset", key), init, reset=True)

    def epilogue(q: CommandQueue) -> None:
        def init(k: UopKernel) -> None:
            k.loop(count, 1, 1)
            k.push(acc_base, acc_base)

        q.alu(("epilogue", key), init, op=AluOp.SHR, imm=shift)
        q.alu(("epilogue", key), init, op=AluOp.MAX, imm=0)
        q.alu(("epilogue", key), init, op=AluOp.MIN, imm=127)

    return reset, epilogue


def reference_requantize(acc: np.ndarray, shift: int) -> np.ndarray:
    """clip(acc >> shift, 0, 127) as int8, from exact int64 accumulators wrapped to int32."""
    wrapped = ((acc.astype(np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)
    return np.clip(wrapped >> shift, 0, 127).astype(np.int8)


# --- tiled GEMM ------------------------------------------------------------------------


def tiled_gemm(
    a: np.ndarray,
    b: np.ndarray,
    *,
    shift: int,
    tile_m: int,
    tile_n: int,
    tile_k: int,
    threads: int = 1,
    config: VTAConfig = DEFAULT_CONFIG,
) -> Bundle:
    """out[M, N] = clip((a[M, K] . b[N, K]^T) >> shift, 0, 127) in int8, as a bundle.

    tile_n and tile_k count blocks of BLOCK_OUT / BLOCK_IN; tile_m counts rows (BATCH = 1).
    Tensors `a`, `b`, `out` are placed as [M, K, 1, 1], [N, K, 1, 1] and [M, N, 1, 1].
    """
    if config.batch != 1:
        raise VTAError("tiled_gemm builds BATCH = 1 programs")
    m, kdim = a.shape
    n = b.shape[0]
    blk = config.block_in
    kb, nb = kdim // blk, n // blk
    if kdim % blk or n % blk or m % tile_m or nb % tile_n or kb % tile_k:
        raise VTAError(f"tiled_gemm: {m}x{kdim}x{n} does not tile by {tile_m}x{tile_k}x{tile_n}")
    inp_half = config.inp_depth // threads
    wgt_half = config.wgt_depth // threads
    acc_half = config.acc_depth // threads
    if tile_m * tile_k > inp_half or tile_n * tile_k > wgt_half or tile_m * tile_n > acc_half:
        raise VTAError("tiled_gemm: a tile does not fit a thread's share of the buffers")

    tiles = []
    for index, (mt, nt) in enumerate((mt, nt) for mt in range(m // tile_m) for nt in range(nb // tile_n)):
        t = index % threads
        inp_base, wgt_base, acc_base = t * inp_half, t * wgt_half, t * acc_half

        def load(
            q: CommandQueue, k: int, mt: int = mt, nt: int = nt, inp_base: int = inp_base, wgt_base: int = wgt_base
        ) -> None:
            q.load_2d(MemoryType.INP, inp_base, mt * tile_m * kb + k * tile_k, tile_m, tile_k, kb)
            q.load_2d(MemoryType.WGT, wgt_base, nt * tile_n * kb + k * tile_k, tile_n, tile_k, kb)

        def gemm(
            q: CommandQueue,
            k: int,
            t: int = t,
            inp_base: int = inp_base,
            wgt_base: int = wgt_base,
            acc_base: int = acc_base,
        ) -> None:
            def init(kern: UopKernel) -> None:
                kern.loop(tile_k, 0, 1, 1)  # reduction over the tile's k blocks
                for i in range(tile_m):
                    for j in range(tile_n):
                        kern.push(acc_base + i * tile_n + j, inp_base + i * tile_k, wgt_base + j * tile_k)

            q.gemm(("gemm", t), init)

        def store(q: CommandQueue, mt: int = mt, nt: int = nt, acc_base: int = acc_base) -> None:
            q.store_2d(acc_base, mt * tile_m * nb + nt * tile_n, tile_m, tile_n, nb)

        reset, epilogue = _reset_and_epilogue(acc_base, tile_m * tile_n, shift, t)
        tiles.append(Tile(load, reset, gemm, epilogue, store))

    q = CommandQueue(config)
    emit_tiles(q, tiles, kb // tile_k, threads)
    program = q.synchronize()
    dram = {
        "uop": program.uops,
        "inp": pack_activations(a.reshape(m, kdim, 1, 1), config),
        "wgt": pack_weights(b.reshape(n, kdim, 1, 1), config),
        "out": np.zeros((m * nb, 1, blk), dtype=config.out_dtype),
    }
    tensors = {
        "a": TensorPlacement("inp", 0, (m, kdim, 1, 1), activation_layout(config)),
        "b": TensorPlacement("wgt", 0, (n, kdim, 1, 1), weight_layout(config)),
        "out": TensorPlacement("out", 0, (m, n, 1, 1), activation_layout(config)),
    }
    return Bundle(program.insns, dram, config, tensors)


# --- conv2d ----------------------------------------------------------------------------


def conv2d_3x3(
    x: np.ndarray,
    w: np.ndarray,
    *,
    shift: int,
    tile_h: int,
    threads: int = 1,
    config: VTAConfig = DEFAULT_CONFIG,
) -> Bundle:
    """out = clip(conv2d(x, w, stride 1, padding 1) >> shift, 0, 127) for x [1, C, H, W], w [O, C, 3, 3].

    A task is one output-channel block of a tile of `tile_h` output rows; the threads take
    alternate tasks. The input tile (tile_h + 2 rows, W + 2 columns per channel block) is one
    padded 2-D LOAD per channel block. Tensors `x`, `w`, `out` are placed in NCHW1n16c /
    OIHW16o16i.
    """
    if config.batch != 1:
        raise VTAError("conv2d_3x3 builds BATCH = 1 programs")
    _, c, h, wd = x.shape
    o = w.shape[0]
    blk = config.block_in
    cb, ob = c // blk, o // blk
    if c % blk or o % blk or h % tile_h or w.shape[1:] != (c, 3, 3) or x.shape[0] != 1:
        raise VTAError(f"conv2d_3x3: x {list(x.shape)} / w {list(w.shape)} do not tile")
    rows, cols = tile_h + 2, wd + 2
    inp_half = config.inp_depth // threads
    wgt_half = config.wgt_depth // threads
    acc_half = config.acc_depth // threads
    if cb * rows * cols > inp_half or cb * 9 > wgt_half or tile_h * wd > acc_half:
        raise VTAError("conv2d_3x3: a tile does not fit a thread's share of the buffers")

    tiles = []
    # a thread keeps one output-channel block for consecutive row tiles, so it loads its
    # weights once per block
    tasks = sorted(
        ((ht, oc) for ht in range(h // tile_h) for oc in range(ob)),
        key=lambda task: (task[1] // threads, task[0], task[1] % threads),
    )
    previous_block: dict[int, int] = {}
    for index, (ht, oc) in enumerate(tasks):
        t = index % threads
        inp_base, wgt_base, acc_base = t * inp_half, t * wgt_half, t * acc_half
        new_block = previous_block.get(t) != oc
        previous_block[t] = oc

        def load(
            q: CommandQueue,
            k: int,
            ht: int = ht,
            oc: int = oc,
            inp_base: int = inp_base,
            wgt_base: int = wgt_base,
            new_block: bool = new_block,
        ) -> None:
            top = ht * tile_h - 1
            first, last = max(top, 0), min(top + rows, h)  # input rows present in DRAM
            for ci in range(cb):
                q.load_2d(
                    MemoryType.INP,
                    inp_base + ci * rows * cols,
                    ci * h * wd + first * wd,
                    last - first,
                    wd,
                    wd,
                    x_pad_0=1,
                    x_pad_1=1,
                    y_pad_0=first - top,
                    y_pad_1=top + rows - last,
                )
            if new_block:
                q.load_2d(MemoryType.WGT, wgt_base, oc * cb * 9, 1, cb * 9, cb * 9)

        def gemm(
            q: CommandQueue,
            k: int,
            t: int = t,
            inp_base: int = inp_base,
            wgt_base: int = wgt_base,
            acc_base: int = acc_base,
        ) -> None:
            def init(kern: UopKernel) -> None:
                kern.loop(tile_h, wd, cols, 0)  # output rows
                for ci in range(cb):
                    for kh in range(3):
                        for kw in range(3):
                            for ow in range(wd):
                                src = inp_base + ci * rows * cols + kh * cols + ow + kw
                                kern.push(acc_base + ow, src, wgt_base + ci * 9 + kh * 3 + kw)

            q.gemm(("conv", t), init)

        def store(q: CommandQueue, ht: int = ht, oc: int = oc, acc_base: int = acc_base) -> None:
            q.store_2d(acc_base, oc * h * wd + ht * tile_h * wd, 1, tile_h * wd, tile_h * wd)

        reset, epilogue = _reset_and_epilogue(acc_base, tile_h * wd, shift, t)
        tiles.append(Tile(load, reset, gemm, epilogue, store))

    q = CommandQueue(config)
    emit_tiles(q, tiles, 1, threads)
    program = q.synchronize()
    dram = {
        "uop": program.uops,
        "inp": pack_activations(x, config),
        "wgt": pack_weights(w, config),
        "out": np.zeros((ob * h * wd, 1, blk), dtype=config.out_dtype),
    }
    tensors = {
        "x": TensorPlacement("inp", 0, tuple(x.shape), activation_layout(config)),
        "w": TensorPlacement("wgt", 0, tuple(w.shape), weight_layout(config)),
        "out": TensorPlacement("out", 0, (1, o, h, wd), activation_layout(config)),
    }
    return Bundle(program.insns, dram, config, tensors)


def reference_conv2d_3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Exact int64 conv2d, stride 1, padding 1, NCHW x OIHW."""
    _, c, h, wd = x.shape
    padded = np.zeros((c, h + 2, wd + 2), dtype=np.int64)
    padded[:, 1:-1, 1:-1] = x[0]
    out = np.zeros((w.shape[0], h, wd), dtype=np.int64)
    for kh in range(3):
        for kw in range(3):
            out += np.einsum("oc,chw->ohw", w[:, :, kh, kw].astype(np.int64), padded[:, kh : kh + h, kw : kw + wd])
    return out[None]


# --- the figures -----------------------------------------------------------------------


def _figures() -> list[tuple[str, int, object]]:
    from strato.vta.simulator import simulate

    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (256, 1024), dtype=np.int8)
    b = rng.integers(-128, 128, (128, 1024), dtype=np.int8)
    x = rng.integers(-128, 128, (1, 128, 28, 28), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 128, 3, 3), dtype=np.int8)
    rows = []
    for threads in (1, 2):
        bundle = tiled_gemm(a, b, shift=14, tile_m=128, tile_n=4, tile_k=8, threads=threads)
        rows.append(("gemm M256 K1024 N128, tiles 128x128x64", threads, simulate(bundle.insns, bundle.dram).cycles))
    for threads in (1, 2):
        bundle = conv2d_3x3(x, w, shift=14, tile_h=2, threads=threads)
        rows.append(("conv 128->64 28x28 3x3, 2-row tiles", threads, simulate(bundle.insns, bundle.dram).cycles))
    return rows


def main() -> int:
    for name, threads, cycles in _figures():
        busy = " ".join(f"{k}={v}" for k, v in cycles.busy_cycles.items())
        print(
            f"{name}  threads={threads}  cycles={cycles.total_cycles}  busy[{busy}]  "
            f"utilization={100 * cycles.compute_utilization:.1f}%"
        )
    print(f"cycle model: {cycles.params.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
