"""Real exported models: strato against onnxruntime on a corpus exported from torch.

    pip install -e '.[corpus]'
    python benchmarks/torch_corpus.py                        # every model, both exporters
    python benchmarks/torch_corpus.py --only resnet18 --only bert --exporter dynamo
    python benchmarks/torch_corpus.py --json corpus.json --markdown corpus.md
    python benchmarks/torch_corpus.py --json corpus.json --resume   # only the cases not in it
    python benchmarks/torch_corpus.py --threads 1 --only densenet121  # both sides on 1 thread
    python benchmarks/torch_corpus.py --target 'llvm -winograd' --exporter dynamo  # -winograd
    python benchmarks/torch_corpus.py --kernels squeezenet1_0 --exporter dynamo --threads 2
                                        # per-kernel time beside onnxruntime's per-node profile
    python benchmarks/torch_corpus.py --further --exporter dynamo --threads 1
                                        # 20 further architectures (FURTHER)

The corpus is built here, with random weights (seeded), from model definitions that real
users export: torchvision's CNNs, its VisionTransformer and SwinTransformer classes in small
configurations, and small BERT, GPT-2, DistilBERT, T5 and ViT models of the transformers
library built from configs. Each model is exported with both of torch's ONNX exporters
(`torch.onnx.export(..., dynamo=True)` at opset 18 and the TorchScript exporter,
`dynamo=False`, at opset 17) into a cache directory (`benchmarks/.torch_corpus`, not
tracked; `--rebuild` exports again).

For each model and exporter, in a worker process of its own (so a crash or a hang costs
that case only, and `--timeout` bounds): compile with `strato.compile` (the compile cache
off, so the compile time is measured), run on seeded inputs, run onnxruntime on the same
inputs, compare (rtol 1e-3, atol 1e-4), and time both (median latency after a warm-up; the two
sides called in turns, so that a change of the machine's load slows both alike).
The table gives the stage each case reached (import, compile, run, match), its status
(ok, mismatch with the largest error, or the first line of the diagnostic), the compile
time, the slowest compile stage, both latencies and their ratio. A worker reports each
stage as it starts, so a case that times out says where. `--threads N` runs both sides
on N threads (by default strato uses the cores available and onnxruntime its default).

`--kernels MODEL` profiles one model instead (`strato.bench.kernel_profile`): the mean
time per run of each strato kernel (its calls summed) and of each onnxruntime node (its
own profiler, after its graph optimisations), slowest first, with totals per kernel kind
and per node type, so the gap to onnxruntime shows which layers it comes from.

torchvision's wheels for this torch are CUDA builds whose compiled operators (nms,
roi_align, ...) do not load beside the CPU torch. The model definitions never call them,
but importing torchvision registers fake kernels for two of them; `import_torchvision`
declares those two operator schemas first, inside this process only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from statistics import median

import numpy as np

CACHE_DIR = Path(__file__).resolve().parent / ".torch_corpus"

# Run as a script, this directory comes first on sys.path, and its kernels.py would stand
# in for the `kernels` package transformers imports: this script imports nothing of it.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
EXPORTERS = ("dynamo", "torchscript")
OPSETS = {"dynamo": 18, "torchscript": 17}
RTOL = 1e-3
ATOL = 1e-4
SEED = 0


# ---------------------------------------------------------------------------
# The corpus: each entry builds a torch module in eval mode and its example inputs.
# ---------------------------------------------------------------------------

Inputs = dict[str, np.ndarray]


@dataclass(frozen=True)
class CorpusModel:
    name: str
    source: str
    build: Callable[[], tuple[object, Inputs]]
    inputs: Callable[[], Inputs]
    """The same inputs as `build`'s, without torch (a cached export needs only these)."""


def import_torchvision():
    """torchvision, importable beside a torch it was not built with.

    Its package import registers fake (meta) kernels for `torchvision::nms` and `qnms`,
    which fails when its compiled library did not load and so never declared them.
    Declaring the two schemas first is enough: the models never run these operators.
    """
    import torch

    if not hasattr(import_torchvision, "library"):
        try:
            torch.ops.torchvision.nms.default  # noqa: B018 - loaded from the real library
        except (AttributeError, RuntimeError):
            library = torch.library.Library("torchvision", "DEF")
            library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            library.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            import_torchvision.library = library  # kept alive: dropping it undefines them
    import torchvision

    return torchvision


