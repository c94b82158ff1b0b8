"""Output files are written whole or not at all.

    write_atomically("mlp.ll", text)

The data goes to a temporary file beside `path`, which is flushed to disk and then renamed
over `path`; a failure (a full disk, a missing directory, an interrupt) removes the
temporary file and leaves whatever `path` held before untouched, never a truncated file.
Errors are `StratoError`s naming `path`.

`durable=False` skips the flush to disk (an fsync, about a tenth of a second for a
model's 50 MB): the rename still leaves the whole old file or the whole new one to any
process, killed or not, and only a crash of the machine itself can leave a damaged file.
The compile cache writes so, since it checks each entry it reads and compiles a damaged
one again.
"""

from __future__ import annotations

import os
import tempfile

from strato.diagnostics import StratoError


def write_atomically(
    path: str | os.PathLike, data: str | bytes, *, what: str = "the output", durable: bool = True
) -> None:
    """Write `data` (text is UTF-8) to `path` atomically; `what` names the content in errors,
    `durable=False` leaves the flush to disk to the system (see the module docstring)."""
    target = os.fspath(path)
    if not target:
        raise StratoError(f"cannot write {what}: the output path is empty")
    directory = os.path.dirname(target) or "."
    if os.path.isdir(target):
        raise StratoError(f"cannot write {what}: it is a directory", location=target)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
    except OSError as err:
        raise StratoError(f"cannot write {what}: {err.strerror}", location=target) from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(payload)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException as err:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise StratoError(f"cannot write {what}: {err.strerror}", location=target) from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
