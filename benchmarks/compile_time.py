"""Compile time of models, per stage, cold and warm, next to TVM Relax's build and
onnxruntime's session creation of the same ONNX file, each in a process of its own.

    python benchmarks/compile_time.py                         # resnet18, mobilenet_v2, lstm
    python benchmarks/compile_time.py --all --repeat 3        # every zoo model, medians of 3
    python benchmarks/compile_time.py model.onnx --stages     # an exported file, per stage
    python benchmarks/compile_time.py resnet18 --profile r18.prof   # cProfile of a cold compile
    python benchmarks/compile_time.py resnet18 lstm --candidates      # tuning candidates' builds

For each model (a zoo name or an .onnx path), every measurement runs in a fresh Python
process, after its imports, and reports wall seconds and CPU seconds (the process's and
its children's: the llvm build compiles kernels in forked processes):

* strato cold: `strato.compile` with an empty compile cache;
* strato shared kernels: another model with the same layers and other weights (a zoo
  model's other seed; for a file, its initializers perturbed), with the cache the cold
  compile left: only the entry is compiled, every kernel comes from the cache;
* strato hit: the same model again, a whole-model hit of the compile cache;
* TVM Relax: `relax.frontend.onnx.from_onnx` then `tvm.compile(mod, target="llvm -mcpu=<host>")`,
  untuned, and the VM made (the `bench` extra);
* onnxruntime: creating an `InferenceSession` on the CPU provider (graph optimizations
  included).

The ratio strato cold / TVM is printed per model, with the geometric mean over models.
`--stages` adds the cold compile's stages (import, each pass, then the build: the
distinct kernels compiled in parallel and the entry). The kernels are scheduled where
they are compiled (`LLVMTarget.schedules_in_build`), so "build: kernels" includes the
schedule-default pass's work and that pass's own line is about zero. Under it, the
kernels' CPU seconds by phase, summed over the processes that compiled them
(`kernel_objects.PHASES`: schedule, with its seconds by the templates of each kernel,
kernel keys, the Python lowering to LLVM IR, LLVM's optimization, machine code). On a shared machine, the CPU
seconds are the steadier figure. `--json` writes every measurement.

`--candidates` measures what tuning pays instead, in a process of its own with the
compile cache off: extracting the model's tasks (`strato tune`'s first step), then
building each task's default candidate as a tuner's builder does
(`strato.autotuning.measure.build_candidate`: the kernel scheduled with the config and
compiled alone), with the median and the slowest build.

Both compilers' measured compiles start after their imports (strato's compiler, frontend,
passes, strategies, schedules and llvm target; `tvm` and `relax`), and each side's imports
are reported beside, with the ratio of imports plus compile: what `strato compile` costs
a user in a fresh process against the same for TVM.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "lstm")
SIDES = ("cold", "shared", "hit", "tvm", "onnxruntime")


# -- in the measuring process ---------------------------------------------------------------


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _model(spec: str, variant: bool):
    """The ONNX model of a zoo name or a path; `variant`: the same layers, other weights."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from strato import zoo

    if not spec.endswith(".onnx"):
        return zoo.build_model(spec, seed=1 if variant else 0)
    model = onnx.load(spec)
    if variant:
        rng = np.random.default_rng(1)
        for index, tensor in enumerate(model.graph.initializer):
            array = numpy_helper.to_array(tensor)
            if array.dtype.kind == "f" and array.size > 16:
                changed = (array * (1 + 0.01 * rng.standard_normal(array.shape))).astype(array.dtype)
                model.graph.initializer[index].CopyFrom(numpy_helper.from_array(changed, tensor.name))
    return model


# What a compile for the llvm target imports: loaded before the clock starts, as TVM's side
# loads `tvm` and `relax` before its clock; their time is reported as the side's imports.
STRATO_PACKAGES = (
    "strato.compiler",
    "strato.frontends.onnx",
    "strato.transforms",
    "strato.strategies",
    "strato.schedule",
    "strato.targets.llvm",
)


def _import_strato() -> None:
    import importlib
    import pkgutil

    for name in STRATO_PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=name + "."):
            importlib.import_module(info.name)
    from strato.targets.llvm.host import host_target

    host_target()


