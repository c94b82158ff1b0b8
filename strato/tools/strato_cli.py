"""The `strato` command: compile and run ONNX models.

    strato run mlp --repeat 20          # compile, run on seeded random inputs, time, check
    strato run model.onnx --batch 8
    strato compile mlp -o mlp.ll        # write the LLVM IR

MODEL is a path to an ONNX file or the name of a built-in model (`strato.zoo`). Errors
in the input are one line, `strato: error: <where>: <why>`, with exit status 1; an
unexpected exception is reported as an internal error (exit 1; `--traceback` shows it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from strato.diagnostics import StratoError


@dataclass
class ResolvedModel:
    """What MODEL named: the ONNX model and how to describe it."""

    proto: onnx.ModelProto
    description: str
    location: str | None


def resolve_model(spec: str, batch: int | None, seed: int) -> ResolvedModel:
    """An ONNX file path or a zoo name -> the model, with `batch` applied."""
    from strato import zoo
    from strato.frontends.onnx.importer import load_model

    if os.path.exists(spec):
        proto, location = load_model(spec)
        if batch is not None:
            proto = with_batch(proto, batch, location)
        return ResolvedModel(proto, f"{spec} (ONNX file)", location)
    if spec in zoo.ZOO:
        proto = zoo.build_model(spec, batch=batch or 1, seed=seed)
        return ResolvedModel(proto, f"{spec} (zoo, batch {batch or 1}, seed {seed})", None)
    if spec.endswith(".onnx") or os.sep in spec:
        raise StratoError("no such file", location=spec)
    raise StratoError(
        f"unknown model '{spec}': not a file and not a zoo model "
        f"(zoo: {', '.join(zoo.zoo_names())})"
    )


def with_batch(proto: onnx.ModelProto, batch: int, location: str | None) -> onnx.ModelProto:
    """A copy of `proto` whose graph inputs have leading dimension `batch`."""
    if batch < 1:
        raise StratoError(f"--batch must be at least 1, got {batch}")
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    initializers = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        if not dims:
            raise StratoError(
                f"--batch: graph input '{value.name}' has no batch dimension", location=location
            )
        dims[0].Clear()
        dims[0].dim_value = batch
    # Shapes recorded for intermediate values may still say the old batch.
    del model.graph.value_info[:]
    for value in model.graph.output:
        dims = value.type.tensor_type.shape.dim
        if dims:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    return model


SMALL_INTEGER_BOUND = 8
"""Integer inputs (token ids, indices) are drawn from [0, SMALL_INTEGER_BOUND): valid
for any table of at least that many rows."""


def random_inputs(model, seed: int) -> list[np.ndarray]:
    """Seeded random inputs for a compiled model: standard normal floats, small
    non-negative integers, random booleans."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in model.inputs:
        if spec.dtype.kind == "f":
            arrays.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        elif spec.dtype.kind in "iu":
            arrays.append(rng.integers(0, SMALL_INTEGER_BOUND, spec.shape).astype(spec.dtype))
        else:
            arrays.append(rng.integers(0, 2, spec.shape).astype(spec.dtype))
    return arrays


