"""VTA simulator: vta.md worked cases T3-T8, faults with instruction indices, random streams vs numpy."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strato.targets.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.targets.vta.cycle_model import CycleParams, estimate_cycles
from strato.targets.vta.errors import VTAError
from strato.targets.vta.isa import (
    Alu,
    AluOp,
    Finish,
    Gemm,
    Load,
    Store,
    Uop,
    encode_uop,
)
from strato.targets.vta.simulator import micro_op_indices, simulate

CFG = DEFAULT_CONFIG


def uop_region(uops):
    return np.array([encode_uop(u) for u in uops], dtype=np.uint32)


def compute_nop(**flags):
    return Load(MemoryType.UOP, 0, 0, 0, 0, 0, **flags)


def test_t3_gemm_trace_and_result():
    gemm = Gemm(False, 0, 4, 3, 2, 0, 1, 1, 0, wgt_factor_out=1, wgt_factor_in=3)
    uops = uop_region([Uop(2 * i, 3 * i, 0) for i in range(4)])
    buffer = np.zeros(CFG.uop_depth, dtype=np.uint32)
    buffer[:4] = uops
    d, s, w = micro_op_indices(gemm, buffer)
    trace = list(zip(d.tolist(), s.tolist(), w.tolist(), strict=True))
    assert trace[:10] == [(0, 0, 0), (2, 3, 0), (4, 6, 0), (6, 9, 0), (1, 0, 3), (3, 3, 3), (5, 6, 3), (7, 9, 3),
                          (0, 1, 1), (2, 4, 1)]  # fmt: skip
    assert trace[-2:] == [(5, 8, 5), (7, 11, 5)]
    assert len(trace) == 24
    assert all(a[0] != b[0] for a, b in zip(trace, trace[1:], strict=False))

    rng = np.random.default_rng(3)
    inp = rng.integers(-128, 128, (12, 1, 16), dtype=np.int8)
    wgt = rng.integers(-128, 128, (6, 16, 16), dtype=np.int8)
    insns = [
        Load(MemoryType.INP, 0, 0, 1, 12, 12),
        Load(MemoryType.WGT, 0, 0, 1, 6, 6, push_next=True),
        Load(MemoryType.UOP, 0, 0, 1, 4, 4, pop_prev=True),
        gemm,
        Finish(),
    ]
    report = simulate(insns, {"uop": uops, "inp": inp, "wgt": wgt})
    assert report.counters.gemm_counter == 24
    acc = report.buffers["acc"]
    for i in range(4):
        for co in range(2):
            expect = sum(inp[3 * i + k, 0].astype(np.int64) @ wgt[3 * co + k].astype(np.int64).T for k in range(3))
            assert (acc[2 * i + co, 0] == expect).all()


def test_t4_padded_load():
    inp = np.arange(0x110 * 16, dtype=np.int64).reshape(0x110, 1, 16).astype(np.int8)
    # FINISH must be ordered after the load: push on the load, pop on a compute no-op
    insns = [
        Load(MemoryType.INP, 0, 0, 1, 0, 0),
        Load(MemoryType.INP, 10, 0x100, 2, 3, 5, y_pad_0=1, y_pad_1=0, x_pad_0=1, x_pad_1=1, push_next=True),
        compute_nop(pop_prev=True),
        Finish(),
    ]
    report = simulate(insns, {"inp": inp})
    sram = report.buffers["inp"]
    zero = np.zeros((1, 16), dtype=np.int8)
    for e in [10, 11, 12, 13, 14, 15, 19, 20, 24]:
        assert (sram[e] == zero).all(), e
    for e, dram in [(16, 0x100), (17, 0x101), (18, 0x102), (21, 0x105), (22, 0x106), (23, 0x107)]:
        assert (sram[e] == inp[dram]).all(), e
    assert report.counters.inp_load_nbytes == 96


def acc_rows(rows):
    return (16 * np.arange(rows)[:, None] + np.arange(16)[None, :]).astype(np.int32).reshape(rows, 1, 16)


def alu_stream(*alus, rows=6):
    """LOAD UOP, LOAD ACC (ACC[r][l] = 16r + l), the ALU instructions, FINISH."""
    uops = np.zeros(8, dtype=np.uint32)
    uops[5] = encode_uop(Uop(0, 0))
    insns = [Load(MemoryType.UOP, 0, 0, 1, 8, 8), Load(MemoryType.ACC, 0, 0, 1, rows, rows), *alus, Finish()]
    return insns, {"uop": uops, "acc": acc_rows(rows)}


def imm_alu(op, imm, iter_in=4):
    return Alu(False, 5, 6, 1, iter_in, 0, 1, 0, 1, alu_opcode=op, use_imm=True, imm=imm)


def test_t5_alu_immediates():
    insns, dram = alu_stream(imm_alu(AluOp.ADD, -5))
    report = simulate(insns, dram)
    acc = report.buffers["acc"][:6, 0].astype(np.int64)
    expect = acc_rows(6)[:, 0].astype(np.int64)
    expect[:4] -= 5
    assert (acc == expect).all()
    assert report.counters.alu_counter == 4
    assert report.counters.acc_load_nbytes == 6 * 64

    def after(op, imm, value):
        acc = np.full((1, 1, 16), value, dtype=np.int32)
        loads = [Load(MemoryType.UOP, 0, 0, 1, 8, 8), Load(MemoryType.ACC, 0, 0, 1, 1, 1)]
        insns = [*loads, imm_alu(op, imm, 1), Finish()]
        dram = {"uop": alu_stream()[1]["uop"], "acc": acc}
        return int(simulate(insns, dram).buffers["acc"][0, 0, 0])

    assert after(AluOp.SHR, 2, 30) == 7
    assert after(AluOp.SHR, 2, -7) == -2
    assert after(AluOp.SHR, -3, 5) == 40
    assert after(AluOp.MAX, 0, -9) == 0
    assert after(AluOp.MIN, 127, 300) == 127
    assert after(AluOp.MUL, -3, 7) == -21
    assert after(AluOp.ADD, 1, 2**31 - 1) == -(2**31)  # wraps


def test_t6_store_truncates():
    acc = np.zeros((8, 1, 16), dtype=np.int32)
    acc[:, 0, :4] = [300, -129, 127, -128]
    acc[:, 0, 4:] = np.arange(8)[:, None]
    out = np.full((0x60, 1, 16), 99, dtype=np.int8)
    insns = [
        Load(MemoryType.ACC, 0, 0, 1, 8, 8, push_next=True),
        Store(MemoryType.OUT, 0, 0x40, 2, 4, 8, pop_prev=True, push_prev=True),
        compute_nop(pop_next=True),
        Finish(),
    ]
    report = simulate(insns, {"acc": acc, "out": out})
    assert report.counters.out_store_nbytes == 128
    for k, elem in enumerate([0x40, 0x41, 0x42, 0x43, 0x48, 0x49, 0x4A, 0x4B]):
        assert out[elem, 0, :4].tolist() == [44, 127, 127, -128]
        assert (out[elem, 0, 4:] == k).all()
    assert (out[0x44:0x48] == 99).all() and (out[:0x40] == 99).all()


T7 = [
    Load(MemoryType.UOP, 0, 0, 1, 1, 1),
    Load(MemoryType.INP, 0, 0, 1, 1, 1, push_next=True),
    Gemm(False, 0, 1, 1, 1, 0, 0, 0, 0, pop_prev=True, push_next=True),
    Store(MemoryType.OUT, 0, 0, 1, 1, 1, pop_prev=True, push_prev=True),
    compute_nop(pop_next=True),
    Finish(),
]


def t7_dram():
    return {
        "uop": uop_region([Uop(0, 0, 0)]),
        "inp": np.ones((1, 1, 16), dtype=np.int8),
        "out": np.zeros((1, 1, 16), dtype=np.int8),
    }


def test_t7_tokens_complete_and_missing_push_deadlocks():
    dram = t7_dram()
    report = simulate(T7, dram)
    assert report.instructions == {"load": 1, "compute": 4, "store": 1}
    broken = list(T7)
    broken[1] = Load(MemoryType.INP, 0, 0, 1, 1, 1)
    with pytest.raises(VTAError, match=r"^instruction 2: error: deadlock: GEMM on the compute module waits for a "
                                       r"load->compute token"):  # fmt: skip
        simulate(broken, t7_dram())


def test_t8_counters_and_reset():
    wgt = np.ones((20, 16, 16), dtype=np.int8)
    acc = np.full((4, 1, 16), 7, dtype=np.int32)
    insns = [
        Load(MemoryType.WGT, 0, 0, 2, 9, 10, push_next=True),
        Load(MemoryType.UOP, 0, 0, 1, 2, 2, pop_prev=True),
        Load(MemoryType.ACC, 0, 0, 1, 4, 4),
        Gemm(True, 0, 2, 1, 1, 0, 0, 0, 0),
        Finish(),
    ]
    report = simulate(insns, {"wgt": wgt, "acc": acc, "uop": uop_region([Uop(1, 0, 0), Uop(3, 0, 0)])})
    assert report.counters.wgt_load_nbytes == 4608
    assert report.counters.gemm_counter == 0
    assert report.buffers["acc"][:4, 0, 0].tolist() == [7, 0, 7, 0]


def test_faults_name_the_instruction():
    dram = t7_dram()
    cases = [
        ([Load(MemoryType.INP, 2040, 0, 1, 9, 9), Finish()], r"instruction 0: .*beyond the INP buffer's 2048"),
        ([Load(MemoryType.INP, 0, 0, 2, 1, 1), Finish()], r"instruction 0: .*DRAM inp element 1 beyond"),
        ([T7[0], Gemm(False, 0, 1, 1, 4, 0, 1, 0, 1000), Finish()], r"instruction 1: .*INP element 3000 beyond"),
        ([T7[0], Gemm(False, 0, 9000, 1, 1, 0, 0, 0, 0), Finish()], r"instruction 1: .*UOP buffer"),
        ([Load(MemoryType.INP, 0, 0, 1, 1, 1, pop_prev=True), Finish()], r"instruction 0: .*no previous module"),
        ([Finish(), T7[0]], r"instruction 1: error: the stream does not end with FINISH"),
        ([Finish(), Finish()], r"instruction 0: error: FINISH is not the last"),
        (
            [Load(MemoryType.INP, 0, 0, 1, 1, 1, push_next=True), compute_nop(pop_prev=True, push_prev=True), Finish()],
            r"instruction 2: .*leaves 1 token in the compute->load queue",
        ),
        ([Load(MemoryType.INP, 0, 0, 1, 1, 1), Finish()], r"instruction 1: error: FINISH is not ordered after "
                                                           r"instruction 0 \(LOAD INP\)"),  # fmt: skip
        ([Store(MemoryType.OUT, 0, 0, 1, 1, 1, x_pad_0=1), Finish()], r"instruction 0: .*no padding"),
        ([Load(MemoryType.ACC, 0, 0, 1, 1, 1), Finish()], r"instruction 0: .*DRAM region acc, which is not given"),
    ]
    for insns, message in cases:
        with pytest.raises(VTAError, match=message):
            simulate(insns, dram)


def test_unordered_access_is_a_race():
    # the GEMM reads INP that a LOAD writes, with no token in between: the result would depend
    # on which module runs first
    insns = [
        T7[0],
        Load(MemoryType.INP, 0, 0, 1, 1, 1),
        Load(MemoryType.INP, 5, 0, 1, 1, 1, push_next=True),
        Gemm(False, 0, 1, 1, 1, 0, 0, 0, 0),
        compute_nop(pop_prev=True),
        Finish(),
    ]
    for seed in (None, 0, 1, 2, 3):
        with pytest.raises(VTAError, match=r"race: .*INP element 0"):
            simulate(insns, t7_dram(), seed=seed)


# --- random GEMM/ALU streams against a plain-Python reference ---------------------------


def reference(inp, wgt, acc, uops, compute):
    """The semantics of vta.md section 3, one micro-op at a time on Python integers."""
    acc = [[int(v) for v in row[0]] for row in acc]
    wrap = lambda v: ((v + 2**31) % 2**32) - 2**31  # noqa: E731
    for insn in compute:
        for i_out in range(insn.iter_out):
            for i_in in range(insn.iter_in):
                for u in uops[insn.uop_bgn : insn.uop_end]:
                    d = u.dst + i_out * insn.dst_factor_out + i_in * insn.dst_factor_in
                    s = u.src + i_out * insn.src_factor_out + i_in * insn.src_factor_in
                    if isinstance(insn, Gemm):
                        w = u.wgt + i_out * insn.wgt_factor_out + i_in * insn.wgt_factor_in
                        if insn.reset:
                            acc[d] = [0] * 16
                        else:
                            x, m = inp[s, 0].astype(int), wgt[w].astype(int)
                            acc[d] = [wrap(acc[d][o] + int(x @ m[o])) for o in range(16)]
                        continue
                    b = [insn.imm] * 16 if insn.use_imm else list(acc[s])
                    a = acc[d]
                    ops = {
                        AluOp.MIN: lambda x, y: min(x, y),
                        AluOp.MAX: lambda x, y: max(x, y),
                        AluOp.ADD: lambda x, y: wrap(x + y),
                        AluOp.MUL: lambda x, y: wrap(x * y),
                        AluOp.SHR: lambda x, y: x >> y if y >= 0 else wrap(x << min(-y, 32)),
                    }
                    acc[d] = [ops[insn.alu_opcode](a[lane], b[lane]) for lane in range(16)]
    return np.array(acc, dtype=np.int64)


small = st.integers(0, 2)


@st.composite
def compute_streams(draw):
    uops = [Uop(draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 1))) for _ in range(6)]
    compute = []
    for _ in range(draw(st.integers(1, 6))):
        bgn = draw(st.integers(0, 5))
        end = draw(st.integers(bgn, 6))
        common = dict(
            uop_bgn=bgn, uop_end=end, iter_out=draw(st.integers(1, 2)), iter_in=draw(st.integers(1, 2)),
            dst_factor_out=draw(small), dst_factor_in=draw(small),
            src_factor_out=draw(small), src_factor_in=draw(small),
        )  # fmt: skip
        if draw(st.booleans()):
            compute.append(
                Gemm(reset=draw(st.booleans()), **common, wgt_factor_out=draw(st.integers(0, 1)),
                     wgt_factor_in=draw(st.integers(0, 1)))
            )  # fmt: skip
        else:
            op = draw(st.sampled_from(list(AluOp)))
            imm = draw(st.integers(-40, 40) if op == AluOp.SHR else st.integers(-(2**15), 2**15 - 1))
            compute.append(Alu(draw(st.booleans()), **common, alu_opcode=op, use_imm=draw(st.booleans()), imm=imm))
    return uops, compute


@given(compute_streams(), st.integers(0, 2**32 - 1))
def test_random_compute_streams_match_reference(stream, seed):
    uops, compute = stream
    rng = np.random.default_rng(seed)
    inp = rng.integers(-128, 128, (8, 1, 16), dtype=np.int8)
    wgt = rng.integers(-128, 128, (4, 16, 16), dtype=np.int8)
    acc = rng.integers(-(2**31), 2**31, (8, 1, 16), dtype=np.int64).astype(np.int32)
    acc[:, :, :4] = rng.integers(-40, 40, (8, 1, 4))  # small values make tensor shifts interesting
    out = np.zeros((8, 1, 16), dtype=np.int8)
    insns = [
        Load(MemoryType.INP, 0, 0, 1, 8, 8),
        Load(MemoryType.WGT, 0, 0, 1, 4, 4, push_next=True),
        Load(MemoryType.UOP, 0, 0, 1, 6, 6, pop_prev=True),
        Load(MemoryType.ACC, 0, 0, 1, 8, 8),
        *compute,
        compute_nop(push_next=True),
        Store(MemoryType.OUT, 0, 0, 1, 8, 8, pop_prev=True, push_prev=True),
        compute_nop(pop_next=True),
        Finish(),
    ]
    dram = {"inp": inp, "wgt": wgt, "acc": acc, "uop": uop_region(uops), "out": out}
    report = simulate(insns, dram, seed=seed % 7)
    expect = reference(inp, wgt, acc, uops, compute)
    assert (report.buffers["acc"][:8, 0].astype(np.int64) == expect).all()
    assert (out[:, 0] == expect.astype(np.int8)).all()
    assert report.counters.gemm_counter == sum(i.uop_count for i in compute if isinstance(i, Gemm) and not i.reset)
    assert report.counters.alu_counter == sum(i.uop_count for i in compute if isinstance(i, Alu))


# --- cycle model ------------------------------------------------------------------------


def test_cycle_model_overlaps_modules_and_honours_tokens():
    p = CycleParams(dma_latency=10, dma_bytes_per_cycle=8, insn_overhead=1)
    load = Load(MemoryType.INP, 0, 0, 1, 4, 4, push_next=True)  # 1 + 10 + 64/8 = 19 cycles
    gemm = Gemm(False, 0, 2, 3, 1, 0, 0, 0, 0, pop_prev=True)  # 1 + 6 = 7 cycles
    alu = Alu(False, 0, 1, 1, 5, 0, 1, 0, 1, alu_opcode=AluOp.ADD, use_imm=True)  # 1 + 10 = 11 cycles
    report = estimate_cycles([alu, load, gemm, compute_nop(), Finish()], params=p)
    # ALU overlaps the load; the GEMM waits for the load's token at cycle 19
    assert report.total_cycles == 19 + 7 + 1 + 1
    assert report.busy_cycles == {"load": 19, "compute": 11 + 7 + 1 + 1, "store": 0}
    assert report.gemm_cycles == 6
    assert report.compute_utilization == pytest.approx(6 / 28)
    assert report.timeline == [(0, 11), (0, 19), (19, 26), (26, 27), (27, 28)]
    padded = Load(MemoryType.INP, 0, 0, 1, 4, 4, x_pad_0=1, y_pad_1=1)  # 2x5 SRAM elements, 6 of them pads
    assert estimate_cycles([padded, Finish()], params=p).busy_cycles["load"] == 19 + 6


def test_batch_two_gemm_on_a_second_config():
    cfg = VTAConfig(log_batch=1, log_block=3, log_inp_buff_size=12, log_wgt_buff_size=14, log_acc_buff_size=14)
    rng = np.random.default_rng(5)
    inp = rng.integers(-128, 128, (3, 2, 8), dtype=np.int8)
    wgt = rng.integers(-128, 128, (2, 8, 8), dtype=np.int8)
    uops = np.array([encode_uop(Uop(0, 0, 0), cfg), encode_uop(Uop(1, 2, 1), cfg)], dtype=np.uint32)
    insns = [
        Load(MemoryType.INP, 0, 0, 1, 3, 3),
        Load(MemoryType.WGT, 0, 0, 1, 2, 2, push_next=True),
        Load(MemoryType.UOP, 0, 0, 1, 2, 2, pop_prev=True),
        Gemm(False, 0, 2, 1, 2, 0, 0, 0, 0),  # each micro-op twice: accumulate
        Finish(),
    ]
    report = simulate(insns, {"inp": inp, "wgt": wgt, "uop": uops}, cfg)
    acc = report.buffers["acc"]
    assert acc.shape[1:] == (2, 8)
    assert (acc[0] == 2 * inp[0].astype(np.int64) @ wgt[0].astype(np.int64).T).all()
    assert (acc[1] == 2 * inp[2].astype(np.int64) @ wgt[1].astype(np.int64).T).all()
    assert report.counters.inp_load_nbytes == 3 * 16 and report.counters.wgt_load_nbytes == 2 * 64


def test_cycle_params_are_checked():
    with pytest.raises(VTAError, match="dma_bytes_per_cycle = 0 must be positive"):
        CycleParams(dma_bytes_per_cycle=0)
    with pytest.raises(VTAError, match="dma_latency = -1 must be non-negative"):
        CycleParams(dma_latency=-1)


def test_full_module_queue_stalls_fetch():
    # the first LOAD waits for a token that a compute instruction later in the stream pushes:
    # with room for only one more instruction in the load queue, fetch never reaches it
    insns = [
        Load(MemoryType.INP, 0, 0, 1, 1, 1, pop_next=True),
        Load(MemoryType.INP, 1, 0, 1, 1, 1),
        Load(MemoryType.INP, 2, 0, 1, 1, 1, push_next=True),
        compute_nop(push_prev=True),
        compute_nop(pop_prev=True),
        Finish(),
    ]
    dram = {"inp": np.ones((1, 1, 16), dtype=np.int8)}
    with pytest.raises(VTAError, match=r"instruction 0: error: deadlock: LOAD INP .* \(fetch waits at instruction "
                                       r"2 \(LOAD INP\): the load queue is full \(1 instructions\)\)"):  # fmt: skip
        simulate(insns, dram, params=CycleParams(queue_depth=1))
    with pytest.raises(VTAError, match="cycle model: LOAD INP waits"):
        estimate_cycles(insns, params=CycleParams(queue_depth=1))
    p = CycleParams(queue_depth=2, insn_overhead=1, dma_latency=0, dma_bytes_per_cycle=16)
    report = simulate(insns, dram, params=p)
    assert report.cycles.timeline == [(1, 3), (3, 5), (5, 7), (0, 1), (7, 8), (8, 9)]
    # a deeper queue changes nothing here; a depth of 1 on another stream only delays fetch
    assert simulate(insns, dram, params=replace(p, queue_depth=512)).cycles.timeline == report.cycles.timeline
    serial = [Load(MemoryType.INP, i, 0, 1, 1, 1, push_next=(i == 3)) for i in range(4)]
    serial += [Gemm(False, 0, 0, 1, 1, 0, 0, 0, 0, pop_prev=True), Finish()]
    timeline = estimate_cycles(serial, params=replace(p, queue_depth=1)).timeline
    assert timeline == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9), (9, 10)]


# --- GEMM arithmetic ---------------------------------------------------------------------


def test_gemm_multiplies_in_a_float_type_only_where_it_is_exact():
    from strato.targets.vta.simulator import _dot_dtype

    assert _dot_dtype(CFG) == np.float32  # int8: 16 * 128 * 128 = 2**18 per dot product
    # int16: 16 * 2**30 per dot product, 2**47 per chunk of 8192 (64 lanes: 2**49)
    assert _dot_dtype(replace(CFG, log_inp_width=4, log_wgt_width=4)) == np.float64
    assert _dot_dtype(replace(CFG, log_inp_width=4, log_wgt_width=4, log_block=6)) == np.float64


@pytest.mark.parametrize("extreme", [True, False])
def test_float_and_int64_gemm_sums_agree_across_chunks(monkeypatch, extreme):
    """20000 micro-op executions (three chunks) accumulate into two ACC elements, with
    the largest products int8 allows (or random ones) and an int32 wrap; the float path
    (one product per weight block, or one per micro-op) and the int64 one give the same
    ACC, the exact wrapped sums."""
    from strato.targets.vta import simulator

    rng = np.random.default_rng(3)
    if extreme:
        inp = np.full((8, 1, 16), -128, dtype=np.int8)
        wgt = np.full((4, 16, 16), -128, dtype=np.int8)
    else:
        inp = rng.integers(-128, 128, (8, 1, 16), dtype=np.int8)
        wgt = rng.integers(-128, 128, (4, 16, 16), dtype=np.int8)
    uops = [Uop(0, 1, 2), Uop(1, 5, 3)]
    insns = [
        Load(MemoryType.INP, 0, 0, 1, 8, 8),
        Load(MemoryType.WGT, 0, 0, 1, 4, 4, push_next=True),
        Load(MemoryType.UOP, 0, 0, 1, 2, 2, pop_prev=True),
        Gemm(False, 0, 2, 100, 100, 0, 0, 0, 0),  # every execution adds to ACC 0 and 1
        Finish(),
    ]

    def run():
        return simulate(insns, {"inp": inp, "wgt": wgt, "uop": uop_region(uops)}).buffers["acc"][:2, 0].copy()

    grouped = run()
    monkeypatch.setattr(simulator, "_GROUP_ROWS", 10**9)
    per_micro_op = run()
    monkeypatch.setattr(simulator, "_dot_dtype", lambda config: None)
    exact = run()
    np.testing.assert_array_equal(grouped, exact)
    np.testing.assert_array_equal(per_micro_op, exact)
    for dst, u in enumerate(uops):
        total = 10000 * (inp[u.src, 0].astype(np.int64) @ wgt[u.wgt].astype(np.int64).T)
        np.testing.assert_array_equal(exact[dst], ((total + 2**31) % 2**32 - 2**31).astype(np.int32))
