"""What a `strato bench` result was measured on: the CPU, its cores and features, the
operating system and Python, and the BLAS/OpenMP environment variables that change speed;
and what one of its cores can do at most (`fma_peak_gflops`, measured, not assumed).

    describe_machine()   # {"cpu": "Intel(R) Xeon(R) ...", "llvm_cpu": "emeraldrapids", ...}
    fma_peak_gflops()    # 116.0 (one Zen 4 core: its 512-bit FMAs issue at half the rate of 256-bit ones)
"""

from __future__ import annotations

import os
import platform
import time


def cpu_model_name() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


SPEED_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "MKL_NUM_THREADS", "TVM_NUM_THREADS",
)  # fmt: skip
"""Environment variables that change a peer's threads or kernels, recorded when set."""


def describe_machine() -> dict[str, object]:
    """The machine, as JSON-ready values."""
    from strato.targets.llvm.host import host_target

    host = host_target()
    enabled = sorted(f[1:] for f in host.features.split(",") if f.startswith("+"))
    return {
        "cpu": cpu_model_name(),
        "llvm_cpu": host.cpu,
        "triple": host.triple,
        "logical_cpus": os.cpu_count(),
        "usable_cores": usable_cores(),
        "features": enabled,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "environment": {name: os.environ[name] for name in SPEED_VARIABLES if name in os.environ},
    }


def vector_features(features: list[str]) -> str:
    """The features that decide vector code, for one line of the report."""
    wanted = ("sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx512bf16", "avx512fp16", "amx-tile", "neon", "sve")
    return " ".join(f for f in wanted if f in features) or "none of sse4.2/avx/avx512/neon"


def _fma_chains_ir(chains: int, lanes: int) -> str:
    """LLVM IR of `@fma_chains(ptr %out, i64 %steps)`: `chains` independent vectors of
    `lanes` floats, each stepped `steps` times by v = v * 0.5 + 0.25 (one fused
    multiply-add), then summed into `out` (so no step is dead)."""
    vector = f"<{lanes} x float>"

    def splat(value: str) -> str:
        return "<" + ", ".join([f"float {value}"] * lanes) + ">"

    fma = f"@llvm.fma.v{lanes}f32"
    lines = [
        "define void @fma_chains(ptr %out, i64 %steps) {",
        "entry:",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%next, %loop]",
    ]
    lines += [f"  %v{c} = phi {vector} [{splat('1.0')}, %entry], [%w{c}, %loop]" for c in range(chains)]
    lines += [
        f"  %w{c} = call {vector} {fma}({vector} %v{c}, {vector} {splat('0.5')}, {vector} {splat('0.25')})"
        for c in range(chains)
    ]
    lines += [
        "  %next = add i64 %i, 1",
        "  %more = icmp slt i64 %next, %steps",
        "  br i1 %more, label %loop, label %exit",
        "exit:",
    ]
    total = "%w0"
    for c in range(1, chains):
        lines.append(f"  %s{c} = fadd {vector} {total}, %w{c}")
        total = f"%s{c}"
    lines += [
        f"  store {vector} {total}, ptr %out, align 4",
        "  ret void",
        "}",
        f"declare {vector} {fma}({vector}, {vector}, {vector})",
    ]
    return "\n".join(lines)


def fma_chains(chains: int | None = None):
    """The host's FMA-throughput loop, compiled: `(run, lanes, chains)`, `run(out, steps)`
    stepping every chain `steps` times and writing the chains' sum (`lanes` floats) to
    the float32 array `out`. Enough chains to hide the FMA's latency on every unit (by
    default all vector registers but two, at most 24)."""
    from strato.targets.llvm.host import host_target, vector_lanes, vector_registers
    from strato.targets.llvm.jit import JitModule

    machine = host_target()
    lanes = vector_lanes(machine)
    chains = chains or max(1, min(24, vector_registers(machine) - 2))
    run = JitModule(_fma_chains_ir(chains, lanes), machine=machine).function("fma_chains")
    return run, lanes, chains


def fma_peak_gflops(seconds: float = 0.3) -> float:
    """One core's fp32 multiply-add peak in GFLOP/s (2 flops per lane per FMA), measured
    on this machine: the best of five timed runs of `fma_chains` in the calling thread,
    each about `seconds` / 5 long (thread CPU time, which does not count time other
    processes take the core). What the vector units sustain, which the nominal figure
    (units x lanes x clock) often is not: a Zen 4 core issues one 512-bit FMA a cycle,
    not two."""
    import numpy as np

    run, lanes, chains = fma_chains()
    out = np.zeros(lanes, np.float32)

    def timed(steps: int) -> float:
        start = time.thread_time()
        run(out, steps)
        return max(time.thread_time() - start, 1e-9)

    steps = 10_000
    while (elapsed := timed(steps)) < seconds / 20 and steps < 1 << 34:
        steps *= 4  # until a run is long enough to time
    steps = max(1, int(steps * (seconds / 5) / elapsed))
    return max(2.0 * lanes * chains * steps / timed(steps) / 1e9 for _ in range(5))
