"""ONNX's backend API for strato: `prepare` compiles a model, the rep runs it.

    from strato.frontends.onnx import backend
    rep = backend.prepare(model)               # strato.compile: LLVM machine code
    (y,) = rep.run([x])                        # outputs in ONNX order
    (z,) = backend.run_node(add_node, [x, y])  # one node, compiled and run once

This is the interface `onnx.backend.test.BackendTest` drives, so ONNX's own test suite
runs against the compiled path:

    globals().update(BackendTest(backend.StratoBackend, __name__).test_cases)

A model strato cannot import (an operator not in its table, a dynamic shape, ...) raises
the importer's `ModelImportError`, a `StratoError` whose one-line message names the node
and its op type; the importer checks every node before it builds anything, so no code is
generated for such a model.

strato compiles static shapes, so some operator inputs must be known at compile time (a
Reshape's target shape, a Slice's starts, a reduction's axes, ...). ONNX models may feed
them from graph inputs. Such a model is compiled when it runs, once per distinct value of
those inputs, with the values bound as constants (`SpecializingBackendRep`): this is how
a static-shape compiler serves ONNX's dynamic API.

Values other than numeric tensors are mapped at the model's boundary
(`ValueBoundary`): string tensors become int64 ids of one dictionary per call when
every use of them is equality or data movement (`strings`), and sequence and optional
inputs are compiled per structure (a sequence's length and element shapes, an
optional's presence), seen on the first run, one tensor argument per element
(`sequences`); outputs come back as strings, lists and Nones.

    rep = backend.prepare(identity_of_a_sequence)
    rep.run([[a, b]])                          # compiles for two elements: ([a, b],)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference
from onnx.backend.base import Backend, BackendRep, namedtupledict

from strato.diagnostics import ModelImportError, StratoError
from strato.frontends.onnx import sequences
from strato.frontends.onnx.strings import StringEncoding
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.signature import InputMismatchError
from strato.staged import STRUCTURE_ONLY, StagedModel

DEVICES = ("CPU",)
"""The devices the backend runs on."""

COMPILE_OPTIONS = frozenset({"input_shapes"})
"""Keyword arguments of `prepare` forwarded to `strato.compile`."""

RUNNER_OPTIONS = frozenset({"rtol", "atol"})
"""Keyword arguments ONNX's test runner passes to `prepare` along with its per-test
tolerances; they concern the comparison, not the compilation, and are ignored."""

MAX_SPECIALIZATIONS = 8
"""Compiled variants a `SpecializingBackendRep` keeps (the least recently compiled is
dropped first)."""

_DEFAULT_DOMAINS = ("", "ai.onnx")


class StratoBackendRep(BackendRep):
    """A model compiled by strato, ready to run repeatedly.

    `run(inputs)` takes the inputs in ONNX input order (a list or tuple of arrays, one
    array for a one-input model, or a dict by input name) and returns the outputs in
    ONNX output order as a tuple that can also be indexed by output name.
    """

    def __init__(self, compiled: CompiledModel, boundary: ValueBoundary | None = None):
        self.compiled = compiled
        self.boundary = boundary
        if boundary is None:
            self.input_names: list[str] = compiled.input_names
            self.output_names: list[str] = compiled.output_names
        else:
            self.input_names = boundary.input_names
            self.output_names = boundary.output_names

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if kwargs:
            raise StratoError(f"run takes no options, got {', '.join(sorted(kwargs))}")
        arrays = [_as_array(value) for value in self._ordered(inputs)]
        outputs = namedtupledict("Outputs", self.output_names)
        return outputs(*self._execute(arrays))

    def _execute(self, arrays: list[Any]) -> list[np.ndarray]:
        if self.boundary is None:
            return self.compiled(*arrays)
        values = self.boundary.check_count(arrays)
        return self.boundary.call(self.compiled, values)

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
        return f"<{type(self).__name__} {self.compiled!r}>"


class SpecializingBackendRep(StratoBackendRep):
    """A model with graph inputs that strato needs at compile time (`bound_inputs`: they
    give shapes, axes, pads, ...). Each run compiles the model with those inputs' values
    bound as initializers, or reuses the variant compiled for the same values; the other
    inputs are passed to the compiled code.

        rep = backend.prepare(reshape_model)     # inputs: data, shape (int64)
        rep.run([data, np.array([2, 3])])        # compiles for shape [2, 3]
        rep.run([data2, np.array([2, 3])])       # runs that code again
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        bound_inputs: Sequence[str],
        options: Mapping[str, Any],
        boundary: ValueBoundary | None = None,
    ):
        self.model = model
        self.bound_inputs = list(bound_inputs)
        self.options = dict(options)
        self.boundary = boundary if boundary is not None else ValueBoundary(model)
        self.input_names = self.boundary.input_names
        self.output_names = self.boundary.output_names
        self._declared = {value.name: value for value in model.graph.input}
        self._variants: dict[tuple, CompiledModel] = {}
        from strato.specializing import InputDims

        self._dynamic = InputDims.of(model, {name: None for name in self.bound_inputs})
        """The inputs with dynamic dimensions: compiled per shape too."""

    @property
    def compiled(self) -> CompiledModel | None:
        """The variant compiled last (None before the first run)."""
        return next(reversed(self._variants.values()), None)

    @property
    def variants(self) -> int:
        """How many compiled variants are kept."""
        return len(self._variants)

    def _execute(self, arrays: list[Any]) -> list[np.ndarray]:
        values = self.boundary.check_count(arrays)
        bound = {name: self._checked(name, values[name]) for name in self.bound_inputs}
        structures = self.boundary.structures(values)
        if self._dynamic is not None:
            structures.update(self._dynamic.bind(values))
        key = (
            tuple((a.dtype.str, a.shape, a.tobytes()) for a in bound.values()),
            repr(sorted(structures.items())),
        )
        compiled = self._variants.get(key)
        if compiled is None:
            compiled = self._compile(bound, structures)
            if len(self._variants) >= MAX_SPECIALIZATIONS:
                del self._variants[next(iter(self._variants))]
            self._variants[key] = compiled
        rest = {name: value for name, value in values.items() if name not in bound}
        return self.boundary.call(compiled, rest)

    def _checked(self, name: str, value: Any) -> np.ndarray:
        """`value` of compile-time input `name`, after checking it against the type the
        model declares."""
        if not isinstance(value, np.ndarray):
            raise InputMismatchError(
                f"input '{name}': expected a numpy array, got {type(value).__name__}"
            )
        tensor = self._declared[name].type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if value.dtype != dtype:
            raise InputMismatchError(
                f"input '{name}': dtype is {value.dtype.name}, expected {dtype.name}"
            )
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if tensor.HasField("shape") and (
            len(dims) != value.ndim
            or any(d is not None and d != n for d, n in zip(dims, value.shape))
        ):
            raise InputMismatchError(
                f"input '{name}': shape is {list(value.shape)}, expected "
                f"{[d if d is not None else '?' for d in dims]}"
            )
        return value

    def _compile(
        self, bound: Mapping[str, np.ndarray], structures: Mapping[str, Any]
    ) -> CompiledModel:
        import strato

        model = bind_inputs(self.model, bound)
        options = dict(self.options)
        shapes = {
            name: shape
            for name, shape in options.get("input_shapes", {}).items()
            if name not in bound
        }
        shapes.update(structures)
        if shapes:
            options["input_shapes"] = shapes
        return strato.compile(model, target="llvm", **options)

    def __repr__(self) -> str:
        return (
            f"<SpecializingBackendRep on {', '.join(self.bound_inputs)}: "
            f"{self.variants} variant(s)>"
        )


