"""The dtype fuzz: every operator strato imports times the element types its ONNX schema
allows, each case a one-node model compiled by strato's llvm backend and compared with
the reference.

For each operator of the importer's op table (`ONNX_CONVERTERS`) the type variables of its
ONNX schema (`onnx.defs.get_schema(op).type_constraints`, tensor types only) are bound to
element types: every allowed type of every variable at least once, then random
combinations up to `per_op` cases (all combinations with `per_op=0`). Each binding takes
the node, attributes and inputs of one of ONNX's own node test cases for the operator (the
templates, tried in turn), with the inputs cast to the bound types and their values made
representable (rounded and clipped for integers, non-negative for unsigned types, within
range for the narrow floats), and with the attributes that name a type (Cast's `to`,
EyeLike's `dtype`, ConstantOfShape's `value`, ...) following the binding. The model is
checked by ONNX (strict shape inference: a binding the operator does not accept together
is no case), the expected outputs come from `onnx.reference.ReferenceEvaluator`, or from
onnxruntime where the reference cannot run it (then the case is skipped and counted).

The cases run with `run_node_tests(..., "llvm", isolate=True)` of
`strato.testing.onnx_node_tests`: compiled and run in worker processes, so a crash or a
hang fails one case. Each case ends as

- refused: strato raised a `StratoError` (a diagnostic) naming the op (or, refused at the
  model's boundary, a graph input's element type),
- passed: the outputs match the reference (tolerance by the least precise float type),
- a bug: a crash (signal), a hang (timeout), an internal error (any other exception), a
  wrong result, or a refusal whose message names neither the operator nor the type.

    python -m strato.testing.dtype_fuzz                       # the full sweep
    python -m strato.testing.dtype_fuzz -k '^Cast\\[' --limit 50
    python -m strato.testing.dtype_fuzz --unusual             # the sample the unit test runs
    python -m strato.testing.dtype_fuzz --per-op 0            # every combination

The full sweep (about 1,900 cases at the default `--per-op 24`, some 3 minutes on two
cores; about 6,700 with `--per-op 0`, some 15 minutes) runs by hand, not in CI, also as
`python benchmarks/dtype_fuzz.py [--json FILE]`; tests/unit/test_dtype_fuzz.py runs the
`--unusual` sample (about 660 cases): every operator with the least common element types
its schema allows.

References: for a float16 or bfloat16 case the reference is computed in float32 on the
same values and rounded (numpy's 16-bit arithmetic rounds every step, strato keeps
intermediates wider); onnxruntime is never the reference of a training Dropout (another
random mask). Bindings that ONNX's reference and onnxruntime both cannot run, or on
whose outputs the two disagree beyond the tolerance, count as skipped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import signal
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np

from strato.frontends.onnx.op_table import supported_ops
from strato.testing.onnx_node_tests import (
    NodeTestResult,
    run_node_tests,
    select_node_tests,
)

UNUSUAL = ("float16", "bfloat16", "int8", "uint8", "int16", "uint64", "bool")
"""The element types the unit test's sample draws: the least common ones strato meets."""

DEFAULT_PER_OP = 24
"""Combinations drawn per operator beyond those covering every allowed type once."""

DEFAULT_TIMEOUT = 60.0
"""Seconds one case may take (compile and run) before it counts as a hang."""

REFERENCE_TIMEOUT = 20
"""Seconds the reference may take for one case before the case is skipped."""

TEMPLATES_TRIED = 3
"""Templates tried for one binding before it is skipped."""

TYPE_ATTRIBUTES = {
    "Cast": {"to": "T2"},
    "EyeLike": {"dtype": "T2"},
    "BlackmanWindow": {"output_datatype": "T2"},
    "HammingWindow": {"output_datatype": "T2"},
    "HannWindow": {"output_datatype": "T2"},
    "MelWeightMatrix": {"output_datatype": "T3"},
    "QuantizeLinear": {"output_dtype": "T3"},
    "DequantizeLinear": {"output_dtype": "T3"},
}
"""Attributes that name an element type: the type variable each one binds."""

