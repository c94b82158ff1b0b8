"""The ONNX importer: an ONNX model to one graph-dialect function.

    module = import_model("mlp.onnx")

gives

    func.func @main(%input: tensor<1x784xf32>) -> tensor<1x10xf32> {
      %fc1_w = graph.constant dense<...> : tensor<1024x784xf32>
      ...
      %fc1 = graph.dense %input, %fc1_w, %fc1_b : (...) -> tensor<1x1024xf32>
      %relu1 = graph.relu %fc1 : tensor<1x1024xf32>
      ...
      func.return %logits : tensor<1x10xf32>
    }

The function's arguments are the graph inputs that are not initializers, in ONNX order;
its results are the graph outputs, in ONNX order. Shapes must be static and tensors
numeric (bool, integers, f16, bf16, f32, f64, the 8- and 4-bit floats: see
`tensor_types`; signed integers become signless `iN`, unsigned ones `uiN`, bool `i1`).
The model is checked before anything is built (opset domains, every operator in
`op_table.ONNX_CONVERTERS`, every input defined, `onnx.checker`), then nodes are
converted in order, and each result shape is compared with ONNX shape inference.
Anything that cannot be imported raises `ModelImportError` naming the node (its name,
or its index when it has none), its op type, and the reason; nothing half-imported is
returned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, shape_inference
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from strato.diagnostics import ModelImportError, SymbolicShapeError
from strato.dialects.graph import ConstantOp
from strato.dialects.graph.dims import (
    SIZES_ATTR,
    RunTimeDims,
    SizeBound,
    run_time_axes,
    set_size_bounds,
)
from strato.dialects.tensor_types import element_type_of
from strato.frontends.onnx import (
    merged_dims,
    raw_data,
    run_time_slices,
    sequences,
    shape_values,
)
from strato.frontends.onnx.appends import appends_as_scan_outputs
from strato.frontends.onnx.conversion import (
    ImportedValue,
    NodeContext,
    has_element_type,
    node_label,
    shape_of,
    ssa_name,
)
from strato.frontends.onnx.convert_contrib import CONTRIB_CONVERTERS, CONTRIB_DOMAIN
from strato.frontends.onnx.convert_ml import ML_CONVERTERS, ML_DOMAIN
from strato.frontends.onnx.convert_training import TRAINING_CONVERTERS, TRAINING_DOMAIN
from strato.frontends.onnx.op_table import ONNX_CONVERTERS
from strato.frontends.onnx.shape_inputs import without_weight_data
from strato.frontends.onnx.shape_values import StaticShapesOnly

ENTRY_NAME = "main"
"""The name of the imported function."""

MIN_OPSET = 7
"""Oldest default-domain opset imported (numpy broadcasting in Add/Mul/Gemm); older
models import when their operators are defined there as in this opset."""

_DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass
class ImportedModel:
    """An imported model and the ONNX names of its entry function's arguments and
    results (SSA name hints are sanitised; these are exact)."""

    module: ModuleOp
    function_name: str
    input_names: list[str]
    output_names: list[str]

    @property
    def function(self) -> func.FuncOp:
        for op in self.module.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == self.function_name:
                return op
        raise AssertionError(f"@{self.function_name} vanished from the module")


def import_model(
    model: str | os.PathLike | onnx.ModelProto,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Import an ONNX model (a file path or a ModelProto) into the graph dialect.

    `input_shapes` fixes the shapes of graph inputs by name, e.g. to choose a batch
    size for a model exported with a symbolic one.
    """
    return import_onnx(model, input_shapes=input_shapes).module


