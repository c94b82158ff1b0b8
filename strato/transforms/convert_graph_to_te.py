"""convert-graph-to-te: each graph operator becomes a te primitive and a call to it.

Requires: functions of `graph` ops on tensors of static shapes, or of run-time
dimensions where the ops take them (`graph.dims`): each primitive then takes one
`te.size` per class of equal run-time dimensions it uses, and the function names the
sizes of its arguments and results (`te.sizes`), for convert-te-to-loops.
Leaves illegal: every `graph` op. Constants become `arith.constant` tensors; every other
op becomes a `te.primitive` built by its operator strategy (`strato.strategies`) plus a
`te.call` in place of the op; a `graph.fused` group becomes one primitive with the stages
of all its ops (one kernel). Primitives are placed before the function that uses them
and are named after the op (`@dense_0`, `@relu_1`, ...). An op of another dialect (a
plugin's) that registered a strategy is lowered the same way; one on tensors that has
none is a diagnostic naming it, not an op left for a later lowering to trip on. The memory plan of
graph-plan-memory stays: a kernel's `arena_offsets` moves to its `te.call`, and the
function keeps `arena_bytes` (convert-te-to-loops allocates the arena from them).

Before:

    func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
      %r = graph.relu %x : tensor<2x4xf32>
      func.return %r : tensor<2x4xf32>
    }

After:

    te.primitive @relu_0 {
      %t0 = te.placeholder "t0" : tensor<2x4xf32>
      %r = te.compute "relu" (%i, %j) : tensor<2x4xf32> {
        %v = te.read %t0[%i, %j] : tensor<2x4xf32>
        %z = arith.constant 0.000000e+00 : f32
        %m = arith.maximumf %v, %z : f32
        te.yield %m : f32
      }
      te.output %r : tensor<2x4xf32>
    }
    func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
      %r = te.call @relu_0(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
      func.return %r : tensor<2x4xf32>
    }
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from strato.context import STRATO_DIALECTS, UPSTREAM_DIALECTS
from strato.diagnostics import StratoError
from strato.dialects import graph, te
from strato.dialects.graph.base import is_run_time
from strato.dialects.graph.dims import (
    SIZES_ATTR,
    RunTimeDims,
    leads_with_run_time_dims,
    run_time_axes,
    size_bounds,
)
from strato.legality import check_legal
from strato.strategies import strategy_for
from strato.strategies.builder import (
    PrimitiveBuilder,
    run_time_sizes,
    shape_of,
    static_type,
)
from strato.transforms.graph_outline_branches import outline_branches
from strato.transforms.graph_plan_memory import ARENA_OFFSETS_ATTR, IN_PLACE_ATTR


class SymbolNamer:
    """Hands out symbol names unique within one module: `<base>_<n>`."""

    def __init__(self, module: ModuleOp):
        self.taken = {
            op.properties["sym_name"].data  # type: ignore[union-attr]
            for op in module.ops
            if "sym_name" in op.properties
        }
        self.counter = 0

    def fresh(self, base: str) -> str:
        while True:
            name = f"{base}_{self.counter}"
            self.counter += 1
            if name not in self.taken:
                self.taken.add(name)
                return name


def build_primitive(
    name: str,
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    size_names: Callable[[SSAValue, int], str] | None = None,
    fixed_sizes: Mapping[str, int] | None = None,
) -> te.PrimitiveOp:
    """The primitive computing `outputs` from `inputs` by the strategies of `ops`.

    `ops` are graph ops in a valid order; their operands are either in `inputs` (which
    become placeholders, in order) or results of earlier ops in `ops` (whose stages the
    primitive already holds). One op gives a one-op primitive; a fused group gives one
    primitive for the whole group. `size_names` names the run-time dimensions of the
    graph values (one `te.size` per name); `fixed_sizes` gives some of them a static
    size instead (a primitive specialized to those sizes).
    """
    pb = PrimitiveBuilder(name)
    with pb.sizing(size_names or _no_run_time_sizes, fixed_sizes):
        values: dict[SSAValue, SSAValue] = {}
        for n, value in enumerate(inputs):
            hint = value.name_hint or f"t{n}"
            assert isinstance(value.type, TensorType), value.type
            shape = shape_of(value)
            values[value] = pb.placeholder(
                hint, static_type(value.type.element_type, shape), run_time_sizes(shape)
            )
        for op in ops:
            fn = strategy_for(op)
            if fn is None:
                raise StratoError(f"'{op.name}' has no tensor-expression strategy", op=op)
            results = fn(pb, op, [values[operand] for operand in op.operands])
            for result, te_value in zip(op.results, results, strict=True):
                values[result] = te_value
                if result.name_hint is not None:
                    te_value.name_hint = result.name_hint
        return pb.finish([values[v] for v in outputs])


ROW_BLOCKS = (32, 16, 8, 4, 1)
"""The blocks of rows a primitive of run-time sizes that computes its rows apart is
specialized to (`te.ROW_BLOCKS_ATTR`): a block of 32 rows amortizes a dense layer's
weight panels as a static compile does, one of 16 serves 16 to 31 rows reading the
weights once more, not twice (a BERT 768 wide at 16 tokens: 1.22x a compile per size
with blocks of 8, 1.03x with one of 16), one of 8 serves 8 to 15 rows, one of 4 serves
4 to 7 rows in two calls (the second ending at the last row), and one row is what fewer
rows take (a batch of one). Rows whose sizes' bounds make them a multiple of a block
(`graph.size_bounds`: a sequence of multiples of 8) stop at that block
(`_row_block_counts`)."""


def row_prefix(
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    size_names: Callable[[SSAValue, int], str],
) -> list[str] | None:
    """The names of the run-time sizes of the rows of the primitive of `ops`, when it
    computes each row of its outputs from the same row of its inputs alone (and from
    tensors of static shapes); None otherwise. Its rows are the leading dimensions of
    its outputs, which every input and output of run-time sizes leads with (the same
    dimensions, in the same order, and no other run-time dimension); a tensor inside
    has each of them once, anywhere. Such a primitive computes any block of
    consecutive rows (counted over all the leading dimensions as one) as it computes
    them all.

    Each op must keep rows apart by the rule of its kind: element-wise ops and
    broadcasts, transposes and reshapes (which keep run-time dimensions whole) always
    do; concatenations, splits and running sums along a static axis, softmax, layer
    norms and reductions when they reduce no run-time axis; dense layers and products when they
    contract no run-time axis and their weight is of static shape; a gather along the first axis of a table of static shape (an
    embedding). Any other op of run-time sizes has no rule, and the primitive no
    rows."""
    if not outputs or any(not run_time_axes(v) for v in outputs):
        return None
    first = outputs[0]
    prefix = [size_names(first, d) for d in run_time_axes(first)]
    if len(set(prefix)) != len(prefix):
        return None  # one size twice (a sequence by itself): a block fixes both at once
    boundary = {*inputs, *outputs}
    for value in [*inputs, *(r for op in ops for r in op.results), *outputs]:
        axes = run_time_axes(value)
        if not axes:
            continue
        names = [size_names(value, d) for d in axes]
        if value in boundary:
            if not leads_with_run_time_dims(value) or names != prefix:
                return None
        elif sorted(names) != sorted(prefix) or len(set(names)) != len(names):
            return None
    for op in ops:
        if any(is_run_time(v.type) for v in (*op.operands, *op.results)) and not _keeps_rows(op):
            return None
    return prefix


def _keeps_rows(op: Operation) -> bool:
    """Whether `op` computes each row of its results from the same row of its
    operands alone (see `row_prefix`)."""
    if isinstance(op, graph.UnaryElementwiseOp | graph.BroadcastBinaryOp):
        return True
    if isinstance(op, graph.ReshapeOp | graph.TransposeOp):
        return True
    if isinstance(op, graph.GatherOp):
        # an embedding: each row of the result is the table's rows the same row of the
        # indices picks
        return op.axis_value == 0 and not is_run_time(op.data.type)
    operand = op.operands[0]
    rank = len(operand.type.get_shape()) if isinstance(operand.type, TensorType) else 0
    rows = set(run_time_axes(operand))

    def reduces_no_row(axes: Sequence[int]) -> bool:
        return not any(axis % rank in rows for axis in axes)

    if isinstance(op, graph.ConcatOp | graph.SplitOp | graph.CumulativeOp):
        return reduces_no_row([op.axis_value])
    if isinstance(op, graph.SoftmaxOp | graph.ReductionOp):
        return reduces_no_row(op.axes.get_values())
    if isinstance(op, graph.LayerNormOp):
        static = all(not is_run_time(v.type) for v in (op.scale, op.bias) if v is not None)
        return static and reduces_no_row(range(op.axis.value.data % rank, rank))
    if isinstance(op, graph.DenseOp):
        weights = (op.weight, op.bias)
        return reduces_no_row([-1]) and all(not is_run_time(v.type) for v in weights if v is not None)
    if isinstance(op, graph.MatmulOp):
        rhs = op.rhs.type
        assert isinstance(rhs, TensorType)
        return reduces_no_row([-1]) and rhs.get_shape()[-2] >= 0
    return False


def _no_run_time_sizes(value: SSAValue, dim: int) -> str:
    raise StratoError(f"dimension {dim} of {value.type} is of run-time size, and nothing names it")


class FunctionSizes:
    """The names of the run-time sizes of the functions being lowered: one class of
    equal run-time dimensions per name (`graph.dims.RunTimeDims`), which follows each
    op's results to the te.call results that replace them."""

    def __init__(self, module: ModuleOp):
        self.dims: dict[FuncOp, RunTimeDims] = {}
        for function in module.ops:
            if isinstance(function, FuncOp) and _has_run_time_dims(function):
                self.dims[function] = RunTimeDims.of_function(function)

    def of(self, op: Operation) -> RunTimeDims | None:
        top = _top_level_ancestor(op)
        return self.dims.get(top) if isinstance(top, FuncOp) else None

    def names(self, op: Operation) -> Callable[[SSAValue, int], str] | None:
        """How the primitive of `op` names its run-time sizes: by the class of each
        dimension, which must hold a dimension of the function's arguments."""
        dims = self.of(op)
        if dims is None:
            return None

        def name(value: SSAValue, d: int) -> str:
            found = dims.name(value, d)
            if found is None:
                raise StratoError(
                    f"dimension {d} of {value.type} is of run-time size, but no dimension "
                    "of the function's arguments gives it",
                    op=op,
                )
            return found

        return name

    def annotate(self) -> None:
        """Each te function names the run-time sizes of its arguments and results
        (`te.sizes`), so that its lowering knows which are one size."""
        for function, dims in self.dims.items():
            block = function.body.block
            ret = block.last_op
            assert isinstance(ret, func.ReturnOp)
            for kind, values, given in (
                ("arg_attrs", block.args, function.arg_attrs),
                ("res_attrs", ret.arguments, function.res_attrs),
            ):
                old = given.data if given is not None else [DictionaryAttr({})] * len(values)
                attrs = [
                    _with_sizes(attr, dims, value, function)
                    for attr, value in zip(old, values, strict=True)
                ]
                setattr(function, kind, ArrayAttr(attrs))