VALUE_ATTRIBUTES = {"ConstantOfShape": "T2", "Constant": "T"}
"""Operators whose tensor attribute `value` has the type of a type variable."""

NOT_BY_ONNXRUNTIME = {
    "Dropout": "its training mode draws another random mask than ONNX's reference",
}
"""Operators onnxruntime cannot be the reference for, and why."""

BUG_KINDS = ("crash", "hang", "internal error", "wrong result", "vague refusal")


@dataclass
class DtypeCase:
    """One (operator, binding) case; it has what `run_node_test` reads of a node test
    case (name, model, data_sets, rtol, atol)."""

    name: str
    op: str
    types: dict[str, str]
    template: str
    model: object
    data_sets: list = field(default_factory=list)
    rtol: float = 0.0
    atol: float = 0.0
    reference: str = "onnx.reference"


@dataclass
class Outcome:
    """What became of one binding: `status` is 'passed', 'refused', 'skipped' or one of
    `BUG_KINDS`."""

    op: str
    name: str
    status: str
    reason: str = ""
    seconds: float = 0.0

    @property
    def bug(self) -> bool:
        return self.status in BUG_KINDS


# ---------------------------------------------------------------------------- types


def elem_type(name: str) -> int:
    """The TensorProto element type of an ONNX type name ('float', 'bfloat16', ...)."""
    from onnx import TensorProto

    return TensorProto.DataType.Value(name.upper())


def numpy_type(name: str) -> np.dtype:
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type(name)))


def type_variables(op: str) -> list[tuple[str, list[str]]]:
    """The schema's type variables of `op` with the tensor element types each allows."""
    from onnx import defs

    variables = []
    for constraint in defs.get_schema(op).type_constraints:
        names = [
            text[len("tensor(") : -1]
            for text in constraint.allowed_type_strs
            if text.startswith("tensor(")
        ]
        if names:
            variables.append((constraint.type_param_str, names))
    return variables


def type_combinations(op: str, per_op: int, rng: random.Random) -> list[dict[str, str]]:
    """Bindings of the type variables of `op`: every allowed type of every variable at
    least once, then random ones up to `per_op` in all (every binding with 0)."""
    variables = type_variables(op)
    if not variables:
        return [{}]
    names = [name for name, _ in variables]
    total = 1
    for _, allowed in variables:
        total *= len(allowed)
    if per_op <= 0 or total <= per_op:
        return [dict(zip(names, combo)) for combo in itertools.product(*(a for _, a in variables))]
    shuffled = [rng.sample(allowed, len(allowed)) for _, allowed in variables]
    width = max(len(allowed) for allowed in shuffled)
    combos = [tuple(allowed[i % len(allowed)] for allowed in shuffled) for i in range(width)]
    seen = set(combos)
    while len(combos) < per_op:
        combo = tuple(rng.choice(allowed) for _, allowed in variables)
        if combo not in seen:
            seen.add(combo)
            combos.append(combo)
    return [dict(zip(names, combo)) for combo in combos]


def unusual_combinations(op: str) -> list[dict[str, str]]:
    """Bindings of `op`'s type variables to its least common allowed types (`UNUSUAL`):
    each such type of each variable once; a variable that allows none takes float or
    int64 (or its first type)."""
    variables = type_variables(op)
    if not variables:
        return [{}]
    choices = []
    for _, allowed in variables:
        unusual = [name for name in UNUSUAL if name in allowed]
        if not unusual:
            usual = [name for name in ("float", "int64") if name in allowed]
            unusual = usual[:1] or allowed[:1]
        choices.append(unusual)
    width = max(len(c) for c in choices)
    combos = []
    for i in range(width):
        combo = {name: c[i % len(c)] for (name, _), c in zip(variables, choices)}
        if combo not in combos:
            combos.append(combo)
    return combos


