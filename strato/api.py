"""strato.api: what a plugin author programs against.

A plugin adds ops, passes and targets to strato without touching its source. Everything
it needs is here, under names strato keeps stable: when xDSL renames or moves
something (it does, monthly), strato.api follows and the plugin does not change.

    from strato import api

    @api.op_definition
    class SiluOp(api.UnaryElementwiseOp):          # a graph-level op: tensors in and out
        \"\"\"x * sigmoid(x), element by element.\"\"\"
        name = "act.silu"
        def evaluate(self, inputs):                 # reference semantics: interpreter,
            x = inputs[0]                           # constant folding, equivalence checks
            return [x / (1 + np.exp(-x))]

    @api.strategy(SiluOp)                           # its tensor expression (lowering)
    def silu(pb, op, inputs):
        (x,) = inputs
        return [pb.compute("silu", api.shape_of(x), lambda s, idx: ..., api.element_type_of(x))]

    Act = api.make_dialect("act", [SiluOp])
    api.register_dialect(Act)

The groups, each documented in `EXPORTS`:

- building IR: the graph op bases, xDSL's op-definition vocabulary, types and builders;
- rewriting: patterns, the rewriter, module passes, `rewrite_module`;
- interpreting: `evaluate` on graph ops, `evaluator` for other ops, `run_graph`,
  `check_equivalence` (the oracle `strato-opt --check-equivalence` runs);
- strategies: `strategy`, `PrimitiveBuilder`, `ScalarBuilder` and their helpers;
- plugins and targets: `register_dialect`, `register_pass`, `register_target`,
  `Target`, `TargetSpec`, `Stage`;
- schedules: `Template` and `Knob` (a schedule with knobs for one kind of stage),
  `register_template` (a template for a target's default schedules), `Intrinsic` and
  `register_intrinsic` (a tensor intrinsic for `tensorize`);
- pipelines: `compile` (with `passes_before` / `passes_after`), `run_pipeline`,
  `make_context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    attr_def,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import NoMemoryEffect, Pure

from strato import compile
from strato.dialects import graph
from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects.graph.base import (
    BroadcastBinaryOp,
    GraphOp,
    PatternKind,
    UnaryElementwiseOp,
    broadcast_shapes,
    static_shape,
)
from strato.interpreters.graph import evaluator, run_graph
from strato.pipeline import run_pipeline
from strato.plugins import (
    PluginError,
    register_dialect,
    register_intrinsic,
    register_pass,
    register_target,
    register_template,
)
from strato.schedule.intrinsics import Intrinsic
from strato.schedule.templates import Knob, ScheduleContext, Template
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
    shape_of,
)
from strato.targets.registry import Stage, Target, TargetSpec, get_target

op_definition = irdl_op_definition
"""Class decorator that turns an op class with `operand_def`/`result_def`/... fields
into an xDSL operation (xDSL's `irdl_op_definition`)."""

rewrite_pattern = op_type_rewrite_pattern
"""Decorator of a `RewritePattern.match_and_rewrite(self, op: FooOp, rewriter)` that
calls it only for ops of the annotated class (xDSL's `op_type_rewrite_pattern`)."""

Pass = ModulePass
"""Base of a pass over a whole module: a frozen dataclass whose `name` is the CLI name
and whose fields are its options (`my-pass{factor=2}`); implement `apply(ctx, module)`."""

Rewriter = PatternRewriter
"""What a pattern changes IR through: `replace(op, new_ops)`, `insert(op, point)`,
`erase(op)`, ..."""


def make_dialect(
    name: str, ops: Sequence[type[Operation]], attributes: Sequence[type[Attribute]] = ()
) -> Dialect:
    """The dialect `name` holding `ops` (each named `"<name>.<op>"`) and `attributes`,
    ready for `register_dialect`."""
    return Dialect(name, list(ops), list(attributes))


def rewrite_module(
    module: ModuleOp, patterns: Sequence[RewritePattern], *, recursive: bool = True
) -> bool:
    """Apply `patterns` to every op of `module` (again on what they create when
    `recursive`, until nothing changes); whether anything changed."""
    walker = PatternRewriteWalker(
        GreedyRewritePatternApplier(list(patterns)), apply_recursively=recursive
    )
    return walker.rewrite_module(module)


def check_equivalence(
    module: ModuleOp,
    passes: Sequence[ModulePass],
    n_inputs: int = 8,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    ctx: Context | None = None,
) -> Any:
    """Apply `passes` to `module` in place, interpreting the IR before and after each
    on the same `n_inputs` random inputs (half with edge values): the report names the
    first pass that changes a result (`report.difference`) or the ops no interpreter
    runs (`report.unsupported`). An op of a plugin is covered once it has reference
    semantics (`GraphOp.evaluate` or an `evaluator`). Needs the test extra (hypothesis).
    """
    from strato.testing.equivalence import check_pipeline

    return check_pipeline(ctx or make_context(), module, passes, n_inputs, rtol, atol)


def constant_tensor(values: np.ndarray | Sequence[float], type_: TensorType) -> DenseIntOrFPElementsAttr:
    """The dense elements attribute of `values` with the tensor type `type_`, the values
    converted to its element type first (`constant_tensor([1, 2], f32 tensor)` holds
    1.0 and 2.0; a float for an integer type is truncated as numpy's astype does)."""
    from strato.dialects.tensor_types import numpy_dtype

    array = np.asarray(values).astype(numpy_dtype(type_.element_type)).reshape(type_.get_shape())
    return DenseIntOrFPElementsAttr.from_list(type_, array.ravel().tolist())


def parse_module(text: str, ctx: Context | None = None) -> ModuleOp:
    """The module written in `text` (strato's dialects, upstream ones and the plugins'
    registered so far); a StratoError naming the line and column when it does not
    parse or verify. Ops outside a `builtin.module` are put in one, as strato-opt does."""
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError, VerifyException

    try:
        module = Parser(ctx or make_context(), text).parse_module()
        module.verify()
    except ParseError as err:
        raise StratoError(" ".join(str(err).split())) from None
    except VerifyException as err:
        raise StratoError(f"the module does not verify: {' '.join(str(err).split())}") from None
    return module


def print_module(module: Operation, *, generic: bool = False) -> str:
    """`module` as text that `parse_module` and strato-opt read back (`generic`: every
    op in the generic form)."""
    import io

    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


def resolve_pass(name: str) -> type[ModulePass]:
    """The pass class registered under the command-line `name` (strato's, xDSL's, a
    target's or a plugin's); KeyError when no pass has it. Instantiate it with its
    options: `api.resolve_pass("graph-alter-layout")(block=8)`."""
    from strato.targets.registry import registered_targets
    from strato.transforms import resolve_pass as resolve

    registered_targets()  # targets register their passes when they are registered
    return resolve(name)


EXPORTS: dict[str, str] = {
    # building IR
    "graph": "The graph dialect's op classes (graph.ReluOp, graph.AddOp, graph.ConstantOp, ...): "
    "match them in patterns, build them with their constructors (see the dialect reference).",
    "parse_module": "Parse IR text into a module (a StratoError naming the place when it does not parse).",
    "print_module": "A module (or any op) as text that parse_module and strato-opt read back.",
    "resolve_pass": "The pass class registered under a command-line name; instantiate it with its options.",
    "GraphOp": "Base of graph-level ops: declare PATTERN_KIND (a ClassVar), implement evaluate "
    "(and infer_shape).",
    "UnaryElementwiseOp": "Graph op base: one tensor in, one of the same type out, element by element.",
    "BroadcastBinaryOp": "Graph op base: two tensors in, numpy broadcasting; implement compute(lhs, rhs).",
    "PatternKind": "How an op may fuse (injective, broadcast, reduction, out_elemwise_fusable, opaque).",
    "static_shape": "The static shape of a tensor-typed SSA value.",
    "broadcast_shapes": "The numpy broadcast of two static shapes, or None.",
    "op_definition": "Class decorator defining an op from its operand_def/result_def/prop_def fields.",
    "IRDLOperation": "Base class of ops defined with op_definition (non-graph ops).",
    "operand_def": "An op field: one operand of the given type constraint.",
    "var_operand_def": "An op field: any number of operands.",
    "result_def": "An op field: one result of the given type constraint.",
    "var_result_def": "An op field: any number of results.",
    "prop_def": "An op field: a property (an attribute stored with the op).",
    "opt_prop_def": "An op field: an optional property.",
    "attr_def": "An op field: an attribute in the op's attribute dictionary.",
    "region_def": "An op field: a region.",
    "traits_def": "The op's traits, e.g. traits_def(Pure()).",
    "VarConstraint": "A type constraint shared by several fields (operands of one type).",
    "base": "The constraint 'any attribute of this class', e.g. base(TensorType).",
    "Pure": "Trait: no side effects, removable when unused (dce) and speculatable.",
    "NoMemoryEffect": "Trait: reads and writes no memory.",
    "make_dialect": "A Dialect of your ops and attributes, for register_dialect.",
    "Dialect": "xDSL's dialect class (a name, ops and attributes).",
    "Operation": "Base of every op.",
    "SSAValue": "An SSA value: an op result or block argument.",
    "Attribute": "Base of every attribute and type.",
    "Block": "A block of ops with arguments.",
    "Region": "A list of blocks owned by an op.",
    "ModuleOp": "The top-level builtin.module op.",
    "TensorType": "The ranked tensor type, TensorType(f32, [2, 3]).",
    "FloatAttr": "A float constant attribute of a float type.",
    "IntegerAttr": "An integer constant attribute of an integer type.",
    "StringAttr": "A string attribute.",
    "DenseIntOrFPElementsAttr": "A dense tensor constant.",
    "constant_tensor": "The dense attribute of a numpy array with a given tensor type.",
    "f16": "The f16 type.",
    "f32": "The f32 type.",
    "f64": "The f64 type.",
    "i1": "The i1 (boolean) type.",
    "i8": "The i8 type.",
    "i32": "The i32 type.",
    "i64": "The i64 type.",
    # rewriting
    "RewritePattern": "Base of a rewrite: implement match_and_rewrite(op, rewriter).",
    "rewrite_pattern": "Decorator of match_and_rewrite that filters by the annotated op class.",
    "Rewriter": "The pattern rewriter: replace(op, new_ops), insert(op, point), erase(op), ...",
    "InsertPoint": "Where a rewriter inserts: InsertPoint.before(op), .after(op), ...",
    "rewrite_module": "Apply patterns to a module until nothing changes.",
    "Pass": "Base of a module pass (a frozen dataclass; name = CLI name, fields = options).",
    "Context": "The xDSL context a pass receives (the dialects loaded).",
    # interpreting
    "evaluator": "Decorator registering the reference semantics of a non-graph op class.",
    "run_graph": "Interpret a graph-level module's entry function on numpy arrays.",
    "check_equivalence": "Apply passes, interpreting before and after each on random inputs; "
    "a report with .difference and .unsupported.",
    # strategies
    "strategy": "Decorator registering the tensor-expression strategy of op classes.",
    "PrimitiveBuilder": "Builds a te.primitive: compute and reduce stages.",
    "ScalarBuilder": "Builds a stage body: read, const, add, mul, exp, tanh, select, ...",
    "shape_of": "The static shape of a tensor value inside a strategy.",
    "element_type_of": "The element type of a tensor value inside a strategy.",
    "broadcast_indices": "The indices to read a numpy-broadcast input at an output index.",
    # plugins and targets
    "register_dialect": "Make a dialect known to every strato context (strato-opt parses it).",
    "register_pass": "Make a pass available by name to strato-opt, pipelines and compile.",
    "register_target": "Make a compile target available to compile, strato run and strato-opt -t.",
    "PluginError": "A registration strato refuses (a taken name, not a dialect or pass).",
    "Target": "Base of a compile target: name, summary, options, passes, stages() (or "
    "pipeline()), build().",
    "TargetSpec": "A parsed target string: name and options.",
    "get_target": "The registered target a target string names ('llvm -mcpu=x86-64-v2'), "
    "its options checked.",
    "Stage": "A named step of a target's compilation: pass instances, and a check first.",
    # schedules
    "Template": "A schedule with knobs for the stages its matches() accepts.",
    "Knob": "A named choice of a template: a domain and a default (or a function of the "
    "ScheduleContext).",
    "ScheduleContext": "What a target's default schedules read: templates, vector lanes, "
    "registers, threads, knob source.",
    "register_template": "Add a template to a target's default schedules (tried before its own).",
    "Intrinsic": "A tensor intrinsic: a te description, an implementation, how to lower the "
    "description.",
    "register_intrinsic": "Make an intrinsic available to tensorize by its name.",
    # pipelines
    "compile": "Compile an ONNX model; passes_before / passes_after add passes around the "
    "target's graph stage.",
    "run_pipeline": "Apply a textual pipeline ('a,b{opt=1}') to a module in place.",
    "make_context": "A context with strato's, xDSL's and the plugins' dialects.",
    "StratoError": "The one-line diagnostic for errors a user can cause (message, op).",
}
"""Each name of `strato.api` with one line saying what it is (the reference in the
docs is generated from this table and the objects' docstrings)."""

__all__ = sorted(EXPORTS)
