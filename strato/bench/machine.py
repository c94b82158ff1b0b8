"""What a `strato bench` result was measured on: the CPU, its cores and features, the
operating system and Python, and the BLAS/OpenMP environment variables that change speed.

    describe_machine()   # {"cpu": "Intel(R) Xeon(R) ...", "llvm_cpu": "emeraldrapids", ...}
"""

from __future__ import annotations

import os
import platform


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
