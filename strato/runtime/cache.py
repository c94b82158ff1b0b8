"""A content-addressed cache of compiled models: compiling the same model again loads
its machine code instead.

    key = cache_key(model_bytes, {"target": ..., "input_shapes": ..., ...})
    model = lookup(key)            # None on a miss (or an unreadable entry)
    ...compile...
    store(key, model)

The key is a SHA-256 over the model's bytes, the compile options, the target (with the
CPU it resolves to: the host's unless the target names one), strato's version and a
fingerprint of strato's own source files and of the libraries that generate its code,
so editing or upgrading strato never serves stale code.
Entries are saved models (`strato.runtime.saved_model`: for the llvm target, `.strato`
archives of machine code) in

    $STRATO_CACHE_DIR, else $XDG_CACHE_HOME/strato, else ~/.cache/strato

written atomically (a killed process leaves no half entry) but not flushed to disk: an
entry that a crash of the machine damaged fails its archive's checksums when read. An
entry that cannot be read back (a damaged file, another strato's format) is removed and
the model compiled again; a
cache directory that cannot be written only costs the speed-up. `strato.compile` writes a
model's entry in a thread of its own (`store_in_background`), so that the model is
returned while its tens of megabytes of weights and code are written; a read of the
cache in the same process waits for the writes under way, and so does the process
before it exits. The cache holds at most
$STRATO_CACHE_MAX_MB megabytes (default 2048): the least recently used entries go first.
`STRATO_CACHE=0` turns the cache off, as does `strato.compile(..., cache=False)`.

Beside whole models, a target keeps the kernels it compiles, by a key of its own
(`store_kernels`, `lookup_kernel`: for the llvm target the object of each scheduled
kernel, `strato.targets.llvm.kernel_objects`), in `kernels/` under the same directory,
size limit and eviction: a model that shares kernels with one compiled before (another
model with the same layer shapes, the same model with one layer changed, a tuning
candidate already measured) compiles only its new ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Collection, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strato.diagnostics import StratoError

if TYPE_CHECKING:
    from strato.runtime.compiled_model import CompiledModel

ENTRY_SUFFIX = ".strato"
KERNEL_SUFFIX = ".kernel"
KERNELS = "kernels"
"""The subdirectory of compiled kernels (a target's own format, by key)."""


def cache_enabled() -> bool:
    """False when the environment turns the cache off (`STRATO_CACHE=0`, `off`, `false`, `no`)."""
    return os.environ.get("STRATO_CACHE", "1").strip().lower() not in ("0", "off", "false", "no")


def cache_dir() -> Path:
    """Where entries live: $STRATO_CACHE_DIR, $XDG_CACHE_HOME/strato or ~/.cache/strato."""
    explicit = os.environ.get("STRATO_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "strato"


@cache
def source_fingerprint() -> str:
    """strato's version, the size and modification time of each of its source files,
    and the versions of the libraries that shape its code (xDSL, llvmlite and its LLVM,
    onnx): changes whenever any of them does."""
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite.binding

    from strato import __version__

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for package in ("xdsl", "llvmlite", "onnx"):
        try:
            digest.update(f"{package}={version(package)}\n".encode())
        except PackageNotFoundError:
            digest.update(f"{package}=?\n".encode())
    digest.update(f"llvm={llvmlite.binding.llvm_version_info}\n".encode())
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


CACHE_VERSION = 1
"""The layout of the cache's keys and entries (a change makes every old entry a miss)."""


def cache_key(model_bytes: bytes | Iterable[bytes], options: dict[str, Any]) -> str:
    """The key of a compilation: the model's bytes (or a sequence of byte strings that
    encodes it unambiguously), `options` (JSON-serializable: target, input shapes, ...),
    strato's version and source fingerprint."""
    digest = hashlib.sha256()
    header = {"format": CACHE_VERSION, "strato": source_fingerprint(), "options": options}
    digest.update(json.dumps(header, sort_keys=True, default=str).encode())
    digest.update(b"\0")
    if isinstance(model_bytes, bytes | bytearray | memoryview):
        digest.update(model_bytes)
    else:
        for chunk in model_bytes:
            digest.update(chunk)
    return digest.hexdigest()


def entry_path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}{ENTRY_SUFFIX}"


def lookup(key: str) -> CompiledModel | None:
    """The cached model of `key`, or None (no entry; an unreadable entry is removed)."""
    from strato.runtime.saved_model import load_model

    wait_for_writes()
    path = entry_path(key)
    if not path.is_file():
        return None
    try:
        model = load_model(path)
    except StratoError:
        _remove(path)
        return None
    model.origin = f"the compile cache ({path})"
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    return model


def store(key: str, model: CompiledModel) -> bool:
    """Save `model` under `key`; False when its target cannot save it, or (with a
    warning) when the cache cannot be written."""
    from strato.runtime.atomic_write import write_atomically

    if not model.can_save:
        return False
    path = entry_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, model.to_bytes(), what="the compile cache entry", durable=False)
    except (OSError, StratoError) as err:
        reason = err.message if isinstance(err, StratoError) else (err.strerror or str(err))
        warnings.warn(f"strato: cannot write the compile cache at {path.parent}: {reason}", stacklevel=3)
        return False
    evict(size_limit(), keep=path)
    return True


