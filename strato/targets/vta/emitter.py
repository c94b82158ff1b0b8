"""`-t vta`: emit a vta-dialect module's instruction stream, run it, write the bundle.

    strato-opt conv.mlir -p vta-insert-dependence-tokens,vta-inject-virtual-threads -t vta -o DIR

The entry function (`function`, default: the only one) gets seeded random DRAM contents
(int8 over the full range for regions inp and wgt, int32 in [-1024, 1024] for acc, zeros
for out), its stream runs on the simulator, and the report (instruction counts, counters,
cycles, compute utilization) is printed. With `-o DIR` the bundle goes to DIR (its
tensors named after the arguments; an argument with a `vta.shape` attribute, [N, C, H, W]
or [O, I, KH, KW], is listed in the manifest with its layout), so any simulator can rerun it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp
from xdsl.utils.target import Target

from strato.diagnostics import StratoError
from strato.targets.vta.bundle import write_bundle
from strato.targets.vta.config import DEFAULT_CONFIG
from strato.targets.vta.emit import assign_regions
from strato.targets.vta.interpret import NamedTensor, run_vta
from strato.targets.vta.layout import activation_layout, weight_layout
from strato.targets.vta.simulator import region_layout

SHAPE_ATTR = "vta.shape"
"""Argument attribute: the logical NCHW / OIHW shape of a DRAM tensor given as elements."""


def _entry(module: ModuleOp, name: str | None) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if name:
        for function in functions:
            if function.sym_name.data == name:
                return function
        raise StratoError(f"no function named @{name} in the module")
    if len(functions) != 1:
        raise StratoError("-t vta needs one function, or function=NAME")
    return functions[0]


def _logical(function: func.FuncOp, index: int, region: str) -> NamedTensor | None:
    attrs = function.arg_attrs.data[index].data if function.arg_attrs is not None else {}
    shape = attrs.get(SHAPE_ATTR)
    if not isinstance(shape, DenseArrayBase):
        return None
    layout = weight_layout() if region == "wgt" else activation_layout()
    name = function.args[index].name_hint or f"arg{index}"
    return NamedTensor(name, tuple(int(v) for v in shape.get_values()), layout)


@dataclass(frozen=True)
class VtaTarget(Target):
    """Run a vta function's stream on the simulator; with -o DIR write its bundle."""

    name: ClassVar[str] = "vta"

    function: str | None = None
    seed: int = 0
    directory: str = ""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        function = _entry(module, self.function)
        regions = assign_regions(function)
        types = function.function_type.inputs.data
        unused = [i for i in range(len(types)) if i not in regions]
        if unused:
            raise StratoError(f"argument {unused[0]} of @{function.sym_name.data} is never loaded or stored")
        rng = np.random.default_rng(self.seed)
        layouts = region_layout(DEFAULT_CONFIG)
        arrays = []
        for index, type_ in enumerate(types):
            dtype, _ = layouts[regions[index]]
            shape = tuple(type_.get_shape())
            if regions[index] in ("inp", "wgt"):
                arrays.append(rng.integers(-128, 128, shape).astype(dtype))
            elif regions[index] == "acc":
                arrays.append(rng.integers(-1024, 1025, shape).astype(dtype))
            else:
                arrays.append(np.zeros(shape, dtype))
        names = {i: t for i in regions if (t := _logical(function, i, regions[i])) is not None}
        outputs, report, bundle = run_vta(function, arrays, names=names)
        output.write(f"// @{function.sym_name.data} on the VTA simulator, inputs from seed {self.seed}\n")
        output.write(report.format() + "\n")
        for index, array in sorted(outputs.items()):
            output.write(f"output {index}: {array.shape[0]} elements, checksum {int(array.astype(np.int64).sum())}\n")
        if self.directory:
            write_bundle(self.directory, bundle.insns, bundle.dram, bundle.config, bundle.tensors)
            output.write(f"bundle written to {self.directory}\n")


__all__ = ["SHAPE_ATTR", "VtaTarget"]