class StratoBackend(Backend):
    """strato as an ONNX backend: models are compiled to host machine code through the
    LLVM target (`strato.compile`) and run on the CPU."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether every node is an operator of strato's table, on a supported device.

        This is the quick up-front check; `prepare` may still reject a model for a
        reason found while importing it (an attribute value, a dynamic shape, ...).
        """
        from strato.frontends.onnx.importer import imports_operator

        if not cls.supports_device(device):
            return False
        return all(imports_operator(node.domain, node.op_type) for node in model.graph.node)

    @classmethod
    def prepare(
        cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any
    ) -> StratoBackendRep:
        """Compile `model` for `device` with `strato.compile`.

        Options: `input_shapes` (a mapping from input name to a static shape, for models
        with symbolic dimensions). Raises a `StratoError` for a model strato cannot
        compile, with the importer's one-line reason. A model that fails to import only
        because graph inputs give values strato needs at compile time is compiled when it
        runs, per value (a `SpecializingBackendRep`), although `strato.compile` would run
        the nodes that read those values on the host (`strato.staged`): the backend keeps
        them compiled.
        """
        import strato
        from strato.frontends.onnx.importer import load_model

        _check_device(device)
        options = _compile_options(kwargs)
        try:
            compiled = strato.compile(model, target="llvm", **options)
            if isinstance(compiled, StagedModel) and _values_decide_shapes(load_model(model)[0]):
                # only graph inputs' values stood in the way: compiled per value instead
                raise ModelImportError("graph inputs decide shapes")
        except ModelImportError:
            proto, location = load_model(model)
            if not cls.is_compatible(proto, device):
                raise
            strings = StringEncoding.of(proto, location)
            if strings is not None:
                proto = strings.model
            boundary = ValueBoundary(proto, strings)
            bound = compile_time_inputs(proto)
            if bound or boundary.structured:
                return SpecializingBackendRep(proto, bound, options, boundary)
            if strings is None:
                raise
        else:
            proto, _ = load_model(model)
            if any(sequences.is_structured(value.type) for value in proto.graph.output):
                # sequence or optional outputs, computed from tensors: regrouped by name
                return StratoBackendRep(compiled, ValueBoundary(proto))
            return StratoBackendRep(compiled)
        # only strings were in the way: the model on ids compiles once
        return StratoBackendRep(strato.compile(proto, target="llvm", **options), boundary)

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


