"""Compiled code run in a forked child process, so that a crash of that code is a
diagnostic rather than the end of the calling process.

    outputs = [shared_zeros(shape, dtype)]             # memory the child writes
    run_isolated(lambda: function(*inputs, *outputs), "main", entry_op)

Used by `strato-opt -t interpret` and by the equivalence checker's compiled evaluator.
"""

from __future__ import annotations

import faulthandler
import mmap
import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import Operation

from strato.diagnostics import StratoError


def shared_zeros(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A zeroed array in memory shared with child processes, so that compiled code
    run by `run_isolated` can write the outputs the parent reads."""
    size = max(1, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
    return np.frombuffer(mmap.mmap(-1, size), dtype=dtype, count=int(np.prod(shape))).reshape(
        shape
    )


def run_isolated(call: Callable[[], object], name: str, op: Operation) -> None:
    """Run `call` (compiled code) in a forked child process where fork exists.

    Machine code reads and writes memory it is given without checks; a bad index, a
    division by zero or a failed allocation ends the process with a signal. In a child,
    that signal becomes a diagnostic naming the function instead of killing
    strato-opt. Outputs must live in shared memory (`shared_zeros`); a Python
    exception raised by `call` is re-raised here.
    """
    if not hasattr(os, "fork"):
        call()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report a Python exception, never return
        status = 0
        try:
            os.close(read_end)
            # The signal is reported by the parent: no Python stack dump, no core file.
            import resource  # POSIX only, as fork is

            faulthandler.disable()
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            call()
        except BaseException as err:
            status = 1
            if isinstance(err, StratoError):
                # The op does not cross the pipe; the parent puts the entry's back.
                err = StratoError(err.message, err.location)
            try:
                message = pickle.dumps(err)
            except Exception:
                message = pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}"))
            with os.fdopen(write_end, "wb") as stream:
                stream.write(message)
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        reported = stream.read()
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        try:
            signal_name = signal.Signals(number).name
        except ValueError:
            signal_name = f"signal {number}"
        cause = _SIGNAL_CAUSES.get(signal_name, "")
        raise StratoError(
            f"the compiled code of @{name} was stopped by {signal_name}"
            + (f" ({cause})" if cause else ""),
            op=op,
        )
    if reported:
        error = pickle.loads(reported)
        if isinstance(error, StratoError) and error.op is None and error.location is None:
            error.op = op
        raise error
    if os.WEXITSTATUS(wait_status) != 0:
        raise StratoError(
            f"the compiled code of @{name} exited with status {os.WEXITSTATUS(wait_status)}",
            op=op,
        )


_SIGNAL_CAUSES = {
    "SIGSEGV": "an access out of the bounds of a buffer, or a failed allocation",
    "SIGBUS": "an access out of the bounds of a buffer",
    "SIGFPE": "an integer division by zero or an overflowing division",
    "SIGILL": "an unreachable point or a trap in the code",
    "SIGABRT": "an abort in the code",
}


__all__ = ["run_isolated", "shared_zeros"]
