"""The reference pages of the documentation, generated from the code on every build.

Each function returns the Markdown of one page from what strato registers: the op
definitions and their docstrings (one page a dialect), the pass registry and the pass
docstrings, the argument parsers of `strato-opt` and `strato`, the ONNX importer's
table, and `strato.api.EXPORTS`. `docs/hooks.py` adds the pages to the mkdocs build, so
they never go stale; `tests/unit/test_docs.py` checks that nothing registered is missing.

    python docs/gen_reference.py OUT_DIR      # write the pages without mkdocs
"""

from __future__ import annotations

import argparse
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from xdsl.ir import Dialect, Operation

REFERENCE = "reference"


# -- helpers ------------------------------------------------------------------------


def docstring(obj: object) -> str:
    """The dedented docstring of `obj` (its own, not one it inherits), or ''."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if doc else ""


def as_markdown(doc: str) -> str:
    """A docstring as Markdown: indented blocks (IR and code examples) become fenced
    code blocks, so Markdown never reads IR as text."""
    lines = doc.splitlines()
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        while block and not block[-1].strip():
            block.pop()
        if block:
            out.extend(["", "```", *textwrap.dedent("\n".join(block)).splitlines(), "```", ""])
        block.clear()

    for line in lines:
        indented = line.startswith("    ") or (block and not line.strip())
        if indented and (block or not out or not out[-1].strip() or out[-1].rstrip().endswith(":")):
            block.append(line)
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out).strip() + "\n"


def summary(doc: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(doc.split("\n\n")[0].split()) if doc else "(no description)"


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def anchor(name: str) -> str:
    """The id mkdocs gives a heading `name` (toc's slugify: lower case, dots dropped)."""
    keep = "".join(c if c.isalnum() or c in "-_ " else "" for c in name.lower())
    return "-".join(keep.split())


# -- dialects -----------------------------------------------------------------------


def strato_dialects() -> list[tuple[Dialect, str]]:
    """strato's dialects with the module whose docstring introduces each."""
    from strato.context import STRATO_DIALECTS

    modules = {"graph": "strato.dialects.graph", "te": "strato.dialects.te",
               "loop": "strato.dialects.loop", "vta": "strato.dialects.vta"}
    return [(dialect, modules[dialect.name]) for dialect in STRATO_DIALECTS]


def op_section(op: type[Operation]) -> str:
    lines = [f"### {op.name}", ""]
    doc = docstring(op)
    lines.append(as_markdown(doc) if doc else "(no description)\n")
    facts = [f"class `{op.__module__}.{op.__qualname__}`"]
    kind = getattr(op, "PATTERN_KIND", None)
    if kind is not None:
        facts.append(f"fusion pattern kind: {kind.value}")
    format_ = getattr(op, "assembly_format", None)
    if isinstance(format_, str):
        facts.append(f"syntax: `{format_}`")
    facts.append(f"constructor: `{constructor(op)}`")
    lines += [f"- {fact}" for fact in facts]
    return "\n".join(lines) + "\n"


def constructor(op: type[Operation]) -> str:
    """How Python builds the op: its class's own constructor, or xDSL's generic one."""
    import inspect

    try:
        signature = inspect.signature(op.__init__)
    except (TypeError, ValueError):
        return f"{op.__name__}(...)"
    parameters = [p for name, p in signature.parameters.items() if name != "self"]
    text = ", ".join(str(p).replace("'", "") for p in parameters)
    return f"{op.__name__}({text})"


def dialect_page(dialect: Dialect, module_name: str) -> str:
    import importlib

    module = importlib.import_module(module_name)
    ops = sorted(dialect.operations, key=lambda op: op.name)
    lines = [f"# The `{dialect.name}` dialect", "", as_markdown(docstring(module)), "## Ops", ""]
    lines.append(table(["op", "summary"], ((f"[{op.name}](#{anchor(op.name)})", summary(docstring(op))) for op in ops)))
    lines += [op_section(op) for op in ops]
    return "\n".join(lines)


# -- passes -------------------------------------------------------------------------


def pass_summary(name: str, cls: type) -> str:
    from strato.tools.strato_opt import UPSTREAM_SUMMARIES

    return UPSTREAM_SUMMARIES.get(name) or summary(docstring(cls))


def registered_passes() -> dict[str, tuple[type, str]]:
    """Every pass of strato's registry and those plugins registered: name -> (class,
    source)."""
    from strato.pipeline import all_passes as get_all_passes
    from strato.plugins import pass_source

    return {name: (factory(), pass_source(name) or "xDSL") for name, factory in get_all_passes().items()}


def pass_options(cls: type) -> list[tuple[str, str, str]]:
    from xdsl.passes import get_pass_option_infos

    return [
        (info.name.replace("_", "-"), info.expected_type.strip("'"), "" if info.default_value is None else str(info.default_value))
        for info in get_pass_option_infos(cls)
    ]


def pass_reference() -> str:
    passes = registered_passes()
    lines = [
        "# Passes",
        "",
        "Every pass `strato-opt -p` and the pipelines accept, generated from the pass "
        "registry (`strato/transforms/__init__.py`) and the passes' docstrings: the "
        "summary, the options (`-p 'name{option=value}'`), then what the pass requires "
        "and leaves, with IR before and after.",
        "",
        table(["pass", "from", "summary"], ((f"[{n}](#{anchor(n)})", src, pass_summary(n, c)) for n, (c, src) in sorted(passes.items()))),
    ]
    for name, (cls, source) in sorted(passes.items()):
        lines += [f"## {name}", "", f"From {source}: `{cls.__module__}.{cls.__qualname__}`.", ""]
        lines.append(as_markdown(docstring(cls) or pass_summary(name, cls)))
        options = pass_options(cls)
        if options:
            lines += ["", "Options:", "", table(["option", "type", "default"], options)]
        module_doc = docstring(sys.modules[cls.__module__])
        if source == "strato" and module_doc:
            lines += ["", as_markdown(module_doc)]
        lines.append("")
    return "\n".join(lines)


# -- command lines ------------------------------------------------------------------


def parser_table(parser: argparse.ArgumentParser) -> str:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(action.option_strings) or (action.metavar or action.dest)
        metavar = "" if action.nargs == 0 or not action.option_strings else (action.metavar or action.dest.upper())
        rows.append((f"`{names}`", f"`{metavar}`" if metavar else "", action.help or ""))
    return table(["argument", "value", "meaning"], rows)


def strato_opt_parser() -> argparse.ArgumentParser:
    """strato-opt's parser, built by its own `register_all_arguments`."""
    from strato.tools.strato_opt import TOOL, StratoOptMain

    parser = argparse.ArgumentParser(prog=TOOL, description="Parse, verify, transform and print strato IR.")
    StratoOptMain.register_all_arguments(StratoOptMain.__new__(StratoOptMain), parser)
    return parser


def cli_reference() -> str:
    from strato.tools import strato_cli, strato_opt

    lines = ["# Command line", "", "Generated from the argument parsers of `strato` and `strato-opt`.", ""]
    cli = strato_cli.build_parser()
    lines += ["## strato", "", as_markdown(docstring(strato_cli)), "", parser_table(cli)]
    sub = next(a for a in cli._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        lines += [f"### strato {name}", "", parser.description or "", "", parser_table(parser)]
    lines += ["## strato-opt", "", as_markdown(docstring(strato_opt)), "", parser_table(strato_opt_parser())]
    lines += ["The passes are listed on the [pass reference](passes.md) page.", ""]
    return "\n".join(lines)


# -- ONNX ---------------------------------------------------------------------------


def onnx_coverage() -> str:
    import onnx.defs

    from strato.frontends.onnx.op_table import ONNX_CONVERTERS
    from strato.runtime.host_ops import HOST_OPS

    schemas: dict[str, onnx.defs.OpSchema] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx") and not schema.deprecated:
            current = schemas.get(schema.name)
            if current is None or schema.since_version > current.since_version:
                schemas[schema.name] = schema
    names = sorted(set(schemas) | set(ONNX_CONVERTERS))
    rows = []
    for name in names:
        converter = ONNX_CONVERTERS.get(name)
        since = str(schemas[name].since_version) if name in schemas else ""
        note = summary(docstring(converter)) if converter is not None and docstring(converter) else ""
        if converter is None and name in HOST_OPS:
            rows.append((name, since, "host", summary(docstring(HOST_OPS[name]))))
            continue
        rows.append((name, since, "yes" if converter is not None else "no", note if converter is not None else ""))
    supported = sum(1 for name in names if name in ONNX_CONVERTERS)
    return "\n".join([
        "# ONNX operator coverage",
        "",
        f"strato imports {supported} of the {len(schemas)} operators of the default ONNX "
        "domain (`onnx` " + onnx.__version__ + "), generated from the importer's table "
        "(`strato/frontends/onnx/op_table.py`). Operators marked `host` have output sizes "
        "that depend on the data, or transform strings: `strato.compile` runs them on the "
        "host between compiled parts of the model (`strato.staged`), as it does an operator marked `yes` whose "
        "shape-deciding input (a Range's bounds, a Reshape's shape, a TopK's K, ...) is known only at run time "
        "(`strato.runtime.shape_ops`). A model with an operator marked `no` is "
        "refused at import with a one-line error naming the node.",
        "",
        table(["operator", "latest opset", "imported", "notes"], rows),
    ])


# -- the plugin API -----------------------------------------------------------------


def api_reference() -> str:
    from strato import api

    lines = [
        "# Python API for plugins (`strato.api`)",
        "",
        as_markdown(docstring(api)),
        "## Every export",
        "",
        table(["name", "what it is"], ((f"`api.{n}`", api.EXPORTS[n]) for n in api.__all__)),
        "## Functions defined by the facade",
        "",
        "::: strato.api.make_dialect",
        "",
        "::: strato.api.rewrite_module",
        "",
        "::: strato.api.check_equivalence",
        "",
        "::: strato.api.constant_tensor",
        "",
        "## Plugins",
        "",
        "::: strato.plugins",
        "    options:",
        "      members: [register_dialect, register_pass, register_target, register_template, register_intrinsic, load_plugin, load_plugins, PluginError]",
        "",
    ]
    return "\n".join(lines)


# -- all pages ----------------------------------------------------------------------


def generated_pages() -> dict[str, str]:
    """Path under docs/ -> Markdown of every generated page."""
    pages: dict[str, Callable[[], str]] = {
        f"{REFERENCE}/passes.md": pass_reference,
        f"{REFERENCE}/cli.md": cli_reference,
        f"{REFERENCE}/onnx.md": onnx_coverage,
        f"{REFERENCE}/api.md": api_reference,
    }
    result = {path: make() for path, make in pages.items()}
    for dialect, module in strato_dialects():
        result[f"{REFERENCE}/dialect-{dialect.name}.md"] = dialect_page(dialect, module)
    return result


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "site-reference")
    for path, text in generated_pages().items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(target)
