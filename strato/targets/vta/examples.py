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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from strato.targets.vta.bundle import Bundle, DramImage, TensorPlacement
from strato.targets.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.isa import AluOp, Stage
from strato.targets.vta.runtime import CommandQueue, UopKernel


@dataclass(frozen=True)
class ThreadBuffers:
    """The first element of one virtual thread's share of the INP, WGT and ACC buffers."""

    thread: int
    inp: int
    wgt: int
    acc: int
    inp_size: int
    wgt_size: int
    acc_size: int

    @staticmethod
    def split(config: VTAConfig, threads: int) -> list[ThreadBuffers]:
        """Equal shares, thread index on the outermost position (as TVM splits cthread buffers)."""
        inp, wgt, acc = config.inp_depth // threads, config.wgt_depth // threads, config.acc_depth // threads
        return [ThreadBuffers(t, t * inp, t * wgt, t * acc, inp, wgt, acc) for t in range(threads)]


@dataclass
class Task:
    """One output tile: loads per reduction step, GEMM per step, then ALU epilogue and store.

    Subclasses say what to load, multiply and store; the ACC reset and the requantizing
    epilogue `clip(acc >> shift, 0, 127)` over the tile's `acc_elements` are shared.
    """

    buffers: ThreadBuffers
    shift: int

    @property
    def acc_elements(self) -> int:
        raise NotImplementedError

    def load(self, q: CommandQueue, k: int) -> None:
        raise NotImplementedError

    def gemm(self, q: CommandQueue, k: int) -> None:
        raise NotImplementedError

    def store(self, q: CommandQueue) -> None:
        raise NotImplementedError

    def reset(self, q: CommandQueue) -> None:
        def init(kernel: UopKernel) -> None:
            kernel.loop(self.acc_elements, 1, 0)
            kernel.push(self.buffers.acc)

        q.gemm(("reset", self.buffers.thread, self.acc_elements), init, reset=True)

    def epilogue(self, q: CommandQueue) -> None:
        def init(kernel: UopKernel) -> None:
            kernel.loop(self.acc_elements, 1, 1)
            kernel.push(self.buffers.acc, self.buffers.acc)

        key = ("epilogue", self.buffers.thread, self.acc_elements)
        q.alu(key, init, op=AluOp.SHR, imm=self.shift)
        q.alu(key, init, op=AluOp.MAX, imm=0)
        q.alu(key, init, op=AluOp.MIN, imm=127)


def emit_tasks(q: CommandQueue, tasks: Sequence[Task], k_steps: int, threads: int) -> None:
    """Emit tasks `threads` at a time (task i on thread i % threads), interleaving them."""
    if len(tasks) % threads:
        # a short last group would pop another thread's token and race with its own loads
        raise VTAError(f"{len(tasks)} tasks do not split over {threads} virtual threads")
    for _ in range(threads):
        q.dep_push(Stage.COMPUTE, Stage.LOAD)
    for _ in range(threads):
        q.dep_push(Stage.STORE, Stage.COMPUTE)
    for first in range(0, len(tasks), threads):
        group = tasks[first : first + threads]
        for k in range(k_steps):
            for task in group:
                q.dep_pop(Stage.COMPUTE, Stage.LOAD)
                task.load(q, k)
                q.dep_push(Stage.LOAD, Stage.COMPUTE)
            for task in group:
                q.dep_pop(Stage.LOAD, Stage.COMPUTE)
                if k == 0:
                    q.dep_pop(Stage.STORE, Stage.COMPUTE)
                    task.reset(q)
                task.gemm(q, k)
                q.dep_push(Stage.COMPUTE, Stage.LOAD)
        for task in group:
            task.epilogue(q)
            q.dep_push(Stage.COMPUTE, Stage.STORE)
        for task in group:
            q.dep_pop(Stage.COMPUTE, Stage.STORE)
            task.store(q)
            q.dep_push(Stage.STORE, Stage.COMPUTE)
    for _ in range(threads):
        q.dep_pop(Stage.COMPUTE, Stage.LOAD)
    for _ in range(threads):
        q.dep_pop(Stage.STORE, Stage.COMPUTE)


