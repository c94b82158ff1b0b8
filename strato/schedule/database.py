"""The tuning log: append-only JSON lines, one measurement a line.

    db = Database("tuning.jsonl")
    db.append(Record(task=key, name=..., config={...}, seconds=1.2e-3, costs=[...]))
    db.best(key)                 # the fastest record without error, or None
    db.records(key)              # every readable record of a task (all tasks: no key)
    db.problems                  # [(line number, reason)] of lines that were skipped

Each record is written as one line and flushed to disk before `append` returns, so a
run killed at any moment loses at most the candidates it was measuring; a torn last
line (the write a kill interrupted) and any corrupt line are reported with their line
numbers and skipped, never fatal, and the next append starts on a fresh line.
The tuner writes it (`strato.autotuning`); compilation reads the best records back
(`strato.compile(..., tuning=path)`, `schedule-default{tuning_log=path}`: a
`strato.schedule.knobs.TuningLog`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

TARGET = "llvm-cpu"


def record_target(device: str = "") -> str:
    """What a record measured on `device` says in its `target` field: `llvm-cpu` on the
    tuning host itself, `llvm-cpu aarch64-linux-gnu cortex-a72` on another machine (see
    `strato.targets.registry.KernelBuilder.device`)."""
    return f"{TARGET} {device}" if device else TARGET


@dataclass
class Record:
    task: str
    config: dict[str, dict[str, Any]]
    seconds: float | None
    costs: list[float] = field(default_factory=list)
    error: str | None = None
    name: str = ""
    flops: float = 0.0
    features_version: int = 0
    """The version of the features (`strato.autotuning.features.FEATURE_VERSION`)."""
    features: list[float] | None = None
    target: str = TARGET
    timestamp: float = field(default_factory=time.time)
    trace: dict[str, Any] | None = None
    """The candidate's schedule as a trace (`strato.schedule.Trace.to_dict`): replayed on
    a fresh copy of the task's kernel, it gives the program that was measured."""
    threads: int = 1
    """Threads the candidate ran on while measured."""
    versions: dict[str, str] = field(default_factory=dict)
    """strato's, xDSL's, llvmlite's and LLVM's versions when it was measured."""

    @property
    def ok(self) -> bool:
        return self.error is None and self.seconds is not None

    @property
    def gflops(self) -> float | None:
        if not self.ok or not self.flops:
            return None
        return self.flops / self.seconds / 1e9  # type: ignore[operator]

    @staticmethod
    def from_json(data: Any) -> Record:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        for key, kind in (("task", str), ("config", dict)):
            if not isinstance(data.get(key), kind):
                raise ValueError(f"field {key!r} missing or not a {kind.__name__}")
        seconds = data.get("seconds")
        if seconds is not None and (not isinstance(seconds, int | float) or seconds <= 0):
            raise ValueError("field 'seconds' is not a positive number")
        for key, kind in (("trace", dict), ("versions", dict)):
            if data.get(key) is not None and not isinstance(data[key], kind):
                raise ValueError(f"field {key!r} is not a {kind.__name__}")
        threads = data.get("threads", 1)
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ValueError("field 'threads' is not a positive integer")
        known = Record.__dataclass_fields__
        fields = {k: v for k, v in data.items() if k in known}
        fields.setdefault("versions", {})  # a record of an older log did not say
        return Record(**fields)


class Database:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[tuple[int, str]] = []
        self._records: list[Record] = []
        self._load()

    _cache: dict[str, tuple[tuple[float, int], Database]] = {}

    @classmethod
    def cached(cls, path: str) -> Database:
        """The database at `path`, read again only when the file changed."""
        try:
            stat = os.stat(path)
            stamp = (stat.st_mtime, stat.st_size)
        except OSError:
            stamp = (0.0, -1)
        hit = cls._cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        db = cls(path)
        cls._cache[path] = (stamp, db)
        return db

    def _load(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb") as file:
            data = file.read()
        lines = data.split(b"\n")
        torn = not data.endswith(b"\n") and data != b""
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            if torn and number == len(lines):
                self.problems.append((number, "torn last line (an interrupted write)"))
                continue
            try:
                self._records.append(Record.from_json(json.loads(raw)))
            except (ValueError, TypeError, UnicodeDecodeError) as error:
                self.problems.append((number, f"corrupt record: {str(error).splitlines()[0]}"))

    def append(self, record: Record) -> None:
        line = json.dumps(asdict(record), sort_keys=True) + "\n"
        with open(self.path, "ab") as file:
            if file.tell() > 0:
                with open(self.path, "rb") as check:
                    check.seek(-1, os.SEEK_END)
                    if check.read(1) != b"\n":
                        file.write(b"\n")
            file.write(line.encode())
            file.flush()
            os.fsync(file.fileno())
        self._records.append(record)

    def records(self, task: str | None = None, device: str | None = None) -> list[Record]:
        """The records of `task` (all tasks: None) measured on `device` (see
        `record_target`; any machine: None)."""
        target = None if device is None else record_target(device)
        return [
            r for r in self._records
            if (task is None or r.task == task) and (target is None or r.target == target)
        ]

    def best(self, task: str, device: str = "", threads: int | None = None) -> Record | None:
        """The fastest record of `task` without error measured on `device` (this host: "").
        With `threads`, among the records measured on that many threads when there are
        any (a kernel's best schedule on one thread is not its best on two, and its times
        are not comparable), else among all."""
        ok = [r for r in self.records(task, device) if r.ok]
        if threads is not None:
            ok = [r for r in ok if r.threads == threads] or ok
        return min(ok, key=lambda r: r.seconds) if ok else None  # type: ignore[arg-type,return-value]

    def training_data(self, features_version: int, exclude: str | None = None, device: str = ""):
        """(features, seconds, task keys) of the records measured on `device` carrying
        features of `features_version`, failed ones at infinite time: what a cost model
        transfers from."""
        import numpy as np

        target = record_target(device)
        rows = [
            r for r in self._records
            if r.task != exclude and r.features and r.features_version == features_version
            and r.target == target
        ]
        if not rows:
            return None
        features = np.asarray([r.features for r in rows], dtype=np.float32)
        seconds = np.asarray([r.seconds if r.ok else np.inf for r in rows], dtype=np.float64)
        return features, seconds, [r.task for r in rows]

    def tasks(self) -> list[str]:
        return sorted({r.task for r in self._records})
