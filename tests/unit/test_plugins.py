"""Plugins: run-time registration, loading by module and by entry point, broken plugins,
and what strato-opt shows of them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from strato import plugins
from strato.tools import strato_opt

CUBE_PLUGIN = '''
from dataclasses import dataclass
from typing import ClassVar

from strato import api


@api.op_definition
class CubeOp(api.IRDLOperation):
    """x * x * x, element by element: not a graph op, its semantics are registered."""

    name = "{dialect}.cube"
    T: ClassVar = api.VarConstraint("T", api.base(api.TensorType))
    input = api.operand_def(T)
    result = api.result_def(T)
    traits = api.traits_def(api.Pure())
    assembly_format = "$input attr-dict `:` type($input)"


@api.evaluator(CubeOp)
def evaluate_cube(op, inputs):
    return [inputs[0] * inputs[0] * {third}]


@api.strategy(CubeOp)
def cube(pb, op, inputs):
    (x,) = inputs

    def body(s, idx):
        v = s.read(x, idx)
        return s.mul(s.mul(v, v), v)

    return [pb.compute("cube", api.shape_of(x), body, api.element_type_of(x))]


@dataclass(frozen=True)
class NoopPass(api.Pass):
    """Leave the module as it is."""

    name = "{dialect}-noop"

    def apply(self, ctx, op):
        pass


api.register_dialect(api.make_dialect("{dialect}", [CubeOp]))
api.register_pass(NoopPass)
'''

CUBE_IR = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {{
  %y = {dialect}.cube %x : tensor<2x3xf32>
  %z = graph.relu %y : tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}}
"""


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    """Each test starts from strato's own registrations and leaves them so: the
    registries of dialects, passes, targets, templates and intrinsics, and what the
    plugins loaded."""
    from strato import context, transforms
    from strato.schedule import intrinsics, templates
    from strato.targets import registry as target_registry

    target_registry.load_builtin_targets()
    registries = (
        context._ADDED,
        transforms._ADDED,
        plugins._plugin_passes,
        plugins._loaded,
        target_registry._REGISTRY,
        intrinsics._REGISTRY,
        intrinsics._FAMILIES,
    )
    saved = [dict(registry) for registry in registries]
    saved_templates = {target: list(entries) for target, entries in templates._TEMPLATES.items()}
    yield
    for registry, before in zip(registries, saved):
        registry.clear()
        registry.update(before)
    templates._TEMPLATES.clear()
    templates._TEMPLATES.update(saved_templates)


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def write_plugin(directory: Path, module: str, text: str) -> None:
    (directory / f"{module}.py").write_text(textwrap.dedent(text))
    sys.modules.pop(module, None)


@dataclass
class Result:
    status: int
    out: str
    err: str


