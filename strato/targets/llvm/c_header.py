"""The C header of a compiled model's entry point.

    strato compile mlp -o mlp.o      # also writes mlp.h:

    int32_t mlp_run(const float *input, float *logits);

Every tensor is a dense row-major buffer the caller owns: inputs are only read, outputs
are written whole. The function returns `<NAME>_OK` (0), or `<NAME>_OUT_OF_MEMORY` (1)
when an intermediate buffer could not be allocated (the outputs are then unspecified).
The object file holds the model's weights (`CompiledModel.object_code` defines the weight
symbols from `CompiledModel.weights`) and the thread pool of its parallel loops
(`strato.targets.llvm.parallel_runtime.define_runtime_in`), so nothing else is linked for
them; it needs the C library (`malloc`, `free`, `aligned_alloc`), libm and pthreads:

    cc main.c mlp.o -lm -lpthread
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import llvmlite
import llvmlite.binding as llvm
import numpy as np

from strato import __version__
from strato.runtime.batched import BatchEntry
from strato.runtime.signature import Signature, TensorSpec, c_identifier
from strato.targets.llvm.entry_abi import STATUS_OK, STATUS_OUT_OF_MEMORY, batch_symbol

if TYPE_CHECKING:
    from strato.targets.llvm.sized_entry import SizedModels

_C_TYPES = {
    "float32": "float",
    "float64": "double",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "bool": "bool",
}


def c_element_type(dtype: np.dtype) -> str:
    """The C type of one element; types C lacks (float16, bfloat16, the 8-bit floats)
    are passed as unsigned integers of their size holding the same bits."""
    name = _C_TYPES.get(np.dtype(dtype).name)
    if name is not None:
        return name
    return f"uint{np.dtype(dtype).itemsize * 8}_t"


def llvm_version() -> str:
    """The LLVM version strato's LLVM IR is written for (the one inside llvmlite)."""
    return ".".join(str(part) for part in llvm.llvm_version_info)


def _parameter_names(names: Sequence[str], taken: Sequence[str] = ()) -> list[str]:
    """`names` as distinct C identifiers, none of them in `taken` (`x`, `x_2`, ...)."""
    result: list[str] = []
    for original in names:
        name = c_identifier(original)
        candidate, suffix = name, 1
        while candidate in result or candidate in taken:
            suffix += 1
            candidate = f"{name}_{suffix}"
        result.append(candidate)
    return result


def _parameters(specs: list[TensorSpec], inputs: int) -> tuple[list[str], list[str], list[str]]:
    """The C parameters of the buffers `specs` (the first `inputs` of them read), their
    names, and a comment line each."""
    names = _parameter_names([spec.name for spec in specs])
    parameters = []
    comments = []
    for index, (spec, name) in enumerate(zip(specs, names, strict=True)):
        is_input = index < inputs
        const = "const " if is_input else ""
        parameters.append(f"{const}{c_element_type(spec.dtype)} *{name}")
        role = "input " if is_input else "output"
        comments.append(f" * {role} {name}: {spec}")
    return parameters, names, comments


def c_header(entry_symbol: str, signature: Signature, batch: BatchEntry | None = None) -> str:
    """The text of a C header declaring `entry_symbol` with the buffers of `signature`,
    and with `batch`, the entry that runs `count` samples (`strato.runtime.batched`)."""
    specs = [*signature.inputs, *signature.outputs]
    parameters, names, comments = _parameters(specs, len(signature.inputs))
    # the run-time sizes the entry takes after the buffers (`Signature.sizes`)
    sizes = _parameter_names(signature.sizes, taken=names)
    macros: dict[str, int] = {}
    if sizes:
        from strato.targets.llvm.sized_entry import STATUS_NO_SUCH_SIZE

        comments.append(
            " * then each size of the named dimensions above, as the buffers have it: "
            + ", ".join(f"{c} ('{n}')" for n, c in zip(signature.sizes, sizes, strict=True))
        )
        macro = entry_symbol.removesuffix("_run").upper()
        limits = [
            f"{c} {limit.bound.describe()}"
            for n, c in zip(signature.sizes, sizes, strict=True)
            for limit in signature.limits
            if limit.name == n
        ]
        limits += [
            f"{sizes[k]} other than {' + '.join(f'{c} * {sizes[j]}' if c != 1 else sizes[j] for j, c in terms)}"
            + (f" + {constant}" if constant else "")
            for k, constant, terms in signature.size_sums
        ]
        if limits:
            comments.append(
                f" * (a negative size, or one out of its bounds, returns {macro}_NO_SUCH_SIZE: "
                + ", ".join(limits) + ")"
            )
        else:
            comments.append(f" * (a negative size returns {macro}_NO_SUCH_SIZE)")
        parameters += [f"int64_t {c}" for c in sizes]
        macros["NO_SUCH_SIZE"] = STATUS_NO_SUCH_SIZE
    declaration = f"int32_t {entry_symbol}({', '.join(parameters) or 'void'});"
    if batch is not None:
        count = c_identifier(batch.dimension) or "count"
        declaration += (
            f"\nint32_t {batch_symbol(entry_symbol)}(int64_t {count}{', ' if parameters else ''}"
            f"{', '.join(parameters)});"
        )
        comments.append(
            f" * {batch_symbol(entry_symbol)} runs {count} samples of '{batch.dimension}' at once: each "
            "buffer shown with its first"
        )
        comments.append(
            f" * dimension of 1 above holds {count} of them (its first dimension is {count}),"
            " sample after sample;"
        )
        shared = [name for name, size in zip(names, batch.sample_bytes, strict=True) if size is None]
        if shared:
            comments.append(f" * {', '.join(shared)}: one for all samples, as above.")
    return _header(entry_symbol, comments, declaration, macros)