class ValueBoundary:
    """How a model's ONNX values become a compiled model's arrays and back: string
    tensors as int64 ids (`strings`), sequences and optionals as their tensors
    (`sequences`). `model` is the model compiled (on ids when it has strings)."""

    def __init__(self, model: onnx.ModelProto, strings: StringEncoding | None = None):
        initializers = {init.name for init in model.graph.initializer}
        inputs = [value for value in model.graph.input if value.name not in initializers]
        self.strings = strings
        self.input_names = [value.name for value in inputs]
        self.output_names = [value.name for value in model.graph.output]
        self.structured = {
            value.name: value.type for value in inputs if sequences.is_structured(value.type)
        }
        """The sequence and optional inputs: compiled per structure."""
        self._outputs = list(model.graph.output)

    def check_count(self, arrays: Sequence[Any]) -> dict[str, Any]:
        """The run's values by input name, after checking there is one per input."""
        if len(arrays) != len(self.input_names):
            raise InputMismatchError(
                f"the model takes {len(self.input_names)} input(s) "
                f"({', '.join(self.input_names) or 'none'}), got {len(arrays)}"
            )
        return dict(zip(self.input_names, arrays))

    def structures(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The structure of each sequence and optional input in `values`
        (`input_shapes` entries)."""
        return {
            name: sequences.run_structure(name, type_, values[name])
            for name, type_ in self.structured.items()
        }

    def call(self, compiled: CompiledModel, values: Mapping[str, Any]) -> list[Any]:
        """Run `compiled` on `values` (by input name; the inputs bound at compile time
        left out) and return the model's outputs in ONNX order."""
        strings: list[Any] = []
        if self.strings is not None:
            values, strings = self.strings.encode(values)
        arrays = []
        for name in self.input_names:
            if name in self.structured:
                arrays.extend(sequences.flat_arrays(values[name]))
            elif name in values:
                arrays.append(values[name])
        results = dict(zip(compiled.output_names, compiled(*arrays)))
        outputs = sequences.regroup_outputs(self._outputs, results)
        if self.strings is None:
            return outputs
        return [
            self.strings.decode(name, value, strings)
            for name, value in zip(self.output_names, outputs)
        ]


def one_node_model(
    node: onnx.NodeProto,
    inputs: Any,
    outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
    opset_version: int | None = None,
) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """A model whose graph is `node` alone, with one graph input per (non-empty) node
    input, and the values to feed it.

    Output types come from `outputs_info`, else from ONNX shape inference with the input
    values known (so that a Reshape's output shape follows from its shape input).
    """
    names = [name for name in node.input if name]
    values = _node_input_values(node, names, inputs)
    graph_inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for name, v in zip(names, values)
    ]
    outputs = [name for name in node.output if name]
    if outputs_info is not None and len(outputs_info) != len(outputs):
        raise StratoError(
            f"outputs_info describes {len(outputs_info)} output(s), the node has {len(outputs)}"
        )
    if outputs_info is not None:
        graph_outputs = [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
            )
            for name, (dtype, shape) in zip(outputs, outputs_info)
        ]
    else:
        graph_outputs = [helper.make_empty_tensor_value_info(name) for name in outputs]
    version = opset_version if opset_version is not None else onnx.defs.onnx_opset_version()
    opsets = [helper.make_opsetid("", version)]
    graph_name = f"{node.op_type or 'node'}_graph"
    model = helper.make_model(
        helper.make_graph([node], graph_name, graph_inputs, graph_outputs), opset_imports=opsets
    )
    if outputs_info is None:
        constants = [numpy_helper.from_array(v, name) for name, v in zip(names, values)]
        known = helper.make_model(
            helper.make_graph([node], graph_name, [], graph_outputs, constants),
            opset_imports=opsets,
        )
        inferred = _inferred_outputs(known)
        if inferred is not None:
            del model.graph.output[:]
            model.graph.output.extend(inferred)
    return model, values


