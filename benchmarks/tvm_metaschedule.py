"""ResNet-18 and MobileNetV2 tuned by TVM MetaSchedule and by strato's tuner, same trials.

    python benchmarks/tvm_metaschedule.py                         # both models, 64 trials each, 2 threads
    python benchmarks/tvm_metaschedule.py --trials 128 --models resnet18
    python benchmarks/tvm_metaschedule.py --image-size 64         # a quick check on small images

Each model is built by strato.zoo and serialized once; TVM and strato read the same ONNX
bytes (their SHA-256 is printed). Per model, with the same budget of N trials (measured
candidates) for the whole model:

- TVM: relax.frontend.onnx.from_onnx, the CPU legalization and fusion passes, then
  MetaSchedule's tune_relax (XGBoost cost model, evolutionary search, gradient task
  scheduler, local builder and runner) with max_trials_global = N, for the target
  {"kind": "llvm", "mcpu": <host>, "num-cores": threads}, TVM_NUM_THREADS = threads. The
  builder's build function skips importing TVM's GPU tensor intrinsics (see build_for_cpu:
  with the stock one, no candidate built within its timeout here). Its
  work directory is under /tmp. It runs in a child process, so a crash or a hang in TVM
  is reported for that model and the benchmark goes on; the child also compiles the
  tuned module once (compile_relax) to show that it builds.
- strato: strato.autotuning.tune_model with N trials, each candidate measured on
  `threads` threads, into a fresh tuning log; then strato.compile(model, threads=...,
  tuning=log).

Tuning wall time is the tuner call alone (TVM: task extraction and tune_relax; strato:
tune_model), in the same process state for both (nothing else of this benchmark runs
meanwhile). After both tunings, one run measures onnxruntime, strato untuned, strato
tuned and TVM tuned at the same thread count, interleaved (strato.bench's timing: a
warm-up call whose outputs are checked against onnxruntime's, then rounds of one call per
side), and prints median latencies and their ratios to onnxruntime.

TVM's thread pool runs with TVM_THREAD_POOL_SPIN_COUNT=0 in the timing process, so its
workers do not spin on the second core while another side runs. `--reuse --work-dir D`
times again the tunings a run left in D.

Without TVM (the optional `bench` extra), the TVM columns say so and the rest still runs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

MODELS = ("resnet18", "mobilenet_v2")
TVM_TUNE_TIMEOUT = 3600.0
"""Seconds TVM's child process may take for one model before it is stopped."""


# ---------------------------------------------------------------------------
# TVM's side, run in a child process: `--tvm-child ONNX WORKDIR TRIALS THREADS SEED`
# ---------------------------------------------------------------------------


