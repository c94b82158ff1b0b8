"""The `llvm` compile target: CPU machine code through llvmlite.

    llvm                                   the host CPU and its features, -O3
    llvm -mcpu=skylake-avx512              another CPU (its own features)
    llvm -mattr=+avx2,-avx512f             the host CPU with features edited
    llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72
                                           another system: object files only (the
                                           generic CPU of the triple unless -mcpu)
    llvm -mtriple=riscv64-linux-gnu -mattr=+v
                                           64-bit RISC-V Linux (RV64GC) with vectors
    llvm -opt-level=1                      LLVM's optimization level (0-3)
    llvm -fast-math                        float math may assume no NaN/Inf, ignore
                                           the sign of zero, use reciprocals and
                                           approximate functions
    llvm -threads=2                        parallel loops on up to 2 threads (1: serial;
                                           default: the cores available to the process)
    llvm -winograd                         3x3 stride-1 convolutions by the Winograd
                                           algorithm where it pays (graph-winograd):
                                           faster code, longer compiles
    llvm -winograd=4                       ... by F(4x4, 3x3) wherever it applies (or 2)

With a tuning log, each 3x3 stride-1 convolution takes whichever of direct, F(2, 3) and
F(4, 3) has the fastest kernel in the log (`tuning_alternatives`: the tuner measures
them all), and the target's own choice where the log has none of them.

The CPU decides both the machine code and the vector width and register count the
default schedules plan for (`strato.targets.llvm.host.vector_lanes`, `vector_registers`:
AVX-512 16 fp32 lanes in 32 registers, NEON 4 in 32, RVV its minimum length). A model
compiled for a triple whose code does not run on this machine (`host.runs_here`) is
never run here: it is written as an object file or LLVM IR (`strato compile -o m.o`)
and calling it is a `StratoError`. Reductions may always be reassociated and
contracted into FMAs (`reduction_flags`); `-fast-math` adds the other assumptions to
every float operation.

The stages, each a list of pass instances configured with the target's machine and
threads (what `strato run -v` reports and `--dump-ir` writes after):

    graph      graph-fold-qdq, graph-simplify-inference, graph-fold-constants,
               graph-raise-composites, graph-prune-conv-taps, cse, dce,
               graph-pad-channels{multiple=16 min_multiple=8},
               graph-alter-layout{block=16 min_block=8}, graph-pack-dense{lanes=L},
               graph-fuse-ops, graph-plan-memory, [graph-winograd{tile=T
               tuning_log=... untuned=...}, with -winograd or a tuning log]
    te         convert-graph-to-te{row_blocks=32,16,8,4,1}, te-inline-stages,
               te-dedup-primitives
    loops      convert-te-to-loops
    schedule   loop-dedup-kernels, schedule-default{lanes=L threads=N [tuning_log=...]}
               (each distinct kernel once, scheduled by the CPU templates)

then `build` (strato.targets.llvm.build.build_loops), after every buffer's size is
checked: each distinct kernel lowered as convert-loops-to-llvm{threads=N} lowers it,
emitted, optimized and compiled to an object of its own, in parallel processes and
through the compile cache (strato.targets.llvm.kernel_objects); then the entry, linked
with them in one MCJIT module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from strato.diagnostics import StratoError
from strato.runtime.saved_model import register_model_format
from strato.runtime.threads import available_cores, parse_threads
from strato.schedule.templates import (
    ScheduleContext,
    register_context_factory,
    registered_templates,
)
from strato.targets.llvm import dot_i8, intrinsics  # noqa: F401  (registers cpu.fma_tile, cpu.dot_i8)
from strato.targets.llvm.aot import FORMAT, model_from_archive
from strato.targets.llvm.fast_math import FAST_MATH_FLAGS, add_fast_math_flags
from strato.targets.llvm.host import HostTarget, MachineError, host_target, machine_for
from strato.targets.registry import (
    GRAPH_STAGE,
    BuildOptions,
    KernelBuilder,
    Stage,
    Target,
    TargetError,
    register_target,
)

if TYPE_CHECKING:
    import xdsl.utils.target
    from xdsl.passes import ModulePass

    from strato.runtime.compiled_model import CompiledModel
    from strato.runtime.signature import Signature
    from strato.schedule.knobs import KnobSource

TEMPLATES = "llvm"
"""The name the CPU's schedule templates are registered under (strato.schedule.templates)."""

CONV_BLOCK = 16
"""Channels a block of the NCHW{c} layout: one AVX-512 vector of fp32, the lanes of the
conv2d NCHW{c} template."""
CONV_MIN_BLOCK = 8
"""The block where 16 does not divide the channels (MobileNetV2's 24-channel stages), so
such networks stay blocked from end to end."""


NO_OPTIONAL_FEATURES = "-avx512vnni,-avxvnni"
"""The feature list the schedules get for a machine whose features are not known."""


