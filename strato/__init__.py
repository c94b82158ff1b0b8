"""strato: a multi-level deep-learning compiler on xDSL.

    import strato
    model = strato.compile("mlp.onnx", target="llvm")   # or a built-in model: "mlp"
    (logits,) = model(x)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from strato.runtime.compiled_model import CompiledModel


def compile(model: Any, target: str = "llvm", **options: Any) -> "CompiledModel":
    """Compile an ONNX model (a path, a ModelProto, or the name of a built-in model such
    as "mlp") for `target`.

    Returns a callable that takes numpy arrays in the ONNX input order and returns
    the outputs as a list in the ONNX output order. Runs the same passes as the CLI.
    """
    from strato.compiler import compile_model

    return compile_model(model, target=target, **options)


__all__ = ["compile", "__version__"]
