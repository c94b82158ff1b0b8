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
    the outputs as a list in the ONNX output order. Runs the same passes as the CLI;
    `passes_before` / `passes_after` (a pipeline such as "my-pass{opt=1},cse") run
    before and after the graph-level optimizations. Installed plugins
    (`strato.plugins`) are loaded first; one that fails to load is a warning.
    """
    import warnings

    from strato.compiler import compile_model
    from strato.plugins import load_plugins

    for failure in load_plugins():
        warnings.warn(f"strato: {failure}", stacklevel=2)
    return compile_model(model, target=target, **options)


_PLUGIN_FUNCTIONS = ("register_dialect", "register_pass", "register_target")


def __getattr__(name: str) -> Any:
    # strato.register_* live in strato.plugins, imported on first use so that
    # `import strato` stays light.
    if name in _PLUGIN_FUNCTIONS:
        from strato import plugins

        return getattr(plugins, name)
    raise AttributeError(f"module 'strato' has no attribute '{name}'")


__all__ = ["compile", "register_dialect", "register_pass", "register_target", "__version__"]