def _image(size: int = 224, channels: int = 3) -> Inputs:
    rng = np.random.default_rng(SEED)
    return {"pixels": rng.standard_normal((1, channels, size, size)).astype(np.float32)}


def _clip(frames: int = 8, size: int = 112, channels: int = 3) -> Inputs:
    """A short video clip, [N, C, T, H, W]."""
    rng = np.random.default_rng(SEED)
    shape = (1, channels, frames, size, size)
    return {"clip": rng.standard_normal(shape).astype(np.float32)}


def _tokens(vocab: int, length: int = 16, *, mask: bool = True) -> Inputs:
    rng = np.random.default_rng(SEED)
    inputs = {"input_ids": rng.integers(0, vocab, size=(1, length), dtype=np.int64)}
    if mask:
        attention = np.ones((1, length), dtype=np.int64)
        attention[0, length - 3 :] = 0  # padded tail: the mask matters
        inputs["attention_mask"] = attention
    return inputs


class _FirstTensor:
    """Wraps a module whose output is a tuple, dict or model output, keeping the first
    tensor (a segmentation model's "out", a transformer's last hidden state)."""

    @staticmethod
    def wrap(module, keywords: tuple[str, ...] = ()):
        """`keywords`: pass the inputs by these names (transformers' forward methods take
        optional arguments between the ones exported)."""
        import torch

        class FirstTensor(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                if keywords:
                    out = self.inner(**dict(zip(keywords, args)))
                else:
                    out = self.inner(*args)
                if isinstance(out, dict):
                    return next(iter(out.values()))
                if isinstance(out, (tuple, list)):
                    return out[0]
                return out

        return FirstTensor(module).eval()


def _torchvision(builder: str, size: int = 224, **kwargs) -> Callable[[], tuple[object, Inputs]]:
    def build():
        import torch

        models = import_torchvision().models
        torch.manual_seed(SEED)
        family = models.segmentation if hasattr(models.segmentation, builder) else models
        module = getattr(family, builder)(weights=None, **kwargs).eval()
        _randomize_batch_norm(module)
        return _FirstTensor.wrap(module), _image(size)

    return build


def _torchvision_video(builder: str) -> Callable[[], tuple[object, Inputs]]:
    def build():
        import torch

        torch.manual_seed(SEED)
        module = getattr(import_torchvision().models.video, builder)(weights=None).eval()
        _randomize_batch_norm(module)
        return module, _clip()

    return build


def _randomize_batch_norm(module) -> None:
    """Fresh batch norms normalise with mean 0 and variance 1, which hides mistakes in how
    their statistics are used; give them seeded, plausible statistics."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    for layer in module.modules():
        if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm) and layer.running_mean is not None:
            count = layer.running_mean.numel()
            layer.running_mean.copy_(0.1 * torch.randn(count, generator=generator))
            layer.running_var.copy_(0.5 + torch.rand(count, generator=generator))


def _vit_small():
    import torch

    vision_transformer = import_torchvision().models.vision_transformer
    torch.manual_seed(SEED)
    module = vision_transformer.VisionTransformer(
        image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
        num_classes=10,
    )
    # torchvision starts the classifier at zero, which would make every output zero
    torch.nn.init.normal_(module.heads.head.weight, std=0.02)
    return module.eval(), _image(64)


def _swin_small():
    import torch

    swin = import_torchvision().models.swin_transformer
    torch.manual_seed(SEED)
    module = swin.SwinTransformer(
        patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2], num_heads=[2, 4, 8],
        window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10,
    ).eval()
    return module, _image(64)


def _transformer_inputs(kind: str) -> Inputs:
    if kind == "vit":
        return {"pixel_values": _image(32)["pixels"]}
    inputs = _tokens(1000)
    if kind == "t5":
        inputs["decoder_input_ids"] = np.random.default_rng(SEED + 1).integers(
            0, 1000, size=(1, 8), dtype=np.int64
        )
    return inputs


def _transformers_case(model, inputs: Inputs) -> tuple[object, Inputs]:
    """A transformers model in eval mode giving its first output tensor, its inputs
    passed by name."""
    model.config.return_dict = False
    return _FirstTensor.wrap(model.eval(), tuple(inputs)), inputs


def _transformers(kind: str) -> Callable[[], tuple[object, Inputs]]:
    def build():
        import torch

        import_torchvision()  # transformers imports torchvision when it is installed
        import transformers

        torch.manual_seed(SEED)
        small = dict(
            vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=64,
        )
        if kind == "bert":
            model = transformers.BertModel(transformers.BertConfig(**small))
        elif kind == "distilbert":
            config = transformers.DistilBertConfig(
                vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                max_position_embeddings=64,
            )
            model = transformers.DistilBertModel(config)
        elif kind == "gpt2":
            config = transformers.GPT2Config(
                vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=64, use_cache=False
            )
            model = transformers.GPT2Model(config)
        elif kind in ("t5_encoder", "t5"):
            config = transformers.T5Config(
                vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                num_decoder_layers=2, num_heads=4, use_cache=False,
            )
            if kind == "t5_encoder":
                model = transformers.T5EncoderModel(config)
            else:
                model = transformers.T5Model(config)
        elif kind == "vit":
            config = transformers.ViTConfig(
                image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=128,
            )
            model = transformers.ViTModel(config, add_pooling_layer=False)
        else:
            raise ValueError(kind)
        return _transformers_case(model, _transformer_inputs(kind))

    return build


CORPUS: tuple[CorpusModel, ...] = (
    CorpusModel("resnet18", "torchvision", _torchvision("resnet18"), _image),
    CorpusModel("mobilenet_v2", "torchvision", _torchvision("mobilenet_v2"), _image),
    CorpusModel("mobilenet_v3_small", "torchvision", _torchvision("mobilenet_v3_small"), _image),
    CorpusModel("efficientnet_b0", "torchvision", _torchvision("efficientnet_b0"), _image),
    CorpusModel("shufflenet_v2_x0_5", "torchvision", _torchvision("shufflenet_v2_x0_5"), _image),
    CorpusModel("squeezenet1_0", "torchvision", _torchvision("squeezenet1_0"), _image),
    CorpusModel("densenet121", "torchvision", _torchvision("densenet121"), _image),
    CorpusModel(
        "googlenet", "torchvision", _torchvision("googlenet", aux_logits=False, init_weights=True),
        _image,
    ),
    CorpusModel("regnet_x_400mf", "torchvision", _torchvision("regnet_x_400mf"), _image),
    CorpusModel(
        "deeplabv3_mobilenet_v3_large",
        "torchvision",
        _torchvision("deeplabv3_mobilenet_v3_large", weights_backbone=None, aux_loss=False),
        _image,
    ),
    CorpusModel("r3d_18", "torchvision", _torchvision_video("r3d_18"), _clip),
    CorpusModel("vit_small", "torchvision", _vit_small, lambda: _image(64)),
    CorpusModel("swin_small", "torchvision", _swin_small, lambda: _image(64)),
    CorpusModel("bert", "transformers", _transformers("bert"), lambda: _transformer_inputs("bert")),
    CorpusModel("distilbert", "transformers", _transformers("distilbert"), lambda: _transformer_inputs("distilbert")),
    CorpusModel("gpt2", "transformers", _transformers("gpt2"), lambda: _transformer_inputs("gpt2")),
    CorpusModel("t5_encoder", "transformers", _transformers("t5_encoder"), lambda: _transformer_inputs("t5_encoder")),
    CorpusModel("t5", "transformers", _transformers("t5"), lambda: _transformer_inputs("t5")),
    CorpusModel("hf_vit", "transformers", _transformers("vit"), lambda: _transformer_inputs("vit")),
)

# Further architectures (`--further`): what the corpus does not hold, in the same small
# configurations: VGG, AlexNet, MNASNet, RegNetY, ConvNeXt, MobileNetV3-Large, ResNeXt,
# ShuffleNetV2 x1.0 (58-channel branches), EfficientNetV2, LR-ASPP, the factored and
# mixed 3-D convolutions of R(2+1)D and MC3 (230 and 460 middle channels), and from
# transformers ALBERT, RoBERTa, ELECTRA, Llama (RMS norm, rotary positions, grouped
# heads), wav2vec2 (1-D convolutions over 8000 samples, 399 frames), SegFormer, DeiT and
# MobileViT.


def _audio(samples: int = 8000) -> Inputs:
    rng = np.random.default_rng(SEED)
    return {"input_values": rng.standard_normal((1, samples)).astype(np.float32)}


def _further_inputs(kind: str) -> Inputs:
    if kind == "wav2vec2":
        return _audio()
    if kind in ("segformer", "deit", "mobilevit"):
        return {"pixel_values": _image(64)["pixels"]}
    return _tokens(1000, 32)


def _further_transformers(kind: str) -> Callable[[], tuple[object, Inputs]]:
    def build():
        import torch

        import_torchvision()
        import transformers as hf

        torch.manual_seed(SEED)
        text = {
            "vocab_size": 1000, "hidden_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 256,
        }  # fmt: skip
        if kind == "albert":
            model = hf.AlbertModel(hf.AlbertConfig(
                **{**text, "num_hidden_layers": 4}, embedding_size=32, max_position_embeddings=128))
        elif kind == "roberta":
            model = hf.RobertaModel(hf.RobertaConfig(**text, max_position_embeddings=130))
        elif kind == "electra":
            model = hf.ElectraModel(hf.ElectraConfig(**text, embedding_size=64, max_position_embeddings=128))
        elif kind == "llama":
            model = hf.LlamaModel(hf.LlamaConfig(
                **text, num_key_value_heads=2, max_position_embeddings=128, use_cache=False))
        elif kind == "wav2vec2":
            model = hf.Wav2Vec2Model(hf.Wav2Vec2Config(
                hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4))
        elif kind == "segformer":
            model = hf.SegformerModel(hf.SegformerConfig(
                num_encoder_blocks=2, depths=[1, 1], sr_ratios=[4, 2], hidden_sizes=[16, 32],
                num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2]))
        elif kind == "deit":
            model = hf.DeiTModel(hf.DeiTConfig(
                image_size=64, patch_size=8, hidden_size=96, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=192), add_pooling_layer=False)
        elif kind == "mobilevit":
            model = hf.MobileViTModel(hf.MobileViTConfig(
                image_size=64, hidden_sizes=[64, 80, 96],
                neck_hidden_sizes=[16, 16, 24, 48, 64, 80, 320]))
        else:
            raise ValueError(kind)
        return _transformers_case(model, _further_inputs(kind))

    return build


FURTHER: tuple[CorpusModel, ...] = (
    *(
        CorpusModel(name, "torchvision", _torchvision(name, **kwargs), _image)
        for name, kwargs in (
            ("vgg11", {}), ("alexnet", {}), ("mnasnet0_5", {}), ("regnet_y_400mf", {}),
            ("convnext_tiny", {}), ("mobilenet_v3_large", {}), ("resnext50_32x4d", {}),
            ("shufflenet_v2_x1_0", {}), ("efficientnet_v2_s", {}),
            ("lraspp_mobilenet_v3_large", {"weights_backbone": None}),
        )
    ),
    CorpusModel("r2plus1d_18", "torchvision", _torchvision_video("r2plus1d_18"), _clip),
    CorpusModel("mc3_18", "torchvision", _torchvision_video("mc3_18"), _clip),
    *(
        CorpusModel(kind, "transformers", _further_transformers(kind), lambda kind=kind: _further_inputs(kind))
        for kind in ("albert", "roberta", "electra", "llama", "wav2vec2", "segformer", "deit", "mobilevit")
    ),
)
MODELS = CORPUS + FURTHER


def model_entry(name: str) -> CorpusModel:
    return next(entry for entry in MODELS if entry.name == name)


# ---------------------------------------------------------------------------
# One case (model, exporter): runs in a worker process.
# ---------------------------------------------------------------------------


@dataclass
class CaseResult:
    model: str
    exporter: str
    status: str = "failed"
    detail: str = ""
    compile_s: float | None = None
    strato_ms: float | None = None
    onnxruntime_ms: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    output_scale: float | None = None
    """The largest magnitude of onnxruntime's outputs (a zero scale compares nothing)."""
    nodes: int | None = None
    op_types: list[str] = field(default_factory=list)
    stage: str = "export"
    """How far the case got: export, import, compile, run, match (compared) or done (ok)."""
    stage_s: dict[str, float] = field(default_factory=dict)
    """Seconds spent in each compile stage (import, then each pass of the pipeline; the
    last pass's time includes the target's build, e.g. LLVM's optimisation and codegen)."""
    current: str | None = None
    """The compile stage running when the worker last reported (a timed-out case's)."""

    @property
    def slowest_stage(self) -> str | None:
        if not self.stage_s:
            return None
        stage, seconds = max(self.stage_s.items(), key=lambda item: item[1])
        return f"{stage} {seconds:.0f}s"

    @property
    def ratio(self) -> float | None:
        if self.strato_ms is None or not self.onnxruntime_ms:
            return None
        return self.strato_ms / self.onnxruntime_ms


def export(entry: CorpusModel, exporter: str, rebuild: bool) -> tuple[Path, Inputs]:
    """The model exported by `exporter` (from the cache when it is there, without
    importing torch) and its inputs."""
    path = CACHE_DIR / f"{entry.name}.{exporter}.torch-{version('torch')}.onnx"
    if path.exists() and not rebuild:
        return path, entry.inputs()
    import torch

    module, inputs = entry.build()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    args = tuple(torch.from_numpy(value) for value in inputs.values())
    partial = path.with_suffix(".partial")
    # nn.MultiheadAttention's inference fast path is one fused aten op that the
    # TorchScript exporter does not know; exported models use the composite form
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            torch.onnx.export(
                module,
                args,
                str(partial),
                input_names=list(inputs),
                output_names=["output"],
                opset_version=OPSETS[exporter],
                dynamo=exporter == "dynamo",
                **({"external_data": False} if exporter == "dynamo" else {}),
            )
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    partial.replace(path)
    return path, inputs


def run_case(
    name: str, exporter: str, repeat: int, rebuild: bool, progress: Path | None = None,
    threads: int = 0, target: str = "llvm",
) -> CaseResult:
    result = CaseResult(name, exporter)

    def report() -> None:
        if progress is not None:
            progress.write_text(json.dumps(asdict(result)))
    entry = model_entry(name)
    try:
        path, inputs = export(entry, exporter, rebuild)
    except Exception as error:  # noqa: BLE001 - reported as this case's status
        result.status = "export failed"
        result.detail = _first_line(f"{type(error).__name__}: {error}")
        return result

    import onnx
    import onnxruntime

    import strato
    from strato.diagnostics import StratoError

    result.stage = "import"
    model = onnx.load(str(path))
    result.nodes = len(model.graph.node)
    result.op_types = sorted({node.op_type for node in model.graph.node})
    initializers = {init.name for init in model.graph.initializer}
    input_names = [value.name for value in model.graph.input if value.name not in initializers]
    feed = {input_name: inputs[input_name] for input_name in input_names}
    arrays = list(feed.values())

    options = onnxruntime.SessionOptions()
    # idle onnxruntime worker threads must not spin while strato is timed
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"]
    )
    theirs = session.run(None, feed)
    result.output_scale = max(float(np.max(np.abs(t))) for t in theirs)

    clock = [time.perf_counter()]
    result.current = "import"
    report()

    def before_stage(stage: str) -> None:
        now = time.perf_counter()
        result.stage = "compile"
        result.stage_s[result.current] = result.stage_s.get(result.current, 0.0) + now - clock[0]
        result.current, clock[0] = stage, now
        report()

    try:
        start = clock[0]
        compiled = strato.compile(
            str(path), target=target, before_stage=before_stage, cache=False,
            threads=threads or None,
        )
        result.compile_s = time.perf_counter() - start
        last = result.current
        before_stage("")  # closes the last pass, with the target's build of the callable
        result.stage_s.pop("", None)
        if last is not None and last in result.stage_s:
            result.stage_s[f"{last}+build"] = result.stage_s.pop(last)
        result.current = None
        result.stage = "run"
        report()
        ours = compiled(*arrays)
    except StratoError as error:
        where = error.location and error.location != str(path)
        result.detail = _first_line(str(error) if where else f"error: {error.message}")
        return result
    except Exception as error:  # noqa: BLE001 - an internal error is this case's status
        result.detail = _first_line(f"internal error: {type(error).__name__}: {error}")
        return result
    result.stage = "match"
    abs_err, rel_err, close = compare(ours, theirs)
    result.max_abs_err, result.max_rel_err = abs_err, rel_err
    # interleaved, so that a change of the machine's load slows both sides alike
    ours_ms, theirs_ms = interleaved_latencies_ms(
        [lambda: compiled(*arrays), lambda: session.run(None, feed)], repeat, warmup=2
    )
    result.strato_ms, result.onnxruntime_ms = median(ours_ms), median(theirs_ms)
    result.status = "ok" if close else "mismatch"
    result.stage = "done" if close else "match"
    return result


