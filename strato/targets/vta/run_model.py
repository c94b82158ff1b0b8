"""Run a model with its conv2d layers on the VTA simulator: `python -m strato.vta.run_model resnet18`.

    python -m strato.vta.run_model resnet18                      # ImageNet size, 2 virtual threads
    python -m strato.vta.run_model resnet18 --image-size 32 --width 16 --virtual-threads 1
    python -m strato.vta.run_model model.onnx

The model (a zoo name or an .onnx file) is imported, batch-norms are folded
(graph-simplify-inference) and graph-quantize makes its conv2d and dense layers int8 with
power-of-two scales calibrated on `--samples` random inputs. Then one random input runs
twice: on the reference semantics of every graph op (numpy), and with every conv2d the
VTA template takes (all but the 3-channel first layer) compiled and run on the simulator,
the rest on the reference semantics. The two outputs must be bit-exact (exit 1 if not).
Per offloaded layer the simulator's counters, cycles and compute utilization are printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from strato.diagnostics import StratoError


def _load(model: str, image_size: int | None, width: int | None):
    from strato import zoo
    from strato.frontends.onnx.importer import import_model

    if model.endswith(".onnx"):
        return import_model(model)
    options = {}
    if image_size is not None:
        options["image_size"] = image_size
    if width is not None:
        options["width"] = width
    return import_model(zoo.build_model(model, **options))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a zoo model name (resnet18) or an .onnx file")
    parser.add_argument("--virtual-threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2, help="calibration samples (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--image-size", type=int, default=None, help="zoo models: input height and width")
    parser.add_argument("--width", type=int, default=None, help="zoo models: channels of the first stage")
    args = parser.parse_args(argv)
    from strato.context import make_context
    from strato.interpreters.graph import entry_function, run_graph
    from strato.targets.vta.graph import run_graph_on_vta
    from strato.targets.vta.graph_quantize import GraphQuantizePass
    from strato.transforms.graph_simplify_inference import GraphSimplifyInferencePass

    try:
        start = time.perf_counter()
        module = _load(args.model, args.image_size, args.width)
        ctx = make_context()
        GraphSimplifyInferencePass().apply(ctx, module)
        GraphQuantizePass(samples=args.samples, seed=args.seed).apply(ctx, module)
        print(f"imported, folded and quantized in {time.perf_counter() - start:.1f} s")
        entry = entry_function(module)
        rng = np.random.default_rng(args.seed + 1)
        inputs = [rng.uniform(-1, 1, t.get_shape()).astype(np.float32) for t in entry.function_type.inputs.data]
        start = time.perf_counter()
        want = run_graph(module, inputs)
        reference_seconds = time.perf_counter() - start
        start = time.perf_counter()
        got, layers = run_graph_on_vta(module, inputs, virtual_threads=args.virtual_threads)
        vta_seconds = time.perf_counter() - start
    except StratoError as error:
        print(f"strato: {error}", file=sys.stderr)
        return 1
    print(f"{len(layers)} conv2d layers on the VTA simulator, {args.virtual_threads} virtual thread(s)")
    print(f"{'layer':28} {'input':>16} {'weights':>18} {'gemm uops':>10} {'alu uops':>9} {'DMA kB':>8} {'cycles':>10} {'util':>6}")
    total_cycles = total_gemm = 0
    for layer in layers:
        c = layer.report.counters
        moved = (c.inp_load_nbytes + c.wgt_load_nbytes + c.acc_load_nbytes + c.uop_load_nbytes + c.out_store_nbytes) / 1024
        cycles = layer.report.cycles
        total_cycles += cycles.total_cycles
        total_gemm += cycles.gemm_cycles
        print(
            f"{layer.name[:28]:28} {'x'.join(map(str, layer.input_shape)):>16} "
            f"{'x'.join(map(str, layer.weight_shape)):>18} {c.gemm_counter:>10} {c.alu_counter:>9} {moved:>8.0f} "
            f"{cycles.total_cycles:>10} {100 * cycles.compute_utilization:>5.1f}%"
        )
    if layers:
        print(f"all offloaded layers: {total_cycles} cycles, utilization {100 * total_gemm / total_cycles:.1f}%")
        print(f"cycle model: {layers[0].report.cycles.params.describe()}")
    exact = all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    print(
        f"outputs {'bit-exact' if exact else 'DIFFER'} against the numpy int8 reference of the quantized graph "
        f"(reference {reference_seconds:.1f} s, with VTA {vta_seconds:.1f} s)"
    )
    return 0 if exact else 1
