"""VTA latency hiding on ResNet-18's conv2d layers C2-C12: cycles and utilization, 1 vs 2 virtual threads.

    python benchmarks/vta_resnet.py              # all of C2 .. C12
    python benchmarks/vta_resnet.py C9 C12 --dma-latency 64

Each layer (int8 x and w drawn at random, shift chosen so outputs do not saturate) is
compiled by `strato.vta.run_conv2d` through the VTA compiler path (its te kernel lowered
to loops, scheduled by the VTA conv2d template with cache_read/cache_write into the vta
scopes and tensorize with vta.gemm, convert-loops-to-vta, token insertion and virtual
threads) and run on the bit-exact simulator; the result is checked against a numpy int8
reference before the figures are printed. Per layer and thread count: total cycles of the
cycle model, busy cycles of the load / compute / store modules, compute utilization (GEMM
cycles / total cycles; 100% = the GEMM core never idles) and the template's tiling. The
peer of the 2-thread run is the 1-thread run of the same layer in the same process
(speedup = its cycles / the 2-thread cycles). C1 (3 input channels) stays on the CPU.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from resnet18_layers import CONV_LAYERS

from strato.targets.vta.compile import reference_conv2d, run_conv2d, workload_of
from strato.targets.vta.conv2d_template import default_config
from strato.targets.vta.cycle_model import CycleParams

# C1 (3 input channels) stays on the CPU
LAYERS = {name: shape for name, shape in CONV_LAYERS.items() if name != "C1"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", nargs="*", help="C2 .. C12 (default: all)")
    defaults = CycleParams()
    for name in ("dma_bytes_per_cycle", "dma_latency", "insn_overhead"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    args = parser.parse_args(argv)
    names = args.layers or list(LAYERS)
    for name in names:
        if name not in LAYERS:
            parser.error(f"unknown layer '{name}' ({', '.join(LAYERS)})")
    params = CycleParams(
        dma_bytes_per_cycle=args.dma_bytes_per_cycle, dma_latency=args.dma_latency, insn_overhead=args.insn_overhead
    )
    print(f"cycle model: {params.describe()}")
    print(f"{'layer':6} {'vt':>2} {'cycles':>10} {'load':>9} {'compute':>9} {'store':>7} {'util':>6} {'speedup':>7}  tiling")
    rng = np.random.default_rng(0)
    best = 0.0
    for name in names:
        size, cin, cout, kernel, stride = LAYERS[name]
        padding = kernel // 2
        x = rng.integers(-128, 128, (1, cin, size, size), dtype=np.int8)
        w = rng.integers(-128, 128, (cout, cin, kernel, kernel), dtype=np.int8)
        shift = int(np.ceil(np.log2(cin * kernel * kernel))) + 9
        want = reference_conv2d(x, w, stride=stride, padding=padding, shift=shift)
        single = None
        for threads in (1, 2):
            start = time.perf_counter()
            got, report = run_conv2d(
                x, w, stride=stride, padding=padding, shift=shift, virtual_threads=threads, params=params
            )
            seconds = time.perf_counter() - start
            if not np.array_equal(got, want):
                print(f"{name}: the simulator's output differs from the numpy reference", file=sys.stderr)
                return 1
            cycles = report.cycles
            single = single or cycles.total_cycles
            tiling = default_config(workload_of(x.shape, w.shape, stride, padding, shift), threads)
            busy = cycles.busy_cycles
            best = max(best, cycles.compute_utilization)
            print(
                f"{name:6} {threads:>2} {cycles.total_cycles:>10} {busy['load']:>9} {busy['compute']:>9} "
                f"{busy['store']:>7} {100 * cycles.compute_utilization:>5.1f}% {single / cycles.total_cycles:>6.2f}x  "
                f"tile_h={tiling.tile_h} oc_tile={tiling.oc_tile} ic_tile={tiling.ic_tile} ({seconds:.1f} s)"
            )
    print(f"best compute utilization: {100 * best:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
