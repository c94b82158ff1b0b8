"""Transformer latency: strato against onnxruntime, in one run, and where the time goes.

    python benchmarks/transformer_speed.py                      # zoo, vit, bert at 1 and 2 threads
    python benchmarks/transformer_speed.py vit --threads 1 --kernels
    python benchmarks/transformer_speed.py --torch hf_vit hf_bert gpt2   # torch exports (needs torch)

Models: `zoo` (the zoo's transformer block), `vit` (a ViT encoder, 6 layers, hidden 384,
12 heads, 197 tokens), `vit768` (hidden 768), `bert` (4 layers, hidden 512, 8 heads,
sequence 128, a padding mask), `bert_decomposed` (its LayerNorms written out as
ReduceMean/Sub/Pow/Sqrt/Div, as older exporters do): see transformer_models.py. With
`--torch`, `hf_vit` (transformers' ViTModel, ViT-B/16 at 6 layers), `hf_bert` (BertModel,
4 layers, hidden 512, sequence 128, padding mask) and `gpt2` (GPT2Model, 4 layers, hidden
768, sequence 128), exported by torch's TorchScript exporter at opset 17 into
benchmarks/.torch_corpus.

For each model and thread count: strato's latency and onnxruntime's (same inputs,
`intra_op_num_threads` set, spinning off), timed in alternating rounds so that both see
the same machine, the median of each, their ratio, the ratio of the fastest calls (on a
machine shared with other work, the least disturbed) and the largest relative error.

`--kernels` prints where the time goes on one thread: each distinct kernel of strato's
(`strato.autotuning.task.extract_tasks`: the fused primitives, scheduled by default and
timed alone, as the tuner measures them, times the number of kernels it stands for) next
to onnxruntime's per-node profile (`SessionOptions.enable_profiling`), summed by operator
type, each side's total beside its end-to-end latency.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from statistics import median

import numpy as np
import onnx
from transformer_models import build_bert, build_vit

import strato
from strato import zoo

CACHE_DIR = Path(__file__).resolve().parent / ".torch_corpus"

BUILT = {
    "zoo": lambda: zoo.build_model("transformer"),
    "vit": lambda: build_vit(hidden=384, heads=12, layers=6),
    "vit768": lambda: build_vit(hidden=768, heads=12, layers=6),
    "bert": lambda: build_bert(seq_len=128, hidden=512, heads=8, layers=4),
    "bert_decomposed": lambda: build_bert(seq_len=128, hidden=512, heads=8, layers=4, layer_norm="decomposed"),
}
TORCH = ("hf_vit", "hf_bert", "gpt2")


def torch_export(name: str) -> onnx.ModelProto:
    """transformers' model `name` exported by the TorchScript exporter (cached)."""
    path = CACHE_DIR / f"speed_{name}.onnx"
    if path.exists():
        return onnx.load(str(path))
    import torch

    # importing torch_corpus also takes this directory off sys.path, so its kernels.py
    # does not stand in for the package transformers imports
    from torch_corpus import import_torchvision

    import_torchvision()  # transformers imports torchvision when it is installed
    import transformers

    torch.manual_seed(0)
    if name == "hf_vit":
        config = transformers.ViTConfig(num_hidden_layers=6)  # ViT-B/16 at 224, 6 layers
        model = transformers.ViTModel(config, add_pooling_layer=False)
        example = {"pixel_values": torch.randn(1, 3, 224, 224)}
    elif name == "hf_bert":
        config = transformers.BertConfig(
            vocab_size=1000, hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
            intermediate_size=2048, max_position_embeddings=128,
        )
        model = transformers.BertModel(config, add_pooling_layer=False)
        example = {"input_ids": torch.randint(0, 1000, (1, 128)), "attention_mask": _mask(128, torch)}
    elif name == "gpt2":
        config = transformers.GPT2Config(vocab_size=1000, n_layer=4, n_positions=128, use_cache=False)
        model = transformers.GPT2Model(config)
        example = {"input_ids": torch.randint(0, 1000, (1, 128)), "attention_mask": _mask(128, torch)}
    else:
        raise ValueError(name)
    model.config.return_dict = False
    model.eval()

    class FirstOutput(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(example, args)))[0]

    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            FirstOutput(model).eval(), tuple(example.values()), str(path),
            input_names=list(example), output_names=["output"], opset_version=17, dynamo=False,
        )  # fmt: skip
    return onnx.load(str(path))


