"""`strato run MODEL --target vta` says what it checks and shows its progress.

The zoo's dqn (two offloaded conv layers, conv2 and conv3) compiles and simulates in
about two seconds: every test runs it through the command.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from strato.tools import strato_cli

RUN = ["run", "dqn", "--target", "vta", "--repeat", "1", "--no-cache"]


def test_the_offloaded_layers_are_checked_bit_exact_and_nothing_shows_on_a_pipe():
    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", *RUN],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "offloaded layers bit-exact against the int8 reference: 2/2 layers, 0 differing elements\n"
        in result.stdout
    )
    # the check follows the per-layer table, before the host time of the simulation
    lines = result.stdout.splitlines()
    check = lines.index(
        "offloaded layers bit-exact against the int8 reference: 2/2 layers, 0 differing elements"
    )
    assert lines[check - 1].startswith("cycle model:") and lines[check + 1].startswith(
        "host time of the VTA simulation"
    )
    # stderr is not a terminal: no bar, no progress lines
    assert result.stderr == ""


def test_a_layer_that_differs_from_the_reference_fails_the_run(monkeypatch, capsys):
    from strato.targets.vta import partition

    real = partition.run_conv2d

    def corrupted(x, w, **options):
        out, report = real(x, w, **options)
        if w.shape == (64, 64, 3, 3):  # conv3
            out = out.copy()
            out.reshape(-1)[[3, 40, 100]] ^= 1  # three elements off by one bit
        return out, report

    monkeypatch.setattr(partition, "run_conv2d", corrupted)
    assert strato_cli.main(RUN) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (line,) = captured.err.strip().splitlines()
    assert line == (
        "strato: error: 1/2 offloaded layer(s) differ from the int8 reference: conv3 in 3 of 3136 elements"
    )
    assert "bit-exact" not in captured.out and "host time" not in captured.out


def test_check_layers_counts_the_differing_elements_of_each_layer(monkeypatch):
    import strato
    from strato import zoo

    model = strato.compile(zoo.build_model("dqn"), target="vta", cache=False)
    x = (
        np.random.default_rng(0)
        .uniform(-1, 1, model.inputs[0].shape)
        .astype(np.float32)
    )
    model(x)
    checks = model.check_layers()
    assert [(c.name, c.differing, c.elements) for c in checks] == [
        ("conv2", 0, 64 * 9 * 9),
        ("conv3", 0, 64 * 7 * 7),
    ]
    model.layers[0].output.reshape(-1)[:5] += 1
    assert [c.differing for c in model.check_layers()] == [5, 0]


def test_verbose_shows_a_line_per_layer_compiled_and_simulated(capsys):
    assert strato_cli.main([*RUN, "-v"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "conv layer" in line] == [
        "strato: VTA: compiling conv layer 1/2: conv2",
        "strato: VTA: compiling conv layer 2/2: conv3",
        *(
            f"strato: VTA: simulating conv layer {i}/2 (run {run}/3): {name}"
            for run in (1, 2, 3)
            for i, name in ((1, "conv2"), (2, "conv3"))
        ),
    ]
    assert "strato: checking the offloaded layers against the int8 reference" in err
    assert not any("|" in line for line in err)  # no bar


def pretend_a_terminal(monkeypatch) -> None:
    """stderr (capsys's, once the test runs) says it is a terminal, and bars show at once."""
    from strato.tools import compile_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(compile_progress, "DELAY_S", 0.0)


def test_a_terminal_shows_bars_over_the_layers(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    pretend_a_terminal(monkeypatch)
    assert strato_cli.main(RUN) == 0
    err = capsys.readouterr().err
    assert "VTA: compiling conv layers 0/2 layers |" in err and "layers |" in err
    assert "[00:00<?, conv2]" in err
    for run in (1, 2, 3):
        assert f"VTA: simulating, run {run}/3 0/2 layers |" in err
    assert "strato: VTA:" not in err  # the bar, not lines


def test_without_tqdm_a_terminal_gets_lines(monkeypatch, capsys):
    pretend_a_terminal(monkeypatch)
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now fails
    assert strato_cli.main(RUN) == 0
    err = capsys.readouterr().err.splitlines()
    assert "strato: VTA: compiling conv layer 2/2: conv3" in err
    assert "strato: VTA: simulating conv layer 2/2 (run 3/3): conv3" in err
    assert not any("|" in line for line in err)


def test_a_layers_instruction_stream_is_emitted_once_across_calls(monkeypatch):
    import strato
    from strato import zoo
    from strato.targets.vta import interpret

    model = strato.compile(zoo.build_model("dqn"), target="vta", cache=False)
    emitted = []
    real = interpret.emit_function

    def counting(function, first_elements, config):
        emitted.append(function)
        return real(function, first_elements, config)

    monkeypatch.setattr(interpret, "emit_function", counting)
    rng = np.random.default_rng(2)
    first, second = (
        rng.uniform(-1, 1, model.inputs[0].shape).astype(np.float32) for _ in range(2)
    )
    (want,) = model(second)
    assert len(emitted) == 2  # conv2 and conv3
    model(first)
    (got,) = model(second)
    assert len(emitted) == 2  # the later calls reuse both streams
    np.testing.assert_array_equal(got, want)
    assert all(check.differing == 0 for check in model.check_layers())