def _measure_strato(spec: str, side: str, stages: bool, profile: str | None) -> dict:
    start, cpu_start = time.perf_counter(), _cpu()
    import strato

    _import_strato()
    imports = {"imports_wall": time.perf_counter() - start, "imports_cpu": _cpu() - cpu_start}
    from strato.targets.llvm import build as llvm_build
    from strato.targets.llvm import kernel_objects

    model = _model(spec, variant=side == "shared")
    times: dict[str, list[float]] = {}
    clock = {"stage": "import", "wall": time.perf_counter(), "cpu": _cpu()}

    def switch(stage: str | None) -> None:
        wall, cpu = time.perf_counter(), _cpu()
        entry = times.setdefault(clock["stage"], [0.0, 0.0])
        entry[0] += wall - clock["wall"]
        entry[1] += cpu - clock["cpu"]
        clock.update(stage=stage, wall=wall, cpu=cpu)

    original_kernels = kernel_objects.compile_kernels
    original_build = llvm_build.build_loops
    kernel_counts = {}
    phases: dict[str, float] = {}
    by_template: dict[str, float] = {}

    def compile_kernels(module, build, **kwargs):
        switch("build: kernels")
        progress = kwargs.get("progress")

        def counting(done, total):
            kernel_counts.setdefault("cached", done)
            kernel_counts["total"] = total
            if progress is not None:
                progress(done, total)

        kwargs["progress"] = counting
        try:
            return original_kernels(module, build, **kwargs)
        finally:
            switch("build: entry")

    original_scheduled = getattr(kernel_objects, "schedule_and_compile_kernels", None)

    def schedule_and_compile_kernels(module, build, schedule, **kwargs):
        # the kernels scheduled where they are compiled: the build's kernel stage
        # includes schedule-default's work
        switch("build: kernels")
        try:
            kernels = original_scheduled(module, build, schedule, **kwargs)
        finally:
            switch("build: entry")
        fresh = {kernel.key for kernel in kernels.values() if kernel.fresh}
        distinct = {kernel.key for kernel in kernels.values()}
        kernel_counts.update(cached=len(distinct) - len(fresh), total=len(distinct))
        for kernel in kernels.values():  # CPU seconds, in whichever process built it
            for phase, seconds in getattr(kernel, "seconds", {}).items():
                phases[phase] = phases.get(phase, 0.0) + seconds
            if "schedule" in getattr(kernel, "seconds", {}):
                templates = ", ".join(kernel.templates) or "(none)"
                by_template[templates] = by_template.get(templates, 0.0) + kernel.seconds["schedule"]
        return kernels

    def build_loops(*args, **kwargs):
        switch("build: checks")
        return original_build(*args, **kwargs)

    kernel_objects.compile_kernels = compile_kernels
    if original_scheduled is not None:  # a strato whose build schedules the kernels
        kernel_objects.schedule_and_compile_kernels = schedule_and_compile_kernels
    llvm_build.build_loops = build_loops
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start, cpu_start = time.perf_counter(), _cpu()
    strato.compile(model, name="model", before_stage=switch if stages else None)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu_start
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    switch("done")
    result = {"wall": wall, "cpu": cpu, **imports, **kernel_counts}
    if stages:
        result["stages"] = {stage: pair for stage, pair in times.items() if stage != "import" or pair[0] > 0}
        result["kernel_phases"] = phases
        result["schedule_by_template"] = by_template
    return result


def _measure_tvm(spec: str) -> dict:
    from strato.targets.llvm.host import host_target

    cpu = host_target().cpu
    start, cpu_start = time.perf_counter(), _cpu()
    try:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
    except ImportError:
        return {"error": "not installed (pip install strato[bench])"}
    target = tvm.target.Target({"kind": "llvm", "mcpu": cpu})
    imports = {"imports_wall": time.perf_counter() - start, "imports_cpu": _cpu() - cpu_start}
    model = _model(spec, variant=False)
    start, cpu_start = time.perf_counter(), _cpu()
    try:
        mod = from_onnx(model, keep_params_in_input=False)
        executable = tvm.compile(mod, target=target)
        relax.VirtualMachine(executable, tvm.cpu())
    except Exception as err:  # noqa: BLE001 - TVM raises its own error types per release
        lines = str(err).strip().splitlines()
        return {"error": f"failed: {lines[-1] if lines else type(err).__name__}"}
    return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu_start, **imports}


