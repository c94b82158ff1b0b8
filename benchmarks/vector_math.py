"""strato's inline exp, log, erf and tanh of f32 (strato.targets.llvm.vector_math): accuracy
and speed, or the fit of their coefficients.

    python benchmarks/vector_math.py            # max ulp error over sampled f32, ns per element
    python benchmarks/vector_math.py --fit      # re-derive the coefficients (scipy, mpmath)

The accuracy run lowers a loop-level kernel per function (a loop vectorized by 16 lanes
applying `math.exp`/`math.log`/`math.erf`/`math.tanh`, through convert-loops-to-llvm, so what is
measured is vector_math whatever the compile pipeline does before it) and compares it
with the float64 function on random f32 bit patterns and on dense samples of [-12, 12];
the speed is the median of a 128 x 1024 element call on one thread, next to numpy's
float32 function in the same process (where numpy has it).

The fit is a minimax (linear program on 3000 Chebyshev points; for the rational of erfc,
iterated with the previous denominator as weight) of the relative error of each form
that vector_math evaluates, printed rounded to f32 as the module writes them.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

LANES = 16


def _kernel(function: str, size: int):
    """`y = function(x)` over `size` elements (a multiple of LANES), vectorized, compiled."""
    from xdsl.parser import Parser

    from strato.context import make_context
    from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
    from strato.targets.llvm.jit import JitModule

    text = f"""
    func.func @k(%a: memref<{size}xf32>, %o: memref<{size}xf32> {{loop.output}}) attributes {{loop.kernel}} {{
      loop.for %b = 0 to {size // LANES} axis "b" {{
        loop.for %l = 0 to {LANES} vectorized axis "l" {{
          %c = arith.constant {LANES} : index
          %s = arith.muli %b, %c : index
          %i = arith.addi %s, %l : index
          %x = memref.load %a[%i] : memref<{size}xf32>
          %y = math.{function} %x : f32
          memref.store %y, %o[%i] : memref<{size}xf32>
        }}
      }}
      func.return
    }}"""
    module = Parser(make_context(), text).parse_module()
    convert_loops_to_llvm(module, threads=1)
    jit = JitModule(module)
    kernel = jit.function("k")

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        kernel(x, out)
        return out

    run.jit = jit  # keeps the engine alive with the function
    return run


REFERENCES = {
    "Exp": np.exp,
    "Erf": np.vectorize(math.erf, otypes=[np.float64]),
    "Tanh": np.tanh,
    "Log": np.log,
}
NUMPY = {"Exp": np.exp, "Tanh": np.tanh, "Log": np.log}


def accuracy_and_speed(samples: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, samples, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate(
        [bits[np.isfinite(bits)], rng.uniform(-12, 12, samples).astype(np.float32)]
    )
    x = x[: x.size - x.size % LANES]
    timed = (rng.standard_normal(128 * 1024) * 2).astype(np.float32)
    for op_type, reference in REFERENCES.items():
        compiled = _kernel(op_type.lower(), x.size)
        with np.errstate(all="ignore"):
            actual = compiled(x)
            exact = reference(x.astype(np.float64))
            rounded = exact.astype(np.float32)
            ulp = np.spacing(np.abs(rounded)).astype(np.float64)
            error = np.abs(actual.astype(np.float64) - exact) / np.where(np.isinf(ulp), 1, ulp)
        error = np.where((actual == rounded) | (np.isnan(actual) & np.isnan(rounded)), 0.0, error)
        worst = int(np.argmax(error))
        fast = _kernel(op_type.lower(), timed.size)
        inputs = np.abs(timed) if op_type == "Log" else timed  # in its domain
        ours = _median_ns(lambda run=fast, data=inputs: run(data), timed.size)
        line = (
            f"{op_type:5s} max error {error[worst]:.2f} ulp (at {x[worst]!r}), "
            f"mean {error.mean():.3f} ulp | strato {ours:.2f} ns/element"
        )
        if op_type in NUMPY:
            theirs = _median_ns(lambda op=NUMPY[op_type], data=inputs: op(data), timed.size)
            line += f", numpy {theirs:.2f} ns/element"
        print(line, flush=True)


def _median_ns(run, elements: int) -> float:
    run()
    times = []
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline or len(times) < 10:
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) / elements * 1e9


# -- the fit ------------------------------------------------------------------------------


def _chebyshev_points(low: float, high: float, count: int) -> np.ndarray:
    k = np.arange(count)
    return np.sort((low + high) / 2 + (high - low) / 2 * np.cos(np.pi * (k + 0.5) / count))


def minimax_polynomial(target, powers, fixed, low, high, count=3000):
    """Coefficients c of fixed(x) + sum c_k x^powers[k] minimizing the largest relative
    error against target on [low, high]."""
    from scipy.optimize import linprog

    x = _chebyshev_points(low, high, count)
    want = np.array([target(float(v)) for v in x])
    basis = np.vstack([x**p for p in powers]).T
    scale = np.abs(want)
    rows = np.vstack([np.hstack([basis, -scale[:, None]]), np.hstack([-basis, -scale[:, None]])])
    bound = np.concatenate([want - fixed(x), fixed(x) - want])
    cost = np.zeros(len(powers) + 1)
    cost[-1] = 1
    # scaled rows: the solver's absolute tolerances are far above the errors sought
    result = linprog(
        cost, A_ub=rows * 1e8, b_ub=bound * 1e8,
        bounds=[(None, None)] * len(powers) + [(0, None)], method="highs",
    )  # fmt: skip
    return result.x[:-1]


def minimax_rational(target, p_degree, q_degree, low, high, count=2000, rounds=20):
    """P, Q (Q(0) = 1) with P/Q of the largest relative error against target on [low,
    high] found by rounds of the linearized problem weighted by the last Q."""
    from scipy.optimize import linprog

    x = _chebyshev_points(low, high, count)
    want = np.array([target(float(v)) for v in x])
    span = float(np.max(np.abs(x)))
    u = x / span
    weight = np.ones_like(u)
    best = None
    for _ in range(rounds):
        p_basis = np.vstack([u**j for j in range(p_degree + 1)]).T
        q_basis = np.vstack([u**j for j in range(1, q_degree + 1)]).T
        scale = np.abs(want) * weight
        rows = np.vstack([
            np.hstack([p_basis, -want[:, None] * q_basis, -scale[:, None]]),
            np.hstack([-p_basis, want[:, None] * q_basis, -scale[:, None]]),
        ])  # fmt: skip
        cost = np.zeros(rows.shape[1])
        cost[-1] = 1
        result = linprog(
            cost, A_ub=rows, b_ub=np.concatenate([want, -want]),
            bounds=[(None, None)] * (rows.shape[1] - 1) + [(0, None)], method="highs",
        )  # fmt: skip
        if result.status != 0:
            break
        p = result.x[: p_degree + 1]
        q = np.concatenate([[1.0], result.x[p_degree + 1 : -1]])
        weight = np.polyval(q[::-1], u)
        error = float(np.max(np.abs(np.polyval(p[::-1], u) / weight / want - 1)))
        if best is None or error < best[0]:
            best = (
                error,
                p * span ** -np.arange(p_degree + 1),
                q * span ** -np.arange(q_degree + 1),
            )
    assert best is not None, "no rational fit"
    return best[1], best[2]


def fit() -> None:
    import mpmath

    from strato.targets.llvm import vector_math as vm

    mpmath.mp.dps = 40

    def show(name: str, coefficients) -> None:
        values = ", ".join(repr(float(np.float32(c))) for c in coefficients)
        print(f"{name} = ({values})")

    half_ln2 = math.log(2) / 2
    show("EXP_POLYNOMIAL", minimax_polynomial(
        lambda r: float(mpmath.exp(r)), range(2, 7), lambda r: 1 + r, -half_ln2, half_ln2
    ))  # fmt: skip
    c0 = 2 / math.sqrt(math.pi)

    def erf_over_x(x: float) -> float:
        return float(mpmath.erf(x) / x) if x else c0

    show("ERF_SMALL", minimax_polynomial(
        erf_over_x, [2 * k for k in range(1, 6)], lambda x: 0 * x + c0, 0, vm.ERF_SPLIT
    ))  # fmt: skip
    p, q = minimax_rational(
        lambda a: float(mpmath.erfc(a) * mpmath.exp(a * a)), 3, 3, vm.ERF_SPLIT, vm.ERF_CLAMP
    )
    show("ERFC_NUMERATOR", p)
    show("ERFC_DENOMINATOR", q)

    def tanh_over_x(x: float) -> float:
        return float(mpmath.tanh(x) / x) if x else 1.0

    show("TANH_SMALL", minimax_polynomial(
        tanh_over_x, [2 * k for k in range(1, 7)], lambda x: 0 * x + 1, 0, vm.TANH_SPLIT
    ))  # fmt: skip

    # log(1 + f) = log((1 + s) / (1 - s)), s = f / (2 + f), over m = 1 + f in
    # [sqrt(1/2), sqrt(2)): 2 s + c3 s^3 + c5 s^5 + c7 s^7
    bound = (math.sqrt(2) - 1) / (math.sqrt(2) + 1)
    show("LOG_POLYNOMIAL", minimax_polynomial(
        lambda s: float(mpmath.log((1 + mpmath.mpf(s)) / (1 - mpmath.mpf(s)))), [3, 5, 7],
        lambda s: 2 * s, -bound, bound,
    ))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="re-derive the coefficients")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.fit:
        fit()
    else:
        accuracy_and_speed(args.samples, args.seed)


if __name__ == "__main__":
    main()