def interleaved_latencies_ms(
    runs: list[Callable[[], object]], repeat: int, warmup: int
) -> list[list[float]]:
    """Wall-clock milliseconds of `repeat` calls of each of `runs`, taken in turns (one
    call of each per round) after `warmup` rounds."""
    for _ in range(warmup):
        for run in runs:
            run()
    latencies: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, times in zip(runs, latencies):
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) * 1e3)
    return latencies


def compare(ours: list, theirs: list) -> tuple[float, float, bool]:
    """The largest absolute and relative errors over all outputs, and whether every
    element is within atol + rtol * |reference|."""
    if len(ours) != len(theirs):
        return float("inf"), float("inf"), False
    abs_err = rel_err = 0.0
    close = True
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return float("inf"), float("inf"), False
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        diff = np.abs(a64 - b64)
        if diff.size:
            abs_err = max(abs_err, float(np.nanmax(diff)))
            scale = max(float(np.max(np.abs(b64))), 1e-30)
            rel_err = max(rel_err, abs_err / scale)
        same_nan = np.isnan(a64) == np.isnan(b64)
        within = diff <= ATOL + RTOL * np.abs(b64)
        close = close and bool(np.all(same_nan & (within | np.isnan(b64))))
    return abs_err, rel_err, close


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


# ---------------------------------------------------------------------------
# The driver: one worker process per case, then the table.
# ---------------------------------------------------------------------------