def _node_input_values(node: onnx.NodeProto, names: list[str], inputs: Any) -> list[np.ndarray]:
    if isinstance(inputs, Mapping):
        missing = [name for name in names if name not in inputs]
        if missing:
            raise StratoError(f"no value given for the node's input '{missing[0]}'")
        inputs = [inputs[name] for name in names]
    if isinstance(inputs, (np.ndarray, np.generic)):
        inputs = [inputs]
    values = [_as_array(value) for value in inputs]
    for value in values:
        if not isinstance(value, np.ndarray):
            raise StratoError(f"node inputs must be numpy arrays, got {type(value).__name__}")
    if len(values) != len(names):
        raise StratoError(
            f"the {node.op_type} node takes {len(names)} input(s) "
            f"({', '.join(names) or 'none'}), got {len(values)}"
        )
    return values


def _inferred_outputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto] | None:
    """The graph outputs of `model` typed by shape inference.

    None when inference cannot type a node strato does not import anyway: `prepare`
    rejects it by its op type first, which is the clearer reason.
    """
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    unsupported = any(node.op_type not in ONNX_CONVERTERS for node in model.graph.node)
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=True)
    except (shape_inference.InferenceError, onnx.checker.ValidationError) as err:
        if unsupported:
            return None
        reason = " ".join(str(err).split())
        raise StratoError(f"run_node: shape inference failed: {reason}") from None
    for output in inferred.graph.output:
        if output.type.HasField("tensor_type"):
            continue
        if unsupported:
            return None
        raise StratoError(
            f"run_node: cannot infer the type of output '{output.name}'; pass outputs_info"
        )
    return list(inferred.graph.output)


_STRUCTURE_ONLY = STRUCTURE_ONLY
"""Operators whose result depends on their input's shape or length only, which strato
knows at compile time whatever the values (as `strato.staged` decides)."""


def compile_time_inputs(model: onnx.ModelProto) -> list[str]:
    """The graph inputs, in order, that values strato needs at compile time are computed
    from: the inputs feeding an operator's shape, axes, pads, ... inputs directly or
    through other nodes (not through `_STRUCTURE_ONLY` operators; through the values the
    bodies of an If, a Loop or a Scan read from outside)."""
    from strato.frontends.onnx.convert_control import outer_names

    table = _import_time_inputs()
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    producer = {output: node for node in model.graph.node for output in node.output}
    pending = [
        node.input[position]
        for node in model.graph.node
        for position in table.get(node.op_type, ())
        if position < len(node.input) and node.input[position]
    ]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is not None and node.op_type not in _STRUCTURE_ONLY:
            pending.extend(value for value in node.input if value)
            for attribute in node.attribute:  # what an If's branches or a body read
                for body in (attribute.g,) if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs:
                    pending.extend(outer_names(body))
    return [name for name in graph_inputs if name in seen]


def _values_decide_shapes(model: onnx.ModelProto) -> bool:
    """Whether `model` runs on the host only nodes whose shape-deciding inputs are
    computed from graph inputs (no operator whose output sizes depend on the data, no
    string transform): the backend compiles such a model per value of those inputs."""
    from strato.runtime.host_ops import HOST_OPS

    def host_ops_in(graph: onnx.GraphProto) -> bool:
        return any(
            node.op_type in HOST_OPS
            or any(
                host_ops_in(body)
                for attr in node.attribute
                for body in ([attr.g] if attr.HasField("g") else list(attr.graphs))
            )
            for node in graph.node
        )

    return bool(compile_time_inputs(model)) and not host_ops_in(model.graph)


def bind_inputs(model: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` in which the graph inputs named in `values` are initializers
    holding those values."""
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    kept = [value for value in bound.graph.input if value.name not in values]
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    for name, value in values.items():
        bound.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return bound


def _import_time_inputs() -> dict[str, tuple[int, ...]]:
    """Per op type, the input positions the importer needs to know at import time."""
    from strato.frontends.onnx.op_table import IMPORT_TIME_INPUTS

    return dict(IMPORT_TIME_INPUTS)


def _as_array(value: Any) -> Any:
    """Numpy scalars and TensorProtos as arrays; anything else is left for the compiled
    model's own input check to judge."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, list):  # a sequence
        return [_as_array(item) for item in value]
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
    "SpecializingBackendRep",
    "StratoBackend",
    "StratoBackendRep",
    "ValueBoundary",
    "bind_inputs",
    "compile_time_inputs",
    "is_compatible",
    "one_node_model",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
]
