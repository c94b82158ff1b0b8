"""`strato.compile`: an ONNX model to a callable compiled model.

The stages, in order, each a function from one artifact to the next:

    import      ONNX ModelProto -> graph-dialect module (strato.frontends.onnx)
    signature   recorded from the graph-level entry before lowering
    lower       strato.pipeline.COMPILE (graph optimizations, then graph -> te -> loop -> llvm)
    build       llvm dialect -> LLVM IR -> machine code (strato.targets.llvm)

    model = compile_model("mlp.onnx")
    (logits,) = model(x)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import onnx

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from strato.context import make_context
from strato.diagnostics import StratoError
from strato.frontends.onnx import import_onnx
from strato.pipeline import COMPILE, run_pipeline
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.signature import Signature

if TYPE_CHECKING:
    from strato.targets.llvm.jit import JitFunction

TARGETS = ("llvm",)

StageCallback = Callable[[str, ModuleOp], None]
"""Called with a stage name and the module after it: "graph" after import, then the name
of each lowering pass after that pass (the last leaves the llvm dialect)."""


def compile_model(
    model: str | os.PathLike | onnx.ModelProto,
    target: str = "llvm",
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    after_stage: StageCallback | None = None,
) -> CompiledModel:
    """Compile an ONNX model (a path or a ModelProto) for `target`.

    `input_shapes` fixes input shapes by name (for models with symbolic dimensions);
    `after_stage` sees the module after each IR stage, e.g. to dump it.
    """
    if target not in TARGETS:
        raise StratoError(f"unknown target '{target}' (available: {', '.join(TARGETS)})")
    imported = import_onnx(model, input_shapes=input_shapes)
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names
    )
    module = imported.module
    callback = None
    if after_stage is not None:

        def callback(previous: ModulePass | None, module: ModuleOp, _next: object) -> None:
            after_stage("graph" if previous is None else previous.name, module)

    run_pipeline(make_context(), module, COMPILE, callback)
    return build_llvm(module, imported.function_name, signature)


def build_llvm(
    module: ModuleOp, entry_name: str, signature: Signature, *, opt_level: int = 3
) -> CompiledModel:
    """JIT-compile an llvm-dialect module whose function `entry_name` takes pointers to
    the buffers of `signature`: the inputs, then the outputs it fills."""
    from strato.targets.llvm.jit import JitModule

    jit = JitModule(module, opt_level=opt_level)
    entry = jit.function(entry_name)
    _check_entry_abi(entry, signature)

    def run(buffers: Sequence[np.ndarray]) -> None:
        entry(*buffers)

    return CompiledModel(signature, run, target="llvm", llvm_ir=jit.llvm_ir)


def _check_entry_abi(entry: JitFunction, signature: Signature) -> None:
    """The lowered entry takes one pointer per input then one per output; a mismatch is
    a bug in the lowering, not in the model."""
    count = len(signature.inputs) + len(signature.outputs)
    if entry.param_types != ("ptr",) * count:
        raise AssertionError(
            f"@{entry.name} has parameters ({', '.join(entry.param_types)}); expected "
            f"{count} buffer pointers (inputs, then outputs)"
        )
    if entry.buffers is not None:
        flags = [spec is not None and spec.is_output for spec in entry.buffers]
        expected = [False] * len(signature.inputs) + [True] * len(signature.outputs)
        if flags != expected:
            raise AssertionError(
                f"@{entry.name} marks outputs at {flags}; expected inputs then outputs"
            )
