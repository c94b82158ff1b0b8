"""A quantized graph split between the CPU target and VTA: `partition`, `run_partition`.

    steps = partition(module, virtual_threads=2)          # compiles everything once
    outputs, layers = run_partition(steps, module, inputs)

The entry function's ops run in order. Every conv that VTA takes
(`strato.targets.vta.graph.match_offloadable`: the conv with its shift-and-clip requantization)
is a VTA step, compiled through the VTA compiler path (`compile_conv2d`; layers of one
workload share their program). The ops between two VTA steps form a CPU segment: a
graph-level function of the values it reads from earlier steps (constants are copied
in) returning the values later steps or the entry's return read, compiled by the CPU
target (`llvm` by default) as any model is. Since the quantized graph's float
arithmetic is exact (powers of two and small sums), the result is bit-exact against the
graph interpreter on the same module (`strato.interpreters.graph.run_graph`).

    checks = check_layers(steps, layers)   # each layer's int8 output against reference_conv2d

Both report each offloaded layer as they reach it to the listener of
`strato.targets.vta.progress.reporting_progress` (a progress display), if any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph.base import static_shape
from strato.dialects.tensor_types import array_from_dense
from strato.interpreters.graph import check_inputs, entry_function
from strato.runtime.compiled_model import CompiledModel
from strato.targets.vta.compile import (
    compile_conv2d,
    reference_conv2d,
    run_conv2d,
    workload_of,
)
from strato.targets.vta.graph import OffloadedLayer, match_offloadable
from strato.targets.vta.progress import COMPILING, SIMULATING, report


@dataclass
class CpuSegment:
    """Ops of the entry function compiled for the CPU target."""

    inputs: list[SSAValue]
    outputs: list[SSAValue]
    model: CompiledModel


@dataclass
class VtaStep:
    """One conv and its requantization, run on the simulator."""

    conv: graph.ConvOp
    x8: SSAValue
    w8: np.ndarray
    bias: np.ndarray | None
    shift: int
    relu: bool
    result: SSAValue
    program: ModuleOp
    streams: dict = field(default_factory=dict)
    """The program's emitted instruction stream, kept across calls (`run_vta`); layers of
    one workload share it as they share the program."""


Step = CpuSegment | VtaStep


def partition(
    module: ModuleOp, *, virtual_threads: int = 2, function: str | None = None, cpu_target: str = "llvm"
) -> list[Step]:
    """The steps that run the entry function of the quantized `module` (module docstring)."""
    entry = entry_function(module, function)
    ops = [op for op in entry.body.block.ops if not isinstance(op, func.ReturnOp)]
    matches = {}
    for op in ops:
        found = match_offloadable(op)
        if found is not None:
            matches[op] = found
    in_chains = {o for found in matches.values() for o in found.chain}
    for found in matches.values():
        # the casts of x and w to i32 that only the conv reads are part of the VTA step
        for operand in found.conv.operands[:2]:
            cast = operand.owner
            if isinstance(cast, graph.CastOp) and all(use.operation is found.conv for use in operand.uses):
                in_chains.add(cast)
    programs: dict[object, ModuleOp] = {}
    streams: dict[object, dict] = {}
    steps: list[Step] = []
    pending: list[Operation] = []

    def flush() -> None:
        if pending:
            segment = _segment(pending, f"cpu{len(steps)}", cpu_target)
            if segment is not None:
                steps.append(segment)
            pending.clear()

    for op in ops:
        found = matches.get(op)
        if found is not None:
            done = len(steps) - _cpu_steps(steps)
            report(COMPILING, done, len(matches), _layer_name(found.conv, done))
            flush()
            stride, padding = found.conv.stride_values[0], found.conv.padding.get_values()[0]
            wl = workload_of(
                static_shape(found.x8), found.w8.shape, stride, padding, found.shift,
                bias=found.bias is not None, relu=found.relu,
            )  # fmt: skip
            if wl not in programs:
                programs[wl] = compile_conv2d(wl, virtual_threads=virtual_threads)
                streams[wl] = {}
            steps.append(
                VtaStep(
                    found.conv, found.x8, found.w8, found.bias, found.shift, found.relu, found.result,
                    programs[wl], streams[wl],
                )
            )  # fmt: skip
        elif op not in in_chains and not isinstance(op, graph.ConstantOp):
            pending.append(op)
    flush()
    if matches:
        report(COMPILING, len(matches), len(matches))
    return steps


def _cpu_steps(steps: Sequence[Step]) -> int:
    return sum(isinstance(step, CpuSegment) for step in steps)


def _layer_name(conv: graph.ConvOp, index: int) -> str:
    return conv.results[0].name_hint or f"conv{index}"


def _segment(ops: list[Operation], name: str, cpu_target: str) -> CpuSegment | None:
    """`ops` as a graph-level function compiled for `cpu_target` (None: nothing to run)."""
    from strato.runtime.signature import Signature
    from strato.targets.registry import get_target, run_stages

    inside = set(ops)
    inputs: list[SSAValue] = []
    constants: list[Operation] = []
    for op in ops:
        for value in op.operands:
            owner = value.owner
            if owner in inside:
                continue
            if isinstance(owner, graph.ConstantOp):
                if owner not in constants:
                    constants.append(owner)
            elif value not in inputs:
                inputs.append(value)
    outputs = [r for op in ops for r in op.results if any(use.operation not in inside for use in r.uses)]
    if not outputs:
        return None
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for index, (arg, value) in enumerate(zip(block.args, inputs)):
        arg.name_hint = f"in{index}"
        mapping[value] = arg
    for op in [*constants, *ops]:
        block.add_op(op.clone(value_mapper=mapping))
    block.add_op(func.ReturnOp(*[mapping[v] for v in outputs]))
    function = func.FuncOp(name, ([v.type for v in inputs], [v.type for v in outputs]), Region(block))
    module = ModuleOp([function])
    signature = Signature.from_function(function)
    target = get_target(cpu_target)
    run_stages(target.stages(), module)
    model = target.build(module, name, signature, public_name=name)
    return CpuSegment(inputs, outputs, model)


def run_partition(
    steps: Sequence[Step], module: ModuleOp, inputs: Sequence[np.ndarray], *, function: str | None = None
) -> tuple[list[np.ndarray], list[OffloadedLayer]]:
    """Run the steps of `partition(module)` on `inputs`: the entry's outputs and the
    simulator's report of each VTA step."""
    entry = entry_function(module, function)
    env: dict[SSAValue, np.ndarray] = dict(zip(entry.args, check_inputs(entry, inputs)))
    layers: list[OffloadedLayer] = []
    offloaded = len(steps) - _cpu_steps(steps)
    for step in steps:
        if isinstance(step, CpuSegment):
            env.update(zip(step.outputs, step.model(*[env[v] for v in step.inputs]), strict=True))
            continue
        name = _layer_name(step.conv, len(layers))
        report(SIMULATING, len(layers), offloaded, name)
        stride, padding = step.conv.stride_values[0], step.conv.padding.get_values()[0]
        x8 = env[step.x8]
        out, simulated = run_conv2d(
            x8, step.w8, stride=stride, padding=padding, shift=step.shift,
            bias=step.bias, relu=step.relu, program=step.program, streams=step.streams,
        )  # fmt: skip
        env[step.result] = out
        layers.append(OffloadedLayer(name, tuple(x8.shape), tuple(step.w8.shape), stride, simulated, x8, out))
    if offloaded:
        report(SIMULATING, offloaded, offloaded)
    results = []
    returned = entry.body.block.last_op
    assert isinstance(returned, func.ReturnOp)
    for value in returned.arguments:
        if value in env:
            results.append(env[value])
        elif isinstance(value.owner, graph.ConstantOp):
            results.append(array_from_dense(value.owner.value))
        else:
            raise StratoError(f"@{entry.sym_name.data} returns a value no step computes", op=returned)
    return results, layers


