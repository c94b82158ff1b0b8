"""Tune one layer and plot its tuning curve (best speed found against trials).

The layer is a 128x128x128 matmul (a dense layer) in an ONNX model. Its task is tuned
twice from empty logs, once guided by the XGBoost cost model and once by random search,
and the best GFLOP/s found after each trial is plotted for both, with the speed of the
default configuration for reference. The tuning log is what compilation reads back.

    python examples/tune_layer.py                  # 64 trials a search -> tuning_curve.png
    python examples/tune_layer.py --small          # 3 trials of a 16x16x16 matmul (CI)
    python examples/tune_layer.py -o curve.png
"""

import argparse
import os
import tempfile

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt
import numpy as np
import onnx
from onnx import TensorProto, helper

import strato
from strato.autotuning import tune_model


def matmul_model(n: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "matmul",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(small: bool, output: str) -> None:
    n, trials, repeats = (16, 3, 1) if small else (128, 64, 5)
    model = matmul_model(n)
    curves = {}
    with tempfile.TemporaryDirectory() as directory:
        for search in ("xgb", "random"):
            log = os.path.join(directory, f"{search}.jsonl")
            (result,) = tune_model(model, trials=trials, log=log, search=search, batch=min(trials, 4), repeats=repeats, seed=0)
            curves[search] = result
            print(
                f"{search:>6}: {result.trials} trials, best {result.best_gflops:.2f} GFLOP/s "
                f"(default configuration {result.default_gflops or 0:.2f} GFLOP/s)"
            )
        # Compile with the log of the guided search: its best configuration is used.
        compiled = strato.compile(model, tuning=os.path.join(directory, "xgb.jsonl"))
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    np.testing.assert_allclose(compiled(a, a)[0], a @ a, rtol=1e-3, atol=1e-3)

    figure, axes = plt.subplots(figsize=(6, 4))
    for search, result in curves.items():
        axes.plot(range(1, len(result.history) + 1), result.history, marker=".", label=search)
    default = curves["xgb"].default_gflops
    if default is not None:
        axes.axhline(default, color="grey", linestyle="--", label="default configuration")
    axes.set_xlabel("trials")
    axes.set_ylabel("best GFLOP/s so far")
    axes.set_title(f"tuning a {n}x{n}x{n} matmul")
    axes.legend()
    figure.tight_layout()
    figure.savefig(output)
    print("tuning curve:", output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a tiny layer and few trials (CI)")
    parser.add_argument("-o", "--output", default="tuning_curve.png", help="the plot (PNG)")
    arguments = parser.parse_args()
    main(arguments.small, arguments.output)
