"""strato-opt's --version and --help without loading the compiler: the help text comes
from the compile cache once written, and is what strato-opt itself prints."""

from __future__ import annotations

import pytest

from strato.tools import opt_launcher, strato_opt


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_help_is_kept_and_read_back(cache_dir, capsys, monkeypatch):
    assert strato_opt.main(["--help"]) == 0
    full = capsys.readouterr().out
    assert opt_launcher.main(["--help"]) == 0
    assert capsys.readouterr().out == full
    (kept,) = (cache_dir / "help").iterdir()
    assert kept.read_text() == full

    def must_not_load():
        raise AssertionError("the help text was built again")

    monkeypatch.setattr(opt_launcher, "_full_help", must_not_load)
    assert opt_launcher.main(["-h"]) == 0
    assert capsys.readouterr().out == full


def test_without_the_cache_help_is_built_each_time(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("STRATO_CACHE", "0")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path / "cache"))
    assert opt_launcher.main(["--help"]) == 0
    assert "strato passes:" in capsys.readouterr().out
    assert not (tmp_path / "cache").exists()


def test_version_and_everything_else(capsys, tmp_path):
    assert opt_launcher.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("strato-opt ")
    source = tmp_path / "x.mlir"
    source.write_text("builtin.module {}\n")
    assert opt_launcher.main([str(source), "-p", "cse"]) == 0
    assert "builtin.module" in capsys.readouterr().out
