"""The full dtype sweep: every operator strato imports times the element types its ONNX
schema allows (strato/testing/dtype_fuzz.py), run outside CI because it takes many
minutes on two cores (about 3 minutes at the default 24 bindings per operator, about 15
for every binding with --per-op 0).

    python benchmarks/dtype_fuzz.py                          # the default sweep
    python benchmarks/dtype_fuzz.py --per-op 0 --json dtype_fuzz.json
    python benchmarks/dtype_fuzz.py -k '^(Cast|CastLike)\\[' --per-op 0

Prints the table of `strato.testing.dtype_fuzz` (per operator: cases, skipped, refused,
passed, bugs, then every bug with its reason) and, with --json, writes every outcome.
Exits with status 1 when a bug is found.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict

from strato.testing.dtype_fuzz import DEFAULT_PER_OP, DEFAULT_TIMEOUT, fuzz, report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", help="regex on case names, 'Op[T=type,...]'")
    parser.add_argument("--per-op", type=int, default=DEFAULT_PER_OP)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--refusals", action="store_true", help="list the refusals too")
    parser.add_argument("--json", help="write every outcome to this file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    outcomes = fuzz(
        pattern=args.pattern,
        per_op=args.per_op,
        seed=args.seed,
        limit=args.limit,
        workers=args.workers,
        timeout=args.timeout,
    )
    seconds = time.perf_counter() - start
    print(report(outcomes, refusals=args.refusals))
    print(f"in {seconds:.0f} s")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"seconds": seconds, "outcomes": [asdict(o) for o in outcomes]}, file)
    return 1 if any(o.bug for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