def max_relative_error(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> float:
    """max |actual - expected| / max |expected| over all outputs (0 when both are 0)."""
    worst = 0.0
    for a, e in zip(actual, expected, strict=True):
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        diff = float(np.max(np.abs(a.astype(np.float64) - e))) if e.size else 0.0
        if diff == 0.0:
            continue
        worst = max(worst, diff / scale if scale > 0 else float("inf"))
    return worst


def reference_outputs(
    resolved: ResolvedModel, inputs: Sequence[np.ndarray], names: Sequence[str]
) -> tuple[list[np.ndarray], str]:
    """The outputs of onnxruntime when it is installed, else of strato's graph interpreter."""
    try:
        import onnxruntime
    except ImportError:
        from strato.frontends.onnx import import_model
        from strato.interpreters.graph import run_graph

        return run_graph(import_model(resolved.proto), inputs), "the graph interpreter (onnxruntime is not installed)"
    session = onnxruntime.InferenceSession(
        resolved.proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, dict(zip(names, inputs))), "onnxruntime"


def compile_resolved(resolved: ResolvedModel, args: argparse.Namespace):
    """strato.compile with the CLI's options; with --dump-ir, each stage's IR is written
    to DIR/NN-<stage>.mlir and the LLVM IR to DIR/NN-llvm-ir.ll."""
    try:
        return _compile(resolved, args)
    except StratoError as err:
        # The model was loaded from a file before compiling: name the file.
        if err.location is None:
            err.location = resolved.location
        raise


def _compile(resolved: ResolvedModel, args: argparse.Namespace):
    import strato

    if args.dump_ir is None:
        return strato.compile(resolved.proto, target=args.target)
    directory = args.dump_ir
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise StratoError(f"cannot create the dump directory: {err.strerror}", location=directory) from None
    stages: list[str] = []

    def dump(stage: str, module) -> None:
        stages.append(stage)
        path = os.path.join(directory, f"{len(stages):02d}-{stage}.mlir")
        with open(path, "w", encoding="utf-8") as file:
            file.write(f"{module}\n")

    model = strato.compile(resolved.proto, target=args.target, after_stage=dump)
    model.save_llvm_ir(os.path.join(directory, f"{len(stages) + 1:02d}-llvm-ir.ll"))
    return model


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------


def run_command(args: argparse.Namespace) -> int:
    from strato.runtime.timing import median_latency_ms

    if args.repeat < 1:
        raise StratoError(f"--repeat must be at least 1, got {args.repeat}")
    resolved = resolve_model(args.model, args.batch, args.seed)
    start = time.perf_counter()
    model = compile_resolved(resolved, args)
    compile_seconds = time.perf_counter() - start
    print(f"model: {resolved.description}, target {args.target}, compiled in {compile_seconds:.2f} s")

    inputs = random_inputs(model, args.seed)
    outputs = model(*inputs)
    for spec, array in zip(model.outputs, outputs):
        print(f"output '{spec.name}': shape {list(array.shape)} {array.dtype.name}")
    latency = median_latency_ms(lambda: model(*inputs), args.repeat)
    print(f"latency: median {latency:.3f} ms over {args.repeat} run(s)")

    expected, oracle = reference_outputs(resolved, inputs, model.input_names)
    error = max_relative_error(outputs, expected)
    print(f"max relative error vs {oracle}: {error:.3g}")
    return 0


def compile_command(args: argparse.Namespace) -> int:
    output = args.output or f"{_stem(args.model)}.ll"
    directory = os.path.dirname(output) or "."
    if not os.path.isdir(directory):
        raise StratoError(f"cannot write the LLVM IR: no directory {directory}", location=output)
    resolved = resolve_model(args.model, args.batch, args.seed)
    model = compile_resolved(resolved, args)
    try:
        model.save_llvm_ir(output)
    except OSError as err:
        raise StratoError(f"cannot write the LLVM IR: {err.strerror}", location=output) from None
    print(f"wrote {output} ({os.path.getsize(output)} bytes of LLVM IR)")
    return 0


def _stem(spec: str) -> str:
    base = os.path.basename(spec)
    return base[: -len(".onnx")] if base.endswith(".onnx") else base


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="strato", description="Compile and run ONNX models with strato."
    )
    parser.add_argument(
        "--traceback", action="store_true", help="show the Python traceback of internal errors"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_model_arguments(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("model", metavar="MODEL", help="an ONNX file or a zoo name (e.g. mlp)")
        sub.add_argument("--batch", type=int, default=None, help="batch size (leading dimension of the inputs)")
        sub.add_argument("--seed", type=int, default=0, help="seed of zoo weights and random inputs (default 0)")
        sub.add_argument("--target", default="llvm", help="code generation target (default llvm)")
        sub.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage into DIR")

    run = commands.add_parser(
        "run", help="compile MODEL, run it on random inputs, report latency and error"
    )
    add_model_arguments(run)
    run.add_argument("--repeat", type=int, default=10, help="timed runs (default 10)")
    run.set_defaults(handler=run_command)

    compile_ = commands.add_parser("compile", help="compile MODEL and write its LLVM IR")
    add_model_arguments(compile_)
    compile_.add_argument("-o", "--output", metavar="OUT.ll", help="output file (default MODEL.ll)")
    compile_.set_defaults(handler=compile_command)
    return parser


def format_error(err: StratoError) -> str:
    message = " ".join(str(err.message).split())
    where = f"{err.location}: " if err.location else ""
    return f"strato: error: {where}{message}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except StratoError as err:
        print(format_error(err), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("strato: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - everything else is a bug in strato
        if args.traceback:
            raise
        reason = " ".join(str(err).split())[:300]
        print(
            f"strato: internal error: {type(err).__name__}: {reason} "
            "(this is a bug in strato; rerun with --traceback for details)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
