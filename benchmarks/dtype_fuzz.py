"""The full dtype sweep: every operator strato imports times the element types its ONNX
schema allows (strato/testing/dtype_fuzz.py), run outside CI because it takes many
minutes on two cores (about 3 minutes at the default 24 bindings per operator, about 15
for every binding with --per-op 0).

    python benchmarks/dtype_fuzz.py                          # the default sweep
    python benchmarks/dtype_fuzz.py --per-op 0 --json dtype_fuzz.json
    python benchmarks/dtype_fuzz.py -k '^(Cast|CastLike)\\[' --per-op 0

The options are those of `python -m strato.testing.dtype_fuzz`. Prints its table (per
operator: cases, skipped, refused, passed, bugs, then every bug with its reason) and, with
--json, writes every outcome. Exits with status 1 when a bug is found.
"""

from __future__ import annotations

import sys

from strato.testing.dtype_fuzz import main

if __name__ == "__main__":
    sys.exit(main())