@dataclass(frozen=True)
class LayerCheck:
    """One offloaded layer's simulated int8 output against the numpy int8 reference."""

    name: str
    differing: int
    """How many of its output elements differ from the reference."""
    elements: int


def check_layers(steps: Sequence[Step], layers: Sequence[OffloadedLayer]) -> list[LayerCheck]:
    """Each offloaded layer of a `run_partition(steps, ...)` call (its `layers`) checked
    element by element: the simulator's int8 output against `reference_conv2d` (numpy)
    of the same int8 input, weights, bias, shift and clip."""
    vta_steps = [step for step in steps if isinstance(step, VtaStep)]
    if len(vta_steps) != len(layers):
        raise StratoError(f"check_layers: {len(layers)} layer reports for {len(vta_steps)} offloaded layers")
    checks = []
    for step, layer in zip(vta_steps, layers):
        if layer.input is None or layer.output is None:
            raise StratoError(f"check_layers: layer {layer.name} kept no input and output")
        want = reference_conv2d(
            layer.input, step.w8, stride=step.conv.stride_values[0], padding=step.conv.padding.get_values()[0],
            shift=step.shift, bias=step.bias, relu=step.relu,
        )  # fmt: skip
        got = layer.output
        differing = got.size if got.shape != want.shape else int(np.count_nonzero(got != want))
        checks.append(LayerCheck(layer.name, differing, want.size))
    return checks


__all__ = ["CpuSegment", "LayerCheck", "VtaStep", "check_layers", "partition", "run_partition"]
