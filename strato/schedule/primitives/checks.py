"""Precondition checks shared by the primitives, each raising ScheduleError in the
user's terms ("cannot split: stage relu has no loop named k")."""

from __future__ import annotations

from strato.schedule.errors import ScheduleError
from strato.schedule.state import ScheduleState, Stage


def fail(primitive: str, reason: str) -> ScheduleError:
    return ScheduleError(f"cannot {primitive}: {reason}")


def leaf(primitive: str, stage: Stage, var: str) -> int:
    """The position of loop `var` among the loops of `stage`."""
    if var in stage.leaves:
        return stage.leaves.index(var)
    if var in stage.all_vars():
        raise fail(primitive, f"loop {var} of stage {stage.name} no longer exists (it was split or fused)")
    loops = ", ".join(stage.leaves)
    raise fail(primitive, f"stage {stage.name} has no loop named {var} (its loops: {loops})")


def not_tensorized(primitive: str, stage: Stage, vars_: list[str]) -> None:
    for var in vars_:
        if var in stage.tensorized:
            raise fail(primitive, f"loop {var} of stage {stage.name} is tensorized")


def nothing_attached(primitive: str, state: ScheduleState, stage: Stage, vars_: list[str]) -> None:
    for var in vars_:
        attached = state.attached_at(stage.name, var)
        if attached:
            raise fail(
                primitive,
                f"stage {attached[0].name} is computed at loop {var} of stage {stage.name}",
            )


def init_stays_outside_reductions(primitive: str, stage: Stage, leaves: list[str]) -> None:
    """A decomposed init must stay outside every reduction loop."""
    if stage.init_at is None:
        return
    pos = leaves.index(stage.init_at)
    for var in leaves[:pos]:
        if stage.is_reduction_var(var):
            raise fail(
                primitive,
                f"reduction loop {var} of stage {stage.name} would enclose its init, "
                f"decomposed at loop {stage.init_at}",
            )


def fresh_var(stage: Stage, base: str) -> str:
    taken = stage.all_vars()
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def is_within(state: ScheduleState, stage: Stage, host: Stage, var: str) -> bool:
    """Whether `stage` runs inside loop `var` of `host` (itself, or attached inside)."""
    if stage is host:
        return True
    pos = host.leaves.index(var)
    current = stage
    seen: set[str] = set()
    while current.attach is not None and current.name not in seen:
        seen.add(current.name)
        if current.attach.stage == host.name:
            return current.attach.var in host.leaves and host.leaves.index(current.attach.var) >= pos
        current = state.stage(current.attach.stage)
    return False


def root_of(state: ScheduleState, stage: Stage) -> Stage:
    """The stage at the kernel's root whose nest holds `stage`."""
    current = stage
    while current.attach is not None:
        current = state.stage(current.attach.stage)
    return current
