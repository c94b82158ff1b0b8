"""Access analysis on loop-level kernels and the workload key of te primitives."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import te
from strato.dialects.loop import ForOp
from strato.pipeline import run_pipeline
from strato.schedule import Schedule, workload_key
from strato.schedule.access import accesses, affine_of, stage_regions

DENSE = """
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<4x3xf32>
  %w = te.placeholder "w" : tensor<6x3xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 3) init 0.0 : tensor<4x6xf32> {
    %a = te.read %x[%i, %k] : tensor<4x3xf32>
    %b = te.read %w[%j, %k] : tensor<6x3xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<4x6xf32> {
    %c5 = arith.constant 5 : index
    %jr = arith.subi %c5, %j : index
    %v = te.read %d[%i, %jr] : tensor<4x6xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4x6xf32>
}
"""


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def lowered(text: str = DENSE) -> ModuleOp:
    module = parse(text)
    run_pipeline(make_context(), module, "convert-te-to-loops")
    return module


def kernel(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def test_loads_and_stores_are_affine_in_loop_variables():
    k = kernel(lowered())
    relu_load = [a for a in accesses(k) if not a.is_write][-1]
    (i_loop, j_loop) = [op for op in k.walk() if isinstance(op, ForOp)][-2:]
    i, j = i_loop.induction_var, j_loop.induction_var
    row, col = relu_load.indices
    assert row is not None and row.terms == ((i, 1),) and row.constant == 0
    assert col is not None and col.coefficient(j) == -1 and col.constant == 5


def test_split_indices_stay_affine():
    module = lowered()
    sch = Schedule(module)
    sch.split(sch.get_loop("relu", "i"), [None, 2])
    store = [a for a in accesses(sch.kernel) if a.is_write][-1]
    outer, inner = [op for op in sch.kernel.walk() if isinstance(op, ForOp)][-3:-1]
    row = store.indices[0]
    assert row is not None
    assert row.coefficient(outer.induction_var) == 2 and row.coefficient(inner.induction_var) == 1


def test_opaque_indices():
    module = lowered()
    sch = Schedule(module)
    sch.fuse(sch.get_loop("relu", "i"), sch.get_loop("relu", "j"))
    store = [a for a in accesses(sch.kernel) if a.is_write][-1]
    assert store.indices == [None, None] and not store.is_affine  # division and remainder


def test_stage_regions():
    module = lowered()
    regions = stage_regions(kernel(module))
    args = kernel(module).body.block.args
    x, w, r = args
    dense, relu = regions["dense"], regions["relu"]
    assert dense.reads[x] == [(0, 3), (0, 2)] and dense.reads[w] == [(0, 5), (0, 2)]
    (d,) = [b for b in dense.writes if b not in args]
    assert dense.writes[d] == [(0, 3), (0, 5)]
    assert relu.reads[d] == [(0, 3), (0, 5)] and relu.writes[r] == [(0, 3), (0, 5)]


def test_regions_after_compute_at_are_one_row():
    module = lowered()
    sch = Schedule(module)
    sch.compute_at(sch.get_stage("dense"), sch.get_loop("relu", "i"))
    (x, w, r) = sch.kernel.body.block.args
    assert stage_regions(sch.kernel)["dense"].reads[x] == [(0, 3), (0, 2)]
    inner = [op for op in sch.kernel.walk() if isinstance(op, ForOp) and op.axis.data == "k"][0]
    load = next(a for a in accesses(inner) if a.buffer is x)
    # one row per iteration of relu's loop i: the row index does not vary inside
    assert affine_of(load.op.indices[0]) is not None


def _primitive(module: ModuleOp) -> te.PrimitiveOp:
    return next(op for op in module.ops if isinstance(op, te.PrimitiveOp))


def test_workload_key_ignores_names_and_sees_computation():
    key = workload_key(_primitive(parse(DENSE)))
    renamed = DENSE.replace('"dense"', '"matmul"').replace("%d ", "%acc ").replace("%d[", "%acc[")
    renamed = renamed.replace("@dense_relu", "@other").replace('"x"', '"input"')
    assert workload_key(_primitive(parse(renamed))) == key
    assert key.startswith("wl-") and len(key) == 19
    other_shape = DENSE.replace("4x3", "5x3").replace("4x6", "5x6")
    assert workload_key(_primitive(parse(other_shape))) != key
    other_op = DENSE.replace("arith.maximumf", "arith.minimumf")
    assert workload_key(_primitive(parse(other_op))) != key
    other_kind = DENSE.replace('sum (%i, %j)', 'max (%i, %j)')
    assert workload_key(_primitive(parse(other_kind))) != key
