"""Every zoo model tuned, then default against tuned against onnxruntime at equal threads.

    python benchmarks/tuned_zoo.py --trials 32 --db zoo.jsonl
    python benchmarks/tuned_zoo.py resnet18 mobilenet_v2 --trials 64 --db zoo.jsonl --threads 1 2
    python benchmarks/tuned_zoo.py benchmarks/.torch_corpus/bert.dynamo.torch-2.13.0+cpu.onnx

A model is a zoo name or an ONNX file with static input shapes (such as the exports
`benchmarks/torch_corpus.py` caches in `benchmarks/.torch_corpus/`), named by its stem.

First each model is tuned (`tune_model`: its distinct kernels are the tasks, sharing the
`--trials` budget by their share of the model's work; candidates timed on
`--tune-threads` threads) into the JSON-lines log `--db`. Records already there count as
trials, so a second run resumes; tuning wall time accumulates in `<db>.seconds.json`.

Then, in the same process, at each thread count of `--threads`: the default schedules
(`strato.compile(model, threads=N)`), the tuned ones (`strato.compile(model, threads=N,
tuning=db)`) and onnxruntime (intra_op_num_threads=N, inter_op_num_threads=1, spinning
off, as benchmarks/zoo.py and `strato bench` run it) are timed interleaved, one call of
each in turn, for `--seconds` per side; the latency is that of the median call (on one
thread the calling thread's CPU time, on more wall time; `--statistic min`: the fastest
call, steadier at more than one thread on a loaded machine). Both strato sides' outputs are
checked against onnxruntime's (max relative error).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from tuned_layers import interleaved, load_seconds, ort_session, relative_error  # noqa: E402

import strato  # noqa: E402
from strato import zoo  # noqa: E402
from strato.autotuning.task import extract_tasks  # noqa: E402
from strato.autotuning.tuner import tune_model  # noqa: E402
from strato.schedule.database import Database  # noqa: E402


@dataclass
class Entry:
    name: str
    model: onnx.ModelProto
    tasks: int = 0
    trials: int = 0
    tune_seconds: float = 0.0
    ms: dict[int, dict[str, float]] = field(default_factory=dict)
    errors: dict[int, float] = field(default_factory=dict)


def seeded_inputs(compiled, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in compiled.inputs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind in "iub":
            arrays.append(rng.integers(0, 100, size=spec.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(spec.shape).astype(dtype))
    return arrays


def count_trials(entry: Entry, db: str) -> None:
    keys = {t.key for t in extract_tasks(entry.model, entry.name)}
    log = Database(db) if os.path.exists(db) else None
    entry.tasks = len(keys)
    entry.trials = sum(len(log.records(k)) for k in keys) if log is not None else 0


def tune(entry: Entry, args: argparse.Namespace, seconds: dict[str, float]) -> None:
    start = time.perf_counter()
    results = tune_model(
        entry.model, args.trials, args.db, name=entry.name, workers=args.workers,
        timeout=args.timeout, repeats=args.repeats, seed=args.seed, threads=args.tune_threads,
    )  # fmt: skip
    spent = time.perf_counter() - start
    seconds[entry.name] = seconds.get(entry.name, 0.0) + spent
    entry.tune_seconds = seconds[entry.name]
    count_trials(entry, args.db)
    improved = sum(
        1 for r in results
        if r.best is not None and r.default is not None and r.best.seconds < r.default.seconds
    )  # fmt: skip
    print(
        f"tuned {entry.name}: {entry.tasks} tasks, {entry.trials} trials in the log, "
        f"{improved} kernel(s) faster than their default in isolation; {spent:.1f} s this run, "
        f"{entry.tune_seconds:.1f} s in all",
        flush=True,
    )


def measure(entry: Entry, threads: int, args: argparse.Namespace) -> None:
    default = strato.compile(entry.model, threads=threads)
    tuned = strato.compile(entry.model, threads=threads, tuning=args.db)
    inputs = seeded_inputs(default, args.seed)
    session = ort_session(entry.model, threads)
    feed = dict(zip(default.input_names, inputs, strict=True))
    reference = session.run(None, feed)
    entry.errors[threads] = max(
        relative_error(ours, theirs)
        for compiled in (default, tuned)
        for ours, theirs in zip(compiled(*inputs), reference, strict=True)
    )
    seconds = interleaved(
        {
            "default": lambda: default(*inputs),
            "tuned": lambda: tuned(*inputs),
            "onnxruntime": lambda: session.run(None, feed),
        },
        args.seconds,
        threads,
        args.statistic,
    )
    entry.ms[threads] = {side: 1e3 * s for side, s in seconds.items()}


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def print_table(entries: list[Entry], threads: int, statistic: str) -> None:
    print(f"\n{threads} thread(s): {statistic} latency, ms (ratios > 1: the first is slower)")
    header = (
        f"{'model':13s} {'default':>9s} {'tuned':>9s} {'ortrt':>9s} {'def/tuned':>9s} "
        f"{'tuned/ort':>9s} {'def/ort':>8s} {'tasks':>5s} {'trials':>6s} {'tune s':>7s} "
        f"{'max rel err':>11s}"
    )
    print(header)
    print("-" * len(header))
    for e in entries:
        ms = e.ms[threads]
        flag = "" if e.errors[threads] <= 1e-3 else "  MISMATCH"
        print(
            f"{e.name:13s} {ms['default']:9.3f} {ms['tuned']:9.3f} {ms['onnxruntime']:9.3f} "
            f"{ms['default'] / ms['tuned']:8.2f}x {ms['tuned'] / ms['onnxruntime']:8.2f}x "
            f"{ms['default'] / ms['onnxruntime']:7.2f}x {e.tasks:5d} {e.trials:6d} "
            f"{e.tune_seconds:7.1f} {e.errors[threads]:11.1e}{flag}"
        )
    speedup = geomean([e.ms[threads]["default"] / e.ms[threads]["tuned"] for e in entries])
    vs_ort = geomean([e.ms[threads]["tuned"] / e.ms[threads]["onnxruntime"] for e in entries])
    faster = sum(e.ms[threads]["tuned"] < e.ms[threads]["onnxruntime"] for e in entries)
    print(
        f"geomean over {len(entries)} models: default/tuned {speedup:.2f}x, tuned/onnxruntime "
        f"{vs_ort:.2f}x; tuned faster than onnxruntime on {faster} of {len(entries)}"
    )
    print(f"tuning wall time in all: {sum(e.tune_seconds for e in entries):.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "models", nargs="*",
        help=f"zoo names or .onnx files (default: the zoo: {', '.join(zoo.zoo_names())})",
    )
    parser.add_argument("--trials", type=int, default=32, help="candidates per model, shared by its tasks")
    parser.add_argument("--db", default="tuned_zoo.jsonl", help="the tuning log (resumed)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts timed")
    parser.add_argument("--tune-threads", type=int, default=1, help="threads a candidate is timed on")
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per side and thread count")
    parser.add_argument(
        "--statistic", choices=("median", "min"), default="median",
        help="per side: the median call, or the fastest (steadier on a loaded machine at "
        "more than one thread, where a descheduled thread stalls a call)",
    )
    parser.add_argument("--workers", type=int, default=1, help="measurement processes")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per candidate")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per candidate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-tune", action="store_true", help="measure with the log as it is")
    args = parser.parse_args()
    names = args.models or list(zoo.zoo_names())
    entries = []
    for name in names:
        if name.endswith(".onnx"):
            if not os.path.isfile(name):
                parser.error(f"{name}: no such file")
            stem = os.path.basename(name)[: -len(".onnx")]
            entries.append(Entry(stem.split(".")[0], onnx.load(name)))
        elif name in zoo.zoo_names():
            entries.append(Entry(name, zoo.build_model(name, seed=args.seed)))
        else:
            parser.error(
                f"unknown model '{name}': not an .onnx file nor a zoo model "
                f"({', '.join(zoo.zoo_names())})"
            )
    seconds_path = args.db + ".seconds.json"
    seconds = load_seconds(seconds_path)
    print(f"{args.trials} trials a model, log {args.db}", flush=True)
    for entry in entries:
        if args.no_tune:
            entry.tune_seconds = seconds.get(entry.name, 0.0)
            count_trials(entry, args.db)
            continue
        tune(entry, args, seconds)
        with open(seconds_path, "w") as file:
            json.dump(seconds, file)
    if not os.path.exists(args.db):
        parser.error(f"{args.db}: no tuning log (run without --no-tune first)")
    for threads in args.threads:
        for entry in entries:
            measure(entry, threads, args)
            ms = entry.ms[threads]
            print(
                f"measured {entry.name} at {threads} thread(s): default {ms['default']:.3f}, "
                f"tuned {ms['tuned']:.3f}, onnxruntime {ms['onnxruntime']:.3f} ms",
                flush=True,
            )
    for threads in args.threads:
        print_table(entries, threads, "fastest call's" if args.statistic == "min" else "median")


if __name__ == "__main__":
    main()
