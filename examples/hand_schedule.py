"""Write a schedule by hand and compare its speed with strato's default template.

A matmul + relu primitive (te dialect) is lowered to its canonical loop nest, then:

- left as it is (one scalar loop nest per stage);
- scheduled by hand: a register tile of the accumulator (cache_write + tile +
  compute_at), the reduction moved outside the tile, unrolled rows, vectorized columns,
  parallel rows of the relu;
- scheduled by the default template (the pass `schedule-default`).

Each is compiled to machine code and timed on the same inputs; all three compute the
same values (a schedule changes speed, never results).

    python examples/hand_schedule.py            # 256x256x256
    python examples/hand_schedule.py --small    # 32x32x32, a few runs (CI)
"""

import argparse

import numpy as np
from xdsl.parser import Parser

from strato.context import make_context
from strato.pipeline import run_pipeline
from strato.runtime.timing import median_latency_ms
from strato.schedule import Schedule
from strato.targets.llvm.kernels import compile_loops
from strato.transforms.apply_schedule import apply_schedule

MATMUL_RELU = """
te.primitive @mm {{
  %x = te.placeholder "x" : tensor<{n}x{n}xf32>
  %w = te.placeholder "w" : tensor<{n}x{n}xf32>
  %d = te.reduce "mm" sum (%i, %j) over (%k : {n}) init 0.0 : tensor<{n}x{n}xf32> {{
    %a = te.read %x[%i, %k] : tensor<{n}x{n}xf32>
    %b = te.read %w[%k, %j] : tensor<{n}x{n}xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }}
  %r = te.compute "relu" (%i, %j) : tensor<{n}x{n}xf32> {{
    %v = te.read %d[%i, %j] : tensor<{n}x{n}xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }}
  te.output %r : tensor<{n}x{n}xf32>
}}
"""


def lowered(n: int):
    module = Parser(make_context(), MATMUL_RELU.format(n=n)).parse_module()
    run_pipeline(make_context(), module, "convert-te-to-loops")
    return module


def by_hand(sch: Schedule) -> None:
    """A register-tiled matmul: 4x16 accumulator tiles, vectorized along j."""
    mm, relu = sch.get_stage("mm"), sch.get_stage("relu")
    local = sch.cache_write(mm, "local")
    i, j = sch.get_loops(mm)
    io, jo, ii, ji = sch.tile(i, j, 4, 16)
    sch.compute_at(local, jo)
    li, lj, lk = sch.get_loops(local)
    sch.reorder(lk, li, lj)
    sch.decompose_reduction(local, lk)
    sch.unroll(li)
    sch.vectorize(lj)
    sch.vectorize(ji)
    sch.parallel(io)
    ri, _ = sch.get_loops(relu)
    sch.parallel(ri)


def main(small: bool = False) -> None:
    n, repeat = (32, 3) if small else (256, 20)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    w = rng.standard_normal((n, n)).astype(np.float32)
    expected = np.maximum(x @ w, 0)

    variants = {}
    variants["canonical loops"] = lowered(n)
    variants["by hand"] = lowered(n)
    trace = apply_schedule(variants["by hand"], by_hand)
    variants["default template"] = lowered(n)
    run_pipeline(make_context(), variants["default template"], "schedule-default")
    print("the hand-written schedule as a trace:", [step.primitive for step in trace.steps])

    times = {}
    for name, module in variants.items():
        kernel = compile_loops(module).function("mm")
        out = np.empty((n, n), dtype=np.float32)
        kernel(x, w, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)
        times[name] = median_latency_ms(lambda: kernel(x, w, out), repeat=repeat)
    base = times["canonical loops"]
    for name, ms in times.items():
        print(f"{name:<18} {ms:9.3f} ms   {base / ms:6.1f}x the canonical loops")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a small matmul, few runs (CI)")
    main(parser.parse_args().small)
