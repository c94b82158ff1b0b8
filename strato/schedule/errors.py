"""ScheduleError: a schedule primitive that cannot apply, said in the user's terms."""

from __future__ import annotations

from strato.diagnostics import StratoError


class ScheduleError(StratoError):
    """A primitive whose preconditions do not hold ("cannot compute_at: loop k of stage
    matmul is a reduction loop of the consumer"); the kernel is left unchanged."""


__all__ = ["ScheduleError"]
