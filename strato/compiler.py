"""`strato.compile`: an ONNX model to a callable compiled model.

The stages, in order, each a function from one artifact to the next:

    import      ONNX ModelProto -> graph-dialect module (strato.frontends.onnx)
    signature   recorded from the graph-level entry before lowering
    lower       the target's stages (`Target.stages`; for the llvm target graph
                optimizations, then graph -> te -> loop -> scheduled loops -> llvm)
    build       the target's build (for the llvm target: the C entry `<name>_run`
                returning a status -> LLVM IR -> machine code)

    model = compile_model("mlp.onnx")
    (logits,) = model(x)
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import VerifyException

from strato.diagnostics import (
    ModelImportError,
    RuntimeBranchError,
    StratoError,
    SymbolicShapeError,
)
from strato.dialects.graph.dims import SizeBound
from strato.frontends.onnx import import_onnx, raw_data
from strato.frontends.onnx.sequences import checked_structure, is_structure_spec
from strato.gc_pause import gc_for_compiling
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.limits import MAX_BUFFER_BYTES
from strato.runtime.signature import Signature, c_identifier
from strato.targets.registry import (
    GRAPH_STAGE,
    BuildOptions,
    Stage,
    Target,
    TargetSpec,
    get_target,
    parse_target,
    run_stages,
)

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from strato.transforms.schedule_default import ScheduleDefaultPass

StageCallback = Callable[[str, "ModuleOp"], None]
"""Called with a stage name and the module after it: "graph" after import, then the name
of each pass of the target's stages after that pass (the last leaves the IR `build`
takes, for the llvm target the scheduled loop dialect)."""


def compile_model(
    model: str | os.PathLike | onnx.ModelProto,
    target: str | TargetSpec | Target = "llvm",
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    after_stage: StageCallback | None = None,
    before_stage: Callable[[str], None] | None = None,
    name: str | None = None,
    fast_math: bool = False,
    threads: int | None = None,
    passes_before: PipelineHook = None,
    passes_after: PipelineHook = None,
    cache: bool | None = None,
    tuning: str | os.PathLike | None = None,
    progress: Callable[[int, int], None] | None = None,
    specialize: bool = True,
    run_time_dims: bool | None = None,
    size_bounds: Mapping[str, int | tuple[int, int | None] | tuple[int, int | None, int]]
    | None = None,
) -> CompiledModel:
    """Compile an ONNX model (a path, a built-in model's name such as "mlp", or a
    ModelProto) for `target`.

    `input_shapes` fixes input shapes by name (for models with symbolic dimensions;
    a sequence input's entry is the list of its element shapes, an absent optional's
    None: `strato.frontends.onnx.sequences`); `after_stage` sees the module after each IR stage, e.g. to dump it; `before_stage`
    hears the name of each pass before it runs (progress reports); `name` prefixes
    the C entry point (`<name>_run`; by default the file's stem, the zoo name or the
    ONNX graph's name). `target` is a target string (`"llvm -mcpu=skylake-avx512"`,
    `strato.targets.registry`); `fast_math=True` is its `-fast-math` option, `threads`
    its `-threads=N` (parallel loops use up to N threads; 1 is serial; by default the
    cores available to the process).
    `passes_before` and `passes_after` are extra passes (a pipeline string such as
    "my-pass{opt=1},cse", or pass instances) run on the graph level before and after
    the target's graph stage (`with_pipeline_hooks`). `tuning` is a tuning log (`strato
    tune --db`): each kernel is scheduled with the best record of its task there; kernels
    it has no record of keep the defaults. `progress(done, total)` hears how many of the
    model's distinct kernels the target's build has compiled (a progress bar).

    A model whose graph inputs have dynamic dimensions that `input_shapes` leaves open
    is compiled once for every size when all its operators that read tensors of those
    dimensions take them (`strato.frontends.onnx.importer.RUN_TIME_ONNX_OPS`), and the
    shapes it computes from them are ones the importer follows (`shape_values`,
    `merged_dims`: the TorchScript and torch.export exports of transformers' BERT and
    GPT-2 are such models): its signature names those
    dimensions (`TensorSpec.dims`) and each call runs at its arrays' sizes. Its kernels
    that compute rows apart run as blocks of rows of static sizes, scheduled as a
    compile per size's; the others (attention's products and its softmax over the
    sequence, which schedules do not take) run their canonical loops with defaults for
    run-time extents (register tiles with guards for products, vectors of decreasing
    widths): transformers' encoders run within 0.8-1.05x of a compile per size from 64
    tokens on, up to 1.2x at 16 tokens (`benchmarks/dynamic_shapes.py`). Such a model is
    compiled once by default (`run_time_dims=None`, or True); `run_time_dims=False`
    compiles it per size. A call whose sizes the model cannot take is refused with an
    error naming the input, the dimension and the bound: `size_bounds` bounds sizes by
    name (`{"sequence": 512}`, the most; `{"sequence": (1, 512)}`, the least and the
    most; `{"sequence": (8, 512, 8)}`, multiples of 8 only; None for no most), and the model implies a most where it reads a table at
    positions computed from a size (a position embedding: `graph.dims.
    implied_size_bounds`); the signature keeps them (`Signature.limits`), the graph
    function too (`graph.size_bounds`). Any other such model, and one `run_time_dims=False` leaves,
    is returned as a `strato.specializing.ShapeSpecializingModel`: each call runs the
    model compiled for its arrays' sizes, compiled on the first call that brings them
    (`specialize=False` refuses such a model instead). A model with operators whose
    output shapes depend on the data, or on input values known only at run time, is
    returned as a `strato.staged.StagedModel`: compiled parts, each specialized on its
    sizes in the same way, with those operators run on the host between them.

    A model compiled before with the same bytes and options comes from the compile
    cache (`strato.runtime.cache`) without compiling, and so does each kernel compiled
    before in any model (a target's kernels, where it caches them). `cache=False` or
    `STRATO_CACHE=0` turns the cache off; by default it is on, except the whole-model
    entry when `after_stage` asks for the IR.
    """
    compile_target = resolve_target(target, fast_math=fast_math, threads=threads)
    shapes = check_input_shapes(input_shapes)
    declared = check_size_bounds(size_bounds)
    tuning_log = _tuning_log(tuning)
    compile_target.prepare()
    open_dims = [
        f"'{dim}' of '{name}'"
        for name, shape in (shapes or {}).items()
        if not is_structure_spec(shape)
        for dim in shape
        if isinstance(dim, str)
    ]
    # the options of the compiles a specialized or staged model makes
    options_per_part = _part_options(
        compile_target, after_stage=after_stage, before_stage=before_stage, name=name,
        passes_before=passes_before, passes_after=passes_after, cache=cache, tuning=tuning,
        progress=progress,
    )  # fmt: skip
    if open_dims:  # input_shapes pins some dimensions of an input and leaves others open
        rerouted = _specializing(model, shapes, options_per_part, declared) if specialize else None
        if rerouted is None:
            raise SymbolicShapeError(
                f"input_shapes leaves {', '.join(open_dims)} open: strato needs static "
                "shapes here"
            )
        return rerouted
    # the cache key and the importer read the weights' bytes once between them
    with raw_data.sharing():
        key = None
        if _use_cache(cache, after_stage):
            key = compile_cache_key(
                model, compile_target, shapes, name=name, hooks=(passes_before, passes_after),
                tuning_log=tuning_log, run_time_dims=run_time_dims, size_bounds=declared,
            )
            if key is not None:
                from strato.runtime.cache import lookup

                cached = lookup(key)
                if cached is not None:
                    return cached
        options = BuildOptions(cache=_use_kernel_cache(cache), progress=progress)
        try:
            with gc_for_compiling():
                compiled = _compile_model(
                    model, compile_target, shapes, after_stage, before_stage, name, passes_before,
                    passes_after, tuning_log, options, run_time_dims, declared,
                )  # fmt: skip
        except ModelImportError as error:
            if not specialize:
                raise
            # host operators first: the staged model's parts specialize on their own sizes
            rerouted = _staged(model, shapes, options_per_part, _host_ifs(error))
            if rerouted is None and isinstance(error, SymbolicShapeError):
                rerouted = _specializing(model, shapes, options_per_part, declared)
                if rerouted is not None:
                    rerouted.why_per_size = error.refusal
            if rerouted is None:
                raise
            return rerouted
    if key is not None:
        from strato.runtime.cache import store_in_background

        store_in_background(key, compiled)
    return compiled


def _compile_model(
    model: str | os.PathLike | onnx.ModelProto,
    compile_target: Target,
    shapes: dict[str, tuple[int, ...]] | None,
    after_stage: StageCallback | None,
    before_stage: Callable[[str], None] | None,
    name: str | None,
    passes_before: PipelineHook,
    passes_after: PipelineHook,
    tuning_log: str | None,
    options: BuildOptions,
    run_time_dims: bool | None = None,
    size_bounds: Mapping[str, SizeBound] | None = None,
) -> CompiledModel:
    proto_or_path, default_name = _model_source(model)
    imported = _import(proto_or_path, shapes, run_time_dims is not False)
    raw_data.release()  # the importer was their last reader
    why = _bound_sizes(imported.function, size_bounds or {})
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names, why
    )
    if signature.is_dynamic:
        try:
            return _compile_imported(
                imported, signature, compile_target, after_stage, before_stage, name,
                default_name, passes_before, passes_after, tuning_log, options,
            )  # fmt: skip
        except (StratoError, VerifyException) as error:
            # what does not compile once for every size compiles per call's sizes
            raise SymbolicShapeError(
                f"the model does not compile once for every size ({error}); strato "
                "needs static shapes here"
            ) from None
    return _compile_imported(
        imported, signature, compile_target, after_stage, before_stage, name, default_name,
        passes_before, passes_after, tuning_log, options,
    )  # fmt: skip


def check_size_bounds(
    bounds: Mapping[str, int | tuple[int, int | None] | tuple[int, int | None, int] | None]
    | None,
) -> dict[str, SizeBound]:
    """`size_bounds` as given to `compile_model`, checked: a size name -> its most, a
    (least, most) pair, a (least, most, multiple) triple (sizes divisible by
    `multiple` only) or None (no bound); a clear error for anything else."""
    checked: dict[str, SizeBound] = {}
    for name, given in (bounds or {}).items():
        bound = tuple(given) if isinstance(given, tuple | list) else (0, given)
        least, most, multiple = (*bound, 1)[:3] if len(bound) in (2, 3) else (None, None, None)
        if (
            not isinstance(name, str)
            or len(bound) not in (2, 3)
            or not _size(least)
            or not (most is None or _size(most))
            or (most is not None and most < least)
            or not (_size(multiple) and multiple >= 1)
        ):
            raise StratoError(
                f"size_bounds: '{name}' must be bounded by a most (an integer >= 0), a "
                "(least, most) pair with least <= most (most None for none), or a (least, "
                f"most, multiple) triple (multiple >= 1: sizes it divides only), not {given!r}"
            )
        checked[name] = SizeBound(int(least), None if most is None else int(most), int(multiple))
    return checked


def _size(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 0


def _bound_sizes(function, declared: Mapping[str, SizeBound]) -> dict[str, str]:
    """Record on `function` the bounds of its run-time sizes (`graph.size_bounds`):
    those `declared` (which must name its sizes) and the mosts the model implies,
    the tighter of each; why each implied most, by size."""
    from strato.dialects.graph.dims import (
        RunTimeDims,
        implied_size_bounds,
        run_time_axes,
        set_size_bounds,
        size_bounds,
    )

    if not declared and not any(run_time_axes(arg) for arg in function.args):
        return {}
    dims = RunTimeDims.of_function(function)
    names = sorted({dims.name(arg, d) or "" for arg in function.args for d in run_time_axes(arg)} - {""})
    unknown = sorted(set(declared) - set(names))
    if unknown:
        raise StratoError(
            f"size_bounds names {', '.join(repr(n) for n in unknown)}, not a run-time size "
            f"of the model (its run-time sizes: {', '.join(names) or 'none'})"
        )
    bounds = size_bounds(function)
    for name, bound in declared.items():
        bounds[name] = bounds.get(name, SizeBound()).meet(bound)
    why: dict[str, str] = {}
    for name, (bound, reason) in implied_size_bounds(function).items():
        met = bounds.get(name, SizeBound()).meet(bound)
        if met.most != bounds.get(name, SizeBound()).most:
            why[name] = reason
        bounds[name] = met
    set_size_bounds(function, bounds)
    return why


def _import(proto_or_path, shapes: dict[str, tuple[int, ...]] | None, run_time_dims: bool):
    """The model imported with its dynamic dimensions of run-time size where its
    operators take them (`run_time_dims`); where the import of such a model fails (a
    dimension that meets a static one, ...), the import of static shapes decides."""
    if run_time_dims:
        try:
            return import_onnx(proto_or_path, input_shapes=shapes, run_time_dims=True)
        except SymbolicShapeError:
            raise
        except (ModelImportError, VerifyException):
            pass  # the static import names the model's error, or the open dimension
    return import_onnx(proto_or_path, input_shapes=shapes)


def _compile_imported(
    imported,
    signature: Signature,
    compile_target: Target,
    after_stage: StageCallback | None,
    before_stage: Callable[[str], None] | None,
    name: str | None,
    default_name: str,
    passes_before: PipelineHook,
    passes_after: PipelineHook,
    tuning_log: str | None,
    options: BuildOptions,
) -> CompiledModel:
    """`imported` compiled for `compile_target`."""
    _check_signature_size(signature)
    module = imported.module
    if after_stage is not None:
        after_stage("graph", module)
    stages = with_pipeline_hooks(
        compile_target.stages(tuning_log=tuning_log), passes_before, passes_after
    )
    stages, schedule = _schedule_in_build(
        compile_target, stages, after_stage, tuning_log, options.progress
    )
    try:
        run_stages(stages, module, before=before_stage, after=after_stage)
    except MemoryError:
        raise StratoError(
            "out of memory while compiling (a constant too large to fold on this machine?)"
        ) from None
    in_build = {}
    if schedule is not None:
        if before_stage is not None:
            before_stage(schedule.name)  # it runs in the build, kernel by kernel
        in_build["schedule"] = schedule.context()
    return compile_target.build(
        module,
        imported.function_name,
        signature,
        public_name=c_identifier(name or default_name),
        options=options,
        **in_build,
    )


def _part_options(
    target: Target,
    *,
    after_stage: StageCallback | None = None,
    before_stage: Callable[[str], None] | None = None,
    name: str | None = None,
    passes_before: PipelineHook = None,
    passes_after: PipelineHook = None,
    cache: bool | None = None,
    tuning: str | os.PathLike | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The options of `compile_model` that the compiles of a specialized or staged
    model's parts take (`_specializing`, `_staged`)."""
    return {
        "target": target, "after_stage": after_stage, "before_stage": before_stage,
        "name": name, "passes_before": passes_before, "passes_after": passes_after,
        "cache": cache, "tuning": tuning, "progress": progress,
    }  # fmt: skip


def _specializing(
    model: str | os.PathLike | onnx.ModelProto,
    shapes: dict[str, tuple[int, ...]] | None,
    options: dict,
    bounds: Mapping[str, SizeBound] | None = None,
):
    """`model`, whose inputs have dynamic dimensions, compiled per call's sizes with
    `options` (`strato.specializing`), calls out of `bounds` (by dimension name)
    refused; None when no input has one (the error came from elsewhere)."""
    from strato.frontends.onnx.importer import load_model as load_onnx
    from strato.specializing import InputDims, Recipe, ShapeSpecializingModel

    source, default_name = _model_source(model)
    proto, _ = load_onnx(source)
    dims = InputDims.of(proto, shapes)
    if dims is None:
        return None
    if bounds:
        named = {dim for shape in dims.shapes.values() for dim in shape or () if isinstance(dim, str)}
        unknown = sorted(set(bounds) - named)
        if unknown:
            raise StratoError(
                f"size_bounds names {', '.join(repr(n) for n in unknown)}, not a dynamic "
                f"dimension of the model (its named ones: {', '.join(sorted(named)) or 'none'})"
            )
        dims = dataclasses.replace(dims, bounds=dict(bounds))
    options = {**options, "name": options["name"] or default_name}
    from strato.frontends.onnx import sequences

    initializers = {init.name for init in proto.graph.initializer}
    inputs = []  # the arrays a call takes: a sequence input's elements, pinned, in its place
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        if sequences.is_structured(value.type) and shapes and value.name in shapes:
            arguments = sequences.argument_types(
                value.name, value.type, shapes[value.name], StratoError
            )
            inputs.extend(name for name, _ in arguments)
        else:
            inputs.append(value.name)

    def compile_for(sizes: dict[str, tuple[int, ...]]) -> CompiledModel:
        pinned = {**(shapes or {}), **sizes}
        try:
            return compile_model(proto, input_shapes=pinned, specialize=False, **options)
        except ModelImportError as error:
            # at these sizes, host operators or an If run on the host (strato.staged)
            staged = _staged(proto, pinned, options, _host_ifs(error))
            if staged is None:
                raise
            return staged

    at_ones: dict[tuple, object] = {}

    def separate(dim: str, one: dict, sizes: dict, count: int):
        """How the model separates along `dim` (`strato.separable`), from its imports
        with `dim` at 1 (made once, for every size checked after) and at `count`."""
        from strato.separable import NotSeparable, separation

        key = tuple(sorted((name, tuple(shape)) for name, shape in one.items()))
        try:
            with raw_data.sharing():
                if key not in at_ones:
                    if len(at_ones) >= 4:  # kept for a few sizes of the other dimensions
                        del at_ones[next(iter(at_ones))]
                    at_ones[key] = import_onnx(proto, input_shapes={**(shapes or {}), **one})
                at_one = at_ones[key]
                at_count = import_onnx(proto, input_shapes={**(shapes or {}), **sizes})
        except StratoError as error:
            raise NotSeparable(f"the model does not import at that size: {error}") from None
        if at_one.input_names != inputs or at_count.input_names != inputs:
            raise NotSeparable("the model's inputs are not tensors one by one")
        return separation(at_one.function, at_count.function, count)

    hooks = options.get("passes_before") or options.get("passes_after")
    recipe = Recipe(
        proto,
        shapes,
        str(options["target"]),
        options["name"],
        _tuning_log(options.get("tuning")),
        unsavable="it was compiled with passes hooks (passes_before, passes_after)" if hooks else None,
    )
    return ShapeSpecializingModel(
        dims, inputs, [value.name for value in proto.graph.output], compile_for, separate, recipe
    )


def _load_specializing(source: Any, where: str) -> CompiledModel:
    """A saved `strato-specializing-model` (`strato.specializing`): the model compiled
    per call's sizes again, with the sizes saved in the archive taken as they are."""
    import json
    import zipfile

    from strato.runtime.saved_model import ModelFileError, model_from_bytes
    from strato.specializing import MANIFEST, MODEL, TUNING

    def fail(reason: str) -> ModelFileError:
        return ModelFileError(f"corrupt: {reason}", location=where)

    try:
        with zipfile.ZipFile(source) as archive:
            manifest = json.loads(archive.read(MANIFEST))
            model_bytes = archive.read(MODEL)
            tuning = archive.read(TUNING) if manifest.get("tuned") is True else None
            sizes = [(entry["shapes"], entry["member"], archive.read(entry["member"])) for entry in manifest["sizes"]]
    except (KeyError, ValueError, TypeError, AttributeError, zipfile.BadZipFile) as err:
        raise fail(f"not a model compiled per size ({' '.join(str(err).split())})") from None
    try:
        proto = onnx.load_from_string(model_bytes)
    except Exception as err:  # noqa: BLE001 - protobuf's DecodeError, or worse: bad input
        raise fail(f"its ONNX model does not parse ({' '.join(str(err).split())})") from None
    target, name, pinned = manifest.get("target"), manifest.get("name"), manifest.get("input_shapes")
    if not isinstance(target, str) or not (name is None or isinstance(name, str)) or not isinstance(pinned, dict):
        raise fail("the manifest's target, name or input shapes are missing or not valid")
    if not all(_shape_entry(shapes) for shapes, _, _ in sizes):
        raise fail("the manifest's compiled sizes are not input shapes")
    tuning_path = _saved_tuning_log(tuning) if tuning is not None else None
    options = _part_options(resolve_target(target), name=name, tuning=tuning_path)
    model = _specializing(proto, check_input_shapes(pinned) if pinned else None, options)
    if model is None:
        raise fail("its model has no dynamic dimensions")
    for shapes, member, data in sizes:
        model.adopt(shapes, model_from_bytes(data, f"{where} ({member})"))
    model.origin = where
    return model


def _shape_entry(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        for shape in value.values()
    )


def _saved_tuning_log(data: bytes) -> str:
    """A file holding the tuning log saved with a model (in the compile cache's
    directory, named by its digest; a temporary file when that cannot be written)."""
    import hashlib
    import tempfile

    from strato.runtime.atomic_write import write_atomically
    from strato.runtime.cache import cache_dir

    name = f"{hashlib.sha256(data).hexdigest()[:32]}.jsonl"
    try:
        path = cache_dir() / "tuning" / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data, what="the tuning log")
        return str(path)
    except (OSError, StratoError):
        handle, path = tempfile.mkstemp(suffix=name)
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        return path


def _staged(
    model: str | os.PathLike | onnx.ModelProto,
    shapes: dict[str, tuple[int, ...]] | None,
    options: dict,
    host_ifs: frozenset[str] = frozenset(),
):
    """`model` as compiled parts with its data-dependent-shape operators, and the nodes
    whose shape-deciding inputs are known only at run time, on the host between them
    (`strato.staged`); None when it has none, or has other operators strato does not
    import (the importer's diagnostic names those)."""
    from strato.frontends.onnx.importer import load_model as load_onnx
    from strato.frontends.onnx.op_table import IMPORT_TIME_INPUTS, ONNX_CONVERTERS
    from strato.staged import has_host_ops, staged_model

    source, default_name = _model_source(model)
    proto, _ = load_onnx(source)
    if not has_host_ops(proto, IMPORT_TIME_INPUTS, host_ifs):
        return None
    from strato.runtime.host_ops import HOST_OPS

    if any(
        node.domain not in ("", "ai.onnx")
        or (node.op_type not in ONNX_CONVERTERS and node.op_type not in HOST_OPS)
        for node in proto.graph.node
    ):
        return None
    options = {**options, "name": options["name"] or default_name}

    def compile_part(part: onnx.ModelProto):
        names = {value.name for value in part.graph.input}
        pinned = {k: v for k, v in (shapes or {}).items() if k in names} or None
        if _has_strings(part):
            # strings reach compiled code as ids, through the ONNX backend's encoding
            from strato.onnx_backend import prepare

            rep = prepare(part, **({"input_shapes": pinned} if pinned else {}))
            return lambda *arrays: list(rep.run(list(arrays)))
        return compile_model(part, input_shapes=pinned, **options)

    def compile_loop(part: onnx.ModelProto):
        """A host Loop compiled whole for its trip count (`strato.staged`): a
        `graph.scan`, or refused rather than unrolled beyond `UNROLLED_NODES` nodes, in
        its compile and in those its calls make (a part compiled per size)."""
        from strato.frontends.onnx.convert_control import UNROLLED_NODES, unroll_limit

        with unroll_limit(UNROLLED_NODES):
            compiled = compile_part(part)

        def run(*arrays):
            with unroll_limit(UNROLLED_NODES):
                return compiled(*arrays)

        return run

    return staged_model(proto, compile_part, IMPORT_TIME_INPUTS, host_ifs, compile_loop)


def _host_ifs(error: ModelImportError) -> frozenset[str]:
    """The If an import failed on for want of selecting between its branches (named by
    its first output), which a staged model runs on the host; none for other errors."""
    return frozenset([error.node]) if isinstance(error, RuntimeBranchError) else frozenset()


def _has_strings(model: onnx.ModelProto) -> bool:
    graph = model.graph
    values = (*graph.input, *graph.output)
    return any(v.type.tensor_type.elem_type == onnx.TensorProto.STRING for v in values) or any(
        init.data_type == onnx.TensorProto.STRING for init in graph.initializer
    )


def _schedule_in_build(
    compile_target: Target,
    stages: tuple[Stage, ...],
    after_stage: StageCallback | None,
    tuning_log: str | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[tuple[Stage, ...], ScheduleDefaultPass | None]:
    """`stages` without the schedule-default pass that ends them, and that pass, when
    the target's build schedules the kernels itself (`schedules_in_build`: each kernel
    where it is compiled, in parallel, with the same result) and nobody looks at the
    scheduled module (no `after_stage`), at a tuning log or at the build's progress
    (whose first report counts the kernels found in the cache, which a build that
    schedules its kernels only knows once they are scheduled); else `stages` and None."""
    from strato.transforms.schedule_default import ScheduleDefaultPass

    if after_stage is not None or tuning_log or progress is not None:
        return stages, None
    if not getattr(compile_target, "schedules_in_build", False):
        return stages, None
    if not stages or not stages[-1].passes:
        return stages, None
    last = stages[-1]
    schedule = last.passes[-1]
    if type(schedule) is not ScheduleDefaultPass or schedule.tuning_log:
        return stages, None
    return (*stages[:-1], Stage(last.name, last.passes[:-1], last.check)), schedule


def load_model(path: str | os.PathLike) -> CompiledModel:
    """The model saved at `path` (`model.save(path)`), ready to call: read by the loader
    of the target that saved it (`strato.runtime.saved_model`); nothing is compiled,
    except, for a model compiled per call's sizes (`strato.specializing`), the sizes it
    was not saved with, when a call brings them."""
    from strato.runtime.saved_model import load_model as load_saved
    from strato.runtime.saved_model import register_model_format
    from strato.specializing import FORMAT as SPECIALIZING
    from strato.targets.registry import load_builtin_targets

    load_builtin_targets()
    register_model_format(SPECIALIZING, _load_specializing)
    return load_saved(path)


def _use_kernel_cache(cache: bool | None) -> bool:
    from strato.runtime.cache import cache_enabled

    return cache is not False and cache_enabled()


def _use_cache(cache: bool | None, after_stage: StageCallback | None) -> bool:
    from strato.runtime.cache import cache_enabled

    if cache is False or not cache_enabled():
        return False
    return cache is True or after_stage is None


def compile_cache_key(
    model: str | os.PathLike | onnx.ModelProto,
    target: Target,
    shapes: dict[str, tuple[int, ...]] | None,
    *,
    name: str | None = None,
    hooks: tuple[PipelineHook, PipelineHook] = (None, None),
    tuning_log: str | None = None,
    run_time_dims: bool | None = None,
    size_bounds: Mapping[str, SizeBound] | None = None,
) -> str | None:
    """The compile cache key of `model` with these options (None: the model is
    neither a readable file, a ModelProto nor a zoo name, so compiling reports it).
    `run_time_dims` is part of it: a dynamic model compiled once for every size on
    request is not what another policy would give.

    A file is its bytes and those of its external data; a zoo name stands for itself
    (the zoo's code is part of strato's source fingerprint). The loaded plugins are
    part of the key too."""
    from strato.runtime.cache import cache_key

    content = _model_bytes(model)
    if content is None:
        return None
    kind, data = content
    target_class = type(target)
    options = {
        "model": kind,
        "target": target.cache_key(),
        "target_class": f"{target_class.__module__}.{target_class.__qualname__}",
        "input_shapes": sorted((k, v) for k, v in (shapes or {}).items()),
        "name": name,
        "hooks": [_hook_text(hook) for hook in hooks],
        "tuning": _file_digest(tuning_log),
        "plugins": _plugin_fingerprint(),
        "run_time_dims": run_time_dims,
    }
    if size_bounds:  # (absent otherwise: the keys of models compiled before stay)
        options["size_bounds"] = sorted(
            (k, b.least, b.most) + ((b.multiple,) if b.multiple > 1 else ())
            for k, b in size_bounds.items()
        )
    return cache_key(data, options)


def _plugin_fingerprint() -> list[str]:
    """The plugins loaded in this process, each with the size and modification time of
    its module's file: a plugin's passes, templates and targets shape the code."""
    import sys

    from strato.plugins import loaded_plugins

    entries = []
    for spec, failure in sorted(loaded_plugins().items()):
        module = sys.modules.get(spec.partition(":")[0])
        path = getattr(module, "__file__", None)
        try:
            stat = os.stat(path) if path else None
        except OSError:
            stat = None
        where = f"{stat.st_size}:{stat.st_mtime_ns}" if stat else "?"
        entries.append(f"{spec}={where}{'!' if failure else ''}")
    return entries


def _tuning_log(tuning: str | os.PathLike | None) -> str | None:
    """The tuning log this compilation schedules from: `tuning`, checked to be a
    readable file, if any."""
    if tuning is None:
        return None
    path = os.fspath(tuning)
    if not os.path.isfile(path):
        raise StratoError("the tuning log does not exist or is not a file", location=path)
    return path


def _file_digest(path: str | None) -> str | None:
    """A digest of the file's bytes: a tuning log that gains records is another key."""
    if path is None:
        return None
    import hashlib

    try:
        with open(path, "rb") as stream:
            return hashlib.sha256(stream.read()).hexdigest()
    except OSError as err:
        raise StratoError(f"cannot read the tuning log: {err.strerror}", location=path) from None


def _hook_text(hook: PipelineHook) -> str | None:
    if hook is None or isinstance(hook, str):
        return hook
    return ",".join(
        str(p.pipeline_pass_spec()) if isinstance(p, ModulePass) else repr(p) for p in hook
    )


def _model_bytes(
    model: str | os.PathLike | onnx.ModelProto,
) -> tuple[str, bytes | Iterator[bytes]] | None:
    if isinstance(model, onnx.ModelProto):
        return "proto", _message_chunks(model)
    if not isinstance(model, (str, os.PathLike)):
        return None
    path = os.fspath(model)
    if not os.path.isfile(path):
        from strato import zoo

        if isinstance(model, str) and model in zoo.ZOO:
            return f"zoo:{model}", b""
        return None
    try:
        with open(path, "rb") as file:
            data = file.read()
        return f"file:{os.path.basename(path)}", data + _external_data(data, path)
    except (OSError, ValueError):
        return None


_WEIGHT_FIELDS = frozenset({"graph", "initializer"})
"""The message fields on the way from a model to its weights' bytes (its graph, the
graph's initializers): `_message_chunks` opens those and serializes any other."""


def _message_chunks(message: Any) -> Iterator[bytes]:
    """A model's content for its cache key without serializing it whole: each set field
    by name, in order; the graph and its initializers field by field, a tensor's
    `raw_data` as it is (the weights are most of a model's bytes, and serializing them
    costs four times as much as hashing them: 0.11 s for ResNet-18's 45 MB), any other
    message serialized. Every chunk is framed by its field's name and length, so two
    different models never give the same sequence."""
    for field, value in _set_fields(message):
        if field.message_type is None:
            data = value if field.name == "raw_data" else repr(value).encode()
            yield f"{field.name}={len(data)}\n".encode()
            yield data
            continue
        elements = value if field.is_repeated else [value]
        for element in elements:
            if field.name in _WEIGHT_FIELDS:
                yield f"{{{field.name}\n".encode()
                yield from _message_chunks(element)
                yield b"}\n"
            else:
                data = element.SerializeToString()
                yield f"{field.name}:{len(data)}\n".encode()
                yield data


def _set_fields(message: Any) -> Iterator[tuple[Any, Any]]:
    """`message.ListFields()`; a tensor's `raw_data` read through `raw_data.raw_data`, so
    that the importer of the same compilation reads the same bytes instead of a copy."""
    if not isinstance(message, onnx.TensorProto):
        yield from message.ListFields()
        return
    from strato.frontends.onnx.raw_data import raw_data

    for field in sorted(message.DESCRIPTOR.fields, key=lambda field: field.number):
        if field.is_repeated:
            value = getattr(message, field.name)
            if len(value):
                yield field, value
        elif message.HasField(field.name):
            value = raw_data(message) if field.name == "raw_data" else getattr(message, field.name)
            yield field, value


def _external_data(data: bytes, path: str) -> bytes:
    """The bytes of the external data files a serialized model refers to."""
    from onnx.external_data_helper import uses_external_data

    try:
        proto = onnx.ModelProto.FromString(data)
    except Exception:  # noqa: BLE001 - not a model: compiling reports it
        return b""
    locations = []
    for tensor in _graph_tensors(proto.graph):
        if uses_external_data(tensor):
            entries = {entry.key: entry.value for entry in tensor.external_data}
            if "location" in entries:
                locations.append(entries["location"])
    base = os.path.dirname(path)
    chunks = []
    for location in sorted(set(locations)):
        with open(os.path.join(base, location), "rb") as file:
            chunks.append(location.encode() + b"\0" + file.read())
    return b"".join(chunks)


def _graph_tensors(graph: onnx.GraphProto):
    """Every tensor of `graph`: initializers and attribute values, subgraphs included."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from _graph_tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graph_tensors(subgraph)


def resolve_target(
    target: str | TargetSpec | Target, *, fast_math: bool = False, threads: int | None = None
) -> Target:
    """The registered target `target` names (`strato.targets.registry.get_target`), with
    `-fast-math` added when `fast_math` is set and `-threads=N` when `threads` is given."""
    extra: dict[str, str] = {}
    if fast_math:
        extra["fast-math"] = "true"
    if threads is not None:
        from strato.runtime.threads import check_threads

        extra["threads"] = str(check_threads(threads))
    if extra:
        spec = target.spec if isinstance(target, Target) else target
        if not isinstance(spec, TargetSpec):
            spec = parse_target(spec)
        target = TargetSpec(spec.name, {**spec.options, **extra})
    return get_target(target)


PipelineHook = str | Sequence[ModulePass] | None
"""Extra passes for `compile_model`: a pipeline in strato-opt's `-p` syntax (plugin
passes included), or pass instances."""


def _hook_passes(hook: PipelineHook, what: str) -> tuple[ModulePass, ...]:
    if hook is None:
        return ()
    if isinstance(hook, str):
        from strato.pipeline import all_passes

        try:
            return PassPipeline.parse_spec(all_passes(), hook).passes
        except (ValueError, TypeError) as err:
            raise StratoError(f"{what}: {err}") from None
    passes = tuple(hook)
    for pass_ in passes:
        if not isinstance(pass_, ModulePass):
            raise StratoError(f"{what}: {pass_!r} is not a pass (an xdsl ModulePass)")
    return passes


def with_pipeline_hooks(
    stages: Sequence[Stage], passes_before: PipelineHook = None, passes_after: PipelineHook = None
) -> tuple[Stage, ...]:
    """`stages` with `passes_before` ahead of the graph stage's passes and `passes_after`
    right behind them (both at the start when there is no graph stage)."""
    before = _hook_passes(passes_before, "passes_before")
    after = _hook_passes(passes_after, "passes_after")
    if not before and not after:
        return tuple(stages)
    hooked = list(stages)
    position = next((i for i, stage in enumerate(hooked) if stage.name == GRAPH_STAGE), None)
    if position is None:
        return (Stage("hooks", (*before, *after)), *hooked)
    graph = hooked[position]
    hooked[position] = Stage(graph.name, (*before, *graph.passes, *after), graph.check)
    return tuple(hooked)


def _model_source(
    model: str | os.PathLike | onnx.ModelProto,
) -> tuple[str | os.PathLike | onnx.ModelProto, str]:
    """What to import for `model` (a zoo name becomes its ModelProto) and the model's
    default name."""
    if isinstance(model, onnx.ModelProto):
        return model, model.graph.name or "model"
    if isinstance(model, str) and not os.path.exists(model):
        from strato import zoo

        if model in zoo.ZOO:
            return zoo.build_model(model), model
        if not model.endswith(".onnx") and os.sep not in model:
            raise StratoError(
                f"unknown model '{model}': not a file and not a zoo model "
                f"(zoo: {', '.join(zoo.zoo_names())})"
            )
    if isinstance(model, (str, os.PathLike)):
        stem = os.path.basename(os.fspath(model))
        return model, stem.removesuffix(".onnx")
    return model, "model"


def check_input_shapes(
    input_shapes: Mapping[str, Sequence[int]] | None,
) -> dict[str, tuple[int, ...]] | None:
    """`input_shapes` checked: a mapping from input names to sequences of non-negative
    integers (not floats or bools) whose tensor fits in `MAX_BUFFER_BYTES`, or names of
    dimensions left open (`["batch", 64]` pins the second dimension only: the model is
    compiled per size of the first, `strato.specializing`). Each error names the entry,
    e.g. `input_shapes['x']: ...`."""
    if input_shapes is None:
        return None
    if not isinstance(input_shapes, Mapping):
        raise StratoError(
            f"input_shapes must map input names to shapes, got {type(input_shapes).__name__}"
        )
    checked: dict[str, tuple[int, ...]] = {}
    for name, shape in input_shapes.items():
        where = f"input_shapes[{name!r}]"
        if not isinstance(name, str):
            raise StratoError(f"{where}: input names are strings")
        if is_structure_spec(shape):  # a sequence's element shapes, None: an absent optional
            checked[name] = checked_structure(where, shape, MAX_BUFFER_BYTES)
            continue
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence | np.ndarray):
            raise StratoError(f"{where}: a shape is a list of integers, got {shape!r}")
        dims: list = []
        for dim in shape:
            if isinstance(dim, str) and dim.isidentifier():
                dims.append(dim)  # a dimension left open, by its name
                continue
            if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
                raise StratoError(
                    f"{where}: dimension {dim!r} is not an integer (or the name of a "
                    "dimension left open)"
                )
            if dim < 0:
                raise StratoError(f"{where}: dimension {dim} is negative")
            dims.append(int(dim))
        if math.prod(d for d in dims if isinstance(d, int)) * 8 > MAX_BUFFER_BYTES:
            raise StratoError(
                f"{where}: a tensor of shape {dims} does not fit in memory "
                f"(more than {MAX_BUFFER_BYTES} bytes)"
            )
        checked[name] = tuple(dims)
    return checked


def _check_signature_size(signature: Signature) -> None:
    for spec in (*signature.inputs, *signature.outputs):
        size = math.prod(spec.shape) * spec.dtype.itemsize
        if size > MAX_BUFFER_BYTES:
            raise StratoError(
                f"'{spec.name}' of shape {list(spec.shape)} needs {size} bytes, more than "
                f"a 64-bit address space holds ({MAX_BUFFER_BYTES} bytes)"
            )
