"""The search space of a task: the product of its stages' knob domains.

    space = SearchSpace(task, threads=1)  # candidates parallelized for 1 thread
    config = space.sample(rng)            # {stage: {knob: value}}
    space.neighbours(config)              # every config one knob away
    space.check(config)                   # None, or why it cannot be built

A point is also a tuple of domain indices (`space.point(config)`), the form the search
keeps in its visited sets. `check` applies the templates to a fresh copy of the kernel and
reports a knob outside its domain or a template that refuses the stage, before any code
is generated.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strato.autotuning.task import Config, Task
from strato.schedule.trace import Trace

Point = tuple[int, ...]


class InvalidConfig(Exception):
    """A config that cannot be applied, with the reason."""


class SearchSpace:
    def __init__(self, task: Task, threads: int = 1) -> None:
        self.task = task
        self.threads = threads
        """The threads each candidate's parallel loops are made for."""
        self.dims: list[tuple[str, str, tuple[Any, ...]]] = [
            (s.stage, name, domain) for s in task.stages for name, domain, _ in s.knobs
        ]

    @property
    def size(self) -> int:
        size = 1
        for _, _, domain in self.dims:
            size *= len(domain)
        return size

    def point(self, config: Config) -> Point:
        defaults = self.task.default_config()
        indices = []
        for stage, knob, domain in self.dims:
            value = config.get(stage, {}).get(knob, defaults[stage][knob])
            if value not in domain:
                raise InvalidConfig(f"{stage}.{knob} = {value!r} is not one of {list(domain)}")
            indices.append(domain.index(value))
        return tuple(indices)

    def config(self, point: Point) -> Config:
        config: Config = {}
        for (stage, knob, domain), index in zip(self.dims, point, strict=True):
            config.setdefault(stage, {})[knob] = domain[index]
        return config

    def default(self) -> Config:
        return self.task.default_config()

    def sample_point(self, rng: random.Random) -> Point:
        return tuple(rng.randrange(len(domain)) for _, _, domain in self.dims)

    def sample(self, rng: random.Random) -> Config:
        return self.config(self.sample_point(rng))

    def neighbour_points(self, point: Point) -> list[Point]:
        result = []
        for d, (_, _, domain) in enumerate(self.dims):
            for index in range(len(domain)):
                if index != point[d]:
                    result.append(point[:d] + (index,) + point[d + 1 :])
        return result

    def neighbours(self, config: Config) -> list[Config]:
        return [self.config(p) for p in self.neighbour_points(self.point(config))]

    def mutate_point(self, point: Point, rng: random.Random) -> Point:
        changeable = [d for d, (_, _, domain) in enumerate(self.dims) if len(domain) > 1]
        if not changeable:
            return point
        d = rng.choice(changeable)
        index = rng.choice([i for i in range(len(self.dims[d][2])) if i != point[d]])
        return point[:d] + (index,) + point[d + 1 :]

    def grid(self) -> Iterator[Point]:
        return itertools.product(*(range(len(domain)) for _, _, domain in self.dims))

    def schedule(self, config: Config) -> tuple[ModuleOp, func.FuncOp]:
        """A fresh module with the task's kernel alone (and the globals it reads)
        scheduled by `config`; InvalidConfig when a knob is out of its domain or a template refuses it."""
        module, kernel, _ = self.schedule_traced(config)
        return module, kernel

    def schedule_traced(self, config: Config) -> tuple[ModuleOp, func.FuncOp, Trace]:
        """`schedule`, and the trace of the primitives it applied (which replays on a
        fresh copy of the kernel to the same program)."""
        from strato.schedule.knobs import ForcedKnobs, kernel_of
        from strato.transforms.schedule_default import UNSCHEDULED_ATTR, schedule_kernel

        self.point(config)
        known = {s.stage for s in self.task.stages}
        unknown = set(config) - known
        if unknown:
            raise InvalidConfig(f"no tunable stage {sorted(unknown)[0]!r} in {self.task.name}")
        module, _ = self.task.kernel_module()
        knobs = ForcedKnobs({self.task.kernel: config})
        context = self.task.schedule_context(self.threads).with_knobs(knobs)
        trace = schedule_kernel(module, self.task.kernel, context)
        kernel = kernel_of(module, self.task.kernel)
        refused = kernel.attributes.get(UNSCHEDULED_ATTR)
        if refused is not None or trace is None:
            reasons = "; ".join(f"{k}: {v.data}" for k, v in refused.data.items()) if refused else ""  # type: ignore[attr-defined]
            raise InvalidConfig(reasons)
        return module, kernel, trace

    def check(self, config: Config) -> str | None:
        try:
            self.schedule(config)
        except InvalidConfig as error:
            return str(error)
        return None
