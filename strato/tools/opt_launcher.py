"""The `strato-opt` command: `--version` and `--help` answered without loading the
compiler when they can be, everything else by `strato.tools.strato_opt`.

Loading xDSL's and strato's dialects, passes and targets takes about half a second;
`--version` needs none of it, and `--help` (which lists every pass and target, so needs
all of it) is kept as text in the compile cache's directory (`help/`), keyed by what
can change it: strato's source files and version, xDSL's version, the installed
plugins and the terminal's width. `--help` with `--load-plugin` is never cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

TOOL = "strato-opt"


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        strato_version = version("strato")
    except PackageNotFoundError:
        strato_version = "unknown"
    return f"{TOOL} {strato_version} (xDSL {version('xdsl')})"


def _help_key() -> str:
    from importlib.metadata import entry_points

    from strato.plugins import ENTRY_POINT_GROUP
    from strato.runtime.cache import source_fingerprint

    digest = hashlib.sha256(source_fingerprint().encode())
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        digest.update(f"plugin {entry.name}={entry.value} {_module_stamp(entry.module)}\n".encode())
    digest.update(f"columns {shutil.get_terminal_size().columns}\n".encode())
    return digest.hexdigest()


def _module_stamp(name: str) -> str:
    """The size and modification time of a plugin's top-level module, found without
    importing it ('' when it cannot be found)."""
    from importlib.util import find_spec

    try:
        spec = find_spec(name.split(".", 1)[0])
        stat = Path(spec.origin).stat() if spec is not None and spec.origin else None
    except (ImportError, ValueError, OSError):
        return ""
    return "" if stat is None else f"{stat.st_size}:{stat.st_mtime_ns}"


def _help_path(key: str) -> Path:
    from strato.runtime.cache import cache_dir

    return cache_dir() / "help" / f"strato-opt-{key[:32]}.txt"


def _full_help() -> tuple[int, str]:
    from strato.tools.strato_opt import main

    stream = io.StringIO()
    with contextlib.redirect_stdout(stream):
        status = main(["--help"])
    return status, stream.getvalue()


def _help() -> int:
    from strato.runtime.cache import cache_enabled

    path = _help_path(_help_key()) if cache_enabled() else None
    if path is not None:
        try:
            sys.stdout.write(path.read_text())
            return 0
        except (OSError, UnicodeDecodeError):
            pass
    status, text = _full_help()
    sys.stdout.write(text)
    if status == 0 and path is not None:
        from strato.runtime.atomic_write import write_atomically

        with contextlib.suppress(Exception):  # a cache that cannot be written costs the speed only
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text.encode(), what="the help text")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-v"]):
        print(version_text())
        return 0
    if args in (["--help"], ["-h"]):
        return _help()
    from strato.tools.strato_opt import main as run

    return run(args)


__all__ = ["main", "version_text"]
