"""Kernels compiled for another system, run on this one under qemu-user.

    emulator = emulator_for(machine)                  # the cross linker and qemu command
    outputs, costs = emulator.time_kernel(built, arrays, repeats=3)

A tuning candidate built for a device (`LLVMKernelBuilder` with a foreign machine) is an
object file of that system. A measuring worker that stands in for the device (`strato
worker --emulate`) links the object with a small C program written here, using the
system's GNU cross compiler (Debian's `gcc-aarch64-linux-gnu`, `gcc-riscv64-linux-gnu`),
and runs it under qemu-user with the system's libraries (`-L /usr/aarch64-linux-gnu`).
The program reads the kernel's inputs from a file, calls the kernel once, writes its
outputs, then times repeats of calls as `strato.autotuning.measure.time_built` does in
process: each repeat runs as many calls as last `min_repeat_seconds` and prints the mean
seconds a call (CPU time of its thread on one thread, wall time on more).

Times under an emulator are the emulator's, not the device's; what this checks is that
the candidate builds, links, runs and computes the reference's results on that system.
Only this stand-in needs a C compiler: a worker on the device itself loads the object
into its process through LLVM, with none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from strato.diagnostics import StratoError
from strato.targets.llvm.host import HostTarget, system_of, vector_bits
from strato.targets.llvm.parallel_runtime import IMPORTED_FUNCTIONS, runtime_object
from strato.targets.registry import BuiltKernel

LINK_LIBRARIES = ("-lm", "-lpthread")


@dataclass(frozen=True)
class Emulator:
    """How programs of `machine`'s system are linked (`compiler`) and run here
    (`command`, the program's path and arguments follow)."""

    machine: HostTarget
    compiler: str
    command: tuple[str, ...]

    def time_kernel(
        self,
        built: BuiltKernel,
        arrays: Sequence[np.ndarray],
        *,
        repeats: int,
        min_repeat_seconds: float = 0.005,
        max_calls: int = 1000,
        threads: int = 1,
        timeout: float = 600.0,
    ) -> tuple[list[np.ndarray], list[float]]:
        """Run `built` on `arrays` (one per buffer, outputs included, in parameter order)
        under the emulator: the outputs after the first call, and the seconds a call of
        each of `repeats` timed repeats."""
        if len(arrays) != len(built.buffers):
            raise ValueError(f"@{built.kernel} takes {len(built.buffers)} buffers, got {len(arrays)}")
        with tempfile.TemporaryDirectory(prefix="strato-emulated-") as scratch:
            directory = Path(scratch)
            program = self._link(built, directory, threads)
            inputs = [a for a, (_, _, out) in zip(arrays, built.buffers, strict=True) if not out]
            (directory / "in.bin").write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))
            try:
                ran = subprocess.run(
                    [*self.command, str(program), "in.bin", "out.bin", str(max(1, repeats)),
                     repr(float(min_repeat_seconds)), str(max(1, max_calls))],
                    cwd=directory, capture_output=True, text=True, timeout=timeout, check=False,
                    env={**os.environ, "LC_ALL": "C"},
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"the emulated kernel did not finish within {timeout:g} s") from None
            if ran.returncode != 0:
                reason = ran.stderr.strip().splitlines()[-1:] or [f"exit code {ran.returncode}"]
                raise RuntimeError(f"the emulated kernel failed: {reason[0][:200]}")
            data = (directory / "out.bin").read_bytes()
        outputs, offset = [], 0
        for shape, dtype, is_output in built.buffers:
            if not is_output:
                continue
            count = int(np.prod(shape, dtype=np.int64))
            array = np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(shape)
            outputs.append(array.copy())
            offset += array.nbytes
        costs = [float(line) for line in ran.stdout.split()]
        if offset != len(data) or len(costs) != max(1, repeats):
            raise RuntimeError("the emulated kernel's program wrote an unexpected result")
        return outputs, costs

    def _link(self, built: BuiltKernel, directory: Path, threads: int) -> Path:
        (directory / "kernel.o").write_bytes(built.code)
        objects = ["kernel.o"]
        if set(IMPORTED_FUNCTIONS) & set(built.imports):
            (directory / "runtime.o").write_bytes(runtime_object(self.machine))
            objects.append("runtime.o")
        (directory / "main.c").write_text(timing_driver(built, threads, "runtime.o" in objects))
        linked = subprocess.run(
            # -no-pie: a candidate is compiled as for loading into a process (absolute
            # addresses), not as position-independent code
            [self.compiler, "-std=c11", "-O1", "-no-pie", "-o", "kernel", "main.c", *objects,
             *LINK_LIBRARIES],
            cwd=directory, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if linked.returncode != 0:
            lines = linked.stderr.strip().splitlines()
            reason = [line for line in lines if "error" in line.lower()][:1] or lines[-1:] or [
                f"exit code {linked.returncode}"
            ]
            raise RuntimeError(f"{os.path.basename(self.compiler)} could not link the kernel: {reason[0][:200]}")
        return directory / "kernel"


def timing_driver(built: BuiltKernel, threads: int = 1, has_runtime: bool = False) -> str:
    """The C program that runs and times `built` (see the module docstring); arguments:
    the input file, the output file, repeats, the least seconds a repeat lasts, and the
    most calls a repeat makes."""
    symbol = built.symbol or built.kernel
    count = len(built.buffers)
    clock = "CLOCK_THREAD_CPUTIME_ID" if threads == 1 else "CLOCK_MONOTONIC"
    names = ", ".join(f"b[{i}]" for i in range(count))
    lines = [
        "#define _POSIX_C_SOURCE 200809L",
        "#include <math.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <time.h>",
        "",
        f"extern void {symbol}({', '.join(['void *'] * count) or 'void'});",
        *(["extern void strato_parallel_init(void);"] if has_runtime else []),
        "",
        "static double now(void) {",
        "    struct timespec t;",
        f"    clock_gettime({clock}, &t);",
        "    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;",
        "}",
        "",
        "int main(int argc, char **argv) {",
        "    if (argc != 6) return 4;",
        f"    static const size_t bytes[{max(count, 1)}] = {{"
        + ", ".join(f"{int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize}u" for shape, dtype, _ in built.buffers)
        + "};",
        f"    static const int is_output[{max(count, 1)}] = {{"
        + ", ".join("1" if out else "0" for _, _, out in built.buffers)
        + "};",
        f"    void *b[{max(count, 1)}];",
        *(["    strato_parallel_init();"] if has_runtime else []),
        '    FILE *in = fopen(argv[1], "rb");',
        "    if (!in) return 5;",
        f"    for (int i = 0; i < {count}; i++) {{",
        "        size_t rounded = (bytes[i] + 63) / 64 * 64;",
        "        b[i] = aligned_alloc(64, rounded ? rounded : 64);",
        "        if (!b[i]) return 3;",
        "        memset(b[i], 0, rounded ? rounded : 64);",
        "        if (!is_output[i] && fread(b[i], 1, bytes[i], in) != bytes[i]) return 6;",
        "    }",
        "    fclose(in);",
        f"    {symbol}({names});",
        '    FILE *out = fopen(argv[2], "wb");',
        "    if (!out) return 7;",
        f"    for (int i = 0; i < {count}; i++)",
        "        if (is_output[i]) fwrite(b[i], 1, bytes[i], out);",
        "    fclose(out);",
        "    int repeats = atoi(argv[3]);",
        "    double least = atof(argv[4]);",
        "    long most = atol(argv[5]);",
        "    double start = now();",
        f"    {symbol}({names});",
        "    double once = now() - start;",
        "    if (once < 1e-7) once = 1e-7;",
        "    long number = (long)ceil(least / once);",
        "    if (number > most) number = most;",
        "    if (number < 1) number = 1;",
        "    for (int r = 0; r < repeats; r++) {",
        "        start = now();",
        f"        for (long n = 0; n < number; n++) {symbol}({names});",
        '        printf("%.9e\\n", (now() - start) / (double)number);',
        "    }",
        "    return 0;",
        "}",
        "",
    ]
    return "\n".join(lines)


def emulator_for(machine: HostTarget) -> Emulator:
    """The cross compiler and qemu-user command for `machine`'s system, found on PATH;
    a StratoError naming what is missing and the Debian packages that bring it."""
    system = system_of(machine.triple)
    arch = system[0]
    gnu = "-".join(system)
    compiler = shutil.which(f"{gnu}-gcc")
    qemu = shutil.which(f"qemu-{arch}")
    if compiler is None or qemu is None:
        missing = f"{gnu}-gcc" if compiler is None else f"qemu-{arch}"
        raise StratoError(
            f"running code for {machine.triple} here needs {missing} "
            f"(apt-get install gcc-{gnu} qemu-user)"
        )
    command = [qemu]
    if arch.startswith("riscv"):
        bits = vector_bits(machine)
        if bits > 32:  # the V extension, at the machine's minimum vector length
            command += ["-cpu", f"rv{arch.removeprefix('riscv')},v=true,vlen={bits},vext_spec=v1.0"]
    sysroot = f"/usr/{gnu}"
    if os.path.isdir(sysroot):
        command += ["-L", sysroot]
    return Emulator(machine, compiler, tuple(command))


__all__ = ["Emulator", "emulator_for", "timing_driver"]
