"""VTA: strato's accelerator target, its simulator and its tools.

    from strato import vta
    out, report = vta.run_conv2d(x, w, stride=1, padding=1, shift=8, virtual_threads=2)
    out, report = vta.run_dense(x, w, shift=8)
    bundle = vta.read_bundle("conv.bundle")
    report = vta.simulate(bundle.insns, bundle.dram, bundle.config)

Command lines:

    python -m strato.vta.simulator BUNDLE_DIR    # run a bundle on the simulator
    python -m strato.vta.examples                # hand-written GEMM and conv2d streams
    python -m strato.vta.run_model resnet18      # a model with its convs on the simulator

The implementation lives in `strato.targets.vta`; this module names what users call.
"""

from __future__ import annotations

from strato.targets.vta.bundle import Bundle, TensorPlacement, read_bundle, write_bundle
from strato.targets.vta.compile import (
    compile_conv2d,
    reference_conv2d,
    run_conv2d,
    run_dense,
)
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.cycle_model import CycleParams, CycleReport
from strato.targets.vta.errors import VTAError
from strato.targets.vta.simulator import Counters, Report, simulate

__all__ = [
    "Bundle",
    "Counters",
    "CycleParams",
    "CycleReport",
    "DEFAULT_CONFIG",
    "Report",
    "TensorPlacement",
    "VTAConfig",
    "VTAError",
    "compile_conv2d",
    "read_bundle",
    "reference_conv2d",
    "run_conv2d",
    "run_dense",
    "simulate",
    "write_bundle",
]
