"""strato-opt: parse, verify, transform and print strato IR, like mlir-opt.

    strato-opt model.mlir -p convert-graph-to-te,convert-te-to-loops
    strato-opt model.mlir --pass-pipeline='builtin.module(graph-fuse-ops,convert-graph-to-te)'
    strato-opt invalid.mlir --split-input-file --verify-diagnostics
    strato-opt model.mlir -t 'interpret{function=main seed=0}'
    strato-opt --list-passes

Built on xDSL's opt driver (`xDSLOptMain`), with mlir-opt's behaviour towards users:

- every error a user can cause is one line, `file:line:col: error: reason` for bad IR
  (the line of the op, for verifier and pass errors too; the start of the module, or of
  its chunk, for errors about the whole module) or `strato-opt: error: reason` for a bad
  command line; the exit status is then 1 and no traceback is printed. That includes
  hostile input: nesting deeper than the recursive parser goes, constants or shapes too
  large to build, an unterminated string on a long line (lexed in linear time, the first
  token too);
- `--split-input-file` processes each `// -----` chunk on its own and goes on after a
  failing chunk; `--verify-diagnostics` checks the `expected-error` annotations, fails
  when they do not match the diagnostics exactly, and fails on an annotation it cannot
  read (an unknown kind, a bad `@` designator, no `}}`, an invalid `-re` regex);
- the pipeline is given once, as `-p a,b{opt=1}` or as mlir-opt's
  `--pass-pipeline='builtin.module(a,b{opt=1})'`: a second one is an error (mlir-opt
  rejects a second --pass-pipeline), and so is an option repeated within one pass;
- `--print-ir-before-all`, `--print-ir-after-all`, `--print-ir-after-change`,
  `--print-ir-after-failure` and `--time-passes` write to stderr; the mlir-opt spellings
  `--mlir-print-ir-after-all`, `--mlir-print-op-generic`, `--mlir-timing`, ... are
  aliases. IR dumps start with a `// -----// IR Dump ...` line, which is a split marker,
  so a dump reads back with `--split-input-file`. `--mlir-elide-elementsattrs-if-larger=N`
  prints larger constants as mlir-opt does, `dense_resource<__elided__>`; such text is
  marked as incomplete and does not read back into a program;
- `-o FILE` writes the result whole or not at all (a temporary file renamed over FILE),
  and not at all when a chunk failed; `-o -` is stdout, `-o ''` an error;
- `-t interpret` refuses, with a located error, what its interpreters cannot run
  (several blocks, recursion, buffers or loop nests too large) and runs compiled code in
  a child process, so a crash of that code is a diagnostic naming the function;
- an exception raised in a plugin's code (its pass, target or template) is reported as
  `strato-opt: error in plugin 'NAME'` with the file, line and function that raised it;
- anything else that goes wrong is a bug, reported as `strato-opt: internal error`
  (`--debug-traceback` shows the Python traceback).
"""

from __future__ import annotations

import argparse
import difflib
import errno
import io
import os
import re
import shlex
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import IO, Any, NoReturn

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, UnknownLoc
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass, PassPipeline, get_pass_option_infos
from xdsl.printer import Printer
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.arg_spec import (
    ArgSpec,
    PipelineLexer,
    SpecTokenKind,
    parse_pipeline,
    parse_spec,
)
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.tools.diagnostics_check import (
    Diagnostic,
    MalformedAnnotation,
    check_diagnostics,
    parse_expectations,
)
from strato.tools.pass_timing import PassTimer
from strato.tools.source_locations import (
    LineIndex,
    LocatingParser,
    SourceLocation,
    deepest_op,
    file_location,
    find_failing_op,
    location_of,
    one_line,
)

TOOL = "strato-opt"

SPLIT_MARKER = "// -----"

# Upstream xDSL passes that apply to the dialects strato uses; the other upstream passes
# target dialects strato never loads (riscv, stencil, csl, ...). strato's own names win.
UPSTREAM_PASSES = (
    "canonicalize",
    "cse",
    "dce",
    "licm",
    "convert-scf-to-cf",
    "reconcile-unrealized-casts",
    "scf-for-loop-range-folding",
    "scf-for-loop-unroll",
)


# One-sentence summaries of the upstream passes whose docstrings give none.
UPSTREAM_SUMMARIES = {
    "cse": "Eliminate common subexpressions: ops equal to an earlier op are replaced by it.",
    "dce": "Remove ops without side effects whose results are unused.",
    "reconcile-unrealized-casts": "Fold chains of builtin.unrealized_conversion_cast "
    "ops and remove the casts that cancel out.",
    "scf-for-loop-range-folding": "Fold additions and multiplications of an scf.for "
    "induction variable into the loop's bounds.",
}


class UsageError(Exception):
    """A bad command line: printed as `strato-opt: error: <message>`."""


class InternalFailure(Exception):
    """A bug surfaced while running `stage` (a pass, a target); the cause is chained."""

    def __init__(self, stage: str):
        super().__init__(stage)
        self.stage = stage


