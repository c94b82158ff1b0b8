"""Compiled models saved to one file and run again without compiling.

    model = strato.compile("resnet18")
    model.save("resnet18.strato")            # or: strato compile resnet18 -o resnet18.strato
    model = strato.load("resnet18.strato")   # no compilation: the machine code is loaded
    (logits,) = model(x)

A `.strato` file is a zip archive (stored, not compressed: loading is a copy):

    manifest.json   what the model is and what it was compiled for (below)
    model.o         the object file MCJIT compiled for the entry (`strato.targets.llvm.jit`)
    kernels/S.o     the object file of each kernel compiled apart, by symbol S
                    (`strato.targets.llvm.kernel_objects`), which the entry calls
    model.ll        the entry's LLVM IR (compressed), then kernels/S.ll each kernel's: for
                    `llvm_ir` (linked into one module when asked for) and `object_code()`
    weights.bin     the model's weights, one aligned blob (`strato.runtime.weight_blob`),
                    when it has large constants; the manifest maps each weight symbol
                    the object imports to its [offset, size] in it

The manifest records the format and strato's version, the target string, the machine
(triple, CPU, CPU features), the entry symbol and its ABI, the functions the object
imports, its kernels' symbols, the inputs and outputs (names, shapes, dtypes), the
bounds of its run-time sizes (`size_limits`, when it has any), and each member's size (the
zip archive holds each member's CRC-32). Loading checks all of it before any byte
reaches LLVM: a file that is not such an archive, is truncated or damaged, was written
by another strato, or holds code for a CPU this machine is not, is a `ModelFileError`
naming the file and the reason.

The compile cache (`strato.runtime.cache`) stores its entries in the same format; the
llvm target registers it with `strato.runtime.saved_model`, which `strato.load`
dispatches through.

A `.strato` file is machine code that runs in the loading process: load only files you
trust, as with any native library. The checks above catch damaged and mismatched files,
not crafted ones.
"""

from __future__ import annotations

import ctypes
import dataclasses
import io
import json
import os
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from strato.diagnostics import StratoError
from strato.runtime.atomic_write import write_atomically
from strato.runtime.saved_model import MANIFEST, ModelFileError
from strato.runtime.signature import (
    Signature,
    SizeLimit,
    TensorSpec,
    data_address,
)
from strato.runtime.weight_blob import ALIGNMENT, EMPTY, WeightBlob
from strato.targets.llvm.model import LLVMCompiledModel, MachineCode

FORMAT = "strato-model"
FORMAT_VERSION = 2
OBJECT = "model.o"
LLVM_IR = "model.ll"
KERNEL_DIR = "kernels/"
WEIGHTS = "weights.bin"
ENTRY_ABI = "buffers-inputs-then-outputs;i32-status"
"""The entry takes one pointer per input then one per output and returns a status
(`strato.targets.llvm.entry_abi`)."""

_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""A kernel symbol, as it names an archive member."""

X86_64_LEVELS: dict[str, frozenset[str]] = {
    "x86-64": frozenset({"cx8", "fxsr", "mmx", "sse", "sse2"}),
    "x86-64-v2": frozenset({"cx16", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"}),
    "x86-64-v3": frozenset(
        {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}
    ),
    "x86-64-v4": frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
}
"""The x86-64 psABI levels (each also needs the features of the levels before it): CPU
names whose instructions can be checked against this machine's features."""


