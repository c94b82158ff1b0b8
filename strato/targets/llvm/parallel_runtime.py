"""The thread pool that runs `parallel` loops: LLVM IR over pthreads, no C compiler.

Compiled code calls one function for each parallel region:

    void strato_parallel_for(void (*body)(i8 *ctx, i64 begin, i64 end), i8 *ctx,
                             i64 trip_count, i64 threads)

It runs `body(ctx, begin, end)` over chunks that cover [0, trip_count) exactly once and
returns when all of them are done. `threads` is the most threads the region may use, the
caller's own included; `threads <= 1` runs the whole range in the caller.

The pool lives in one runtime module, JIT-compiled once per process
(`install_parallel_runtime`), whose entry points are bound as process-wide symbols: every
model module only declares `strato_parallel_for`, so all models of a process (and object
files loaded later through llvmlite) share one pool.

How a region runs:

* the caller claims the pool with a compare-and-swap on a busy flag. A caller that finds
  the pool busy (another Python thread inside a model, or a parallel loop nested in a
  region's body) runs its whole range serially in its own thread: always correct, never
  a deadlock;
* workers are started on demand, up to `threads - 1`, and persist. Between regions they
  sleep on a condition variable (no spinning);
* the range is cut into up to `CHUNKS_PER_THREAD` chunks per participating thread; the
  caller and the workers take chunks from one atomic counter, so a thread slowed by other
  work on the machine takes fewer;
* a worker joins a region only while it is open; the caller closes it once the chunks
  are all taken and waits for the workers that joined. A worker that wakes late finds the
  region closed and sleeps again, so a region never waits for a sleeping thread.

After `fork` the child has no workers: the pool's state is reset in the child
(`os.register_at_fork`), and the child starts its own workers when it needs them.

Linking a compiled model into a C program needs the runtime as an object too:
`runtime_object()` (link with `-lpthread` on C libraries that keep pthreads apart):

    cc main.c model.o strato_pool.o -lpthread

Its mutex and condition variables start zeroed, which glibc and musl take as their
static initializers; elsewhere call `strato_parallel_init()` once before the model.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

import llvmlite.binding as llvm

from strato.targets.llvm.host import host_target
from strato.targets.llvm.parallel_threads import MAX_THREADS

PARALLEL_FOR_SYMBOL = "strato_parallel_for"
"""The runtime's entry point, as compiled code declares it."""


CHUNKS_PER_THREAD = 4
"""Chunks per participating thread: enough for a thread that runs slower (another
process on its core) to hand work to the others, few enough that each chunk is long."""

_PTHREAD_FUNCTIONS = (
    "pthread_create",
    "pthread_detach",
    "pthread_mutex_init",
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "pthread_cond_init",
    "pthread_cond_wait",
    "pthread_cond_signal",
    "pthread_cond_broadcast",
)

_SYNC_OBJECT_BYTES = 128
"""Room for a pthread_mutex_t or pthread_cond_t (40-48 bytes on 64-bit glibc and musl)."""

