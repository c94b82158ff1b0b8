"""The `strato` command: compile and run ONNX models.

    strato run mlp --repeat 20          # compile, run on seeded random inputs, time, check
    strato run model.onnx --batch 8 -v  # -v: progress and the time of every stage
    strato run model.onnx --input-shapes 'x:[1,3,224,224]' --inputs in.npz --outputs out.npz
    strato compile mlp -o mlp.ll        # the LLVM IR, and the C header mlp.h
    strato compile mlp -o mlp.o         # an object file to link, and mlp.h
    strato compile mlp -o mlp.o --target 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72'
                                        # the same for a 64-bit ARM Linux device
    strato compile mlp -o -             # the LLVM IR on standard output
    strato compile mlp -o mlp.strato    # the compiled model, for strato.load / strato run
    strato run mlp.strato               # run a saved model: nothing is compiled
    strato run mlp --target 'llvm -mcpu=x86-64-v2 -fast-math'
    strato targets                      # the compile targets and their options
    strato cache [--clear]              # the compile cache: where, how large; empty it
    strato import model.onnx -o model.mlir   # the graph-level IR, for strato-opt
    strato bench --quick                # strato against onnxruntime, TVM and numpy

MODEL is a path to an ONNX file (a regular file) or the name of a built-in model
(`strato.zoo`). Errors in the input or the command line are one line,
`strato: error: <where>: <why>`, with exit status 1; an unexpected exception is reported
as an internal error (exit 1; `--traceback` shows it). Output files are written whole or
not at all.
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
from strato.runtime.atomic_write import write_atomically
from strato.runtime.signature import random_inputs


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

    if os.path.lexists(spec):
        proto, location = load_model(spec)
        if batch is not None:
            proto = with_batch(proto, batch, location)
        return ResolvedModel(proto, f"{spec} (ONNX file)", location)
    if spec in zoo.ZOO:
        size = 1 if batch is None else batch
        proto = zoo.build_model(spec, batch=size, seed=seed)
        return ResolvedModel(proto, f"{spec} (zoo, batch {size}, seed {seed})", None)
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


def compile_resolved(
    resolved: ResolvedModel,
    args: argparse.Namespace,
    *,
    batched: bool = False,
    keep_open: bool = False,
    per_size: bool = False,
):
    """strato.compile with the CLI's options; with --dump-ir, each stage's IR is written
    to DIR/NN-<stage>.mlir and the LLVM IR to DIR/NN-llvm-ir.ll; with -v, each stage is
    reported on stderr with its time as it ends. With `batched`, a model with one open
    dimension it is separable along is compiled for every size of it
    (`ShapeSpecializingModel.batched`); with `keep_open` too, any other model with open
    dimensions stays a `ShapeSpecializingModel` (saved to compile per call's sizes); with
    `per_size`, every model with open dimensions does (for --sizes)."""
    try:
        return _compile(resolved, args, batched, keep_open, per_size)
    except StratoError as err:
        # The model was loaded from a file before compiling: name the file.
        if err.location is None:
            err.location = resolved.location
        raise


class StageLog:
    """With -v, one stderr line per finished compile stage and its wall-clock time."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.started = self.last = time.perf_counter()

    def note(self, message: str) -> None:
        if self.verbose:
            print(f"strato: {message}", file=sys.stderr, flush=True)

    def stage_done(self, stage: str) -> None:
        now = time.perf_counter()
        self.note(f"{stage}: {now - self.last:.2f} s")
        self.last = now

    def stage_starts(self, stage: str) -> None:
        self.note(f"{stage} ...")


def check_target(args: argparse.Namespace):
    """The target of --target (plugins loaded first, so theirs are known); a bad target
    string is an error located at --target."""
    from strato.plugins import load_plugins
    from strato.targets.registry import get_target

    for failure in load_plugins():
        print(f"strato: warning: {failure}", file=sys.stderr)
    threads = getattr(args, "threads", None)
    if threads is not None:
        from strato.runtime.threads import check_threads

        try:
            check_threads(threads, "the thread count")
        except StratoError as err:
            err.location = "--threads"
            raise
    try:
        if threads is None:
            target = get_target(args.target)
        else:
            from strato.compiler import resolve_target

            target = resolve_target(args.target, threads=threads)
    except StratoError as err:
        err.location = "--target"
        raise
    calibration = getattr(args, "calibration", None)
    if calibration is not None:
        if "calibration" not in type(target).options:
            raise StratoError(
                f"target '{target.name}' does not quantize, so takes no calibration inputs "
                "(--calibration applies to targets such as vta)",
                location="--calibration",
            )
        if not os.path.isfile(calibration):
            raise StratoError("no such file", location=calibration)
        target = target.with_options(calibration=os.path.abspath(calibration))
    return target


def _compile(
    resolved: ResolvedModel,
    args: argparse.Namespace,
    batched: bool = False,
    keep_open: bool = False,
    per_size: bool = False,
):
    import strato
    from strato.specializing import ShapeSpecializingModel
    from strato.targets.vta.progress import reporting_progress as reporting_layers
    from strato.tools.compile_progress import CompileProgress

    target = check_target(args)
    log = StageLog(args.verbose)
    log.note(f"compiling {resolved.description} for {target}")
    directory = args.dump_ir
    if directory is not None:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as err:
            raise StratoError(f"cannot create the dump directory: {err.strerror}", location=directory) from None
    stages: list[str] = []

    def after_stage(stage: str, module) -> None:
        stages.append(stage)
        log.stage_done("import" if stage == "graph" else stage)
        if directory is not None:
            path = os.path.join(directory, f"{len(stages):02d}-{stage}.mlir")
            write_atomically(path, module_text(module), what="the IR dump")

    # the IR of every stage (--dump-ir) needs a real compile
    use_cache = not (args.no_cache or directory is not None)
    passes = sum(len(stage.passes) for stage in target.stages())
    progress = CompileProgress(passes, enabled=not args.verbose and sys.stderr.isatty())
    kernels: list[tuple[int, int]] = []

    def before_stage(stage: str) -> None:
        log.stage_starts(stage)
        progress.pass_starts(stage)

    def built_kernels(done: int, total: int) -> None:
        if not kernels:
            log.note(f"build: {total} distinct kernel(s), {done} from the compile cache ...")
        kernels.append((done, total))
        progress.kernels(done, total)

    def offloaded_layer(stage: str, done: int, total: int, name: str) -> None:
        # the vta target's build compiles the layers it offloads one by one
        if done < total:
            log.note(f"VTA: {stage} conv layer {done + 1}/{total}: {name}")
        progress.layers(f"VTA: {stage} conv layers", done, total, name)

    try:
        with reporting_layers(offloaded_layer):
            model = strato.compile(
                resolved.proto,
                target=target,
                after_stage=after_stage,
                before_stage=before_stage,
                input_shapes=args.input_shapes,
                name=c_identifier(_stem(args.model)),
                cache=use_cache,
                tuning=getattr(args, "tuning", None),
                progress=built_kernels,
                # a run makes its inputs, so it needs the sizes; a compile to a file
                # keeps a dimension the model is separable along (strato.runtime.batched)
                specialize=batched,
                # strato compile: one entry for every size of a model whose operators
                # take run-time dimensions (as strato.compile), unless --sizes asks for
                # entries per size; strato run pins the sizes it runs
                run_time_dims=_run_time_dims(args),
                size_bounds=getattr(args, "size_bounds", None),
            )
            if isinstance(model, ShapeSpecializingModel) and not per_size:
                try:
                    model = model.batched()
                except StratoError as err:
                    if not keep_open:
                        raise
                    log.note(f"not one compile for every size ({err.message}): compiled per call's sizes")
    finally:
        progress.close()
    if isinstance(model, ShapeSpecializingModel):
        return model
    if model.origin is not None:
        log.note(f"loaded from {model.origin} in {time.perf_counter() - log.started:.2f} s")
        return model
    log.stage_done("build (kernels, then the entry: LLVM optimization and machine code)")
    log.note(f"compiled in {time.perf_counter() - log.started:.2f} s")
    if directory is not None:
        model.save_llvm_ir(os.path.join(directory, f"{len(stages) + 1:02d}-llvm-ir.ll"))
    return model


def _run_time_dims(args: argparse.Namespace) -> bool | None:
    """strato.compile's `run_time_dims` for the command: for `strato compile`, True with
    --run-time-sizes (which insists), False with --sizes or --per-size, else None
    (compile once where the operators allow, as `strato.compile` does); False for the
    others."""
    if not hasattr(args, "run_time_sizes"):
        return False
    if args.run_time_sizes:
        return True
    return False if args.sizes or args.per_size else None


def module_text(module) -> str:
    """The module in MLIR's custom assembly format, as strato-opt reads it back."""
    import io

    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    stream.write("\n")
    return stream.getvalue()


def c_identifier(name: str) -> str:
    from strato.compiler import c_identifier as identifier

    return identifier(name)


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------


def is_saved_model(spec: str) -> bool:
    """Whether MODEL names a compiled model file (`strato compile -o X.strato`): a zip
    archive, which an ONNX file (a protobuf) never is."""
    import zipfile

    return os.path.isfile(spec) and (spec.endswith(".strato") or zipfile.is_zipfile(spec))


def load_saved_model(args: argparse.Namespace):
    """A saved model for `strato run`, and the ONNX model it carries (None for most);
    options that only apply to compiling are refused. A model saved to compile per
    call's sizes (`strato.specializing`) runs at the sizes --input-shapes gives, else at
    the first size it was saved with."""
    import strato
    from strato.specializing import ShapeSpecializingModel

    model = strato.load(args.model)
    if isinstance(model, ShapeSpecializingModel):
        return _saved_model_at_sizes(model, args), model.recipe.model
    if model.signature.is_dynamic:
        return _run_time_model_at_sizes(model, args), None
    given = _compile_options_given(args, with_input_shapes=True)
    if given:
        raise StratoError(
            f"{given[0]} does not apply to a compiled model (it is already compiled)",
            location=args.model,
        )
    return model, None


def _compile_options_given(args: argparse.Namespace, *, with_input_shapes: bool) -> list[str]:
    """The options given that only apply to compiling (--input-shapes among them when
    `with_input_shapes`)."""
    options = (
        ("--batch", args.batch),
        ("--input-shapes", args.input_shapes if with_input_shapes else None),
        ("--dump-ir", args.dump_ir),
        ("--target", None if args.target == DEFAULT_TARGET else args.target),
        ("--threads", args.threads),
        ("--tuning", getattr(args, "tuning", None)),
        ("--calibration", getattr(args, "calibration", None)),
    )
    return [option for option, value in options if value is not None]


class _AtSizes:
    """A model compiled once for every size, run by `strato run` at the sizes
    --input-shapes gives: its inputs and outputs of those shapes."""

    def __init__(self, model, inputs, outputs):
        self._model = model
        self.inputs, self.outputs = inputs, outputs

    def __call__(self, *arrays):
        return self._model(*arrays)

    def __getattr__(self, name: str):
        return getattr(self._model, name)


def _run_time_model_at_sizes(model, args: argparse.Namespace) -> _AtSizes:
    """A saved model of run-time sizes at the sizes of --input-shapes (every input's
    shape, checked against its signature)."""
    given = _compile_options_given(args, with_input_shapes=False)
    if given:
        raise StratoError(f"{given[0]} does not apply to a compiled model (it is already compiled)", location=args.model)
    wanted = ", ".join(str(spec) for spec in model.inputs)
    if not args.input_shapes:
        raise StratoError(
            f"the model runs at any size: give the sizes to run with --input-shapes ({wanted})",
            location=args.model,
        )
    shapes = dict(args.input_shapes)
    missing = [spec.name for spec in model.inputs if spec.name not in shapes]
    unknown = [name for name in shapes if name not in model.input_names]
    if missing or unknown or any(isinstance(d, str) for shape in shapes.values() for d in shape):
        raise StratoError(
            f"--input-shapes must give every input, and only those, its sizes ({wanted})",
            location="--input-shapes",
        )
    # views of one element, of the given shapes, checked as a call's arrays are
    views = [np.broadcast_to(np.zeros((), spec.dtype), shapes[spec.name]) for spec in model.inputs]
    try:
        model.signature.check_inputs(views)
    except StratoError as err:
        raise StratoError(err.message, location="--input-shapes") from None
    sizes = model.signature.bind_sizes(views)
    return _AtSizes(
        model,
        tuple(spec.at(sizes) for spec in model.inputs),
        tuple(spec.at(sizes) for spec in model.outputs),
    )


def _saved_model_at_sizes(model, args: argparse.Namespace):
    """The saved model compiled per call's sizes, at --input-shapes' sizes (compiled
    now unless it was saved with them) or at its first saved size."""
    given = _compile_options_given(args, with_input_shapes=False)
    if given:
        raise StratoError(
            f"{given[0]} does not apply to a saved model (it compiles its other sizes as it "
            "was compiled)",
            location=args.model,
        )
    if args.input_shapes:
        shapes = {name: tuple(shape) for name, shape in args.input_shapes.items()}
        missing = [name for name in model.dims.shapes if name not in shapes]
        if missing or any(isinstance(d, str) for shape in shapes.values() for d in shape):
            raise StratoError(
                f"--input-shapes must give every dynamic input its sizes ({model.dims.describe()})",
                location=args.model,
            )
        # bind checks arrays: views of one byte, of the given shapes
        checked = model.dims.bind({name: np.broadcast_to(np.uint8(0), shape) for name, shape in shapes.items()})
    elif model.sizes:
        checked = model.sizes[0]
    else:
        raise StratoError(
            f"the model was saved with no compiled size: give the sizes to run with "
            f"--input-shapes ({model.dims.describe()})",
            location=args.model,
        )
    return model.specialized(checked)


def run_command(args: argparse.Namespace) -> int:
    from strato.runtime.timing import median_latency_ms

    start = time.perf_counter()
    if is_saved_model(args.model):
        model, proto = load_saved_model(args)
        # a model saved to compile per size carries its ONNX model: the reference runs it
        resolved = None if proto is None else ResolvedModel(proto, args.model, args.model)
        print(
            f"model: {args.model} (compiled for {model.target}), loaded in "
            f"{time.perf_counter() - start:.2f} s"
        )
    else:
        refuse_foreign_target(args)
        resolved = resolve_model(args.model, args.batch, args.seed)
        model = compile_resolved(resolved, args)
        how = "loaded from the compile cache" if model.origin is not None else "compiled"
        print(
            f"model: {resolved.description}, target {model.target}, {how} in "
            f"{time.perf_counter() - start:.2f} s"
        )

    inputs = load_inputs(args.inputs, model) if args.inputs else random_inputs(model, args.seed)
    log = StageLog(args.verbose)
    log.note(f"running {args.repeat + 2} time(s)")
    simulation = simulation_progress(model, args)
    with simulation():
        outputs = model(*inputs)
    for spec, array in zip(model.outputs, outputs):
        print(f"output '{spec.name}': shape {list(array.shape)} {array.dtype.name}")
    run_report = getattr(model, "run_report", None)  # an accelerator target's per-layer report
    if run_report is not None:
        print(run_report(), end="")
    if getattr(model, "check_layers", None) is not None:
        log.note("checking the offloaded layers against the int8 reference")
        print(offloaded_check_line(model), flush=True)
    if args.outputs:
        save_outputs(args.outputs, model, outputs)
    with simulation():
        latency = median_latency_ms(lambda: model(*inputs), args.repeat)
    print(latency_line(model, latency, args.repeat))
    if resolved is None:
        print("no reference run: a compiled model file carries no ONNX graph")
        return 0

    log.note("running the reference")
    reference = reference_run(
        resolved, inputs, model.input_names, args.repeat, _model_threads(str(model.target))
    )
    error = max_relative_error(outputs, reference.outputs)
    print(error_line(model, error, reference.oracle))
    if reference.latency_ms is not None and getattr(model, "simulated_device", None):
        print(
            f"onnxruntime latency: median {reference.latency_ms:.3f} ms over {args.repeat} run(s) "
            "(no ratio: the model above ran on a simulator)"
        )
    elif reference.latency_ms is not None:
        print(
            f"onnxruntime latency: median {reference.latency_ms:.3f} ms over {args.repeat} "
            f"run(s) on {_model_threads(str(model.target))} thread(s) "
            f"(strato / onnxruntime = {latency / reference.latency_ms:.2f})"
        )
    return 0


def refuse_foreign_target(args: argparse.Namespace) -> None:
    """Refuse, before compiling anything, to run a model compiled for another system (a
    bad target string is left to the compile's own check, which says where)."""
    import platform

    from strato.targets.registry import get_target

    try:
        builder = get_target(args.target).kernel_builder()
    except StratoError:
        return
    if builder is not None and not builder.runs_here():
        raise StratoError(
            f"code for {builder.device()} does not run on this {platform.machine()} machine: "
            "compile it with `strato compile MODEL --target ... -o model.o` and link it into "
            "a program for that system (or tune it there: strato tune --dask)",
            location="--target",
        )


def simulation_progress(model, args: argparse.Namespace):
    """A context manager to make around the calls of a model whose offloaded layers run
    on a simulator (`--target vta`): a bar over the layers of each call on an
    interactive stderr, a line per layer with -v, nothing otherwise
    (`strato.tools.compile_progress.SimulationProgress`)."""
    import contextlib

    device = getattr(model, "simulated_device", None)
    if not device:
        return contextlib.nullcontext
    from strato.targets.vta.progress import reporting_progress
    from strato.tools.compile_progress import SimulationProgress

    display = SimulationProgress(
        device,
        runs=args.repeat + 2,
        enabled=args.verbose or sys.stderr.isatty(),
        lines=args.verbose,
    )

    @contextlib.contextmanager
    def showing():
        try:
            with reporting_progress(display):
                yield
        finally:
            display.close()

    return showing


def offloaded_check_line(model) -> str:
    """The offloaded layers of the model's last call checked element by element against
    the numpy int8 reference (`check_layers`): the line that says they are bit-exact, or
    a diagnostic naming each layer that differs and by how many elements."""
    checks = model.check_layers()
    if not checks:
        return "no offloaded layers to check against the int8 reference"
    bad = [check for check in checks if check.differing]
    if bad:
        named = ", ".join(
            f"{check.name} in {check.differing} of {check.elements} elements" for check in bad
        )
        raise StratoError(
            f"{len(bad)}/{len(checks)} offloaded layer(s) differ from the int8 reference: {named}"
        )
    count = len(checks)
    return (
        f"offloaded layers bit-exact against the int8 reference: {count}/{count} layers, "
        "0 differing elements"
    )


def latency_line(model, latency_ms: float, repeat: int) -> str:
    """The run's latency, said for what it is: for a model on a simulated device, the
    host time of the simulation (its own time is the report's cycle count)."""
    device = getattr(model, "simulated_device", None)
    if device:
        return (
            f"host time of the {device} simulation: median {latency_ms:.3f} ms over {repeat} run(s) "
            f"(not the {device}'s time: see the cycles above)"
        )
    return f"latency: median {latency_ms:.3f} ms over {repeat} run(s)"


def error_line(model, error: float, oracle: str) -> str:
    """The largest difference from the reference; for a quantized model, said to be the
    quantization error against the float model."""
    bits = getattr(model, "quantized_bits", None)
    if bits:
        return (
            f"max relative error vs {oracle} (float): {error:.3g} "
            f"(the int{bits} quantization error, not a mismatch)"
        )
    return f"max relative error vs {oracle}: {error:.3g}"


def load_inputs(path: str, model) -> list[np.ndarray]:
    """The model's inputs from an .npz file whose keys are the ONNX input names."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise StratoError("no such file", location=path) from None
    except (OSError, ValueError, EOFError) as err:
        reason = " ".join(str(err).split())
        raise StratoError(f"not a readable .npz file of arrays: {reason}", location=path) from None
    names = model.input_names
    missing = [name for name in names if name not in arrays]
    unknown = [name for name in arrays if name not in names]
    if missing or unknown:
        what = f"no array '{missing[0]}'" if missing else f"array '{unknown[0]}' is not an input"
        raise StratoError(f"{what}; the model's inputs are {', '.join(names) or 'none'}", location=path)
    inputs = [arrays[name] for name in names]
    try:
        model.signature.check_inputs(inputs)
    except StratoError as err:
        err.location = path
        raise
    return inputs


def save_outputs(path: str, model, outputs: Sequence[np.ndarray]) -> None:
    """Write the outputs to an .npz file keyed by the ONNX output names."""
    import io

    if not path.endswith(".npz"):
        raise StratoError("--outputs must name an .npz file", location=path)
    buffer = io.BytesIO()
    np.savez(buffer, **dict(zip(model.output_names, outputs)))
    write_atomically(path, buffer.getvalue(), what="the outputs")


@dataclass
class Reference:
    outputs: list[np.ndarray]
    oracle: str
    latency_ms: float | None


def _model_threads(target: str) -> int:
    """The threads a model compiled for `target` runs on: its -threads=N, else the
    cores available (the llvm target's default)."""
    import re

    from strato.runtime.threads import available_cores

    match = re.search(r"(?:^|\s)-threads=(\d+)(?:\s|$)", target)
    return int(match.group(1)) if match else available_cores()


def reference_run(
    resolved: ResolvedModel,
    inputs: Sequence[np.ndarray],
    names: Sequence[str],
    repeat: int,
    threads: int = 1,
) -> Reference:
    """onnxruntime's outputs and median latency over `repeat` runs on `threads` threads
    (as `strato bench` runs it: one inter-op thread, no spinning) when it is installed,
    else the outputs of strato's graph interpreter (not timed: it is not a peer)."""
    from strato.runtime.timing import median_latency_ms

    try:
        import onnxruntime  # noqa: F401 (only whether it is installed)
    except ImportError:
        from strato.frontends.onnx import import_model
        from strato.interpreters.graph import run_graph

        outputs = run_graph(import_model(resolved.proto), inputs)
        return Reference(outputs, "the graph interpreter (onnxruntime is not installed)", None)
    from strato.bench.peers import OnnxRuntime

    session = OnnxRuntime.session(resolved.proto.SerializeToString(), threads)
    feed = dict(zip(names, inputs))
    outputs = session.run(None, feed)
    latency = median_latency_ms(lambda: session.run(None, feed), repeat)
    return Reference(outputs, "onnxruntime", latency)


DEFAULT_TARGET = "llvm"

TEXT_OUTPUT = "-"
"""`-o -`: write text output to standard output."""


def _output_path(args: argparse.Namespace, suffix: str) -> str:
    """The output path: -o, else MODEL<suffix> in the current directory."""
    if args.output is None:
        return f"{_stem(args.model)}{suffix}"
    if not args.output.strip():
        raise StratoError("-o: the output path is empty")
    if args.output != TEXT_OUTPUT:
        directory = os.path.dirname(args.output) or "."
        if not os.path.isdir(directory):
            raise StratoError(f"cannot write the output: no directory {directory}", location=args.output)
        if os.path.isdir(args.output):
            raise StratoError("cannot write the output: it is a directory", location=args.output)
    return args.output


def compile_command(args: argparse.Namespace) -> int:
    output = _output_path(args, ".ll")
    if output.endswith(".h"):
        raise StratoError(
            "-o names the .ll, .o or .strato file; for .ll and .o the C header is "
            "written beside it",
            location=output,
        )
    is_object = output.endswith(".o")
    is_saved_model = output.endswith(".strato")
    if args.size_bounds and args.sizes:
        raise StratoError(
            "--size-bounds bounds the sizes of an entry compiled once for every size; "
            "--sizes compiles one per size",
            location="--size-bounds",
        )
    if args.run_time_sizes and args.per_size:
        raise StratoError(
            "--run-time-sizes compiles once for every size; --per-size per call's sizes: "
            "give one of them",
            location="--per-size",
        )
    if args.run_time_sizes and args.sizes:
        raise StratoError(
            "--run-time-sizes compiles one entry for every size; --sizes one per size: "
            "give one of them",
            location="--sizes",
        )
    resolved = resolve_model(args.model, args.batch, args.seed)
    model = compile_resolved(
        resolved, args, batched=True, keep_open=is_saved_model, per_size=bool(args.sizes)
    )
    if args.sizes:
        _compile_sizes(model, args.sizes)
    if args.run_time_sizes and not getattr(getattr(model, "signature", None), "is_dynamic", False):
        from strato.frontends.onnx.importer import RUN_TIME_ONNX_OPS

        # a model compiled per size, or for every size of a separable dimension
        has_open = getattr(model, "dims", None) is not None or hasattr(model, "dimension")
        why = (
            "this one has none left open"
            if not has_open
            else "this one has operators that need static sizes (those that take run-time "
            f"sizes: {', '.join(sorted(RUN_TIME_ONNX_OPS))}); compile it per size with --sizes"
        )
        raise StratoError(
            f"--run-time-sizes applies to a model with dynamic dimensions, and {why}",
            location="--run-time-sizes",
        )
    if is_saved_model:
        model.save(output)
        dims = getattr(model, "dims", None)  # a ShapeSpecializingModel
        what = (
            f"{model.target} machine code and manifest"
            if dims is None
            else f"the model, compiled on first use for each size of {dims.describe()}"
        )
        if dims is None and model.signature.is_dynamic:
            what += f", for every size of {', '.join(model.signature.sizes)}"
        print(
            f"wrote {output} ({os.path.getsize(output)} bytes: {what}; run it with "
            f"strato.load or `strato run {output}`)"
        )
        return 0
    if output == TEXT_OUTPUT:
        sys.stdout.write(model.llvm_ir)
        return 0
    header = f"{os.path.splitext(output)[0]}.h"
    if is_object:
        model.save_object(output)
        what = "object code"
    else:
        model.save_llvm_ir(output)
        what = "LLVM IR"
    model.save_c_header(header)
    batch = getattr(model, "dimension", None)  # a BatchedModel: a second entry
    entries = f"entry {model.entry_symbol}"
    signature = getattr(model, "signature", None)
    if signature is not None and signature.is_dynamic:
        entries += f" for every size, taking {', '.join(signature.sizes)} after the buffers"
    if args.sizes:
        sized = model.sized_object()
        entries += f" taking {', '.join(sized.dims)}, for {len(sized.sizes)} size(s)"
    if batch is not None:
        from strato.targets.llvm.entry_abi import batch_symbol

        entries += f", and {batch_symbol(model.entry_symbol)} for any '{batch}'"
    print(f"wrote {output} ({os.path.getsize(output)} bytes of {what}) and {header} ({entries})")
    return 0


def _compile_sizes(model, sizes: list[dict[str, tuple[int, ...]]]) -> None:
    """Compile `model` (open dimensions) for each of --sizes, as a call of those sizes
    would: what its object, header, LLVM IR or saved model then holds."""
    from strato.specializing import ShapeSpecializingModel

    if not isinstance(model, ShapeSpecializingModel):
        why = (
            "this one runs operators on the host between compiled parts, which makes no "
            "object" if hasattr(model, "host_ops") else
            "this one has none left open (after --input-shapes)"
        )  # fmt: skip
        raise StratoError(f"--sizes applies to a model with dynamic dimensions, and {why}", location="--sizes")
    for shapes in sizes:
        missing = [name for name in model.dims.shapes if name not in shapes]
        unknown = [name for name in shapes if name not in model.dims.shapes]
        if missing or unknown or any(isinstance(d, str) for shape in shapes.values() for d in shape):
            raise StratoError(
                f"each --sizes gives every dynamic input, and only those, its sizes "
                f"({model.dims.describe()}); got {', '.join(shapes) or 'none'}",
                location="--sizes",
            )
        try:
            model.prepare(shapes)
        except StratoError as err:
            err.location = err.location or "--sizes"
            raise


def targets_command(args: argparse.Namespace) -> int:
    from strato.plugins import load_plugins
    from strato.targets.llvm.host import host_target, vector_bits
    from strato.targets.registry import registered_targets

    for failure in load_plugins():
        print(f"strato: warning: {failure}", file=sys.stderr)
    if args.stages is not None:
        return _print_stages(args.stages)
    targets = sorted(registered_targets().items())
    width = max((len(key) for _, (cls, _) in targets for key in cls.options), default=0) + 1
    for name, (cls, source) in targets:
        origin = "" if source == "strato" else f" (from {source})"
        print(f"{name}{origin}: {cls.summary}")
        for key, description in cls.options.items():
            print(f"  -{key:<{width}} {description}")
    host = host_target()
    print(f"host: {host.triple}, CPU {host.cpu}, {vector_bits(host)}-bit vectors")
    return 0


def _print_stages(text: str) -> int:
    """`strato targets --stages TARGET`: each stage of the target with its passes, and
    the whole as one pipeline that `strato-opt -p` runs."""
    from strato.targets.registry import get_target

    target = get_target(text)
    stages = target.stages()
    build = target.build_passes()
    width = max((len(stage.name) for stage in stages), default=0) + 2
    width = max(width, len("build") + 2) if build else width
    for stage in stages:
        check = " (after checking the module)" if stage.check is not None else ""
        print(f"{stage.name:<{width}}{','.join(str(p) for p in stage.passes)}{check}")
    if build:
        print(f"{'build':<{width}}{','.join(str(p) for p in build)} (on each kernel apart)")
    passes = [str(p) for stage in stages for p in stage.passes] + [str(p) for p in build]
    print(f"strato-opt -p '{','.join(passes)}'")
    return 0


def cache_command(args: argparse.Namespace) -> int:
    from strato.runtime import cache

    directory = cache.cache_dir()
    if args.clear:
        print(f"removed {cache.clear()} compiled model(s) and kernel(s) from {directory}")
        return 0
    count, size = cache.usage()
    state = "on" if cache.cache_enabled() else "off (STRATO_CACHE=0)"
    print(f"compile cache: {directory}, {state}")
    print(
        f"{count} compiled model(s) and {cache.kernel_count()} compiled kernel(s), "
        f"{size / 1e6:.1f} MB of at most {cache.size_limit() / 1e6:.0f} MB"
    )
    return 0


def import_command(args: argparse.Namespace) -> int:
    from strato.frontends.onnx import import_onnx

    output = _output_path(args, ".mlir")
    resolved = resolve_model(args.model, args.batch, args.seed)
    try:
        imported = import_onnx(resolved.proto, input_shapes=args.input_shapes)
    except StratoError as err:
        if err.location is None:
            err.location = resolved.location
        raise
    text = module_text(imported.module)
    if output == TEXT_OUTPUT:
        sys.stdout.write(text)
        return 0
    write_atomically(output, text, what="the graph-level IR")
    print(f"wrote {output} ({len(text.encode())} bytes of graph-level IR)")
    return 0


def _stem(spec: str) -> str:
    base = os.path.basename(spec)
    return base[: -len(".onnx")] if base.endswith(".onnx") else base


class UsageError(StratoError):
    """A command line argparse rejects."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one `strato: error:` line with exit
    status 1 (argparse prints the usage and exits 2)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _decimal_int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None


def positive_int(text: str) -> int:
    value = _decimal_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _decimal_int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def parse_input_shapes(text: str) -> dict[str, tuple[int, ...]]:
    """`--input-shapes 'x:[1,3,224,224] mask:[1,128]'` (tvmc's syntax) -> shapes by
    name. Entries are separated by spaces; the name is everything before the last `:`.
    A dimension given by a name (`ids:[batch,64]`) stays open."""
    from strato.compiler import check_input_shapes

    shapes: dict[str, list[int]] = {}
    for entry in text.split():
        name, colon, dims = entry.rpartition(":")
        if not colon or not name or not (dims.startswith("[") and dims.endswith("]")):
            raise argparse.ArgumentTypeError(f"'{entry}' is not NAME:[D0,D1,...]")
        values = [part.strip() for part in dims[1:-1].split(",") if part.strip()]
        try:
            shapes[name] = [value if value.isidentifier() else int(value, 10) for value in values]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{entry}': dimensions must be integers (or names of dimensions left open)"
            ) from None
    if not shapes:
        raise argparse.ArgumentTypeError("no shapes given")
    try:
        return check_input_shapes(shapes) or {}
    except StratoError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def parse_size_bounds(text: str) -> dict[str, tuple[int, ...]]:
    """`--size-bounds 'sequence=8:512:8 batch=8'` -> bounds by size name: `NAME=MOST`,
    `NAME=LEAST:MOST`, `NAME=LEAST:` (no most), and any of these but the first with
    `:MULTIPLE` (`NAME=LEAST:MOST:MULTIPLE`, `NAME=LEAST::MULTIPLE`: sizes it divides
    only); entries separated by spaces or commas."""
    from strato.compiler import check_size_bounds

    bounds: dict[str, tuple] = {}
    for entry in text.replace(",", " ").split():
        name, equals, value = entry.partition("=")
        parts = value.split(":") if ":" in value else ["0", value]
        try:
            if not equals or not name or len(parts) > 3:
                raise ValueError
            least, most, *multiple = parts
            if not most and ":" not in value or multiple and not multiple[0]:
                raise ValueError
            bounds[name] = (int(least, 10), int(most, 10) if most else None) + (
                (int(multiple[0], 10),) if multiple else ()
            )
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{entry}' is not NAME=MOST, NAME=LEAST:MOST, NAME=LEAST: or one of the "
                "last two with :MULTIPLE"
            ) from None
    if not bounds:
        raise argparse.ArgumentTypeError("no bounds given")
    try:
        check_size_bounds(bounds)
    except StratoError as err:
        raise argparse.ArgumentTypeError(err.message) from None
    return bounds


def build_parser() -> argparse.ArgumentParser:
    from strato import __version__

    # Options accepted before and after the command; SUPPRESS keeps the subcommand's
    # parse from resetting what was given before it.
    common = _ArgumentParser(add_help=False)
    common.add_argument(
        "--traceback", action="store_true", default=argparse.SUPPRESS,
        help="show the Python traceback of internal errors",
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
        help="report progress and the time of every stage on stderr",
    )
    common.add_argument(
        "--load-plugin", action="append", default=argparse.SUPPRESS, metavar="MODULE",
        help="load a plugin (a module, or module:function) before the command runs, as "
        "installed plugins are; repeatable",
    )
    parser = _ArgumentParser(
        prog="strato", description="Compile and run ONNX models with strato.", parents=[common]
    )
    parser.add_argument("--version", action="version", version=f"strato {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_model_arguments(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("model", metavar="MODEL", help="an ONNX file or a zoo name (e.g. mlp)")
        sub.add_argument("--batch", type=positive_int, default=None, help="batch size (leading dimension of the inputs)")
        sub.add_argument("--seed", type=non_negative_int, default=0, help="seed of zoo weights and random inputs (default 0)")
        sub.add_argument(
            "--input-shapes", type=parse_input_shapes, default=None, metavar="SHAPES",
            help="input shapes by name, e.g. 'x:[1,3,224,224] mask:[1,128]'; a dimension "
            "given by a name stays open ('ids:[batch,128]': compile keeps the batch open "
            "when the model is separable along it)",
        )

    def add_compile_arguments(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--target", default=DEFAULT_TARGET, metavar="TARGET",
            help="target string, e.g. 'llvm -mcpu=skylake-avx512 -fast-math' (default "
            "llvm: the host CPU); `strato targets` lists the targets and their options",
        )
        sub.add_argument(
            "--threads", type=positive_int, default=None, metavar="N",
            help="threads parallel loops run on (1: serial; default: the cores available; "
            "the target's -threads=N)",
        )
        sub.add_argument(
            "--tuning", metavar="DB.jsonl", default=None,
            help="schedule each kernel with the best record of its task in this tuning log "
            "(strato tune --db)",
        )
        sub.add_argument(
            "--calibration", metavar="INPUTS.npz", default=None,
            help="inputs the quantizer calibrates with, for a quantizing target such as vta "
            "(arg0, arg1, ... with a leading sample axis; the target's -calibration=FILE)",
        )
        sub.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage into DIR")
        sub.add_argument(
            "--no-cache", action="store_true",
            help="compile even when the compile cache holds the model (also: STRATO_CACHE=0)",
        )

    run = commands.add_parser(
        "run", parents=[common],
        help="compile MODEL, run it, report latency (next to onnxruntime's) and error",
        description="Compile MODEL, run it on seeded random inputs (or --inputs), report "
        "its latency next to onnxruntime's and its error against onnxruntime.",
    )
    add_model_arguments(run)
    add_compile_arguments(run)
    run.add_argument("--repeat", type=positive_int, default=10, help="timed runs (default 10)")
    run.add_argument("--inputs", metavar="IN.npz", help="inputs by ONNX input name (default: seeded random)")
    run.add_argument("--outputs", metavar="OUT.npz", help="write the outputs, by ONNX output name")
    run.set_defaults(handler=run_command)

    compile_ = commands.add_parser(
        "compile", parents=[common],
        help="compile MODEL to LLVM IR (.ll) or an object file (.o), with a C header",
        description="Compile MODEL. `-o X.ll` writes LLVM IR, `-o X.o` an object file; "
        "either comes with the C header X.h declaring the entry <model>_run. "
        "`-o -` writes the LLVM IR to standard output. The object holds the model's "
        "weights and thread pool: link it with `cc main.c X.o -lm -lpthread`. For another "
        "system, e.g. --target 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72', link "
        "with that system's C compiler.",
    )
    add_model_arguments(compile_)
    add_compile_arguments(compile_)
    compile_.add_argument(
        "--sizes", type=parse_input_shapes, action="append", default=[], metavar="SHAPES",
        help="for a model with dynamic dimensions: compile these input shapes (as "
        "--input-shapes writes them; repeat for each size) into one object whose entry "
        "<model>_run takes each open dimension's size before the buffers",
    )  # fmt: skip
    compile_.add_argument(
        "--run-time-sizes", action="store_true",
        help="for a model with dynamic dimensions: insist on one entry for every size "
        "that takes the sizes after the buffers (the default when its operators all "
        "take run-time sizes; kernels that compute rows apart run as blocks of static "
        "sizes, as fast as --sizes; the others, such as attention's, with guards for "
        "the run-time sizes), an error when they do not",
    )  # fmt: skip
    compile_.add_argument(
        "--per-size", action="store_true",
        help="for a model with dynamic dimensions: compile per call's sizes instead of "
        "once for every size (a saved .strato model compiles each size on first use)",
    )  # fmt: skip
    compile_.add_argument(
        "--size-bounds", type=parse_size_bounds, metavar="BOUNDS",
        help="for an entry compiled once for every size: the sizes it takes, by name, e.g. "
        "'sequence=8:512:8 batch=8' (a most, least:most, or least:most:multiple for sizes "
        "the multiple divides only); a call out of them is refused "
        "(the entry returns <MODEL>_NO_SUCH_SIZE), as is one past a most the model "
        "implies (a position table's length)",
    )  # fmt: skip
    compile_.add_argument(
        "-o", "--output", metavar="OUT",
        help="OUT.ll, OUT.o, OUT.strato (the compiled model, for strato.load and "
        "`strato run OUT.strato`) or - (default MODEL.ll)",
    )
    compile_.set_defaults(handler=compile_command)

    targets = commands.add_parser(
        "targets", parents=[common],
        help="list the compile targets and their options",
        description="List the registered compile targets (strato's and plugins'), each "
        "with its options, and the machine the llvm target compiles for by default. "
        "With --stages TARGET, the stages `strato compile --target TARGET` runs, each "
        "with its passes, and the same as one `strato-opt -p` pipeline.",
    )
    targets.add_argument(
        "--stages", metavar="TARGET", default=None,
        help="print the stages and passes of TARGET (a target string, e.g. 'llvm -threads=1')",
    )
    targets.set_defaults(handler=targets_command)

    cache_ = commands.add_parser(
        "cache", parents=[common],
        help="show (or --clear) the compile cache",
        description="Show where the compile cache is, how many compiled models it holds and "
        "their size; --clear removes them. STRATO_CACHE_DIR moves it, STRATO_CACHE=0 turns "
        "it off.",
    )
    cache_.add_argument("--clear", action="store_true", help="remove every cached model")
    cache_.set_defaults(handler=cache_command)

    import_ = commands.add_parser(
        "import", parents=[common],
        help="import MODEL to the graph-level IR that strato-opt reads",
        description="Import MODEL into the graph dialect and write it as MLIR text, "
        "ready for strato-opt (`-o -`: standard output).",
    )
    add_model_arguments(import_)
    import_.add_argument("-o", "--output", metavar="OUT.mlir", help="output file (default MODEL.mlir)")
    import_.set_defaults(handler=import_command)

    from strato.tools.tune_command import add_tune_command

    add_tune_command(commands, common, add_model_arguments)

    from strato.tools.equivalence import add_fuzz_command

    add_fuzz_command(commands, common)

    from strato.tools.bench_command import add_bench_command

    add_bench_command(commands, common)
    return parser


def format_error(err: StratoError) -> str:
    message = " ".join(str(err.message).split())
    where = f"{err.location}: " if err.location else ""
    return f"strato: error: {where}{message}"


def main(argv: Sequence[str] | None = None) -> int:
    traceback = "--traceback" in (sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        args.traceback = getattr(args, "traceback", False)
        args.verbose = getattr(args, "verbose", False)
        args.target = getattr(args, "target", DEFAULT_TARGET)
        args.dump_ir = getattr(args, "dump_ir", None)
        args.no_cache = getattr(args, "no_cache", False)
        traceback = args.traceback
        # installed plugins and --load-plugin ones (before or after the command): a
        # broken one is a warning
        from strato.plugins import load_plugins, plugin_arguments

        extra = plugin_arguments(sys.argv[1:] if argv is None else argv)
        for failure in load_plugins(extra):
            print(f"strato: warning: {failure}", file=sys.stderr)
        return args.handler(args)
    except StratoError as err:
        print(format_error(err), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("strato: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of stdout went away (`strato targets | head`): silence the flush at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as err:  # noqa: BLE001 - everything else is a bug in strato
        if traceback:
            raise
        from strato.plugins import plugin_frame

        reason = " ".join(str(err).split())[:300]
        frame = plugin_frame(err)
        if frame is not None:
            print(
                f"strato: error in plugin '{frame.plugin}': {type(err).__name__}: {reason} "
                f"(raised at {frame}; rerun with --traceback for details)",
                file=sys.stderr,
            )
            return 1
        print(
            f"strato: internal error: {type(err).__name__}: {reason} "
            "(this is a bug in strato; rerun with --traceback for details)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
