"""VTA configuration and ISA: derived widths, exact encodings (vta.md T1, T2, T4-T7), round trips."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strato.targets.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.isa import (
    Alu,
    AluOp,
    Finish,
    Gemm,
    Load,
    Opcode,
    Stage,
    Store,
    Uop,
    decode,
    decode_stream,
    decode_uop,
    encode,
    encode_stream,
    encode_uop,
    encode_words,
    layout,
)

# A second configuration: batch 2, 8x8 blocks, smaller buffers, int16 weights.
SMALL = VTAConfig(
    log_wgt_width=4,
    log_batch=1,
    log_block=3,
    log_uop_buff_size=12,
    log_inp_buff_size=12,
    log_wgt_buff_size=14,
    log_acc_buff_size=14,
)


def test_default_config_derived_widths():
    cfg = DEFAULT_CONFIG
    assert (cfg.batch, cfg.block_in, cfg.block_out) == (1, 16, 16)
    assert (cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes, cfg.out_elem_bytes) == (16, 256, 64, 16)
    assert (cfg.uop_depth, cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth) == (8192, 2048, 1024, 2048)
    assert cfg.log_out_buff_size == 15
    assert (cfg.uop_dst_width, cfg.uop_src_width, cfg.uop_wgt_width) == (11, 11, 10)
    assert cfg.name == "1x16_i8w8a32_15_15_18_17"


def test_second_config_derived_widths():
    cfg = SMALL
    assert (cfg.batch, cfg.block_in, cfg.wgt_elem_bytes, cfg.acc_elem_bytes) == (2, 8, 128, 64)
    # inp: 2**12 B / 16 B; wgt: 2**14 B / 128 B; acc: 2**14 B / 64 B; uop: 2**12 B / 4 B
    assert (cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth, cfg.uop_depth) == (256, 128, 256, 1024)
    gemm = {f.name: f for f in layout(Opcode.GEMM, cfg)}
    assert (gemm["uop_bgn"].width, gemm["uop_end"].width, gemm["wgt_factor_in"].width) == (10, 11, 7)
    assert gemm["uop_end"].lsb == gemm["uop_bgn"].lsb + 10
    assert VTAConfig.from_json(cfg.to_json()) == cfg


def test_bad_config_names_the_parameter():
    with pytest.raises(VTAError, match="log_acc_width"):
        VTAConfig(log_acc_width=4)
    with pytest.raises(VTAError, match="log_wgt_buff_size"):
        VTAConfig(log_wgt_buff_size=40)
    with pytest.raises(VTAError, match="LOG_BLOCK_IN = 4 and LOG_BLOCK_OUT = 3 differ"):
        VTAConfig.from_json({"LOG_BLOCK_IN": 4, "LOG_BLOCK_OUT": 3})
    with pytest.raises(VTAError, match="LOG_BATCH = '0' is not an integer"):
        VTAConfig.from_json({"LOG_BATCH": "0"})
    older = {"TARGET": "sim", "HW_VER": "0.0.1", "LOG_BLOCK_IN": 3, "LOG_BLOCK_OUT": 3}
    older |= {"LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16, "LOG_ACC_BUFF_SIZE": 16}
    expect = VTAConfig(log_block=3, log_inp_buff_size=14, log_wgt_buff_size=16, log_acc_buff_size=16)
    assert VTAConfig.from_json(older) == expect


def test_t1_uop_packing():
    assert encode_uop(Uop(dst=5, src=7, wgt=3)) == 0x00C03805
    assert decode_uop(0x00C03805) == Uop(5, 7, 3)


def test_t2_gemm_encoding():
    gemm = Gemm(
        reset=False, uop_bgn=0, uop_end=4, iter_out=3, iter_in=2,
        dst_factor_out=0, dst_factor_in=1, src_factor_out=1, src_factor_in=0,
        wgt_factor_out=1, wgt_factor_in=3, pop_prev=True, push_prev=True,
    )  # fmt: skip
    assert encode_words(gemm) == (0x000400180080002A, 0x00C0100000400800)
    assert encode(gemm) == (0x000400180080002A).to_bytes(8, "little") + (0x00C0100000400800).to_bytes(8, "little")
    assert decode(encode(gemm)) == gemm


def test_t4_padded_load_encoding():
    load = Load(MemoryType.INP, 10, 0x100, 2, 3, 5, y_pad_0=1, y_pad_1=0, x_pad_0=1, x_pad_1=1, pop_next=True)
    assert encode_words(load) == (0x0000000400002910, 0x1101000500030002)
    assert load.stage == Stage.LOAD


def test_t5_alu_encoding():
    alu = Alu(False, 5, 6, 1, 4, 0, 1, 0, 1, alu_opcode=AluOp.ADD, use_imm=True, imm=-5)
    assert encode_words(alu) == (0x0008000800C00504, 0xFFFBA00200000800)
    assert decode(encode(alu)).imm == -5


def test_t7_finish_encoding():
    assert encode_words(Finish()) == (0x3, 0)
    assert decode((0x3).to_bytes(16, "little")) == Finish()


def test_stages_route_as_vta_fetch_does():
    assert Load(MemoryType.WGT, 0, 0, 1, 1, 1).stage == Stage.LOAD
    assert Load(MemoryType.UOP, 0, 0, 1, 1, 1).stage == Stage.COMPUTE
    assert Load(MemoryType.ACC, 0, 0, 1, 1, 1).stage == Stage.COMPUTE
    assert Store(MemoryType.OUT, 0, 0, 1, 1, 1).stage == Stage.STORE
    assert Finish().stage == Stage.COMPUTE


def test_out_of_range_field_is_named():
    with pytest.raises(VTAError, match="GEMM field uop_end = 16384 does not fit in 14 bits"):
        encode(Gemm(False, 0, 16384, 1, 1, 0, 0, 0, 0))
    with pytest.raises(VTAError, match="ALU field imm = 40000"):
        encode(Alu(False, 0, 1, 1, 1, 0, 0, 0, 0, alu_opcode=AluOp.ADD, use_imm=True, imm=40000))
    with pytest.raises(VTAError, match="LOAD field x_pad_1 = 16"):
        encode(Load(MemoryType.INP, 0, 0, 1, 1, 1, x_pad_1=16))
    with pytest.raises(VTAError, match="micro-op field wgt = 1024"):
        encode_uop(Uop(0, 0, 1024))
    with pytest.raises(VTAError, match="instruction 1: error: STORE field dram_base = -1"):
        encode_stream([Finish(), Store(MemoryType.OUT, 0, -1, 1, 1, 1)])
    # the same value fits the wider field of the default configuration but not SMALL's
    encode(Gemm(False, 0, 1, 1, 1, 0, 0, 0, 0, wgt_factor_in=200))
    with pytest.raises(VTAError, match="wgt_factor_in = 200 does not fit in 7 bits"):
        encode(Gemm(False, 0, 1, 1, 1, 0, 0, 0, 0, wgt_factor_in=200), SMALL)


def test_bad_bytes_are_diagnosed():
    with pytest.raises(VTAError, match="field opcode = 7"):
        decode((7).to_bytes(16, "little"))
    with pytest.raises(VTAError, match="instruction 1: error: .*alu_opcode = 6"):
        decode_stream(encode(Finish()) + ((4 | 6 << 108).to_bytes(16, "little")))
    with pytest.raises(VTAError, match="multiple of 16 bytes"):
        decode_stream(b"\0" * 17)


def _uint(width):
    return st.integers(0, (1 << width) - 1)


def _flags():
    return st.fixed_dictionaries({name: st.booleans() for name in ("pop_prev", "pop_next", "push_prev", "push_next")})


def instructions(cfg: VTAConfig):
    """Any encodable instruction of `cfg`, every field drawn over its whole range."""
    memory = st.builds(
        lambda cls, flags, **kw: cls(**kw, **flags),
        st.sampled_from([Load, Store]),
        _flags(),
        memory_type=st.sampled_from(list(MemoryType)),
        sram_base=_uint(16), dram_base=_uint(32), y_size=_uint(16), x_size=_uint(16), x_stride=_uint(16),
        y_pad_0=_uint(4), y_pad_1=_uint(4), x_pad_0=_uint(4), x_pad_1=_uint(4),
    )  # fmt: skip
    compute = dict(
        reset=st.booleans(), uop_bgn=_uint(cfg.uop_bgn_width), uop_end=_uint(cfg.uop_end_width),
        iter_out=_uint(14), iter_in=_uint(14),
        dst_factor_out=_uint(cfg.acc_idx_width), dst_factor_in=_uint(cfg.acc_idx_width),
    )  # fmt: skip
    gemm = st.builds(
        lambda flags, **kw: Gemm(**kw, **flags), _flags(), **compute,
        src_factor_out=_uint(cfg.inp_idx_width), src_factor_in=_uint(cfg.inp_idx_width),
        wgt_factor_out=_uint(cfg.wgt_idx_width), wgt_factor_in=_uint(cfg.wgt_idx_width),
    )  # fmt: skip
    alu = st.builds(
        lambda flags, **kw: Alu(**kw, **flags), _flags(), **compute,
        src_factor_out=_uint(cfg.acc_idx_width), src_factor_in=_uint(cfg.acc_idx_width),
        alu_opcode=st.sampled_from(list(AluOp)), use_imm=st.booleans(), imm=st.integers(-(1 << 15), (1 << 15) - 1),
    )  # fmt: skip
    finish = st.builds(lambda flags: Finish(**flags), _flags())
    return st.one_of(memory, gemm, alu, finish)


@given(st.data(), st.sampled_from([DEFAULT_CONFIG, SMALL]))
def test_decode_inverts_encode(data, cfg):
    insns = data.draw(st.lists(instructions(cfg), min_size=1, max_size=6))
    assert decode_stream(encode_stream(insns, cfg), cfg) == insns
    for insn in insns:
        assert encode(decode(encode(insn, cfg), cfg), cfg) == encode(insn, cfg)


@given(st.sampled_from([DEFAULT_CONFIG, SMALL]), st.data())
def test_uop_round_trip(cfg, data):
    uop = Uop(
        data.draw(_uint(cfg.uop_dst_width)), data.draw(_uint(cfg.uop_src_width)), data.draw(_uint(cfg.uop_wgt_width))
    )
    word = encode_uop(uop, cfg)
    assert 0 <= word < 1 << 32
    assert decode_uop(word, cfg) == uop