RUNTIME_IR = f"""
; strato parallel runtime: a persistent pthread pool for parallel loops
@strato_pool_mutex = internal global [{_SYNC_OBJECT_BYTES} x i8] zeroinitializer, align 64
@strato_pool_work = internal global [{_SYNC_OBJECT_BYTES} x i8] zeroinitializer, align 64
@strato_pool_done = internal global [{_SYNC_OBJECT_BYTES} x i8] zeroinitializer, align 64
@strato_pool_busy = internal global i32 0, align 64
@strato_pool_next_chunk = internal global i64 0, align 64
@strato_pool_generation = internal global i64 0, align 64
@strato_pool_workers = internal global i32 0
@strato_pool_job_workers = internal global i32 0
@strato_pool_job_open = internal global i32 0
@strato_pool_active = internal global i32 0
@strato_pool_job_body = internal global ptr null
@strato_pool_job_ctx = internal global ptr null
@strato_pool_job_trip = internal global i64 0
@strato_pool_job_chunk = internal global i64 0
@strato_pool_start_generation = internal global [{MAX_THREADS} x i64] zeroinitializer

declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_signal(ptr)
declare i32 @pthread_cond_broadcast(ptr)

; (re)initialize the pool: no workers, not busy. Called once before any region, and in
; the child after fork (whose copies of the workers do not exist).
define void @strato_parallel_init() {{
  call i32 @pthread_mutex_init(ptr @strato_pool_mutex, ptr null)
  call i32 @pthread_cond_init(ptr @strato_pool_work, ptr null)
  call i32 @pthread_cond_init(ptr @strato_pool_done, ptr null)
  store i32 0, ptr @strato_pool_workers
  store i32 0, ptr @strato_pool_job_workers
  store i32 0, ptr @strato_pool_job_open
  store i32 0, ptr @strato_pool_active
  store atomic i32 0, ptr @strato_pool_busy release, align 4
  ret void
}}

; the number of workers started (they persist until the process ends)
define i32 @strato_parallel_workers() {{
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  %n = load i32, ptr @strato_pool_workers
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  ret i32 %n
}}

; take chunks of [0, trip) from the shared counter until none is left
define internal void @strato_pool_run_chunks(ptr %body, ptr %ctx, i64 %trip, i64 %chunk) {{
entry:
  br label %take
take:
  %c = atomicrmw add ptr @strato_pool_next_chunk, i64 1 monotonic
  %begin = mul i64 %c, %chunk
  %more = icmp slt i64 %begin, %trip
  br i1 %more, label %run, label %done
run:
  %stop = add i64 %begin, %chunk
  %short = icmp slt i64 %stop, %trip
  %end = select i1 %short, i64 %stop, i64 %trip
  call void %body(ptr %ctx, i64 %begin, i64 %end)
  br label %take
done:
  ret void
}}

; a worker: sleep until a new region, join it if it is open and wants this worker
define internal ptr @strato_pool_worker(ptr %arg) {{
entry:
  %id = ptrtoint ptr %arg to i64
  %id32 = trunc i64 %id to i32
  %seen = alloca i64
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  %slot = getelementptr [{MAX_THREADS} x i64], ptr @strato_pool_start_generation, i64 0, i64 %id
  %first = load i64, ptr %slot
  store i64 %first, ptr %seen
  br label %wait
wait:
  %g = load i64, ptr @strato_pool_generation
  %last = load i64, ptr %seen
  %new = icmp ne i64 %g, %last
  br i1 %new, label %region, label %sleep
sleep:
  call i32 @pthread_cond_wait(ptr @strato_pool_work, ptr @strato_pool_mutex)
  br label %wait
region:
  store i64 %g, ptr %seen
  %open = load i32, ptr @strato_pool_job_open
  %is_open = icmp ne i32 %open, 0
  %wanted = load i32, ptr @strato_pool_job_workers
  %is_wanted = icmp ult i32 %id32, %wanted
  %join = and i1 %is_open, %is_wanted
  br i1 %join, label %work, label %wait
work:
  %active = load i32, ptr @strato_pool_active
  %active1 = add i32 %active, 1
  store i32 %active1, ptr @strato_pool_active
  %body = load ptr, ptr @strato_pool_job_body
  %ctx = load ptr, ptr @strato_pool_job_ctx
  %trip = load i64, ptr @strato_pool_job_trip
  %chunk = load i64, ptr @strato_pool_job_chunk
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  call void @strato_pool_run_chunks(ptr %body, ptr %ctx, i64 %trip, i64 %chunk)
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  %still = load i32, ptr @strato_pool_active
  %left = sub i32 %still, 1
  store i32 %left, ptr @strato_pool_active
  %last_out = icmp eq i32 %left, 0
  br i1 %last_out, label %signal, label %wait
signal:
  call i32 @pthread_cond_signal(ptr @strato_pool_done)
  br label %wait
}}

; start workers (the mutex held) until `want` exist or the system refuses one;
; returns how many exist
define internal i32 @strato_pool_start_workers(i32 %want) {{
entry:
  %tid = alloca i64
  br label %check
check:
  %have = load i32, ptr @strato_pool_workers
  %enough = icmp sge i32 %have, %want
  br i1 %enough, label %done, label %start
start:
  %index = zext i32 %have to i64
  %slot = getelementptr [{MAX_THREADS} x i64], ptr @strato_pool_start_generation, i64 0, i64 %index
  %g = load i64, ptr @strato_pool_generation
  store i64 %g, ptr %slot
  %arg = inttoptr i64 %index to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @strato_pool_worker, ptr %arg)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %done, label %started
started:
  %thread = load i64, ptr %tid
  call i32 @pthread_detach(i64 %thread)
  %have1 = add i32 %have, 1
  store i32 %have1, ptr @strato_pool_workers
  br label %check
done:
  %n = load i32, ptr @strato_pool_workers
  ret i32 %n
}}

define void @{PARALLEL_FOR_SYMBOL}(ptr %body, ptr %ctx, i64 %trip, i64 %threads) {{
entry:
  %empty = icmp slt i64 %trip, 1
  br i1 %empty, label %return, label %size
size:
  %few = icmp slt i64 %threads, %trip
  %n0 = select i1 %few, i64 %threads, i64 %trip
  %capped = icmp slt i64 %n0, {MAX_THREADS}
  %n = select i1 %capped, i64 %n0, i64 {MAX_THREADS}
  %alone = icmp sle i64 %n, 1
  br i1 %alone, label %serial, label %claim
claim:
  %swap = cmpxchg ptr @strato_pool_busy, i32 0, i32 1 acquire monotonic
  %claimed = extractvalue {{ i32, i1 }} %swap, 1
  br i1 %claimed, label %setup, label %serial
serial:
  call void %body(ptr %ctx, i64 0, i64 %trip)
  br label %return
setup:
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  %n32 = trunc i64 %n to i32
  %want = sub i32 %n32, 1
  %have = call i32 @strato_pool_start_workers(i32 %want)
  %short = icmp slt i32 %have, %want
  %workers = select i1 %short, i32 %have, i32 %want
  %none = icmp eq i32 %workers, 0
  br i1 %none, label %give_up, label %open
give_up:
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  store atomic i32 0, ptr @strato_pool_busy release, align 4
  br label %serial
open:
  %workers64 = zext i32 %workers to i64
  %threads_used = add i64 %workers64, 1
  %target = mul i64 %threads_used, {CHUNKS_PER_THREAD}
  %fewer = icmp slt i64 %trip, %target
  %chunks = select i1 %fewer, i64 %trip, i64 %target
  %round = add i64 %trip, %chunks
  %round1 = sub i64 %round, 1
  %chunk = sdiv i64 %round1, %chunks
  store ptr %body, ptr @strato_pool_job_body
  store ptr %ctx, ptr @strato_pool_job_ctx
  store i64 %trip, ptr @strato_pool_job_trip
  store i64 %chunk, ptr @strato_pool_job_chunk
  store atomic i64 0, ptr @strato_pool_next_chunk monotonic, align 8
  store i32 %workers, ptr @strato_pool_job_workers
  store i32 1, ptr @strato_pool_job_open
  %g = load i64, ptr @strato_pool_generation
  %g1 = add i64 %g, 1
  store i64 %g1, ptr @strato_pool_generation
  call i32 @pthread_cond_broadcast(ptr @strato_pool_work)
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  call void @strato_pool_run_chunks(ptr %body, ptr %ctx, i64 %trip, i64 %chunk)
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  store i32 0, ptr @strato_pool_job_open
  br label %join
join:
  %active = load i32, ptr @strato_pool_active
  %finished = icmp eq i32 %active, 0
  br i1 %finished, label %close, label %wait
wait:
  call i32 @pthread_cond_wait(ptr @strato_pool_done, ptr @strato_pool_mutex)
  br label %join
close:
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  store atomic i32 0, ptr @strato_pool_busy release, align 4
  br label %return
return:
  ret void
}}
"""


