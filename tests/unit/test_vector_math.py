"""exp, log, erf and tanh of f32 as inline arithmetic (strato.targets.llvm.vector_math): the
vector code of a vectorized loop and the scalar code of a serial loop give the same
bits, within 2 ulp of the float64 functions over the f32 range, with the IEEE special
values, and neither calls a function."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from xdsl.parser import Parser

from strato.context import make_context
from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
from strato.targets.llvm.emit import emit_llvm_ir
from strato.targets.llvm.jit import JitModule

LANES = 16
BLOCKS = 1024
SIZE = LANES * BLOCKS

REFERENCES = {
    "exp": np.exp,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "tanh": np.tanh,
    "log": np.log,
}


def kernels(function: str) -> str:
    """Two kernels applying math.`function` to SIZE elements: one vectorized by LANES,
    one serial."""
    body = f"""
          %x = memref.load %a[%i] : memref<{SIZE}xf32>
          %y = math.{function} %x : f32
          memref.store %y, %o[%i] : memref<{SIZE}xf32>"""
    return f"""
    func.func @vector(%a: memref<{SIZE}xf32>, %o: memref<{SIZE}xf32> {{loop.output}}) attributes {{loop.kernel}} {{
      loop.for %b = 0 to {BLOCKS} axis "b" {{
        loop.for %l = 0 to {LANES} vectorized axis "l" {{
          %c = arith.constant {LANES} : index
          %s = arith.muli %b, %c : index
          %i = arith.addi %s, %l : index{body}
        }}
      }}
      func.return
    }}
    func.func @scalar(%a: memref<{SIZE}xf32>, %o: memref<{SIZE}xf32> {{loop.output}}) attributes {{loop.kernel}} {{
      loop.for %i = 0 to {SIZE} axis "i" {{{body}
      }}
      func.return
    }}
    """


def compiled(function: str) -> tuple[JitModule, str]:
    module = Parser(make_context(), kernels(function)).parse_module()
    convert_loops_to_llvm(module)
    module.verify()
    return JitModule(module), emit_llvm_ir(module)


def sample_inputs(seed: int = 0) -> np.ndarray:
    """Finite f32 values from every binade (random bit patterns) and, densely, the
    ranges where the functions are not constant."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, SIZE // 2, dtype=np.uint64).astype(np.uint32)
    spread = bits.view(np.float32)
    spread = np.where(np.isfinite(spread), spread, np.float32(1.0))
    dense = rng.uniform(-12.0, 12.0, SIZE - spread.size).astype(np.float32)
    return np.concatenate([spread, dense]).astype(np.float32)


def ulp_errors(actual: np.ndarray, x: np.ndarray, function: str) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        exact = REFERENCES[function](x.astype(np.float64))
        rounded = exact.astype(np.float32)
        # ulp of the correctly rounded result; an overflow is right only as inf
        ulp = np.spacing(np.abs(rounded)).astype(np.float64)
        error = np.abs(actual.astype(np.float64) - exact) / np.where(np.isinf(ulp), 1.0, ulp)
    return np.where(actual == rounded, 0.0, error)


def run(jit: JitModule, name: str, x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        jit.function(name)(x, out)
    return out


@pytest.mark.parametrize("function", ["exp", "erf", "tanh", "log"])
def test_vector_and_scalar_code_agree_within_two_ulp(function):
    jit, ir = compiled(function)
    callees = {name.split(".")[1] for name in re.findall(r'call [^@]*@"?([\w.]+)', ir)}
    assert callees <= {"fma", "minimum", "maximum", "fabs", "copysign"}, callees
    assert "llvm.fma.v16f32" in ir
    x = sample_inputs()
    if function == "log":  # its domain: the positive numbers of every binade, and [0, 12]
        x = np.abs(x)
    vector = run(jit, "vector", x)
    scalar = run(jit, "scalar", x)
    np.testing.assert_array_equal(vector.view(np.uint32), scalar.view(np.uint32))
    errors = ulp_errors(vector, x, function)
    worst = int(np.argmax(errors))
    assert errors[worst] <= 2.0, f"{function}({x[worst]!r}) = {vector[worst]!r}"


SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.3, -103.0, -104.0, -1e4, 1e-40],
    np.float32,
)


@pytest.mark.parametrize("function", ["exp", "erf", "tanh", "log"])
def test_special_values(function):
    jit, _ = compiled(function)
    x = np.resize(SPECIAL, SIZE)
    actual = run(jit, "vector", x)[: SPECIAL.size]
    with np.errstate(over="ignore", under="ignore"):
        expected = REFERENCES[function](SPECIAL.astype(np.float64)).astype(np.float32)
    if function == "exp":
        # exp(-103) is the subnormal 1.4e-45 * 1.0x: within an ulp of the denormal grid
        np.testing.assert_allclose(actual, expected, rtol=1.2e-7, atol=1.5e-45)
    else:
        np.testing.assert_array_equal(actual, expected)
    # the sign of zero is kept where the function keeps it
    assert np.signbit(actual[1]) == np.signbit(expected[1])
