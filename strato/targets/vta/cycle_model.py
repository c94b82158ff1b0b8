"""A cycle-approximate model of VTA: three modules running concurrently, ordered by tokens.

Each module (load, compute, store) executes its own instructions in order, one at a time.
An instruction starts when its module is free and every token it pops has been pushed; its
pushes become visible when it ends. Tokens match first-in first-out, so the k-th pop of a
token queue waits for the k-th push of that queue; this makes the timing a pure function of
the stream (no dependence on the order in which a simulator visits ready modules).

Durations (`CycleParams`, defaults below, all in accelerator clock cycles):

- every instruction: `insn_overhead` (fetch, decode, dispatch);
- GEMM: `gemm_cycles_per_uop` per micro-op (1, HLS initiation interval 1), reset included;
- ALU: `alu_cycles_per_uop` per micro-op (2, HLS initiation interval 2);
- LOAD (any memory, including the compute module's UOP and ACC loads) and STORE:
  `dma_latency` + ceil(bytes / `dma_bytes_per_cycle`) + `pad_cycles_per_element` per zero
  element a LOAD writes; a NOP (x_size = 0) costs only the overhead.

The defaults model the Pynq build: 8 bytes per cycle (a 64-bit AXI port), 32 cycles from a
DMA request to its first beat, 4 cycles of instruction overhead. Each module has its own DMA
port and the ports do not contend. Fetch routes the stream in order into the module queues
and takes no time, but stalls while the next instruction's queue is full: a module holds the
instruction it executes or waits on, and its queue `queue_depth` more (VTA: 512); the
functional simulator applies the same bound, so a stream that only deadlocks because a
queue fills up is reported there too.

Compute utilization is the fraction of all cycles in which the GEMM core does useful work:
accumulate micro-ops x `gemm_cycles_per_uop` / total cycles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.isa import Alu, Gemm, Instruction, Load, Stage, Store, describe


@dataclass(frozen=True)
class CycleParams:
    """Timing parameters of the cycle model (see the module docstring for their meaning)."""

    gemm_cycles_per_uop: int = 1
    alu_cycles_per_uop: int = 2
    dma_bytes_per_cycle: int = 8
    dma_latency: int = 32
    pad_cycles_per_element: int = 1
    insn_overhead: int = 4
    queue_depth: int = 512

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value < 0 or (value == 0 and name in ("dma_bytes_per_cycle", "queue_depth")):
                raise VTAError(f"cycle model: {name} = {value} must be {'positive' if value == 0 else 'non-negative'}")

    def describe(self) -> str:
        return (
            f"GEMM {self.gemm_cycles_per_uop} cycle/uop, ALU {self.alu_cycles_per_uop} cycles/uop, "
            f"DMA {self.dma_bytes_per_cycle} B/cycle + {self.dma_latency} cycles latency, "
            f"{self.pad_cycles_per_element} cycle/pad element, {self.insn_overhead} cycles/instruction, "
            f"module queues of {self.queue_depth}"
        )


@dataclass
class CycleReport:
    """Total cycles, busy cycles per module, and the GEMM core's share of all cycles."""

    total_cycles: int
    busy_cycles: dict[str, int]
    gemm_cycles: int
    params: CycleParams = field(default_factory=CycleParams)
    # (start, end) cycle of every instruction, by index in the stream
    timeline: list[tuple[int, int]] = field(default_factory=list, repr=False)

    @property
    def compute_utilization(self) -> float:
        return self.gemm_cycles / self.total_cycles if self.total_cycles else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "total_cycles": self.total_cycles,
            "busy_cycles": dict(self.busy_cycles),
            "gemm_cycles": self.gemm_cycles,
            "compute_utilization": self.compute_utilization,
        }


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def duration(insn: Instruction, config: VTAConfig, params: CycleParams) -> int:
    """Cycles the instruction keeps its module busy."""
    cycles = params.insn_overhead
    if isinstance(insn, (Load, Store)):
        if insn.is_nop:
            return cycles
        data_bytes = insn.x_size * insn.y_size * config.elem_bytes(insn.memory_type)
        cycles += params.dma_latency + _ceil_div(data_bytes, params.dma_bytes_per_cycle)
        if isinstance(insn, Load):
            width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
            height = insn.y_pad_0 + insn.y_size + insn.y_pad_1
            cycles += (width * height - insn.x_size * insn.y_size) * params.pad_cycles_per_element
        return cycles
    if isinstance(insn, Gemm):
        return cycles + insn.uop_count * params.gemm_cycles_per_uop
    if isinstance(insn, Alu):
        return cycles + insn.uop_count * params.alu_cycles_per_uop
    return cycles


