"""`strato fuzz-passes`: the pass fuzzer on the command line (see strato.testing.fuzz).

    strato fuzz-passes --minutes 20 --out fuzz-findings

It needs the test extra (hypothesis), imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from strato.diagnostics import StratoError


def add_fuzz_command(commands: Any, common: argparse.ArgumentParser) -> None:
    fuzz = commands.add_parser(
        "fuzz-passes",
        parents=[common],
        help="run random pass pipelines over generated programs, checking each pass",
        description="Draw random graph programs and random pipelines of strato's passes, "
        "interpret the IR before and after each pass on the same inputs, and write each "
        "finding (a pass changing a result, or crashing) reduced, as a .mlir lit test, "
        "into --out. Exit status 1 when there are findings.",
    )
    fuzz.add_argument("--minutes", type=float, default=1.0, help="how long to run (default 1)")
    fuzz.add_argument("--seconds", type=float, default=None, help="how long to run, in seconds (instead of --minutes)")
    fuzz.add_argument("--programs", type=int, default=None, help="stop after this many programs")
    fuzz.add_argument("--out", default="fuzz-findings", metavar="DIR", help="where findings go (default fuzz-findings)")
    fuzz.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fuzz.add_argument("--max-ops", type=int, default=6, help="ops per generated program (default 6)")
    fuzz.add_argument("--inputs", type=int, default=4, help="random inputs per program (default 4)")
    fuzz.add_argument(
        "--program-seconds",
        type=float,
        default=120.0,
        metavar="S",
        help="give up on a program whose passes, checks and reduction take longer (default 120)",
    )
    fuzz.set_defaults(handler=fuzz_command)


def fuzz_command(args: argparse.Namespace) -> int:
    if args.minutes < 0 or (args.seconds is not None and args.seconds < 0):
        raise StratoError("fuzz-passes: the duration must be >= 0")
    try:
        from strato.testing.fuzz import fuzz_passes
    except ImportError as err:
        raise StratoError(f"fuzz-passes: {err}") from None
    seconds = args.seconds if args.seconds is not None else 60 * args.minutes

    def log(line: str) -> None:
        print(line, flush=True)

    stats = fuzz_passes(
        seconds,
        args.out,
        seed=args.seed,
        max_ops=args.max_ops,
        n_inputs=args.inputs,
        max_programs=args.programs,
        log=log,
        program_seconds=args.program_seconds if args.program_seconds > 0 else None,
    )
    print(
        f"fuzz-passes: {stats.programs} programs, {stats.passes_run} passes checked, "
        f"{stats.rejected} pipelines rejected with a diagnostic, "
        f"{stats.unsupported} stopped at IR without an interpreter, "
        f"{stats.timeouts} abandoned as too slow, "
        f"{len(stats.findings)} findings" + (f" in {args.out}" if stats.findings else ""),
        file=sys.stderr,
    )
    return 1 if stats.findings else 0