def _with_sizes(
    attr: DictionaryAttr, dims: RunTimeDims, value: SSAValue, function: FuncOp
) -> DictionaryAttr:
    """`attr` with the names of `value`'s run-time sizes in place of the graph's."""
    kept = {k: v for k, v in attr.data.items() if k not in (SIZES_ATTR, te.SIZES_ATTR)}
    names: list[str] = []
    for d in run_time_axes(value):
        name = dims.name(value, d)
        if name is None:
            raise StratoError(
                f"dimension {d} of {value.type} is of run-time size, but no dimension of "
                f"@{function.sym_name.data}'s arguments gives it",
                op=function,
            )
        names.append(name)
    if names:
        kept[te.SIZES_ATTR] = ArrayAttr([StringAttr(n) for n in names])
    return DictionaryAttr(kept)


def _has_run_time_dims(function: FuncOp) -> bool:
    return any(
        is_run_time(t) for t in (*function.function_type.inputs, *function.function_type.outputs)
    ) or any(is_run_time(r.type) for op in function.walk() for r in op.results)


def kernel_parts(op: Operation) -> tuple[list[Operation], list[SSAValue], list[SSAValue]]:
    """The ops, inputs and outputs of the primitive `op` lowers to: a `graph.fused`
    group's body ops, arguments and yielded values, or `op` alone with its operands
    and results (`build_primitive` takes them)."""
    if isinstance(op, graph.FusedOp):
        body = op.body.block
        ops = [o for o in body.ops if o is not op.yield_op]
        return ops, list(body.args), list(op.yield_op.values)
    return [op], list(op.operands), list(op.results)