def representable(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`value` as `dtype`, its elements made representable: rounded and clipped to the
    range of an integer type (non-negative for unsigned ones), clipped to the finite
    range of a float type (positive for float8e8m0), non-zero for bool, text for string."""
    import ml_dtypes

    value = np.asarray(value)
    if value.dtype == dtype:
        return value.copy()
    if value.dtype.kind in "OSU":
        numbers = np.vectorize(_number, otypes=[np.float64])(value)
    elif value.dtype.kind == "c":
        numbers = value.real.astype(np.float64)
    else:
        numbers = value.astype(np.float64)
    if dtype.kind == "b":
        return numbers != 0
    if dtype.kind in "OSU":
        text = np.vectorize(_text, otypes=[object])(numbers)
        return text.astype(object)
    if dtype.kind == "c":
        return numbers.astype(dtype)
    numbers = np.nan_to_num(numbers, nan=0.0) if _integer(dtype) else numbers
    if _integer(dtype):
        info = ml_dtypes.iinfo(dtype)
        numbers = np.round(numbers)
        if info.min == 0:
            numbers = np.abs(numbers)
        low, high = max(int(info.min), -(2**62)), min(int(info.max), 2**62)
        return np.clip(numbers, low, high).astype(dtype)
    info = ml_dtypes.finfo(dtype)
    if dtype.name.startswith("float8_e8m0"):
        numbers = np.abs(numbers)
        numbers = np.where(numbers == 0, 1.0, numbers)
    numbers = np.clip(numbers, -float(info.max), float(info.max))
    return numbers.astype(dtype)


def _integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu" or dtype.name in ("int4", "uint4", "int2", "uint2")


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(float(number))


def tolerance(types: Iterable[str], rtol: float, atol: float) -> tuple[float, float]:
    """rtol and atol for outputs computed from `types`: by the least precise float type
    among them; exact for integers only; the template's (at least 1e-4, 1e-5) for f32."""
    types = set(types)
    if any(name.startswith(("float8", "float4", "float6")) for name in types):
        return 0.25, 0.25
    if "bfloat16" in types:
        return 2e-2, 2e-2
    if "float16" in types:
        return 1e-2, 1e-2
    if types & {"float", "complex64"}:
        return max(rtol, 1e-4), max(atol, 1e-5)
    if types & {"double", "complex128"}:
        return max(rtol, 1e-7), max(atol, 1e-9)
    return 0.0, 0.0


# ------------------------------------------------------------------------ templates


def templates_by_op(ops: Iterable[str]) -> dict[str, list]:
    """ONNX's node test cases of each op usable as templates: one node of the op, no
    `_expanded` body, no initializer, tensor inputs and outputs of no string type;
    shortest name (the plain case) first."""
    wanted = set(ops)
    by_op: dict[str, list] = defaultdict(list)
    for case in select_node_tests(wanted):
        nodes = case.model.graph.node
        if len(nodes) != 1 or "_expanded" in case.name or case.model.graph.initializer:
            continue
        if not case.data_sets:
            continue
        inputs, outputs = case.data_sets[0]
        if not all(_plain_array(v) for v in list(inputs) + list(outputs)):
            continue
        by_op[nodes[0].op_type].append(case)
    for cases in by_op.values():
        cases.sort(key=lambda case: (len(case.name), case.name))
    return by_op


def _plain_array(value) -> bool:
    from onnx import TensorProto

    if isinstance(value, TensorProto):
        return value.data_type != TensorProto.STRING
    if isinstance(value, (list, tuple)) or value is None:
        return False
    return np.asarray(value).dtype.kind not in "OSU"


def _array(value) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def build_model(template, op: str, types: dict[str, str], opset: int):
    """The template's node with its inputs and type attributes following `types`, as a
    checked model (with inferred output types) and its inputs; raises ValueError when
    ONNX does not accept the binding."""
    import onnx
    from onnx import defs, helper, shape_inference

    schema = defs.get_schema(op)
    graph = template.model.graph
    node = onnx.NodeProto()
    node.CopyFrom(graph.node[0])
    for attribute in node.attribute:
        variable = TYPE_ATTRIBUTES.get(op, {}).get(attribute.name)
        if variable in types:
            attribute.i = elem_type(types[variable])
    if op in TYPE_ATTRIBUTES:
        present = {a.name for a in node.attribute}
        for name, variable in TYPE_ATTRIBUTES[op].items():
            if name not in present and variable in types and _type_attribute_needed(op, node):
                node.attribute.append(helper.make_attribute(name, elem_type(types[variable])))
    if op in VALUE_ATTRIBUTES and VALUE_ATTRIBUTES[op] in types:
        _retype_value_attribute(node, numpy_type(types[VALUE_ATTRIBUTES[op]]))
    given = {info.name: _array(v) for info, v in zip(graph.input, template.data_sets[0][0])}
    formals = list(schema.inputs)
    feeds, inputs = {}, []
    for index, name in enumerate(node.input):
        if not name:
            continue
        if index < len(formals):
            formal = formals[index]
        elif formals and formals[-1].option == defs.OpSchema.FormalParameterOption.Variadic:
            formal = formals[-1]
        else:
            raise ValueError(f"input {index} has no formal parameter")
        value = given[name]
        if formal.type_str in types:
            with np.errstate(over="ignore", invalid="ignore"):
                value = representable(value, numpy_type(types[formal.type_str]))
        feeds[name] = value
        inputs.append(helper.make_tensor_value_info(name, _elem_of(value), value.shape))
    outputs = []
    for output in graph.output:
        # The template's shape (inference cannot always give one: axes read from an
        # input), the type left to inference.
        info = onnx.ValueInfoProto()
        info.CopyFrom(output)
        info.type.tensor_type.elem_type = 0
        outputs.append(info)
    model = helper.make_model(
        helper.make_graph([node], f"{op.lower()}_dtype_fuzz", inputs, outputs),
        opset_imports=[helper.make_opsetid("", opset)],
    )
    try:
        model = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        onnx.checker.check_model(model)
    except Exception as error:  # noqa: BLE001 - any complaint: ONNX rejects the binding
        raise ValueError(" ".join(str(error).split())[:200]) from None
    for output in model.graph.output:
        if not output.type.tensor_type.elem_type:
            raise ValueError(f"no type inferred for output '{output.name}'")
    return model, feeds


def _type_attribute_needed(op: str, node) -> bool:
    """Whether a missing type attribute of `op` must be added to follow the binding:
    QuantizeLinear's `output_dtype` only without a zero point (which gives the type)."""
    if op == "QuantizeLinear":
        return len(node.input) < 3 or not node.input[2]
    return True


def _retype_value_attribute(node, dtype: np.dtype) -> None:
    from onnx import helper, numpy_helper

    value = None
    for attribute in list(node.attribute):
        if attribute.name == "value":
            value = numpy_helper.to_array(attribute.t)
        elif attribute.name in ("value_float", "value_int"):
            value = np.asarray(helper.get_attribute_value(attribute))
        elif attribute.name in ("value_floats", "value_ints"):
            value = np.asarray(list(helper.get_attribute_value(attribute)))
        else:
            continue
        node.attribute.remove(attribute)
    if value is None:
        value = np.zeros((1,), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        value = representable(value, dtype)
    tensor = numpy_helper.from_array(value) if dtype.kind not in "OSU" else _string_tensor(value)
    node.attribute.append(helper.make_attribute("value", tensor))


def _string_tensor(value: np.ndarray):
    from onnx import TensorProto, helper

    return helper.make_tensor(
        "value", TensorProto.STRING, value.shape, [str(v).encode() for v in value.flat]
    )


def _elem_of(value: np.ndarray) -> int:
    from onnx import TensorProto, helper

    if value.dtype.kind in "OSU":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(value.dtype)


def expected_outputs(model, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], str]:
    """The reference outputs of `model` and who computed them: ONNX's reference
    evaluator, or onnxruntime where the reference fails or gives other types than the
    model's; raises RuntimeError when neither can."""
    from onnx import helper

    declared = [
        np.dtype(helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type))
        for o in model.graph.output
    ]
    reasons = []
    peers = [("onnx.reference", _reference), ("onnxruntime", _onnxruntime)]
    op = model.graph.node[0].op_type
    if op in NOT_BY_ONNXRUNTIME:
        peers = peers[:1]
        reasons.append(f"onnxruntime: {NOT_BY_ONNXRUNTIME[op]}")
    for name, run in peers:
        try:
            with _time_limit(REFERENCE_TIMEOUT), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with np.errstate(all="ignore"):
                    outputs = [np.asarray(v) for v in run(model, feeds)]
        except Exception as error:  # noqa: BLE001 - a reference that cannot run it
            reasons.append(f"{name}: {' '.join(str(error).split())[:160]}")
            continue
        dtypes = [o.dtype for o in outputs]
        if len(outputs) != len(declared) or any(
            d != e and not (d.kind in "OSU" and e.kind == "O") for d, e in zip(dtypes, declared)
        ):
            reasons.append(f"{name}: gives {[str(d) for d in dtypes]}")
            continue
        return [o.astype(object) if o.dtype.kind in "SU" else o for o in outputs], name
    raise RuntimeError("; ".join(reasons))


