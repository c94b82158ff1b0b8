"""Every registered pass has a property test that drives it with generated programs:
the table PROPERTY_TESTS names it, and this module holds the ones for passes no other
test module drives (upstream cse, dce and canonicalize; apply-schedule)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.context import make_context
from strato.targets.registry import registered_targets
from strato.testing.equivalence import check_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs
from strato.testing.schedules import ScheduledProgram, scheduled_programs
from strato.transforms import PASS_REGISTRY as TRANSFORMS
from strato.transforms import UPSTREAM_PASSES, resolve_pass


def _registry() -> dict[str, str]:
    """Every pass strato offers (its own, its targets', the upstream ones): name ->
    "module:Class"."""
    passes = {**UPSTREAM_PASSES, **TRANSFORMS}
    for cls, source in registered_targets().values():
        if source == "strato":
            passes.update(cls.passes)
    return passes


PASS_REGISTRY = _registry()

PROPERTY_TESTS: dict[str, str] = {
    "apply-schedule": "test_equivalence_passes:test_apply_schedule_keeps_results",
    "canonicalize": "test_equivalence_passes:test_upstream_passes_keep_results",
    "convert-graph-to-te": "test_convert_graph_to_te",
    "convert-loops-to-llvm": "test_convert_loops_to_llvm",
    "convert-loops-to-vta": "test_convert_loops_to_vta",
    "convert-te-to-loops": "test_convert_te_to_loops",
    "cse": "test_equivalence_passes:test_upstream_passes_keep_results",
    "dce": "test_equivalence_passes:test_upstream_passes_keep_results",
    "graph-alter-layout": "test_graph_alter_layout",
    "graph-pack-dense": "test_graph_pack_dense:test_packing_preserves_generated_programs",
    "graph-winograd": "test_graph_winograd:test_the_pass_keeps_generated_programs",
    "graph-default": "test_graph_default",
    "graph-fold-constants": "test_graph_fold_constants",
    "graph-fold-qdq": "test_graph_fold_qdq:test_fold_keeps_results",
    "graph-fuse-ops": "test_graph_fuse_ops",
    "graph-outline-branches": "test_graph_outline_branches:test_outlining_keeps_generated_programs",
    "graph-pad-channels": "test_graph_pad_channels:test_padding_keeps_generated_programs",
    "graph-plan-memory": "test_graph_plan_memory",
    "graph-prune-conv-taps": "test_graph_prune_conv_taps",
    "graph-quantize": "test_graph_quantize",
    "graph-raise-composites": "test_graph_raise_composites",
    "graph-simplify-inference": "test_graph_simplify_inference",
    "graph-unroll-recurrences": "test_graph_unroll_recurrences",
    "loop-dedup-kernels": "test_loop_dedup_kernels",
    "loop-linearize-views": "test_loop_linearize_views",
    "schedule-default": "test_schedule_default",
    "te-dedup-primitives": "test_te_dedup_primitives",
    "te-inline-stages": "test_te_inline_stages",
    "vta-inject-virtual-threads": "test_vta_compile_tokens:test_tokens_and_threads_keep_program_order_results",
    "vta-insert-dependence-tokens": "test_vta_compile_tokens:test_tokens_and_threads_keep_program_order_results",
}
"""Registered pass -> the property test module (tests/unit/<module>.py) that drives it
with generated programs, or module:function. A new pass needs an entry."""


OWN_STRATEGIES = {
    "convert-loops-to-vta",
    "graph-fold-qdq",
    "graph-quantize",
    "schedule-default",
    "vta-inject-virtual-threads",
    "vta-insert-dependence-tokens",
}
"""Passes whose property test draws its programs with strategies of its own (quantized
convolutions, QDQ groups; operator workloads; VTA instruction streams and conv2d layers) rather than strato.testing's generators."""


def _hypothesis_tests(module_name: str, function: str | None) -> list[str]:
    module = importlib.import_module(module_name)
    names = [function] if function else [n for n in dir(module) if n.startswith("test_")]
    return [n for n in names if getattr(getattr(module, n, None), "is_hypothesis_test", False)]


@pytest.mark.parametrize("name", sorted(PASS_REGISTRY))
def test_every_registered_pass_has_a_property_test(name: str):
    assert name in PROPERTY_TESTS, (
        f"pass '{name}' has no property test driving it with generated programs "
        "(add one and list it in PROPERTY_TESTS, tests/unit/test_equivalence_passes.py)"
    )
    module_name, _, function = PROPERTY_TESTS[name].partition(":")
    path = Path(__file__).parent / f"{module_name}.py"
    assert path.exists(), f"{path} does not exist"
    tests = _hypothesis_tests(module_name, function or None)
    assert tests, f"{PROPERTY_TESTS[name]} holds no hypothesis test"
    source = path.read_text()
    implementation = PASS_REGISTRY[name].split(":")[1]
    # the test module names the pass, or imports what implements it
    assert name in source or implementation in source or name.replace("-", "_") in source
    # and draws programs from strato.testing (or, listed below, with strategies of its own)
    assert "strato.testing" in source or name in OWN_STRATEGIES, (
        f"{module_name} does not draw programs from strato.testing"
    )


def test_the_table_names_only_registered_passes():
    assert set(PROPERTY_TESTS) <= set(PASS_REGISTRY)


UPSTREAM = ("cse", "dce", "canonicalize")


@settings(max_examples=15, deadline=None)
@given(program=graph_programs(max_ops=6), names=st.lists(st.sampled_from(UPSTREAM), min_size=1, max_size=3))
def test_upstream_passes_keep_results(program: GraphProgram, names: list[str]):
    passes = [resolve_pass(n)() for n in names]
    report = check_pipeline(make_context(), program.module, passes, n_inputs=2)
    assert report.unsupported is None
    assert report.difference is None, report.difference.describe()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(case=scheduled_programs(max_steps=3))
def test_apply_schedule_keeps_results(case: ScheduledProgram, tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "trace.json"
    path.write_text(json.dumps([json.loads(t.to_json()) for t in case.traces]))
    module = case.reference.clone()
    pass_ = resolve_pass("apply-schedule")(trace=str(path))
    report = check_pipeline(make_context(), module, [pass_], n_inputs=2)
    assert report.unsupported is None
    assert report.difference is None, report.difference.describe()
    assert report.passes_checked == ["apply-schedule"]
