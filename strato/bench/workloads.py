"""What `strato bench` measures: GEMM 1024^3, ResNet-18's conv layers C1-C12 and the
zoo models, each an ONNX model with seeded inputs and, where it is known, its FLOP count.

    workloads = select_workloads("gemm,C2,mlp", quick=False)
    for workload in workloads:
        model = workload.build()          # onnx.ModelProto, built only when measured

A selection is a comma-separated list of workload names (`GEMM`, `C1` ... `C12`, a zoo
name) and groups (`conv` for C1-C12, `zoo` for every zoo model, `all`), case-insensitive.
The conv layers' shapes are those of benchmarks/resnet18_layers.py, the table the kernel
and VTA benchmarks read too; it is loaded from the source checkout next to the package.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from strato.diagnostics import StratoError

GEMM_SIZE = 1024

QUICK_SELECTION = "gemm,C12,mlp,dqn"
"""What `--quick` measures when no `--workloads` are given: a minute's worth."""


@dataclass(frozen=True)
class Workload:
    """One thing to measure: `build()` makes its ONNX model; `kind` is "gemm", "conv"
    or "model"; `flops` counts 2 per multiply-add (None when unknown until built)."""

    name: str
    kind: str
    build: Callable[[], onnx.ModelProto]
    flops: float | None = None


def _model(nodes, inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bench", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gemm_model(size: int) -> onnx.ModelProto:
    """Y = A @ B on size x size fp32 matrices, both inputs."""
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [size, size])
    b = helper.make_tensor_value_info("B", TensorProto.FLOAT, [size, size])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [size, size])
    return _model([helper.make_node("MatMul", ["A", "B"], ["Y"])], [a, b], [y], [])


def conv_model(size: int, cin: int, cout: int, kernel: int, stride: int, seed: int) -> onnx.ModelProto:
    """One fp32 Conv with "same" padding, batch 1, seeded weights scaled to keep the
    outputs near unit size; the image is the input."""
    pad = kernel // 2
    out = (size + 2 * pad - kernel) // stride + 1
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, cin, size, size])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, cout, out, out])
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal((cout, cin, kernel, kernel)).astype(np.float32)
    weight *= np.float32(1.0 / math.sqrt(cin * kernel * kernel))
    node = helper.make_node(
        "Conv", ["X", "W"], ["Y"], kernel_shape=[kernel, kernel],
        strides=[stride, stride], pads=[pad] * 4,
    )  # fmt: skip
    return _model([node], [x], [y], [numpy_helper.from_array(weight, "W")])


def conv_flops(size: int, cin: int, cout: int, kernel: int, stride: int) -> float:
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    return 2.0 * cout * out * out * cin * kernel * kernel


def conv_layers() -> Mapping[str, tuple[int, int, int, int, int]]:
    """ResNet-18's conv layers: name -> (H = W, in channels, out channels, kernel,
    stride), from benchmarks/resnet18_layers.py of the source checkout."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "resnet18_layers.py"
    spec = importlib.util.spec_from_file_location("strato_bench_resnet18_layers", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise StratoError(
            "the conv layers C1-C12 are read from benchmarks/resnet18_layers.py of a source "
            "checkout; install strato with `pip install -e` from one",
            location=str(path),
        )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CONV_LAYERS


def all_workloads(seed: int = 0) -> list[Workload]:
    """Every workload, in the order the bench runs them."""
    from strato import zoo

    workloads = [
        Workload("GEMM", "gemm", lambda: gemm_model(GEMM_SIZE), 2.0 * GEMM_SIZE**3)
    ]
    for name, shape in conv_layers().items():
        workloads.append(
            Workload(
                name, "conv",
                lambda shape=shape: conv_model(*shape, seed=seed),
                conv_flops(*shape),
            )
        )  # fmt: skip
    for name in zoo.zoo_names():
        workloads.append(
            Workload(name, "model", lambda name=name: zoo.build_model(name, seed=seed))
        )
    return workloads


def select_workloads(selection: str | None, *, quick: bool, seed: int = 0) -> list[Workload]:
    """The workloads `selection` names (all of them when None, the quick set with
    `quick`), in run order. An unknown name is a StratoError listing the known ones."""
    if selection is None:
        selection = QUICK_SELECTION if quick else "all"
    workloads = all_workloads(seed)
    by_name = {workload.name.lower(): workload for workload in workloads}
    groups = {
        "all": [w.name for w in workloads],
        "conv": [w.name for w in workloads if w.kind == "conv"],
        "zoo": [w.name for w in workloads if w.kind == "model"],
    }
    wanted: set[str] = set()
    for word in (part.strip().lower() for part in selection.split(",")):
        if not word:
            continue
        if word in groups:
            wanted.update(groups[word])
        elif word in by_name:
            wanted.add(by_name[word].name)
        else:
            known = ", ".join([*groups, *(w.name for w in workloads)])
            raise StratoError(f"--workloads: unknown workload '{word}' (known: {known})")
    if not wanted:
        raise StratoError("--workloads: no workload named")
    return [w for w in workloads if w.name in wanted]


def dense_flops(model: onnx.ModelProto) -> float | None:
    """2 x the multiply-adds of the model's Conv, ConvTranspose, Gemm, MatMul and LSTM
    nodes, from ONNX shape inference; None when a shape these need is not inferred.
    Elementwise work, pooling and normalization are left out (they are small next to
    these and have no agreed FLOP count)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes: dict[str, list[int]] = {}
    for value in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = [d.dim_value for d in dims]
    for init in inferred.graph.initializer:
        shapes[init.name] = list(init.dims)
    total = 0.0
    for node in inferred.graph.node:
        counted = _node_flops(node, shapes)
        if counted is None:
            return None
        total += counted
    return total


def _node_flops(node: onnx.NodeProto, shapes: Mapping[str, Sequence[int]]) -> float | None:
    if node.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM"):
        return 0.0
    operands = [shapes.get(name) for name in node.input[:2]]
    if any(shape is None for shape in operands):
        return None
    first, second = operands
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Conv":
        out = shapes.get(node.output[0])
        if out is None:
            return None
        # weight: (out channels, in channels / group, kernel...)
        return 2.0 * math.prod(out) * math.prod(second[1:])
    if node.op_type == "ConvTranspose":
        # every input element meets (out channels / group) x kernel weights
        return 2.0 * math.prod(first) * math.prod(second[1:])
    if node.op_type == "Gemm":
        rows = first[1] if attrs.get("transA", 0) else first[0]
        inner = first[0] if attrs.get("transA", 0) else first[1]
        cols = second[0] if attrs.get("transB", 0) else second[1]
        return 2.0 * rows * inner * cols
    if node.op_type == "MatMul":
        out = shapes.get(node.output[0])
        if out is None:
            return None
        inner = first[-1]
        return 2.0 * math.prod(out) * inner
    # LSTM: X (seq, batch, input), W (directions, 4 hidden, input)
    seq, batch = first[0], first[1]
    directions, gates, inputs = second
    hidden = gates // 4
    return 2.0 * seq * batch * directions * gates * (inputs + hidden)
