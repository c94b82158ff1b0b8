"""apply-schedule: replay schedule traces (JSON) on the kernels they name.

Requires: kernels in the canonical form of convert-te-to-loops (`func.func` with
`loop.kernel`), and a trace file: one trace (`{"version": 1, "kernel": "k", "steps":
[..]}`) or a list of them, as `Schedule.trace.to_json()` writes.
Leaves illegal: nothing; a kernel no trace names is left as it is. A trace naming a
kernel that is not in the module, or a step that cannot apply, is a diagnostic at the
kernel.

    strato-opt k.mlir -p 'apply-schedule{trace=sched.json}'

with sched.json

    {"version": 1, "kernel": "relu", "steps": [
      {"primitive": "split", "args": [{"stage": "relu", "loop": "i"}],
       "kwargs": {"factors": [null, 4]}}]}

turns

    loop.for %i = 0 to 8 axis "i" attributes {stage = "relu"} { body(%i) }

into

    loop.for %i_outer = 0 to 2 axis "i.outer" attributes {stage = "relu"} {
      loop.for %i_inner = 0 to 4 axis "i.inner" attributes {stage = "relu"} {
        %c = arith.constant 4 : index
        %m = arith.muli %i_outer, %c : index
        %i = arith.addi %m, %i_inner : index
        body(%i)
      }
    }

From Python, a schedule is a plain function of a `Schedule`:

    def schedule(sch):
        (i,) = sch.get_loops(sch.get_stage("relu"))
        sch.split(i, factors=[None, 4])

    trace = apply_schedule(module, schedule, kernel="relu")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from strato.diagnostics import StratoError
from strato.schedule import Schedule, ScheduleError, Trace
from strato.schedule.schedule import find_kernel
from strato.schedule.trace import traces_from_json

PASS_NAME = "apply-schedule"


def apply_schedule(
    module: ModuleOp, schedule: Callable[[Schedule], object], kernel: str | None = None
) -> Trace:
    """Run the schedule function `schedule` on a kernel of `module` (the only one when
    `kernel` is None); the module is changed in place, the trace of the calls returned."""
    sch = Schedule(module, kernel=kernel)
    schedule(sch)
    return sch.trace


def replay_trace(module: ModuleOp, trace: Trace) -> Schedule:
    """Replay `trace` on the kernel it names; errors name the step."""
    try:
        function = find_kernel(module, trace.kernel)
    except ScheduleError as error:
        raise StratoError(f"{PASS_NAME}: {error.message}") from None
    sch = Schedule(module, kernel=trace.kernel)
    for n, step in enumerate(trace.steps):
        try:
            sch.apply_step(step)
        except ScheduleError as error:
            raise StratoError(
                f"{PASS_NAME}: step {n} ({step.primitive}) of the trace of @{trace.kernel}: "
                f"{error.message.removeprefix('error: ')}",
                op=function if function.parent is not None else sch.kernel,
            ) from None
        function = sch.kernel
    return sch


@dataclass(frozen=True)
class ApplySchedulePass(ModulePass):
    """Replay the schedule traces of a JSON file on the kernels they name.

    See the module docstring for the trace format and an example."""

    name = "apply-schedule"

    trace: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.trace:
            raise StratoError(f"{PASS_NAME} needs a trace file: apply-schedule{{trace=file.json}}")
        try:
            text = Path(self.trace).read_text()
        except OSError as error:
            raise StratoError(f"{PASS_NAME}: cannot read trace file {self.trace}: {error.strerror}") from None
        try:
            traces = traces_from_json(text)
        except ScheduleError as error:
            raise StratoError(f"{PASS_NAME}: {self.trace}: {error.message}") from None
        for trace in traces:
            replay_trace(op, trace)


__all__ = ["ApplySchedulePass", "apply_schedule", "replay_trace"]
