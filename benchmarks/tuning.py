"""Autotuning: XGBoost-guided search against random search with equal trials.

    python benchmarks/tuning.py                       # GEMM 512^3 and ResNet-18 C6, 32 trials
    python benchmarks/tuning.py --trials 64 --seeds 3 --workloads GEMM C2 C6
    python benchmarks/tuning.py --seeds 3 --workloads GEMM1024 C6 C7 C8   # 3x3 s1, 3x3 s2, 1x1

For each workload (one ONNX node; its heaviest kernel is the task) and seed, the tuner runs
twice with the same trial budget, each into its own fresh log: guided by the cost model
(`xgb`) and by random search. Both start from scratch, as the searches of the TVM paper's
Figure 12 do (`--default-first`: both measure the template's default knobs first, as
`strato tune` does; when the default is within 5% of the best, both then reach 95% at
trial 1 and the comparison says nothing of the searches).

A run's own measurements carry the drift of a machine over the minutes between runs, so
the figures are computed from a second measurement: every distinct config any run of the
workload measured (and the default) is measured again in one worker, all of them in turn,
`--rounds` times, and each config's time is the median of its rounds. Each run's best-so-far
curve is rebuilt from those times in the order the run measured its configs; "trials to
95%" is the first trial at which a curve reaches 95% of the best config any run found.
Printed per run: best GFLOP/s, the default's, trials to 95%, wall time; the mean over
seeds per search and their ratio; then the feature extractor's speed. `--plot` draws the
curves.

`--simulate SEEDS` adds, for spaces of at most `--grid-limit` configs, a second
comparison with many seeds: every config of the space is measured (`--rounds` times, the
median) and featurized once, then each search runs SEEDS times choosing among those
measurements instead of measuring, for up to `--simulate-trials` trials (a run that
never reaches 95% counts that many plus one). Uniform random search then needs
(N + 1) / (K + 1) trials on average, N configs of which K are within 5% of the best.
"""

from __future__ import annotations

import argparse
import json
import math
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


def config_key(config) -> str:
    return json.dumps(config, sort_keys=True)


def remeasure(task, configs: list, rounds: int, repeats: int) -> dict[str, float]:
    """GFLOP/s of each config by the median of `rounds` measurements, every config in
    turn in each round, in a random order each round (0 for a config that fails)."""
    from strato.autotuning.measure import MeasurePool, measure, task_reference

    times: dict[str, list[float]] = {config_key(c): [] for c in configs}
    with MeasurePool(1, 120) as pool:
        reference = task_reference(pool, task)
        for round_ in range(rounds):
            order = list(configs)
            random.Random(round_).shuffle(order)
            for result in measure(pool, task, order, reference, repeats=repeats):
                if result.ok:
                    times[config_key(result.config)].append(result.seconds)
    return {k: task.flops / statistics.median(t) / 1e9 if t else 0.0 for k, t in times.items()}


def run_configs(log: str, task) -> list:
    """The configs a run measured, in its order."""
    from strato.schedule.database import Database

    return [record.config for record in Database(log).records(task.key)]


def curve(configs: list, gflops: dict[str, float]) -> list[float]:
    best, history = 0.0, []
    for config in configs:
        best = max(best, gflops[config_key(config)])
        history.append(best)
    return history


