"""The conv3d NCDHW template (strato/targets/llvm/templates/conv3d.py): regular 3-D
convolutions get a register tile of output columns x output-channel vectors in a local
buffer, with the weights copied one vector of output channels at a time and the
elementwise stages after the convolution folded into the tile's copy out; every
scheduled convolution computes what numpy does, for the defaults and for random knob
values."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strato.context import make_context
from strato.dialects.loop import ForOp
from strato.frontends.onnx import import_onnx
from strato.pipeline import run_pipeline
from strato.runtime.signature import Signature
from strato.schedule import Schedule, ScheduleError
from strato.targets.llvm.build import build_llvm, build_loops
from strato.targets.llvm.templates.conv3d import CONV3D
from strato.targets.registry import get_target, run_stages
from strato.transforms.schedule_default import (
    KNOBS_ATTR,
    TEMPLATE_ATTR,
    schedule_default,
)

RNG = np.random.default_rng(0)


def conv3d_reference(x, w, b, strides, pads, groups=1) -> np.ndarray:
    """ONNX Conv over [N, C, D, H, W] in numpy: pads are (begin.., end..)."""
    n = x.shape[0]
    m, per_group, *kernel = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), *zip(pads[:3], pads[3:])])
    out = [(xp.shape[2 + a] - kernel[a]) // strides[a] + 1 for a in range(3)]
    y = np.zeros((n, m, *out), dtype=np.float64)
    per_out = m // groups
    for kd in range(kernel[0]):
        for kh in range(kernel[1]):
            for kw in range(kernel[2]):
                window = xp[
                    :,
                    :,
                    kd : kd + strides[0] * out[0] : strides[0],
                    kh : kh + strides[1] * out[1] : strides[1],
                    kw : kw + strides[2] * out[2] : strides[2],
                ]
                for g in range(groups):
                    part = window[:, g * per_group : (g + 1) * per_group]
                    taps = w[g * per_out : (g + 1) * per_out, :, kd, kh, kw]
                    y[:, g * per_out : (g + 1) * per_out] += np.einsum("ncdhw,mc->nmdhw", part, taps)
    if b is not None:
        y += b.reshape(1, m, 1, 1, 1)
    return y.astype(np.float32)


class Case:
    """A 3-D convolution (+ bias, + ReLU, + a residual add of the input) as an ONNX
    model, with its inputs and the numpy result."""

    def __init__(
        self,
        x_shape,
        out_channels,
        kernel,
        strides=(1, 1, 1),
        pads=(0,) * 6,
        *,
        groups=1,
        bias=True,
        relu=False,
        residual=False,
    ):
        channels = x_shape[1]
        self.x = RNG.standard_normal(x_shape).astype(np.float32)
        self.w = (0.2 * RNG.standard_normal((out_channels, channels // groups, *kernel))).astype(
            np.float32
        )
        self.b = RNG.standard_normal(out_channels).astype(np.float32) if bias else None
        expected = conv3d_reference(self.x, self.w, self.b, strides, pads, groups)
        initializers = [numpy_helper.from_array(self.w, "W")]
        operands = ["X", "W"]
        if bias:
            initializers.append(numpy_helper.from_array(self.b, "B"))
            operands.append("B")
        attributes = {"strides": list(strides), "pads": list(pads), "group": groups}
        nodes = [helper.make_node("Conv", operands, ["C"], kernel_shape=list(kernel), **attributes)]
        last = "C"
        if residual:
            assert expected.shape == self.x.shape
            nodes.append(helper.make_node("Add", [last, "X"], ["A"]))
            expected = expected + self.x
            last = "A"
        if relu:
            nodes.append(helper.make_node("Relu", [last], ["R"]))
            expected = np.maximum(expected, 0)
            last = "R"
        nodes.append(helper.make_node("Identity", [last], ["Y"]))
        self.expected = expected
        graph = helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(expected.shape))],
            initializers,
        )
        self.proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    # the channel-lanes tile: output channels a multiple of the vector width
    "same": lambda: Case((1, 16, 4, 6, 9), 32, (3, 3, 3), pads=(1,) * 6, relu=True),
    "residual": lambda: Case((1, 16, 3, 5, 28), 16, (3, 3, 3), pads=(1,) * 6, relu=True,
                             residual=True),
    "strided": lambda: Case((1, 8, 5, 9, 11), 32, (3, 3, 3), (2, 2, 2), (1,) * 6),
    "stem": lambda: Case((1, 3, 4, 14, 14), 16, (3, 7, 7), (1, 2, 2), (1, 3, 3, 1, 3, 3),
                         relu=True),
    "asymmetric": lambda: Case((1, 5, 5, 7, 8), 16, (2, 3, 1), (1, 2, 1), (0, 1, 2, 1, 0, 0)),
    "pointwise": lambda: Case((1, 16, 4, 6, 6), 32, (1, 1, 1), (2, 2, 2), bias=False),
    "wide": lambda: Case((2, 4, 2, 3, 31), 48, (1, 3, 3), pads=(0, 1, 1, 0, 1, 1)),
    # R(2+1)D's factored pair: a temporal kernel (no row or column taps), a spatial one
    "temporal": lambda: Case((1, 16, 4, 3, 14), 64, (3, 1, 1), pads=(1, 0, 0, 1, 0, 0), relu=True),
    "spatial": lambda: Case((1, 16, 4, 3, 14), 64, (1, 3, 3), pads=(0, 1, 1, 0, 1, 1), relu=True),
    # odd output channels: the rows x columns tile
    "odd_channels": lambda: Case((1, 5, 4, 6, 7), 7, (3, 3, 3), (1, 1, 2), (1, 0, 1, 1, 2, 1),
                                 relu=True),
    # grouped: the rows x columns tile too
    "groups": lambda: Case((1, 8, 3, 5, 6), 16, (3, 3, 3), pads=(1,) * 6, groups=2),
}
CHANNEL_LANES = [
    "same", "residual", "strided", "stem", "asymmetric", "pointwise", "wide", "temporal", "spatial"
]


def compiled(proto: onnx.ModelProto, *, scheduled: bool = True, threads: int | None = None):
    imported = import_onnx(proto)
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names
    )
    target = get_target("llvm" if threads is None else f"llvm -threads={threads}")
    stages = [s for s in target.stages() if scheduled or s.name != "schedule"]
    run_stages(stages, imported.module)
    return build_loops(imported.module, imported.function_name, signature)


def loop_module(proto: onnx.ModelProto) -> ModuleOp:
    imported = import_onnx(proto)
    run_stages(get_target("llvm").lowering_stages(), imported.module)
    return imported.module


def kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and "loop.kernel" in op.attributes]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(CASES))
def test_scheduled_conv3d_computes_what_numpy_does(name: str, threads: int):
    case = CASES[name]()
    (got,) = compiled(case.proto, threads=threads)(case.x)
    np.testing.assert_allclose(got, case.expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", CHANNEL_LANES)
def test_regular_conv3d_gets_the_conv3d_template_and_its_epilogue_is_folded(name: str):
    module = loop_module(CASES[name]().proto)
    schedule_default(module, get_target("llvm -threads=1").schedule_context())
    (kernel,) = kernels(module)
    templates = {stage: t.data for stage, t in kernel.attributes[TEMPLATE_ATTR].data.items()}
    assert templates.get("conv") == "conv3d_ncdhw", templates
    knobs = kernel.attributes[KNOBS_ATTR].data["conv"].data
    assert {knob.name for knob in CONV3D.knobs} == set(knobs)
    # bias, residual add and ReLU are applied by the tile's copy out: no stage of
    # theirs is left
    assert set(templates) <= {"pad", "conv"}, templates
    loops = [op for op in kernel.walk() if isinstance(op, ForOp)]
    stages = {op.attributes["stage"].data for op in loops}
    assert "conv.local" in stages  # the tile, accumulated in a local buffer
    assert any(s.startswith("conv.local.") for s in stages)  # the weights' copy
    vectorized = [op for op in loops if op.loop_kind.value == "vectorized"]
    assert any(op.attributes["stage"].data == "conv.local" for op in vectorized)


def _tile_unrolled_extents(name: str) -> list[int]:
    """The extents of the unrolled loops of the convolution's tile (its columns, then
    its channel vectors)."""
    module = loop_module(CASES[name]().proto)
    schedule_default(module, get_target("llvm -threads=1").schedule_context())
    (kernel,) = kernels(module)
    return [
        op.ub.data - op.lb.data
        for op in kernel.walk()
        if isinstance(op, ForOp)
        and op.attributes["stage"].data == "conv.local"
        and op.loop_kind.value == "unrolled"
    ]


def test_a_kernel_without_row_or_column_taps_gets_four_channel_vectors_a_tile():
    """3x1x1 (and 1x1x1): each reduction step reads another plane of the input, so the
    tile holds 7 columns x 4 channel vectors, sharing each input line between the four;
    a 1x3x3 kernel over the same sizes keeps 14 columns x 1 vector."""
    assert _tile_unrolled_extents("temporal") == [7, 4]
    assert _tile_unrolled_extents("spatial") == [14]


@pytest.mark.parametrize("name", ["odd_channels", "groups"])
def test_odd_output_channels_and_groups_fall_back_to_the_rows_and_columns_tile(name: str):
    module = loop_module(CASES[name]().proto)
    schedule_default(module, get_target("llvm -threads=1").schedule_context())
    (kernel,) = kernels(module)
    assert kernel.attributes[TEMPLATE_ATTR].data["conv"].data == "conv3d_ncdhw"
    stages = {op.attributes["stage"].data for op in kernel.walk() if isinstance(op, ForOp)}
    assert "conv.local" not in stages


@settings(max_examples=8, deadline=None)
@given(data=st.data(), name=st.sampled_from(["same", "residual", "strided", "odd_channels", "groups"]))
def test_random_knob_values_compute_what_numpy_does(data, name: str):
    case = CASES[name]()
    module = loop_module(case.proto)
    context = get_target("llvm -threads=1").schedule_context()
    chosen: dict[str, dict] = {}
    for kernel in kernels(module):
        sch = Schedule(module, kernel=kernel.sym_name.data)
        for stage in sch.get_stages():
            if stage.name not in {s.name for s in sch.get_stages()}:
                continue  # folded into the convolution's copy out
            template = context.template_for(sch, stage)
            if template is None:
                continue
            knobs = {
                k.name: data.draw(st.sampled_from(k.domain), label=f"{stage.name}.{k.name}")
                for k in template.knobs
            }
            chosen[stage.name] = knobs
            try:
                template.apply(sch, stage, knobs, context)
            except ScheduleError:
                pass  # a refused primitive leaves the kernel as the previous step left it
    run_pipeline(make_context(), module, "convert-loops-to-llvm")
    imported = import_onnx(case.proto)
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names
    )
    (got,) = build_llvm(module, imported.function_name, signature)(case.x)
    np.testing.assert_allclose(got, case.expected, rtol=1e-4, atol=1e-4, err_msg=str(chosen))
