"""Saved models: what `model.save(path)` writes and `strato.load(path)` reads.

A saved model is a zip archive whose `manifest.json` names its format; the target that
wrote it registers the loader of that format (the llvm target's `.strato` archive of
machine code: `strato.targets.llvm.aot`):

    register_model_format("strato-model", load_llvm_archive)
    model = load_model("mlp.strato")          # dispatched by the manifest's format

A path that is not a file, bytes that are not such an archive, or a format no loaded
target reads is a `ModelFileError` naming the file and the reason; the format's loader
checks the rest. The compile cache (`strato.runtime.cache`) stores entries the same way.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable
from typing import IO

from strato.diagnostics import StratoError
from strato.runtime.compiled_model import CompiledModel

MANIFEST = "manifest.json"

ModelLoader = Callable[[str | IO[bytes], str], CompiledModel]
"""`(archive, where) -> model`: reads an archive (a path or a binary file) of its
format, naming it `where` in errors."""

_FORMATS: dict[str, ModelLoader] = {}


class ModelFileError(StratoError):
    """A saved model that cannot be loaded: not one, corrupt, or made for another
    strato or another machine."""


def register_model_format(name: str, loader: ModelLoader) -> None:
    """Read archives whose manifest's format is `name` with `loader`."""
    _FORMATS[name] = loader


def load_model(path: str | os.PathLike) -> CompiledModel:
    """The model saved at `path`, ready to call; nothing is compiled."""
    where = os.fspath(path)
    if os.path.isdir(where):
        raise ModelFileError("is a directory, not a saved model", location=where)
    if not os.path.exists(where):
        raise ModelFileError("no such file", location=where)
    return _dispatch(where, where)


def model_from_bytes(data: bytes, where: str) -> CompiledModel:
    """The model saved in `data` (a saved model's bytes); `where` names it in errors."""
    return _dispatch(io.BytesIO(data), where)


def _dispatch(source: str | io.BytesIO, where: str) -> CompiledModel:
    import strato.runtime.batched  # noqa: F401  # registers the batched models' format

    loader = _FORMATS.get(archive_format(source, where))
    if loader is None:
        raise ModelFileError("not a compiled strato model (unknown manifest format)", location=where)
    if isinstance(source, io.BytesIO):
        source.seek(0)
    return loader(source, where)


def archive_format(source: str | IO[bytes], where: str) -> str:
    """The format a saved model's manifest names (`ModelFileError` when `source` is not
    a zip archive with a readable manifest)."""

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
    if not isinstance(manifest, dict) or not isinstance(manifest.get("format"), str):
        raise fail("not a compiled strato model (unknown manifest format)")
    return manifest["format"]


__all__ = [
    "MANIFEST",
    "ModelFileError",
    "ModelLoader",
    "archive_format",
    "load_model",
    "model_from_bytes",
    "register_model_format",
]