def run_opt(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    status = strato_opt.main(list(args))
    captured = capsys.readouterr()
    return Result(status, captured.out, captured.err)


@dataclass(frozen=True)
class HelloPass(ModulePass):
    """Say hello to the module."""

    name = "test-hello"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["hello"] = UnitAttr()


# -- run-time registration ----------------------------------------------------------


def test_register_pass_reaches_pipelines_and_names_its_source() -> None:
    from strato.context import make_context
    from strato.pipeline import run_pipeline

    assert plugins.register_pass(HelloPass, source="hello-plugin") is HelloPass
    assert plugins.pass_source("test-hello") == "hello-plugin"
    module = ModuleOp([])
    run_pipeline(make_context(), module, "test-hello,cse")
    assert "hello" in module.attributes
    plugins.register_pass(HelloPass, source="hello-plugin")  # the same class again: no-op


def test_register_pass_without_source_is_attributed_to_the_caller() -> None:
    plugins.register_pass(HelloPass)
    assert plugins.pass_source("test-hello") == "test_plugins"


def test_lazy_pass_registration_by_module_and_class() -> None:
    plugins.register_pass("test-lazy-cse", "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination", source="lazy")
    from strato.transforms import get_all_passes

    assert get_all_passes()["test-lazy-cse"]().name == "cse"


@pytest.mark.parametrize(
    ("name", "owner"), [("cse", "xDSL's 'cse'"), ("graph-fuse-ops", "strato's 'graph-fuse-ops'")]
)
def test_a_pass_name_clash_names_both_sides(name: str, owner: str) -> None:
    @dataclass(frozen=True)
    class Clashing(HelloPass):  # type: ignore[misc]
        pass

    Clashing.name = name
    with pytest.raises(plugins.PluginError) as info:
        plugins.register_pass(Clashing, source="mine")
    assert f"pass '{name}' from mine clashes with {owner}" in info.value.message


def test_two_plugins_cannot_register_one_pass_name() -> None:
    plugins.register_pass(HelloPass, source="first")

    @dataclass(frozen=True)
    class Other(HelloPass):  # type: ignore[misc]
        pass

    with pytest.raises(plugins.PluginError, match="clashes with the one from first"):
        plugins.register_pass(Other, source="second")


def test_register_dialect_refuses_a_taken_name_and_misnamed_ops() -> None:
    from xdsl.ir import Dialect

    from strato.dialects.graph import ReluOp

    with pytest.raises(plugins.PluginError, match="dialect 'graph' from mine clashes with strato's"):
        plugins.register_dialect(Dialect("graph", [], []), source="mine")
    with pytest.raises(plugins.PluginError, match="op 'graph.relu' of dialect 'mine'"):
        plugins.register_dialect(Dialect("mine", [ReluOp], []), source="mine")
    with pytest.raises(plugins.PluginError, match="not an xdsl Dialect"):
        plugins.register_dialect("graph", source="mine")  # type: ignore[arg-type]


def test_register_target_delegates_to_the_target_registry() -> None:
    from strato.targets import registry

    class EchoTarget(registry.Target):
        name = "test_echo"
        summary = "A target that only exists in this test."

    plugins.register_target(EchoTarget, source="echo-plugin")
    try:
        assert registry.registered_targets()["test_echo"] == (EchoTarget, "echo-plugin")
        assert isinstance(registry.get_target("test_echo"), EchoTarget)
        with pytest.raises(plugins.PluginError, match="clashes with the one from strato"):
            clash = type("Llvm", (registry.Target,), {"name": "llvm", "summary": "another llvm"})
            plugins.register_target(clash, source="echo-plugin")
    finally:
        registry.unregister_target("test_echo")


# -- schedule templates and intrinsics -----------------------------------------------


ROW_TEMPLATE_PLUGIN = """
from strato import api

def relu_only(sch, stage):
    return stage.name == "relu"

def split_rows(sch, stage, knobs, context):
    # rows unrolled by `block`, columns vectorized by the target's lanes
    rows, columns = sch.get_loops(stage)
    _, block = sch.split(rows, [None, knobs["block"]])
    sch.unroll(block)
    if columns.extent % context.lanes == 0:
        _, lanes = sch.split(sch.get_loop(stage, columns.axis), [None, context.lanes])
        sch.vectorize(lanes)

ROWS = api.Template(
    "test_rows",
    (api.Knob("block", (1, 2), 2),),
    relu_only,
    split_rows,
)
api.register_template(ROWS, target="llvm")
"""


def test_a_plugin_template_schedules_the_stages_it_matches(plugin_dir: Path) -> None:
    """A template registered for the llvm target is tried before the CPU's own: the
    relu kernel records it, the tuner sees its knob, and the results do not change."""
    import numpy as np
    from onnx import TensorProto, helper

    import strato
    from strato.autotuning.task import extract_tasks

    write_plugin(plugin_dir, "row_template", ROW_TEMPLATE_PLUGIN)
    assert plugins.load_plugin("row_template") is None
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    templates: dict[str, str] = {}

    def after(stage: str, module: ModuleOp) -> None:
        if stage == "schedule-default":
            for op in module.walk():
                if "schedule.template" in op.attributes:
                    templates.update({k: v.data for k, v in op.attributes["schedule.template"].data.items()})

    compiled = strato.compile(model, after_stage=after, cache=False)
    assert templates == {"relu": "test_rows"}
    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    np.testing.assert_array_equal(compiled(x)[0], np.maximum(x, 0))
    (task,) = extract_tasks(model)
    assert [(s.template, [k for k, _, _ in s.knobs]) for s in task.stages] == [("test_rows", ["block"])]


def test_template_and_intrinsic_clashes_are_plugin_errors_and_a_failing_plugin_takes_them_back(
    plugin_dir: Path,
) -> None:
    from strato.schedule.intrinsics import get_intrinsic
    from strato.schedule.templates import registered_templates

    write_plugin(plugin_dir, "row_template", ROW_TEMPLATE_PLUGIN)
    assert plugins.load_plugin("row_template") is None
    again = ROW_TEMPLATE_PLUGIN.replace("ROWS = api.Template(", "OTHER = ROWS = api.Template(")
    write_plugin(plugin_dir, "row_template_again", again)
    failure = plugins.load_plugin("row_template_again")
    assert failure is not None
    assert "template 'test_rows' for target 'llvm' from row_template_again clashes with the one from row_template" in failure.reason
    write_plugin(
        plugin_dir,
        "half_intrinsic",
        """
        from strato import api
        from strato.transforms.convert_te_to_loops import lower_te_text

        def implement(match):
            raise NotImplementedError

        api.register_template(api.Template("test_half", (), lambda sch, stage: False, None))
        api.register_intrinsic(api.Intrinsic("test.half", "", implement, lower=lower_te_text))
        raise ImportError("a dependency is missing")
        """,
    )
    failure = plugins.load_plugin("half_intrinsic")
    assert failure is not None and failure.reason == "ImportError: a dependency is missing"
    assert "test_half" not in [t.name for t in registered_templates("llvm")]
    with pytest.raises(Exception, match="no intrinsic named 'test.half'"):
        get_intrinsic("test.half")
    with pytest.raises(plugins.PluginError, match="intrinsic 'cpu.fma_tile.2x16x4' from tests is already defined"):
        from strato import api

        existing = get_intrinsic("cpu.fma_tile.2x16x4")
        clone = api.Intrinsic(existing.name, existing.description, existing.implement, lower=existing.lower)
        plugins.register_intrinsic(clone, source="tests")


# -- loading ------------------------------------------------------------------------


def test_load_plugin_registers_its_dialect_and_pass(plugin_dir: Path) -> None:
    write_plugin(plugin_dir, "cube_ok", CUBE_PLUGIN.format(dialect="cubeok", third="inputs[0]"))
    assert plugins.load_plugin("cube_ok") is None
    assert plugins.registered_dialects()["cubeok"][1] == "cube_ok"
    assert plugins.pass_source("cubeok-noop") == "cube_ok"
    from strato.context import make_context

    assert make_context().get_optional_op("cubeok.cube") is not None


def test_a_plugin_failing_part_way_leaves_nothing_registered(plugin_dir: Path) -> None:
    # The dialect registers, then the pass clashes with strato's: both are taken back.
    text = CUBE_PLUGIN.format(dialect="cubeclash", third="inputs[0]").replace(
        'name = "cubeclash-noop"', 'name = "graph-fuse-ops"'
    )
    write_plugin(plugin_dir, "cube_clash", text)
    failure = plugins.load_plugin("cube_clash")
    assert failure is not None and failure.name == "cube_clash"
    assert "pass 'graph-fuse-ops' from cube_clash clashes with strato's" in failure.reason
    assert "cubeclash" not in plugins.registered_dialects()
    assert plugins.load_plugin("cube_clash") is failure  # loaded once


def test_module_function_form_calls_the_function(plugin_dir: Path) -> None:
    write_plugin(
        plugin_dir,
        "hello_fn",
        """
        from dataclasses import dataclass

        from strato import api

        @dataclass(frozen=True)
        class LaterPass(api.Pass):
            "Registered only when setup() is called."

            name = "test-later"

            def apply(self, ctx, op):
                pass

        def setup():
            api.register_pass(LaterPass)
        """,
    )
    assert plugins.load_plugin("hello_fn:setup") is None
    assert plugins.pass_source("test-later") == "hello_fn:setup"


# -- strato-opt -------------------------------------------------------------------------


def test_strato_opt_lists_a_plugin_pass_and_dialect_under_its_name(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_plugin(plugin_dir, "cube_list", CUBE_PLUGIN.format(dialect="cubelist", third="inputs[0]"))
    passes = run_opt(capsys, "--load-plugin", "cube_list", "--list-passes")
    assert passes.status == 0, passes.err
    row = next(line for line in passes.out.splitlines() if line.startswith("cubelist-noop"))
    assert row.split()[1] == "cube_list" and row.endswith("Leave the module as it is.")
    assert next(line for line in passes.out.splitlines() if line.startswith("cse ")).split()[1] == "xDSL"

    dialects = run_opt(capsys, "--load-plugin=cube_list", "--list-dialects")
    rows = {line.split()[0]: line.split()[1:] for line in dialects.out.splitlines()}
    assert rows["cubelist"] == ["cube_list", "cube"]
    assert rows["graph"][0] == "strato" and rows["arith"][0] == "xDSL"

    help_text = run_opt(capsys, "--load-plugin", "cube_list", "--help").out
    plugin_section = help_text.split("passes of plugin 'cube_list':")[1].split("\n\n")[0]
    assert "cubelist-noop" in plugin_section
    upstream = help_text.split("upstream xDSL passes:")[1].split("\n\n")[0]
    assert "cubelist-noop" not in upstream


def test_a_non_graph_op_with_a_strategy_is_lowered_and_checked(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_plugin(plugin_dir, "cube_lower", CUBE_PLUGIN.format(dialect="cubelower", third="inputs[0]"))
    source = plugin_dir / "cube.mlir"
    source.write_text(CUBE_IR.format(dialect="cubelower"))
    result = run_opt(
        capsys, "--load-plugin", "cube_lower", str(source),
        "-p", "cubelower-noop,convert-graph-to-te,convert-te-to-loops", "--check-equivalence=4",
    )
    assert result.status == 0, result.err
    assert "cubelower.cube" not in result.out and 'stage = "cube"' in result.out


def test_equivalence_checking_covers_a_plugin_op(plugin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The registered semantics say x*x*2, the strategy x*x*x: the lowering "changes" it.
    write_plugin(plugin_dir, "cube_wrong", CUBE_PLUGIN.format(dialect="cubewrong", third="2.0"))
    source = plugin_dir / "cube.mlir"
    source.write_text(CUBE_IR.format(dialect="cubewrong"))
    result = run_opt(
        capsys, "--load-plugin", "cube_wrong", str(source), "-p", "convert-graph-to-te",
        "--check-equivalence=4",
    )
    assert result.status == 1
    assert "error: pass 'convert-graph-to-te' changes the result of the program" in result.err


def test_an_op_without_a_strategy_is_a_located_diagnostic(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = CUBE_PLUGIN.format(dialect="cubebare", third="inputs[0]").replace("@api.strategy(CubeOp)", "")
    write_plugin(plugin_dir, "cube_bare", text)
    source = plugin_dir / "cube.mlir"
    source.write_text(CUBE_IR.format(dialect="cubebare"))
    result = run_opt(capsys, "--load-plugin", "cube_bare", str(source), "-p", "convert-graph-to-te")
    assert result.status == 1
    assert result.err.strip() == (
        f"{source}:3:3: error: 'cubebare.cube' has no tensor-expression strategy, so "
        "convert-graph-to-te cannot lower it (register one with strato.api.strategy)"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("import no_such_module_anywhere\n", "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
        ("raise RuntimeError('half-written plugin')\n", "RuntimeError: half-written plugin"),
    ],
)
def test_a_broken_plugin_is_one_warning_and_strato_opt_still_works(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str
) -> None:
    module = f"broken_{abs(hash(text))}"
    write_plugin(plugin_dir, module, text)
    source = plugin_dir / "relu.mlir"
    source.write_text(
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = graph.relu %x : tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    result = run_opt(capsys, "--load-plugin", module, str(source), "-p", "convert-graph-to-te")
    assert result.status == 0
    assert result.err.splitlines() == [f"strato-opt: warning: plugin '{module}' not loaded: {reason}"]
    assert "te.primitive" in result.out


def test_main_runs_a_driver_subclass(capsys: pytest.CaptureFixture[str]) -> None:
    class Shouting(strato_opt.StratoOptMain):
        def pass_list(self) -> str:
            return super().pass_list().upper()

    status = strato_opt.main(["--list-passes"], driver=Shouting)
    assert status == 0 and "CONVERT-GRAPH-TO-TE" in capsys.readouterr().out


# -- installed plugins (entry points) ------------------------------------------------------


def install_by_metadata(site: Path, module: str, text: str, entry_point: str) -> None:
    """What pip leaves for an installed package: the module and its dist-info with an
    entry point of the strato.plugins group."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(text))
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[strato.plugins]\n{entry_point}\n")


def run_in(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)


def test_installed_plugins_load_by_themselves_and_broken_ones_are_named(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_by_metadata(site, "cube_installed", CUBE_PLUGIN.format(dialect="cubeinst", third="inputs[0]"), "cube = cube_installed")
    install_by_metadata(site, "gone_installed", "import not_there_either\n", "gone = gone_installed")
    opt = Path(sys.executable).with_name("strato-opt")
    result = run_in(site, str(opt), "--list-passes")
    assert result.returncode == 0, result.stderr
    assert any(line.split()[:2] == ["cubeinst-noop", "cube"] for line in result.stdout.splitlines())
    assert result.stderr.splitlines() == [
        "strato-opt: warning: plugin 'gone' not loaded: ModuleNotFoundError: No module named 'not_there_either'"
    ]
    # so does the strato command
    cli = run_in(site, str(opt.with_name("strato")), "targets")
    assert cli.returncode == 0 and cli.stdout.startswith("llvm")
    assert cli.stderr.splitlines() == [
        "strato: warning: plugin 'gone' not loaded: ModuleNotFoundError: No module named 'not_there_either'"
    ]
    # strato.compile loads them too (a broken one is a warning) and sees their passes.
    script = (
        "import warnings, strato\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    model = strato.compile('mlp', passes_before='cubeinst-noop')\n"
        "print([str(w.message) for w in caught])\n"
    )
    compiled = run_in(site, sys.executable, "-c", script)
    assert compiled.returncode == 0, compiled.stderr
    assert "strato: plugin 'gone' not loaded: ModuleNotFoundError" in compiled.stdout


def test_a_failing_plugin_takes_back_its_target(plugin_dir: Path) -> None:
    from strato.targets import registry

    write_plugin(
        plugin_dir,
        "half_target",
        """
        from strato import api

        class HalfTarget(api.Target):
            name = "half_made"
            summary = "Registered, then its plugin fails."

        api.register_target(HalfTarget)
        raise ImportError("a dependency of the target is missing")
        """,
    )
    failure = plugins.load_plugin("half_target")
    assert failure is not None and failure.reason == "ImportError: a dependency of the target is missing"
    assert "half_made" not in registry.registered_targets()


def test_strato_load_plugin_adds_a_target_and_names_a_broken_one(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from strato.targets import registry
    from strato.tools import strato_cli

    write_plugin(
        plugin_dir,
        "echo_target_plugin",
        """
        from strato import api

        class EchoTarget(api.Target):
            name = "echo_cli"
            summary = "A target a plugin loaded with --load-plugin adds."

        api.register_target(EchoTarget)
        """,
    )
    try:
        status = strato_cli.main(
            ["--load-plugin", "echo_target_plugin", "targets", "--load-plugin", "no_such_plugin"]
        )
        captured = capsys.readouterr()
        assert status == 0
        assert "echo_cli" in captured.out and "A target a plugin loaded" in captured.out
        assert "plugin 'no_such_plugin' not loaded: ModuleNotFoundError" in captured.err
    finally:
        if "echo_cli" in registry.registered_targets():
            registry.unregister_target("echo_cli")


def test_an_exception_in_a_plugin_pass_is_named_as_the_plugins(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_plugin(
        plugin_dir,
        "faulty_pass_plugin",
        """
        from dataclasses import dataclass

        from strato import api


        @dataclass(frozen=True)
        class FaultyPass(api.Pass):
            \"\"\"Fail on every module.\"\"\"

            name = "test-faulty"

            def apply(self, ctx, op):
                raise ValueError("the plugin's own mistake")


        api.register_pass(FaultyPass)
        """,
    )
    source = plugin_dir / "empty.mlir"
    source.write_text("builtin.module {}\n")
    result = run_opt(capsys, "--load-plugin", "faulty_pass_plugin", str(source), "-p", "test-faulty")
    assert result.status == 1
    first, note = result.err.splitlines()
    assert first == (
        "strato-opt: error in plugin 'faulty_pass_plugin': ValueError: the plugin's own mistake (in pass 'test-faulty')"
    )
    assert note.startswith("strato-opt: note: raised at ")
    assert "faulty_pass_plugin.py:" in note and " in apply;" in note
    assert "bug in strato" not in result.err


DROP_NEG_PLUGIN = """
from dataclasses import dataclass

from strato import api
from strato.dialects import graph


@dataclass(frozen=True)
class DropNeg(api.Pass):
    \"\"\"Wrongly drop every graph.neg.\"\"\"

    name = "test-drop-neg"

    def apply(self, ctx, op):
        for inner in list(op.walk()):
            if isinstance(inner, graph.NegOp):
                inner.results[0].replace_all_uses_with(inner.operands[0])
                inner.detach()
                inner.erase()


api.register_pass(DropNeg)
"""


def test_reduce_shrinks_a_plugin_pass_failure_to_a_rerunnable_lit_test(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 50-op program with one op the plugin's pass rewrites wrongly reduces to under 5
    ops, and the RUN line loads the plugin and keeps the tolerance."""
    write_plugin(plugin_dir, "drop_neg_plugin", DROP_NEG_PLUGIN)
    lines = ["func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {"]
    previous = "%x"
    for i in range(25):
        lines.append(f"  %a{i} = graph.add {previous}, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>")
        unary = "graph.neg" if i == 12 else "graph.relu"
        lines.append(f"  %b{i} = {unary} %a{i} : tensor<4xf32>")
        previous = f"%b{i}"
    lines += [f"  func.return {previous} : tensor<4xf32>", "}"]
    source = plugin_dir / "chain.mlir"
    source.write_text("\n".join(lines) + "\n")
    reduced = plugin_dir / "small.mlir"
    result = run_opt(
        capsys, "--load-plugin", "drop_neg_plugin", str(source), "-p", "test-drop-neg",
        "--check-equivalence=3", "--rtol", "0.001", f"--reduce={reduced}",
    )  # fmt: skip
    assert result.status == 1
    text = reduced.read_text()
    ops = int(re.search(r"changes \((\d+) ops\)", text).group(1))
    assert ops < 5
    # what was reduced: ops, and the shapes of the arguments (no constants here)
    summary = f"{ops} ops (from 50); arguments: 1xf32 (from 4xf32, 4xf32)"
    assert f"reduced to {summary}: {reduced}" in result.err
    assert f"// Reduced to {summary}." in text
    assert "graph.neg" in text and "graph.add" not in text
    run_line = next(line for line in text.splitlines() if line.startswith("// RUN:"))
    assert "--load-plugin drop_neg_plugin --rtol 0.001 -p 'test-drop-neg' --check-equivalence=3" in run_line
    # the reduced program still shows the difference
    again = run_opt(
        capsys, "--load-plugin", "drop_neg_plugin", str(reduced), "-p", "test-drop-neg",
        "--check-equivalence=3", "--rtol", "0.001",
    )  # fmt: skip
    assert again.status == 1 and "changes the result of the program" in again.err
    # ... and so does its RUN line, run as lit would in a new strato-opt process: the
    # plugin, the tolerance and the check all come from the line itself
    words = shlex.split(run_line.removeprefix("// RUN: "))
    assert words[:2] == ["not", "strato-opt"] and words[-4:] == ["2>&1", "|", "filecheck", "%s"]
    args = [str(reduced) if word == "%s" else word for word in words[2:-4]]
    root = str(Path(strato_opt.__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), root])}
    done = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_opt", *args],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "error: pass 'test-drop-neg' changes the result of the program" in done.stderr
