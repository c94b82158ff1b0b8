"""run_conv2d through the VTA compiler path: template, token insertion, virtual threads, emitter.

Every result is checked bit-exact against numpy, under several orders in which ready
modules run; the simulator rejects any stream whose tokens leave two modules' accesses to
a shared buffer unordered, so a missing token fails these tests rather than passing by luck.
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
from strato.dialects.loop import ForOp, LoopKind
from strato.targets.vta.bundle import read_bundle
from strato.targets.vta.compile import reference_conv2d, run_conv2d, workload_of
from strato.targets.vta.conv2d_template import (
    VtaConv2dConfig,
    build_conv2d,
    check,
    default_config,
)
from strato.targets.vta.interpret import run_vta
from strato.targets.vta.layout import pack_activations, pack_weights, unpack_activations
from strato.targets.vta.simulator import simulate
from strato.targets.vta.vta_inject_virtual_threads import VtaInjectVirtualThreadsPass
from strato.targets.vta.vta_insert_dependence_tokens import (
    VtaInsertDependenceTokensPass,
)


def random_layer(rng, c, o, size, kernel):
    x = rng.integers(-128, 128, (1, c, size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (o, c, kernel, kernel), dtype=np.int8)
    return x, w


def valid_tilings(wl, threads):
    tilings = []
    for tile_h in range(1, wl.out_height + 1):
        for oc_tile in (1, 2, 3):
            for ic_tile in (1, 2):
                cfg = VtaConv2dConfig(tile_h, oc_tile, ic_tile, threads)
                try:
                    check(wl, cfg)
                except StratoError:
                    continue
                tilings.append(cfg)
    if not tilings and threads > 1:
        # the channel tiles cannot spread evenly over the threads: one thread fewer
        return valid_tilings(wl, threads - 1)
    return tilings


@settings(max_examples=12, deadline=None)
@given(
    data=st.data(),
    c=st.sampled_from([16, 32]),
    o=st.sampled_from([16, 32, 48]),
    size=st.integers(3, 7),
    kernel=st.sampled_from([1, 3]),
    stride=st.sampled_from([1, 2]),
    threads=st.sampled_from([1, 2]),
    seed=st.sampled_from([None, 0, 1, 2]),
    with_bias=st.booleans(),
    relu=st.booleans(),
)
def test_conv2d_is_bit_exact(data, c, o, size, kernel, stride, threads, seed, with_bias, relu):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x, w = random_layer(rng, c, o, size, kernel)
    padding = kernel // 2
    bias = rng.integers(-20000, 20000, o).astype(np.int32) if with_bias else None
    wl = workload_of(x.shape, w.shape, stride, padding, 9, bias=with_bias)
    tiling = data.draw(st.sampled_from(valid_tilings(wl, threads)))
    got, report = run_conv2d(
        x, w, stride=stride, padding=padding, shift=9, virtual_threads=tiling.threads, tiling=tiling, seed=seed,
        bias=bias, relu=relu,
    )
    want = reference_conv2d(x, w, stride=stride, padding=padding, shift=9, bias=bias, relu=relu)
    np.testing.assert_array_equal(got, want)
    macs = o * c * wl.out_height * wl.out_width * kernel * kernel
    assert report.counters.gemm_counter * 16 * 16 == macs


def test_uneven_thread_groups_are_refused_and_avoided():
    # three output-channel tiles over two threads
    rng = np.random.default_rng(5)
    x, w = random_layer(rng, 16, 48, 4, 3)
    with pytest.raises(StratoError, match="do not spread evenly over 2 virtual threads"):
        run_conv2d(x, w, stride=1, padding=1, shift=8, virtual_threads=2, tiling=VtaConv2dConfig(2, 1, 1))
    wl = workload_of(x.shape, w.shape, 1, 1, 8)
    assert default_config(wl, 2).threads == 1
    got, _ = run_conv2d(x, w, stride=1, padding=1, shift=8, virtual_threads=2)
    np.testing.assert_array_equal(got, reference_conv2d(x, w, stride=1, padding=1, shift=8))


def _program(wl, cfg):
    module = build_conv2d(wl, cfg)
    VtaInsertDependenceTokensPass().apply(Context(), module)
    return module, next(op for op in module.ops if isinstance(op, func.FuncOp))


def _arrays(x, w, wl):
    out = np.zeros((1, wl.out_channels, wl.out_height, wl.out_width), np.int8)
    return [pack_activations(x), pack_weights(w), pack_activations(out)]


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_virtual_threads_do_not_change_results(seed):
    rng = np.random.default_rng(7)
    x, w = random_layer(rng, 32, 32, 4, 3)
    wl = workload_of(x.shape, w.shape, 1, 1, 10)
    results = []
    for threads in (1, 2):
        module, function = _program(wl, VtaConv2dConfig(2, 1, 1, threads))
        VtaInjectVirtualThreadsPass().apply(Context(), module)
        assert not [op for op in function.walk() if isinstance(op, ForOp) and op.loop_kind == LoopKind.VIRTUAL_THREAD]
        buffers = [op for op in function.walk() if isinstance(op, vta.BufferOp)]
        # each thread's slices are disjoint
        for scope in {b.scope for b in buffers}:
            spans = sorted({(b.offset.data, b.offset.data + b.elements) for b in buffers if b.scope == scope})
            assert len(spans) == threads and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        outputs, _, _ = run_vta(function, _arrays(x, w, wl), seed=seed)
        results.append(unpack_activations(outputs[2], (1, 32, 4, 4)))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], reference_conv2d(x, w, stride=1, padding=1, shift=10))


def test_removing_any_token_is_detected():
    rng = np.random.default_rng(11)
    x, w = random_layer(rng, 32, 32, 2, 1)
    wl = workload_of(x.shape, w.shape, 1, 0, 6)
    want = reference_conv2d(x, w, stride=1, padding=0, shift=6)
    module, function = _program(wl, VtaConv2dConfig(1, 1, 1, 2))
    VtaInjectVirtualThreadsPass().apply(Context(), module)
    tokens = [op for op in function.walk() if isinstance(op, vta.DepPushOp | vta.DepPopOp)]
    assert len(tokens) > 10
    for position in range(len(tokens)):
        copy = module.clone()
        fn = next(op for op in copy.ops if isinstance(op, func.FuncOp))
        victim = [op for op in fn.walk() if isinstance(op, vta.DepPushOp | vta.DepPopOp)][position]
        victim.detach()
        victim.erase()
        detected = False
        for seed in (None, 0, 1, 2, 3):
            try:
                outputs, _, _ = run_vta(fn, _arrays(x, w, wl), seed=seed)
            except StratoError:
                detected = True
                break
            if not np.array_equal(unpack_activations(outputs[2], want.shape), want):
                detected = True
                break
        assert detected, f"removing token {position} ({victim.name} {victim.queue}) went unnoticed"


def test_bundle_runs_on_its_own(tmp_path):
    rng = np.random.default_rng(3)
    x, w = random_layer(rng, 16, 32, 5, 3)
    got, report = run_conv2d(x, w, stride=2, padding=1, shift=8, bundle=tmp_path / "b")
    bundle = read_bundle(tmp_path / "b")
    assert not bundle.tensor("out").any()  # the bundle holds the initial contents
    again = simulate(bundle.insns, bundle.dram, bundle.config)
    np.testing.assert_array_equal(bundle.tensor("out"), got)
    np.testing.assert_array_equal(bundle.tensor("x"), x)
    assert again.cycles.total_cycles == report.cycles.total_cycles


def test_default_tiling_fits_each_thread_share():
    wl = workload_of((1, 256, 14, 14), (256, 256, 3, 3), 1, 1, 8)
    for threads in (1, 2):
        cfg = default_config(wl, threads)
        check(wl, cfg)
        assert cfg.threads == threads


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "dtype", "message"),
    [
        ((1, 16, 4, 4), (16, 16, 3, 3), np.float32, "must be int8"),
        ((1, 8, 4, 4), (16, 8, 3, 3), np.int8, "not multiples of 16"),
        ((2, 16, 4, 4), (16, 16, 3, 3), np.int8, "are not \\[1, C, H, W\\]"),
    ],
)
def test_bad_layers_are_diagnostics(x_shape, w_shape, dtype, message):
    with pytest.raises(StratoError, match=message):
        run_conv2d(np.zeros(x_shape, dtype), np.zeros(w_shape, dtype), stride=1, padding=1, shift=4)


def test_tile_that_does_not_fit_is_a_diagnostic():
    x, w = np.zeros((1, 16, 64, 64), np.int8), np.zeros((16, 16, 3, 3), np.int8)
    with pytest.raises(StratoError, match="a thread's share"):
        run_conv2d(x, w, stride=1, padding=1, shift=4, virtual_threads=1, tiling=VtaConv2dConfig(64, 1, 1))


@pytest.mark.parametrize(("m", "relu"), [(2, True), (7, False)])
def test_dense_is_bit_exact(m, relu):
    from strato.targets.vta.compile import run_dense

    rng = np.random.default_rng(m)
    x = rng.integers(-128, 128, (m, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (48, 64), dtype=np.int8)
    bias = rng.integers(-3000, 3000, 48).astype(np.int32)
    got, report = run_dense(x, w, shift=8, bias=bias, relu=relu)
    acc = x.astype(np.int64) @ w.T.astype(np.int64) + bias
    np.testing.assert_array_equal(got, np.clip(acc >> 8, 0 if relu else -127, 127).astype(np.int8))
    assert report.counters.gemm_counter == m * (64 // 16) * (48 // 16)


def _int64_conv2d(x, w, *, stride, padding, shift, bias=None, relu=True):
    """reference_conv2d computed in int64 throughout, one einsum per kernel position."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.int64), [(0, 0), (0, 0), (padding, padding), (padding, padding)])
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    acc = np.zeros((n, o, oh, ow), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            acc += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64).reshape(1, o, 1, 1)
    wrapped = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)
    return np.clip(wrapped >> shift, 0 if relu else -127, 127).astype(np.int8)


