"""ONNX's backend API for strato: `prepare` compiles a model, the rep runs it.

    from strato.frontends.onnx import backend
    rep = backend.prepare(model)               # strato.compile: LLVM machine code
    (y,) = rep.run([x])                        # outputs in ONNX order
    (z,) = backend.run_node(add_node, [x, y])  # one node, compiled and run once

This is the interface `onnx.backend.test.BackendTest` drives, so ONNX's own test suite
runs against the compiled path:

    globals().update(BackendTest(backend.StratoBackend, __name__).test_cases)

A model strato cannot import (an operator not in its table, a dynamic shape, a
non-float32 input) raises the importer's `ModelImportError`, a `StratoError` whose
one-line message names the node and its op type; the importer checks every node before
it builds anything, so no code is generated for such a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference
from onnx.backend.base import Backend, BackendRep, namedtupledict

from strato.diagnostics import StratoError
from strato.runtime.compiled_model import CompiledModel

DEVICES = ("CPU",)
"""The devices the backend runs on."""

COMPILE_OPTIONS = frozenset({"input_shapes"})
"""Keyword arguments of `prepare` forwarded to `strato.compile`."""

RUNNER_OPTIONS = frozenset({"rtol", "atol"})
"""Keyword arguments ONNX's test runner passes to `prepare` along with its per-test
tolerances; they concern the comparison, not the compilation, and are ignored."""

_DEFAULT_DOMAINS = ("", "ai.onnx")


class StratoBackendRep(BackendRep):
    """A model compiled by strato, ready to run repeatedly.

    `run(inputs)` takes the inputs in ONNX input order (a list or tuple of arrays, one
    array for a one-input model, or a dict by input name) and returns the outputs in
    ONNX output order as a tuple that can also be indexed by output name.
    """

    def __init__(self, compiled: CompiledModel):
        self.compiled = compiled
        self._outputs_type = namedtupledict("Outputs", compiled.output_names)

    @property
    def input_names(self) -> list[str]:
        return self.compiled.input_names

    @property
    def output_names(self) -> list[str]:
        return self.compiled.output_names

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if kwargs:
            raise StratoError(f"run takes no options, got {', '.join(sorted(kwargs))}")
        arrays = [_as_array(value) for value in self._ordered(inputs)]
        return self._outputs_type(*self.compiled(*arrays))

    def _ordered(self, inputs: Any) -> list[Any]:
        if isinstance(inputs, Mapping):
            unknown = [name for name in inputs if name not in self.input_names]
            if unknown:
                raise StratoError(
                    f"'{unknown[0]}' is not an input of the model "
                    f"(inputs: {', '.join(self.input_names) or 'none'})"
                )
            missing = [name for name in self.input_names if name not in inputs]
            if missing:
                raise StratoError(f"no value given for input '{missing[0]}'")
            return [inputs[name] for name in self.input_names]
        if isinstance(inputs, (np.ndarray, np.generic)):
            return [inputs]
        return list(inputs)

    def __repr__(self) -> str:
        return f"<StratoBackendRep {self.compiled!r}>"


class StratoBackend(Backend):
    """strato as an ONNX backend: models are compiled to host machine code through the
    LLVM target (`strato.compile`) and run on the CPU."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether every node is an operator of strato's table, on a supported device.

        This is the quick up-front check; `prepare` may still reject a model for a
        reason found while importing it (an attribute value, a dynamic shape, ...).
        """
        from strato.frontends.onnx.op_table import ONNX_CONVERTERS

        if not cls.supports_device(device):
            return False
        return all(
            node.domain in _DEFAULT_DOMAINS and node.op_type in ONNX_CONVERTERS
            for node in model.graph.node
        )

    @classmethod
    def prepare(
        cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any
    ) -> StratoBackendRep:
        """Compile `model` for `device` with `strato.compile`.

        Options: `input_shapes` (a mapping from input name to a static shape, for models
        with symbolic dimensions). Raises a `StratoError` for a model strato cannot
        compile, with the importer's one-line reason.
        """
        import strato

        _check_device(device)
        options = _compile_options(kwargs)
        return StratoBackendRep(strato.compile(model, target="llvm", **options))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        """Compile `model` and run it once on `inputs`."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        """Run one node on `inputs` (in the order of the node's non-empty inputs, or a
        dict by input name): a one-node model is built around it and compiled.

        `opset_version` chooses the default-domain opset of that model (default: the
        newest the installed onnx knows). `outputs_info` gives the (dtype, shape) of each
        output; without it they come from ONNX shape inference.
        """
        _check_device(device)
        opset_version = kwargs.pop("opset_version", None)
        model, feeds = one_node_model(node, inputs, outputs_info, opset_version)
        return cls.prepare(model, device, **kwargs).run(feeds)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for "CPU" (also written "CPU:0"): the only device strato compiles for."""
        kind, _, index = device.partition(":")
        return kind in DEVICES and index in ("", "0")


