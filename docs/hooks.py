"""mkdocs hook: add the generated reference pages (docs/gen_reference.py) to every build,
so they are made from the code each time and never stored."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.structure.files import File, Files

_spec = importlib.util.spec_from_file_location("gen_reference", Path(__file__).with_name("gen_reference.py"))
assert _spec is not None and _spec.loader is not None
gen_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_reference)


def on_files(files: Files, config) -> Files:
    for path, text in gen_reference.generated_pages().items():
        files.append(File.generated(config, path, content=text))
    return files