def import_onnx(
    model: str | os.PathLike | onnx.ModelProto,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    run_time_dims: bool = False,
) -> ImportedModel:
    """Like `import_model`, also returning the ONNX input and output names.

    With `run_time_dims`, a model whose inputs have dynamic dimensions (not pinned by
    `input_shapes`) imports with `?` there, each named by its `dim_param` (else
    `<input>_<axis>`) in the argument's `graph.sizes`, when every operator that reads a
    tensor of run-time dimensions takes them (`RUN_TIME_ONNX_OPS`), and every shape
    computed from them is one `shape_values` evaluates; any other such model imports as
    without it (refused with `SymbolicShapeError` unless `input_shapes` pins its
    dimensions)."""
    from strato.frontends.onnx.convert_control import padded_loop_rows
    from strato.staged import padded_loop

    proto, location = load_model(model)
    refusal = ""
    with padded_loop_rows(padded_loop(proto)):
        if run_time_dims:
            try:
                return _GraphImporter(proto, location, input_shapes or {}, True).run()
            except (StaticShapesOnly, ModelImportError) as error:
                # a node that does not take run-time dimensions: the static import
                # refuses the open dimension (saying which node kept it from
                # compiling once), or names what is wrong
                refusal = error.message if isinstance(error, ModelImportError) else str(error)
        try:
            return _GraphImporter(proto, location, input_shapes or {}).run()
        except SymbolicShapeError as error:
            if refusal:
                error.refusal = refusal
                error.message += f"; it does not compile once for every size: {refusal}"
            raise


RUN_TIME_ONNX_OPS = merged_dims.ELEMENTWISE_ONNX_OPS | frozenset({
    # element-wise ops (above) broadcast between tensors of one run-time size or against
    # constants
    "Transpose",
    # a target shape that copies the run-time dimensions (0, or their sizes computed by
    # `shape_values`) and reshapes the static rest; an Expand that leaves them; Squeeze
    # and Unsqueeze (of dimensions of size 1)
    "Expand", "Reshape", "Squeeze", "Unsqueeze",
    # a static axis of a tensor of run-time sizes cut into pieces, or joined, or sliced,
    # or repeated
    "Concat", "Split", "Slice", "Tile",
    # a static axis padded, or a run-time one shifted (its pads sum to 0, or give back
    # what a Slice of it took: `run_time_slices`)
    "Pad",
    # an embedding: a table of static shape gathered at indices of run-time sizes; and
    # gathers of elements along a static axis; rows of a table (GatherND of positions
    # into its first axis)
    "Gather", "GatherElements", "GatherND",
    # reductions and products (a mean and a layer norm over static axes only), running
    # sums
    "CumSum", "Gemm", "LayerNormalization", "MatMul", *merged_dims.REDUCTIONS, "Softmax",
    # a convolution of a kernel of one position (a product at each position), or wider
    # along a run-time dimension whose length it keeps (a product per tap)
    "Conv",
})
"""The ONNX operators whose converters build graph ops that take run-time (`?`)
dimensions (`GraphOp.RUN_TIME_DIMS`): a model of these alone compiles once for every
size of its dynamic dimensions."""


