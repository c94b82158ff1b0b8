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

written atomically (a crash leaves no half entry). An entry that cannot be read back (a
truncated file, another strato's format) is removed and the model compiled again; a
cache directory that cannot be written only costs the speed-up. The cache holds at most
$STRATO_CACHE_MAX_MB megabytes (default 2048): the least recently used entries go first.
`STRATO_CACHE=0` turns the cache off, as does `strato.compile(..., cache=False)`.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from functools import cache
from pathlib import Path
from typing import Any

from strato.diagnostics import StratoError
from strato.runtime.compiled_model import CompiledModel

ENTRY_SUFFIX = ".strato"


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


def cache_key(model_bytes: bytes, options: dict[str, Any]) -> str:
    """The key of a compilation: the model's bytes, `options` (JSON-serializable:
    target, input shapes, ...), strato's version and source fingerprint."""
    digest = hashlib.sha256()
    header = {"format": CACHE_VERSION, "strato": source_fingerprint(), "options": options}
    digest.update(json.dumps(header, sort_keys=True, default=str).encode())
    digest.update(b"\0")
    digest.update(model_bytes)
    return digest.hexdigest()


def entry_path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}{ENTRY_SUFFIX}"


def lookup(key: str) -> CompiledModel | None:
    """The cached model of `key`, or None (no entry; an unreadable entry is removed)."""
    from strato.runtime.saved_model import load_model

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
        write_atomically(path, model.to_bytes(), what="the compile cache entry")
    except (OSError, StratoError) as err:
        reason = err.message if isinstance(err, StratoError) else (err.strerror or str(err))
        warnings.warn(f"strato: cannot write the compile cache at {path.parent}: {reason}", stacklevel=3)
        return False
    evict(size_limit(), keep=path)
    return True


DEFAULT_SIZE_LIMIT_MB = 2048


def size_limit() -> int:
    """Bytes the cache may hold: $STRATO_CACHE_MAX_MB megabytes (default 2048)."""
    text = os.environ.get("STRATO_CACHE_MAX_MB", "").strip()
    try:
        megabytes = float(text) if text else DEFAULT_SIZE_LIMIT_MB
    except ValueError:
        megabytes = DEFAULT_SIZE_LIMIT_MB
    return max(0, int(megabytes * 1e6))


def evict(limit: int, *, keep: Path | None = None) -> int:
    """Remove the least recently used entries until the cache holds at most `limit`
    bytes (`keep`, the entry just written, stays); the number removed."""
    root = cache_dir()
    entries = []
    for path in root.glob(f"*/*{ENTRY_SUFFIX}"):
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
        if keep is not None and path == keep:
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
    """The number of entries in the cache directory and their total size in bytes."""
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    sizes = []
    for path in root.glob(f"*/*{ENTRY_SUFFIX}"):
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            continue
    return len(sizes), sum(sizes)


def clear() -> int:
    """Remove every entry of the cache directory; the number removed."""
    removed = 0
    root = cache_dir()
    if not root.is_dir():
        return 0
    for path in root.glob(f"*/*{ENTRY_SUFFIX}"):
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
    "lookup",
    "size_limit",
    "source_fingerprint",
    "store",
    "usage",
]
