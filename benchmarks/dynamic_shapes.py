"""Models exported with dynamic axes, compiled once by `strato.compile` and called at
several sizes: outputs against onnxruntime's on the same dynamic model, and latency of
the dynamic model against a static compile of the same size, in one run.

    pip install -e '.[corpus,bench]'
    python benchmarks/dynamic_shapes.py                  # every model below
    python benchmarks/dynamic_shapes.py --only bert --repeat 20

Models (random weights, seeded; exported by torch's TorchScript exporter with
`dynamic_axes`, or with `--exporter dynamo` by torch.export with dynamic `Dim`s; cached
in `benchmarks/.torch_corpus/dynamic/`):
- resnet18 (torchvision), dynamic batch, called at batch 1, 4 and 8;
- bert (transformers, 2 layers, 512 positions), dynamic batch and sequence, called at
  sequence 16, 128 and 512, then (batch 4, sequence 128);
- gpt2 (transformers, 2 layers, 512 positions), dynamic batch and sequence, called at
  (batch 1, sequence 16), (2, 64), (1, 200) and (4, 64);
- gpt2_cache, the same with its cache as inputs (its keys and values `past + sequence`
  long), one new token after (batch 1, past 16), (1, 128), (4, 128) and (1, 500);
- roberta, distilbert, albert, electra, t5 (its encoder) and bart (its encoder), as
  small (2 layers, 64 wide, 4 heads), called at (1, 16), (1, 128) and (4, 64);
- built in code (`strato.testing.dynamic_models`), of operators that take run-time
  dimensions, compiled once for every size (`run_time_dims=True`): mlp (256 -> 1024 -> 10, dynamic batch,
  at 1, 16, 256), encoder (a feed-forward block 256 wide, 1024 hidden, at (1, 16),
  (1, 128), (4, 128)), attention (single head, 64 wide, at (1, 16), (1, 128),
  (2, 256)) and mha (4 heads split and merged by Reshape and Transpose, 256 wide, at
  the same sizes).

Every model compiles once for every size (`strato.compile`'s default); `--per-size`
compiles the exported ones per call's sizes instead (`run_time_dims=False`).

Per size: the first call's seconds (the compile for that size, or for a size along which
the model is separable only the check of its import: `strato.separable`), the sizes
compiled so far, the largest difference from onnxruntime, then the median latency of the
dynamic model, of a static compile (`input_shapes` pinning the size) and of
onnxruntime (its threads not spinning between calls, which would slow the side timed
after it), taken in turns, with the dynamic/static ratio (the goal: at most 1.1).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from strato.testing import dynamic_models

HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]  # this directory's kernels.py would shadow the `kernels` package
CACHE_DIR = HERE / ".torch_corpus" / "dynamic"
SEED = 0


def _torchvision():
    """torchvision, through the corpus benchmark's loader (it declares the operators a
    torchvision built for another torch would fail to register)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_corpus", HERE / "torch_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("torch_corpus", corpus)
    spec.loader.exec_module(corpus)
    return corpus.import_torchvision()


def _resnet18():
    import torch

    torchvision = _torchvision()
    torch.manual_seed(SEED)
    module = torchvision.models.resnet18(weights=None).eval()
    example = {"pixels": np.zeros((1, 3, 224, 224), np.float32)}
    axes = {"pixels": {0: "batch"}, "output": {0: "batch"}}
    return module, example, axes