class ChunkFailure(Exception):
    """Ends the processing of one input chunk with a diagnostic."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(str(diagnostic))
        self.diagnostic = diagnostic


@dataclass(frozen=True)
class InputChunk:
    """A piece of the input; `first_line` is its first line in the whole file."""

    text: str
    first_line: int


def split_input(text: str) -> list[InputChunk]:
    """The chunks of `text` between lines that start with `// -----`."""
    chunks: list[InputChunk] = []
    lines: list[str] = []
    first_line = 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith(SPLIT_MARKER):
            chunks.append(InputChunk("\n".join(lines), first_line))
            lines = []
            first_line = number + 1
        else:
            lines.append(line)
    chunks.append(InputChunk("\n".join(lines), first_line))
    return chunks


class _ArgumentParser(argparse.ArgumentParser):
    """Reports a bad command line as one diagnostic line instead of usage text, and
    appends the pass and target catalogue to `--help` (built only when asked for)."""

    catalogue: Callable[[], str] | None = None

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def format_help(self) -> str:
        text = super().format_help()
        if self.catalogue is not None:
            text += "\n" + self.catalogue()
        return text


class _VersionAction(argparse.Action):
    def __init__(self, **kwargs: Any):
        super().__init__(nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from strato.tools.opt_launcher import version_text

        print(version_text())
        parser.exit()


class _OnceAction(argparse.Action):
    """An option that may be given once: a second pipeline would otherwise replace the
    first without a word (mlir-opt rejects a second --pass-pipeline too)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        for other in ("passes", "pass_pipeline"):
            if getattr(namespace, other, None) is not None:
                given = "-p/--passes" if other == "passes" else "--pass-pipeline"
                raise UsageError(
                    f"{option_string} given after {given}: write the whole pipeline in one "
                    "option, passes separated by ','"
                )
        setattr(namespace, self.dest, values)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _options_of(cls: type) -> str:
    """`name: type = default, ...` of a pass or target dataclass, in CLI spelling."""
    return ", ".join(
        f"{info.name.replace('_', '-')}: {info.expected_type.strip(chr(39))}"
        + ("" if info.default_value is None else f" = {info.default_value}")
        for info in get_pass_option_infos(cls)
    )


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number >= 1, got 0")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _summary(cls: type) -> str:
    """The first sentence of a class docstring, over as many lines as it takes
    (dataclasses invent a docstring from the signature: no description then)."""
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(cls.__name__ + "("):
        return "(no description)"
    paragraph = " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())
    match = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", paragraph)
    return paragraph if match is None else paragraph[: match.start() + 1]


ELIDED = "dense_resource<__elided__>"