def run_isolated(name: str, exporter: str, args: argparse.Namespace) -> CaseResult:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "result.json"
        progress = Path(scratch) / "progress.json"
        command = [
            sys.executable, __file__, "--case", name, exporter, str(out),
            "--progress", str(progress), "--repeat", str(args.repeat),
            "--threads", str(args.threads), "--target", args.target,
        ] + (["--rebuild"] if args.rebuild else [])
        try:
            completed = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                timeout=args.timeout,
            )
        except subprocess.TimeoutExpired:
            result = CaseResult(name, exporter)
            if progress.exists():
                result = _load_result(json.loads(progress.read_text()))
                if result.current is not None:  # it started when the progress was written
                    elapsed = time.time() - progress.stat().st_mtime
                    result.stage_s[result.current] = elapsed
            where = f" in {result.current}" if result.current else ""
            result.status = "timeout"
            result.detail = f"timed out after {args.timeout:g} s{where}"
            return result
        if out.exists():
            return CaseResult(**json.loads(out.read_text()))
        how = (
            f"signal {-completed.returncode}" if completed.returncode < 0
            else f"exit status {completed.returncode}"
        )
        tail = [line for line in completed.stderr.splitlines() if line.strip()][-1:]
        result = CaseResult(name, exporter)
        if progress.exists():
            result = _load_result(json.loads(progress.read_text()))
        where = f" in {result.current}" if result.current else ""
        result.status = "failed"
        result.detail = f"crashed ({how}){where}" + (f": {tail[0].strip()}" if tail else "")
        return result


