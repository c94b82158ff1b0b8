"""Traces: every primitive call of a schedule, replayable and serializable to JSON.

A trace is the kernel's name and a list of steps; a step is a primitive's name and its
arguments, where a stage handle is `{"stage": name}` and a loop handle is
`{"stage": name, "loop": axis}`. Loop and stage names are deterministic, so replaying a
trace on a freshly lowered kernel gives structurally equal IR.

    trace = sch.trace
    text = trace.to_json()
    Trace.from_json(text).replay(Schedule(fresh_module))

This is what the tuning database stores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from strato.schedule.errors import ScheduleError

if TYPE_CHECKING:
    from strato.schedule.schedule import Schedule

TRACE_VERSION = 1


@dataclass
class Step:
    """One primitive call: its name, and its arguments as JSON values."""

    primitive: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"primitive": self.primitive, "args": self.args}
        if self.kwargs:
            entry["kwargs"] = self.kwargs
        return json.loads(json.dumps(entry))

    @staticmethod
    def from_dict(entry: Any) -> Step:
        if not isinstance(entry, dict) or not isinstance(entry.get("primitive"), str):
            raise ScheduleError(f"a trace step needs a 'primitive' name, got {entry!r}")
        args = entry.get("args", [])
        kwargs = entry.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ScheduleError(f"step {entry['primitive']}: 'args' must be a list and 'kwargs' an object")
        return Step(entry["primitive"], args, kwargs)


@dataclass
class Trace:
    """The primitive calls made on one kernel, in order."""

    kernel: str
    steps: list[Step] = field(default_factory=list)

    def append(self, step: Step) -> None:
        self.steps.append(step)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": TRACE_VERSION,
            "kernel": self.kernel,
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @staticmethod
    def from_dict(data: Any) -> Trace:
        if not isinstance(data, dict) or not isinstance(data.get("kernel"), str):
            raise ScheduleError("a trace is a JSON object with a 'kernel' name and 'steps'")
        version = data.get("version", TRACE_VERSION)
        if version != TRACE_VERSION:
            raise ScheduleError(f"trace version {version} is not supported (expected {TRACE_VERSION})")
        steps = data.get("steps", [])
        if not isinstance(steps, list):
            raise ScheduleError("a trace's 'steps' must be a list")
        return Trace(data["kernel"], [Step.from_dict(s) for s in steps])

    @staticmethod
    def from_json(text: str) -> Trace:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ScheduleError(f"a trace is not valid JSON: {error}") from None
        return Trace.from_dict(data)

    def replay(self, schedule: Schedule) -> Schedule:
        """Apply every step to `schedule` (a fresh kernel of the same computation)."""
        for step in self.steps:
            schedule.apply_step(step)
        return schedule

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.to_dict() == other.to_dict()


def traces_from_json(text: str) -> list[Trace]:
    """One trace (a JSON object) or several (a JSON list of them)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScheduleError(f"a trace is not valid JSON: {error}") from None
    if isinstance(data, list):
        return [Trace.from_dict(d) for d in data]
    return [Trace.from_dict(data)]


__all__ = ["Step", "TRACE_VERSION", "Trace", "traces_from_json"]
