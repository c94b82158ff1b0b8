"""convert-loops-to-vta: the scheduled loop kernel and the vta program it becomes compute the same.

Small VTA configurations (2x2 and 4x4 GEMM cores) keep the loop interpreter fast: each
drawn conv2d layer is scheduled by the VTA template, interpreted at the loop level, and
converted, given tokens and virtual threads and run on the simulator; both results
must equal each other and the numpy reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func

from strato.diagnostics import StratoError
from strato.dialects import vta
from strato.dialects.loop import ForOp
from strato.interpreters.loop import run_loops
from strato.schedule import Schedule
from strato.schedule.intrinsics import TENSORIZED_ATTR
from strato.targets.vta.compile import reference_conv2d
from strato.targets.vta.config import VTAConfig
from strato.targets.vta.conv2d_template import (
    Conv2dWorkload,
    VtaConv2dConfig,
    build_kernel,
    check,
    conv2d_te,
)
from strato.targets.vta.convert_loops_to_vta import convert_loops_to_vta
from strato.targets.vta.interpret import run_vta
from strato.targets.vta.layout import pack_activations, pack_weights, unpack_activations
from strato.targets.vta.vta_inject_virtual_threads import VtaInjectVirtualThreadsPass
from strato.targets.vta.vta_insert_dependence_tokens import (
    VtaInsertDependenceTokensPass,
)

CONFIGS = [
    VTAConfig(log_block=1, log_inp_buff_size=10, log_wgt_buff_size=10, log_acc_buff_size=11),
    VTAConfig(log_block=2, log_inp_buff_size=12, log_wgt_buff_size=12, log_acc_buff_size=13),
]


def _tilings(wl: Conv2dWorkload, threads: int, config: VTAConfig) -> list[VtaConv2dConfig]:
    found = []
    for tile_h in range(1, wl.out_height + 1):
        for oc_tile in (1, 2):
            for ic_tile in (1, 2):
                cfg = VtaConv2dConfig(tile_h, oc_tile, ic_tile, threads)
                try:
                    check(wl, cfg, config)
                except StratoError:
                    continue
                found.append(cfg)
    return found


@settings(max_examples=6, deadline=None)
@given(
    data=st.data(),
    config=st.sampled_from(CONFIGS),
    blocks=st.sampled_from([(1, 2), (2, 2), (2, 1)]),
    size=st.integers(2, 4),
    kernel=st.sampled_from([1, 3]),
    stride=st.sampled_from([1, 2]),
    with_bias=st.booleans(),
    relu=st.booleans(),
)
def test_converted_program_computes_what_the_loops_compute(data, config, blocks, size, kernel, stride, with_bias, relu):
    blk = config.block_in
    c, o = blocks[0] * blk, blocks[1] * blk
    padding = kernel // 2
    if (size + 2 * padding - kernel) // stride + 1 < 2:
        stride = 1
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    x = rng.integers(-128, 128, (1, c, size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (o, c, kernel, kernel), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int32) if with_bias else None
    wl = Conv2dWorkload(c, size, size, o, kernel, kernel, stride, padding, 5, with_bias, relu)
    threads = data.draw(st.sampled_from([t for t in (1, 2) if _tilings(wl, t, config)]), label="threads")
    tiling = data.draw(st.sampled_from(_tilings(wl, threads, config)), label="tiling")

    kernel_module = build_kernel(wl, tiling, config)
    xs = pack_activations(x, config).reshape(c // blk, size, size, 1, blk)
    ws = pack_weights(w, config).reshape(o // blk, c // blk, kernel, kernel, blk, blk)
    inputs = [xs, ws] + ([bias.reshape(o // blk, 1, blk)] if with_bias else [])
    (loops_out,) = run_loops(kernel_module, inputs)

    convert_loops_to_vta(kernel_module, config)
    VtaInsertDependenceTokensPass().apply(Context(), kernel_module)
    VtaInjectVirtualThreadsPass().apply(Context(), kernel_module)
    kernel_module.verify()
    function = next(op for op in kernel_module.ops if isinstance(op, func.FuncOp))
    out_shape = (1, o, wl.out_height, wl.out_width)
    arrays = [a.reshape(-1, *a.shape[-2:]) for a in inputs] + [pack_activations(np.zeros(out_shape, np.int8), config)]
    outputs, _, _ = run_vta(function, arrays, config, seed=data.draw(st.sampled_from([None, 0, 1]), label="order"))
    got = unpack_activations(outputs[len(arrays) - 1], out_shape, config)

    want = reference_conv2d(x, w, stride=stride, padding=padding, shift=5, bias=bias, relu=relu)
    np.testing.assert_array_equal(unpack_activations(loops_out.reshape(-1, 1, blk), out_shape, config), want)
    np.testing.assert_array_equal(got, want)


SMALL = CONFIGS[1]


def _converted(wl: Conv2dWorkload, tiling: VtaConv2dConfig):
    module = build_kernel(wl, tiling, SMALL)
    convert_loops_to_vta(module, SMALL)
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def test_gemm_kernel_is_folded_into_two_loops_and_micro_ops():
    wl = Conv2dWorkload(8, 4, 4, 8, 3, 3, 1, 1, 5)
    function = _converted(wl, VtaConv2dConfig(2, 1, 1, 2))
    resets = [op for op in function.walk() if isinstance(op, vta.GemmOp) and op.reset is not None]
    gemms = [op for op in function.walk() if isinstance(op, vta.GemmOp) and op.reset is None]
    assert resets and gemms
    # oc (trip count 1) is dropped; output rows and the 2-D tile merge into one loop of 8
    assert resets[0].loops.get_values() == (8, 1, 0, 0)
    # hardware loops: output row (4 columns of acc, 6-wide input rows) and kh (the next
    # input row, the next 3 weight taps); micro-ops: kw x column, [dst, src, wgt] each
    assert gemms[0].loops.get_values() == (2, 4, 6, 0, 3, 0, 6, 3)
    uops = gemms[0].uops.get_values()
    assert [list(uops[i : i + 3]) for i in range(0, len(uops), 3)] == [
        [q, q + kw, kw] for kw in range(3) for q in range(4)
    ]
    loads = [op for op in function.walk() if isinstance(op, vta.LoadOp)]
    # the first row tile's input rows start one row above the image: a padded row
    assert loads[0].pads == [1, 0, 1, 1]
    alus = [op.opcode.data for op in function.walk() if isinstance(op, vta.AluOp)]
    assert alus[:3] == ["shr", "max", "min"]
    assert sum(isinstance(op, vta.StoreOp) for op in function.walk()) == 2  # one a row tile


def test_unscheduled_kernel_is_a_diagnostic():
    from xdsl.parser import Parser

    from strato.context import make_context
    from strato.transforms.convert_te_to_loops import lower_te_to_loops

    wl = Conv2dWorkload(4, 2, 2, 4, 1, 1, 1, 0, 3)
    module = Parser(make_context(), conv2d_te(wl, SMALL)).parse_module()
    lower_te_to_loops(module)
    with pytest.raises(StratoError, match="convert-loops-to-vta: @conv2d: buffer .* in scope local cannot live on VTA"):
        convert_loops_to_vta(module, SMALL)


def test_kernel_scheduled_for_another_configuration_is_a_diagnostic():
    from xdsl.parser import Parser

    from strato.context import make_context
    from strato.transforms.convert_te_to_loops import lower_te_to_loops

    wl = Conv2dWorkload(4, 2, 2, 4, 1, 1, 1, 0, 3)
    module = Parser(make_context(), conv2d_te(wl, SMALL)).parse_module()
    lower_te_to_loops(module)
    from strato.targets.vta.conv2d_template import schedule_conv2d

    sch = Schedule(module)
    schedule_conv2d(sch, wl, VtaConv2dConfig(1, 1, 1, 1), SMALL)
    sch.materialize()
    with pytest.raises(StratoError, match=r"buffer acc_vta_acc of scope vta.acc is not an array of \(1, 16\) elements"):
        convert_loops_to_vta(module)


def test_gemm_intrinsic_matches_its_own_description_and_refuses_another_core():
    from xdsl.parser import Parser

    from strato.context import make_context
    from strato.schedule.errors import ScheduleError
    from strato.targets.vta.intrinsics import description, gemm_name
    from strato.transforms.convert_te_to_loops import lower_te_to_loops

    assert gemm_name(SMALL) == "vta.gemm.1x4x4"

    def schedule():
        module = Parser(make_context(), description(1, 4, 4)).parse_module()
        lower_te_to_loops(module)
        return Schedule(module)

    sch = schedule()
    sch.tensorize(sch.get_loops("out")[0], "vta.gemm.1x4x4")
    marked = [op for op in sch.kernel.walk() if isinstance(op, ForOp) and TENSORIZED_ATTR in op.attributes]
    assert len(marked) == 3 and {op.attributes[TENSORIZED_ATTR].data for op in marked} == {"vta.gemm.1x4x4"}
    sch = schedule()
    with pytest.raises(ScheduleError, match="with vta.gemm.1x16x16: trip counts differ"):
        sch.tensorize(sch.get_loops("out")[0], "vta.gemm.1x16x16")


def test_reading_an_accumulator_after_its_in_place_epilogue_is_a_diagnostic():
    wl = Conv2dWorkload(4, 2, 2, 4, 1, 1, 1, 0, 3)
    module = build_kernel(wl, VtaConv2dConfig(2, 1, 1, 1), SMALL)
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    epilogue = next(op for op in kernel.walk() if isinstance(op, ForOp) and op.axis.data == "o.inner")
    # the epilogue twice: the second would read the values the first shifted and clipped
    epilogue.parent_block().insert_op_after(epilogue.clone(), epilogue)
    with pytest.raises(StratoError, match="reads buffer acc_vta_acc, which an earlier ALU epilogue changed in place"):
        convert_loops_to_vta(module, SMALL)