_writing: list[threading.Thread] = []
"""The background writes of `store_in_background` not yet waited for."""
_writing_lock = threading.Lock()


def store_in_background(key: str, model: CompiledModel) -> None:
    """`store(key, model)` in a thread of its own (not a daemon: the process waits for
    it before exiting); `wait_for_writes` waits for it."""

    def write() -> None:
        try:
            store(key, model)
        except Exception as err:  # noqa: BLE001 - a cache that cannot be written costs only the speed-up
            warnings.warn(f"strato: cannot write the compile cache: {err}", stacklevel=1)

    thread = threading.Thread(target=write, name="strato-cache-write")
    with _writing_lock:
        _writing.append(thread)
    thread.start()


def wait_for_writes() -> None:
    """Wait for the background writes under way (`store_in_background`): before the
    cache is read, and before the process forks (a thread holding a lock at the fork
    would leave that lock held forever in the child)."""
    with _writing_lock:
        threads = list(_writing)
        _writing.clear()
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=wait_for_writes)


def kernel_path(key: str) -> Path:
    return cache_dir() / KERNELS / key[:2] / f"{key}{KERNEL_SUFFIX}"


def lookup_kernel(key: str) -> bytes | None:
    """The bytes a target stored for the kernel `key`, or None."""
    path = kernel_path(key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    return data


def store_kernels(entries: Mapping[str, bytes]) -> bool:
    """Keep the bytes of each kernel key of `entries` (each whole or not at all), then
    evict down to the size limit once; False, with a warning, when the cache cannot be
    written."""
    from strato.runtime.atomic_write import write_atomically

    written = []
    for key, data in entries.items():
        path = kernel_path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data, what="the compiled kernel", durable=False)
        except (OSError, StratoError) as err:
            reason = err.message if isinstance(err, StratoError) else (err.strerror or str(err))
            warnings.warn(f"strato: cannot write the compile cache at {path.parent}: {reason}", stacklevel=3)
            return False
        written.append(path)
    if written:
        evict(size_limit(), keep=written)
    return True


def remove_kernel(key: str) -> None:
    """Forget a kernel entry that cannot be read back."""
    _remove(kernel_path(key))


def _entries(root: Path) -> list[Path]:
    """Every entry of the cache: compiled models and compiled kernels."""
    return [*root.glob(f"*/*{ENTRY_SUFFIX}"), *root.glob(f"{KERNELS}/*/*{KERNEL_SUFFIX}")]


DEFAULT_SIZE_LIMIT_MB = 2048


def size_limit() -> int:
    """Bytes the cache may hold: $STRATO_CACHE_MAX_MB megabytes (default 2048)."""
    text = os.environ.get("STRATO_CACHE_MAX_MB", "").strip()
    try:
        megabytes = float(text) if text else DEFAULT_SIZE_LIMIT_MB
    except ValueError:
        megabytes = DEFAULT_SIZE_LIMIT_MB
    return max(0, int(megabytes * 1e6))


def evict(limit: int, *, keep: Path | Collection[Path] | None = None) -> int:
    """Remove the least recently used entries until the cache holds at most `limit`
    bytes (`keep`, the entries just written, stay); the number removed."""
    kept = {keep} if isinstance(keep, Path) else set(keep or ())
    root = cache_dir()
    entries = []
    for path in _entries(root):
        try:
            stat = path.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime_ns, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, path in sorted(entries, key=lambda entry: entry[0]):
        if total <= limit:
            break
        if path in kept:
            continue
        _remove(path)
        total -= size
        removed += 1
    return removed


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def usage() -> tuple[int, int]:
    """The number of compiled models in the cache directory and the size in bytes of
    everything the cache holds (compiled kernels included: `kernel_count`)."""
    wait_for_writes()
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    models, total = 0, 0
    for path in _entries(root):
        try:
            total += path.stat().st_size
        except OSError:
            continue
        models += path.suffix == ENTRY_SUFFIX
    return models, total


def kernel_count() -> int:
    """The number of compiled kernels in the cache directory."""
    wait_for_writes()
    root = cache_dir()
    return len(list(root.glob(f"{KERNELS}/*/*{KERNEL_SUFFIX}"))) if root.is_dir() else 0


def clear() -> int:
    """Remove every entry of the cache directory (compiled models and kernels); the
    number of entries removed."""
    wait_for_writes()
    removed = 0
    root = cache_dir()
    if not root.is_dir():
        return 0
    for path in _entries(root):
        _remove(path)
        removed += 1
    return removed


__all__ = [
    "cache_dir",
    "cache_enabled",
    "cache_key",
    "clear",
    "entry_path",
    "evict",
    "kernel_count",
    "kernel_path",
    "lookup",
    "lookup_kernel",
    "remove_kernel",
    "size_limit",
    "source_fingerprint",
    "store",
    "store_in_background",
    "store_kernels",
    "usage",
    "wait_for_writes",
]
