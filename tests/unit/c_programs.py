"""Compiled models linked into C programs and run: a C driver for any model, the link
and the run, for the tests of object files (host and cross-compiled).

    driver = c_driver(model)                       # main.c for model.entry_symbol
    driver = c_driver(size, "m_run", [1, 16])      # the entry of an object of sizes
    program = link_program(tmp_path, model, cc)    # writes m.o, m.h, main.c; links
    outputs = run_program(program, model, inputs)  # through files, optionally under qemu

The driver reads every input's bytes from the file named by its first argument (the
inputs one after the other, as `numpy.ndarray.tobytes` gives them), calls the entry, and
writes every output's bytes to the file named by its second; an entry's status other
than OK is its exit code plus 10.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from strato.targets.llvm.c_header import c_element_type

LINK_LIBRARIES = ("-lm", "-lpthread")
"""What the header says an object needs beside itself."""


def c_driver(
    model, entry: str | None = None, sizes: Sequence[int] = (), after: Sequence[int] = ()
) -> str:
    """The C source of a program that runs `model`'s entry on inputs read from a file:
    or `entry`, an entry taking `sizes` before the buffers (of a model with dynamic
    dimensions, `model` the size it runs); `after`: sizes the entry takes after the
    buffers (a model compiled once for every size)."""
    entry = entry or model.entry_symbol
    prefix = entry[: -len("_run")]
    specs = [*model.inputs, *model.outputs]
    lines = [
        "#include <stdio.h>",
        "#include <stdlib.h>",
        f'#include "{prefix}.h"',
        "",
        "static void *buffer(size_t bytes) {",
        "    void *data = malloc(bytes ? bytes : 1);",
        "    if (!data) exit(3);",
        "    return data;",
        "}",
        "",
        "int main(int argc, char **argv) {",
        "    if (argc != 3) return 4;",
        '    FILE *in = fopen(argv[1], "rb");',
        "    if (!in) return 5;",
    ]
    names = []
    for index, spec in enumerate(specs):
        name = f"b{index}"
        names.append(name)
        count = int(np.prod(spec.shape, dtype=np.int64))
        element = c_element_type(spec.dtype)
        lines.append(f"    size_t n{index} = {count}u;")
        lines.append(f"    {element} *{name} = buffer(n{index} * sizeof({element}));")
        if index < len(model.inputs):
            lines.append(
                f"    if (fread({name}, sizeof({element}), n{index}, in) != n{index}) return 6;"
            )
    lines += [
        "    fclose(in);",
        "    int32_t status = "
        + f"{entry}({', '.join([*(f'{n}LL' for n in sizes), *names, *(f'{n}LL' for n in after)])});",
        f"    if (status != {prefix.upper()}_OK) return 10 + status;",
        '    FILE *out = fopen(argv[2], "wb");',
        "    if (!out) return 7;",
    ]
    for index in range(len(model.inputs), len(specs)):
        lines.append(f"    fwrite(b{index}, 1, n{index} * sizeof(*b{index}), out);")
    lines += ["    fclose(out);", "    return 0;", "}", ""]
    return "\n".join(lines)


def link_program(
    directory: Path, model, cc: Sequence[str], *, extra_flags: Sequence[str] = ()
) -> Path:
    """Write `model`'s object, header and driver into `directory` and link them with
    `cc` (a command: `["gcc"]`, `["aarch64-linux-gnu-gcc"]`); the program's path."""
    prefix = model.entry_symbol[: -len("_run")]
    model.save_object(directory / f"{prefix}.o")
    model.save_c_header(directory / f"{prefix}.h")
    (directory / f"{prefix}_main.c").write_text(c_driver(model))
    program = directory / f"{prefix}_prog"
    build = subprocess.run(
        [*cc, "-std=c11", "-Wall", "-Werror", *extra_flags, "-o", program.name,
         f"{prefix}_main.c", f"{prefix}.o", *LINK_LIBRARIES],
        check=False, cwd=directory, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    return program


def run_program(
    program: Path,
    model,
    inputs: Sequence[np.ndarray],
    *,
    runner: Sequence[str] = (),
    timeout: float = 300,
) -> list[np.ndarray]:
    """Run a program of `link_program` on `inputs` (under `runner`, e.g. qemu); its
    outputs, shaped and typed as `model` declares them."""
    directory = program.parent
    stem = program.name
    (directory / f"{stem}.in").write_bytes(
        b"".join(
            np.ascontiguousarray(x, dtype=spec.dtype).tobytes()
            for x, spec in zip(inputs, model.inputs, strict=True)
        )
    )
    result = subprocess.run(
        [*runner, str(program), f"{stem}.in", f"{stem}.out"],
        check=False, cwd=directory, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "LC_ALL": "C"},
    )  # fmt: skip
    assert result.returncode == 0, (result.returncode, result.stderr)
    data = (directory / f"{stem}.out").read_bytes()
    outputs = []
    offset = 0
    for spec in model.outputs:
        count = int(np.prod(spec.shape, dtype=np.int64))
        array = np.frombuffer(data, dtype=spec.dtype, count=count, offset=offset)
        outputs.append(array.reshape(spec.shape))
        offset += array.nbytes
    assert offset == len(data), (
        f"the program wrote {len(data)} bytes, expected {offset}"
    )
    return outputs


def undefined_symbols(object_path: Path, nm: str = "nm") -> set[str]:
    """The symbols an object file needs from elsewhere (`nm -u`)."""
    listing = subprocess.run(
        [nm, "-u", str(object_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return {line.split()[-1] for line in listing.stdout.splitlines() if line.strip()}
