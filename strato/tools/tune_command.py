"""`strato tune MODEL --trials N --log tuning.jsonl`: the command line of the tuner."""

from __future__ import annotations

import argparse
import sys


def add_tune_command(commands, common, add_model_arguments) -> None:
    from strato.autotuning.tuner import SEARCHES

    tune = commands.add_parser(
        "tune", parents=[common],
        help="autotune the schedules of MODEL's kernels into a tuning log",
        description="Measure schedule candidates of every distinct kernel of MODEL in worker "
        "processes, guided by an XGBoost cost model (or random/grid search), appending each "
        "measurement to the tuning log; a run resumes from the records already there.",
    )
    add_model_arguments(tune)
    tune.add_argument(
        "--target", default="llvm", metavar="TARGET",
        help="the target string the kernels are tuned for (default llvm: this host), e.g. "
        "'llvm -mcpu=skylake-avx512' or, measured on a device through --dask or --emulate, "
        "'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72'",
    )
    tune.add_argument("--trials", type=int, default=64, help="candidates measured in all (default 64)")
    tune.add_argument("--db", "--log", dest="log", default="tuning.jsonl", help="the tuning log (JSON lines, appended)")
    tune.add_argument("--search", choices=SEARCHES, default="xgb", help="search strategy (default xgb)")
    tune.add_argument("--workers", type=int, default=1,
                      help="processes building candidates (default 1); one more times them")
    tune.add_argument("--overlap", action="store_true",
                      help="build the next candidates while one is timed (faster tuning; "
                      "noisier timings unless the builders have cores of their own)")
    tune.add_argument("--timeout", type=float, default=60.0, help="seconds per candidate (default 60)")
    tune.add_argument("--repeats", type=int, default=5, help="timed runs per candidate (median)")
    tune.add_argument(
        "--threads", type=int, default=1, metavar="N",
        help="threads each candidate runs on while measured (default 1: CPU time of one "
        "thread, steady on a shared machine; more: wall time)",
    )
    tune.add_argument("--tasks", default=None, help="comma-separated substrings of task names to tune")
    tune.add_argument("--dask", metavar="ADDRESS", default=None,
                      help="measure on the Dask cluster whose scheduler is at ADDRESS; for "
                      "a --target of another system, candidates are built here and timed "
                      "by the workers on that device (`strato worker ADDRESS` there)")
    tune.add_argument("--emulate", action="store_true",
                      help="for a --target of another system without --dask: time the "
                      "candidates here under qemu-user (needs the system's cross gcc; the "
                      "times are the emulator's, not the device's)")
    tune.add_argument(
        "--plot", metavar="OUT.png", default=None,
        help="also tune with the other of xgb and random search, with the same budgets, into "
        "a log beside --db (tuning.random.jsonl), and draw the best GFLOP/s against trials "
        "of both searches, a panel per task (the heaviest six)",
    )
    tune.set_defaults(handler=tune_command)

    worker = commands.add_parser(
        "worker", parents=[common],
        help="serve a Dask scheduler as a worker that measures tuning candidates",
        description="Start a Dask worker (one thread: candidates are timed one at a time) "
        "connected to the scheduler at ADDRESS, for `strato tune --dask ADDRESS`. On a "
        "device, it times candidates built for that device elsewhere: it loads their "
        "objects through LLVM and needs no compiler. --emulate makes a worker on another "
        "system stand in for the device by running them under qemu-user (the times are "
        "the emulator's). Stop it with Ctrl-C.",
    )
    worker.add_argument("address", metavar="ADDRESS", help="the scheduler, e.g. tcp://10.0.0.2:8786")
    worker.add_argument("--name", default=None, help="the worker's name in the cluster")
    worker.add_argument("--connect-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="give up when the scheduler cannot be reached for this long (default 60)")
    worker.add_argument("--emulate", action="store_true",
                        help="time code for other systems under qemu-user "
                        "(with their cross gcc: apt-get install gcc-aarch64-linux-gnu qemu-user)")
    worker.set_defaults(handler=worker_command)


def baseline_log(log: str, search: str) -> str:
    """The log of --plot's comparison search beside `log`: tuning.jsonl -> tuning.random.jsonl."""
    stem, dot, suffix = log.rpartition(".")
    return f"{stem}.{search}.{suffix}" if dot and "/" not in suffix else f"{log}.{search}"


def tune_command(args: argparse.Namespace) -> int:
    from strato.autotuning.cost_model import MissingDependency
    from strato.autotuning.measure import ForeignCode
    from strato.autotuning.tuner import tune_model
    from strato.diagnostics import StratoError
    from strato.runtime.threads import check_threads
    from strato.tools.strato_cli import resolve_model

    try:
        check_threads(args.threads, "the thread count")
    except StratoError as error:
        error.location = "--threads"
        raise

    if args.trials < 1:
        raise StratoError(f"--trials must be positive, got {args.trials}")
    resolved = resolve_model(args.model, args.batch, args.seed)
    wanted = [w for w in (args.tasks or "").split(",") if w]

    def progress(p) -> None:
        print(
            f"\r{p.task.name}: {p.trials}/{p.budget} trials, best {p.best_gflops:.2f} GFLOP/s, "
            f"{p.rate:.2f} meas/s, ~{p.remaining:.0f} s left",
            end="", file=sys.stderr, flush=True,
        )

    if args.plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise StratoError("--plot needs matplotlib: pip install 'strato[tune]'")

    def tune(search: str, log: str):
        try:
            return tune_model(
                resolved.proto, args.trials, log, search=search, workers=args.workers,
                timeout=args.timeout, repeats=args.repeats, seed=args.seed, threads=args.threads,
                task_filter=(lambda t: any(w in t.name for w in wanted)) if wanted else None,
                progress=progress, dask=args.dask, overlap=args.overlap,
                name=args.model.rsplit("/", 1)[-1].removesuffix(".onnx"),
                target=args.target, emulate=args.emulate,
            )
        except MissingDependency as error:
            raise StratoError(str(error)) from None
        except ForeignCode as error:
            raise StratoError(str(error), location="--target") from None
        except (OSError, TimeoutError) as error:  # an unwritable log, an unreachable scheduler
            where = args.dask if args.dask and not isinstance(error, PermissionError) else log
            raise StratoError(" ".join(str(error).split()) or type(error).__name__, location=where) from None

    results = tune(args.search, args.log)
    print(file=sys.stderr)
    if not results:
        raise StratoError("no tunable kernel matched", location=args.model)
    for r in results:
        if r.trials == 0:
            print(f"{r.task.name} [{r.task.key}]: not tuned (fewer trials than tasks), default schedule")
            continue
        default = r.default_gflops
        base = f"{default:.2f}" if default else "n/a"
        print(
            f"{r.task.name} [{r.task.key}]: {r.trials} trials ({r.failures} failed), "
            f"best {r.best_gflops:.2f} GFLOP/s, default {base} GFLOP/s, {r.seconds:.1f} s"
        )
    print(f"log: {args.log}")
    if args.plot:
        from strato.autotuning.plot import draw_curves

        other = "random" if args.search == "xgb" else "xgb"
        other_log = baseline_log(args.log, other)
        print(f"--plot: the same budgets with {other} search, into {other_log}", file=sys.stderr)
        baseline = tune(other, other_log)
        print(file=sys.stderr)
        panels = draw_curves({args.search: results, other: baseline}, args.plot)
        for mine, theirs in zip(results, baseline, strict=True):
            if mine.trials:
                print(f"{mine.task.name}: {args.search} best {mine.best_gflops:.2f}, "
                      f"{other} best {theirs.best_gflops:.2f} GFLOP/s")
        print(f"plot: {args.plot} ({panels} tasks; {other} search's log: {other_log})")
    return 0


def worker_command(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from strato.diagnostics import StratoError

    try:
        from distributed import Worker
    except ImportError:
        raise StratoError("a worker needs dask.distributed: pip install 'strato[tune]'") from None
    if args.emulate:
        # the jobs run in child processes of the worker, which read it from the environment
        os.environ["DASK_STRATO__EMULATE"] = "1"

    async def serve() -> None:
        async with Worker(
            args.address, nthreads=1, name=args.name, dashboard=False,
            death_timeout=args.connect_timeout,
        ) as worker:
            print(f"strato worker {worker.address} serving {args.address}"
                  f"{' (emulating other systems under qemu-user)' if args.emulate else ''}",
                  file=sys.stderr, flush=True)
            await worker.finished()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 0
    except (OSError, TimeoutError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise StratoError(f"cannot serve the scheduler: {reason}", location=args.address) from None
    return 0