class ElidingPrinter(Printer):
    """xDSL's printer that prints dense constants of more than `elide_larger_than`
    elements as MLIR does with --mlir-elide-elementsattrs-if-larger:
    `dense_resource<__elided__> : tensor<...>`, which marks the value as missing (the
    text still parses; an op that needs the values then reports it)."""

    def __init__(self, *args: Any, elide_larger_than: int | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.elide_larger_than = elide_larger_than

    def print_attribute(self, attribute: Attribute) -> None:
        limit = self.elide_larger_than
        if (
            limit is not None
            and isinstance(attribute, DenseIntOrFPElementsAttr)
            and len(attribute) > limit
        ):
            self.print_string(f"{ELIDED} : ")
            super().print_attribute(attribute.get_type())
            return
        super().print_attribute(attribute)


@dataclass(frozen=True)
class StratoMLIRTarget(MLIRTarget):
    """MLIR text, with large constants elided on request."""

    elide_elements_larger_than: int | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        printer = ElidingPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
            elide_larger_than=self.elide_elements_larger_than,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


class StratoOptMain(xDSLOptMain):
    """xDSL's opt driver with strato's context, passes and targets, located one-line
    diagnostics, split input, IR dumps, pass timing and a strict diagnostics check."""

    target: Target
    pipeline_labels: tuple[str, ...]
    timer: PassTimer | None

    def __init__(self, args: Sequence[str] | None = None):
        # xDSLOptMain.__init__ builds a plain ArgumentParser, which prints usage and
        # exits with status 2 on errors; the same steps with ours.
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        from strato.plugins import plugin_arguments

        self.load_plugins(plugin_arguments(sys.argv[1:] if args is None else args))
        self.ctx = make_context()
        self.register_all_dialects()
        self.register_all_passes()
        self.register_all_targets()

        parser = _ArgumentParser(
            prog=TOOL,
            description="Parse, verify, transform and print strato IR.",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.catalogue = self.catalogue
        self.register_all_arguments(parser)
        self.args = parser.parse_args(args=args)
        if self.args.output_file == "":
            raise UsageError("-o needs a file name ('-' for stdout)")
        if self.args.output_file == "-":
            self.args.output_file = None
        if self.args.reduce is not None and self.args.check_equivalence is None:
            raise UsageError("--reduce needs --check-equivalence")
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        self.timer = PassTimer() if self.args.time_passes else None

        self.setup_target()
        self.setup_pipeline()
        if self.timer is not None:
            for label in ("Parser", *self.pipeline_labels, "Verifier", "Output"):
                self.timer.declare(label)

    # -- registration -----------------------------------------------------------------

    def load_plugins(self, modules: Sequence[str]) -> None:
        """Load the installed plugins and `modules` (--load-plugin) before anything is
        registered; a plugin that fails is one warning line, and the rest goes on."""
        from strato.plugins import load_plugins

        for failure in load_plugins(list(modules)):
            sys.stdout.flush()
            print(f"{TOOL}: warning: {failure}", file=sys.stderr)

    def register_all_dialects(self) -> None:
        # make_context() already holds strato's dialects and the upstream ones it uses.
        pass

    def register_all_passes(self) -> None:
        from xdsl.transforms import get_all_passes as get_upstream_passes

        from strato.pipeline import all_passes as get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)
        upstream = get_upstream_passes()
        for name in UPSTREAM_PASSES:
            if name in upstream and name not in self.available_passes:
                self.register_pass(name, upstream[name])

    def register_all_targets(self) -> None:
        """`-t`: MLIR text, the output of each registered compile target that has one
        (`Target.emitter`: the llvm target's LLVM IR, VTA's simulator run and bundle, a
        plugin's), and the interpreter."""

        def mlir() -> type[Target]:
            return StratoMLIRTarget

        def interpret() -> type[Target]:
            from strato.tools.interpret_target import InterpretTarget

            return InterpretTarget

        self.available_targets = {"mlir": mlir}
        from strato.targets.registry import TargetSpec, registered_targets

        for name, (compile_target, _) in registered_targets().items():
            if name in ("mlir", "interpret"):
                continue

            def emitter(cls=compile_target, name=name) -> type[Target]:
                emitter_class = cls(TargetSpec(name)).emitter()
                if emitter_class is None:
                    raise UsageError(f"target '{name}' has no IR output; use `strato compile`")
                if emitter_class.name != name:
                    # an emitter shared with another target answers to this name too
                    emitter_class = type(emitter_class.__name__, (emitter_class,), {"name": name})
                return emitter_class

            self.available_targets[name] = emitter
        self.available_targets["interpret"] = interpret

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        add = arg_parser.add_argument
        add("input_file", nargs="?", default="-", help="input file (default: stdin)")
        add("-o", "--output-file", metavar="FILE", help="output file ('-' or default: stdout)")
        add(
            "-p",
            "--passes",
            action=_OnceAction,
            metavar="PIPELINE",
            help="comma-separated passes with options, e.g. 'a,b{opt=1}' (listed below); "
            "given once",
        )
        add(
            "--pass-pipeline",
            action=_OnceAction,
            metavar="PIPELINE",
            help="the pipeline in mlir-opt's spelling, 'builtin.module(a,b{opt=1})'",
        )
        add("--list-passes", action="store_true", help="list the passes and exit")
        add(
            "--list-dialects",
            action="store_true",
            help="list the dialects, where each comes from and its ops, and exit",
        )
        add(
            "--load-plugin",
            action="append",
            default=[],
            metavar="MODULE",
            help="load a plugin: a module that registers dialects, passes or targets, or "
            "MODULE:FUNCTION to call (repeatable; installed plugins load by themselves)",
        )
        add(
            "-t",
            "--target",
            default="mlir",
            metavar="TARGET",
            help="output: mlir (default), llvm, interpret{function=NAME seed=N} or vta (-o DIR: bundle)",
        )
        add(
            "--split-input-file",
            action="store_true",
            help="process each '// -----' chunk of the input on its own",
        )
        add(
            "--verify-diagnostics",
            action="store_true",
            help="check the diagnostics against the expected-error annotations",
        )
        add(
            "--print-ir-before-all",
            "--mlir-print-ir-before-all",
            action="store_true",
            help="dump the IR before each pass (to stderr)",
        )
        add(
            "--print-ir-after-all",
            "--mlir-print-ir-after-all",
            action="store_true",
            help="dump the IR after each pass (to stderr)",
        )
        add(
            "--print-ir-after-change",
            "--mlir-print-ir-after-change",
            action="store_true",
            help="dump the IR after each pass that changed it (to stderr)",
        )
        add(
            "--print-ir-after-failure",
            "--mlir-print-ir-after-failure",
            action="store_true",
            help="dump the IR a failing pass leaves behind (to stderr)",
        )
        add(
            "--print-ir-diff",
            action="store_true",
            help="after each pass that changed the IR, a unified diff against the IR "
            "before it (to stderr)",
        )
        add(
            "--check-equivalence",
            nargs="?",
            const=8,
            type=_positive_int,
            metavar="N",
            help="interpret the IR before and after each pass on the same N random inputs "
            "(default 8, half with edge values) and report the first pass that changes a "
            "result (exit 1)",
        )
        add(
            "--rtol",
            type=_non_negative_float,
            default=1e-4,
            metavar="X",
            help="relative tolerance of --check-equivalence on floats (default 1e-4; "
            "integers compare exactly)",
        )
        add(
            "--atol",
            type=_non_negative_float,
            default=1e-5,
            metavar="X",
            help="absolute tolerance of --check-equivalence on floats (default 1e-5)",
        )
        add(
            "--reduce",
            nargs="?",
            const="",
            metavar="FILE",
            help="with --check-equivalence: shrink a program a pass changes to a minimal "
            "one that still shows the difference, written as a lit test to FILE "
            "(default: INPUT.reduced.mlir)",
        )
        add(
            "--time-passes",
            "--mlir-timing",
            action="store_true",
            help="report the time of each pass",
        )
        add(
            "--print-op-generic",
            "--mlir-print-op-generic",
            action="store_true",
            help="print ops in generic form",
        )
        add(
            "--print-debuginfo",
            "--mlir-print-debuginfo",
            action="store_true",
            help="print op locations",
        )
        add(
            "--mlir-elide-elementsattrs-if-larger",
            type=_non_negative_int,
            metavar="N",
            help="print dense constants of more than N elements as "
            "'dense_resource<__elided__>' (as mlir-opt; such output does not read back)",
        )
        add(
            "--print-no-properties",
            action="store_true",
            help="print properties as attributes",
        )
        add(
            "--allow-unregistered-dialect",
            action="store_true",
            help="accept ops of dialects strato does not know",
        )
        add(
            "--no-implicit-module",
            action="store_true",
            help="require the input to be a builtin.module",
        )
        add(
            "--disable-verify",
            action="store_true",
            help="do not verify the IR after parsing and after each pass",
        )
        add(
            "--debug-traceback",
            action="store_true",
            help="show the Python traceback of internal errors",
        )
        add("-v", "--version", action=_VersionAction, help="print the version and exit")

    def pass_list(self) -> str:
        """`--list-passes`: each pass with its one-sentence summary and its origin
        (strato, xdsl, or the plugin that registered it)."""
        from strato.plugins import pass_source

        lines = []
        width = max(map(len, self.available_passes), default=0) + 2
        origins = {name: pass_source(name) or "xDSL" for name in self.available_passes}
        origin_width = max(8, *(len(origin) + 2 for origin in origins.values()))
        for name, factory in sorted(self.available_passes.items()):
            try:
                summary = UPSTREAM_SUMMARIES.get(name) or _summary(factory())
            except Exception as err:
                summary = f"(cannot be loaded: {type(err).__name__}: {err})"
            lines.append(f"{name:<{width}}{origins[name]:<{origin_width}}{summary}")
        return "\n".join(lines) + "\n"

    def dialect_list(self) -> str:
        """`--list-dialects`: each dialect loaded in the context, where it comes from
        (strato, xdsl, or a plugin's name) and its ops."""
        from strato.plugins import registered_dialects

        dialects = registered_dialects()
        width = max(map(len, dialects), default=0) + 2
        origin_width = max(8, *(len(source) + 2 for _, source in dialects.values()))
        lines = []
        for name, (dialect, source) in sorted(dialects.items()):
            ops = ", ".join(sorted(op.name.split(".", 1)[1] for op in dialect.operations))
            lines.append(f"{name:<{width}}{source:<{origin_width}}{ops or '(no ops)'}")
        return "\n".join(lines) + "\n"

    def catalogue(self) -> str:
        """The pass and target lists of `--help`; imports strato's passes for their
        docstrings, so it is built only when help is asked for."""
        from strato.plugins import pass_source

        origins = {name: pass_source(name) or "xDSL" for name in self.available_passes}
        own = [n for n in self.available_passes if origins[n] == "strato"]
        plugins = sorted({o for o in origins.values() if o not in ("strato", "xDSL")})
        described = [n for n in self.available_passes if origins[n] != "xDSL"]
        width = max(28, *(len(name) + 2 for name in described))
        lines = ["strato passes:"]
        for plugin in [None, *plugins]:
            if plugin is not None:
                lines.append("")
                lines.append(f"passes of plugin '{plugin}':")
            for name in own if plugin is None else [n for n in described if origins[n] == plugin]:
                try:
                    pass_class = self.available_passes[name]()
                except Exception as err:
                    lines.append(f"  {name:<{width}}(cannot be loaded: {type(err).__name__}: {err})")
                    continue
                lines.append(f"  {name:<{width}}{_summary(pass_class)}")
                if options := _options_of(pass_class):
                    lines.append(f"  {'':<{width}}options: {options}")
        upstream = [name for name in self.available_passes if origins[name] == "xDSL"]
        lines.append("")
        lines.append("upstream xDSL passes:")
        lines.append("  " + ", ".join(upstream))
        lines.append("")
        lines.append("targets:")
        descriptions = {
            "mlir": "MLIR text (the default)",
            "interpret": "run the entry function on seeded random inputs, print its outputs",
        }
        from strato.targets.registry import registered_targets

        compile_targets = registered_targets()
        for name, factory in self.available_targets.items():
            summary = compile_targets[name][0].summary if name in compile_targets else ""
            if name == "mlir":
                lines.append(f"  {name:<{width}}{descriptions[name]}")
                continue  # its options are the --print-* flags
            try:
                output = factory()
                options = _options_of(output)
                described = _summary(output)
                if described != "(no description)":
                    summary = described
                summary = descriptions.get(name, summary)
            except Exception as err:
                options = f"(cannot be loaded: {type(err).__name__}: {err})"
            lines.append(f"  {name:<{width}}{summary}")
            if options:
                lines.append(f"  {'':<{width}}options: {options}")
        return "\n".join(lines) + "\n"

    # -- set-up -----------------------------------------------------------------------

    def setup_target(self) -> None:
        spec = _parse_one_spec(self.args.target, "target")
        factory = self.available_targets.get(spec.name)
        if factory is None:
            raise UsageError(
                f"unknown target '{spec.name}'; "
                f"choose from {', '.join(self.available_targets)}"
            )
        target_class = factory()
        try:
            target = target_class.from_spec(spec)
        except (ValueError, TypeError, DiagnosticException) as err:
            raise UsageError(f"bad options for target '{spec.name}': {_reason(err)}") from None
        if "directory" in {f.name for f in fields(target)} and self.args.output_file:
            # an output written as files into a directory (VTA's bundle): -o names the
            # directory, and what it prints goes to stdout
            target = replace(target, directory=self.args.output_file)
            self.args.output_file = None
        if spec.name == "mlir":
            target = replace(
                target,
                print_generic_format=self.args.print_op_generic,
                print_properties_as_attributes=self.args.print_no_properties,
                print_debuginfo=self.args.print_debuginfo,
                elide_elements_larger_than=self.args.mlir_elide_elementsattrs_if_larger,
            )
        self.target = target

    def setup_pipeline(self) -> None:
        if self.args.pass_pipeline is not None:
            text = _unwrap_module_pipeline(self.args.pass_pipeline)
        else:
            text = self.args.passes or ""
        try:
            specs = list(parse_pipeline(text))
        except ArgSpecParseError as err:
            raise UsageError(_pipeline_syntax_error(text, err)) from None
        _check_unique_options(text)
        passes: list[ModulePass] = []
        for spec in specs:
            factory = self.available_passes.get(spec.name)
            if factory is None:
                raise UsageError(self._unknown_pass_message(spec.name))
            pass_class = factory()
            try:
                passes.append(pass_class.from_spec(spec))
            except (ValueError, TypeError, DiagnosticException) as err:
                raise UsageError(
                    f"bad options for pass '{spec.name}': {_reason(err)}"
                ) from None
        self.pipeline = PassPipeline(tuple(passes))
        labels: list[str] = []
        for pass_ in passes:
            count = sum(1 for label in labels if label.split(" ")[0] == pass_.name)
            labels.append(pass_.name if count == 0 else f"{pass_.name} ({count + 1})")
        self.pipeline_labels = tuple(labels)

    def _unknown_pass_message(self, name: str) -> str:
        message = f"unknown pass '{name}'"
        close = difflib.get_close_matches(name, list(self.available_passes), n=1)
        if close:
            message += f"; did you mean '{close[0]}'?"
        return message + f" (see '{TOOL} --help' for the list)"

    # -- running ----------------------------------------------------------------------

    @property
    def input_name(self) -> str:
        return "<stdin>" if self.args.input_file == "-" else self.args.input_file

    def read_input(self) -> str:
        try:
            if self.args.input_file == "-":
                data = sys.stdin.buffer.read()
            else:
                with open(self.args.input_file, "rb") as stream:
                    data = stream.read()
        except OSError as err:
            raise UsageError(
                f"could not open input file '{self.args.input_file}': {err.strerror}"
            ) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise UsageError(
                f"input file '{self.input_name}' is not UTF-8 text (byte {err.start})"
            ) from None

    def run(self) -> int:
        """Process the input; the exit status: 0 on success, 1 when any chunk failed or
        an expected diagnostic did not match."""
        if self.args.list_passes:
            sys.stdout.write(self.pass_list())
            return 0
        if self.args.list_dialects:
            sys.stdout.write(self.dialect_list())
            return 0
        text = self.read_input()
        chunks = split_input(text) if self.args.split_input_file else [InputChunk(text, 1)]
        output: IO[str] = io.StringIO() if self.args.output_file else sys.stdout
        failed = False
        for index, chunk in enumerate(chunks):
            if index > 0:
                output.write(SPLIT_MARKER + "\n")
            result, diagnostics = self.process_chunk(chunk)
            if self.args.verify_diagnostics:
                file = self.input_name
                try:
                    expectations = parse_expectations(chunk.text, file, chunk.first_line)
                except MalformedAnnotation as malformed:
                    diagnostics = [malformed.diagnostic]
                else:
                    diagnostics = check_diagnostics(diagnostics, expectations, file)
            if diagnostics:
                output.flush()
                for diagnostic in diagnostics:
                    print(diagnostic, file=sys.stderr)
                failed = failed or any(d.severity == "error" for d in diagnostics)
            if result is not None:
                output.write(result)
        output.flush()
        if self.timer is not None:
            self.timer.report(sys.stderr)
        if self.args.output_file and not failed:
            # Like mlir-opt, a failed run leaves no output file behind.
            assert isinstance(output, io.StringIO)
            self._write_output_file(output.getvalue())
        return 1 if failed else 0

    def _write_output_file(self, text: str) -> None:
        try:
            write_output_file(self.args.output_file, text)
        except OSError as err:
            reason = err.strerror or str(err)
            raise UsageError(
                f"could not write output file '{self.args.output_file}': {reason}"
            ) from None

    def process_chunk(self, chunk: InputChunk) -> tuple[str | None, list[Diagnostic]]:
        """The printed result of one chunk, or the diagnostics that stopped it."""
        # Where a diagnostic about the whole module points: the start of the chunk, as
        # mlir-opt locates the implicit module at the start of its buffer.
        self.chunk_location = SourceLocation(self.input_name, chunk.first_line, 1)
        module: ModuleOp | None = None
        try:
            module = self.parse_input(chunk)
            self.verify(module, after=None)
            self.apply_passes(module)
            return self.output_resulting_program(module), []
        except ChunkFailure as failure:
            return None, [failure.diagnostic]
        except RecursionError:
            # Printing or dumping IR nested deeper than Python's recursion allows.
            return None, [self._too_deep(module, "strato-opt")]

    def _too_deep(self, module: ModuleOp | None, stage: str) -> Diagnostic:
        """The diagnostic for IR nested too deeply for `stage`, at its deepest op."""
        op, depth = (None, 0) if module is None else deepest_op(module)
        location = (None if op is None else location_of(op)) or self.chunk_location
        return Diagnostic(
            "error", f"IR nested {depth} ops deep is too deep for {stage}", location
        )

    def parse_input(self, chunk: InputChunk) -> ModuleOp:
        with self._timed("Parser"):
            lines = LineIndex(chunk.text, self.input_name, chunk.first_line)
            parser: LocatingParser | None = None
            try:
                # The constructor lexes the first token, which may already be malformed.
                parser = LocatingParser(self.ctx, chunk.text, self.input_name, chunk.first_line)
                if (
                    not self.args.no_implicit_module
                    and parser._current_token.kind == MLIRTokenKind.EOF
                ):
                    # Only comments and blank lines: an empty module, as in mlir-opt.
                    return ModuleOp([])
                module = parser.parse_module(not self.args.no_implicit_module)
                if parser._current_token.kind != MLIRTokenKind.EOF:
                    parser.raise_error("unexpected input after the top-level module")
            except RecursionError:
                position = 0 if parser is None else parser._current_token.span.start
                raise ChunkFailure(
                    Diagnostic(
                        "error",
                        "IR nested too deeply to parse (attributes, types or regions)",
                        lines.location_at(position),
                    )
                ) from None
            except ParseError as err:
                location = lines.location_at(err.span.start)
                message = one_line(err.msg)
                if ELIDED in chunk.text:
                    message += " (the input holds constants elided by " \
                        "--mlir-elide-elementsattrs-if-larger, which do not read back)"
                if "{first_char}" in message:
                    # xDSL leaves the placeholder of this message unformatted.
                    message = message.replace("{first_char}", f"'{chunk.text[err.span.start]}'")
                raise ChunkFailure(Diagnostic("error", message, location)) from None
            except DiagnosticException as err:
                # Raised outside an op (an alias definition, the module itself).
                diagnostic = self.diagnostic_of(err)
                location = diagnostic.location
                if isinstance(location, SourceLocation) and location.line is None:
                    position = 0 if parser is None else parser.pos
                    diagnostic = replace(diagnostic, location=lines.location_at(position))
                raise ChunkFailure(diagnostic) from None
            except Exception as err:
                # xDSL's parser failing on an input it does not diagnose: still the
                # input's fault, so report it where the parser stopped.
                if self.args.debug_traceback:
                    raise
                position = 0 if parser is None else parser._current_token.span.start
                detail = one_line(str(err)) or "no detail"
                raise ChunkFailure(
                    Diagnostic(
                        "error",
                        f"cannot parse this ({type(err).__name__}: {detail})",
                        lines.location_at(position),
                    )
                ) from None
        if isinstance(module.location, UnknownLoc):
            module.location = file_location(self.chunk_location)
        if any(block.args for block in module.body.blocks):
            raise ChunkFailure(
                Diagnostic(
                    "error",
                    "'builtin.module' body takes no block arguments",
                    location_of(module) or self.chunk_location,
                )
            )
        return module

    def verify(self, module: ModuleOp, after: str | None) -> None:
        """Verify `module`, reporting a failure at the op that does not verify."""
        if self.args.disable_verify:
            return
        with self._timed("Verifier"):
            try:
                module.verify()
            except RecursionError:
                stage = "the verifier" if after is None else f"the verifier after {after}"
                raise ChunkFailure(self._too_deep(module, stage)) from None
            except DiagnosticException as err:
                message = str(err)
                op = find_failing_op(module, message)
                text = one_line(message)
                if after is not None:
                    text += f" (in the IR produced by {after})"
                location = location_of(op) or self.chunk_location
                raise ChunkFailure(Diagnostic("error", text, location)) from None

    def apply_passes(self, prog: ModuleOp) -> None:
        checker = (
            None if self.args.check_equivalence is None else _EquivalenceCheck(self, prog)
        )
        for pass_, label in zip(self.pipeline.passes, self.pipeline_labels):
            if self.args.print_ir_before_all:
                self.dump_ir(f"Before {pass_.name}", prog)
            if pass_.name.startswith("graph-"):
                self._check_graph_functions(prog, pass_.name)
            before = (
                self._ir_text(prog)
                if self.args.print_ir_after_change or self.args.print_ir_diff
                else None
            )
            # the equivalence check prints the program before a pass only when the pass
            # changes a result (printing a model's weights twice a pass costs seconds)
            kept = prog.clone() if checker is not None and before is None else None
            try:
                with self._timed(label):
                    self._run_stage(
                        f"pass '{pass_.name}'", lambda: pass_.apply(self.ctx, prog), prog
                    )
                self.verify(prog, after=pass_.name)
            except ChunkFailure:
                if self.args.print_ir_after_failure:
                    self.dump_ir(f"After {pass_.name} Failed", prog)
                raise
            after = None if before is None else self._ir_text(prog)
            if self.args.print_ir_after_all:
                self.dump_ir(f"After {pass_.name}", prog)
            elif self.args.print_ir_after_change and after != before:
                self.dump_ir(f"After {pass_.name}", prog)
            if self.args.print_ir_diff and after != before:
                assert before is not None and after is not None
                self.diff_ir(label, before, after)
            if checker is not None:
                checker.after(label, pass_, partial(self._text_before, before, kept), prog)
        if checker is not None:
            checker.finish()

    def _text_before(self, text: str | None, kept: ModuleOp | None) -> str:
        """The program before a pass: its text when it was printed, else `kept` printed."""
        if text is not None:
            return text
        assert kept is not None
        return self._ir_text(kept)

    def _check_graph_functions(self, prog: ModuleOp, pass_name: str) -> None:
        """Graph-level passes take functions of one block: graph ops have no control
        flow, and the passes read a function as one list of ops."""
        for op in prog.walk():
            if isinstance(op, FuncOp) and len(op.body.blocks) > 1:
                location = location_of(op) or self.chunk_location
                raise ChunkFailure(
                    Diagnostic(
                        "error",
                        f"@{op.sym_name.data} has {len(op.body.blocks)} blocks; graph-level "
                        f"passes ({pass_name}) take functions of a single block",
                        location,
                    )
                )

    def output_resulting_program(self, prog: ModuleOp) -> str:
        stream = io.StringIO()
        with self._timed("Output"):
            self._run_stage(
                f"target '{self.target.name}'",
                lambda: self.target.emit(self.ctx, prog, stream),
                prog,
            )
        return stream.getvalue()

    def _run_stage(self, stage: str, action: Callable[[], None], prog: ModuleOp) -> None:
        try:
            action()
        except DiagnosticException as err:
            raise ChunkFailure(self.diagnostic_of(err)) from None
        except ChunkFailure:
            raise
        except RecursionError:
            raise ChunkFailure(self._too_deep(prog, stage)) from None
        except MemoryError:
            raise ChunkFailure(
                Diagnostic("error", f"out of memory in {stage}", self.chunk_location)
            ) from None
        except Exception as err:
            raise InternalFailure(stage) from err

    def diagnostic_of(self, err: DiagnosticException) -> Diagnostic:
        """A user-facing error raised by strato or xDSL, at the op it names if any."""
        message = err.message if isinstance(err, StratoError) else str(err)
        location: SourceLocation | str | None = getattr(err, "location", None)
        if not isinstance(location, str | SourceLocation):
            location = None
        op = getattr(err, "op", None)
        if location is None and op is not None:
            location = location_of(op)
        if location is None:
            location = self.chunk_location
        return Diagnostic("error", one_line(message), location)

    def _printer(self, stream: IO[str]) -> Printer:
        return ElidingPrinter(
            stream=stream,
            print_generic_format=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
            elide_larger_than=self.args.mlir_elide_elementsattrs_if_larger,
        )

    def _ir_text(self, module: ModuleOp) -> str:
        stream = io.StringIO()
        self._printer(stream).print_op(module)
        return stream.getvalue()

    def dump_ir(self, when: str, module: ModuleOp) -> None:
        """Write `module` to stderr after a header that is also a split marker, so a
        dump reads back with `strato-opt --split-input-file`."""
        sys.stdout.flush()
        stream = sys.stderr
        stream.write(f"// -----// IR Dump {when} //----- //\n")
        self._printer(stream).print_op(module)
        stream.write("\n\n")
        stream.flush()

    def diff_ir(self, label: str, before: str, after: str) -> None:
        """A unified diff of the IR a pass changed, on stderr."""
        sys.stdout.flush()
        lines = difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"before {label}",
            tofile=f"after {label}",
        )
        for line in lines:
            sys.stderr.write(line if line.endswith("\n") else line + "\n")
        sys.stderr.flush()

    def _timed(self, label: str) -> AbstractContextManager[None]:
        return nullcontext() if self.timer is None else self.timer.time(label)