class ConstantOpLowering(RewritePattern):
    """graph.constant -> arith.constant of the same dense tensor."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConstantOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, arith.ConstantOp(op.value, op.result.type))


@dataclass
class GraphOpLowering(RewritePattern):
    """Any other graph op -> a one-op te.primitive (before the enclosing function) and a
    te.call of it; a `graph.fused` group -> one primitive holding the stages of all its
    ops."""

    namer: SymbolNamer
    sizes: FunctionSizes | None = None
    row_blocks: Sequence[int] = ()
    """The blocks of rows primitives that compute their rows apart are specialized to
    (`ROW_BLOCKS`; none: not specialized)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, graph.ConstantOp) or not _has_strategy(op):
            return
        if isinstance(op.parent_op(), graph.FusedOp):
            return  # lowered with its group
        top = _top_level_ancestor(op)
        base = op.label.data if isinstance(op, graph.FusedOp) else op.name.split(".", 1)[1]
        name = self.namer.fresh(base)
        size_names = self.sizes.names(op) if self.sizes is not None else None
        parts = kernel_parts(op)
        primitive = build_primitive(name, *parts, size_names=size_names)
        rewriter.insert(primitive, InsertPoint.before(top))
        rows = row_prefix(*parts, size_names) if size_names and self.row_blocks else None
        if rows is not None:
            counts, multiple = _row_block_counts(self.row_blocks, _row_multiple(top, rows))
            blocks: list[tuple[int, str]] = []
            for count in counts:
                block_name = self.namer.fresh(f"{name}_rows{count}")
                fixed = {size: 1 for size in rows} | {rows[-1]: count}
                block = build_primitive(block_name, *parts, size_names, fixed_sizes=fixed)
                rewriter.insert(block, InsertPoint.before(top))
                blocks.append((count, block_name))
            named = te.RowBlocks(tuple(rows), tuple(blocks), multiple)
            primitive.attributes[te.ROW_BLOCKS_ATTR] = named.attr()
        call = te.CallOp(name, list(op.operands), [r.type for r in op.results])
        dims = self.sizes.of(op) if self.sizes is not None else None
        if dims is not None:
            for old, new in zip(op.results, call.res, strict=True):
                for d in run_time_axes(old):
                    dims.alias((new, d), (old, d))
        for attr in (ARENA_OFFSETS_ATTR, IN_PLACE_ATTR):
            if attr in op.attributes:
                call.attributes[attr] = op.attributes[attr]
        rewriter.replace(op, call)


