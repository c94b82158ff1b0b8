"""VTA bundles: the directory format round trips, runs from the command line, and rejects bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from strato.targets.vta.bundle import (
    Bundle,
    DramImage,
    TensorPlacement,
    read_bundle,
    write_bundle,
)
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.examples import (
    conv2d_3x3,
    reference_conv2d_3x3,
    reference_requantize,
)
from strato.targets.vta.isa import encode_words
from strato.targets.vta.layout import (
    pack_activations,
    pack_weights,
    unpack_activations,
    unpack_weights,
)
from strato.targets.vta.simulator import main, simulate


@pytest.fixture
def conv_bundle():
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, 16, 4, 4), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 16, 3, 3), dtype=np.int8)
    return conv2d_3x3(x, w, shift=8, tile_h=2, threads=2), reference_requantize(reference_conv2d_3x3(x, w), 8)


def test_write_read_run(tmp_path, conv_bundle):
    bundle, expect = conv_bundle
    write_bundle(tmp_path / "b", bundle.insns, bundle.dram, bundle.config, bundle.tensors)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "inp.npy", "insns.bin", "manifest.json", "out.npy", "uop.npy", "wgt.npy",
    ]  # fmt: skip
    raw = (tmp_path / "b" / "insns.bin").read_bytes()
    assert len(raw) == 16 * len(bundle.insns)
    first = encode_words(bundle.insns[0])
    assert int.from_bytes(raw[:8], "little") == first[0] and int.from_bytes(raw[8:16], "little") == first[1]
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["config"]["LOG_BLOCK"] == 4 and manifest["config"]["LOG_WGT_BUFF_SIZE"] == 18
    assert manifest["tensors"]["x"] == {"region": "inp", "first_element": 0, "shape": [1, 16, 4, 4],
                                        "layout": "NCHW1n16c"}  # fmt: skip
    assert manifest["tensors"]["w"]["layout"] == "OIHW16o16i"

    back = read_bundle(tmp_path / "b")
    assert back.insns == bundle.insns and back.config == DEFAULT_CONFIG and back.tensors == bundle.tensors
    for name, array in bundle.dram.items():
        assert back.dram[name].dtype == array.dtype and (back.dram[name] == array).all()
    simulate(back.insns, back.dram, back.config)
    assert (back.tensor("out") == expect).all()


def test_command_line_prints_the_report(tmp_path, conv_bundle, capsys):
    bundle, _ = conv_bundle
    write_bundle(tmp_path, bundle.insns, bundle.dram, bundle.config, bundle.tensors)
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "gemm_counter 288" in out and "compute utilization" in out and "cycles " in out
    assert main([str(tmp_path), "--json", "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counters"]["gemm_counter"] == 288 and report["cycles"]["total_cycles"] > 0
    assert main([str(tmp_path), "--trace"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["0", "compute", "0-4"]  # a LOAD UOP no-op carrying a push: overhead only
    assert lines[0].endswith("LOAD UOP sram_base=0 dram_base=0 y_size=0 x_size=0 x_stride=0 y_pad_0=0 y_pad_1=0 "
                             "x_pad_0=0 x_pad_1=0 [push_prev]")  # fmt: skip
    assert lines[len(bundle.insns) - 1].split()[1] == "compute" and "FINISH" in lines[len(bundle.insns) - 1]
    assert main([str(tmp_path), "--json", "--dma-latency", "1000"]) == 0
    slower = json.loads(capsys.readouterr().out)
    assert slower["cycles"]["total_cycles"] > report["cycles"]["total_cycles"] + 1000
    # as a module, without a traceback on a broken bundle
    (tmp_path / "insns.bin").write_bytes(b"\x07" + bytes(15))
    run = subprocess.run(
        [sys.executable, "-m", "strato.vta.simulator", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1
    message = f"{tmp_path}: instruction 0: error: field opcode = 7 is not a VTA opcode"
    assert run.stderr.strip().splitlines() == [message]
    assert main([str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err == f"{tmp_path / 'missing'}: error: not a bundle directory\n"


def test_bad_bundles_are_one_line_errors(tmp_path, conv_bundle):
    bundle, _ = conv_bundle
    with pytest.raises(VTAError, match="not a bundle directory"):
        read_bundle(tmp_path / "missing")
    write_bundle(tmp_path, bundle.insns, bundle.dram, bundle.config, bundle.tensors)
    manifest = json.loads((tmp_path / "manifest.json").read_text())

    def broken(**tensor):
        manifest["tensors"]["x"] = {**manifest["tensors"]["x"], **tensor}
        (tmp_path / "manifest.json").write_text(json.dumps(manifest))

    broken(first_element=1000)
    with pytest.raises(VTAError, match="tensor x: elements 1000..1015 lie outside region inp"):
        read_bundle(tmp_path)
    broken(first_element=0, layout="NHWC")
    with pytest.raises(VTAError, match="layout 'NHWC' is not NCHW1n16c or OIHW16o16i"):
        read_bundle(tmp_path)
    broken(layout="NCHW1n16c", region="uop")
    with pytest.raises(VTAError, match="region 'uop' is not"):
        read_bundle(tmp_path)
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(VTAError, match="manifest.json is not JSON"):
        read_bundle(tmp_path)
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(VTAError, match="bundle has no manifest.json"):
        read_bundle(tmp_path)
    with pytest.raises(VTAError, match=r"DRAM region inp is int32\[4, 1, 16\], expected int8\[n, 1, 16\]"):
        write_bundle(tmp_path, [], {"inp": np.zeros((4, 1, 16), np.int32)})


def test_second_config_bundle(tmp_path):
    cfg = VTAConfig(log_batch=1, log_block=3, log_inp_buff_size=12, log_wgt_buff_size=14, log_acc_buff_size=14)
    x = np.arange(2 * 8 * 2 * 2).reshape(2, 8, 2, 2).astype(np.int8)
    dram = {"inp": pack_activations(x, cfg)}
    tensors = {"x": TensorPlacement("inp", 0, (2, 8, 2, 2), "NCHW2n8c")}
    write_bundle(tmp_path, [], dram, cfg, tensors)
    back = read_bundle(tmp_path)
    assert back.config == cfg and (back.tensor("x") == x).all()


def test_layouts_round_trip():
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (2, 32, 3, 5), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 48, 3, 1), dtype=np.int8)
    elems = pack_activations(x)
    assert elems.shape == (2 * 2 * 3 * 5, 1, 16)
    assert (elems[1 * 15 + 2 * 5 + 4, 0] == x[0, 16:32, 2, 4]).all()  # (n, c/16, h, w) order
    assert (unpack_activations(elems, x.shape) == x).all()
    welems = pack_weights(w)
    assert (welems[(1 * 3 + 2) * 3 + 1] == w[16:32, 32:48, 1, 0]).all()  # [o][i] within an element
    assert (unpack_weights(welems, w.shape) == w).all()


def test_dram_image_places_tensors_one_after_another(tmp_path):
    rng = np.random.default_rng(1)
    image = DramImage()
    x = rng.integers(-128, 128, (1, 32, 2, 3), dtype=np.int8)
    y = rng.integers(-128, 128, (1, 16, 1, 1), dtype=np.int8)
    w = rng.integers(-128, 128, (16, 32, 1, 1), dtype=np.int8)
    bias = rng.integers(-(2**31), 2**31, (1, 16, 2, 2), dtype=np.int64).astype(np.int32)
    assert image.add_activations("x", x).first_element == 0
    assert image.add_activations("y", y).first_element == 12
    assert image.add_weights("w", w).first_element == 0
    assert image.add_activations("bias", bias, region="acc").first_element == 0
    assert image.reserve_activations("out", (1, 16, 2, 2)).first_element == 0
    with pytest.raises(VTAError, match="tensor x is placed twice"):
        image.add_activations("x", x)
    with pytest.raises(VTAError, match="activations go to inp, acc or out, not wgt"):
        image.add_activations("z", x, region="wgt")
    write_bundle(tmp_path, [], image.regions(), tensors=image.tensors)
    back = read_bundle(tmp_path)
    for name, value in {"x": x, "y": y, "w": w, "bias": bias}.items():
        assert (back.tensor(name) == value).all(), name
    assert back.dram["acc"].dtype == np.int32 and (back.tensor("out") == 0).all()
    assert isinstance(back, Bundle)