class _EquivalenceCheck:
    """--check-equivalence: the results of the IR before the pipeline on N inputs, then
    after each pass; the first pass that changes one stops the chunk with a diagnostic
    (and the details on stderr). IR the interpreters cannot run ends the check with a
    warning naming the ops."""

    def __init__(self, main: StratoOptMain, prog: ModuleOp):
        try:
            from strato.testing import equivalence
        except ImportError as err:
            raise UsageError(f"--check-equivalence: {err}") from None
        self.eq = equivalence
        self.main = main
        self.args = main.args
        self.original = prog.clone()
        self.passes: list[ModulePass] = []
        self.stopped = False
        self.checked = 0
        self.largest = 0.0
        self.reference: list | None = None
        try:
            self.inputs = equivalence.make_inputs(prog, self.args.check_equivalence)
            start = time.perf_counter()
            self.expected = equivalence.run_all(prog, self.inputs)
            self.reference = self.expected
            self._progress("the program before the pipeline", prog, time.perf_counter() - start)
        except equivalence.Unsupported as err:
            self._stop(f"cannot check equivalence: {err}")

    def _progress(self, what: str, prog: ModuleOp, seconds: float) -> None:
        """One line on stderr per program run: what, its level and size, how long."""
        ops = sum(1 for _ in prog.walk())
        level = self.eq.level_of(prog)
        print(
            f"{TOOL}: note: equivalence: ran {what} on {len(self.inputs)} input(s) "
            f"({level} level, {ops} ops, {self.eq.evaluator_of(prog)}): {seconds:.2f} s",
            file=sys.stderr,
            flush=True,
        )

    def finish(self) -> None:
        """The summary after a pipeline whose passes all kept the results."""
        if self.stopped or not self.checked:
            return
        print(
            f"{TOOL}: note: equivalence: {self.checked} pass(es) keep the results on "
            f"{len(self.inputs)} input(s) (largest relative difference from the input's "
            f"results: {self.largest:.3g})",
            file=sys.stderr,
            flush=True,
        )

    def _track_largest(self, actual: list) -> None:
        """The largest difference of `actual` from the input program's results, relative
        to the largest magnitude of each result (outcomes that are errors skipped)."""
        assert self.reference is not None
        for expected_run, actual_run in zip(self.reference, actual, strict=True):
            if isinstance(expected_run, str) or isinstance(actual_run, str):
                continue
            for e, a in zip(expected_run, actual_run, strict=True):
                e, a = np.asarray(e), np.asarray(a)
                if e.shape != a.shape or e.size == 0 or e.dtype.kind not in "fiub":
                    continue
                with np.errstate(all="ignore"):
                    e64, a64 = e.astype(np.float64), a.astype(np.float64)
                    finite = np.isfinite(e64) & np.isfinite(a64)
                    if not finite.any():
                        continue
                    scale = max(float(np.max(np.abs(e64[finite]))), 1e-30)
                    self.largest = max(self.largest, float(np.max(np.abs(a64 - e64)[finite])) / scale)

    def _stop(self, message: str) -> None:
        self.stopped = True
        sys.stdout.flush()
        print(Diagnostic("warning", message, self.main.chunk_location), file=sys.stderr)

    def after(
        self, label: str, pass_: ModulePass, before: Callable[[], str], prog: ModuleOp
    ) -> None:
        self.passes.append(pass_)
        if self.stopped:
            return
        eq = self.eq
        try:
            start = time.perf_counter()
            actual = eq.run_all(prog, self.inputs)
        except eq.Unsupported as err:
            self._stop(f"cannot check equivalence after {label}: {err}")
            return
        self._progress(f"the IR after {label}", prog, time.perf_counter() - start)
        found = eq.first_difference(self.inputs, self.expected, actual, self.args.rtol, self.args.atol)
        if found is None:
            self.expected = actual
            self.checked += 1
            self._track_largest(actual)
            return
        x, e, a, reason = found
        difference = eq.Difference(
            label, len(self.passes) - 1, x, e, a, before(), self.main._ir_text(prog), reason
        )
        sys.stdout.flush()
        sys.stderr.write(difference.describe() + "\n")
        if self.args.reduce is not None:
            self.reduce(pass_.name)
        raise ChunkFailure(
            Diagnostic(
                "error",
                f"pass '{label}' changes the result of the program: {reason}",
                self.main.chunk_location,
            )
        )

    def reduce(self, pass_name: str) -> None:
        from xdsl.parser import Parser

        from strato.testing.reduce import count_ops, describe_reduction, reduce_module

        eq, ctx, passes = self.eq, self.main.ctx, list(self.passes)
        n, rtol, atol = self.args.check_equivalence, self.args.rtol, self.args.atol

        def still_fails(candidate: ModuleOp) -> bool:
            # through its text, as the reproducer will be read: a candidate whose
            # printed form does not show the difference is not taken
            candidate = Parser(ctx, eq.ir_text(candidate)).parse_module()
            report = eq.check_pipeline(ctx, candidate, passes, n, rtol, atol)
            d = report.difference
            return d is not None and passes[d.index].name == pass_name

        small = reduce_module(self.original, still_fails)
        path = self.args.reduce or (
            "reduced.mlir" if self.args.input_file == "-" else self.args.input_file + ".reduced.mlir"
        )
        pipeline = ",".join(str(p.pipeline_pass_spec()) for p in passes)
        # every option the difference depends on, so that the RUN line reproduces it
        options = [f"--load-plugin {shlex.quote(module)}" for module in self.args.load_plugin]
        if self.args.allow_unregistered_dialect:
            options.append("--allow-unregistered-dialect")
        if rtol != 1e-4:
            options.append(f"--rtol {rtol!r}")
        if atol != 1e-5:
            options.append(f"--atol {atol!r}")
        extra = "".join(f" {option}" for option in options)
        summary = describe_reduction(self.original, small)
        # the program as written (never elided nor generic, whatever the options of
        # this run), read back and checked again below
        program = eq.ir_text(small)
        text = (
            f"// A program '{pass_name}' changes ({count_ops(small)} ops), reduced by "
            f"{TOOL} --reduce.\n"
            f"// Reduced to {summary}.\n"
            f"// RUN: not {TOOL} %s{extra} -p '{pipeline}' --check-equivalence={n} 2>&1 | filecheck %s\n"
            f"// CHECK: error: pass '{pass_name}{{{{.*}}}}' changes the result\n\n"
            + program
        )
        try:
            write_output_file(path, text)
        except OSError as err:
            raise UsageError(f"could not write '{path}': {err.strerror or err}") from None
        try:
            reproduces = still_fails(Parser(ctx, text).parse_module())
        except Exception as err:  # noqa: BLE001 - any failure to read or run it back
            reproduces = False
            print(f"{TOOL}: warning: reading back {path}: {err}", file=sys.stderr)
        if not reproduces:
            print(
                f"{TOOL}: warning: the reduced program in {path} does not show the "
                f"difference when run again",
                file=sys.stderr,
            )
        print(f"reduced to {summary}: {path}", file=sys.stderr)