def token_queue(stage: Stage, direction: str) -> tuple[Stage, Stage]:
    """The (from, to) token queue an instruction on `stage` pops or pushes towards `direction`."""
    other = Stage(stage - 1) if direction == "prev" else Stage(stage + 1)
    return (stage, other)


def _pops(insn: Instruction) -> tuple[tuple[str, bool], ...]:
    return (("prev", insn.pop_prev), ("next", insn.pop_next))


def estimate_cycles(
    insns: Sequence[Instruction], config: VTAConfig = DEFAULT_CONFIG, params: CycleParams | None = None
) -> CycleReport:
    """Time a well-formed stream (one that the functional simulator runs without error)."""
    params = params or CycleParams()
    per_stage: dict[Stage, list[int]] = {stage: [] for stage in Stage}
    stage_position = []
    for index, insn in enumerate(insns):
        stage_position.append(len(per_stage[insn.stage]))
        per_stage[insn.stage].append(index)
    fetched, last_fetch = 0, 0
    fetch_time = [0] * len(insns)
    # when a module takes the instruction (frees its queue slot): fetched and module free
    take_time: list[int | None] = [None] * len(insns)
    position = dict.fromkeys(Stage, 0)
    free_at = dict.fromkeys(Stage, 0)
    busy = dict.fromkeys(Stage, 0)
    pushes: dict[tuple[Stage, Stage], list[int]] = {}
    popped: dict[tuple[Stage, Stage], int] = {}
    gemm_cycles = 0
    timeline = [(0, 0)] * len(insns)
    remaining = len(insns)
    while remaining:
        progressed = False
        while fetched < len(insns):
            stage, p = insns[fetched].stage, stage_position[fetched]
            if p >= params.queue_depth:  # the queue is full until the module takes p - depth
                freed = take_time[per_stage[stage][p - params.queue_depth]]
                if freed is None:
                    break
                last_fetch = max(last_fetch, freed)
            fetch_time[fetched] = last_fetch
            fetched += 1
            progressed = True
        for stage in Stage:
            while position[stage] < len(per_stage[stage]) and per_stage[stage][position[stage]] < fetched:
                index = per_stage[stage][position[stage]]
                insn = insns[index]
                if take_time[index] is None:
                    take_time[index] = max(fetch_time[index], free_at[stage])
                    progressed = True
                pops = [token_queue(stage, d)[::-1] for d, flag in _pops(insn) if flag]
                ready_times = []
                for queue in pops:
                    k = popped.get(queue, 0)
                    times = pushes.get(queue, [])
                    if k >= len(times):
                        break
                    ready_times.append(times[k])
                else:
                    for queue in pops:
                        popped[queue] = popped.get(queue, 0) + 1
                    start = max([take_time[index], *ready_times])
                    cycles = duration(insn, config, params)
                    end = start + cycles
                    timeline[index] = (start, end)
                    free_at[stage] = end
                    busy[stage] += cycles
                    if isinstance(insn, Gemm) and not insn.reset:
                        gemm_cycles += insn.uop_count * params.gemm_cycles_per_uop
                    for direction, flag in (("prev", insn.push_prev), ("next", insn.push_next)):
                        if flag:
                            pushes.setdefault(token_queue(stage, direction), []).append(end)
                    position[stage] += 1
                    remaining -= 1
                    progressed = True
                    continue
                break
        if not progressed:
            stuck = min(per_stage[s][position[s]] for s in Stage if position[s] < len(per_stage[s]))
            raise VTAError(f"cycle model: {describe(insns[stuck])} waits for a token that is never pushed", stuck)
    total = max(free_at.values())
    return CycleReport(
        total_cycles=total,
        busy_cycles={stage.name.lower(): busy[stage] for stage in Stage},
        gemm_cycles=gemm_cycles,
        params=params,
        timeline=timeline,
    )