def _measure_onnxruntime(spec: str) -> dict:
    try:
        import onnxruntime
    except ImportError:
        return {"error": "not installed"}
    data = _model(spec, variant=False).SerializeToString()
    start, cpu_start = time.perf_counter(), _cpu()
    onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu_start}


def measure_candidates(spec: str) -> dict:
    """Task extraction, then one build of each task's default candidate (cache off)."""
    os.environ["STRATO_CACHE"] = "0"
    from strato.autotuning.measure import build_candidate
    from strato.autotuning.task import extract_tasks

    model = _model(spec, variant=False)
    start = time.perf_counter()
    tasks = extract_tasks(model, Path(spec).stem if spec.endswith(".onnx") else spec)
    extract = time.perf_counter() - start
    builds = []
    for task in tasks:
        start = time.perf_counter()
        build_candidate(task, task.default_config())
        builds.append(time.perf_counter() - start)
    return {"tasks": len(tasks), "extract": extract, "builds": builds}


def measure(spec: str, side: str, stages: bool = False, profile: str | None = None) -> dict:
    if side == "tvm":
        return _measure_tvm(spec)
    if side == "onnxruntime":
        return _measure_onnxruntime(spec)
    if side == "candidates":
        return measure_candidates(spec)
    return _measure_strato(spec, side, stages, profile)


# -- the driver ---------------------------------------------------------------------------


def _print_kernel_phases(runs: list[dict]) -> None:
    """The kernels' build by phase (CPU seconds summed over the processes that built
    them), and the schedule's seconds by the templates a kernel's stages took."""
    runs = [run for run in runs if run.get("kernel_phases")]
    if not runs:
        return
    for phase in runs[0]["kernel_phases"]:
        cpu = statistics.median(run["kernel_phases"].get(phase, 0.0) for run in runs)
        print(f"      {phase:26s} {'':7s}        {cpu:7.2f} s CPU")
        if phase == "schedule":
            by_template = runs[0]["schedule_by_template"]
            for templates in sorted(by_template, key=by_template.get, reverse=True):
                cpu = statistics.median(run["schedule_by_template"].get(templates, 0.0) for run in runs)
                print(f"        {templates[:40]:40s} {cpu:7.2f} s CPU")


def _report_candidates(specs: list[str], json_path: str | None) -> int:
    report = {}
    for spec in specs:
        with tempfile.TemporaryDirectory(prefix="strato-cache-") as cache:
            run = run_side(spec, "candidates", Path(cache))
        report[spec] = run
        if "error" in run:
            print(f"{spec}: {run['error']}", flush=True)
            continue
        builds = run["builds"]
        print(
            f"{spec}: {run['tasks']} tasks extracted in {run['extract']:.2f} s; "
            f"one candidate built in {statistics.median(builds):.2f} s (median), "
            f"{max(builds):.2f} s (slowest)",
            flush=True,
        )
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=1))
    return 0


