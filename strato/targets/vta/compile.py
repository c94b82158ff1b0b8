"""Compile and run one int8 conv2d layer on VTA: `run_conv2d`.

    out, report = run_conv2d(x, w, stride=1, padding=1, shift=8, virtual_threads=2)

The layer goes through the compiler path of the VTA target: the layer as a te primitive
over the VTA layouts, lowered to loops and scheduled by the VTA conv2d template
(strato.targets.vta.conv2d_template: cache_read/cache_write into the vta scopes,
tensorize with the vta.gemm intrinsic, a virtual-thread loop), `convert-loops-to-vta`
makes it a vta-dialect program, `vta-insert-dependence-tokens` orders the load, compute
and store modules,
`vta-inject-virtual-threads` interleaves the threads, the emitter issues the instruction
stream through the runtime, and the simulator runs it bit-exact with the cycle model.
`out = clip(conv2d(x, w) >> shift, 0, 127)` comes back as int8 NCHW, with the
simulator's report (counters, cycles, compute utilization).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strato.diagnostics import StratoError
from strato.targets.vta.bundle import write_bundle
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.conv2d_template import (
    Conv2dWorkload,
    VtaConv2dConfig,
    build_conv2d,
    default_config,
)
from strato.targets.vta.cycle_model import CycleParams
from strato.targets.vta.interpret import NamedTensor, run_vta
from strato.targets.vta.layout import (
    activation_layout,
    pack_activations,
    pack_weights,
    unpack_activations,
    weight_layout,
)
from strato.targets.vta.simulator import Report
from strato.targets.vta.vta_inject_virtual_threads import VtaInjectVirtualThreadsPass
from strato.targets.vta.vta_insert_dependence_tokens import (
    VtaInsertDependenceTokensPass,
)


def workload_of(
    x_shape, w_shape, stride: int, padding: int, shift: int, *, bias: bool = False, relu: bool = True
) -> Conv2dWorkload:
    """The template's workload for x [1, C, H, W] and w [O, C, KH, KW]; a diagnostic otherwise."""
    if len(x_shape) != 4 or len(w_shape) != 4 or x_shape[0] != 1 or w_shape[1] != x_shape[1]:
        raise StratoError(f"run_conv2d: x {list(x_shape)} and w {list(w_shape)} are not [1, C, H, W] and [O, C, KH, KW]")
    if stride < 1 or padding < 0 or not 0 <= shift <= 31:
        raise StratoError(f"run_conv2d: stride {stride}, padding {padding} or shift {shift} out of range")
    _, c, h, wd = x_shape
    o, _, kh, kw = w_shape
    return Conv2dWorkload(c, h, wd, o, kh, kw, stride, padding, shift, bias, relu)


def compile_conv2d(
    wl: Conv2dWorkload, cfg: VtaConv2dConfig | None = None, *, virtual_threads: int = 2, config: VTAConfig = DEFAULT_CONFIG
) -> ModuleOp:
    """The layer's vta-dialect program, tokens inserted and threads interleaved."""
    if virtual_threads < 1:
        raise StratoError(f"run_conv2d: {virtual_threads} virtual threads")
    cfg = cfg or default_config(wl, virtual_threads, config)
    module = build_conv2d(wl, cfg, config)
    ctx = Context()
    VtaInsertDependenceTokensPass().apply(ctx, module)
    VtaInjectVirtualThreadsPass().apply(ctx, module)
    module.verify()
    return module