@pytest.mark.parametrize(
    ("case", "dtype"), [("extreme", np.int8), ("random", np.int8), ("huge", np.int32)]
)
def test_reference_conv2d_sums_exactly(case, dtype):
    """int8 operands sum in float64 (exact below 2**53), operands too large for that in
    int64; both give what int64 arithmetic gives, int32 wrap included."""
    rng = np.random.default_rng(7)
    shape_x, shape_w = (1, 64, 6, 6), (32, 64, 3, 3)
    if case == "extreme":
        x, w = np.full(shape_x, -128, dtype), np.full(shape_w, -128, dtype)
    elif case == "random":
        x, w = rng.integers(-128, 128, shape_x, dtype), rng.integers(-128, 128, shape_w, dtype)
    else:  # 64 * 9 * 2**60 products: int64 (wrapping) sums, as the int64 reference does
        x = rng.integers(-(2**30), 2**30, shape_x, dtype)
        w = rng.integers(-(2**30), 2**30, shape_w, dtype)
    bias = rng.integers(-(2**20), 2**20, 32, dtype=np.int32)
    for stride, padding, relu in ((1, 1, True), (2, 0, False)):
        options = {"stride": stride, "padding": padding, "shift": 9, "bias": bias, "relu": relu}
        got = reference_conv2d(x, w, **options)
        np.testing.assert_array_equal(got, _int64_conv2d(x, w, **options))