class ControlCallLowering(RewritePattern):
    """graph.cond_call, graph.loop_call and graph.scan_call -> te.cond_call, te.loop_call
    and te.scan_call of the same functions (now over te), their memory plan kept."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, graph.CondCallOp):
            call: Operation = te.CondCallOp(
                op.condition, op.callee(True), op.callee(False), list(op.inputs),
                list(op.result_types),
            )  # fmt: skip
        elif isinstance(op, graph.LoopCallOp):
            call = te.LoopCallOp(
                op.max_trip, op.condition, op.callee, list(op.inits), list(op.captured)
            )
        elif isinstance(op, graph.ScanCallOp):
            call = te.ScanCallOp(
                op.callee, list(op.inits), list(op.scanned), list(op.captured),
                list(op.result_types), op.stops is not None,
            )  # fmt: skip
        else:
            return
        if ARENA_OFFSETS_ATTR in op.attributes:
            call.attributes[ARENA_OFFSETS_ATTR] = op.attributes[ARENA_OFFSETS_ATTR]
        rewriter.replace(op, call)


def _row_multiple(function: Operation, rows: Sequence[str]) -> int:
    """What the rows of sizes `rows` (their product) are always a multiple of, by the
    bounds `function` records of its sizes (`graph.size_bounds`)."""
    if not isinstance(function, FuncOp):
        return 1
    bounds = size_bounds(function)
    return math.prod(bounds[name].multiple if name in bounds else 1 for name in rows)


def _row_block_counts(counts: Sequence[int], multiple: int) -> tuple[tuple[int, ...], int]:
    """The blocks of `counts` (decreasing to 1) rows that are always a multiple of
    `multiple` need: down to the largest count that divides `multiple`, when every
    larger count is a multiple of it (the blocks then leave no rows: a declared
    multiple of 8 drops the blocks of 4 and 1 rows, and their compiles); and what the
    blocks' counts end in (1: all of them)."""
    smallest = next((count for count in counts if multiple % count == 0), 1)
    kept = tuple(count for count in counts if count >= smallest)
    if smallest == 1 or any(count % smallest for count in kept):
        return tuple(counts), 1
    return kept, smallest


