"""The `vta` compile target: conv2d layers on the VTA simulator, the rest on the CPU.

    vta                          two virtual threads, calibration on 2 random samples
    vta -virtual-threads=1       no latency hiding
    vta -samples=8 -seed=3       graph-quantize's random calibration inputs (uniform in
                                 [-1, 1]); inputs far outside that range are clipped
    vta -calibration=CAL.npz     calibrate on the inputs in CAL.npz (graph-quantize's format)

    model = strato.compile("resnet18", target="vta")
    (logits,) = model(x)
    print(model.run_report())    # per offloaded layer: counters, cycles, utilization
    model.check_layers()         # per offloaded layer: elements differing from the int8 reference

The pipeline folds batch norms (graph-simplify-inference) and quantizes conv2d and dense
to int8 with power-of-two scales (graph-quantize). Building splits the quantized graph
(`strato.targets.vta.partition`): every conv that VTA can run (the pattern
`strato.targets.vta.graph.match_offloadable` accepts: VTA layouts, int8 operands, the
shift-and-clip requantization; all of ResNet-18's but the first) is compiled through the
VTA compiler path (the VTA conv2d template's schedule of its te kernel,
convert-loops-to-vta, dependence tokens, virtual threads: `strato.targets.vta.compile`), and the
ops between them (the first conv, residual adds, pooling, the dense layer, quantize and
dequantize) are compiled by the llvm target. A call runs the steps in order: each
offloaded conv as an instruction stream on the bit-exact simulator with the cycle model,
each CPU function as machine code. The outputs are bit-exact against
`strato.interpreters.graph.run_graph` of the quantized graph. `layers` holds the
simulator's reports of the last call.

`strato-opt -t vta` is the vta dialect's emitter (strato.targets.vta.emitter).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from strato.runtime.compiled_model import CompiledModel
from strato.targets.registry import (
    GRAPH_STAGE,
    BuildOptions,
    Stage,
    Target,
    TargetError,
    register_target,
)
from strato.targets.vta import intrinsics  # noqa: F401  (registers vta.gemm)

if TYPE_CHECKING:
    import xdsl.utils.target
    from xdsl.dialects.builtin import ModuleOp

    from strato.runtime.signature import Signature
    from strato.targets.vta.graph import OffloadedLayer
    from strato.targets.vta.partition import LayerCheck


CLOCK_MHZ = 100
"""The clock of VTA's default (Pynq) configuration, to put cycles in milliseconds."""


class VtaCompiledModel(CompiledModel):
    """A quantized model whose offloaded conv layers run on the VTA simulator."""

    simulated_device = "VTA"
    """Its offloaded layers run on a simulator: its wall time is the host's."""
    quantized_bits = 8
    """It computes in int8: it differs from the float model by the quantization error."""

    def __init__(self, signature: Signature, module: ModuleOp, entry_name: str, *, target: str, virtual_threads: int):
        from strato.targets.vta.partition import partition

        self.module = module
        self.entry_name = entry_name
        self.virtual_threads = virtual_threads
        self.steps = partition(module, virtual_threads=virtual_threads, function=entry_name)
        """The VTA steps and the CPU segments between them, compiled (strato.targets.vta.partition)."""
        self.layers: list[OffloadedLayer] = []
        """The simulator's report of each offloaded layer in the last call."""
        self.runs = 0
        super().__init__(signature, self._run, target=target)

    def _run(self, arrays: Sequence[np.ndarray]) -> None:
        from strato.targets.vta.partition import run_partition

        count = len(self.signature.inputs)
        inputs, outputs = arrays[:count], arrays[count:]
        results, self.layers = run_partition(self.steps, self.module, list(inputs), function=self.entry_name)
        self.runs += 1
        for out, result in zip(outputs, results, strict=True):
            np.copyto(out, result.astype(out.dtype, copy=False))

    @property
    def offloaded(self) -> int:
        """How many conv layers run on the simulator."""
        from strato.targets.vta.partition import VtaStep

        return sum(isinstance(step, VtaStep) for step in self.steps)

    @property
    def cpu_segments(self) -> int:
        """How many compiled CPU functions run the ops between the offloaded layers."""
        return len(self.steps) - self.offloaded

    def check_layers(self) -> list[LayerCheck]:
        """Each offloaded layer of the last call, its simulated int8 output compared
        element by element with the numpy int8 reference (`reference_conv2d`) of the same
        input (`strato.targets.vta.partition.check_layers`)."""
        from strato.targets.vta.partition import check_layers

        return check_layers(self.steps, self.layers)

    def run_report(self) -> str:
        """Per offloaded layer of the last call: shapes, the simulator's counters, cycles
        and compute utilization; then the totals and the cycle model's parameters."""
        out = io.StringIO()
        out.write(
            f"VTA: {self.offloaded} conv2d layer(s) on the simulator, {self.virtual_threads} virtual thread(s); "
            f"the rest in {self.cpu_segments} function(s) compiled for the CPU\n"
        )
        if not self.runs:
            return out.getvalue() + "(not run yet)\n"
        if not self.layers:
            return out.getvalue()
        out.write(
            f"{'layer':24} {'input':>14} {'weights':>16} {'gemm uops':>10} {'alu uops':>9} "
            f"{'DMA kB':>8} {'cycles':>10} {'util':>6}\n"
        )
        total = gemm = 0
        for layer in self.layers:
            c = layer.report.counters
            moved = (c.inp_load_nbytes + c.wgt_load_nbytes + c.acc_load_nbytes + c.uop_load_nbytes + c.out_store_nbytes) / 1024
            cycles = layer.report.cycles
            total += cycles.total_cycles
            gemm += cycles.gemm_cycles
            out.write(
                f"{layer.name[:24]:24} {'x'.join(map(str, layer.input_shape)):>14} "
                f"{'x'.join(map(str, layer.weight_shape)):>16} {c.gemm_counter:>10} {c.alu_counter:>9} "
                f"{moved:>8.0f} {cycles.total_cycles:>10} {100 * cycles.compute_utilization:>5.1f}%\n"
            )
        out.write(
            f"all offloaded layers: {total} cycles ({total / (CLOCK_MHZ * 1000):.1f} ms at the Pynq "
            f"configuration's {CLOCK_MHZ} MHz), compute utilization {100 * gemm / max(total, 1):.1f}%\n"
        )
        out.write(f"cycle model: {self.layers[0].report.cycles.params.describe()}\n")
        return out.getvalue()