def model_to_bytes(model: LLVMCompiledModel) -> bytes:
    """The `.strato` archive of `model`."""
    from strato import __version__

    code = model.machine_code
    if code is None or model.entry_symbol is None:
        raise StratoError(
            f"a model compiled for '{model.target}' cannot be saved (it has no machine code)"
        )
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "strato_version": __version__,
        "target": model.target,
        "machine": {"triple": code.triple, "cpu": code.cpu, "features": code.features},
        "entry": {"symbol": model.entry_symbol, "abi": ENTRY_ABI},
        "imports": list(code.imports),
        "inputs": [_spec_json(spec) for spec in model.inputs],
        "outputs": [_spec_json(spec) for spec in model.outputs],
        "members": {OBJECT: _member_json(code.object_code)},
        "kernels": [compiled.symbol for compiled in code.objects],
    }
    if model.signature.limits:
        manifest["size_limits"] = [dataclasses.asdict(limit) for limit in model.signature.limits]
    # a view: the zip archive copies the bytes once
    weights = memoryview(code.weights.data) if code.weights.symbols else None
    if weights is not None:
        manifest["weights"] = {name: list(place) for name, place in code.weights.symbols.items()}
        manifest["members"][WEIGHTS] = _member_json(weights)
    objects = {f"{KERNEL_DIR}{compiled.symbol}.o": compiled.object_code for compiled in code.objects}
    texts: dict[str, bytes] = {}
    if model.ir_parts and len(model.ir_parts) == len(code.objects) + 1:
        texts[LLVM_IR] = model.ir_parts[0].encode()
        for compiled, text in zip(code.objects, model.ir_parts[1:], strict=True):
            texts[f"{KERNEL_DIR}{compiled.symbol}.ll"] = text.encode()
    elif model.has_llvm_ir:
        texts[LLVM_IR] = model.llvm_ir.encode()
    for name, content in (*objects.items(), *texts.items()):
        manifest["members"][name] = _member_json(content)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
        archive.writestr(OBJECT, code.object_code)
        for name, content in objects.items():
            archive.writestr(name, content)
        if weights is not None:
            archive.writestr(WEIGHTS, weights)
        for name, content in texts.items():
            # text: compressed (a tenth of its size); read only when asked for
            archive.writestr(name, content, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
    return buffer.getvalue()


def save_model(model: LLVMCompiledModel, path: str | os.PathLike) -> None:
    """Write `model` to `path` as a `.strato` archive, whole or not at all."""
    write_atomically(path, model_to_bytes(model), what="the compiled model")


def model_from_archive(source: str | IO[bytes], where: str) -> LLVMCompiledModel:
    """The model of a `.strato` archive (a path or a binary file), ready to call;
    `where` names it in errors (the loader of this format: `strato.load`)."""
    manifest, members = read_archive(source, where)
    signature = Signature(
        tuple(_spec_from_json(item, where) for item in manifest["inputs"]),
        tuple(_spec_from_json(item, where) for item in manifest["outputs"]),
    )
    signature = dataclasses.replace(
        signature, limits=tuple(_limit_from_json(item, signature, where) for item in manifest.get("size_limits", ()))
    )
    machine = manifest["machine"]
    check_machine(machine, where)
    symbols = manifest["kernels"]
    kernels = tuple(
        SavedKernel(symbol, members[f"{KERNEL_DIR}{symbol}.o"], _text(members, f"{KERNEL_DIR}{symbol}.ll"))
        for symbol in symbols
    )
    code = MachineCode(
        members[OBJECT],
        tuple(manifest["imports"]),
        machine["triple"],
        machine["cpu"],
        machine["features"],
        weights=_weights(manifest, members, where),
        objects=kernels,
    )
    entry_symbol = manifest["entry"]["symbol"]
    run = _load_entry(
        code,
        entry_symbol,
        len(signature.inputs) + len(signature.outputs),
        where,
        sizes=len(signature.sizes),
    )
    llvm_ir = _text(members, LLVM_IR)
    parts = (llvm_ir, *(kernel.llvm_ir for kernel in kernels)) if kernels else ()
    return LLVMCompiledModel(
        signature,
        run,
        target=manifest["target"],
        llvm_ir=llvm_ir if not kernels else None,
        entry_symbol=entry_symbol,
        machine_code=code,
        origin=where,
        ir_parts=parts if llvm_ir is not None and all(k.llvm_ir is not None for k in kernels) else (),
    )


@dataclass(frozen=True)
class SavedKernel:
    """A kernel's object as an archive holds it (`MachineCode.objects`)."""

    symbol: str
    object_code: bytes
    llvm_ir: str | None
    imports: tuple[str, ...] = ()


def _text(members: dict[str, bytes], name: str) -> str | None:
    content = members.get(name)
    return content.decode(errors="replace") if content is not None else None


def _weights(manifest: dict[str, Any], members: dict[str, bytes], where: str) -> WeightBlob:
    """The weight blob of an archive, each symbol's place checked against its bytes."""
    symbols = manifest.get("weights", {})
    content = members.get(WEIGHTS, b"")
    if not isinstance(symbols, dict) or (symbols and WEIGHTS not in members):
        raise ModelFileError(f"corrupt {MANIFEST}: weights without {WEIGHTS}", location=where)
    places: dict[str, tuple[int, int]] = {}
    for name, place in symbols.items():
        if not (
            isinstance(place, list)
            and len(place) == 2
            and all(isinstance(n, int) and n >= 0 for n in place)
            and place[0] % ALIGNMENT == 0
            and place[0] + place[1] <= len(content)
        ):
            raise ModelFileError(
                f"corrupt {MANIFEST}: weight {name!r} has no place in {WEIGHTS}", location=where
            )
        places[name] = (place[0], place[1])
    return WeightBlob.from_bytes(content, places) if places else EMPTY


def read_archive(
    source: str | IO[bytes], where: str
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and members of a `.strato` archive (a path or a binary file), every
    field, size and CRC checked (`ModelFileError` otherwise)."""
    from strato import __version__

    def fail(reason: str) -> ModelFileError:
        return ModelFileError(reason, location=where)

    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise fail("not a compiled strato model (not a zip archive)") from None
    except OSError as err:
        raise fail(f"cannot read: {err.strerror or err}") from None
    with archive:
        try:
            manifest = json.loads(archive.read(MANIFEST))
        except KeyError:
            raise fail(f"not a compiled strato model (no {MANIFEST})") from None
        except (ValueError, zipfile.BadZipFile, OSError, EOFError) as err:
            raise fail(f"corrupt {MANIFEST}: {' '.join(str(err).split())}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise fail("not a compiled strato model (unknown manifest format)")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise fail(
                f"written in format version {manifest.get('format_version')!r}; this strato "
                f"reads version {FORMAT_VERSION}: compile the model again"
            )
        if manifest.get("strato_version") != __version__:
            raise fail(
                f"compiled by strato {manifest.get('strato_version')}, this is strato "
                f"{__version__}: compile the model again"
            )
        _check_manifest_fields(manifest, fail)
        members: dict[str, bytes] = {}
        for name, expected in manifest["members"].items():
            try:
                content = archive.read(name)
            except KeyError:
                raise fail(f"corrupt: the archive has no {name}") from None
            except (zipfile.BadZipFile, OSError, EOFError) as err:
                raise fail(f"corrupt {name}: {' '.join(str(err).split())}") from None
            # the archive's CRC-32 of each member caught damage to its bytes
            if len(content) != expected.get("bytes"):
                raise fail(
                    f"corrupt: {name} holds {len(content)} bytes, the manifest says "
                    f"{expected.get('bytes')}"
                )
            members[name] = content
    if OBJECT not in members:
        raise fail(f"corrupt: the manifest lists no {OBJECT}")
    for symbol in manifest["kernels"]:
        if f"{KERNEL_DIR}{symbol}.o" not in members:
            raise fail(f"corrupt: the manifest lists no {KERNEL_DIR}{symbol}.o")
    return manifest, members


def _check_manifest_fields(manifest: dict[str, Any], fail) -> None:
    expected_types = {
        "target": str,
        "machine": dict,
        "entry": dict,
        "imports": list,
        "inputs": list,
        "outputs": list,
        "members": dict,
        "kernels": list,
    }
    for key, kind in expected_types.items():
        if not isinstance(manifest.get(key), kind):
            raise fail(f"corrupt {MANIFEST}: '{key}' is missing or not a {kind.__name__}")
    machine, entry = manifest["machine"], manifest["entry"]
    for key in ("triple", "cpu", "features"):
        if not isinstance(machine.get(key), str):
            raise fail(f"corrupt {MANIFEST}: machine '{key}' is missing")
    if not isinstance(entry.get("symbol"), str):
        raise fail(f"corrupt {MANIFEST}: the entry symbol is missing")
    if entry.get("abi") != ENTRY_ABI:
        raise fail(
            f"its entry follows the ABI {entry.get('abi')!r}, this strato calls {ENTRY_ABI!r}: "
            "compile the model again"
        )
    if not all(isinstance(name, str) for name in manifest["imports"]):
        raise fail(f"corrupt {MANIFEST}: imports are not names")
    if not all(isinstance(name, str) and _SYMBOL.match(name) for name in manifest["kernels"]):
        raise fail(f"corrupt {MANIFEST}: kernels are not symbols")
    for name, member in manifest["members"].items():
        if not isinstance(member, dict):
            raise fail(f"corrupt {MANIFEST}: member {name!r} has no size and checksum")


def check_machine(machine: dict[str, str], where: str) -> None:
    """Refuse code compiled for a machine whose instructions this one may lack: another
    triple, an enabled CPU feature this CPU has not, or another named CPU (only the
    x86-64 psABI levels can be checked feature by feature)."""
    from strato.targets.llvm.host import host_target, system_of

    host = host_target()
    cpu = machine["cpu"]
    if system_of(machine["triple"]) != system_of(host.triple):
        raise ModelFileError(
            f"compiled for {machine['triple']} (CPU {cpu or 'generic'}), this machine is "
            f"{host.triple} (CPU {host.cpu}): run it on such a machine, or compile the model "
            "again here",
            location=where,
        )
    have = {word[1:] for word in host.features.split(",") if word.startswith("+")}
    if machine["features"]:
        needed = {word[1:] for word in machine["features"].split(",") if word.startswith("+")}
        missing = sorted(needed - have)
        if missing:
            raise ModelFileError(
                f"compiled for CPU '{cpu}' with {', '.join(missing[:4])}"
                f"{' ...' if len(missing) > 4 else ''}, which this CPU ({host.cpu}) lacks: "
                "compile the model again on this machine",
                location=where,
            )
        return
    if cpu in ("", host.cpu):
        return
    if cpu in X86_64_LEVELS:
        needed = set()
        for level, features in X86_64_LEVELS.items():
            needed |= features
            if level == cpu:
                break
        missing = sorted(needed - have)
        if not missing:
            return
        reason = f"needs {', '.join(missing)}, which this CPU ({host.cpu}) lacks"
    else:
        reason = f"this CPU is {host.cpu}, and strato cannot check that it has {cpu}'s instructions"
    raise ModelFileError(
        f"compiled for CPU '{cpu}': {reason}; compile the model again for this machine "
        "(or for a CPU such as x86-64-v2)",
        location=where,
    )


def _load_entry(code: MachineCode, symbol: str, buffers: int, where: str, sizes: int = 0):
    """The model's entry from its object code: `run(arrays)` as `build_llvm` makes it
    (`buffers` pointers, then `sizes` run-time sizes)."""
    from strato.targets.llvm.entry_abi import STATUS_OK, raise_for_status
    from strato.targets.llvm.jit import JitError, ObjectModule

    try:
        loaded = ObjectModule(
            code.object_code,
            code.imports,
            code.weights,
            objects=[compiled.object_code for compiled in code.objects],
        )
        address = loaded.address(symbol)
    except JitError as err:
        raise ModelFileError(err.message, location=where) from None
    except KeyError:
        raise ModelFileError(f"corrupt: the object code has no entry {symbol}", location=where) from None
    parameters = [ctypes.c_void_p] * buffers + [ctypes.c_int64] * sizes
    entry = ctypes.CFUNCTYPE(ctypes.c_int32, *parameters)(address)

    def run(arrays: Sequence[np.ndarray | int]) -> None:
        status = entry(
            *[data_address(array) if isinstance(array, np.ndarray) else array for array in arrays]
        )
        if status != STATUS_OK:
            raise_for_status(status, symbol, arrays[buffers:])  # type: ignore[arg-type]

    run.loaded = loaded  # type: ignore[attr-defined]  # keeps the machine code alive
    return run


def _member_json(content: bytes) -> dict[str, Any]:
    return {"bytes": len(content)}


def _spec_json(spec: TensorSpec) -> dict[str, Any]:
    item: dict[str, Any] = {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype.name}
    if spec.dims is not None:
        item["dims"] = list(spec.dims)  # a name at each run-time dimension (-1 in shape)
    return item


def _spec_from_json(item: object, where: str) -> TensorSpec:
    if not (
        isinstance(item, dict)
        and isinstance(item.get("name"), str)
        and isinstance(item.get("shape"), list)
        and isinstance(item.get("dtype"), str)
        and _valid_dims(item["shape"], item.get("dims"))
    ):
        raise ModelFileError(f"corrupt {MANIFEST}: bad input or output {item!r}", location=where)
    dims = item.get("dims")
    return TensorSpec(
        item["name"],
        tuple(item["shape"]),
        _dtype(item["dtype"], where),
        None if dims is None else tuple(dims),
    )


def _limit_from_json(item: object, signature: Signature, where: str) -> SizeLimit:
    """A bound of a run-time size of `signature`, checked."""
    def size(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if not (
        isinstance(item, dict)
        and item.get("name") in signature.sizes
        and size(item.get("least"))
        and (item.get("most") is None or size(item["most"]))
        and isinstance(item.get("why", ""), str)
        and size(item.get("multiple", 1))
        and item.get("multiple", 1) >= 1
    ):
        raise ModelFileError(f"corrupt {MANIFEST}: bad size limit {item!r}", location=where)
    return SizeLimit(
        item["name"], item["least"], item.get("most"), item.get("why", ""), item.get("multiple", 1)
    )


def _valid_dims(shape: list, dims: object) -> bool:
    """A static shape without `dims`, or with a name at each -1 and None elsewhere."""
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        return False
    if dims is None:
        return all(d >= 0 for d in shape)
    return (
        isinstance(dims, list)
        and len(dims) == len(shape)
        and any(d == -1 for d in shape)
        and all(
            (d == -1 and isinstance(n, str) and n) or (d >= 0 and n is None)
            for d, n in zip(shape, dims)
        )
    )


def _dtype(name: str, where: str) -> np.dtype:
    from strato.dialects.tensor_types import element_types_and_dtypes

    for _, dtype in element_types_and_dtypes():
        if dtype.name == name:
            return dtype
    try:
        return np.dtype(name)
    except TypeError:
        raise ModelFileError(f"corrupt {MANIFEST}: unknown dtype '{name}'", location=where) from None


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ModelFileError",
    "check_machine",
    "model_from_archive",
    "model_to_bytes",
    "read_archive",
    "save_model",
]
