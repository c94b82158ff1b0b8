"""The documentation: the generated reference holds every registered op, pass, command
line option, ONNX converter and API export; every page the site lists exists; and the
Python code blocks of the tutorials run as written. (The generators are tested directly,
so mkdocs itself is not needed here.)"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return gen.generated_pages()


def headings(text: str, level: int) -> set[str]:
    return set(re.findall(rf"^{'#' * level} (.+)$", text, flags=re.MULTILINE))


def test_every_op_of_every_strato_dialect_has_its_entry(pages: dict[str, str]) -> None:
    from strato.context import STRATO_DIALECTS

    for dialect in STRATO_DIALECTS:
        page = pages[f"reference/dialect-{dialect.name}.md"]
        names = {op.name for op in dialect.operations}
        assert names and headings(page, 3) == names
        for op in dialect.operations:
            doc = gen.docstring(op)
            if doc:
                assert gen.summary(doc) in page, op.name
            assert f"constructor: `{op.__name__}(" in page, op.name
    graph_page = pages["reference/dialect-graph.md"]
    assert "constructor: `MulOp(lhs: SSAValue | Operation, rhs: SSAValue | Operation)`" in graph_page
    assert "constructor: `ConstantOp(value: DenseIntOrFPElementsAttr)`" in graph_page


def test_every_registered_pass_has_its_entry_with_options(pages: dict[str, str]) -> None:
    from xdsl.passes import get_pass_option_infos

    from strato.transforms import PASS_REGISTRY, get_all_passes

    page = pages["reference/passes.md"]
    assert set(PASS_REGISTRY) <= set(get_all_passes())
    assert headings(page, 2) == set(get_all_passes())
    for name, factory in get_all_passes().items():
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for info in get_pass_option_infos(factory()):
            assert f"| {info.name.replace('_', '-')} |" in section, (name, info.name)
    # a docstring's before/after IR is kept as code
    fuse = page.split("\n## graph-fuse-ops\n", 1)[1].split("\n## ", 1)[0]
    assert "```" in fuse and "graph.fused" in fuse


def test_a_plugin_pass_joins_the_reference(pages: dict[str, str]) -> None:
    from dataclasses import dataclass

    from strato import api, plugins

    @dataclass(frozen=True)
    class DocsProbePass(api.Pass):
        """A pass only this test registers."""

        name = "docs-probe"

        def apply(self, ctx, op):
            pass

    from strato.transforms import remove_pass

    api.register_pass(DocsProbePass, source="probe-plugin")
    try:
        page = gen.pass_reference()
    finally:
        plugins._plugin_passes.pop("docs-probe", None)
        remove_pass("docs-probe")
    assert "| [docs-probe](#docs-probe) | probe-plugin | A pass only this test registers. |" in page


def test_every_command_line_option_is_documented(pages: dict[str, str]) -> None:
    import argparse

    from strato.tools.strato_cli import build_parser

    page = pages["reference/cli.md"]
    parsers = [gen.strato_opt_parser(), build_parser()]
    sub = next(a for a in parsers[1]._actions if isinstance(a, argparse._SubParsersAction))
    parsers += list(sub.choices.values())
    for name in sub.choices:
        assert f"### strato {name}" in page
    for parser in parsers:
        for action in parser._actions:
            for option in action.option_strings:
                assert option in page, option
    assert "--load-plugin" in page and "--list-dialects" in page


def test_the_onnx_table_marks_every_converter(pages: dict[str, str]) -> None:
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    page = pages["reference/onnx.md"]
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| ") and "---" not in line}
    for name in ONNX_CONVERTERS:
        assert "| yes |" in rows[name], name
    assert "| host |" in rows["NonZero"]  # data-dependent shapes: between compiled parts
    assert "| no |" in rows["ImageDecoder"]
    assert f"strato imports {len(ONNX_CONVERTERS)} of the" in page


def test_the_api_page_lists_every_export(pages: dict[str, str]) -> None:
    from strato import api

    page = pages["reference/api.md"]
    for name in api.__all__:
        assert f"| `api.{name}` | {api.EXPORTS[name]}" in page.replace("\\|", "|")


def test_every_page_of_the_site_exists(pages: dict[str, str]) -> None:
    listed = re.findall(r":\s*([\w/-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.MULTILINE)
    assert "index.md" in listed and "reference/passes.md" in listed
    for path in listed:
        assert (DOCS / path).is_file() or path in pages, path
    assert set(pages) <= set(listed)
    for tutorial in (DOCS / "tutorials").glob("*.md"):
        assert f"tutorials/{tutorial.name}" in listed, tutorial.name


def python_blocks(path: Path) -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL))


PAGES_WITH_CODE = ["index.md", *sorted(f"tutorials/{p.name}" for p in (DOCS / "tutorials").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_the_python_blocks_of_a_page_run(page: str, tmp_path: Path) -> None:
    code = python_blocks(DOCS / page)
    assert code.strip(), f"{page} has no Python code block"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]


FACADE_ONLY = ("tutorials/adding-an-op.md", "tutorials/writing-a-pass.md")
"""The plugin author's tutorials: strato.api is all they may use of strato."""


def _imported_modules(code: str) -> set[str]:
    import ast

    modules: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_tutorials_stay_on_strato_and_its_facade(page: str) -> None:
    """No page reaches into xDSL (strato.api follows it when it moves); the plugin
    author's tutorials use nothing of strato beyond strato.api."""
    modules = _imported_modules(python_blocks(DOCS / page))
    assert not {m for m in modules if m == "xdsl" or m.startswith("xdsl.")}, modules
    if page in FACADE_ONLY:
        inside = {m for m in modules if m.startswith("strato.")}
        assert inside <= {"strato.api"}, inside
