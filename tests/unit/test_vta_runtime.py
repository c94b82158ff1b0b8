"""VTA runtime: token merging, no-ops, the micro-op kernel cache, and hand-built GEMM/conv programs."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strato.targets.vta.config import MemoryType, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.examples import (
    conv2d_3x3,
    reference_conv2d_3x3,
    reference_requantize,
    tiled_gemm,
)
from strato.targets.vta.isa import Alu, AluOp, Gemm, Load, Stage, Store
from strato.targets.vta.runtime import CommandQueue
from strato.targets.vta.simulator import simulate


def one_uop(dst=0, src=0, wgt=0):
    def init(k):
        k.push(dst, src, wgt)

    return init


def test_push_merges_onto_the_last_instruction_or_rides_a_nop():
    q = CommandQueue()
    q.load_2d(MemoryType.INP, 0, 0, 1, 1, 1)
    q.dep_push(Stage.LOAD, Stage.COMPUTE)  # merged
    q.dep_push(Stage.LOAD, Stage.COMPUTE)  # flag taken: a load no-op
    q.dep_push(Stage.COMPUTE, Stage.STORE)  # last instruction is not on compute: a compute no-op
    insns = q.insns
    assert insns[0] == Load(MemoryType.INP, 0, 0, 1, 1, 1, push_next=True)
    assert insns[1] == Load(MemoryType.INP, 0, 0, 0, 0, 0, push_next=True)
    assert insns[2] == Load(MemoryType.UOP, 0, 0, 0, 0, 0, push_next=True)
    q.dep_push(Stage.STORE, Stage.COMPUTE)
    assert q.insns[3] == Store(MemoryType.OUT, 0, 0, 0, 0, 0, push_prev=True)


def test_pops_attach_to_the_next_instruction_of_their_module():
    q = CommandQueue()
    q.dep_pop(Stage.LOAD, Stage.COMPUTE)
    q.dep_pop(Stage.STORE, Stage.COMPUTE)
    q.load_2d(MemoryType.INP, 0, 0, 1, 1, 1)  # another module: keeps the pops pending
    q.load_2d(MemoryType.ACC, 0, 0, 1, 1, 1)
    assert not q.insns[0].pop_next
    assert q.insns[1].pop_prev and q.insns[1].pop_next
    q.dep_pop(Stage.COMPUTE, Stage.LOAD)
    q.dep_pop(Stage.COMPUTE, Stage.LOAD)  # same direction pending: the first rides a no-op
    q.load_2d(MemoryType.WGT, 0, 0, 1, 1, 1)
    assert q.insns[2] == Load(MemoryType.INP, 0, 0, 0, 0, 0, pop_next=True)
    assert q.insns[3] == Load(MemoryType.WGT, 0, 0, 1, 1, 1, pop_next=True)
    q.dep_pop(Stage.LOAD, Stage.COMPUTE)
    q.dep_push(Stage.COMPUTE, Stage.LOAD)  # a push after a pending pop: the pop first, on a no-op
    assert q.insns[4] == Load(MemoryType.UOP, 0, 0, 0, 0, 0, pop_prev=True, push_prev=True)
    with pytest.raises(VTAError, match="no token queue from LOAD to STORE"):
        q.dep_push(Stage.LOAD, Stage.STORE)


def test_synchronize_orders_finish_after_everything():
    q = CommandQueue()
    q.load_2d(MemoryType.INP, 0, 0, 1, 1, 1)
    program = q.synchronize()
    # the store push comes first, so the load push cannot merge onto the LOAD INP any more
    assert [i.mnemonic for i in program.insns] == ["LOAD INP", "STORE OUT", "LOAD INP", "LOAD UOP", "FINISH"]
    assert program.insns[1].push_prev and program.insns[2].push_next and program.insns[2].is_nop
    assert program.insns[3].pop_prev and program.insns[3].pop_next
    simulate(program.insns, {"inp": np.zeros((1, 1, 16), np.int8)})
    assert q.insns == []


def test_kernel_cache_loads_each_kernel_once_and_evicts_on_wrap():
    small = VTAConfig(log_uop_buff_size=6)  # 16 micro-ops
    q = CommandQueue(small)

    def kernel(n):
        def init(k):
            for i in range(n):
                k.push(i, i)

        return init

    q.gemm("a", kernel(6))
    q.gemm("a", kernel(6))
    q.gemm("b", kernel(6))
    q.gemm("c", kernel(6))  # does not fit after b: wraps to 0 and evicts a
    q.gemm("b", kernel(6))  # still resident
    q.gemm("a", kernel(6))  # evicted: loaded again, after c, evicting b
    loads = [(i.sram_base, i.dram_base, i.x_size) for i in q.insns if isinstance(i, Load)]
    assert loads == [(0, 0, 6), (6, 6, 6), (0, 12, 6), (6, 0, 6)]
    gemms = [(i.uop_bgn, i.uop_end) for i in q.insns if isinstance(i, Gemm)]
    assert gemms == [(0, 6), (0, 6), (6, 12), (0, 6), (6, 12), (6, 12)]
    program = q.synchronize()
    assert program.uops.dtype == np.uint32 and len(program.uops) == 18  # recorded once each


def test_kernel_loops_map_to_instruction_loops():
    q = CommandQueue()

    def two_loops(k):
        k.loop(3, 4, 5, 6)
        k.loop(2, 1, 0, 1)
        k.push(0, 0, 0)
        k.push(1, 2, 3)

    def one_loop(k):
        k.loop(7, 1, 1)
        k.push(0, 0)

    q.gemm("g", two_loops)
    q.alu("a", one_loop, op=AluOp.SHR, imm=-2)
    gemm, alu = (i for i in q.insns if isinstance(i, (Gemm, Alu)))
    assert (gemm.iter_out, gemm.iter_in) == (3, 2)
    assert (gemm.dst_factor_out, gemm.src_factor_out, gemm.wgt_factor_out) == (4, 5, 6)
    assert (gemm.dst_factor_in, gemm.src_factor_in, gemm.wgt_factor_in, gemm.uop_end - gemm.uop_bgn) == (1, 0, 1, 2)
    assert (alu.iter_out, alu.iter_in, alu.dst_factor_in, alu.src_factor_in) == (1, 7, 1, 1)  # one ALU loop is inner
    assert (alu.alu_opcode, alu.use_imm, alu.imm) == (AluOp.SHR, True, -2)


def test_kernel_errors():
    q = CommandQueue()

    def hazard(k):
        k.push(3, 0, 0)
        k.push(3, 1, 1)

    with pytest.raises(VTAError, match="micro-ops 0 and 1 both write ACC element 3"):
        q.gemm("h", hazard)
    q.gemm("reset", hazard, reset=True)  # a reset writes zeros: no hazard

    def three_loops(k):
        k.loop(2, 1, 1)
        k.loop(2, 1, 1)
        k.loop(2, 1, 1)

    with pytest.raises(VTAError, match="at most two loops"):
        q.gemm("l", three_loops)
    with pytest.raises(VTAError, match="micro-op field dst = 4096"):
        q.gemm("r", one_uop(dst=4096))
    with pytest.raises(VTAError, match="has no micro-ops"):
        q.gemm("e", lambda k: None)


# --- hand-built programs ----------------------------------------------------------------


def gemm_case(seed, threads, m=32, k=64, n=64, tiles=(16, 2, 2)):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    tile_m, tile_n, tile_k = tiles
    bundle = tiled_gemm(a, b, shift=9, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, threads=threads)
    expect = reference_requantize(a.astype(np.int64) @ b.astype(np.int64).T, 9)
    return bundle, expect


@pytest.mark.parametrize("threads", [1, 2])
def test_tiled_gemm_is_bit_exact(threads):
    bundle, expect = gemm_case(0, threads)
    report = simulate(bundle.insns, bundle.dram)
    assert (bundle.tensor("out")[:, :, 0, 0] == expect).all()
    assert report.counters.gemm_counter == 32 * 4 * 4
    assert report.counters.alu_counter == 3 * 32 * 4


@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_is_bit_exact(threads):
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 32, 6, 5), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 32, 3, 3), dtype=np.int8)
    bundle = conv2d_3x3(x, w, shift=10, tile_h=3, threads=threads)
    simulate(bundle.insns, bundle.dram, seed=threads)
    assert (bundle.tensor("out") == reference_requantize(reference_conv2d_3x3(x, w), 10)).all()
    assert any(isinstance(i, Load) and i.y_pad_0 == 1 for i in bundle.insns)  # padding comes from the DMA


def test_two_virtual_threads_hide_load_latency():
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (128, 256), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 256), dtype=np.int8)
    cycles = []
    for threads in (1, 2):
        bundle = tiled_gemm(a, b, shift=12, tile_m=64, tile_n=2, tile_k=4, threads=threads)
        report = simulate(bundle.insns, bundle.dram)
        cycles.append(report.cycles)
    one, two = cycles
    assert one.gemm_cycles == two.gemm_cycles
    assert two.total_cycles < one.total_cycles
    assert two.compute_utilization > one.compute_utilization


@given(st.integers(0, 2**16), st.sampled_from([1, 2]), st.sampled_from([(8, 1, 1), (8, 2, 2), (16, 2, 1)]))
def test_results_do_not_depend_on_module_order(seed, threads, tiles):
    bundle, expect = gemm_case(seed, threads, m=16, k=32, n=64, tiles=tiles)
    outputs = []
    for order in (None, seed, seed + 1):
        dram = {name: array.copy() for name, array in bundle.dram.items()}
        report = simulate(bundle.insns, dram, seed=order)
        outputs.append((dram["out"].tobytes(), report.counters, report.cycles.total_cycles))
    assert outputs[0] == outputs[1] == outputs[2]
    # out elements are (row, column block) in order: [16 rows, 4 blocks, 16 lanes]
    assert (np.frombuffer(outputs[0][0], dtype=np.int8).reshape(16, 64) == expect).all()


def test_removing_any_single_token_flag_is_reported():
    bundle, _ = gemm_case(3, 2, m=16, k=32, n=64, tiles=(8, 2, 1))
    simulate(bundle.insns, {n: a.copy() for n, a in bundle.dram.items()})
    removed = 0
    for index, insn in enumerate(bundle.insns):
        for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
            if not getattr(insn, flag):
                continue
            broken = list(bundle.insns)
            broken[index] = replace(insn, **{flag: False})
            with pytest.raises(VTAError, match="deadlock|token|race|not ordered after"):
                simulate(broken, {n: a.copy() for n, a in bundle.dram.items()})
            removed += 1
    assert removed > 20


def test_tiled_gemm_on_a_second_config():
    cfg = VTAConfig(log_block=3, log_inp_buff_size=12, log_wgt_buff_size=14, log_acc_buff_size=14, log_uop_buff_size=12)
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (16, 32), dtype=np.int8)
    b = rng.integers(-128, 128, (24, 32), dtype=np.int8)
    for threads in (1, 2):
        bundle = tiled_gemm(a, b, shift=7, tile_m=8, tile_n=3, tile_k=2, threads=threads, config=cfg)
        report = simulate(bundle.insns, bundle.dram, cfg, seed=threads)
        assert report.config.name == "1x8_i8w8a32_12_12_14_14"
        expect = reference_requantize(a.astype(np.int64) @ b.astype(np.int64).T, 7)
        assert (bundle.tensor("out")[:, :, 0, 0] == expect).all()


def test_chunked_gemm_matches(monkeypatch):
    bundle, expect = gemm_case(6, 1, m=16, k=64, n=32, tiles=(16, 2, 4))
    monkeypatch.setattr("strato.targets.vta.simulator._GEMM_CHUNK", 7)  # 128 executions per GEMM, in 19 parts
    simulate(bundle.insns, bundle.dram)
    assert (bundle.tensor("out")[:, :, 0, 0] == expect).all()


def test_hand_built_programs_reject_what_they_cannot_build():
    a = np.zeros((16, 32), dtype=np.int8)
    with pytest.raises(VTAError, match="1 tasks do not split over 2 virtual threads"):
        tiled_gemm(a, np.zeros((16, 32), np.int8), shift=0, tile_m=16, tile_n=1, tile_k=2, threads=2)
    with pytest.raises(VTAError, match="does not tile"):
        tiled_gemm(a, np.zeros((16, 32), np.int8), shift=0, tile_m=5, tile_n=1, tile_k=2)
    with pytest.raises(VTAError, match="does not fit a thread's share"):
        tiled_gemm(np.zeros((2048, 32), np.int8), np.zeros((16, 32), np.int8), shift=0, tile_m=2048, tile_n=1, tile_k=2)


@given(st.data())
def test_removing_a_token_from_random_programs_is_reported(data):
    threads = data.draw(st.sampled_from([1, 2]), "threads")
    if data.draw(st.booleans(), "conv"):
        rng = np.random.default_rng(data.draw(st.integers(0, 2**16), "seed"))
        x = rng.integers(-128, 128, (1, 16, 4, 3), dtype=np.int8)
        w = rng.integers(-128, 128, (32, 16, 3, 3), dtype=np.int8)
        bundle = conv2d_3x3(x, w, shift=8, tile_h=data.draw(st.sampled_from([1, 2, 4]), "tile_h"), threads=threads)
    else:
        tiles = data.draw(st.sampled_from([(8, 1, 1), (8, 2, 2), (16, 2, 1), (4, 4, 2)]), "tiles")
        bundle, _ = gemm_case(data.draw(st.integers(0, 2**16), "seed"), threads, m=16, k=32, n=64, tiles=tiles)
    flags = [
        (index, flag)
        for index, insn in enumerate(bundle.insns)
        for flag in ("pop_prev", "pop_next", "push_prev", "push_next")
        if getattr(insn, flag)
    ]
    index, flag = data.draw(st.sampled_from(flags), "removed")
    broken = list(bundle.insns)
    broken[index] = replace(broken[index], **{flag: False})
    with pytest.raises(VTAError, match="deadlock|token|race|not ordered after"):
        simulate(broken, bundle.dram, seed=data.draw(st.integers(0, 3), "order"))