def load_model(model: str | os.PathLike | onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    """The ModelProto of `model` and the location diagnostics should name (the path);
    a Loop that appends to a list gives it as a scan output instead
    (`strato.frontends.onnx.appends`)."""
    proto, location = _read_model(model)
    return appends_as_scan_outputs(proto), location


def _read_model(model: str | os.PathLike | onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    if isinstance(model, onnx.ModelProto):
        return model, None
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(
            f"expected a path or an onnx.ModelProto, got {type(model).__name__}"
        )
    path = os.fspath(model)
    if not os.path.exists(path):
        raise ModelImportError("no such file", location=path)
    if os.path.isdir(path):
        raise ModelImportError("is a directory, not an ONNX model file", location=path)
    if not os.path.isfile(path):
        # A FIFO or a device would block or never end: read regular files only.
        raise ModelImportError(
            "not a regular file (a FIFO, device or socket); ONNX models are read from files",
            location=path,
        )
    try:
        proto = onnx.load(path)
    except DecodeError as err:
        raise ModelImportError(
            f"not an ONNX model: the file does not parse as an ONNX protobuf ({err})",
            location=path,
        ) from None
    except (OSError, ValueError, RuntimeError, onnx.checker.ValidationError) as err:
        raise ModelImportError(f"cannot read the ONNX model: {err}", location=path) from None
    return proto, path


_UNSUPPORTED = "operator not supported by strato yet"
_UNKNOWN = "unknown operator (not in the ONNX standard)"
_NODES_NAMED = 3
"""How many nodes a diagnostic names for one unsupported operator."""


_OTHER_DOMAINS = {
    CONTRIB_DOMAIN: CONTRIB_CONVERTERS,
    TRAINING_DOMAIN: TRAINING_CONVERTERS,
    ML_DOMAIN: ML_CONVERTERS,
}
"""The operators strato imports beyond the default domain, by domain."""


def imports_operator(domain: str, op_type: str) -> bool:
    """Whether strato runs operator `op_type` of `domain`: imported by a converter, or
    computed on the host between compiled parts (`strato.runtime.host_ops`)."""
    from strato.runtime.host_ops import HOST_OPS

    if domain in _DEFAULT_DOMAINS:
        return op_type in ONNX_CONVERTERS or op_type in HOST_OPS
    return op_type in _OTHER_DOMAINS.get(domain, {})


def _converter(node: onnx.NodeProto):
    """The converter of `node`'s operator, by its domain."""
    return _OTHER_DOMAINS.get(node.domain, ONNX_CONVERTERS)[node.op_type]


def _nodes_using(op_type: str, nodes: Sequence[str]) -> str:
    """`IsNaN (2 nodes: 'n1', #7)`, naming at most `_NODES_NAMED` nodes."""
    count = f"{len(nodes)} node" + ("s" if len(nodes) > 1 else "")
    named = ", ".join(nodes[:_NODES_NAMED]) + (", ..." if len(nodes) > _NODES_NAMED else "")
    return f"{op_type} ({count}: {named})"


class _GraphImporter:
    """Imports one model; one instance per import."""

    def __init__(
        self,
        model: onnx.ModelProto,
        location: str | None,
        input_shapes: Mapping[str, Sequence[int]],
        run_time_dims: bool = False,
    ):
        self.model = model
        self.location = location
        self.input_shapes = input_shapes
        self.run_time_dims = run_time_dims
        self._producers: dict[str, onnx.NodeProto] | None = None
        # the least each run-time size may be, by name, for the slices of it to be
        # what the model says (`run_time_slices`)
        self.least_sizes: dict[str, int] = {}
        self.size_names: dict[str, list[str]] = {}
        """The names of each graph input's run-time dimensions (with `run_time_dims`)."""
        self.graph = model.graph
        self.initializers = {init.name: init for init in self.graph.initializer}
        self.inputs = [i for i in self.graph.input if i.name not in self.initializers]

    def error(self, message: str) -> ModelImportError:
        return ModelImportError(message, location=self.location)

    def run(self) -> ImportedModel:
        self._check_is_model()
        self._check_opset()
        self._check_nodes()
        self._fix_input_shapes()
        arguments = [pair for value in self.inputs for pair in self._input_arguments(value)]
        sequences.check_distinct([name for name, _ in arguments], "graph input", self.error)
        input_types = [type_ for _, type_ in arguments]
        self._run_checker()
        inferred = self._infer_shapes()

        block = Block(arg_types=input_types)
        env: dict[str, ImportedValue] = {}
        for (name, _), arg in zip(arguments, block.args):
            arg.name_hint = ssa_name(name)
        args = iter(block.args)
        for value in self.inputs:
            if sequences.is_structured(value.type):
                env[value.name] = sequences.assemble(
                    value.type, self.input_shapes[value.name], args
                )
            else:
                env[value.name] = next(args)
        for name, init in self.initializers.items():
            env[name] = self._initializer_array(init)

        dims: RunTimeDims | None = None
        if self.run_time_dims:
            dims = RunTimeDims()
            dims.add_arguments(
                block.args, [self.size_names.get(name) for name, _ in arguments]
            )
        materialized: dict[str, SSAValue] = {}
        for index, node in enumerate(self.graph.node):
            ctx = NodeContext(node, index, env, block, materialized, self.location)
            ctx.opset_version = self.opset_version
            last = block.last_op
            try:
                results = None
                if dims is not None:
                    ctx.run_time_dims = dims
                    results = self._run_time_node(ctx, dims)
                if results is None:
                    results = _converter(node)(ctx)
            except MemoryError:
                # a constant computed at import that this machine cannot hold
                raise ctx.error("out of memory computing the node's constant result") from None
            self._bind_results(ctx, results, env, inferred)
            if dims is not None:
                op = block.first_op if last is None else last.next_op
                while op is not None:
                    dims.add_op(op)
                    op = op.next_op

        results = [
            pair
            for output in self.graph.output
            for pair in self._output_values(output, env, block, materialized)
        ]
        if any(isinstance(env[output.name], (list, type(None))) for output in self.graph.output):
            sequences.check_distinct([name for name, _ in results], "graph output", self.error)
        returned = [value for _, value in results]
        block.add_op(func.ReturnOp(*returned))
        function = func.FuncOp(
            ENTRY_NAME,
            (input_types, [value.type for value in returned]),
            Region(block),
        )
        if self.size_names:
            function.arg_attrs = ArrayAttr([
                DictionaryAttr(
                    {SIZES_ATTR: ArrayAttr([StringAttr(n) for n in self.size_names[name]])}
                    if name in self.size_names
                    else {}
                )
                for name, _ in arguments
            ])
        if self.least_sizes:
            set_size_bounds(function, {name: SizeBound(least) for name, least in self.least_sizes.items()})
        module = ModuleOp([function])
        module.verify()
        return ImportedModel(
            module,
            ENTRY_NAME,
            [name for name, _ in arguments],
            [name for name, _ in results],
        )

    def _run_time_node(self, ctx: NodeContext, dims: RunTimeDims) -> list | None:
        """The results of a node on tensors whose run-time dimensions a reshape merges
        (`merged_dims`) or on shapes of run-time sizes (`shape_values`), else None for
        its converter, which must take the run-time dimensions of its inputs
        (`RUN_TIME_ONNX_OPS`): `StaticShapesOnly` when it does not."""

        def convert_node(node: onnx.NodeProto) -> list:
            return _converter(node)(ctx.nested(node, ctx.opset()))

        if self._producers is None:
            self._producers = {name: n for n in self.graph.node for name in n.output}
        padded = [
            value
            for n in range(len(ctx.node.input))
            if ctx.has_input(n) and isinstance(value := ctx.static_value(n), run_time_slices.Padded)
        ]
        if padded:
            return self._windows(ctx, padded, dims, convert_node)
        cropped = [
            value
            for n in range(len(ctx.node.input))
            if ctx.has_input(n) and isinstance(value := ctx.static_value(n), run_time_slices.Cropped)
        ]
        if cropped:
            if ctx.node.op_type != "Pad" or ctx.static_value(0) is not cropped[0] or len(cropped) > 1:
                # a tensor of a size computed from its own (`sequence - 1`)
                return convert_node(run_time_slices.sliced_inputs(ctx))
            # the model takes sizes the slice does not empty
            name = dims.name(cropped[0].value, cropped[0].axis)
            if name is not None:
                self.least_sizes[name] = max(self.least_sizes.get(name, 0), cropped[0].least)
            return None
        results = merged_dims.convert(ctx, dims, self._producers, convert_node)
        if results is None:
            results = shape_values.convert(ctx, dims, convert_node)
        if results is not None:
            return results
        node = ctx.node
        if node.op_type in ("Reshape", "Flatten") and node.domain in _DEFAULT_DOMAINS:
            value = ctx.static_value(0)
            if isinstance(value, SSAValue) and run_time_axes(value):
                merged = merged_dims.of_reshape(ctx, value, dims)
                if merged is not None:
                    return [merged]
        if node.domain in _DEFAULT_DOMAINS and node.op_type in RUN_TIME_ONNX_OPS:
            return None
        for n, name in enumerate(node.input):
            value = ctx.static_value(n) if name else None
            if isinstance(value, SSAValue) and run_time_axes(value):
                raise StaticShapesOnly(f"{ctx.label} takes no run-time dimensions")
        return None

    @staticmethod
    def _windows(ctx: NodeContext, padded: list, dims: RunTimeDims, convert_node) -> list:
        """A Gather of windows of a run-time dimension padded longer (torch's `unfold`):
        its windows as shifts of the tensor before the pad (`run_time_slices.windows`);
        any other reader of such a pad reads it as a tensor of its own."""
        data = ctx.static_value(0)
        axis = int(ctx.attr("axis", 0)) if ctx.node.op_type == "Gather" else None
        index = ctx.static_value(1) if ctx.node.op_type == "Gather" and ctx.has_input(1) else None
        if (
            ctx.node.op_type == "Gather"
            and padded == [data]
            and isinstance(index, SSAValue)
            and axis is not None
            and (axis if axis >= 0 else axis + len(data.value.type.get_shape())) == data.axis
        ):
            found = run_time_slices.window_offsets(index, data, dims)
            if found is not None:
                ops = run_time_slices.windows(data, *found)
                for op in ops:
                    ctx.emit(op)
                return [ops[-1].results[0]]
        # a tensor of a size computed from its own (`sequence + 8`)
        return convert_node(run_time_slices.padded_inputs(ctx))

    # -- checks before anything is built ----------------------------------------

    def _check_is_model(self) -> None:
        if self.model.ir_version <= 0 or not self.model.HasField("graph"):
            raise self.error(
                "not an ONNX model: it has no IR version or no graph"
            )

    def _check_opset(self) -> None:
        versions = {
            opset.domain: opset.version
            for opset in self.model.opset_import
            if opset.domain in _DEFAULT_DOMAINS
        }
        if not versions:
            if any(node.domain in _DEFAULT_DOMAINS for node in self.graph.node) or not any(
                opset.domain in (TRAINING_DOMAIN, ML_DOMAIN) for opset in self.model.opset_import
            ):
                raise self.error("the model does not import the default ONNX opset domain")
            # only optimizer or classical-ML operators: the default-domain nodes they are
            # imported as carry their own opset
            self.opset_version = onnx.defs.onnx_opset_version()
            return
        version = max(versions.values())
        self.opset_version = version
        newest = onnx.defs.onnx_opset_version()
        if version < 1 or version > newest:
            raise self.error(
                f"the model uses opset {version} of the default domain; strato imports "
                f"opsets {MIN_OPSET} to {newest}"
            )
        if version < MIN_OPSET:
            self._check_old_opset(version)

    def _check_old_opset(self, version: int) -> None:
        """A model of an opset before `MIN_OPSET` imports when each of its operators
        means there what it means at `MIN_OPSET` (Not, Relu, ... unchanged since opset 1),
        not when one of them changed since (Add's broadcasting in opset 7)."""
        changed = []
        for op_type in dict.fromkeys(node.op_type for node in self.graph.node):
            try:
                old = onnx.defs.get_schema(op_type, version).since_version
                new = onnx.defs.get_schema(op_type, MIN_OPSET).since_version
            except onnx.defs.SchemaError:
                continue  # unknown or not yet defined: reported with the nodes
            if old != new:
                changed.append(op_type)
        if changed:
            raise self.error(
                f"the model uses opset {version} of the default domain, where "
                f"{', '.join(changed)} differ from opset {MIN_OPSET}; strato imports "
                f"opsets {MIN_OPSET} to {onnx.defs.onnx_opset_version()}"
            )

    def _check_nodes(self) -> None:
        """Every node is in the default domain, has a converter and reads only values
        defined before it. Unsupported operators are reported together, one diagnostic
        for the whole model."""
        for index, node in enumerate(self.graph.node):
            if node.domain not in (*_DEFAULT_DOMAINS, *_OTHER_DOMAINS):
                raise self.error(
                    f"{node_label(node, index)}: operator domain '{node.domain}' is not "
                    "supported; strato imports operators of the default ONNX domain, "
                    f"onnxruntime's quantized operators of '{CONTRIB_DOMAIN}', the "
                    f"optimizers of '{TRAINING_DOMAIN}' and some of '{ML_DOMAIN}'"
                )
            table = _OTHER_DOMAINS.get(node.domain)
            if table is not None and node.op_type not in table:
                raise self.error(
                    f"{node_label(node, index)}: operator {node.domain}.{node.op_type} "
                    f"is not supported; of the '{node.domain}' domain strato imports "
                    f"{', '.join(sorted(table))}"
                )
        self._check_operators_supported()
        defined = {value.name for value in self.graph.input} | set(self.initializers)
        for index, node in enumerate(self.graph.node):
            for name in node.input:
                if name and name not in defined:
                    raise self.error(
                        f"{node_label(node, index)}: input '{name}' is missing: it is not "
                        "a graph input, an initializer or an output of an earlier node"
                    )
            defined.update(name for name in node.output if name)
        for output in self.graph.output:
            if output.name not in defined:
                raise self.error(
                    f"graph output '{output.name}' is not computed by any node"
                )

    def _check_operators_supported(self) -> None:
        """One diagnostic listing every operator without a converter, with the nodes
        that use it:

            node 'up1' (Resize): operator not supported by strato yet
            operators not supported by strato yet: IsNaN (2 nodes: 'n1', #7), Resize
            (1 node: 'up1'); unknown operators (not in the ONNX standard): FancyOp (1
            node: 'f')
        """
        unsupported: dict[str, list[str]] = {}
        for index, node in enumerate(self.graph.node):
            if node.domain not in _DEFAULT_DOMAINS:
                continue  # checked with its domain
            if node.op_type not in ONNX_CONVERTERS:
                where = f"'{node.name}'" if node.name else f"#{index}"
                unsupported.setdefault(node.op_type, []).append(where)
        if not unsupported:
            return
        if sum(len(nodes) for nodes in unsupported.values()) == 1:
            ((op_type, (where,)),) = unsupported.items()
            why = _UNSUPPORTED if onnx.defs.has(op_type) else _UNKNOWN
            raise self.error(f"node {where} ({op_type}): {why}")
        parts = []
        for why, standard in ((_UNSUPPORTED, True), (_UNKNOWN, False)):
            listed = [
                _nodes_using(op_type, nodes)
                for op_type, nodes in unsupported.items()
                if onnx.defs.has(op_type) == standard
            ]
            if listed:
                parts.append(f"{why.replace('operator', 'operators')}: {', '.join(listed)}")
        raise self.error("; ".join(parts))

    def _fix_input_shapes(self) -> None:
        if not self.input_shapes:
            return
        by_name = {value.name: value for value in self.inputs}
        unknown = [name for name in self.input_shapes if name not in by_name]
        if unknown:
            raise self.error(
                f"cannot set the shape of '{unknown[0]}': not a graph input "
                f"(inputs: {', '.join(by_name) or 'none'})"
            )
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        pinned: dict[str, tuple[int, str]] = {}  # a dim_param's size, and the input giving it
        for value in model.graph.input:
            if value.name not in self.input_shapes or sequences.is_structured(value.type):
                continue  # a sequence's or optional's structure is read with its type
            if sequences.is_structure_spec(self.input_shapes[value.name]):
                raise self.error(
                    f"cannot set the shape of '{value.name}' to "
                    f"{self.input_shapes[value.name]!r}: it is a tensor, not a sequence"
                )
            shape = value.type.tensor_type.shape
            given = [int(size) for size in self.input_shapes[value.name]]
            if len(shape.dim) == len(given):
                for dim, size in zip(shape.dim, given):
                    if dim.HasField("dim_param") and dim.dim_param:
                        self._pin(pinned, dim.dim_param, size, value.name)
            shape.ClearField("dim")
            for size in given:
                shape.dim.add().dim_value = size
        # the other inputs' dimensions of the sizes pinned (input_ids [4, 64] pins the
        # attention mask's [batch, sequence] too)
        for value in model.graph.input:
            if value.name in self.input_shapes or not value.type.HasField("tensor_type"):
                continue
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in pinned:
                    dim.dim_value = pinned[dim.dim_param][0]
        self.model = model
        self.graph = model.graph
        self.inputs = [i for i in self.graph.input if i.name not in self.initializers]

    def _pin(self, pinned: dict[str, tuple[int, str]], name: str, size: int, by: str) -> None:
        """Record that input_shapes gives dimension `name` the size `size` (in input
        `by`); an error when another input gives it another size."""
        if name in pinned and pinned[name][0] != size:
            other, where = pinned[name]
            raise self.error(
                f"input_shapes gives dimension '{name}' two sizes: {other} in '{where}' "
                f"and {size} in '{by}'"
            )
        pinned.setdefault(name, (size, by))

    def _input_arguments(self, value: onnx.ValueInfoProto) -> list[tuple[str, TensorType]]:
        """The function arguments of a graph input: one tensor, or the tensors of a
        sequence or optional of the structure given in `input_shapes` (`sequences`)."""
        if not sequences.is_structured(value.type):
            return [(value.name, self._input_type(value))]
        if value.name not in self.input_shapes:
            raise self.error(
                f"graph input '{value.name}' is a sequence or optional: strato compiles "
                "one of a known structure (give it in input_shapes; the ONNX backend "
                "does on the first run)"
            )
        spec = self.input_shapes[value.name]
        return sequences.argument_types(value.name, value.type, spec, self.error)

    def _input_type(self, value: onnx.ValueInfoProto) -> TensorType:
        what = f"graph input '{value.name}'"
        if not value.type.HasField("tensor_type"):
            raise self.error(f"{what} is not a tensor")
        tensor = value.type.tensor_type
        element_type = self._element_type(tensor.elem_type)
        if element_type is None:
            type_name = onnx.TensorProto.DataType.Name(tensor.elem_type)
            raise self.error(
                f"{what} has element type {type_name}; strato imports numeric tensors only"
                + (" (its ONNX backend compiles strings as ids)" if type_name == "STRING" else "")
            )
        if not tensor.HasField("shape"):
            raise SymbolicShapeError(
                f"{what} has no shape; strato needs static shapes (fix it with "
                "input_shapes / --input-shapes)",
                location=self.location,
            )
        shape = []
        for axis, dim in enumerate(tensor.shape.dim):
            if self.run_time_dims and (not dim.HasField("dim_value") or dim.dim_value < 0):
                name = dim.dim_param if dim.HasField("dim_param") else f"{value.name}_{axis}"
                self.size_names.setdefault(value.name, []).append(name)
                shape.append(DYNAMIC_INDEX)
                continue
            if not dim.HasField("dim_value") or dim.dim_value < 0:
                symbol = f" '{dim.dim_param}'" if dim.HasField("dim_param") else ""
                raise SymbolicShapeError(
                    f"{what} has a dynamic dimension{symbol} at axis {axis}; strato "
                    "needs static shapes here (pin it with input_shapes, --input-shapes "
                    "or --batch)",
                    location=self.location,
                )
            shape.append(dim.dim_value)
        return TensorType(element_type, shape)

    @staticmethod
    def _element_type(elem_type: int) -> Attribute | None:
        """The element type of an ONNX tensor element type, None for unsupported ones
        (strings, complex numbers)."""
        try:
            return element_type_of(helper.tensor_dtype_to_np_dtype(elem_type))
        except (KeyError, ValueError, TypeError):
            return None

    def _run_checker(self) -> None:
        # the checker and shape inference see the weights' types and shapes, not their
        # values: serializing those is most of what either would cost
        self._light_model = without_weight_data(self.model)
        try:
            onnx.checker.check_model(self._light_model)
        except onnx.checker.ValidationError as err:
            reason = " ".join(str(err).split())
            if not self._outputs_lack_shapes():
                raise self.error(f"invalid ONNX model: {reason}") from None
            # graph outputs declared with an element type but no shape (as hand-built and
            # some exported models have them, and onnxruntime runs): let shape inference
            # fill them in, then check again
            try:
                inferred = shape_inference.infer_shapes(self.model)
                onnx.checker.check_model(inferred)
            except (shape_inference.InferenceError, onnx.checker.ValidationError):
                raise self.error(f"invalid ONNX model: {reason}") from None
            self.model = inferred
            self._light_model = without_weight_data(inferred)
            self.graph = inferred.graph
            self.inputs = [i for i in self.graph.input if i.name not in self.initializers]

    def _outputs_lack_shapes(self) -> bool:
        return any(
            value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape")
            for value in self.model.graph.output
        )

    def _infer_shapes(self) -> dict[str, tuple[int, ...]]:
        """Static shapes ONNX shape inference finds for intermediate values."""
        try:
            model = shape_inference.infer_shapes(self._light_model)
        except (shape_inference.InferenceError, onnx.checker.ValidationError) as err:
            reason = " ".join(str(err).split())
            raise self.error(f"shape inference failed: {reason}") from None
        shapes: dict[str, tuple[int, ...]] = {}
        for value in (*model.graph.value_info, *model.graph.output):
            tensor = value.type.tensor_type
            if not tensor.HasField("shape"):
                continue
            dims = tensor.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                shapes[value.name] = tuple(d.dim_value for d in dims)
        return shapes

    # -- conversion ---------------------------------------------------------------

    def _initializer_array(self, init: onnx.TensorProto) -> np.ndarray:
        try:
            return np.require(raw_data.to_array(init), requirements="C")
        except Exception as err:  # noqa: BLE001 - any decoding failure is bad input
            raise self.error(f"cannot read initializer '{init.name}': {err}") from None

    def _bind_results(
        self,
        ctx: NodeContext,
        results: list[ImportedValue],
        env: dict[str, ImportedValue],
        inferred: Mapping[str, tuple[int, ...]],
    ) -> None:
        outputs = list(ctx.node.output)
        assert len(results) <= len(outputs), f"{ctx.label}: converter returned too much"
        for name, value in zip(outputs, results):
            if not name:
                continue
            if isinstance(value, np.generic):  # a 0-d result numpy gave as a scalar
                value = np.asarray(value)
            expected = inferred.get(name)
            if expected is not None and shape_of(value) != expected:
                raise ctx.error(
                    f"output '{name}' has shape {list(shape_of(value))} but ONNX shape "
                    f"inference gives {list(expected)}"
                )
            if isinstance(value, SSAValue) and value.name_hint is None:
                value.name_hint = ssa_name(name)
            env[name] = value
        for name in outputs[len(results):]:
            if name:
                raise ctx.error(f"output '{name}' is not supported")

    def _output_values(
        self,
        output: onnx.ValueInfoProto,
        env: Mapping[str, ImportedValue],
        block: Block,
        materialized: dict[str, SSAValue],
    ) -> list[tuple[str, SSAValue]]:
        """The function results of a graph output: its tensor, or the tensors of a
        sequence or optional (`sequences`)."""
        value = env[output.name]
        if not sequences.is_structured(output.type) and not isinstance(value, (list, type(None))):
            return [(output.name, self._output_value(output, env, block, materialized))]
        pairs = sequences.result_values(output.name, output.type, value, self.error)
        results = []
        for name, item in pairs:
            if isinstance(item, np.ndarray):
                if not has_element_type(item.dtype):
                    raise self.error(
                        f"graph output '{name}' has element type {item.dtype}; strato "
                        "imports numeric tensors only"
                    )
                item = self._materialize(block, item, name)
            results.append((name, item))
        return results

    def _output_value(
        self,
        output: onnx.ValueInfoProto,
        env: Mapping[str, ImportedValue],
        block: Block,
        materialized: dict[str, SSAValue],
    ) -> SSAValue:
        what = f"graph output '{output.name}'"
        value = env[output.name]
        if isinstance(
            value,
            (shape_values.ShapeValue, merged_dims.Merged, run_time_slices.Cropped, run_time_slices.Padded),
        ):
            raise StaticShapesOnly(
                f"{what} is a shape of run-time sizes, merges them, or slices one"
            )
        if isinstance(value, np.ndarray):
            if not has_element_type(value.dtype):
                raise self.error(
                    f"{what} has element type {value.dtype}; strato imports numeric tensors only"
                )
            cached = materialized.get(output.name)
            value = cached if cached is not None else self._materialize(block, value, output.name)
        tensor = output.type.tensor_type
        if output.type.HasField("tensor_type") and tensor.elem_type != (
            onnx.TensorProto.UNDEFINED
        ):
            type_name = onnx.TensorProto.DataType.Name(tensor.elem_type)
            declared = self._element_type(tensor.elem_type)
            if declared is None:
                raise self.error(
                    f"{what} is declared {type_name}; strato imports numeric tensors only"
                )
            assert isinstance(value.type, TensorType)
            if value.type.element_type != declared:
                raise self.error(
                    f"{what} is declared {type_name} but is computed as "
                    f"{value.type.element_type}"
                )
        if tensor.HasField("shape"):
            declared = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
            actual = list(shape_of(value))
            if len(declared) != len(actual) or any(
                d is not None and d != a for d, a in zip(declared, actual)
            ):
                raise self.error(f"{what} is declared with shape {declared} but has shape {actual}")
        return value

    @staticmethod
    def _materialize(block: Block, array: np.ndarray, name: str) -> SSAValue:
        op = ConstantOp.from_array(array)
        block.add_op(op)
        op.result.name_hint = ssa_name(name)
        return op.result