def run_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    *,
    stride: int,
    padding: int,
    shift: int,
    virtual_threads: int = 2,
    bundle: str | Path | None = None,
    bias: np.ndarray | None = None,
    relu: bool = True,
    tiling: VtaConv2dConfig | None = None,
    params: CycleParams | None = None,
    seed: int | None = None,
    config: VTAConfig = DEFAULT_CONFIG,
    program: ModuleOp | None = None,
    streams: dict | None = None,
) -> tuple[np.ndarray, Report]:
    """clip(conv2d(x, w) >> shift, 0, 127) as int8 NCHW, computed on the VTA simulator.

    With `bias` (int32 [O]) it is added to the accumulator before the shift; with
    `relu=False` the result is clipped to [-127, 127] instead.

    `tiling` overrides the template's knobs (tile sizes; its `threads` is replaced by
    `virtual_threads`), `params` the cycle model's, `seed` the order in which ready
    modules run; `bundle` is a directory to write the bundle to. `program` is the
    layer's `compile_conv2d` output from an earlier call (the layer is not compiled again);
    `streams`, a dict kept with it, holds its emitted instruction stream across calls
    (`run_vta`: the stream is not emitted again).
    """
    x, w = np.asarray(x), np.asarray(w)
    if x.dtype != np.int8 or w.dtype != np.int8:
        raise StratoError(f"run_conv2d: x and w must be int8, got {x.dtype} and {w.dtype}")
    wl = workload_of(x.shape, w.shape, stride, padding, shift, bias=bias is not None, relu=relu)
    if bias is not None and (np.asarray(bias).dtype != np.int32 or np.shape(bias) != (w.shape[0],)):
        raise StratoError(f"run_conv2d: bias must be int32 [{w.shape[0]}]")
    if tiling is not None:
        tiling = VtaConv2dConfig(tiling.tile_h, tiling.oc_tile, tiling.ic_tile, virtual_threads)
    module = program if program is not None else compile_conv2d(wl, tiling, virtual_threads=virtual_threads, config=config)
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    out_shape = (1, wl.out_channels, wl.out_height, wl.out_width)
    by_name = {
        "x": pack_activations(x, config),
        "w": pack_weights(w, config),
        "out": pack_activations(np.zeros(out_shape, np.int8), config),
    }
    if bias is not None:
        by_name["b"] = np.asarray(bias).reshape(-1, config.batch, config.block_out)
    logical = {
        "x": NamedTensor("x", tuple(x.shape), activation_layout(config)),
        "w": NamedTensor("w", tuple(w.shape), weight_layout(config)),
        "out": NamedTensor("out", out_shape, activation_layout(config)),
    }
    arg_names = [arg.name_hint for arg in function.args]
    arrays = [by_name[name] for name in arg_names]
    names = {i: logical[name] for i, name in enumerate(arg_names) if name in logical}
    if program is None:
        streams = None  # a program compiled for this call only
    outputs, report, built = run_vta(
        function, arrays, config, seed=seed, params=params, names=names, streams=streams
    )
    if bundle is not None:
        write_bundle(bundle, built.insns, built.dram, config, built.tensors)
    return unpack_activations(outputs[arg_names.index("out")], out_shape, config), report


def run_dense(
    x: np.ndarray,
    w: np.ndarray,
    *,
    shift: int,
    virtual_threads: int = 2,
    bias: np.ndarray | None = None,
    relu: bool = True,
    seed: int | None = None,
    params: CycleParams | None = None,
    config: VTAConfig = DEFAULT_CONFIG,
) -> tuple[np.ndarray, Report]:
    """clip((x[M, K] . w[N, K]^T + bias) >> shift, lo, 127) as int8 [M, N] on the simulator.

    A dense layer is the 1x1 conv2d of x as [1, K, 1, M] (the M rows are the output
    columns the GEMM micro-ops walk) with w as [N, K, 1, 1], so the conv2d template tiles
    it; M must be at least 2 (the micro-ops of one tile must not write the same
    accumulator element back to back).
    """
    x, w = np.asarray(x), np.asarray(w)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise StratoError(f"run_dense: x {list(x.shape)} and w {list(w.shape)} are not [M, K] and [N, K]")
    m, k = x.shape
    images = np.ascontiguousarray(x.T).reshape(1, k, 1, m)
    out, report = run_conv2d(
        images,
        w.reshape(w.shape[0], k, 1, 1),
        stride=1,
        padding=0,
        shift=shift,
        virtual_threads=virtual_threads,
        bias=bias,
        relu=relu,
        seed=seed,
        params=params,
        config=config,
    )
    return np.ascontiguousarray(out.reshape(w.shape[0], m).T), report


def reference_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    *,
    stride: int,
    padding: int,
    shift: int,
    bias: np.ndarray | None = None,
    relu: bool = True,
) -> np.ndarray:
    """numpy: clip((conv2d(x, w) + bias) >> shift, 0 or -127, 127), accumulation wrapped to int32.

    The sums are exact: in float64 (BLAS) when every partial sum is an integer below 2**53
    (int8 operands: C * KH * KW * 128 * 128), in int64 otherwise."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    largest = int(np.abs(x.astype(np.int64)).max(initial=0)) * int(np.abs(w.astype(np.int64)).max(initial=0))
    dtype = np.float64 if c * kh * kw * largest < 2**53 else np.int64
    xp = np.pad(x.astype(dtype), [(0, 0), (0, 0), (padding, padding), (padding, padding)])
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    acc = np.zeros((o, n, oh, ow), dtype=dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            acc += np.tensordot(w[:, :, i, j].astype(dtype), patch, axes=([1], [1]))
    acc = acc.astype(np.int64).transpose(1, 0, 2, 3)
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64).reshape(1, o, 1, 1)
    wrapped = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)
    return np.clip(wrapped >> shift, 0 if relu else -127, 127).astype(np.int8)


__all__ = ["compile_conv2d", "reference_conv2d", "run_conv2d", "run_dense", "workload_of"]