def _transformer(kind: str):
    def build():
        import torch

        _torchvision()  # transformers imports torchvision when it is installed
        import transformers

        torch.manual_seed(SEED)
        small = {
            "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 512,
        }  # fmt: skip
        if kind == "bert":
            model = transformers.BertModel(transformers.BertConfig(**small))
        elif kind == "gpt2":
            config = transformers.GPT2Config(
                vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=512, use_cache=False
            )
            model = transformers.GPT2Model(config)
        elif kind == "roberta":
            model = transformers.RobertaModel(transformers.RobertaConfig(**small))
        elif kind == "distilbert":
            config = transformers.DistilBertConfig(
                vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                max_position_embeddings=512,
            )  # fmt: skip
            model = transformers.DistilBertModel(config)
        elif kind == "albert":
            model = transformers.AlbertModel(transformers.AlbertConfig(embedding_size=32, **small))
        elif kind == "electra":
            model = transformers.ElectraModel(transformers.ElectraConfig(embedding_size=32, **small))
        elif kind == "t5":
            config = transformers.T5Config(
                vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4
            )
            model = transformers.T5EncoderModel(config)
        else:  # bart's encoder
            config = transformers.BartConfig(
                vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                decoder_ffn_dim=128, max_position_embeddings=512,
            )  # fmt: skip
            model = transformers.BartModel(config).get_encoder()
        model.config.return_dict = False

        class FirstOutput(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask):
                return self.inner(input_ids=input_ids, attention_mask=attention_mask)[0]

        example = {
            "input_ids": np.ones((1, 8), np.int64),
            "attention_mask": np.ones((1, 8), np.int64),
        }
        sizes = {0: "batch", 1: "sequence"}
        axes = {"input_ids": sizes, "attention_mask": sizes, "output": sizes}
        return FirstOutput(model.eval()).eval(), example, axes

    return build


CACHE_LAYERS, CACHE_HEADS, CACHE_WIDTH = 2, 4, 64