def _mask(length: int, torch):
    mask = torch.ones(1, length, dtype=torch.int64)
    mask[0, length - length // 4 :] = 0
    return mask


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard normal floats; int64 token ids below 1000, or for an input named like a
    mask, ones with the last quarter zero (padding)."""
    rng = np.random.default_rng(seed)
    initializers = {init.name for init in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = tuple(dim.dim_value for dim in tensor_type.shape.dim)
        if tensor_type.elem_type == onnx.TensorProto.INT64:
            if "mask" in value.name:
                array = np.ones(shape, np.int64)
                array[..., shape[-1] - shape[-1] // 4 :] = 0
            else:
                array = rng.integers(0, 1000, shape, dtype=np.int64)
        else:
            array = rng.standard_normal(shape).astype(np.float32)
        feeds[value.name] = array
    return feeds


def ort_session(model: onnx.ModelProto, threads: int, profile: str | None = None):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    # idle onnxruntime worker threads must not spin while the other side is timed
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def interleaved_ms(runs: dict[str, object], rounds: int, per_round: int) -> dict[str, float]:
    """The median latency (ms) of each callable, timed in `rounds` alternating rounds of
    `per_round` calls each."""
    import time

    for run in runs.values():
        run()
        run()
    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for name, run in runs.items():
            for _ in range(per_round):
                start = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: median(values) for name, values in times.items()} | {
        f"{name}_min": min(values) for name, values in times.items()
    }


def latency(name: str, model: onnx.ModelProto, threads: int, rounds: int) -> dict:
    feeds = random_inputs(model)
    compiled = strato.compile(model, threads=threads)
    arrays = [feeds[n] for n in compiled.input_names]
    ours = compiled(*arrays)
    session = ort_session(model, threads)
    theirs = session.run(None, feeds)
    error = max(
        float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
        for a, b in zip(ours, theirs)
    )
    ms = interleaved_ms(
        {"strato": lambda: compiled(*arrays), "onnxruntime": lambda: session.run(None, feeds)},
        rounds, 5,
    )  # fmt: skip
    return {
        "model": name, "threads": threads, "strato_ms": ms["strato"],
        "onnxruntime_ms": ms["onnxruntime"], "ratio": ms["strato"] / ms["onnxruntime"],
        "strato_min_ms": ms["strato_min"], "onnxruntime_min_ms": ms["onnxruntime_min"],
        "min_ratio": ms["strato_min"] / ms["onnxruntime_min"], "max_rel_err": error,
    }  # fmt: skip


def strato_kernels(model: onnx.ModelProto) -> list[tuple[str, int, float, float]]:
    """(kernel, count, ms per call, GFLOP/s) of each distinct kernel, one thread, on
    the tuner's seeded buffers, wall time as onnxruntime's profile measures, the
    fastest of five repeats (the model's outputs are checked end to end instead: a
    kernel fed random token ids or masks may compute NaN, and that is no error)."""
    import time

    from strato.autotuning.measure import _kernel_buffers, builder_of, isolated_kernel
    from strato.autotuning.task import extract_tasks

    rows = []
    for task in extract_tasks(model):
        built = isolated_kernel(task, task.default_config(), 1)
        function, _loaded = builder_of(built).load(built.kernel)
        arrays, _ = _kernel_buffers(built.kernel.buffers, 0)
        pointers = [array.ctypes.data for array in arrays]
        function(*pointers)
        start = time.perf_counter()
        function(*pointers)
        number = max(1, int(0.05 / max(time.perf_counter() - start, 1e-6)))
        costs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(number):
                function(*pointers)
            costs.append((time.perf_counter() - start) / number)
        seconds = min(costs)  # the least disturbed repeat
        rows.append((task.kernel, task.weight, seconds * 1e3, task.flops / seconds / 1e9))
    return rows


def ort_profile(model: onnx.ModelProto, runs: int = 20) -> tuple[dict[str, float], dict[str, float]]:
    """onnxruntime's per-node time on one thread (each node's fastest of `runs`): ms
    by operator type and by node."""
    feeds = random_inputs(model)
    with tempfile.TemporaryDirectory() as scratch:
        session = ort_session(model, 1, profile=os.path.join(scratch, "ort"))
        for _ in range(runs):
            session.run(None, feeds)
        events = json.loads(Path(session.end_profiling()).read_text())
    durations: dict[str, list[float]] = defaultdict(list)
    op_types: dict[str, str] = {}
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        node = event["name"].removesuffix("_kernel_time")
        durations[node].append(event["dur"] / 1e3)
        op_types[node] = event["args"]["op_name"]
    # each node's fastest run (the least disturbed), as strato's kernels are timed
    by_node = {node: min(values) for node, values in durations.items()}
    by_type: dict[str, float] = defaultdict(float)
    for node, ms in by_node.items():
        by_type[op_types[node]] += ms
    return dict(by_type), by_node


def print_kernels(name: str, model: onnx.ModelProto, top: int) -> None:
    rows = strato_kernels(model)
    by_type, by_node = ort_profile(model)
    total = sum(count * ms for _, count, ms, _ in rows)
    print(f"\n{name}: strato's kernels, 1 thread (sum {total:.3f} ms)")
    print(f"  {'kernel':58s} {'count':>5s} {'ms each':>8s} {'ms all':>8s} {'share':>6s} {'GFLOP/s':>8s}")
    for kernel, count, ms, gflops in sorted(rows, key=lambda r: -r[1] * r[2])[:top]:
        print(f"  {kernel[:58]:58s} {count:5d} {ms:8.3f} {count * ms:8.3f} {count * ms / total:6.1%} {gflops:8.1f}")
    ort_total = sum(by_type.values())
    print(f"{name}: onnxruntime's nodes by operator type, 1 thread (sum {ort_total:.3f} ms)")
    for op, ms in sorted(by_type.items(), key=lambda item: -item[1]):
        print(f"  {op:58s} {ms:8.3f} {ms / ort_total:6.1%}")
    print(f"{name}: onnxruntime's slowest nodes")
    for node, ms in sorted(by_node.items(), key=lambda item: -item[1])[:top]:
        print(f"  {node[:58]:58s} {ms:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"default: zoo vit bert; also {', '.join(BUILT)}")
    parser.add_argument("--torch", nargs="*", metavar="NAME", default=None,
                        help=f"also torch exports: {', '.join(TORCH)} (default all)")  # fmt: skip
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds of 5 calls per side")
    parser.add_argument("--kernels", action="store_true", help="per-kernel time against onnxruntime's profile")
    parser.add_argument("--top", type=int, default=15, help="rows of the --kernels tables")
    parser.add_argument("--json", metavar="OUT.json", help="also write the latencies as JSON")
    args = parser.parse_args()
    names = args.models or ([] if args.torch is not None else ["zoo", "vit", "bert"])
    models = {name: BUILT[name]() for name in names}
    if args.torch is not None:
        for name in args.torch or TORCH:
            models[name] = torch_export(name)
    results = []
    for name, model in models.items():
        for threads in args.threads:
            r = latency(name, model, threads, args.rounds)
            results.append(r)
            print(
                f"{name:16s} threads {threads} | strato {r['strato_ms']:8.3f} ms | onnxruntime "
                f"{r['onnxruntime_ms']:8.3f} ms | ratio {r['ratio']:5.2f}x | fastest calls "
                f"{r['strato_min_ms']:8.3f} / {r['onnxruntime_min_ms']:8.3f} ms = {r['min_ratio']:5.2f}x "
                f"| max rel err {r['max_rel_err']:.1e}",
                flush=True,
            )
        if args.kernels:
            print_kernels(name, model, args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