def _count(target: Target, key: str, default: int, low: int, high: int) -> int:
    text = target.option(key, str(default))
    assert text is not None
    if not text.isdigit() or not low <= int(text) <= high:
        raise TargetError(f"target 'vta': -{key} must be an integer from {low} to {high}, got '{text}'")
    return int(text)


class VtaCompileTarget(Target):
    name = "vta"
    summary = "int8: conv2d layers on the VTA simulator (bit-exact, with a cycle model), the rest on the CPU"
    passes = {
        "graph-quantize": "strato.targets.vta.graph_quantize:GraphQuantizePass",
        "convert-loops-to-vta": "strato.targets.vta.convert_loops_to_vta:ConvertLoopsToVtaPass",
        "vta-insert-dependence-tokens": "strato.targets.vta.vta_insert_dependence_tokens:VtaInsertDependenceTokensPass",
        "vta-inject-virtual-threads": "strato.targets.vta.vta_inject_virtual_threads:VtaInjectVirtualThreadsPass",
    }
    options = {
        "virtual-threads": "virtual threads of the offloaded layers, 1 or 2 (default 2)",
        "samples": "random calibration inputs of graph-quantize (default 2)",
        "seed": "seed of the calibration inputs (default 0)",
        "calibration": "an .npz of calibration inputs for graph-quantize (arg0, arg1, ...; "
        "a leading sample axis) instead of random ones",
    }

    def __init__(self, spec) -> None:
        super().__init__(spec)
        self.virtual_threads = _count(self, "virtual-threads", 2, 1, 2)
        self.samples = _count(self, "samples", 2, 1, 1024)
        self.seed = _count(self, "seed", 0, 0, 2**31 - 1)

    def stages(self, *, tuning_log: str | None = None) -> tuple[Stage, ...]:
        from strato.targets.vta.graph_quantize import GraphQuantizePass
        from strato.transforms.graph_simplify_inference import (
            GraphSimplifyInferencePass,
        )

        calibration = self.option("calibration")
        if calibration is not None:
            quantize = GraphQuantizePass(calibration=calibration)
        else:
            quantize = GraphQuantizePass(samples=self.samples, seed=self.seed)
        return (Stage(GRAPH_STAGE, (GraphSimplifyInferencePass(), quantize)),)

    def build(
        self,
        module: ModuleOp,
        entry_name: str,
        signature: Signature,
        *,
        public_name: str,
        options: BuildOptions = BuildOptions(),
    ) -> CompiledModel:
        return VtaCompiledModel(signature, module, entry_name, target=str(self), virtual_threads=self.virtual_threads)

    def emitter(self) -> type[xdsl.utils.target.Target]:
        from strato.targets.vta.emitter import VtaTarget

        return VtaTarget


register_target(VtaCompileTarget)

__all__ = ["VtaCompileTarget", "VtaCompiledModel"]
