"""Autotuning: XGBoost-guided search against random search with equal trials.

    python benchmarks/tuning.py                       # GEMM 512^3 and ResNet-18 C6, 32 trials
    python benchmarks/tuning.py --trials 64 --seeds 3 --workloads GEMM C2 C6
    python benchmarks/tuning.py --seeds 3 --workloads GEMM1024 C6 C7 C8   # 3x3 s1, 3x3 s2, 1x1

For each workload (one ONNX node; its heaviest kernel is the task) and seed, the tuner runs
twice with the same trial budget, each into its own fresh log: guided by the cost model
(`xgb`) and by random search. Both measure the default knobs first, so "default" is the
template's untuned kernel measured in the same run. Printed per run: best GFLOP/s, the
default's, trials needed to reach 95% of the best found by either search, and wall time;
then the feature extractor's speed on scheduled kernels of the workload.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

from strato.autotuning.features import kernel_features
from strato.autotuning.space import SearchSpace
from strato.autotuning.task import extract_tasks
from strato.autotuning.testing import conv_model, gemm_model
from strato.autotuning.tuner import tune_model

CONV_LAYERS = {
    "C2": (56, 64, 64, 3, 1),
    "C6": (28, 128, 128, 3, 1),
    "C7": (28, 128, 256, 3, 2),
    "C8": (28, 128, 256, 1, 2),
    "C9": (14, 256, 256, 3, 1),
}


def workload(name: str):
    if name == "GEMM":
        return gemm_model(512)
    if name == "GEMM1024":
        return gemm_model(1024)
    return conv_model(*CONV_LAYERS[name])


def trials_to(history: list[float], target: float) -> int | None:
    for trial, best in enumerate(history, start=1):
        if best >= target:
            return trial
    return None


def confirm(task, runs, repeats: int) -> None:
    """Measure the default and each search's best config again, interleaved, in one worker:
    the tuning runs' own figures carry run-to-run noise."""
    from strato.autotuning.measure import WorkerPool, measure, task_reference

    space = SearchSpace(task)
    candidates = {"default": space.default()}
    for search, results in runs.items():
        best = max((r for r in results if r.best is not None), key=lambda r: r.best_gflops,
                   default=None)
        if best is not None:
            candidates[f"{search} best"] = best.best.config
    with WorkerPool(1, 120) as pool:
        reference = task_reference(pool, task)
        configs = list(candidates.values()) * 3
        measured = measure(pool, task, configs, reference, repeats=max(repeats, 10))
    seconds: dict[str, list[float]] = {}
    for name, result in zip(list(candidates) * 3, measured, strict=True):
        if result.ok:
            seconds.setdefault(name, []).append(result.seconds)
    base = statistics.median(seconds["default"]) if "default" in seconds else None
    figures = []
    for name, times in seconds.items():
        gf = task.flops / statistics.median(times) / 1e9
        ratio = f" (x{base / statistics.median(times):.2f})" if base else ""
        figures.append(f"{name} {gf:.2f} GFLOP/s{ratio}")
    print("  re-measured, interleaved x3: " + ", ".join(figures))


def feature_speed(model, count: int = 20) -> tuple[float, float]:
    """(kernels featurized per second, schedules applied per second) on random configs."""
    task = extract_tasks(model)[0]
    space = SearchSpace(task)
    rng = random.Random(0)
    start = time.perf_counter()
    kernels = [space.schedule(space.sample(rng))[1] for _ in range(count)]
    schedule_rate = count / (time.perf_counter() - start)
    start = time.perf_counter()
    for kernel in kernels:
        kernel_features(kernel)
    return count / (time.perf_counter() - start), schedule_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["GEMM", "C6"])
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--plot", metavar="OUT.png", help="best-so-far against trials (matplotlib)")
    args = parser.parse_args()
    curves: list[tuple[str, str, int, list[float]]] = []
    print(f"trials {args.trials}, seeds {args.seeds}, repeats {args.repeats}, cpus {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.workloads:
            model = workload(name)
            main_task = extract_tasks(model, name)[0]  # the heaviest kernel (conv, matmul)
            runs: dict[str, list] = {"xgb": [], "random": []}
            for seed in range(args.seeds):
                for search in runs:
                    log = os.path.join(scratch, f"{name}-{search}-{seed}.jsonl")
                    (result,) = tune_model(
                        model, args.trials, log, search=search, workers=args.workers,
                        repeats=args.repeats, seed=seed, name=name,
                        task_filter=lambda t, key=main_task.key: t.key == key,
                    )
                    runs[search].append(result)
            best = max(r.best_gflops for rs in runs.values() for r in rs)
            print(f"\n{name}: space of {SearchSpace(runs['xgb'][0].task).size} configs, "
                  f"best found {best:.2f} GFLOP/s")
            for search, results in runs.items():
                for seed, r in enumerate(results):
                    reach = trials_to(r.history, 0.95 * best)
                    default = r.default_gflops or 0.0
                    print(
                        f"  {search:6s} seed {seed}: best {r.best_gflops:7.2f} GFLOP/s "
                        f"(default knobs {default:7.2f}, x{r.best_gflops / default if default else 0:.2f}), "
                        f"95% of best at trial {reach if reach else '-'}, "
                        f"{r.failures} failed, {r.seconds:.0f} s"
                    )
            for search, results in runs.items():
                curves += [(name, search, seed, r.history) for seed, r in enumerate(results)]
                reached = [trials_to(r.history, 0.95 * best) or args.trials + 1 for r in results]
                print(f"  {search:6s} mean trials to 95%: {statistics.mean(reached):.1f} "
                      f"(a run that never reached it counts {args.trials + 1})")
            confirm(main_task, runs, args.repeats)
            features, schedules = feature_speed(model)
            print(f"  features: {features:.0f} kernels/s; applying a config: {schedules:.1f}/s")
    if args.plot:
        plot(curves, args.plot)


def plot(curves, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(c[0] for c in curves))
    figure, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for axis, name in zip(axes[0], names, strict=True):
        for _, search, seed, history in (c for c in curves if c[0] == name):
            axis.plot(range(1, len(history) + 1), history,
                      color="tab:blue" if search == "xgb" else "tab:orange",
                      label=f"{search} seed {seed}", alpha=0.8)
        axis.set_title(name)
        axis.set_xlabel("trials")
        axis.set_ylabel("best GFLOP/s so far")
        axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
