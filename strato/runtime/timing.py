"""Latency measurement shared by `strato run` and the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable
from statistics import median


def measure_latencies_ms(run: Callable[[], object], repeat: int, warmup: int = 1) -> list[float]:
    """Wall-clock milliseconds of `repeat` calls of `run`, after `warmup` calls (and
    after the compile cache's writes under way: `strato.compile` writes a model's entry
    in the background, which would share the cores with the first calls)."""
    from strato.runtime.cache import wait_for_writes

    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    wait_for_writes()
    for _ in range(warmup):
        run()
    latencies = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        latencies.append((time.perf_counter() - start) * 1e3)
    return latencies


def median_latency_ms(run: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """The median of `measure_latencies_ms`."""
    return median(measure_latencies_ms(run, repeat, warmup))
