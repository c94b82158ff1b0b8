"""Compile and run a built-in (zoo) model and a user's ONNX file from Python.

    python examples/compile_models.py            # the MLP of the zoo and a small CNN
    python examples/compile_models.py --small    # the same (both are small already)

`strato.compile` takes a zoo name, a path to an .onnx file or an onnx.ModelProto, and
returns a callable: numpy arrays in, in the ONNX input order; a list of arrays out. A
target string picks the CPU and code generation options; a compiled model saves to one
file that `strato.load` runs without compiling.
"""

import argparse
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def small_cnn() -> onnx.ModelProto:
    """A user's model: Conv 3x3 -> Relu -> GlobalAveragePool -> Flatten -> Gemm."""
    rng = np.random.default_rng(0)
    init = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "conv_w"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "conv_b"),
        numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "fc_w"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "fc_b"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["scores"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 4])],
        initializer=init,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> None:
    rng = np.random.default_rng(1)

    # A built-in model by name.
    mlp = strato.compile("mlp")
    (logits,) = mlp(rng.random((1, 784), dtype=np.float32))
    print(mlp, "->", logits.shape)

    # A user's ONNX file.
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "small_cnn.onnx")
        onnx.save(small_cnn(), path)
        cnn = strato.compile(path)
        image = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
        (scores,) = cnn(image)
        # The graph interpreter runs each op's numpy reference semantics.
        (expected,) = run_graph(import_onnx(path).module, [image])

        # A target string: here LLVM's -O2 and fast math (`strato targets` lists more).
        fast = strato.compile(path, target="llvm -opt-level=2 -fast-math")
        # Saved to one file, the compiled model runs again without compiling.
        saved = os.path.join(directory, "small_cnn.strato")
        cnn.save(saved)
        again = strato.load(saved)
        (fast_scores,), (saved_scores,) = fast(image), again(image)
    print(cnn, "->", scores)
    print("largest difference from the graph interpreter:", float(np.abs(scores - expected).max()))
    assert np.allclose(scores, expected, rtol=1e-4, atol=1e-4)
    print("with -fast-math, largest difference:", float(np.abs(fast_scores - expected).max()))
    print("saved and loaded again without compiling: the same scores")
    assert np.allclose(fast_scores, expected, rtol=1e-4, atol=1e-4)
    assert np.array_equal(saved_scores, scores)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="accepted for symmetry; both models are small")
    parser.parse_args()
    main()
