"""Run a vta-dialect function on the simulator: place its arguments, emit, simulate.

Arguments are arrays of elements shaped like the function's memref arguments. Each goes
to the DRAM region `assign_regions` gives it, after the arguments before it in that
region; the stream `emit_function` issues runs on the bit-exact simulator, and the
arguments in region out are read back. This is the semantics equivalence tests use: two
vta functions are equivalent when they write the same outputs from the same inputs.

    outputs, report, bundle = run_vta(kernel, [x_elems, w_elems, out_elems])

A caller that runs one unchanging function many times passes the same `streams` dict to
every call: the stream is emitted once per argument placement and reused (emitting it
again would give the same stream; only the data in DRAM differs from call to call).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func

from strato.diagnostics import StratoError
from strato.targets.vta.bundle import Bundle, TensorPlacement
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.cycle_model import CycleParams
from strato.targets.vta.emit import assign_regions, emit_function
from strato.targets.vta.runtime import Program
from strato.targets.vta.simulator import Report, region_layout, simulate


@dataclass(frozen=True)
class NamedTensor:
    """How an argument reads as a logical tensor in a bundle's manifest."""

    name: str
    shape: tuple[int, ...]
    layout: str


def place_arguments(
    function: func.FuncOp, arrays: Sequence[np.ndarray], config: VTAConfig = DEFAULT_CONFIG
) -> tuple[dict[str, np.ndarray], dict[int, tuple[str, int]]]:
    """The DRAM regions holding `arrays`, and argument index -> (region, first element)."""
    types = function.function_type.inputs.data
    if len(arrays) != len(types):
        raise StratoError(f"@{function.sym_name.data} takes {len(types)} arguments, got {len(arrays)}")
    regions = assign_regions(function)
    layouts = region_layout(config)
    parts: dict[str, list[np.ndarray]] = {}
    where: dict[int, tuple[str, int]] = {}
    for index, region in sorted(regions.items()):
        dtype, shape = layouts[region]
        array = np.asarray(arrays[index])
        if tuple(array.shape) != tuple(types[index].get_shape()) or array.shape[1:] != shape:
            raise StratoError(
                f"argument {index} has shape {list(array.shape)}, expected {list(types[index].get_shape())} "
                f"elements of region {region}"
            )
        first = sum(len(p) for p in parts.get(region, []))
        parts.setdefault(region, []).append(array.astype(dtype, casting="same_kind"))
        where[index] = (region, first)
    return {region: np.concatenate(p) for region, p in parts.items()}, where


def run_vta(
    function: func.FuncOp,
    arrays: Sequence[np.ndarray],
    config: VTAConfig = DEFAULT_CONFIG,
    *,
    seed: int | None = None,
    params: CycleParams | None = None,
    names: Mapping[int, NamedTensor] | None = None,
    streams: MutableMapping[object, Program] | None = None,
) -> tuple[dict[int, np.ndarray], Report, Bundle]:
    """Simulate one run; the out-region arguments after it, the report and the bundle.

    `streams` caches the emitted stream by argument placement across calls with the same,
    unchanged `function` (module docstring)."""
    dram, where = place_arguments(function, arrays, config)
    first_elements = {i: first for i, (_, first) in where.items()}
    key = (tuple(sorted(first_elements.items())), config)
    program = streams.get(key) if streams is not None else None
    if program is None:
        program = emit_function(function, first_elements, config)
        if streams is not None:
            streams[key] = program
    dram = {"uop": program.uops, **dram} if len(program.uops) else dict(dram)
    initial = {name: array.copy() for name, array in dram.items()}
    report = simulate(program.insns, dram, config, seed=seed, params=params)
    outputs = {}
    for index, (region, first) in where.items():
        if region == "out":
            outputs[index] = dram["out"][first : first + len(arrays[index])].copy()
    tensors = {}
    for index, named in (names or {}).items():
        region, first = where[index]
        tensors[named.name] = TensorPlacement(region, first, named.shape, named.layout)
    return outputs, report, Bundle(list(program.insns), initial, config, tensors)


__all__ = ["NamedTensor", "place_arguments", "run_vta"]