def _load_result(record: dict) -> CaseResult:
    fields = set(CaseResult.__dataclass_fields__)
    return CaseResult(**{key: value for key, value in record.items() if key in fields})


def status_text(result: CaseResult, width: int = 0) -> str:
    if result.status == "ok":
        text = f"ok (max err {result.max_abs_err:.1e})"
    elif result.status == "mismatch":
        text = f"mismatch: max abs err {result.max_abs_err:.2e}, rel {result.max_rel_err:.2e}"
    else:
        text = f"{result.status}: {result.detail}"
    if width and len(text) > width:
        text = text[: width - 3] + "..."
    return text


def print_table(results: list[CaseResult], width: int) -> None:
    def number(value: float | None, fmt: str) -> str:
        width = int(fmt.split(".")[0])
        return f"{'-':>{width}s}" if value is None else format(value, fmt)

    header = (
        f"{'model':28s} {'exporter':11s} {'stage':7s} {'compile s':>9s} {'strato ms':>10s} "
        f"{'ort ms':>9s} {'ratio':>7s}  status"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.model:28s} {r.exporter:11s} {r.stage:7s} {number(r.compile_s, '9.1f')} "
            f"{number(r.strato_ms, '10.2f')} {number(r.onnxruntime_ms, '9.2f')} "
            f"{number(r.ratio, '7.1f')}  {status_text(r, width)}"
        )
    print(summary_line(results))


