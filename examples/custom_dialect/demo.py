"""Use the strato-silu plugin from Python: compile an ONNX model whose x * sigmoid(x)
the plugin's pass turns into act.silu, run it, and check the pass for equivalence.

    pip install ./examples/custom_dialect     # or put the directory on PYTHONPATH and
    python examples/custom_dialect/demo.py    # strato_silu is imported below anyway
"""

import numpy as np
import onnx
import strato_silu  # noqa: F401  (registers the plugin when it is not installed)
from onnx import TensorProto, helper, numpy_helper

import strato
from strato import api
from strato.frontends.onnx import import_onnx


def silu_model() -> onnx.ModelProto:
    """y = silu(x @ W): a MatMul, then SiLU written as Sigmoid and Mul, as exporters do."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"]),
        helper.make_node("Sigmoid", ["h"], ["s"]),
        helper.make_node("Mul", ["h", "s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "silu_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=[weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> None:
    model = silu_model()

    # 1. strato.compile runs the plugin's pass before the graph-level optimizations (the
    #    llvm target's graph stage, which ends with graph-plan-memory);
    #    convert-graph-to-te then lowers act.silu by the plugin's strategy.
    seen: list[str] = []

    def after_stage(stage: str, module: api.ModuleOp) -> None:
        if stage == "graph-plan-memory" and "act.silu" in str(module):
            seen.append(stage)

    compiled = strato.compile(model, passes_before="act-fuse-silu", after_stage=after_stage)
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    (y,) = compiled(x)
    h = x @ numpy_helper.to_array(model.graph.initializer[0])
    expected = h / (1 + np.exp(-h))
    print("act.silu after the graph-level optimizations:", bool(seen))
    print("largest difference from numpy:", float(np.abs(y - expected).max()))
    assert seen and np.allclose(y, expected, rtol=1e-4, atol=1e-5)

    # 2. Equivalence checking covers the plugin: its op is interpreted by its evaluate.
    module = import_onnx(model).module
    passes = [strato_silu.ActFuseSiluPass(), strato_silu.ActExpandSiluPass()]
    report = api.check_equivalence(module, passes, n_inputs=4)
    print("passes checked:", ", ".join(report.passes_checked))
    assert report.difference is None and report.unsupported is None


if __name__ == "__main__":
    main()
