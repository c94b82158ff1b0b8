"""split: one loop into nested loops by factors (one may be None, derived from the
extent). A factor that does not divide the extent leaves a tail: `tail="guard"` runs
the body only where the iteration variable is in range; `tail="pad"` lets the loops run
over the padded extent and pads the local buffers the stage indexes with it."""

from __future__ import annotations

from math import prod

from strato.schedule.primitives.checks import fail, fresh_var, leaf, not_tensorized
from strato.schedule.state import Attach, ScheduleState, Split, Stage

TAILS = ("guard", "pad")


def child_names(stage: Stage, var: str, count: int) -> list[str]:
    """Deterministic names: i.outer/i.inner for two parts, i.0, i.1, .. for more."""
    suffixes = ["outer", "inner"] if count == 2 else [str(n) for n in range(count)]
    names: list[str] = []
    for suffix in suffixes:
        name = fresh_var(stage, f"{var}.{suffix}")
        if name in names:
            name = fresh_var(stage, f"{name}.")
        names.append(name)
    return names


def split(
    state: ScheduleState, stage_name: str, var: str, factors: list[int | None], tail: str = "guard"
) -> list[str]:
    stage = state.stage(stage_name)
    pos = leaf("split", stage, var)
    not_tensorized("split", stage, [var])
    if tail not in TAILS:
        raise fail("split", f"tail must be one of {', '.join(TAILS)}, got {tail!r}")
    if len(factors) < 2:
        raise fail("split", f"give at least two factors, got {list(factors)}")
    if sum(f is None for f in factors) > 1:
        raise fail("split", f"at most one factor may be None, got {list(factors)}")
    for f in factors:
        if f is not None and (not isinstance(f, int) or isinstance(f, bool) or f <= 0):
            raise fail("split", f"factors must be positive integers or None, got {list(factors)}")
    extent = stage.extents()[var]
    known = prod(f for f in factors if f is not None)
    if None in factors:
        missing = -(-extent // known)
        factors = [missing if f is None else f for f in factors]
    inner = prod(factors[1:])  # type: ignore[arg-type]
    outer = -(-extent // inner)
    if factors[0] != outer:
        raise fail(
            "split",
            f"factors {list(factors)} of loop {var} (extent {extent}) need an outermost "
            f"factor of {outer}; give None to derive it",
        )
    names = child_names(stage, var, len(factors))
    relation = Split(var, tuple(names), (None, *factors[1:]), tail)  # type: ignore[arg-type]
    stage.relations.append(relation)
    if outer * inner != extent and tail == "pad":
        from strato.schedule.primitives.pad import pad_for_split

        pad_for_split(state, stage, var)
    stage.leaves[pos : pos + 1] = names
    stage.kinds.pop(var, None)  # the new loops are serial
    stage.annotations.pop(var, None)
    if stage.init_at == var:
        stage.init_at = names[0]
    # a stage computed at the split loop runs once per iteration of its innermost part
    for other in state.stages:
        if other.attach is not None and other.attach.stage == stage.name and other.attach.var == var:
            other.attach = Attach(stage.name, names[-1], other.attach.reverse)
    return names