def simulate(task, searches: list[str], seeds: int, trials: int, rounds: int, repeats: int,
             limit: int) -> None:
    """Measure every config of the task's space (`rounds` times, the median), then run
    each search `seeds` times against those times instead of measuring: many seeds of
    both searches on the same, noiseless-between-runs landscape."""
    from strato.autotuning.features import kernel_features
    from strato.autotuning.search import ModelSearch, RandomSearch
    from strato.autotuning.space import InvalidConfig

    space = SearchSpace(task)
    if space.size > limit:
        print(f"  simulation skipped: {space.size} configs (more than --grid-limit {limit})")
        return
    points = list(space.grid())
    start = time.perf_counter()
    gflops = remeasure(task, [space.config(p) for p in points], rounds, repeats)
    truth = {p: gflops[config_key(space.config(p))] for p in points}
    features = {}
    for point in points:
        try:
            features[point] = kernel_features(space.schedule(space.config(point))[1])
        except InvalidConfig:
            features[point] = None
    best = max(truth.values())
    near = sum(g >= 0.95 * best for g in truth.values())
    print(f"  simulated: all {len(points)} configs measured x{rounds} and featurized in "
          f"{time.perf_counter() - start:.0f} s; best {best:.2f} GFLOP/s; {near} within 5% "
          f"(random search needs {(len(points) + 1) / (near + 1):.1f} trials on average); "
          f"up to {trials} trials a run")
    for search in searches:
        reached = []
        for seed in range(seeds):
            strategy = (RandomSearch(space, seed) if search == "random"
                        else ModelSearch(space, features.get, seed=seed, score_seconds=None))
            history: list[float] = []
            while len(history) < trials and not strategy.exhausted:
                batch = strategy.propose(min(8, trials - len(history)))
                for point in batch:
                    history.append(max(history[-1] if history else 0.0, truth[point]))
                strategy.update(batch, [1 / truth[p] if truth[p] > 0 else None for p in batch])
            reached.append(trials_to(history, 0.95 * best) or trials + 1)
        print(f"  simulated {search:6s} x{seeds} seeds: mean trials to 95% "
              f"{statistics.mean(reached):.1f}, median {statistics.median(reached):.1f}, "
              f"reached in {sum(r <= trials for r in reached)} of {seeds}")


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
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each config afterwards")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--default-first", action="store_true",
                        help="both searches measure the default knobs first")
    parser.add_argument("--plot", metavar="OUT.png", help="best-so-far against trials (matplotlib)")
    parser.add_argument("--simulate", type=int, default=0, metavar="SEEDS",
                        help="also measure the whole space and run each search SEEDS times on it")
    parser.add_argument("--grid-limit", type=int, default=1200,
                        help="largest space --simulate measures whole (default 1200)")
    parser.add_argument("--simulate-trials", type=int, default=200,
                        help="trials of a simulated run (default 200: a search that needs more "
                        "than --trials is counted, not cut off)")
    args = parser.parse_args()
    curves: list[tuple[str, str, int, list[float]]] = []
    summary = []
    print(f"trials {args.trials}, seeds {args.seeds}, repeats {args.repeats}, rounds {args.rounds}, "
          f"{'default first' if args.default_first else 'from scratch'}, cpus {os.cpu_count()}",
          flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.workloads:
            model = workload(name)
            main_task = extract_tasks(model, name)[0]  # the heaviest kernel (conv, matmul)
            space = SearchSpace(main_task)
            runs: dict[str, list] = {"xgb": [], "random": []}
            logs: dict[str, list[str]] = {"xgb": [], "random": []}
            for seed in range(args.seeds):
                for search in runs:
                    log = os.path.join(scratch, f"{name}-{search}-{seed}.jsonl")
                    (result,) = tune_model(
                        model, args.trials, log, search=search, workers=args.workers,
                        repeats=args.repeats, seed=seed, name=name,
                        task_filter=lambda t, key=main_task.key: t.key == key,
                        default_first=args.default_first,
                    )
                    runs[search].append(result)
                    logs[search].append(log)
                    print(f"  {name} {search} seed {seed}: {result.trials} trials, "
                          f"{result.seconds:.0f} s", flush=True)
            measured = {s: [run_configs(log, main_task) for log in ls] for s, ls in logs.items()}
            distinct = {config_key(space.default()): space.default()}
            for configs in (c for cs in measured.values() for c in cs):
                distinct.update((config_key(c), c) for c in configs)
            start = time.perf_counter()
            gflops = remeasure(main_task, list(distinct.values()), args.rounds, args.repeats)
            best = max(gflops.values())
            default = gflops[config_key(space.default())]
            near = sum(g >= 0.95 * best for g in gflops.values())
            print(f"\n{name}: space of {space.size} configs; {len(distinct)} distinct configs "
                  f"measured again x{args.rounds} in {time.perf_counter() - start:.0f} s; best "
                  f"{best:.2f} GFLOP/s, default knobs {default:.2f} (best/default "
                  f"x{best / default if default else 0:.2f}); {near} of them within 5% of the best")
            means = {}
            for search, results in runs.items():
                reached = []
                for seed, (r, configs) in enumerate(zip(results, measured[search], strict=True)):
                    history = curve(configs, gflops)
                    curves.append((name, search, seed, history))
                    reach = trials_to(history, 0.95 * best)
                    reached.append(reach or args.trials + 1)
                    print(
                        f"  {search:6s} seed {seed}: best {history[-1]:7.2f} GFLOP/s "
                        f"(x{history[-1] / default if default else 0:.2f} the default), "
                        f"95% of best at trial {reach if reach else '-'}, {r.failures} failed, "
                        f"{r.seconds:.0f} s (in the run: best {r.best_gflops:.2f})"
                    )
                means[search] = statistics.mean(reached)
                print(f"  {search:6s} mean trials to 95%: {means[search]:.1f} "
                      f"(a run that never reached it counts {args.trials + 1})")
            ratio = means["xgb"] / means["random"]
            print(f"  xgb / random trials to 95%: {ratio:.2f} (goal <= 0.5)", flush=True)
            summary.append((name, means["xgb"], means["random"], ratio, best / default if default else 0))
            if args.simulate:
                simulate(main_task, list(runs), args.simulate, args.simulate_trials,
                         args.rounds, args.repeats, args.grid_limit)
            features, schedules = feature_speed(model)
            print(f"  features: {features:.0f} kernels/s; applying a config: {schedules:.1f}/s", flush=True)
    print("\nworkload   xgb trials to 95%   random   xgb/random   best/default")
    for name, xgb, rnd, ratio, gain in summary:
        print(f"{name:10s} {xgb:17.1f} {rnd:8.1f} {ratio:12.2f} {gain:14.2f}")
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
