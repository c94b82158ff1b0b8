"""Bounds of the run-time sizes of a model compiled once for every size: declared
(`size_bounds`, `--size-bounds`) or implied by the model (a table read at positions
computed from a size), kept by the signature, the saved model and the C entry, and a
call out of them refused with the input, the dimension and the bound named."""

from __future__ import annotations

import argparse

import numpy as np
import onnxruntime as ort
import pytest

import strato
from strato.diagnostics import StratoError
from strato.dialects.graph.dims import SizeBound, implied_size_bounds, size_bounds
from strato.frontends.onnx.importer import import_onnx
from strato.runtime.signature import InputMismatchError, SizeLimit
from strato.testing.dynamic_models import counted_positions, mlp, token_embedding
from strato.tools.strato_cli import parse_size_bounds

RNG = np.random.default_rng(0)


def _tokens(batch: int, sequence: int) -> list[np.ndarray]:
    ids = RNG.integers(0, 50, (batch, sequence)).astype(np.int64)
    return [ids, np.ones((batch, sequence), np.int64)]


def test_a_position_table_bounds_the_sequence(tmp_path):
    """Position embeddings of a Range to the sequence from a table of 64: the sequence
    is at most 64. A call at 65 is refused naming the input, the dimension and why; the
    saved model and the C entry refuse it too (the entry returns NO_SUCH_SIZE)."""
    proto = token_embedding(vocab=50, width=16, positions=64)
    model = strato.compile(proto, cache=False, run_time_dims=True, name="tokens")
    (limit,) = model.signature.limits
    assert (limit.name, limit.least, limit.most) == ("sequence", 0, 64)
    assert "positions computed from it" in limit.why
    assert model(*_tokens(2, 64))[0].shape == (2, 64, 16)
    refused = r"input 0 'input_ids' int64\[batch, sequence\]: dimension 1 \('sequence'\) is 65, more than the model takes: at most 64 \(the model reads the 64-entry table"
    with pytest.raises(InputMismatchError, match=refused):
        model(*_tokens(2, 65))
    path = tmp_path / "tokens.strato"
    model.save(path)
    loaded = strato.load(path)
    assert loaded.signature.limits == model.signature.limits
    with pytest.raises(InputMismatchError, match=refused):
        loaded(*_tokens(1, 65))
    # the entry itself, as a C caller calls it
    inputs = _tokens(1, 65)
    outputs = model.signature.allocate_at([1, 65])
    with pytest.raises(InputMismatchError, match=r"refused the sizes \[1, 65\]"):
        model._entry([*inputs, *outputs, 1, 65])
    assert "returns TOKENS_NO_SUCH_SIZE: sequence 0 to 64)" in model.c_header()


def test_counted_positions_bound_the_sequence_as_onnxruntime_refuses_it():
    """Positions up to the sequence plus 1 in a table of 32: at most 30 tokens. At 30
    with no padding the last position is 31, the table's last row; onnxruntime fails at
    31 (position 32), and so does the compiled model, with a clear error."""
    proto = counted_positions(table=32)
    implied = implied_size_bounds(import_onnx(proto, run_time_dims=True).function)
    assert implied["sequence"][0] == SizeBound(0, 30)
    model = strato.compile(proto, cache=False, run_time_dims=True)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ids = np.full((2, 30), 3, np.int64)
    np.testing.assert_array_equal(model(ids)[0], session.run(None, {"ids": ids})[0])
    ids = np.full((2, 31), 3, np.int64)
    with pytest.raises(Exception):  # noqa: B017  (onnxruntime's own error type)
        session.run(None, {"ids": ids})
    with pytest.raises(InputMismatchError, match=r"\('sequence'\) is 31, more than the model takes: at most 30"):
        model(ids)


