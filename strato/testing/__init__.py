"""Shared test support: the equivalence oracle, the test-case reducer, and hypothesis
strategies that generate programs.

The oracle (`equivalence`), the reducer (`reduce`) and random inputs (`arrays`) need
nothing beyond the compiler's own dependencies, so `strato-opt --check-equivalence` and
`--reduce` work on a plain install; the program generators (`graph_programs`,
`te_programs`, `lowered_programs`, `schedules`, `fuzz`, ...) need hypothesis, which
comes with the test extra (`pip install 'strato[test]'`).
"""


HYPOTHESIS_MISSING = (
    "strato's program generators need hypothesis, which comes with the test extra: "
    "pip install 'strato[test]'"
)