def _has_strategy(op: Operation) -> bool:
    """Graph ops, and ops of other dialects (a plugin's) that registered a strategy."""
    return isinstance(op, graph.GraphOp) or strategy_for(op) is not None


def check_no_unlowered_tensor_ops(module: ModuleOp, pass_name: str) -> None:
    """An op on tensors of a dialect that is neither strato's nor xDSL's (a plugin's),
    left in a function because it has no strategy, is named here rather than failing
    in a later lowering."""
    known = {dialect.name for dialect in (*STRATO_DIALECTS, *UPSTREAM_DIALECTS)}
    for op in module.walk():
        if op.dialect_name() in known or not isinstance(op.parent_op(), FuncOp):
            continue
        types = (*op.operand_types, *op.result_types)
        if any(isinstance(t, TensorType) for t in types):
            raise StratoError(
                f"'{op.name}' has no tensor-expression strategy, so {pass_name} cannot "
                "lower it (register one with strato.api.strategy)",
                op=op,
            )


def _top_level_ancestor(op: Operation) -> Operation:
    while (parent := op.parent_op()) is not None and not isinstance(parent, ModuleOp):
        op = parent
    return op


def graph_to_te_patterns(
    namer: SymbolNamer, sizes: FunctionSizes | None = None, row_blocks: Sequence[int] = ()
) -> list[RewritePattern]:
    return [
        ConstantOpLowering(),
        ControlCallLowering(),
        GraphOpLowering(namer, sizes, tuple(row_blocks)),
    ]


@dataclass(frozen=True)
class ConvertGraphToTePass(ModulePass):
    """Lower every graph op to a te primitive (by its operator strategy) and a te.call."""

    name = "convert-graph-to-te"

    row_blocks: tuple[int, ...] = ()
    """Blocks of rows (counts, largest first, ending in 1: 32,16,8,4,1) to which each
    primitive of run-time sizes that computes its rows apart is also specialized
    (`te.row_blocks`, which convert-te-to-loops runs instead of it); empty: none."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        row_blocks = _parse_row_blocks(self.row_blocks)
        # a graph.if or graph.loop a pipeline left in place (graph-default outlines them
        # first): its functions then have no memory plan, and allocate what they compute
        outline_branches(op)
        sizes = FunctionSizes(op)
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(graph_to_te_patterns(SymbolNamer(op), sizes, row_blocks)),
            apply_recursively=False,
        )
        walker.rewrite_module(op)
        sizes.annotate()
        check_legal(op, self.name, illegal_dialects={"graph"})
        check_no_unlowered_tensor_ops(op, self.name)


def _parse_row_blocks(counts: tuple[int, ...] | int) -> tuple[int, ...]:
    """The counts of a `row_blocks` option (one count parses as an int); a diagnostic
    unless they are row counts, decreasing, ending in 1."""
    counts = (counts,) if isinstance(counts, int) else tuple(counts)
    if counts and not te.RowBlocks.valid_counts(counts):
        shown = ",".join(str(n) for n in counts)
        raise StratoError(
            f"convert-graph-to-te: row_blocks must be row counts, decreasing, ending in 1 "
            f"(e.g. 32,8,1), got {shown}"
        )
    return counts


__all__ = ["ConvertGraphToTePass", "build_primitive", "graph_to_te_patterns"]