def sized_c_header(sized: SizedModels) -> str:
    """The text of a C header declaring the dispatcher of `sized` (each open dimension's
    size, then the buffers) and the entry of each size it holds
    (`strato.targets.llvm.sized_entry`)."""
    from strato.targets.llvm.sized_entry import STATUS_NO_SUCH_SIZE

    entry = sized.entry_symbol
    macro = entry.removesuffix("_run").upper()
    first = sized.sizes[0][1].signature
    parameters, _, _ = _parameters([*first.inputs, *first.outputs], len(first.inputs))
    dims = [f"int64_t {c_identifier(dim) or f'dim{k}'}" for k, dim in enumerate(sized.dims)]
    declarations = [f"int32_t {entry}({', '.join([*dims, *parameters])});"]
    comments = [
        f" * {entry} takes the size of each open dimension ({', '.join(sized.dims)}), then",
        " * the buffers, and runs the entry compiled for those sizes, or returns",
        f" * {macro}_NO_SUCH_SIZE. The sizes compiled, each with its own entry:",
    ]
    samples = sized.samples or (None,) * len(sized.sizes)
    for (values, model), per_sample in zip(sized.sizes, samples, strict=True):
        symbol = sized.symbol_of(values)
        signature = model.signature
        size_parameters, _, size_comments = _parameters(
            [*signature.inputs, *signature.outputs], len(signature.inputs)
        )
        declarations.append(f"int32_t {symbol}({', '.join(size_parameters) or 'void'});")
        comments.append(f" *   {sized.size_name(values)}: {symbol}")
        if per_sample is not None:
            dim = sized.dims[per_sample[0]]
            comments.append(
                f" *   (and any {dim} with the other sizes: {symbol} once per sample, each "
                f"buffer holding {dim} samples one after the other)"
            )
        comments.extend(" *  " + line.removeprefix(" *") for line in size_comments)
    return _header(entry, comments, "\n".join(declarations), {"NO_SUCH_SIZE": STATUS_NO_SUCH_SIZE})


def _header(
    entry_symbol: str, comments: list[str], declaration: str, statuses: dict[str, int] | None = None
) -> str:
    prefix = entry_symbol.removesuffix("_run")
    macro = prefix.upper()
    extra = [f"#define {macro}_{name} {value}" for name, value in (statuses or {}).items()]
    lines = [
        f"/* {entry_symbol}: a model compiled by strato {__version__}.",
        " *",
        " * Link with the object file that strato wrote beside this header (it holds the",
        " * weights and the thread pool of parallel loops), the C library, libm and",
        " * pthreads, e.g.",
        f" *     cc main.c {prefix}.o -lm -lpthread",
        " * (a cross compiler for an object compiled for another machine). The LLVM IR form",
        f" * (.ll) is for LLVM {llvm_version()} (as in llvmlite {llvmlite.__version__}); it declares",
        " * the weights as external constants, whose bytes are CompiledModel.weights, and",
        " * calls strato_parallel_for, the thread pool, when it has parallel loops.",
        " * Buffers are dense row-major arrays owned by the caller:",
        *comments,
        f" * Returns {macro}_OK, or {macro}_OUT_OF_MEMORY when an intermediate buffer could not",
        " * be allocated (the outputs are then unspecified). Safe to call again.",
        " */",
        f"#ifndef STRATO_{macro}_H",
        f"#define STRATO_{macro}_H",
        "",
        "#include <stdbool.h>",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        f"#define {macro}_OK {STATUS_OK}",
        f"#define {macro}_OUT_OF_MEMORY {STATUS_OUT_OF_MEMORY}",
        *extra,
        "",
        declaration,
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* STRATO_{macro}_H */",
        "",
    ]
    return "\n".join(lines)