def test_declared_bounds_are_checked_and_recorded():
    """`size_bounds`: a most, or a least and a most; the tighter of a declared and an
    implied most; the graph function records them (`graph.size_bounds`)."""
    model = strato.compile(mlp(), cache=False, run_time_dims=True, size_bounds={"batch": (1, 8)})
    assert model.signature.limits == (SizeLimit("batch", 1, 8),)
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    assert model(x)[0].shape == (8, 10)
    with pytest.raises(InputMismatchError, match=r"\('batch'\) is 0, less than the least the model takes, 1"):
        model(np.zeros((0, 16), np.float32))
    with pytest.raises(InputMismatchError, match=r"\('batch'\) is 9, more than the model takes: at most 8$"):
        model(np.zeros((9, 16), np.float32))
    tokens = token_embedding(vocab=50, width=16, positions=64)
    tighter = strato.compile(tokens, cache=False, run_time_dims=True, size_bounds={"sequence": 16})
    assert [(limit.name, limit.most, limit.why) for limit in tighter.signature.limits] == [("sequence", 16, "")]
    looser = strato.compile(tokens, cache=False, run_time_dims=True, size_bounds={"sequence": (2, 100)})
    (limit,) = looser.signature.limits
    assert (limit.least, limit.most) == (2, 64) and limit.why

    seen = []
    strato.compile(
        mlp(), cache=False, run_time_dims=True, size_bounds={"batch": 8},
        after_stage=lambda stage, module: seen.append(str(module)) if stage == "graph" else None,
    )  # fmt: skip
    assert "graph.size_bounds = {batch = array<i64: 0, 8>}" in seen[0]


def test_the_compile_cache_tells_bounds_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path))
    from strato.runtime.cache import wait_for_writes

    first = strato.compile(mlp(), run_time_dims=True, size_bounds={"batch": 4})
    wait_for_writes()
    second = strato.compile(mlp(), run_time_dims=True, size_bounds={"batch": 5})
    wait_for_writes()
    again = strato.compile(mlp(), run_time_dims=True, size_bounds={"batch": 4})
    assert [m.signature.limits[0].most for m in (first, second, again)] == [4, 5, 4]
    assert again.origin is not None and second.origin is None


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ({"seq": 4}, r"size_bounds names 'seq', not a run-time size of the model \(its run-time sizes: batch\)"),
        ({"batch": (5, 2)}, r"'batch' must be bounded by a most"),
        ({"batch": -1}, r"'batch' must be bounded by a most"),
        ({"batch": "8"}, r"'batch' must be bounded by a most"),
    ],
)
def test_bad_bounds_are_refused_by_name(bounds, message):
    with pytest.raises(StratoError, match=message):
        strato.compile(mlp(), cache=False, run_time_dims=True, size_bounds=bounds)


def test_the_bounds_attribute_is_checked():
    function = import_onnx(mlp(), run_time_dims=True).function
    from xdsl.dialects.builtin import StringAttr
    from xdsl.utils.exceptions import VerifyException

    function.attributes["graph.size_bounds"] = StringAttr("batch")
    with pytest.raises(VerifyException, match="must map size names to array<i64: least, most>"):
        size_bounds(function)


