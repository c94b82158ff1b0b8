"""Equivalence checking at model scale: for each model, the llvm target's pipeline down
to scheduled loops run by `strato-opt` alone, then the same with `--check-equivalence`,
each in a process of its own, with the evaluator each level was run with.

    python benchmarks/equivalence.py                  # every zoo model
    python benchmarks/equivalence.py resnet18 mlp     # some of them
    python benchmarks/equivalence.py --inputs 2       # two random inputs per check

The table gives per model: the pipeline's time, the checked pipeline's time and their
ratio, the same in CPU time (of the process and the processes it starts: steadier than
the time on a busy machine), the passes checked, the largest relative difference from the input program's
results, and the evaluator of each level (graph and te: whole-tensor numpy evaluation;
loops: the loop interpreter for small programs, else the program compiled). A pass that
changes a result makes strato-opt fail, and the row says so.
"""

from __future__ import annotations

import argparse
import math
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PIPELINE = (
    "graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops,"
    "loop-dedup-kernels,schedule-default"
)
PROGRESS = re.compile(r"ran (?P<what>.+?) on \d+ input\(s\) \((?P<level>\w+) level, (?P<ops>\d+) ops, (?P<evaluator>[^)]+\)?)\): (?P<seconds>[\d.]+) s")
SUMMARY = re.compile(r"(?P<passes>\d+) pass\(es\) keep the results .*largest relative difference from the input's results: (?P<largest>[^)]+)\)")


def _run(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """The command's wall time, its CPU time (its own and its children's: the kernels it
    compiles in forked processes, the programs it runs in them) and its outcome."""
    start, used = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, _children_cpu() - used, done


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(model: str, directory: Path, inputs: int) -> dict:
    source = directory / f"{model}.mlir"
    _, _, done = _run([sys.executable, "-m", "strato.tools.strato_cli", "import", model, "-o", str(source)])
    if done.returncode != 0:
        return {"error": f"import failed: {done.stderr.strip().splitlines()[-1:]}"}
    opt = [sys.executable, "-m", "strato.tools.strato_opt", str(source), "-p", PIPELINE, "-o", "/dev/null"]
    pipeline, pipeline_cpu, done = _run(opt)
    if done.returncode != 0:
        return {"error": f"pipeline failed: {done.stderr.strip().splitlines()[-1:]}"}
    checked, checked_cpu, done = _run([*opt, f"--check-equivalence={inputs}"])
    result: dict = {
        "pipeline": pipeline,
        "checked": checked,
        "pipeline_cpu": pipeline_cpu,
        "checked_cpu": checked_cpu,
        "levels": {},
    }
    for line in done.stderr.splitlines():
        progress = PROGRESS.search(line)
        if progress:
            level = result["levels"].setdefault(progress["level"], {"evaluators": set(), "seconds": 0.0})
            level["evaluators"].add(progress["evaluator"])
            level["seconds"] += float(progress["seconds"])
        summary = SUMMARY.search(line)
        if summary:
            result["passes"], result["largest"] = int(summary["passes"]), summary["largest"]
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "error" in line]
        result["error"] = lines[0] if lines else f"exit {done.returncode}"
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="zoo names (default: every zoo model)")
    parser.add_argument("--inputs", type=int, default=1, help="random inputs per check (default 1)")
    args = parser.parse_args()
    from strato import zoo

    models = args.models or zoo.zoo_names()
    ratios, cpu_ratios = [], []
    print(
        f"{'model':14s} {'pipeline':>9s} {'checked':>9s} {'ratio':>6s} {'cpu':>15s} {'ratio':>6s} "
        f"{'passes':>6s} {'largest':>9s}  evaluators (seconds)"
    )
    with tempfile.TemporaryDirectory(prefix="strato-equivalence-") as directory:
        for model in models:
            result = measure(model, Path(directory), args.inputs)
            if "pipeline" not in result:
                print(f"{model:14s} {result['error']}", flush=True)
                continue
            ratio = result["checked"] / result["pipeline"]
            ratios.append(ratio)
            levels = "; ".join(
                f"{level}: {', '.join(sorted(info['evaluators']))} ({info['seconds']:.1f} s)"
                for level, info in result["levels"].items()
            )
            cpu = f"{result['pipeline_cpu']:.1f}s/{result['checked_cpu']:.1f}s"
            cpu_ratio = result["checked_cpu"] / result["pipeline_cpu"]
            cpu_ratios.append(cpu_ratio)
            print(
                f"{model:14s} {result['pipeline']:8.1f}s {result['checked']:8.1f}s {ratio:5.1f}x "
                f"{cpu:>15s} {cpu_ratio:5.1f}x "
                f"{result.get('passes', '-'):>6} {result.get('largest', '-'):>9s}  {levels}",
                flush=True,
            )
            if "error" in result:
                print(f"{'':14s} {result['error']}", flush=True)
    if ratios:
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        cpu_mean = math.exp(sum(math.log(r) for r in cpu_ratios) / len(cpu_ratios))
        print(
            f"geometric mean checked / pipeline: {mean:.1f}x over {len(ratios)} model(s) "
            f"({cpu_mean:.1f}x in CPU time)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
