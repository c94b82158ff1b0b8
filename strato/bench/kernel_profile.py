"""Per-kernel time of a model compiled for the llvm target, beside onnxruntime's per-node
profile of the same model.

    profile = profile_kernels("squeezenet.onnx", threads=2, repeat=20)
    for row in profile.rows: print(row.kernel, row.ms)
    peer = profile_onnxruntime("squeezenet.onnx", feed, threads=2, repeat=20)

How strato's kernels are timed: the model is compiled stage by stage as `strato.compile`
does, and before the build its entry function gets a call of an external
`strato_profile_mark(i64 k)` before the k-th kernel call and one more before it returns.
The symbol is a ctypes callback that records `time.perf_counter_ns()`, so a kernel's time
is the wall time between its mark and the next (its parallel loops included; the mark
itself costs about a microsecond, which the figures include). The kernels are those of
the normal build, unchanged; only the entry differs.

onnxruntime's side is its own profiler (`SessionOptions.enable_profiling`): the mean
duration of each node over the timed runs, from its JSON trace.
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64

MARK_SYMBOL = "strato_profile_mark"


@dataclass
class KernelTime:
    kernel: str
    """The kernel's function name (its fused group: `blocked_conv_relu_3`)."""
    calls: int
    """How many times the entry calls it per model run."""
    ms: float
    """Mean milliseconds per model run, over all its calls."""
    shapes: str = ""
    """The buffer types of its first call."""


@dataclass
class KernelProfile:
    rows: list[KernelTime]
    total_ms: float
    """Mean milliseconds of a whole (instrumented) model run."""
    by_kind: dict[str, float] = field(default_factory=dict)


def instrument_entry(module: ModuleOp, entry: str) -> list[tuple[str, str]]:
    """Insert a mark call before each kernel call of `entry` and before its return, in
    place; the called kernels in order, with the types of their arguments."""
    function = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry
    )
    calls = [op for op in function.walk() if isinstance(op, func.CallOp)]
    module.body.block.add_op(func.FuncOp.external(MARK_SYMBOL, [i64], []))
    order = []
    returns = [op for op in function.walk() if isinstance(op, func.ReturnOp)]
    for index, op in enumerate([*calls, *returns]):
        constant = arith.ConstantOp(IntegerAttr(index, i64))
        mark = func.CallOp(MARK_SYMBOL, [constant.result], [])
        op.parent_block().insert_ops_before([constant, mark], op)
        if isinstance(op, func.CallOp):
            types = ", ".join(str(operand.type) for operand in op.arguments)
            order.append((op.callee.root_reference.data, types))
    return order


def _kind(kernel: str) -> str:
    """A kernel's fused group name without its number: `blocked_conv_relu`."""
    head, _, tail = kernel.rpartition("_")
    return head if tail.isdigit() and head else kernel


def profile_kernels(
    path: str | os.PathLike, inputs: list[np.ndarray], *, threads: int, repeat: int
) -> KernelProfile:
    """Mean time per model run of each kernel of the model at `path`, compiled for the
    host with `threads` threads, over `repeat` runs after a warm-up."""
    from llvmlite import binding

    from strato.compiler import resolve_target
    from strato.frontends.onnx import import_onnx
    from strato.runtime.signature import Signature
    from strato.targets.registry import BuildOptions, run_stages

    target = resolve_target("llvm", threads=threads)
    imported = import_onnx(str(path))
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names
    )
    run_stages(target.stages(), imported.module)
    order = instrument_entry(imported.module, imported.function_name)

    stamps: list[tuple[int, int]] = []
    callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int64)
    callback = callback_type(lambda k: stamps.append((k, time.perf_counter_ns())))
    binding.add_symbol(MARK_SYMBOL, ctypes.cast(callback, ctypes.c_void_p).value)
    model = target.build(
        imported.module, imported.function_name, signature, public_name="profiled",
        options=BuildOptions(cache=True),
    )
    model(*inputs)
    totals: dict[int, int] = defaultdict(int)
    whole = 0
    for _ in range(repeat):
        stamps.clear()
        model(*inputs)
        whole += stamps[-1][1] - stamps[0][1]
        for (k, start), (_, end) in pairwise(stamps):
            totals[k] += end - start
    del callback  # the model is not called again
    per_kernel: dict[str, list] = {}
    for k, (kernel, types) in enumerate(order):
        row = per_kernel.setdefault(kernel, [0, 0, types])
        row[0] += 1
        row[1] += totals[k]
    rows = [
        KernelTime(kernel, calls, nanoseconds / repeat / 1e6, types)
        for kernel, (calls, nanoseconds, types) in per_kernel.items()
    ]
    rows.sort(key=lambda row: -row.ms)
    by_kind: dict[str, float] = defaultdict(float)
    for row in rows:
        by_kind[_kind(row.kernel)] += row.ms
    return KernelProfile(rows, whole / repeat / 1e6, dict(by_kind))


@dataclass
class NodeTime:
    node: str
    op_type: str
    ms: float


def profile_onnxruntime(
    path: str | os.PathLike, feed: Mapping[str, np.ndarray], *, threads: int, repeat: int
) -> list[NodeTime]:
    """Mean time per run of each node of onnxruntime's session of the model at `path`
    (after its graph optimisations), slowest first."""
    import onnxruntime

    with tempfile.TemporaryDirectory() as scratch:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(scratch, "ort")
        session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        for _ in range(2):
            session.run(None, dict(feed))
        for _ in range(repeat):
            session.run(None, dict(feed))
        trace_path = session.end_profiling()
        with open(trace_path) as trace:
            events = json.load(trace)
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    timed_from = runs[-repeat]["ts"] if len(runs) >= repeat else 0
    totals: dict[str, list] = {}
    for event in events:
        if event.get("cat") != "Node" or not event.get("name", "").endswith("_kernel_time"):
            continue
        if event["ts"] < timed_from:
            continue
        name = event["name"].removesuffix("_kernel_time")
        row = totals.setdefault(name, [event.get("args", {}).get("op_name", "?"), 0])
        row[1] += event["dur"]
    nodes = [NodeTime(name, op_type, us / repeat / 1e3) for name, (op_type, us) in totals.items()]
    nodes.sort(key=lambda node: -node.ms)
    return nodes
