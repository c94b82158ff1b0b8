"""strato.api: every export exists and is documented, and a new op, its strategy and
its semantics written against the facade alone go through lowering and equivalence
checking; pipeline hooks run pass instances."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from xdsl.parser import Parser

from strato import api
from strato.dialects import graph


def test_every_export_exists_and_says_what_it_is() -> None:
    assert api.__all__ == sorted(api.EXPORTS)
    for name in api.__all__:
        assert hasattr(api, name), name
        line = api.EXPORTS[name]
        assert line.endswith(".") and len(line) >= 10, (name, line)


@api.op_definition
class HypotOp(api.BroadcastBinaryOp):
    """sqrt(lhs^2 + rhs^2) with numpy broadcasting.

        %r = apitest.hypot %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    """

    name = "apitest.hypot"
    PATTERN_KIND: ClassVar[api.PatternKind] = api.PatternKind.BROADCAST  # constants are ClassVars

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return np.hypot(lhs, rhs)


@api.strategy(HypotOp)
def hypot(pb: api.PrimitiveBuilder, op: HypotOp, inputs: Sequence[api.SSAValue]) -> list[api.SSAValue]:
    lhs, rhs = inputs
    shape = api.shape_of(op.result)

    def body(s: api.ScalarBuilder, idx: list[api.SSAValue]) -> api.SSAValue:
        a = s.read(lhs, api.broadcast_indices(s, idx, api.shape_of(lhs), shape))
        b = s.read(rhs, api.broadcast_indices(s, idx, api.shape_of(rhs), shape))
        return s.sqrt(s.add(s.mul(a, a), s.mul(b, b)))

    return [pb.compute("hypot", shape, body, api.element_type_of(lhs))]


HYPOT_IR = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %r = apitest.hypot %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %y = graph.relu %r : tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


@pytest.fixture
def hypot_dialect():
    dialect = api.make_dialect("apitest", [HypotOp])
    api.register_dialect(dialect, source="test_api")
    yield dialect
    from strato.context import remove_dialect

    remove_dialect("apitest")


def test_an_op_written_against_the_facade_lowers_and_is_checked(hypot_dialect) -> None:
    from strato.transforms import resolve_pass

    module = Parser(api.make_context(), HYPOT_IR).parse_module()
    a = np.array([[3.0, -1.0, 0.0], [5.0, 2.0, -8.0]], np.float32)
    b = np.array([4.0, 0.0, 6.0], np.float32)
    (direct,) = api.run_graph(module, [a, b])
    np.testing.assert_allclose(direct, np.hypot(a, b))
    passes = [resolve_pass(name)() for name in ("graph-fuse-ops", "convert-graph-to-te", "convert-te-to-loops")]
    report = api.check_equivalence(module, passes, n_inputs=4)
    assert report.unsupported is None and report.difference is None
    assert report.passes_checked == ["graph-fuse-ops", "convert-graph-to-te", "convert-te-to-loops"]
    assert "apitest." not in str(module)


def test_the_equivalence_check_catches_a_wrong_strategy(hypot_dialect) -> None:
    from strato.transforms import resolve_pass

    class WrongHypotOp(HypotOp):
        @staticmethod
        def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
            return lhs * lhs + rhs * rhs  # forgets the square root

    module = Parser(api.make_context(), HYPOT_IR).parse_module()
    op = next(o for o in module.walk() if isinstance(o, HypotOp))
    wrong = WrongHypotOp.create(operands=list(op.operands), result_types=[op.result.type])
    rewriter = api.Rewriter(op)
    rewriter.replace(op, wrong)
    report = api.check_equivalence(module, [resolve_pass("convert-graph-to-te")()], n_inputs=2)
    assert report.difference is not None and report.difference.pass_name == "convert-graph-to-te"


@dataclass(frozen=True)
class CountOpsPass(api.Pass):
    """Record how many graph ops the module holds (a pass instance, never registered)."""

    name = "test-count-ops"
    counts: list = None  # type: ignore[assignment]

    def apply(self, ctx: api.Context, op: api.ModuleOp) -> None:
        self.counts.append(sum(1 for o in op.walk() if isinstance(o, api.GraphOp)))


def test_pipeline_hooks_take_pass_instances_around_the_graph_stage() -> None:
    before, after = CountOpsPass(counts=[]), CountOpsPass(counts=[])
    stages: list[str] = []
    api.compile("mlp", passes_before=[before], passes_after=[after], before_stage=stages.append)
    graph = [p.name for p in api.get_target("llvm").stages()[0].passes]
    assert stages[: len(graph) + 2] == ["test-count-ops", *graph, "test-count-ops"]
    assert before.counts[0] > 0 and after.counts[0] > 0


def test_a_bad_hook_is_a_diagnostic() -> None:
    with pytest.raises(api.StratoError, match="passes_after: Unrecognized passes: \\['no-such-pass'\\]"):
        api.compile("mlp", passes_after="no-such-pass")
    with pytest.raises(api.StratoError, match="passes_before: 'cse' is not a pass"):
        api.compile("mlp", passes_before=["cse"])


def test_rewrite_module_and_constants() -> None:
    class ReluToAbs(api.RewritePattern):
        @api.rewrite_pattern
        def match_and_rewrite(self, op: graph.ReluOp, rewriter: api.Rewriter) -> None:
            rewriter.replace(op, graph.AbsOp(op.input))

    module = Parser(api.make_context(), HYPOT_IR.replace("apitest.hypot", "graph.add")).parse_module()
    assert api.rewrite_module(module, [ReluToAbs()])
    assert "graph.abs" in str(module) and "graph.relu" not in str(module)
    attr = api.constant_tensor(np.arange(6, dtype=np.float32), api.TensorType(api.f32, [2, 3]))
    assert list(attr.get_values()) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert attr.get_type() == api.TensorType(api.f32, [2, 3])
