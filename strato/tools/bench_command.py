"""`strato bench`: strato against onnxruntime, TVM Relax and numpy, in one run.

    strato bench                                   # everything, at 1 and all cores
    strato bench --quick                           # a subset in about a minute
    strato bench --workloads gemm,conv --threads 1,2 --json bench.json
    strato bench --workloads mlp,resnet18 --peers onnxruntime --repeat 20
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

from strato.diagnostics import StratoError

QUICK_SECONDS = 0.3
QUICK_REPEAT = 10


def thread_counts(text: str) -> list[int]:
    """`1,2` -> [1, 2] (order kept, repeats dropped)."""
    counts: list[int] = []
    for word in text.split(","):
        word = word.strip()
        try:
            count = int(word, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{word}' is not a thread count") from None
        if count < 1:
            raise argparse.ArgumentTypeError(f"thread counts must be at least 1, got {count}")
        if count not in counts:
            counts.append(count)
    return counts


def peer_names(text: str) -> list[str]:
    from strato.bench.peers import PEERS

    names = [word.strip().lower() for word in text.split(",") if word.strip()]
    for name in names:
        if name not in PEERS:
            raise argparse.ArgumentTypeError(f"unknown peer '{name}' (known: {', '.join(PEERS)})")
    return names


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def add_bench_command(commands, common) -> None:
    from strato.bench.machine import usable_cores
    from strato.bench.peers import PEERS
    from strato.tools.strato_cli import non_negative_int, positive_int

    cores = usable_cores()
    default_threads = "1" if cores == 1 else f"1,{cores}"
    bench = commands.add_parser(
        "bench", parents=[common],
        help="measure strato against onnxruntime, TVM Relax and numpy (GEMM, conv layers, zoo)",
        description="Compile GEMM 1024^3, ResNet-18's conv layers C1-C12 and every zoo model "
        "with strato and with each peer, check strato's outputs against the peer's, and time "
        "all sides in one run at each thread count. Prints the latency and compile-time "
        "tables; exit status 1 when strato disagrees with a peer or fails.",
    )  # fmt: skip
    bench.add_argument(
        "--workloads", metavar="LIST", default=None,
        help="comma-separated: gemm, C1..C12, conv, a zoo name, zoo, all (default all; "
        "with --quick a small set)",
    )  # fmt: skip
    bench.add_argument("--quick", action="store_true", help="a small set and short timings, about a minute")
    bench.add_argument(
        "--threads", type=thread_counts, default=thread_counts(default_threads), metavar="N,M",
        help=f"thread counts, every side the same (default {default_threads}: one and all cores)",
    )  # fmt: skip
    bench.add_argument(
        "--peers", type=peer_names, default=list(PEERS), metavar="LIST",
        help=f"peers to compare with (default {','.join(PEERS)}; those not installed are skipped)",
    )  # fmt: skip
    bench.add_argument("--repeat", type=positive_int, default=None, help="most timed calls per side (default 30, --quick 10)")
    bench.add_argument(
        "--seconds", type=positive_seconds, default=None,
        help="time budget per side and thread count (default 1.5, --quick 0.3)",
    )  # fmt: skip
    bench.add_argument("--rtol", type=positive_seconds, default=1e-3, help="relative tolerance of the output check (default 1e-3)")
    bench.add_argument("--seed", type=non_negative_int, default=0, help="seed of weights and inputs (default 0)")
    bench.add_argument("--json", metavar="OUT.json", default=None, help="also write the results as JSON")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    bench.add_argument(
        "--tuning", metavar="DB.jsonl", default=None,
        help="compile strato's side with the best record of each kernel's task in this "
        "tuning log (strato tune --db)",
    )
    bench.set_defaults(handler=bench_command)


def bench_command(args: argparse.Namespace) -> int:
    import os

    from strato.bench.machine import describe_machine
    from strato.bench.peers import PEERS, Side, Strato, TvmRelax
    from strato.bench.progress import make_progress
    from strato.bench.report import dumps, json_report, problems, text_report
    from strato.bench.runner import BenchOptions, WorkloadResult, run_bench, steps
    from strato.bench.workloads import select_workloads
    from strato.runtime.atomic_write import write_atomically

    options = BenchOptions(
        threads=args.threads,
        repeat=args.repeat or (QUICK_REPEAT if args.quick else BenchOptions.repeat),
        seconds=args.seconds or (QUICK_SECONDS if args.quick else BenchOptions.seconds),
        rtol=args.rtol,
        seed=args.seed,
    )
    if args.json is not None:
        directory = os.path.dirname(args.json) or "."
        if not os.path.isdir(directory):
            raise StratoError(f"--json: no directory {directory}", location=args.json)
    workloads = select_workloads(args.workloads, quick=args.quick, seed=args.seed)

    machine = describe_machine()  # before a peer sets its environment variables
    if args.tuning is not None and not os.path.isfile(args.tuning):
        raise StratoError("the tuning log does not exist or is not a file", location=args.tuning)
    strato = Strato(tuning=args.tuning)
    sides: list[Side] = []
    unavailable: dict[str, str] = {}
    for name in args.peers:
        side = TvmRelax(max(options.threads)) if name == TvmRelax.name else PEERS[name]()
        reason = side.unavailable()
        if reason is None:
            sides.append(side)
        else:
            unavailable[name] = reason
    versions: dict[str, str] = {}
    for side in [strato, *sides]:
        versions.update({name: str(version) for name, version in side.versions().items()})
    context: dict[str, object] = {
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["strato", *sys.argv[1:]]) if sys.argv else "strato bench",
        "machine": machine,
        "versions": versions,
        "threads": {side.name: side.threads_note() for side in [strato, *sides]},
        "unavailable": unavailable,
        "tuning": args.tuning,
    }
    peers = [side.name for side in sides]

    finished: list[WorkloadResult] = []

    def save(result: WorkloadResult | None = None) -> None:
        if result is not None:
            finished.append(result)
        if args.json is not None:
            write_atomically(args.json, dumps(json_report(finished, context, options)), what="the JSON results")

    progress = make_progress(steps(workloads, options), enabled=not args.no_progress)
    started = time.perf_counter()
    try:
        results = run_bench(workloads, sides, options, strato=strato, progress=progress.step, on_result=save)
    finally:
        progress.close()
    context["seconds"] = round(time.perf_counter() - started, 1)
    save()
    print(text_report(results, context, options, peers))
    print(f"\nbench took {context['seconds']:.0f} s", end="")
    print(f"; results written to {args.json}" if args.json else "")
    strato_failed = {result.name for result in results if strato.name in result.failures}
    found = [
        line for line in problems(results, options.rtol)
        if line.startswith("MISMATCH") or any(line.startswith(f"FAILED {name}: strato:") for name in strato_failed)
    ]  # fmt: skip
    if found:
        print(f"strato bench: {len(found)} problem(s) with strato's results:", file=sys.stderr)
        for line in found:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0