class _Runtime:
    """The compiled runtime: its execution engine (kept for the life of the process:
    workers run its code) and its entry points."""

    def __init__(self) -> None:
        host_target()
        _bind_pthreads()
        module = llvm.parse_assembly(RUNTIME_IR)
        module.verify()
        machine = _runtime_machine(jit=True)
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        # the IR is written by hand and small: code generation alone (no IR pipeline)
        # keeps the one-time cost at a few tens of milliseconds
        self.engine = llvm.create_mcjit_compiler(module, machine)
        self.engine.finalize_object()
        self.parallel_for = self.engine.get_function_address(PARALLEL_FOR_SYMBOL)
        self.init = ctypes.CFUNCTYPE(None)(self.engine.get_function_address("strato_parallel_init"))
        self.workers = ctypes.CFUNCTYPE(ctypes.c_int32)(
            self.engine.get_function_address("strato_parallel_workers")
        )
        self.init()
        llvm.add_symbol(PARALLEL_FOR_SYMBOL, self.parallel_for)


_RUNTIME: _Runtime | None = None
_LOCK = threading.Lock()


def _runtime_machine(*, jit: bool) -> llvm.TargetMachine:
    """A generic machine of the host's architecture: the runtime runs on this host
    whatever CPU a model is compiled for."""
    target = llvm.Target.from_triple(host_target().triple)
    return target.create_target_machine(
        opt=2,
        reloc="default" if jit else "pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


def _bind_pthreads() -> None:
    """Bind the pthread functions the runtime calls to their addresses in this process
    (in libc, or libpthread on older C libraries), however Python was linked."""
    libraries = [ctypes.CDLL(None)]
    for name in _PTHREAD_FUNCTIONS:
        function = _lookup(libraries, name)
        if function is None and len(libraries) == 1:
            path = ctypes.util.find_library("pthread")
            if path is not None:
                libraries.append(ctypes.CDLL(path))
                function = _lookup(libraries, name)
        if function is None:
            raise RuntimeError(f"the parallel runtime needs {name}, which this process lacks")
        llvm.add_symbol(name, ctypes.cast(function, ctypes.c_void_p).value)


def _lookup(libraries: list[ctypes.CDLL], name: str) -> object | None:
    for library in libraries:
        function = getattr(library, name, None)
        if function is not None:
            return function
    return None


def _reset_after_fork() -> None:
    if _RUNTIME is not None:
        _RUNTIME.init()


def install_parallel_runtime() -> int:
    """Compile the runtime once per process and bind `strato_parallel_for` for the JIT;
    returns its address. Safe to call from several threads."""
    global _RUNTIME
    with _LOCK:
        if _RUNTIME is None:
            runtime = _Runtime()
            # workers run the engine's code until the process ends: never free it
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(runtime))
            _RUNTIME = runtime
            os.register_at_fork(after_in_child=_reset_after_fork)
        return _RUNTIME.parallel_for


def pool_workers() -> int:
    """How many workers the pool has started in this process (0 before the first
    parallel region with more than one thread)."""
    install_parallel_runtime()
    assert _RUNTIME is not None
    return int(_RUNTIME.workers())


def runtime_object() -> bytes:
    """The runtime as an object file for the host, to link with a compiled model's
    object into a C program (`-lpthread` where pthreads are a separate library)."""
    host_target()
    machine = _runtime_machine(jit=False)
    module = llvm.parse_assembly(RUNTIME_IR)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    return machine.emit_object(module)


__all__ = [
    "CHUNKS_PER_THREAD",
    "PARALLEL_FOR_SYMBOL",
    "install_parallel_runtime",
    "pool_workers",
    "runtime_object",
]
