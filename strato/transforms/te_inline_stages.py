"""te-inline-stages: inline element-wise stages into the stages that read them.

A `te.compute` stage that is not an output of its primitive is substituted into every
`te.compute` stage that reads it: each `te.read` of it becomes a copy of its body with
the stage's index arguments replaced by the read's indices. The stage itself then goes
away, and with it the buffer and the loop nest it would have had. This is the default
schedule of injective stages (TVM's compute_inline): a dense followed by bias and relu
becomes one reduction and one element-wise nest instead of three nests and two buffers.

Stages are not inlined into reduction bodies (that would redo the element-wise work for
every reduction step; a padded input stays a separate stage ahead of a convolution),
nor into a stage with more elements than their own (a per-row value is computed once per
row, not once per element), nor when their body has grown past `MAX_INLINED_OPS` (a
chain of stages would otherwise grow into one huge body: a recurrence unrolled over
time). A stage that only reads another tensor at its own indices (a prefix view: the
slice dropping the extra columns of a convolution computed wider) is inlined into any
reader, reductions included: nothing is recomputed, the reader reads that tensor.
Reductions are never inlined, nor is a stage its strategy marks `materialize` (a stage
whose value many readers combine, such as a transformed tile: inlined, each reader would
recompute it).

Requires: te primitives. Leaves illegal: nothing.

Before:

    %y = te.compute "bias_add" (%i) : tensor<4xf32> {
      %a = te.read %d[%i] : tensor<4xf32>
      %b = te.read %bias[%i] : tensor<4xf32>
      %s = arith.addf %a, %b : f32
      te.yield %s : f32
    }
    %r = te.compute "relu" (%j) : tensor<4xf32> {
      %v = te.read %y[%j] : tensor<4xf32>
      %z = arith.constant 0.0 : f32
      %m = arith.maximumf %v, %z : f32
      te.yield %m : f32
    }

After:

    %r = te.compute "relu" (%j) : tensor<4xf32> {
      %a = te.read %d[%j] : tensor<4xf32>
      %b = te.read %bias[%j] : tensor<4xf32>
      %s = arith.addf %a, %b : f32
      %z = arith.constant 0.0 : f32
      %m = arith.maximumf %s, %z : f32
      te.yield %m : f32
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from strato.dialects import te
from strato.dialects.tensor_types import stores_exactly

MAX_INLINED_OPS = 48
"""A stage whose body holds more ops than this is kept (and read from its buffer)."""

MATERIALIZE = "materialize"
"""The unit attribute of a `te.compute` stage that is never inlined."""


def _element_count(stage: te.StageOp) -> int:
    count = 1
    for dim in stage.tensor_type.get_shape():
        count *= dim
    return count


def should_inline(stage: te.ComputeOp) -> bool:
    """Whether every reader of `stage` may take a copy of its body."""
    if len(stage.body.block.ops) > MAX_INLINED_OPS or MATERIALIZE in stage.attributes:
        return False
    if not stores_exactly(stage.tensor_type.element_type):
        return False  # its readers must see the rounded (stored) value
    readers = [use.operation for use in stage.result.uses]
    if not readers:
        return False
    view = is_prefix_view(stage)
    for read in readers:
        reader = read.parent_op()
        if not isinstance(read, te.ReadOp):
            return False
        if view and isinstance(reader, te.StageOp):
            continue  # nothing is recomputed: the reader reads the viewed tensor instead
        if not isinstance(reader, te.ComputeOp):
            return False
        if _element_count(reader) > _element_count(stage):
            return False
    return True


def is_prefix_view(stage: te.ComputeOp) -> bool:
    """Whether `stage` only reads another tensor at its own indices (a slice keeping the
    first elements of each dimension, such as the columns of a convolution computed
    wider than its result), leaving out those of its unit dimensions (a layout that
    adds a block of one channel, NCHW -> NCHW1c): a reader, even a reduction, may read
    that tensor directly at the same indices."""
    ops = list(stage.body.block.ops)
    if len(ops) != 2 or not isinstance(ops[0], te.ReadOp) or not isinstance(ops[1], te.YieldOp):
        return False
    read, done = ops
    if done.value is not read.result:
        return False
    args, indices = list(stage.body.block.args), list(read.indices)
    shape = stage.tensor_type.get_shape()
    kept = [arg for arg in args if arg in indices]
    return indices == kept and all(
        extent == 1 for arg, extent in zip(args, shape, strict=True) if arg not in indices
    )


def inline_into_reader(stage: te.ComputeOp, read: te.ReadOp) -> None:
    """Replace `read` (a te.read of `stage`) by a copy of the stage's body."""
    block = read.parent_block()
    assert block is not None
    mapping: dict[SSAValue, SSAValue] = dict(zip(stage.body.block.args, read.indices))
    value: SSAValue | None = None
    for op in stage.body.block.ops:
        if isinstance(op, te.YieldOp):
            value = mapping.get(op.value, op.value)
            break
        clone = op.clone(value_mapper=mapping)
        block.insert_op_before(clone, read)
    assert value is not None
    read.result.replace_all_uses_with(value)
    read.detach()
    read.erase()


def inline_stages(primitive: te.PrimitiveOp) -> int:
    """Inline every non-output compute stage of `primitive` that `should_inline`
    accepts. Returns how many stages were inlined."""
    outputs = set(primitive.output.values)
    inlined = 0
    for stage in list(primitive.body.block.ops):
        if not isinstance(stage, te.ComputeOp) or stage.result in outputs:
            continue
        if not should_inline(stage):
            continue
        for read in [use.operation for use in stage.result.uses]:
            assert isinstance(read, te.ReadOp)
            inline_into_reader(stage, read)
        stage.detach()
        stage.erase()
        inlined += 1
    return inlined


@dataclass(frozen=True)
class TeInlineStagesPass(ModulePass):
    """Inline element-wise stages into the element-wise stages that read them."""

    name = "te-inline-stages"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for primitive in [p for p in op.walk() if isinstance(p, te.PrimitiveOp)]:
            inline_stages(primitive)