def run_side(spec: str, side: str, cache: Path, *, stages=False, profile=None, timeout=1800) -> dict:
    """One measurement in a fresh process (the compile cache at `cache`)."""
    env = {**os.environ, "STRATO_CACHE": "1", "STRATO_CACHE_DIR": str(cache)}
    command = [sys.executable, __file__, "--measure", side, spec]
    if stages:
        command.append("--stages")
    if profile:
        command += ["--profile", profile]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return {"error": f"exit {done.returncode}: {lines[-1] if lines else ''}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if key in run]
    return statistics.median(values) if values else None


def _cell(runs: list[dict]) -> str:
    errors = [run["error"] for run in runs if "error" in run]
    if errors:
        return errors[0]
    return f"{_median(runs, 'wall'):7.2f} s wall {_median(runs, 'cpu'):7.2f} s CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"zoo names or .onnx paths (default: {' '.join(DEFAULT_MODELS)})")
    parser.add_argument("--all", action="store_true", help="every zoo model")
    parser.add_argument("--repeat", type=int, default=1, help="measurements of each side (median)")
    parser.add_argument("--no-tvm", action="store_true", help="leave TVM out")
    parser.add_argument("--stages", action="store_true", help="the cold compile's stages")
    parser.add_argument("--profile", metavar="OUT.prof", help="cProfile of one cold compile (the first model)")
    parser.add_argument("--json", metavar="PATH", help="write every measurement")
    parser.add_argument("--candidates", action="store_true", help="tuning: task extraction and one build per task")
    parser.add_argument("--measure", choices=(*SIDES, "candidates"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.measure:
        print(json.dumps(measure(args.models[0], args.measure, args.stages, args.profile)))
        return 0

    from strato import zoo

    specs = zoo.zoo_names() if args.all else (args.models or list(DEFAULT_MODELS))
    if args.candidates:
        return _report_candidates(specs, args.json)
    sides = [side for side in SIDES if not (args.no_tvm and side == "tvm")]
    report: dict[str, dict[str, list[dict]]] = {}
    ratios, totals = [], []
    for number, spec in enumerate(specs):
        name = Path(spec).stem if spec.endswith(".onnx") else spec
        results: dict[str, list[dict]] = {side: [] for side in sides}
        for repeat in range(max(1, args.repeat)):
            with tempfile.TemporaryDirectory(prefix="strato-cache-") as cache:
                for side in sides:
                    profile = args.profile if side == "cold" and number == 0 and repeat == 0 else None
                    results[side].append(
                        run_side(spec, side, Path(cache), stages=args.stages and side == "cold", profile=profile)
                    )
        report[name] = results
        print(f"{name}", flush=True)
        labels = {
            "cold": "strato cold",
            "shared": "strato, kernels shared",
            "hit": "strato, cache hit",
            "tvm": "TVM Relax",
            "onnxruntime": "onnxruntime session",
        }
        for side in sides:
            extra = ""
            if side in ("cold", "shared") and "total" in results[side][0]:
                run = results[side][0]
                extra = f"   ({run['total'] - run.get('cached', 0)} of {run['total']} kernels compiled)"
            print(f"  {labels[side]:24s} {_cell(results[side])}{extra}")
        if args.stages and "stages" in results["cold"][0]:
            for stage in results["cold"][0]["stages"]:
                wall = statistics.median(run["stages"][stage][0] for run in results["cold"] if "stages" in run)
                cpu = statistics.median(run["stages"][stage][1] for run in results["cold"] if "stages" in run)
                print(f"    {stage:28s} {wall:7.2f} s wall {cpu:7.2f} s CPU")
                if stage == "build: kernels":
                    _print_kernel_phases(results["cold"])
        for side in ("cold", "tvm"):
            imports = _median(results.get(side, []), "imports_wall")
            if imports is not None:
                total = imports + _median(results[side], "wall")
                print(f"  {labels[side] + ' imports':24s} {imports:7.2f} s wall   (with the compile: {total:.2f} s)")
        ours, theirs = _median(results["cold"], "wall"), _median(results.get("tvm", []), "wall")
        if ours is not None and theirs is not None:
            ratios.append(ours / theirs)
            ours_cpu, theirs_cpu = _median(results["cold"], "cpu"), _median(results["tvm"], "cpu")
            print(f"  strato cold / TVM: {ours / theirs:.2f}x wall, {ours_cpu / theirs_cpu:.2f}x CPU", flush=True)
            ours_total = ours + _median(results["cold"], "imports_wall")
            theirs_total = theirs + _median(results["tvm"], "imports_wall")
            totals.append(ours_total / theirs_total)
            print(f"  strato cold / TVM, imports included: {ours_total / theirs_total:.2f}x wall", flush=True)
    for what, values in (("", ratios), (", imports included", totals)):
        if values:
            mean = math.exp(sum(math.log(r) for r in values) / len(values))
            print(f"geometric mean strato cold / TVM (wall{what}): {mean:.2f}x over {len(values)} model(s)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