def one_node_model(
    node: onnx.NodeProto,
    inputs: Any,
    outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
    opset_version: int | None = None,
) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """A model whose graph is `node` alone, and the values to feed it.

    Float inputs become graph inputs, fed at run time. Other inputs (integer or boolean
    tensors: shapes, axes, indices) become initializers, because the model is run once
    on exactly these values and strato needs such values at compile time.
    """
    names = [name for name in node.input if name]
    values = _node_input_values(node, names, inputs)
    graph_inputs, initializers, feeds = [], [], []
    for name, value in zip(names, values):
        if value.dtype.kind == "f":
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape
            ))  # fmt: skip
            feeds.append(value)
        else:
            initializers.append(numpy_helper.from_array(value, name))
    outputs = [name for name in node.output if name]
    if outputs_info is not None and len(outputs_info) != len(outputs):
        raise StratoError(
            f"outputs_info describes {len(outputs_info)} output(s), the node has {len(outputs)}"
        )
    graph_outputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
        if outputs_info is not None
        else helper.make_empty_tensor_value_info(name)
        for name, (dtype, shape) in zip(outputs, outputs_info or [(None, None)] * len(outputs))
    ]
    graph = helper.make_graph(
        [node], f"{node.op_type or 'node'}_graph", graph_inputs, graph_outputs, initializers
    )
    version = opset_version if opset_version is not None else onnx.defs.onnx_opset_version()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
    if outputs_info is None:
        model = _with_inferred_outputs(model)
    return model, feeds


def _node_input_values(node: onnx.NodeProto, names: list[str], inputs: Any) -> list[np.ndarray]:
    if isinstance(inputs, Mapping):
        missing = [name for name in names if name not in inputs]
        if missing:
            raise StratoError(f"no value given for the node's input '{missing[0]}'")
        return [_as_array(inputs[name]) for name in names]
    if isinstance(inputs, (np.ndarray, np.generic)):
        inputs = [inputs]
    values = [_as_array(value) for value in inputs]
    if len(values) != len(names):
        raise StratoError(
            f"the {node.op_type} node takes {len(names)} input(s) "
            f"({', '.join(names) or 'none'}), got {len(values)}"
        )
    return values


def _with_inferred_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with the types of its graph outputs filled in by shape inference.

    When inference cannot type a node strato does not import anyway, the model is left
    as it is: `prepare` rejects it by its op type first, which is the clearer reason.
    """
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    unsupported = any(node.op_type not in ONNX_CONVERTERS for node in model.graph.node)
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=True)
    except (shape_inference.InferenceError, onnx.checker.ValidationError) as err:
        if unsupported:
            return model
        reason = " ".join(str(err).split())
        raise StratoError(f"run_node: shape inference failed: {reason}") from None
    for output in inferred.graph.output:
        if output.type.HasField("tensor_type"):
            continue
        if unsupported:
            return model
        raise StratoError(
            f"run_node: cannot infer the type of output '{output.name}'; pass outputs_info"
        )
    del inferred.graph.value_info[:]
    return inferred


def _as_array(value: Any) -> Any:
    """Numpy scalars and TensorProtos as arrays; anything else is left for the compiled
    model's own input check to judge."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _check_device(device: str) -> None:
    if not StratoBackend.supports_device(device):
        raise StratoError(
            f"device '{device}' is not supported: strato's ONNX backend runs on "
            f"{', '.join(DEVICES)}"
        )


def _compile_options(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(kwargs) - COMPILE_OPTIONS - RUNNER_OPTIONS)
    if unknown:
        raise StratoError(
            f"unknown backend option '{unknown[0]}' (options: {', '.join(sorted(COMPILE_OPTIONS))})"
        )
    return {name: value for name, value in kwargs.items() if name in COMPILE_OPTIONS}


prepare = StratoBackend.prepare
run_model = StratoBackend.run_model
run_node = StratoBackend.run_node
supports_device = StratoBackend.supports_device
is_compatible = StratoBackend.is_compatible

__all__ = [
    "StratoBackend",
    "StratoBackendRep",
    "is_compatible",
    "one_node_model",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
]