def _reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def _onnxruntime(model, feeds):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


class _ReferenceTimeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: int):
    def expire(signum, frame):
        raise _ReferenceTimeout(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def case_name(op: str, types: dict[str, str]) -> str:
    return f"{op}[{','.join(f'{k}={v}' for k, v in types.items())}]"


def make_case(op: str, types: dict[str, str], templates: Sequence, start: int, opset: int):
    """The case of `op` under `types` from the first template (from `start` on, up to
    `TEMPLATES_TRIED`) that ONNX accepts and the reference runs; else an Outcome that
    says why the binding is skipped."""
    name = case_name(op, types)
    if not templates:
        return Outcome(op, name, "skipped", "no node test to take inputs from")
    reasons = []
    order = [templates[(start + i) % len(templates)] for i in range(len(templates))]
    for template in order[:TEMPLATES_TRIED]:
        for version in dict.fromkeys((opset, _opset_of(template.model))):
            try:
                model, feeds = build_model(template, op, types, version)
            except (ValueError, KeyError, OverflowError, TypeError) as error:
                reasons.append(f"{template.name}: {error}")
                continue
            try:
                expected, who = expected_outputs(model, feeds)
            except RuntimeError as error:
                reasons.append(f"{template.name}: {error}")
                continue
            if {"bfloat16", "float16"} & set(types.values()):
                expected, who = _widened_reference(
                    template, op, types, version, feeds, expected, who
                )
            involved = list(types.values()) + [
                _type_name(o.type.tensor_type.elem_type) for o in model.graph.output
            ]
            rtol, atol = tolerance(involved, template.rtol, template.atol)
            disagreement = _peer_disagrees(model, feeds, expected, who, rtol, atol)
            if disagreement:
                return Outcome(op, name, "skipped", disagreement)
            inputs = [feeds[i.name] for i in model.graph.input]
            return DtypeCase(
                f"{name}<{template.name}>", op, types, template.name, model,
                [(inputs, expected)], rtol, atol, who,
            )  # fmt: skip
    return Outcome(op, name, "skipped", "reference cannot run it: " + " | ".join(reasons)[:300])


def _widened_reference(template, op, types, opset, feeds, expected, who):
    """The reference of a bfloat16 or float16 case computed in float32 (those types
    bound to float, the same input values) and rounded to the outputs' types, where ONNX
    accepts and the reference runs it; else `expected` as it was. ONNX's reference
    computes in the 16-bit type with numpy, every step rounded (to 8 bits of mantissa
    for bfloat16), where strato keeps sums and intermediates wider."""
    halves = ("bfloat16", "float16")
    wide_types = {k: "float" if v in halves else v for k, v in types.items()}
    narrow = {numpy_type(name) for name in halves}
    try:
        model, _ = build_model(template, op, wide_types, opset)
        wide = {k: v.astype(np.float32) if v.dtype in narrow else v for k, v in feeds.items()}
        outputs, wide_who = expected_outputs(model, wide)
        with np.errstate(over="ignore", invalid="ignore"):
            outputs = [o.astype(e.dtype) for o, e in zip(outputs, expected)]
    except (ValueError, KeyError, OverflowError, TypeError, RuntimeError):
        return expected, who
    if [o.shape for o in outputs] != [e.shape for e in expected]:
        return expected, who
    return outputs, f"{wide_who} in float32"


def _peer_disagrees(model, feeds, expected, who: str, rtol: float, atol: float) -> str:
    """Why the expected outputs are in doubt: onnxruntime runs the model too and its
    outputs differ from ONNX's reference beyond the tolerance (as for Attention with an
    integer mask, which the two read differently); '' when it agrees, cannot run it, or
    gave the reference itself."""
    from strato.testing.onnx_node_tests import compare_outputs

    op = model.graph.node[0].op_type
    if not who.startswith("onnx.reference") or op in NOT_BY_ONNXRUNTIME:
        return ""
    try:
        with _time_limit(REFERENCE_TIMEOUT), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peer = [np.asarray(v) for v in _onnxruntime(model, feeds)]
    except Exception:  # noqa: BLE001 - onnxruntime cannot run it: no second opinion
        return ""
    if [p.dtype for p in peer] != [e.dtype for e in expected]:
        return ""
    with np.errstate(all="ignore"):
        reason = compare_outputs(peer, expected, rtol, atol)
    return f"ONNX's reference and onnxruntime disagree: {reason}" if reason else ""


def _opset_of(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _type_name(elem: int) -> str:
    from onnx import TensorProto

    return TensorProto.DataType.Name(elem).lower()


# --------------------------------------------------------------------------- running


def generate(
    ops: Iterable[str] | None = None,
    *,
    pattern: str | None = None,
    per_op: int = DEFAULT_PER_OP,
    seed: int = 0,
    unusual: bool = False,
    limit: int | None = None,
) -> tuple[list[DtypeCase], list[Outcome]]:
    """The cases to run and the bindings skipped (as outcomes), for `ops` (every op of
    the importer by default), bindings whose name matches `pattern`, at most `limit`."""
    from onnx import defs

    ops = sorted(supported_ops() if ops is None else ops)
    rng = random.Random(seed)
    templates = templates_by_op(ops)
    opset = defs.onnx_opset_version()
    cases: list[DtypeCase] = []
    skipped: list[Outcome] = []
    for op in ops:
        combos = unusual_combinations(op) if unusual else type_combinations(op, per_op, rng)
        for index, types in enumerate(combos):
            if pattern is not None and not re.search(pattern, case_name(op, types)):
                continue
            if limit is not None and len(cases) + len(skipped) >= limit:
                return cases, skipped
            made = make_case(op, types, templates.get(op, []), index, opset)
            (skipped if isinstance(made, Outcome) else cases).append(made)
    return cases, skipped


def classify(case: DtypeCase, result: NodeTestResult) -> Outcome:
    """The outcome of one case from its node test result."""
    reason = result.reason
    if result.passed:
        status = "passed"
    elif result.refused:
        status = "refused" if _names_op_or_type(case, reason) else "vague refusal"
    elif reason.startswith("crashed the process"):
        status = "crash"
    elif reason.startswith("timed out"):
        status = "hang"
    elif reason.startswith("internal error"):
        status = "internal error"
    else:
        status = "wrong result"
    return Outcome(case.op, case.name, status, reason, result.seconds)


def _names_op_or_type(case: DtypeCase, reason: str) -> bool:
    """Whether a refusal names the operator, or (refused at the model's boundary: a
    graph input or output of a type strato does not import) the element type."""
    text = reason.lower()
    return case.op.lower() in text or any(name in text for name in case.types.values())


def run_cases(
    cases: Sequence[DtypeCase], *, workers: int = 2, timeout: float = DEFAULT_TIMEOUT
) -> list[Outcome]:
    """Each case compiled by the llvm backend in a worker process, classified."""
    results = run_node_tests(cases, "llvm", isolate=True, timeout=timeout, workers=workers)
    return [classify(case, result) for case, result in zip(cases, results)]


def fuzz(**options) -> list[Outcome]:
    """Generate (`generate`'s options) and run (`workers`, `timeout`) the cases; the
    outcomes of the skipped bindings come too."""
    run_options = {k: options.pop(k) for k in ("workers", "timeout") if k in options}
    cases, skipped = generate(**options)
    return run_cases(cases, **run_options) + skipped


def report(outcomes: Sequence[Outcome], *, refusals: bool = False) -> str:
    """A table per op (cases, skipped, refused, passed, bugs), each bug with its reason
    (each refusal too with `refusals`), and the totals."""
    by_op: dict[str, Counter] = defaultdict(Counter)
    for outcome in outcomes:
        by_op[outcome.op][outcome.status] += 1
    header = f"{'op':28} {'cases':>5} {'skip':>5} {'refused':>7} {'passed':>6} {'bugs':>5}"
    lines = [header, "-" * len(header)]
    for op in sorted(by_op):
        count = by_op[op]
        bugs = sum(count[kind] for kind in BUG_KINDS)
        lines.append(
            f"{op:28} {sum(count.values()):5d} {count['skipped']:5d} {count['refused']:7d} "
            f"{count['passed']:6d} {bugs:5d}"
        )
    total = Counter()
    for count in by_op.values():
        total.update(count)
    bugs = [o for o in outcomes if o.bug]
    if bugs:
        lines.append("")
        lines.append(f"{len(bugs)} bugs:")
        lines.extend(f"  {o.status.upper():14} {o.name}: {o.reason}" for o in bugs)
    if refusals:
        refused = [o for o in outcomes if o.status == "refused"]
        lines.append("")
        lines.append(f"{len(refused)} refusals:")
        lines.extend(f"  {o.name}: {o.reason}" for o in refused)
    lines.append("")
    kinds = ", ".join(f"{total[kind]} {kind}" for kind in BUG_KINDS)
    lines.append(
        f"{sum(total.values())} cases: {total['skipped']} skipped (the reference cannot run "
        f"them), {total['refused']} refused with a diagnostic, {total['passed']} passed, "
        f"{len(bugs)} bugs ({kinds})"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", help="regex on case names, 'Op[T=type,...]'")
    parser.add_argument("--limit", type=int, default=None, help="at most N cases")
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn bindings")
    parser.add_argument(
        "--per-op",
        type=int,
        default=DEFAULT_PER_OP,
        help=f"bindings per op (default {DEFAULT_PER_OP}; 0: all of them)",
    )
    parser.add_argument(
        "--unusual", action="store_true", help="each op with its least common types only"
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per case (default 60)"
    )
    parser.add_argument("--refusals", action="store_true", help="list the refusals too")
    parser.add_argument("--json", help="also write every outcome to this file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    outcomes = fuzz(
        pattern=args.pattern,
        per_op=args.per_op,
        seed=args.seed,
        unusual=args.unusual,
        limit=args.limit,
        workers=args.workers,
        timeout=args.timeout,
    )
    seconds = time.perf_counter() - start
    print(report(outcomes, refusals=args.refusals))
    print(f"in {seconds:.0f} s")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"seconds": seconds, "outcomes": [asdict(o) for o in outcomes]}, file)
    return 1 if any(o.bug for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