def _gpt2_cache():
    """GPT-2 (transformers, 2 layers, 512 positions) taking its cache as inputs: a
    decoder's step after the first, its keys and values `past + sequence` long."""
    import torch

    _torchvision()
    import transformers
    from transformers import DynamicCache

    torch.manual_seed(SEED)
    config = transformers.GPT2Config(
        vocab_size=1000, n_embd=CACHE_WIDTH, n_layer=CACHE_LAYERS, n_head=CACHE_HEADS, n_positions=512
    )
    model = transformers.GPT2LMHeadModel(config).eval()

    class WithCache(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, *past):
            cache = DynamicCache(config=config)
            for layer in range(CACHE_LAYERS):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache)
            present = [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
            return (out.logits, *present)

    example = _decode(1, 5, new=3)  # traced at more than one new token (a branch of one)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "past + sequence"}}
    axes |= {name: {0: "batch", 2: "past"} for name in example if name.startswith("past_")}
    return WithCache(model).eval(), example, axes


def _decode(batch: int, past: int, new: int = 1) -> dict[str, np.ndarray]:
    """`new` tokens after `past` ones in the cache."""
    rng = np.random.default_rng(SEED)
    inputs = {
        "input_ids": rng.integers(0, 1000, (batch, new)).astype(np.int64),
        "attention_mask": np.ones((batch, past + new), np.int64),
    }
    shape = (batch, CACHE_HEADS, past, CACHE_WIDTH // CACHE_HEADS)
    for layer in range(CACHE_LAYERS):
        for kind in "kv":
            inputs[f"past_{kind}_{layer}"] = rng.standard_normal(shape).astype(np.float32)
    return inputs


def _image(batch: int, seq: int) -> dict[str, np.ndarray]:
    del seq
    rng = np.random.default_rng(SEED)
    return {"pixels": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def _tokens(batch: int, seq: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 4 :] = 0  # padding at the end of each row
    return {"input_ids": rng.integers(0, 1000, (batch, seq)).astype(np.int64), "attention_mask": mask}


def _floats(*names: str, width: int, rank: int = 3):
    def make(batch: int, seq: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(SEED)
        shape = (batch, seq, width) if rank == 3 else (batch, width)
        return {name: rng.standard_normal(shape).astype(np.float32) for name in names}

    return make


MODELS: dict[str, tuple[Callable, Callable, list[tuple[int, int]]]] = {
    "resnet18": (_resnet18, _image, [(1, 0), (4, 0), (8, 0)]),
    "bert": (_transformer("bert"), _tokens, [(1, 16), (1, 128), (1, 512), (4, 128)]),
    "gpt2": (_transformer("gpt2"), _tokens, [(1, 16), (2, 64), (1, 200), (4, 64)]),
    # (batch, tokens in the cache), one new token
    "gpt2_cache": (_gpt2_cache, _decode, [(1, 16), (1, 128), (4, 128), (1, 500)]),
    **{
        kind: (_transformer(kind), _tokens, [(1, 16), (1, 128), (4, 64)])
        for kind in ("roberta", "distilbert", "albert", "electra", "t5", "bart")
    },
}

# built in code from operators that take run-time dimensions: compiled once
CODE_MODELS: dict[str, tuple[Callable, Callable, list[tuple[int, int]]]] = {
    "mlp": (
        lambda: dynamic_models.mlp(width=256, hidden=1024, classes=10),
        _floats("x", width=256, rank=2),
        [(1, 0), (16, 0), (256, 0)],
    ),
    "encoder": (
        lambda: dynamic_models.encoder_block(width=256, hidden=1024),
        _floats("x", "r", width=256),
        [(1, 16), (1, 128), (4, 128)],
    ),
    "attention": (
        lambda: dynamic_models.attention(width=64),
        _floats("x", width=64),
        [(1, 16), (1, 128), (2, 256)],
    ),
    "mha": (
        lambda: dynamic_models.multi_head_attention(width=256, heads=4),
        _floats("x", width=256),
        [(1, 16), (1, 128), (2, 256)],
    ),
}


def export(name: str, exporter: str = "torchscript") -> Path:
    """The model exported with its dynamic axes by `exporter` ("torchscript", or
    "dynamo": torch.export with `Dim`s, which writes other patterns for the same model)."""
    if name in CODE_MODELS:
        import onnx

        path = CACHE_DIR / f"{name}.code.onnx"
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        onnx.save(CODE_MODELS[name][0](), str(path))
        return path
    path = CACHE_DIR / (f"{name}.onnx" if exporter == "torchscript" else f"{name}.{exporter}.onnx")
    if path.exists():
        return path
    import torch

    module, example, axes = MODELS[name][0]()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    arrays = tuple(torch.from_numpy(v) for v in example.values())
    with torch.no_grad():
        if exporter == "torchscript":
            torch.onnx.export(
                module, arrays, str(partial), input_names=list(example), output_names=["output"],
                dynamic_axes=axes, opset_version=17, dynamo=False,
            )  # fmt: skip
        else:
            from torch.export import Dim

            dims = {
                "batch": Dim("batch", min=1, max=64), "sequence": Dim("sequence", min=2, max=512),
                # a sum of Dims is no Dim: the mask over a cache is as long as it says
                "past": Dim("past", min=1, max=1024), "past + sequence": Dim("total", min=2, max=1536),
            }  # fmt: skip
            shapes = tuple({a: dims[d] for a, d in axes[key].items()} for key in example)
            # torch.export specializes sizes of 1: trace at (2, 8)
            if name == "gpt2_cache":
                arrays = tuple(torch.from_numpy(v) for v in _decode(2, 5, new=3).values())
                shapes = (shapes[0], shapes[1], shapes[2:])
            else:
                arrays = tuple(
                    torch.ones((2, *v.shape[1:]) if v.ndim == 4 else (2, 8), dtype=v.dtype)
                    for v in arrays
                )
            onnx_program = torch.onnx.export(
                module, arrays, input_names=list(example), output_names=["output"],
                dynamic_shapes=shapes, dynamo=True, opset_version=18, verbose=False,
            )  # fmt: skip
            onnx_program.save(str(partial))
    partial.replace(path)
    return path


def median_ms(call: Callable[[], object], repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def in_turns(calls: dict[str, Callable[[], object]], repeat: int, rounds: int = 3) -> dict[str, float]:
    """Median over rounds of each side's median latency, the sides taken in turns."""
    samples: dict[str, list[float]] = {side: [] for side in calls}
    for _ in range(rounds):
        for side, call in calls.items():
            samples[side].append(median_ms(call, repeat))
    return {side: statistics.median(values) for side, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", action="append", choices=sorted({**MODELS, **CODE_MODELS}), help="this model only"
    )
    parser.add_argument("--repeat", type=int, default=10, help="timed calls per side per round")
    parser.add_argument(
        "--exporter", choices=["torchscript", "dynamo"], default="torchscript",
        help="torch's exporter (dynamo: torch.export with dynamic Dims)",
    )  # fmt: skip
    parser.add_argument(
        "--per-size", action="store_true",
        help="compile the exported models per call's sizes (run_time_dims=False) instead of "
        "once for every size",
    )  # fmt: skip
    args = parser.parse_args(argv)

    import onnxruntime

    import strato
    from strato.specializing import ShapeSpecializingModel

    header = (
        f"{'model':9s} {'sizes':26s} {'1st call s':>10s} {'compiled':>8s} {'max diff':>9s} "
        f"{'dynamic ms':>10s} {'static ms':>9s} {'ort ms':>8s} {'dyn/static':>10s} {'dyn/ort':>8s}"
    )
    print(header)
    ratios = []
    for name in args.only or [*MODELS, *CODE_MODELS]:
        path = export(name, args.exporter)
        _, make_inputs, sizes = {**MODELS, **CODE_MODELS}[name]
        start = time.perf_counter()
        per_size_asked = args.per_size and name not in CODE_MODELS
        dynamic = strato.compile(str(path), run_time_dims=False if per_size_asked else None)
        setup = time.perf_counter() - start
        per_size = isinstance(dynamic, ShapeSpecializingModel)
        if per_size:
            print(f"{name:9s} set up in {setup:.2f} s (compiled per size): {dynamic.dims.describe()}")
        else:
            shown = ", ".join(dynamic.signature.sizes)
            print(f"{name:9s} compiled once for every size in {setup:.2f} s: {shown}")
        options = onnxruntime.SessionOptions()
        # its threads spinning after a call would slow the side timed after it
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        for batch, seq in sizes:
            inputs = make_inputs(batch, seq)
            arrays = list(inputs.values())
            start = time.perf_counter()
            ours = dynamic(*arrays)
            first = time.perf_counter() - start
            theirs = session.run(None, inputs)
            diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs, strict=True))
            shapes = {key: value.shape for key, value in inputs.items()}
            static = strato.compile(str(path), input_shapes=shapes)
            times = in_turns(
                {
                    "dynamic": functools.partial(dynamic, *arrays),
                    "static": functools.partial(static, *arrays),
                    "ort": functools.partial(session.run, None, inputs),
                },
                args.repeat,
            )
            ratio = times["dynamic"] / times["static"]
            ratios.append(ratio)
            shown = ", ".join(f"{k}{list(v)}" for k, v in shapes.items())
            if len(shown) > 26:
                shown = f"batch {batch}" + (f", {'past' if name.endswith('_cache') else 'seq'} {seq}" if seq else "")
            compiled = len(dynamic.sizes) if per_size else 1
            print(
                f"{'':9s} {shown:26s} {first:10.2f} {compiled:8d} {diff:9.2e} "
                f"{times['dynamic']:10.3f} "
                f"{times['static']:9.3f} {times['ort']:8.3f} {ratio:10.2f} "
                f"{times['dynamic'] / times['ort']:8.2f}"
            )
        if per_size:
            split = ", ".join(f"'{dim}'" for dim in dynamic.separated) or "no dimension"
            print(f"{'':9s} {len(dynamic.sizes)} size(s) compiled; calls split along {split}")
    if ratios:
        geomean = float(np.exp(np.mean(np.log(ratios))))
        print(f"dynamic / static: geometric mean {geomean:.3f}, largest {max(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