def cpu_schedule_context(machine: HostTarget, lanes: int, threads: int) -> ScheduleContext:
    """The default schedules' context on `machine`: the templates plugins registered for
    the llvm target, then the CPU's own; `lanes` fp32 lanes (0: the machine's) and
    `threads` threads (0: the cores available)."""
    from strato.targets.llvm.dot_i8 import machine_features
    from strato.targets.llvm.host import device_name, vector_lanes, vector_registers
    from strato.targets.llvm.templates import CPU_TEMPLATES

    lanes = lanes or vector_lanes(machine, 4)
    return ScheduleContext(
        TEMPLATES,
        (*registered_templates(TEMPLATES), *CPU_TEMPLATES),
        lanes=lanes,
        vector_registers=vector_registers(machine),
        threads=threads or available_cores(),
        device=device_name(machine),
        features=frozenset(machine_features(machine.features)),
    )


register_context_factory(
    TEMPLATES, lambda lanes, threads: cpu_schedule_context(host_target(), lanes, threads)
)


class LLVMTarget(Target):
    name = "llvm"
    summary = "CPU machine code through LLVM (host CPU unless -mtriple/-mcpu/-mattr say otherwise)"
    options = {
        "mcpu": "CPU to compile for, e.g. skylake-avx512, x86-64-v2, cortex-a72 (default: the "
        "host's; with -mtriple, the generic CPU of that system)",
        "mattr": "CPU features to enable/disable, e.g. +avx2,-avx512f",
        "mtriple": "system to compile for, e.g. aarch64-linux-gnu, riscv64-linux-gnu "
        "(default: this machine's; another one's code is written, never run here)",
        "opt-level": "LLVM optimization level 0-3 (default 3)",
        "fast-math": "assume no NaN/Inf, ignore signed zeros, allow reciprocals and "
        "approximate functions",
        "threads": "threads parallel loops run on (1: serial; default: the available cores)",
        "winograd": "compute 3x3 stride-1 convolutions by the Winograd algorithm where it "
        "pays (about 2.5x faster layers, 2x longer compiles); =2 or =4: by that tile wherever "
        "it applies",
    }
    passes = {
        "convert-loops-to-llvm": "strato.targets.llvm.convert_loops_to_llvm:ConvertLoopsToLLVMPass",
        "graph-pack-dense": "strato.targets.llvm.graph_pack_dense:GraphPackDensePass",
        "graph-winograd": "strato.targets.llvm.graph_winograd:GraphWinogradPass",
    }

    def __init__(self, spec) -> None:
        super().__init__(spec)
        level = self.option("opt-level", "3")
        if level not in ("0", "1", "2", "3"):
            raise TargetError(f"target 'llvm': -opt-level must be 0, 1, 2 or 3, got '{level}'")
        self.opt_level = int(level)
        self.fast_math = self.flag("fast-math")
        self.winograd = _winograd_option(self.option("winograd"))
        threads = self.option("threads")
        try:
            self.threads = available_cores() if threads is None else parse_threads(threads, "-threads")
        except StratoError as err:
            raise TargetError(f"target 'llvm': {err.message}") from None
        try:
            self.machine: HostTarget = machine_for(
                self.option("mcpu"), self.option("mattr"), self.option("mtriple")
            )
        except MachineError as err:
            raise TargetError(f"target 'llvm': {err.message}") from None

    @property
    def lanes(self) -> int:
        """fp32 lanes of a vector register of the target's CPU."""
        from strato.targets.llvm.host import vector_lanes

        return vector_lanes(self.machine, 4)

    def schedule_context(self, knobs: KnobSource | None = None) -> ScheduleContext:
        return cpu_schedule_context(self.machine, self.lanes, self.threads).with_knobs(knobs)

    def lowering_stages(self, *, tuning_log: str | None = None) -> tuple[Stage, ...]:
        """The stages to loop-level kernels; with `tuning_log`, graph-winograd takes the
        algorithm of each 3x3 convolution from the log's measurements (direct unless the
        target says -winograd, for those it has none of)."""
        from strato.targets.llvm.graph_pack_dense import GraphPackDensePass
        from strato.targets.llvm.graph_winograd import GraphWinogradPass
        from strato.targets.llvm.host import device_name
        from strato.transforms.convert_graph_to_te import (
            ROW_BLOCKS,
            ConvertGraphToTePass,
        )
        from strato.transforms.convert_te_to_loops import ConvertTeToLoopsPass
        from strato.transforms.graph_default import (
            graph_fusion_passes,
            graph_optimization_passes,
        )
        from strato.transforms.graph_fold_qdq import GraphFoldQdqPass
        from strato.transforms.te_dedup_primitives import TeDedupPrimitivesPass
        from strato.transforms.te_inline_stages import TeInlineStagesPass

        graph = (
            GraphFoldQdqPass(),
            *graph_optimization_passes(block=CONV_BLOCK, min_block=CONV_MIN_BLOCK),
            GraphPackDensePass(lanes=self.lanes),
            *graph_fusion_passes(),
        )
        if self.winograd is not None or tuning_log:
            graph += (
                GraphWinogradPass(
                    tile=self.winograd or 0,
                    tuning_log=tuning_log or "",
                    device=device_name(self.machine),
                    threads=self.threads,
                    untuned="direct" if self.winograd is None else "rule",
                ),
            )
        return (
            Stage(GRAPH_STAGE, graph),
            Stage(
                "te",
                (
                    ConvertGraphToTePass(row_blocks=ROW_BLOCKS),
                    TeInlineStagesPass(),
                    TeDedupPrimitivesPass(),
                ),
            ),
            Stage("loops", (ConvertTeToLoopsPass(),)),
        )

    def stages(self, *, tuning_log: str | None = None) -> tuple[Stage, ...]:
        from strato.transforms.loop_dedup_kernels import LoopDedupKernelsPass
        from strato.transforms.schedule_default import ScheduleDefaultPass

        schedule = ScheduleDefaultPass(
            target=TEMPLATES,
            lanes=self.lanes,
            threads=self.threads,
            tuning_log=tuning_log or "",
            # a CPU named without a feature list (-mcpu=skylake-avx512): its features are
            # not listed here, so no optional instruction (VNNI) is assumed
            features=self.machine.features or NO_OPTIONAL_FEATURES,
        )
        return (
            *self.lowering_stages(tuning_log=tuning_log),
            Stage("schedule", (LoopDedupKernelsPass(), schedule)),
        )

    def tuning_alternatives(self) -> tuple[str, ...]:
        """The other algorithms of 3x3 convolutions (direct, F(2, 3), F(4, 3)) than this
        target's own choice, unless it forces one (-winograd=2)."""
        if self.winograd:
            return ()
        others = ("2", "4") if self.winograd is None else ("false", "2", "4")
        return tuple(str(self.with_options(winograd=value)) for value in others)

    def build(
        self,
        module: ModuleOp,
        entry_name: str,
        signature: Signature,
        *,
        public_name: str,
        options: BuildOptions = BuildOptions(),
        schedule: ScheduleContext | None = None,
    ) -> CompiledModel:
        """`schedule`: the module's kernels are not scheduled yet, the build schedules
        each with that context where it compiles it (see `schedules_in_build`)."""
        from strato.targets.llvm.build import build_loops

        return build_loops(
            module,
            entry_name,
            signature,
            machine=self.machine,
            opt_level=self.opt_level,
            threads=self.threads,
            fast_math=self.fast_math,
            public_name=public_name,
            target=str(self),
            options=options,
            schedule=schedule,
        )

    @property
    def schedules_in_build(self) -> bool:
        """Whether `build` can take the kernels unscheduled with the context of the
        schedule-default pass that ends `stages()` (`build(..., schedule=context)`): it
        schedules each where it compiles it, in the processes that compile the kernels,
        which gives the same kernels and model. `strato.compile` does so when nobody
        looks at the scheduled IR."""
        return type(self).build is LLVMTarget.build

    def prepare(self) -> None:
        """The JIT's C and parallel runtimes, loaded and compiled in a thread while the
        model is imported and lowered (`jit.prepare_c_runtime`), for code that runs here."""
        from strato.targets.llvm.host import runs_here
        from strato.targets.llvm.jit import prepare_c_runtime

        if runs_here(self.machine):
            prepare_c_runtime()

    def build_passes(self) -> tuple[ModulePass, ...]:
        from strato.targets.llvm.convert_loops_to_llvm import ConvertLoopsToLLVMPass

        return (ConvertLoopsToLLVMPass(threads=self.threads),)

    def kernel_builder(self) -> KernelBuilder:
        from strato.targets.llvm.kernels import LLVMKernelBuilder

        return LLVMKernelBuilder(self.machine, self.threads, self.opt_level)

    def emitter(self) -> type[xdsl.utils.target.Target]:
        from strato.targets.llvm.emit import LLVMIRTarget

        return LLVMIRTarget

    def cache_key(self) -> str:
        machine = self.machine
        return f"{self.spec} @ {machine.triple} {machine.cpu} {machine.features} threads={self.threads}"


register_target(LLVMTarget)
register_model_format(FORMAT, model_from_archive)

__all__ = ["FAST_MATH_FLAGS", "LLVMTarget", "add_fast_math_flags", "cpu_schedule_context"]


def _winograd_option(value: str | None) -> int | None:
    """-winograd: None when off, 0 for the tile chosen per layer by size (`-winograd`,
    `-winograd=true`), or the tile every candidate takes (`-winograd=2`, `=4`)."""
    from strato.dialects.graph.winograd import TILES

    if value is None or value.lower() in ("false", "0"):
        return None
    if value.lower() in ("true", "1"):
        return 0
    if value in {str(t) for t in TILES}:
        return int(value)
    raise TargetError(
        f"target 'llvm': -winograd is a flag (true or false) or a tile size "
        f"({' or '.join(map(str, TILES))}), got '{value}'"
    )