def summary_line(results: list[CaseResult]) -> str:
    ok = sum(r.status == "ok" for r in results)
    return f"{ok} of {len(results)} match onnxruntime (rtol {RTOL:g}, atol {ATOL:g})"


def markdown_table(results: list[CaseResult]) -> str:
    """The table as markdown: one row a case, the status in full."""

    def number(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    def reached(r: CaseResult, stage: str) -> str:
        order = ("export", "import", "compile", "run", "match", "done")
        if order.index(r.stage) > order.index(stage):
            return "yes"
        return "no" if r.status != "timeout" else "timeout"

    lines = [
        "| model | exporter | import | compile | match | compile s | slowest stage "
        "| max abs err | strato ms | ort ms | ratio | status |",
        "|---|---|---|---|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        match = {"ok": "yes", "mismatch": "no"}.get(r.status, "-")
        err = "-" if r.max_abs_err is None else f"{r.max_abs_err:.1e}"
        status = status_text(r).replace("|", "\\|")
        lines.append(
            f"| {r.model} | {r.exporter} | {reached(r, 'import')} | {reached(r, 'compile')} "
            f"| {match} | {number(r.compile_s, '.1f')} | {r.slowest_stage or '-'} | {err} "
            f"| {number(r.strato_ms, '.2f')} | {number(r.onnxruntime_ms, '.2f')} "
            f"| {number(r.ratio, '.1f')} | {status} |"
        )
    lines.append("")
    lines.append(summary_line(results))
    return "\n".join(lines) + "\n"


def write_outputs(results: list[CaseResult], args: argparse.Namespace) -> None:
    if args.json:
        Path(args.json).write_text(
            json.dumps([asdict(r) | {"ratio": r.ratio} for r in results], indent=1)
        )
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(results))


def print_kernel_profile(name: str, exporter: str, args: argparse.Namespace) -> None:
    """`--kernels`: both profiles of one model side by side, slowest first."""
    import onnx

    from strato.bench.kernel_profile import profile_kernels, profile_onnxruntime
    from strato.runtime.threads import available_cores

    entry = model_entry(name)
    path, inputs = export(entry, exporter, args.rebuild)
    model = onnx.load(str(path), load_external_data=False)
    initializers = {init.name for init in model.graph.initializer}
    names = [value.name for value in model.graph.input if value.name not in initializers]
    feed = {input_name: inputs[input_name] for input_name in names}
    threads = args.threads or available_cores()
    repeat = max(args.repeat, 10)
    ours = profile_kernels(path, list(feed.values()), threads=threads, repeat=repeat)
    theirs = profile_onnxruntime(path, feed, threads=threads, repeat=repeat)
    their_total = sum(node.ms for node in theirs)
    by_type: dict[str, float] = {}
    for node in theirs:
        by_type[node.op_type] = by_type.get(node.op_type, 0.0) + node.ms
    print(
        f"\n{name} / {exporter}, {threads} thread(s): strato {ours.total_ms:.2f} ms in "
        f"{sum(row.calls for row in ours.rows)} kernel calls, onnxruntime {their_total:.2f} ms "
        f"in {len(theirs)} nodes (sum of node times)"
    )
    kinds = sorted(ours.by_kind.items(), key=lambda item: -item[1])
    types = sorted(by_type.items(), key=lambda item: -item[1])
    print(f"\n{'strato kernel kind':52s} {'ms':>7s}   {'onnxruntime op type':28s} {'ms':>7s}")
    for row in range(min(args.top, max(len(kinds), len(types)))):
        left = f"{kinds[row][0][:52]:52s} {kinds[row][1]:7.3f}" if row < len(kinds) else " " * 60
        right = f"{types[row][0][:28]:28s} {types[row][1]:7.3f}" if row < len(types) else ""
        print(f"{left}   {right}")
    print(f"\n{'strato kernel':52s} {'calls':>5s} {'ms':>7s}   {'onnxruntime node':40s} {'ms':>7s}")
    for row in range(min(args.top, max(len(ours.rows), len(theirs)))):
        if row < len(ours.rows):
            kernel = ours.rows[row]
            left = f"{kernel.kernel[:52]:52s} {kernel.calls:5d} {kernel.ms:7.3f}"
        else:
            left = " " * 66
        if row < len(theirs):
            node = theirs[row]
            right = f"{(node.op_type + ' ' + node.node)[:40]:40s} {node.ms:7.3f}"
        else:
            right = ""
        print(f"{left}   {right}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", action="append", metavar="NAME", choices=[e.name for e in MODELS],
        help="run this model only (repeatable)",
    )
    parser.add_argument(
        "--further", action="store_true",
        help="run the further architectures instead of the corpus (see FURTHER)",
    )
    parser.add_argument("--exporter", choices=EXPORTERS, help="one exporter only")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="write the table as markdown")
    parser.add_argument(
        "--resume", action="store_true",
        help="keep the cases already in --json and run only the others",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per side")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    parser.add_argument("--rebuild", action="store_true", help="export again, ignoring the cache")
    parser.add_argument(
        "--threads", type=int, default=0,
        help="threads of both sides (default: strato's available cores, onnxruntime's default)",
    )
    parser.add_argument(
        "--target", default="llvm",
        help="strato's target string, e.g. 'llvm -winograd' (default llvm)",
    )
    parser.add_argument(
        "--kernels", metavar="NAME", choices=[e.name for e in MODELS],
        help="profile this model: per-kernel time beside onnxruntime's per-node profile",
    )
    parser.add_argument("--top", type=int, default=25, help="--kernels: rows of each table")
    parser.add_argument("--width", type=int, default=110, help="status column width (0: full)")
    parser.add_argument(
        "--show", nargs="+", metavar="JSON", help="print the table of earlier --json results"
    )
    parser.add_argument("--case", nargs=3, metavar=("NAME", "EXPORTER", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--progress", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.resume and not args.json:
        parser.error("--resume needs --json")

    if args.case:
        name, exporter, out = args.case
        progress = Path(args.progress) if args.progress else None
        result = run_case(
            name, exporter, args.repeat, args.rebuild, progress, args.threads, args.target
        )
        Path(out).write_text(json.dumps(asdict(result)))
        return 0

    if args.show:
        records = [record for path in args.show for record in json.loads(Path(path).read_text())]
        results = [_load_result(record) for record in records]
        print_table(results, args.width)
        if args.markdown:
            Path(args.markdown).write_text(markdown_table(results))
        return 0

    if args.kernels:
        exporters = [args.exporter] if args.exporter else list(EXPORTERS)
        for exporter in exporters:
            print_kernel_profile(args.kernels, exporter, args)
        return 0

    names = args.only or [entry.name for entry in (FURTHER if args.further else CORPUS)]
    exporters = [args.exporter] if args.exporter else list(EXPORTERS)
    results: list[CaseResult] = []
    if args.resume and Path(args.json).exists():
        results = [_load_result(record) for record in json.loads(Path(args.json).read_text())]
    done = {(r.model, r.exporter) for r in results}
    for name in names:
        for exporter in exporters:
            if (name, exporter) in done:
                continue
            result = run_isolated(name, exporter, args)
            results.append(result)
            print(
                f"  {name} / {exporter}: strato {result.strato_ms} ms, onnxruntime "
                f"{result.onnxruntime_ms} ms: {status_text(result)}",
                file=sys.stderr,
                flush=True,
            )
            write_outputs(results, args)  # after every case: an interrupted run keeps them
    print_table(results, args.width)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
