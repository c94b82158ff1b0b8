"""Run a quantized graph with its VTA-shaped convolutions on the simulator, the rest on numpy.

    outputs, layers = run_graph_on_vta(module, inputs, virtual_threads=2)

The module is graph-quantize's output (before fusion). A `graph.conv` that carries the VTA
layout attributes and is followed by exactly the requantization graph-quantize writes —

    %acc = graph.conv (graph.cast %x8 to i32), (graph.cast %w8 to i32)[, %bias_i32] ...
    %m = graph.mod %acc, 2^s ; %e = graph.sub %acc, %m ; %q = graph.div %e, 2^s
    %c = graph.clip %q min 0 (or -127) max 127 ; %y = graph.cast %c to i8

— with unit dilation, one stride and one padding for both axes, batch 1 and a shape the
VTA template can tile (at least two output columns), runs as one
`run_conv2d` (template, tokens, virtual threads, instruction stream, simulator); the
chain's i8 result is the simulator's output. Every other op (the first layer, residual
adds, pooling, quantize/dequantize casts) runs on its reference semantics. Results are
therefore bit-exact against `strato.interpreters.graph.run_graph` of the same module, and
each offloaded layer's simulator report is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue

from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph.base import static_shape
from strato.dialects.tensor_types import array_from_dense
from strato.interpreters.graph import check_inputs, entry_function
from strato.targets.vta.compile import compile_conv2d, run_conv2d, workload_of
from strato.targets.vta.conv2d_template import default_config
from strato.targets.vta.graph_quantize import VTA_LAYOUT_ATTR
from strato.targets.vta.simulator import Report


@dataclass(frozen=True)
class OffloadedLayer:
    """One conv run on the simulator: its name, shapes and the simulator's report; with
    the int8 input it was given and the int8 output the simulator computed, when the
    runner keeps them (`run_partition` does, for `check_layers`)."""

    name: str
    input_shape: tuple[int, ...]
    weight_shape: tuple[int, ...]
    stride: int
    report: Report
    input: np.ndarray | None = field(default=None, repr=False, compare=False)
    output: np.ndarray | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class _Match:
    conv: graph.ConvOp
    x8: SSAValue
    w8: np.ndarray
    bias: np.ndarray | None
    shift: int
    relu: bool
    chain: tuple[Operation, ...]  # the ops the simulator's result replaces, conv first
    result: SSAValue


def _only_user(value: SSAValue) -> Operation | None:
    users = {use.operation for use in value.uses}
    return users.pop() if len(users) == 1 else None


def _constant(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    return array_from_dense(owner.value) if isinstance(owner, graph.ConstantOp) else None


def _is_int(value: SSAValue, width: int) -> bool:
    element = value.type.element_type
    return isinstance(element, IntegerType) and element.width.data == width


def match_offloadable(conv: Operation) -> _Match | None:
    """The VTA conv pattern at `conv`, or None when it must stay on the CPU."""
    if not isinstance(conv, graph.ConvOp) or VTA_LAYOUT_ATTR not in conv.attributes:
        return None
    x_cast, w_cast = conv.operands[0].owner, conv.operands[1].owner
    if not (isinstance(x_cast, graph.CastOp) and isinstance(w_cast, graph.CastOp)):
        return None
    if not (_is_int(x_cast.input, 8) and _is_int(w_cast.input, 8)):
        return None
    w8 = _constant(w_cast.input)
    if w8 is None:
        return None
    bias = None
    if conv.bias is not None:
        bias = _constant(conv.bias)
        if bias is None or not _is_int(conv.bias, 32):
            return None
    strides, pads = set(conv.stride_values), set(conv.padding.get_values())
    if len(strides) != 1 or len(pads) != 1 or set(conv.dilation_values) != {1}:
        return None
    if static_shape(conv.operands[0])[0] != 1:
        return None
    chain: list[Operation] = [conv]
    value = conv.results[0]
    shift = 0
    users = {use.operation for use in value.uses}
    if len(users) == 2:
        mod = next((u for u in users if isinstance(u, graph.ModOp)), None)
        sub = next((u for u in users if isinstance(u, graph.SubOp)), None)
        if mod is None or sub is None or mod.operands[0] != value or tuple(sub.operands) != (value, mod.results[0]):
            return None
        divisor = _constant(mod.operands[1])
        div = _only_user(sub.results[0])
        if divisor is None or divisor.size != 1 or not isinstance(div, graph.DivOp) or div.operands[1] != mod.operands[1]:
            return None
        d = int(divisor.reshape(-1)[0])
        if d < 2 or d & (d - 1) or _only_user(mod.results[0]) is not sub:
            return None
        shift = d.bit_length() - 1
        chain += [mod, sub, div]
        value = div.results[0]
    clip = _only_user(value)
    if not isinstance(clip, graph.ClipOp) or clip.bounds not in ((0.0, 127.0), (-127.0, 127.0)):
        return None
    cast = _only_user(clip.results[0])
    if not isinstance(cast, graph.CastOp) or not _is_int(cast.results[0], 8):
        return None
    chain += [clip, cast]
    try:  # a layer the template cannot tile (one output column, huge padding) stays on the CPU
        wl = workload_of(static_shape(x_cast.input), w8.shape, strides.pop(), pads.pop(), shift)
        default_config(wl)
    except StratoError:
        return None
    return _Match(conv, x_cast.input, w8, bias, shift, clip.bounds[0] == 0.0, tuple(chain), cast.results[0])


def compile_offloaded(
    module: ModuleOp, *, virtual_threads: int = 2, function: str | None = None
) -> dict[Operation, ModuleOp]:
    """The VTA program (`compile_conv2d`) of every conv of the entry function that runs
    on the simulator, by its `graph.conv` op: what `run_graph_on_vta(programs=...)` runs
    without compiling the layers again."""
    entry = entry_function(module, function)
    programs: dict[Operation, ModuleOp] = {}
    by_workload: dict[object, ModuleOp] = {}  # layers of one shape share their program
    for op in entry.body.block.ops:
        found = match_offloadable(op)
        if found is None:
            continue
        stride, padding = found.conv.stride_values[0], found.conv.padding.get_values()[0]
        wl = workload_of(
            static_shape(found.x8), found.w8.shape, stride, padding, found.shift,
            bias=found.bias is not None, relu=found.relu,
        )
        if wl not in by_workload:
            by_workload[wl] = compile_conv2d(wl, virtual_threads=virtual_threads)
        programs[found.conv] = by_workload[wl]
    return programs


def run_graph_on_vta(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    *,
    virtual_threads: int = 2,
    function: str | None = None,
    programs: dict[Operation, ModuleOp] | None = None,
) -> tuple[list[np.ndarray], list[OffloadedLayer]]:
    """Interpret the entry function, offloading every matching conv to the simulator
    (the program `programs` holds for it; by default each workload is compiled once)."""
    entry = entry_function(module, function)
    if programs is None:
        programs = compile_offloaded(module, virtual_threads=virtual_threads, function=function)
    env: dict[SSAValue, np.ndarray] = dict(zip(entry.args, check_inputs(entry, inputs)))
    done: set[Operation] = set()
    layers: list[OffloadedLayer] = []
    for op in entry.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.arguments], layers
        if op in done:
            continue
        found = match_offloadable(op)
        if found is not None:
            stride, padding = found.conv.stride_values[0], found.conv.padding.get_values()[0]
            out, report = run_conv2d(
                env[found.x8],
                found.w8,
                stride=stride,
                padding=padding,
                shift=found.shift,
                virtual_threads=virtual_threads,
                bias=found.bias,
                relu=found.relu,
                program=programs.get(found.conv),
            )
            env[found.result] = out
            done.update(found.chain)
            name = found.conv.results[0].name_hint or f"conv{len(layers)}"
            layers.append(OffloadedLayer(name, tuple(env[found.x8].shape), tuple(found.w8.shape), stride, report))
            continue
        if not isinstance(op, graph.GraphOp):
            raise StratoError(f"run_graph_on_vta cannot run '{op.name}'", op=op)
        env.update(zip(op.results, op.evaluate([env[v] for v in op.operands]), strict=True))
    raise StratoError(f"@{entry.sym_name.data} has no func.return")


__all__ = ["OffloadedLayer", "compile_offloaded", "match_offloadable", "run_graph_on_vta"]
