"""Built-in models, made in code with seeded random weights: name -> ONNX builder.

    from strato import zoo
    model = zoo.build_model("mlp", batch=4, seed=0)   # an onnx.ModelProto

Every builder is a function `(batch: int = 1, seed: int = 0, **sizes) -> onnx.ModelProto`
living in `strato/zoo/<name>.py`; the registry maps a name to "module:function" and imports
the module only when the model is built. The same seed always gives the same weights.
Keyword options reach the builder, to build a smaller variant of a model:

    model = zoo.build_model("resnet18", batch=2, image_size=32, width=8, num_classes=10)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import onnx

from strato.diagnostics import StratoError


@dataclass(frozen=True)
class ZooModel:
    """A registered model: its name, its builder ("module:function") and one line
    saying what it is."""

    name: str
    builder: str
    summary: str

    def build(self, *, batch: int = 1, seed: int = 0, **options: Any) -> onnx.ModelProto:
        module_name, function_name = self.builder.split(":")
        build = getattr(importlib.import_module(module_name), function_name)
        return build(batch=batch, seed=seed, **options)


ZOO: dict[str, ZooModel] = {
    model.name: model
    for model in [
        ZooModel("mlp", "strato.zoo.mlp:build_mlp", "MLP 784-1024-1024-10 with ReLU (MNIST-sized)"),
        ZooModel("resnet18", "strato.zoo.resnet:build_resnet18", "ResNet-18, ImageNet 224x224, 1000 classes"),
        ZooModel("mobilenet_v2", "strato.zoo.mobilenet:build_mobilenet_v2", "MobileNetV2 1.0, ImageNet 224x224, 1000 classes"),
        ZooModel("dqn", "strato.zoo.dqn:build_dqn", "Atari DQN, 4 stacked 84x84 frames to 18 Q-values"),
        ZooModel("dcgan", "strato.zoo.dcgan:build_dcgan", "DCGAN generator, 100-d latent to a 64x64 RGB image"),
        ZooModel("transformer", "strato.zoo.transformer:build_transformer", "Transformer encoder block, sequence 128, hidden 256, 4 heads"),
        ZooModel("lstm", "strato.zoo.lstm:build_lstm", "LSTM language model, 2x650, vocabulary 10000, 35 int64 tokens"),
    ]
}


class UnknownModelError(StratoError):
    """A model name that the zoo does not have."""


def zoo_names() -> list[str]:
    """The names of the built-in models, sorted."""
    return sorted(ZOO)


def build_model(name: str, *, batch: int = 1, seed: int = 0, **options: Any) -> onnx.ModelProto:
    """The ONNX model registered as `name`, with `batch` rows and weights from `seed`;
    `options` go to its builder (sizes, e.g. `image_size=32` for resnet18)."""
    entry = ZOO.get(name)
    if entry is None:
        raise UnknownModelError(
            f"unknown zoo model '{name}' (available: {', '.join(zoo_names())})"
        )
    if batch < 1:
        raise StratoError(f"batch must be at least 1, got {batch}")
    return entry.build(batch=batch, seed=seed, **options)


__all__ = ["ZOO", "ZooModel", "UnknownModelError", "build_model", "zoo_names"]