def metaschedule_module():
    """TVM's MetaSchedule package: tvm.s_tir.meta_schedule (0.2x) or tvm.meta_schedule."""
    for name in ("tvm.s_tir.meta_schedule", "tvm.meta_schedule"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("this TVM has no MetaSchedule (neither tvm.s_tir.meta_schedule nor tvm.meta_schedule)")


def tvm_target(threads: int):
    import tvm

    from strato.targets.llvm.host import host_target

    return tvm.target.Target({"kind": "llvm", "mcpu": host_target().cpu, "num-cores": threads})


def relax_module(model):
    """The Relax module of an ONNX model with static input shapes (weights as constants)."""
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    initializers = {init.name for init in model.graph.initializer}
    shapes, dtypes = {}, {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        shapes[value.name] = [d.dim_value for d in tensor.shape.dim]
        dtypes[value.name] = str(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    return from_onnx(model, shape_dict=shapes, dtype_dict=dtypes)


def fused_for_tuning(module, target):
    """The passes compile_relax runs before it applies the database (library dispatch,
    legalization, fusion), so the tuned tasks are the functions it looks up."""
    import tvm
    from tvm.relax import pipeline

    try:
        dispatch = pipeline.library_dispatch_passes(target)
        legalize = pipeline.legalize_passes(target)
    except (AttributeError, ValueError):
        from tvm import relax

        dispatch = []
        legalize = [
            relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR(),
        ]  # fmt: skip
    with target, tvm.transform.PassContext(opt_level=3):
        return tvm.transform.Sequential([*dispatch, *legalize])(module)


def build_for_cpu(mod, target, _params):
    """MetaSchedule's build of one candidate, without its default build's first step,
    importing every tensor intrinsic TVM has (CUDA, ROCm, Hexagon, ...): that takes 21 s in
    each builder process, and the builder starts new processes for every round, so with its
    30 s build timeout every candidate of the run failed to build here. A CPU f32 candidate
    does not name those intrinsics when it is built (tensorization happened when it was
    scheduled, in the tuning process). Runs in the builder's worker (pickled by value)."""
    from tvm.driver import build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)


def tvm_child(onnx_path: str, work_dir: str, trials: int, threads: int, seed: int, per_iter: int) -> int:
    """Tune the model with MetaSchedule into work_dir, compile it once with the records,
    and write what happened to work_dir/result.json."""
    os.environ["TVM_NUM_THREADS"] = str(threads)
    import onnx

    ms = metaschedule_module()
    model = onnx.load(onnx_path)
    result: dict[str, object] = {"stage": "import"}

    def save() -> None:
        with open(os.path.join(work_dir, "result.json"), "w") as out:
            json.dump(result, out)

    save()
    target = tvm_target(threads)
    module = relax_module(model)
    result["stage"] = "task extraction"
    save()
    start = time.perf_counter()
    fused = fused_for_tuning(module, target)
    tasks = ms.relax_integration.extract_tasks(fused, target)
    result["tasks"] = len(tasks)
    if per_iter <= 0:  # every task gets at least one round within the budget
        per_iter = max(1, min(64, trials // max(1, len(tasks))))
    result["trials_per_iter"] = per_iter
    result["stage"] = "tune_relax"
    save()
    builder = ms.builder.LocalBuilder(f_build=build_for_cpu, timeout_sec=120.0)
    database = ms.relax_integration.tune_relax(
        fused, None, target, work_dir, max_trials_global=trials, num_trials_per_iter=per_iter, seed=seed,
        builder=builder,
    )  # fmt: skip
    result["tune_seconds"] = time.perf_counter() - start
    result["measured"] = len(database)
    result["stage"] = "compile_relax"
    save()
    start = time.perf_counter()
    ms.relax_integration.compile_relax(database, module, target, None)
    result["compile_seconds"] = time.perf_counter() - start
    result["stage"] = "done"
    save()
    return 0


@dataclass
class TvmTuning:
    ok: bool
    note: str
    """One line: what failed (stage and reason), or the task count and trials per round."""
    tune_seconds: float | None = None
    child_seconds: float = 0.0
    measured: int | None = None
    work_dir: str = ""


def tune_with_tvm(onnx_path: str, work_dir: str, args) -> TvmTuning:
    """MetaSchedule in a child process; its output goes to work_dir/tvm.log. With --reuse,
    a finished tuning already in work_dir is taken as it is."""
    os.makedirs(work_dir, exist_ok=True)
    if args.reuse:
        try:
            with open(os.path.join(work_dir, "result.json")) as f:
                done = json.load(f)
        except (OSError, ValueError):
            done = {}
        if done.get("stage") == "done":
            note = f"{done['tasks']} tasks, {done['trials_per_iter']} trials a round (reused)"
            return TvmTuning(True, note, float(done["tune_seconds"]), 0.0, int(done["measured"]), work_dir)
    command = [
        sys.executable, os.path.abspath(__file__), "--tvm-child", onnx_path, work_dir,
        str(args.trials), str(args.threads), str(args.seed), str(args.tvm_trials_per_iter),
    ]  # fmt: skip
    environment = dict(os.environ, TVM_NUM_THREADS=str(args.threads))
    start = time.perf_counter()
    with open(os.path.join(work_dir, "tvm.log"), "w") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment, start_new_session=True)
        code = wait_for_child(child, log.name, args.tvm_timeout)
    seconds = time.perf_counter() - start
    try:
        with open(os.path.join(work_dir, "result.json")) as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = {"stage": "start"}
    where = f"during {result.get('stage')}"
    if code is None:
        return TvmTuning(False, f"timed out after {args.tvm_timeout:.0f} s {where}", child_seconds=seconds)
    if code != 0 or result.get("stage") != "done":
        if code is not None and code < 0:
            reason = f"crashed ({signal.Signals(-code).name}{crash_frame(os.path.join(work_dir, 'tvm.log'))})"
        elif code == 0:
            reason = "stopped"
        else:
            reason = f"failed (exit code {code}): {last_error_line(os.path.join(work_dir, 'tvm.log'))}"
        return TvmTuning(False, f"{reason} {where}; log {work_dir}/tvm.log", child_seconds=seconds)
    note = f"{result['tasks']} tasks, {result['trials_per_iter']} trials a round"
    return TvmTuning(
        True, note, float(result["tune_seconds"]), seconds, int(result["measured"]), work_dir
    )


def wait_for_child(child: subprocess.Popen, log_path: str, timeout: float) -> int | None:
    """The child's exit code; None when it ran out of time. TVM's own segfault handler
    prints a backtrace and may take minutes to exit (or never does): once the log shows
    it, the child gets 30 s and is then stopped, reported as SIGSEGV."""
    deadline = time.monotonic() + timeout
    crashed_at = None
    while True:
        try:
            return child.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if crashed_at is None and "Segfault encountered" in read_text(log_path):
            crashed_at = now
        if now > deadline or (crashed_at is not None and now > crashed_at + 30.0):
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return -int(signal.SIGSEGV) if crashed_at is not None else None


def crash_frame(log_path: str) -> str:
    """`, in tvm::...` : the innermost TVM frame of the backtrace TVM's handler printed."""
    for line in read_text(log_path).splitlines():
        if " in tvm::" in line:
            return ", in " + line.split(" in ", 1)[1].strip()[:120]
    return ""


def read_text(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def last_error_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no log"
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[:200]
    return lines[-1][:200] if lines else "no output"


# ---------------------------------------------------------------------------
# The sides measured after tuning
# ---------------------------------------------------------------------------


def tuned_tvm_side(threads: int):
    """strato bench's TVM Relax side, compiled with the MetaSchedule records of a work
    directory (compile_relax) for the target with num-cores."""
    from strato.bench.peers import Prepared, TvmRelax

    class TvmMetaSchedule(TvmRelax):
        name = "TVM tuned"

        def __init__(self, work_dir: str) -> None:
            super().__init__(threads)
            self.work_dir = work_dir

        def target(self):
            self._tvm()
            return tvm_target(threads)

        def prepare(self, model, inputs) -> Prepared:
            tvm = self._tvm()
            from tvm import relax

            ms = metaschedule_module()
            database = ms.database.JSONDatabase(work_dir=self.work_dir)
            start = time.perf_counter()
            executable = ms.relax_integration.compile_relax(database, relax_module(model), self.target(), None)
            vm = relax.VirtualMachine(executable, tvm.cpu())
            seconds = time.perf_counter() - start
            main = vm["main"]
            arguments = [tvm.runtime.tensor(array, tvm.cpu()) for array in inputs]
            configure = tvm.get_global_func("runtime.config_threadpool")

            def run():
                out = main(*arguments)
                return [out.numpy()] if hasattr(out, "numpy") else [item.numpy() for item in out]

            @contextlib.contextmanager
            def runs(count: int):
                configure(1, count)
                yield run

            return Prepared(seconds, runs)

    return TvmMetaSchedule


def strato_prepared(model, inputs, threads: int, tuning: str | None):
    """strato.compile for `threads` threads (with a tuning log or without), ready to run."""
    import strato
    from strato.bench.peers import Prepared

    start = time.perf_counter()
    compiled = strato.compile(model, target="llvm", threads=threads, tuning=tuning)
    seconds = time.perf_counter() - start
    run = lambda: compiled(*inputs)  # noqa: E731
    return Prepared(seconds, lambda _threads: contextlib.nullcontext(run))


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------


@dataclass
class ModelReport:
    name: str
    digest: str
    tvm: TvmTuning | None = None
    strato_seconds: float | None = None
    strato_trials: int | None = None
    strato_tasks: int | None = None
    strato_failure: str | None = None
    compile_seconds: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    """side -> max relative error against onnxruntime, or why it could not run."""


def tvm_missing() -> str | None:
    if importlib.util.find_spec("tvm") is None:
        return "TVM is not installed (apache-tvm, the optional `bench` extra: pip install -e '.[bench]')"
    try:
        metaschedule_module()
    except ImportError as error:
        return str(error)
    return None


def bench_model(name: str, args, scratch: str, no_tvm: str | None) -> ModelReport:
    import onnx

    from strato import zoo
    from strato.autotuning import tune_model
    from strato.bench.peers import OnnxRuntime
    from strato.bench.runner import BenchOptions, WorkloadResult, measure_at, one_line, seeded_inputs

    options = {"image_size": args.image_size} if args.image_size else {}
    model_bytes = zoo.build_model(name, seed=args.seed, **options).SerializeToString()
    digest = hashlib.sha256(model_bytes).hexdigest()[:16]
    onnx_path = os.path.join(scratch, f"{name}.onnx")
    with open(onnx_path, "wb") as out:
        out.write(model_bytes)
    model = onnx.load_from_string(model_bytes)
    report = ModelReport(name, digest)
    say(f"{name}: ONNX sha256 {digest}..., {len(model_bytes) / 2**20:.1f} MiB")

    if no_tvm is None:
        say(f"{name}: TVM MetaSchedule tuning, {args.trials} trials")
        report.tvm = tune_with_tvm(onnx_path, os.path.join(scratch, f"{name}-tvm"), args)
        say(f"{name}: TVM {'tuned' if report.tvm.ok else 'FAILED'}: {report.tvm.note}")

    say(f"{name}: strato tuning, {args.trials} trials")
    log = os.path.join(scratch, f"{name}-strato.jsonl")
    summary = os.path.join(scratch, f"{name}-strato.json")
    start = time.perf_counter()
    try:
        if args.reuse and os.path.exists(log) and os.path.exists(summary):
            with open(summary) as f:
                done = json.load(f)
            report.strato_seconds, report.strato_trials, report.strato_tasks = done["seconds"], done["trials"], done["tasks"]
        else:
            results = tune_model(model, args.trials, log, seed=args.seed, name=name, threads=args.threads)
            report.strato_seconds = time.perf_counter() - start
            report.strato_trials = sum(r.trials for r in results)
            report.strato_tasks = len(results)
            with open(summary, "w") as out:
                json.dump({"seconds": report.strato_seconds, "trials": report.strato_trials, "tasks": report.strato_tasks}, out)
    except Exception as error:  # noqa: BLE001 - reported, the rest still runs
        report.strato_failure = one_line(error)
        log = None
    say(f"{name}: strato tuned in {report.strato_seconds or 0:.0f} s" if log else
        f"{name}: strato tuning FAILED: {report.strato_failure}")

    say(f"{name}: compiling the sides and timing them")
    inputs = seeded_inputs(model, args.seed)
    prepare = {
        "onnxruntime": lambda: OnnxRuntime().prepare(model, inputs),
        "strato untuned": lambda: strato_prepared(model, inputs, args.threads, None),
    }
    if log is not None:
        prepare["strato tuned"] = lambda: strato_prepared(model, inputs, args.threads, log)
    if report.tvm is not None and report.tvm.ok:
        side = tuned_tvm_side(args.threads)(report.tvm.work_dir)
        prepare["TVM tuned"] = lambda: side.prepare(model, inputs)
    result = WorkloadResult(name, "model", None)
    prepared = {}
    for side_name, make in prepare.items():
        try:
            prepared[side_name] = make()
            report.compile_seconds[side_name] = prepared[side_name].compile_seconds
        except Exception as error:  # noqa: BLE001
            result.failures[side_name] = f"compile: {one_line(error)}"
    bench = BenchOptions(threads=[args.threads], repeat=args.repeat, seconds=args.seconds, rtol=args.rtol)
    if "onnxruntime" in prepared:
        measure_at(result, prepared, args.threads, bench, "onnxruntime")
    for entry in result.measurements:
        report.latency_ms[entry.side] = entry.median_ms
    for check in result.checks:
        if check.problem is not None:
            report.errors[check.peer] = check.problem
        else:
            mark = "" if check.ok else f" (above {args.rtol:g})"
            report.errors[check.peer] = f"{check.max_relative_error:.1e}{mark}"
    for side_name, failure in result.failures.items():
        report.errors[side_name] = failure
    return report


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def print_report(reports: list[ModelReport], args, no_tvm: str | None) -> None:
    print()
    print(f"trials per model: {args.trials} for each tuner; threads: {args.threads}; "
          f"latency: median of up to {args.repeat} calls, sides interleaved")
    if no_tvm is not None:
        print(f"TVM: not measured: {no_tvm}")
    sides = ["onnxruntime", "strato untuned", "strato tuned", "TVM tuned"]
    for report in reports:
        print(f"\n{report.name} (ONNX sha256 {report.digest}...)")
        tvm = report.tvm
        if tvm is None:
            tvm_tuning = "not run (TVM absent)"
        elif tvm.ok:
            child = f"; child process {tvm.child_seconds:.0f} s" if tvm.child_seconds else ""
            tvm_tuning = f"{tvm.tune_seconds:7.1f} s ({tvm.measured} records; {tvm.note}{child})"
        else:
            tvm_tuning = f"FAILED after {tvm.child_seconds:.0f} s: {tvm.note}"
        if report.strato_failure is not None:
            strato_tuning = f"FAILED: {report.strato_failure}"
        else:
            strato_tuning = f"{report.strato_seconds:7.1f} s ({report.strato_trials} trials over {report.strato_tasks} tasks)"
        print(f"  tuning wall time  TVM MetaSchedule: {tvm_tuning}")
        print(f"                    strato          : {strato_tuning}")
        if tvm is not None and tvm.ok and report.strato_seconds:
            print(f"                    strato / TVM    : {report.strato_seconds / tvm.tune_seconds:.2f}x")
        base = report.latency_ms.get("onnxruntime")
        print(f"  {'side':15s} {'latency ms':>11s} {'/ onnxruntime':>14s} {'/ TVM tuned':>12s} {'compile s':>10s}  outputs vs onnxruntime")
        for side in sides:
            if side == "TVM tuned" and (tvm is None or not tvm.ok):
                reason = "TVM absent" if tvm is None else "TVM tuning failed"
                print(f"  {side:15s} {'-':>11s} {'':>14s} {'':>12s} {'':>10s}  ({reason})")
                continue
            latency = report.latency_ms.get(side)
            compile_s = report.compile_seconds.get(side)
            note = report.errors.get(side, "reference" if side == "onnxruntime" else "")
            if latency is None:
                print(f"  {side:15s} {'-':>11s} {'':>14s} {'':>12s} {'':>10s}  {note}")
                continue
            tvm_ms = report.latency_ms.get("TVM tuned")
            to_base = f"{latency / base:.2f}x" if base else "-"
            to_tvm = f"{latency / tvm_ms:.2f}x" if tvm_ms else "-"
            compiled = f"{compile_s:.1f}" if compile_s is not None else "-"
            print(f"  {side:15s} {latency:11.3f} {to_base:>14s} {to_tvm:>12s} {compiled:>10s}  {note}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--trials", type=int, default=64, help="measured candidates per model, for each tuner (default 64)")
    parser.add_argument("--threads", type=int, default=2, help="threads for tuning and timing, every side (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--image-size", type=int, default=0, help="image height and width (default: the model's 224)")
    parser.add_argument("--repeat", type=int, default=20, help="most timed calls per side (default 20)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timing budget per side once 3 calls are timed")
    parser.add_argument("--rtol", type=float, default=1e-3, help="largest max relative error that agrees")
    parser.add_argument("--tvm-timeout", type=float, default=TVM_TUNE_TIMEOUT, help="seconds TVM may tune one model")
    parser.add_argument("--tvm-trials-per-iter", type=int, default=0,
                        help="MetaSchedule's num_trials_per_iter (default: trials / tasks, at most 64)")
    parser.add_argument("--reuse", action="store_true",
                        help="take the tunings already finished in --work-dir and only time the sides")
    parser.add_argument("--work-dir", default=None, help="where logs and TVM's records go (default: a new /tmp directory, kept)")
    if len(sys.argv) > 1 and sys.argv[1] == "--tvm-child":
        onnx_path, work_dir, trials, threads, seed, per_iter = sys.argv[2:8]
        return tvm_child(onnx_path, work_dir, int(trials), int(threads), int(seed), int(per_iter))
    args = parser.parse_args()
    if args.trials < 1 or args.threads < 1:
        parser.error("--trials and --threads must be positive")
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    # TVM's pool threads spin after a call by default; interleaved with the other sides they
    # would hold the second core while strato or onnxruntime runs (onnxruntime runs with
    # spinning off too). Set before TVM is first imported in this process.
    os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
    if args.reuse and not args.work_dir:
        parser.error("--reuse needs --work-dir")
    scratch = args.work_dir or tempfile.mkdtemp(prefix="strato-tvm-ms-", dir="/tmp")
    os.makedirs(scratch, exist_ok=True)
    no_tvm = tvm_missing()
    if no_tvm is not None:
        say(f"TVM: {no_tvm}; only strato and onnxruntime are measured")
    try:
        load = os.getloadavg()
        say(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cpus; work dir {scratch}")
    except OSError:
        pass
    reports = []
    for name in args.models:
        reports.append(bench_model(name, args, scratch, no_tvm))
        print_report(reports[-1:], args, no_tvm)  # each model's table as soon as it is measured
    if len(reports) > 1:
        print("\n=== all models ===")
        print_report(reports, args, no_tvm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
