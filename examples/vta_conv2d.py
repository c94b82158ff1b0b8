"""Run one int8 conv2d layer on the VTA simulator and read its cycle report.

The layer goes through strato's VTA path: its te kernel scheduled by the VTA conv2d
template (tensorized with the vta.gemm intrinsic) and converted to the vta dialect,
dependence tokens between the load, compute and store modules, virtual threads, the
128-bit instruction stream, then the bit-exact simulator with its cycle model. With
two virtual threads the load of one thread overlaps the GEMMs of the other, which the
cycle model shows as fewer total cycles.

    python examples/vta_conv2d.py              # a ResNet-like 64-channel 14x14 layer
    python examples/vta_conv2d.py --small      # the shortened form CI runs
"""

import argparse

import numpy as np

from strato.vta import reference_conv2d, run_conv2d


def main(small: bool = False) -> None:
    channels, size = (32, 8) if small else (64, 14)
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, channels, size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (channels, channels, 3, 3), dtype=np.int8)

    cycles = {}
    for threads in (1, 2):
        y, report = run_conv2d(x, w, stride=1, padding=1, shift=8, virtual_threads=threads)
        # The simulator is bit-exact: the same values as the numpy reference.
        np.testing.assert_array_equal(y, reference_conv2d(x, w, stride=1, padding=1, shift=8))
        cycles[threads] = report.cycles.total_cycles
        print(f"-- {threads} virtual thread(s)")
        print(report.format())
    print(f"two virtual threads: {cycles[1] / cycles[2]:.2f}x fewer cycles than one")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a small layer (CI)")
    main(parser.parse_args().small)