def reference_requantize(acc: np.ndarray, shift: int) -> np.ndarray:
    """clip(acc >> shift, 0, 127) as int8, from exact int64 accumulators wrapped to int32."""
    wrapped = ((acc.astype(np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)
    return np.clip(wrapped >> shift, 0, 127).astype(np.int8)


# --- tiled GEMM ------------------------------------------------------------------------


@dataclass
class GemmTile(Task):
    """Rows mt*tile_m.. and column blocks nt*tile_n.. of out; INP/WGT are [rows, k blocks]."""

    mt: int
    nt: int
    tile_m: int
    tile_n: int
    tile_k: int
    k_blocks: int
    n_blocks: int
    placements: tuple[TensorPlacement, TensorPlacement, TensorPlacement]  # a, b, out

    @property
    def acc_elements(self) -> int:
        return self.tile_m * self.tile_n

    def load(self, q: CommandQueue, k: int) -> None:
        kb, tk = self.k_blocks, self.tile_k
        a, b, _ = (p.first_element for p in self.placements)
        q.load_2d(MemoryType.INP, self.buffers.inp, a + self.mt * self.tile_m * kb + k * tk, self.tile_m, tk, kb)
        q.load_2d(MemoryType.WGT, self.buffers.wgt, b + self.nt * self.tile_n * kb + k * tk, self.tile_n, tk, kb)

    def gemm(self, q: CommandQueue, k: int) -> None:
        buffers = self.buffers

        def init(kernel: UopKernel) -> None:
            kernel.loop(self.tile_k, 0, 1, 1)  # the reduction over the tile's k blocks
            for i in range(self.tile_m):
                for j in range(self.tile_n):
                    kernel.push(
                        buffers.acc + i * self.tile_n + j, buffers.inp + i * self.tile_k, buffers.wgt + j * self.tile_k
                    )

        q.gemm(("gemm", buffers.thread), init)

    def store(self, q: CommandQueue) -> None:
        first = self.placements[2].first_element + self.mt * self.tile_m * self.n_blocks + self.nt * self.tile_n
        q.store_2d(self.buffers.acc, first, self.tile_m, self.tile_n, self.n_blocks)


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
    shares = ThreadBuffers.split(config, threads)
    share = shares[0]
    if tile_m * tile_k > share.inp_size or tile_n * tile_k > share.wgt_size or tile_m * tile_n > share.acc_size:
        raise VTAError("tiled_gemm: a tile does not fit a thread's share of the buffers")
    image = DramImage(config)
    placements = (
        image.add_activations("a", a.reshape(m, kdim, 1, 1)),
        image.add_weights("b", b.reshape(n, kdim, 1, 1)),
        image.reserve_activations("out", (m, n, 1, 1)),
    )
    positions = [(mt, nt) for mt in range(m // tile_m) for nt in range(nb // tile_n)]
    tasks = [
        GemmTile(shares[i % threads], shift, mt, nt, tile_m, tile_n, tile_k, kb, nb, placements)
        for i, (mt, nt) in enumerate(positions)
    ]
    q = CommandQueue(config)
    emit_tasks(q, tasks, kb // tile_k, threads)
    program = q.synchronize()
    return Bundle(program.insns, {"uop": program.uops, **image.regions()}, config, image.tensors)


# --- conv2d ----------------------------------------------------------------------------


@dataclass
class ConvTask(Task):
    """Output rows ht*tile_h.. of output-channel block oc of a 3x3, stride 1, padding 1 conv.

    The input tile is [C/16][tile_h + 2][W + 2] in INP, padded by the DMA; the block's weights
    [C/16][3][3] are loaded only when the thread's previous task had another block.
    """

    ht: int
    oc: int
    tile_h: int
    channel_blocks: int
    height: int
    width: int
    load_weights: bool
    placements: tuple[TensorPlacement, TensorPlacement, TensorPlacement]  # x, w, out

    @property
    def acc_elements(self) -> int:
        return self.tile_h * self.width

    @property
    def rows(self) -> int:
        return self.tile_h + 2

    @property
    def cols(self) -> int:
        return self.width + 2

    def load(self, q: CommandQueue, k: int) -> None:
        h, wd, cb = self.height, self.width, self.channel_blocks
        x, w, _ = (p.first_element for p in self.placements)
        top = self.ht * self.tile_h - 1
        first, last = max(top, 0), min(top + self.rows, h)  # input rows that exist in DRAM
        for ci in range(cb):
            q.load_2d(
                MemoryType.INP,
                self.buffers.inp + ci * self.rows * self.cols,
                x + ci * h * wd + first * wd,
                last - first,
                wd,
                wd,
                x_pad_0=1,
                x_pad_1=1,
                y_pad_0=first - top,
                y_pad_1=top + self.rows - last,
            )
        if self.load_weights:
            q.load_2d(MemoryType.WGT, self.buffers.wgt, w + self.oc * cb * 9, 1, cb * 9, cb * 9)

    def gemm(self, q: CommandQueue, k: int) -> None:
        buffers = self.buffers

        def init(kernel: UopKernel) -> None:
            kernel.loop(self.tile_h, self.width, self.cols, 0)  # output rows
            for ci in range(self.channel_blocks):
                for kh in range(3):
                    for kw in range(3):
                        for ow in range(self.width):
                            src = buffers.inp + ci * self.rows * self.cols + kh * self.cols + ow + kw
                            kernel.push(buffers.acc + ow, src, buffers.wgt + ci * 9 + kh * 3 + kw)

        q.gemm(("conv", buffers.thread), init)

    def store(self, q: CommandQueue) -> None:
        first = self.placements[2].first_element + (self.oc * self.height + self.ht * self.tile_h) * self.width
        q.store_2d(self.buffers.acc, first, 1, self.acc_elements, self.acc_elements)


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
    alternate tasks, and a thread keeps one channel block over consecutive row tiles so it
    loads those weights once. Tensors `x`, `w`, `out` are placed in NCHW1n16c / OIHW16o16i.
    """
    if config.batch != 1:
        raise VTAError("conv2d_3x3 builds BATCH = 1 programs")
    _, c, h, wd = x.shape
    o = w.shape[0]
    blk = config.block_in
    cb, ob = c // blk, o // blk
    if c % blk or o % blk or h % tile_h or w.shape[1:] != (c, 3, 3) or x.shape[0] != 1:
        raise VTAError(f"conv2d_3x3: x {list(x.shape)} / w {list(w.shape)} do not tile")
    shares = ThreadBuffers.split(config, threads)
    share = shares[0]
    if cb * (tile_h + 2) * (wd + 2) > share.inp_size or cb * 9 > share.wgt_size or tile_h * wd > share.acc_size:
        raise VTAError("conv2d_3x3: a tile does not fit a thread's share of the buffers")
    order = sorted(
        ((ht, oc) for ht in range(h // tile_h) for oc in range(ob)),
        key=lambda task: (task[1] // threads, task[0], task[1] % threads),
    )
    image = DramImage(config)
    placements = (
        image.add_activations("x", x),
        image.add_weights("w", w),
        image.reserve_activations("out", (1, o, h, wd)),
    )
    tasks = []
    block_of_thread: dict[int, int] = {}
    for i, (ht, oc) in enumerate(order):
        thread = i % threads
        load_weights = block_of_thread.get(thread) != oc
        block_of_thread[thread] = oc
        tasks.append(ConvTask(shares[thread], shift, ht, oc, tile_h, cb, h, wd, load_weights, placements))
    q = CommandQueue(config)
    emit_tasks(q, tasks, 1, threads)
    program = q.synchronize()
    return Bundle(program.insns, {"uop": program.uops, **image.regions()}, config, image.tensors)


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
    from strato.targets.vta.simulator import simulate

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
