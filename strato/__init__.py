"""strato: a multi-level deep-learning compiler on xDSL.

    import strato
    model = strato.compile("mlp.onnx", target="llvm")   # or a built-in model: "mlp"
    (logits,) = model(x)
    model.save("mlp.strato")                              # run it again later:
    model = strato.load("mlp.strato")                     # no compilation
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


def load(path: Any) -> "CompiledModel":
    """The compiled model saved at `path` (`model.save(path)`, `strato compile MODEL -o
    model.strato`), ready to call; nothing is compiled."""
    from strato.compiler import load_model

    return load_model(path)


_PLUGIN_FUNCTIONS = (
    "register_dialect",
    "register_intrinsic",
    "register_pass",
    "register_target",
    "register_template",
)


def __getattr__(name: str) -> Any:
    # strato.register_* live in strato.plugins, imported on first use so that
    # `import strato` stays light.
    if name in _PLUGIN_FUNCTIONS:
        from strato import plugins

        return getattr(plugins, name)
    raise AttributeError(f"module 'strato' has no attribute '{name}'")


__all__ = [
    "__version__",
    "compile",
    "load",
    "register_dialect",
    "register_intrinsic",
    "register_pass",
    "register_target",
    "register_template",
]
