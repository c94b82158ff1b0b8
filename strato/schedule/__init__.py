"""Schedules: primitives on (stage, loop) handles, recorded as a replayable trace.

A `Schedule` wraps one kernel (a `func.func` with `loop.kernel`, as convert-te-to-loops
emits it). Its stages are blocks over iteration variables; its primitives change how
they loop, never what they compute:

    from strato.schedule import Schedule, ScheduleError
    sch = Schedule(module, kernel="dense_relu")
    dense = sch.get_stage("dense")
    i, j, k = sch.get_loops(dense)
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(jo, k, ji)
    sch.vectorize(ji)
    text = sch.trace.to_json()          # replays on a fresh kernel: Trace.from_json(text).replay(..)

A schedule from Python is a plain function `def schedule(sch): ...` (`apply_schedule`).

Names are deterministic so traces replay:
- split of loop `i` into two gives `i.outer` and `i.inner`; into more, `i.0`, `i.1`, ..;
- fuse of `i` and `j` gives `i.j.fused`;
- cache_write(stage, scope) adds the stage `<stage>.<scope>` (e.g. `dense.local`) that
  computes into a new buffer of that scope; `<stage>` then copies it to its buffer;
- cache_read(stage, buffer, scope) adds the stage `<stage>.<buffer>.<scope>` copying the
  buffer (named after its SSA name, or by position among what the stage reads), over
  loops `ax0`, `ax1`, ..;
- a name already taken gets a numeric suffix (`i.outer1`).

In the IR every loop carries `stage`, its `axis`, `reduction` on loops over reduction
axes and `init` on a reduction's init nest (strato.dialects.loop). A non-dividing split
guards its body with `scf.if` (tail="guard") or pads the local buffers (tail="pad");
compute_at'ed regions that may leave their buffer are guarded the same way. A local
buffer whose stage is computed at a loop is allocated at the size of the region
computed there (storage compaction), so a cache_write accumulator tile is small.

The kernel is rebuilt from the schedule state (strato/schedule/state.py, emit.py) after
every primitive; each primitive is a module of strato/schedule/primitives/.
"""

from strato.schedule.errors import ScheduleError
from strato.schedule.schedule import PRIMITIVES, LoopHandle, Schedule, StageHandle
from strato.schedule.trace import Step, Trace
from strato.schedule.workload import workload_key

__all__ = [
    "LoopHandle",
    "PRIMITIVES",
    "Schedule",
    "ScheduleError",
    "StageHandle",
    "Step",
    "Trace",
    "workload_key",
]