def _write_text(stream: IO[str], text: str) -> None:
    stream.write(text)


def write_output_file(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all: a regular file is written to a
    temporary file in the same directory and renamed over `path` once complete, so a
    full disk or a kill leaves the previous file (or none), never a truncated one.
    Devices and pipes (/dev/stdout, a FIFO) are written directly."""
    if os.path.islink(path):
        path = os.path.realpath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8") as stream:
            _write_text(stream, text)
        return
    if os.path.exists(path):
        mode = stat.S_IMODE(os.stat(path).st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            _write_text(stream, text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


def _unwrap_module_pipeline(text: str) -> str:
    """The passes of `builtin.module(a,b{x=1})`, mlir-opt's spelling of a pipeline on
    the top-level module; strato's passes all run on the module."""
    match = re.fullmatch(r"\s*builtin\.module\s*\((?P<passes>.*)\)\s*", text, re.DOTALL)
    if match is None:
        raise UsageError(
            f"malformed pass pipeline '{text}': write it as 'builtin.module(pass,pass{{option=value}})'"
        )
    # mlir-opt reads `builtin.module(a, b)`: spaces between passes do not count.
    depth = 0
    kept: list[str] = []
    for char in match.group("passes"):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth > 0 or not char.isspace():
            kept.append(char)
    passes = "".join(kept)
    nested = re.search(r"[\w.]+\s*\(", passes)
    if nested is not None:
        raise UsageError(
            f"nested pipeline '{nested.group(0)}...)' in '{text}': strato's passes run on "
            "the module, list them directly in builtin.module(...)"
        )
    return passes


def _check_unique_options(text: str) -> None:
    """A pass option given twice (`pass{a=1 a=2}`) is an error rather than the last
    one silently winning. `text` is a pipeline that xDSL has parsed."""
    pass_name = ""
    in_options = False
    expect_key = False
    seen: set[str] = set()
    lexer = PipelineLexer(text)
    while (token := lexer.lex()).kind is not SpecTokenKind.EOF:
        kind = token.kind
        if not in_options:
            if kind is SpecTokenKind.IDENT:
                pass_name = token.span.text
            elif kind is SpecTokenKind.L_BRACE:
                in_options, expect_key, seen = True, True, set()
            continue
        if kind is SpecTokenKind.R_BRACE:
            in_options = False
        elif kind is SpecTokenKind.SPACE:
            expect_key = True
        elif kind is SpecTokenKind.IDENT and expect_key:
            key = token.span.text.replace("_", "-")
            if key in seen:
                raise UsageError(f"option '{key}' given twice to pass '{pass_name}'")
            seen.add(key)
            expect_key = False
        else:
            expect_key = False


def _parse_one_spec(text: str, what: str) -> ArgSpec:
    try:
        return parse_spec(text)
    except ArgSpecParseError as err:
        raise UsageError(f"malformed {what} '{text}': {_spec_syntax_reason(err)}") from None


def _spec_syntax_reason(err: ArgSpecParseError) -> str:
    """The reason of xDSL's multi-line spec syntax error (its last line) and column."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    column = next(
        (line.rsplit(":", 1)[-1] for line in lines if line.startswith("pass-pipeline:")),
        None,
    )
    reason = lines[-1] if lines else "syntax error"
    reason = reason[:1].lower() + reason[1:]
    return reason if column is None else f"{reason} (at column {column})"


def _pipeline_syntax_error(spec: str, err: ArgSpecParseError) -> str:
    return f"malformed pass pipeline '{spec}': {_spec_syntax_reason(err)}"


def _reason(err: BaseException) -> str:
    """xDSL's option errors as one lower-case line, with `<class 'int'>` shown as `int`."""
    message = err.message if isinstance(err, StratoError) else str(err)
    message = re.sub(r"<class '([\w.]+)'>", r"\1", one_line(message))
    return message[:1].lower() + message[1:]


def _report_internal_error(err: BaseException) -> None:
    stage = ""
    if isinstance(err, InternalFailure) and err.__cause__ is not None:
        stage = f" (in {err.stage})"
        err = err.__cause__
    from strato.plugins import plugin_frame

    message = one_line(str(err))
    detail = f"{type(err).__name__}: {message}" if message else type(err).__name__
    frame = plugin_frame(err)
    if frame is not None:
        print(f"{TOOL}: error in plugin '{frame.plugin}': {detail}{stage}", file=sys.stderr)
        print(
            f"{TOOL}: note: raised at {frame}; rerun with --debug-traceback for the Python traceback",
            file=sys.stderr,
        )
        return
    print(f"{TOOL}: internal error: {detail}{stage}", file=sys.stderr)
    print(
        f"{TOOL}: note: this is a bug in strato, not in the input; "
        "rerun with --debug-traceback for the Python traceback",
        file=sys.stderr,
    )


# Python's default recursion limit stops xDSL's recursive parser, verifier and printer
# at about 150 levels of nested regions; strato-opt runs on a thread with a large stack
# and a higher limit, and IR deeper than that is a located error, not a crash.
RECURSION_LIMIT = 20_000
THREAD_STACK_BYTES = 512 * 1024 * 1024


def main(argv: Sequence[str] | None = None, *, driver: type[StratoOptMain] | None = None) -> int:
    """Run strato-opt on `argv` (default: the command line); the exit status.

    `driver` is the `StratoOptMain` subclass to run (a tool built on strato-opt passes
    its own instead of patching this module); dialects, passes and targets are better
    added as plugins (`strato.plugins`), which the plain driver loads."""
    outcome: list[int] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            outcome.append(_main(argv, driver or StratoOptMain))
        except BaseException as err:  # re-raised on the calling thread
            failure.append(err)

    previous_limit = sys.getrecursionlimit()
    previous_stack = threading.stack_size(THREAD_STACK_BYTES)
    # Set before the thread starts: a thread takes the limit in force when it starts.
    sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
    try:
        worker = threading.Thread(target=body, name=TOOL, daemon=True)
        try:
            worker.start()
        except RuntimeError:
            # No room for the large stack (a small `ulimit -v`): run here, with the
            # default limit, where deep IR is reported rather than handled.
            sys.setrecursionlimit(previous_limit)
            body()
        else:
            worker.join()
    except KeyboardInterrupt:
        return 130
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if failure:
        raise failure[0]
    return outcome[0]


def _main(argv: Sequence[str] | None, driver: type[StratoOptMain] = StratoOptMain) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug_traceback = "--debug-traceback" in args
    try:
        return driver(args=args).run()
    except SystemExit as exit_:
        # --help and --version end through argparse's exit.
        return exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    except UsageError as err:
        sys.stdout.flush()
        print(f"{TOOL}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `| head`): silence the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except BaseException as err:
        if debug_traceback:
            raise
        sys.stdout.flush()
        _report_internal_error(err)
        return 1


if __name__ == "__main__":
    sys.exit(main())