def test_the_command_line_reads_bounds():
    assert parse_size_bounds("sequence=1:512 batch=8") == {"sequence": (1, 512), "batch": (0, 8)}
    assert parse_size_bounds("sequence=4:,batch=2:3") == {"sequence": (4, None), "batch": (2, 3)}
    for bad in ("sequence", "sequence=", "=4", "sequence=a:4", "sequence=5:2", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size_bounds(bad)


def test_a_model_compiled_per_size_checks_its_bounds_too():
    from strato.specializing import ShapeSpecializingModel

    model = strato.compile(mlp(), cache=False, run_time_dims=False, size_bounds={"batch": (1, 4)})
    assert isinstance(model, ShapeSpecializingModel)
    assert model(np.ones((4, 16), np.float32))[0].shape == (4, 10)
    with pytest.raises(InputMismatchError, match=r"input 'x': dimension 'batch' \(axis 0\) is 5, more than the model takes: at most 4"):
        model(np.ones((5, 16), np.float32))
    with pytest.raises(StratoError, match=r"size_bounds names 'rows', not a dynamic dimension of the model \(its named ones: batch\)"):
        strato.compile(mlp(), cache=False, run_time_dims=False, size_bounds={"rows": 4})


def test_a_size_bound_can_ask_for_multiples():
    """A bound's `multiple`: only sizes it divides are admitted, two bounds meet at the
    least common multiple, and the refusal names it."""
    bound = SizeBound(8, 64, 8)
    assert [n for n in range(80) if bound.admits(n)] == list(range(8, 65, 8))
    assert bound.meet(SizeBound(0, None, 6)) == SizeBound(8, 64, 24)
    assert bound.refusal(12) == "not a multiple of 8, which the model takes only"
    assert bound.describe() == "8 to 64, a multiple of 8"
    assert SizeBound(4).describe() == "at least 4"


def test_a_declared_multiple_is_checked_by_the_call_the_entry_and_the_saved_model(tmp_path):
    """`size_bounds={"batch": (8, 64, 8)}`: the graph function and the signature record
    the multiple; calls at multiples of 8 match onnxruntime, a call at 12 is refused by
    name, the C entry returns NO_SUCH_SIZE for it, and the saved model and the header
    keep it."""
    proto = mlp()
    model = strato.compile(proto, cache=False, run_time_dims=True, size_bounds={"batch": (8, 64, 8)})
    assert model.signature.limits == (SizeLimit("batch", 8, 64, multiple=8),)
    session = ort.InferenceSession(proto.SerializeToString())
    for batch in (8, 16, 40, 64):
        x = RNG.standard_normal((batch, 16)).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(InputMismatchError, match=r"\('batch'\) is 12, not a multiple of 8, which the model takes only"):
        model(np.zeros((12, 16), np.float32))
    with pytest.raises(InputMismatchError, match=r"refused the sizes \[12\]: a size out of its bounds"):
        model._entry([np.zeros((12, 16), np.float32), np.empty((12, 10), np.float32), 12])

    model.save(tmp_path / "mlp.strato")
    loaded = strato.load(tmp_path / "mlp.strato")
    assert loaded.signature.limits == model.signature.limits
    with pytest.raises(InputMismatchError, match="not a multiple of 8"):
        loaded(np.zeros((20, 16), np.float32))
    model.save_c_header(tmp_path / "mlp.h")
    assert "batch 8 to 64, a multiple of 8" in (tmp_path / "mlp.h").read_text()

    seen = []
    strato.compile(
        proto, cache=False, run_time_dims=True, size_bounds={"batch": (0, None, 8)},
        after_stage=lambda stage, module: seen.append(str(module)) if stage in ("graph", "convert-graph-to-te") else None,
    )  # fmt: skip
    assert "graph.size_bounds = {batch = array<i64: 0, -1, 8>}" in seen[0]
    # the rows are multiples of 8: no blocks of 4 rows or of 1 are made
    assert "multiple = 8 : i64" in seen[1] and "_rows8_" in seen[1]
    assert "_rows4_" not in seen[1] and "_rows1_" not in seen[1]


@pytest.mark.parametrize("given", [(0, 8, 0), (0, 8, -2), (0, 8, 2.5), (0, 8, 2, 1)])
def test_a_bad_multiple_is_refused_by_name(given):
    with pytest.raises(StratoError, match=r"'batch' must be bounded by a most .* or a \(least, most, multiple\) triple"):
        strato.compile(mlp(), cache=False, run_time_dims=True, size_bounds={"batch": given})


def test_the_command_line_and_the_attribute_read_multiples():
    assert parse_size_bounds("sequence=8:512:8 batch=8") == {"sequence": (8, 512, 8), "batch": (0, 8)}
    assert parse_size_bounds("sequence=8::8") == {"sequence": (8, None, 8)}
    for bad in ("sequence=8:512:", "sequence=8:512:0", "sequence=1:2:3:4", "sequence=1:2:x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size_bounds(bad)
    from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, i64
    from xdsl.utils.exceptions import VerifyException

    function = import_onnx(mlp(), run_time_dims=True).function
    function.attributes["graph.size_bounds"] = DictionaryAttr({"batch": DenseArrayBase.from_list(i64, [0, 16, 4])})
    assert size_bounds(function) == {"batch": SizeBound(0, 16, 4)}
    function.attributes["graph.size_bounds"] = DictionaryAttr({"batch": DenseArrayBase.from_list(i64, [0, 16, 0])})
    with pytest.raises(VerifyException, match="array<i64: least, most, multiple>"):
        size_bounds(function)
