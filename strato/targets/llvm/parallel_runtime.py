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
* workers are started on demand, up to `threads - 1`, and persist. After a region a
  worker polls for the next one for a fraction of a millisecond (`WORKER_SPINS`), so the
  back-to-back regions of a model's kernels find it awake: a few microseconds with a
  spin-wait hint, then yielding its core between polls (`WORKER_PAUSES`), so that an idle
  worker does not take the core from a thread with work when the machine is busy; then
  it sleeps on a condition variable, and a caller takes the mutex to wake it only when
  some worker sleeps;
* the range is cut into up to `CHUNKS_PER_THREAD` chunks per participating thread; the
  caller and the workers take chunks from one atomic counter, so a thread slowed by other
  work on the machine takes fewer;
* a worker joins a region only while it is open; the caller closes it once the chunks
  are all taken and polls until the workers that joined have left (their last chunks
  are running). A worker that wakes late finds the region closed and goes back to
  polling, so a region never waits for a sleeping thread.

After `fork` the child has no workers: the pool's state is reset in the child
(`os.register_at_fork`), and the child starts its own workers when it needs them.

An object file of a model (`compile_object`, `CompiledModel.save_object`) carries its own
copy of the pool (`define_runtime_in`): every function and variable of the copy is
internal to that object, so the object needs only the C library's pthreads, and two
models' objects link into one program side by side, each with a pool of its own. A
constructor in the object initializes its pool when the program starts:

    cc main.c model.o -lm -lpthread

The runtime also keeps the heap buffers of compiled code between calls (the workspace):

    ptr  strato_workspace_take(i64 size)            a 64-byte aligned buffer of `size` bytes
    void strato_workspace_give(ptr buffer, i64 size) the buffer back, kept for a next take
    void strato_workspace_release()                 free every kept buffer

A model's arena and its kernels' buffers (a convolution's padded input, Winograd's
transformed tiles) are taken at the start of a call and given back at its end, so the
next call of the same sizes reuses them. Allocating them from the C library on every
call made the allocator hand large ones back to the system and map them again: in some
processes every call page-faulted through its buffers (a 56x56x64 convolution: 767 faults,
3.3 ms a call, against 2.0 ms without them; with Winograd's larger tiles 1,700 faults,
4.0 ms against 0.65 ms). The workspace keeps up to `WORKSPACE_SLOTS` buffers, matched by
exact size under a spin lock; when all are kept, giving one more frees the oldest
kept. What a take returns is the C library's own allocation (aligned_alloc), so `free`
may release it too. The buffers kept are at most those of the calls that ran; the
process's memory stays at its peak between calls, as an arena allocator's does.

`runtime_object()` is the pool alone, with its entry points global, for code that
declares `strato_parallel_for` itself. Its mutex and condition variables start zeroed,
which glibc and musl take as their static initializers; elsewhere call
`strato_parallel_init()` once before the first region.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

import llvmlite.binding as llvm

from strato.runtime.threads import MAX_THREADS
from strato.targets.llvm.host import HostTarget, host_target, target_machine

PARALLEL_FOR_SYMBOL = "strato_parallel_for"
"""The runtime's entry point, as compiled code declares it."""


CHUNKS_PER_THREAD = 4
"""Chunks per participating thread: enough for a thread that runs slower (another
process on its core) to hand work to the others, few enough that each chunk is long."""

WORKER_SPINS = 1024
"""Polls of the region counter a worker makes after a region before it sleeps: about
0.2-0.5 ms on an idle machine, longer than the gap between two kernels of a model, so the
regions of one call find the workers awake. Waking a sleeping thread costs tens of
microseconds under a hypervisor, more than a small kernel's whole region."""

WORKER_PAUSES = 256
"""The first polls of `WORKER_SPINS`, each with a spin-wait hint (a few microseconds: the
next region of a model usually opens within them); the later ones yield the core
(sched_yield) instead. A worker that only spins holds its core while it has nothing to
do: with another process busy on the machine (a second model running on two threads)
the spinning workers took the cores from the threads with work, and a model on two
threads ran 1.4x slower than on one (RegNetX-400MF 12.5 ms against 8.7 ms;
onnxruntime, whose idle threads block, 10 ms). Yielding keeps the worker as quick to
join when the machine is idle (a yield with nothing else to run returns at once) and
lets the busy threads run when it is not: 8.4-8.9 ms there, unchanged (5.0 ms) when
idle."""

CALLER_SPINS = 65536
"""Polls the caller makes while the workers that joined finish their last chunks, before
it starts yielding its core between polls (a worker preempted by another process)."""

WORKSPACE_SLOTS = 64
"""Buffers the workspace keeps between calls (see the module docstring)."""

WORKSPACE_ALIGNMENT = 64
"""Bytes every workspace buffer is aligned to (a cache line; the most any buffer of
compiled code asks for)."""

_LIBC_FUNCTIONS = (
    "aligned_alloc",
    "free",
    "pthread_create",
    "pthread_detach",
    "pthread_mutex_init",
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "pthread_cond_init",
    "pthread_cond_wait",
    "pthread_cond_broadcast",
    "sched_yield",
)

_SYNC_OBJECT_BYTES = 128
"""Room for a pthread_mutex_t or pthread_cond_t (40-48 bytes on 64-bit glibc and musl)."""


def _spin_hint(triple: str) -> tuple[str, str]:
    """The declaration and the call of the architecture's spin-wait hint (none where
    there is no such instruction)."""
    arch = triple.split("-", 1)[0]
    if arch in ("x86_64", "i386", "i686"):
        return "declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"
    if arch in ("aarch64", "arm64"):
        return "declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)"
    return "", ""


def runtime_ir(triple: str) -> str:
    """The runtime's LLVM IR for a machine of `triple`."""
    declare_pause, pause = _spin_hint(triple)
    return f"""
; strato parallel runtime: a persistent pthread pool for parallel loops
;
; A region is published by writing the job, then `open` and `generation` (both the new
; generation). A worker joins it by incrementing `active` and then finding `open` still
; equal to the generation it saw; the caller closes it by zeroing `open` and waits for
; `active` to fall to 0. Both sides use sequentially consistent atomics, so either the
; worker sees the region closed or the caller sees it joined. A worker sleeps only after
; polling for a while, counted in `sleepers` (under the mutex), and the caller takes the
; mutex to wake sleepers only when there are some.
@strato_pool_mutex = internal global [{_SYNC_OBJECT_BYTES} x i8] zeroinitializer, align 64
@strato_pool_work = internal global [{_SYNC_OBJECT_BYTES} x i8] zeroinitializer, align 64
@strato_pool_busy = internal global i32 0, align 64
@strato_pool_next_chunk = internal global i64 0, align 64
@strato_pool_generation = internal global i64 0, align 64
@strato_pool_open = internal global i64 0, align 64
@strato_pool_active = internal global i32 0, align 64
@strato_pool_sleepers = internal global i32 0, align 64
@strato_pool_workers = internal global i32 0, align 64
@strato_pool_job_workers = internal global i32 0
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
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @sched_yield()
declare ptr @aligned_alloc(i64, i64)
declare void @free(ptr)
{declare_pause}

; the workspace: buffers given back, by size (a null pointer: an empty slot)
@strato_workspace_lock = internal global i32 0, align 64
@strato_workspace_buffers = internal global [{WORKSPACE_SLOTS} x ptr] zeroinitializer
@strato_workspace_sizes = internal global [{WORKSPACE_SLOTS} x i64] zeroinitializer
@strato_workspace_evict = internal global i64 0

define internal void @strato_workspace_acquire() {{
entry:
  br label %try
try:
  %swap = cmpxchg ptr @strato_workspace_lock, i32 0, i32 1 acquire monotonic
  %locked = extractvalue {{ i32, i1 }} %swap, 1
  br i1 %locked, label %done, label %wait
wait:
  {pause}
  br label %try
done:
  ret void
}}

define internal void @strato_workspace_unlock() {{
  store atomic i32 0, ptr @strato_workspace_lock release, align 4
  ret void
}}

; a buffer of `size` bytes: one given back with that size, or a new one (null when the
; C library has no memory)
define ptr @strato_workspace_take(i64 %size) {{
entry:
  call void @strato_workspace_acquire()
  br label %scan
scan:
  %i = phi i64 [ 0, %entry ], [ %next, %skip ]
  %more = icmp ult i64 %i, {WORKSPACE_SLOTS}
  br i1 %more, label %look, label %miss
look:
  %slot = getelementptr [{WORKSPACE_SLOTS} x ptr], ptr @strato_workspace_buffers, i64 0, i64 %i
  %kept = load ptr, ptr %slot
  %size_slot = getelementptr [{WORKSPACE_SLOTS} x i64], ptr @strato_workspace_sizes, i64 0, i64 %i
  %kept_size = load i64, ptr %size_slot
  %full = icmp ne ptr %kept, null
  %same = icmp eq i64 %kept_size, %size
  %hit = and i1 %full, %same
  br i1 %hit, label %found, label %skip
skip:
  %next = add i64 %i, 1
  br label %scan
found:
  store ptr null, ptr %slot
  call void @strato_workspace_unlock()
  ret ptr %kept
miss:
  call void @strato_workspace_unlock()
  %rounded = add i64 %size, {WORKSPACE_ALIGNMENT - 1}
  %padded = and i64 %rounded, {-WORKSPACE_ALIGNMENT}
  %nonzero = icmp eq i64 %padded, 0
  %bytes = select i1 %nonzero, i64 {WORKSPACE_ALIGNMENT}, i64 %padded
  %new = call ptr @aligned_alloc(i64 {WORKSPACE_ALIGNMENT}, i64 %bytes)
  ret ptr %new
}}

; keep `buffer` (from strato_workspace_take, `size` bytes) for a later take: in an empty
; slot, or in the place of the oldest kept buffer, which is freed
define void @strato_workspace_give(ptr %buffer, i64 %size) {{
entry:
  %none = icmp eq ptr %buffer, null
  br i1 %none, label %return, label %lock
lock:
  call void @strato_workspace_acquire()
  br label %scan
scan:
  %i = phi i64 [ 0, %lock ], [ %next, %skip ]
  %more = icmp ult i64 %i, {WORKSPACE_SLOTS}
  br i1 %more, label %look, label %evict
look:
  %slot = getelementptr [{WORKSPACE_SLOTS} x ptr], ptr @strato_workspace_buffers, i64 0, i64 %i
  %kept = load ptr, ptr %slot
  %empty = icmp eq ptr %kept, null
  br i1 %empty, label %keep, label %skip
skip:
  %next = add i64 %i, 1
  br label %scan
keep:
  store ptr %buffer, ptr %slot
  %size_slot = getelementptr [{WORKSPACE_SLOTS} x i64], ptr @strato_workspace_sizes, i64 0, i64 %i
  store i64 %size, ptr %size_slot
  call void @strato_workspace_unlock()
  br label %return
evict:
  %count = load i64, ptr @strato_workspace_evict
  %victim = urem i64 %count, {WORKSPACE_SLOTS}
  %count1 = add i64 %count, 1
  store i64 %count1, ptr @strato_workspace_evict
  %victim_slot = getelementptr [{WORKSPACE_SLOTS} x ptr], ptr @strato_workspace_buffers, i64 0, i64 %victim
  %old = load ptr, ptr %victim_slot
  store ptr %buffer, ptr %victim_slot
  %victim_size = getelementptr [{WORKSPACE_SLOTS} x i64], ptr @strato_workspace_sizes, i64 0, i64 %victim
  store i64 %size, ptr %victim_size
  call void @strato_workspace_unlock()
  call void @free(ptr %old)
  br label %return
return:
  ret void
}}

; free every kept buffer
define void @strato_workspace_release() {{
entry:
  call void @strato_workspace_acquire()
  br label %scan
scan:
  %i = phi i64 [ 0, %entry ], [ %next, %look ]
  %more = icmp ult i64 %i, {WORKSPACE_SLOTS}
  br i1 %more, label %look, label %done
look:
  %slot = getelementptr [{WORKSPACE_SLOTS} x ptr], ptr @strato_workspace_buffers, i64 0, i64 %i
  %kept = load ptr, ptr %slot
  call void @free(ptr %kept)
  store ptr null, ptr %slot
  %next = add i64 %i, 1
  br label %scan
done:
  call void @strato_workspace_unlock()
  ret void
}}

; (re)initialize the pool: no workers, not busy. Called once before any region, and in
; the child after fork (whose copies of the workers do not exist).
define void @strato_parallel_init() {{
  call i32 @pthread_mutex_init(ptr @strato_pool_mutex, ptr null)
  call i32 @pthread_cond_init(ptr @strato_pool_work, ptr null)
  store atomic i32 0, ptr @strato_pool_workers seq_cst, align 4
  store i32 0, ptr @strato_pool_job_workers
  store atomic i64 0, ptr @strato_pool_open seq_cst, align 8
  store atomic i32 0, ptr @strato_pool_active seq_cst, align 4
  store atomic i32 0, ptr @strato_pool_sleepers seq_cst, align 4
  store atomic i32 0, ptr @strato_pool_busy release, align 4
  store atomic i32 0, ptr @strato_workspace_lock release, align 4
  ret void
}}

; the number of workers started (they persist until the process ends)
define i32 @strato_parallel_workers() {{
  %n = load atomic i32, ptr @strato_pool_workers seq_cst, align 4
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

; a worker: poll for a new region (then sleep until one), join it while it is open if
; it wants this worker
define internal ptr @strato_pool_worker(ptr %arg) {{
entry:
  %id = ptrtoint ptr %arg to i64
  %id32 = trunc i64 %id to i32
  %seen = alloca i64
  %spins = alloca i64
  %slot = getelementptr [{MAX_THREADS} x i64], ptr @strato_pool_start_generation, i64 0, i64 %id
  %first = load atomic i64, ptr %slot seq_cst, align 8
  store i64 %first, ptr %seen
  br label %poll
poll:
  store i64 0, ptr %spins
  br label %check
check:
  %g = load atomic i64, ptr @strato_pool_generation seq_cst, align 8
  %last = load i64, ptr %seen
  %new = icmp ne i64 %g, %last
  br i1 %new, label %region, label %idle
idle:
  %n = load i64, ptr %spins
  %n1 = add i64 %n, 1
  store i64 %n1, ptr %spins
  %keep_polling = icmp ult i64 %n1, {WORKER_SPINS}
  br i1 %keep_polling, label %poll_again, label %sleep
poll_again:
  %early = icmp ult i64 %n1, {WORKER_PAUSES}
  br i1 %early, label %hint, label %yield
hint:
  {pause}
  br label %check
yield:
  call i32 @sched_yield()
  br label %check
sleep:
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  atomicrmw add ptr @strato_pool_sleepers, i32 1 seq_cst
  br label %asleep
asleep:
  %g2 = load atomic i64, ptr @strato_pool_generation seq_cst, align 8
  %last2 = load i64, ptr %seen
  %woken = icmp ne i64 %g2, %last2
  br i1 %woken, label %wake, label %wait
wait:
  call i32 @pthread_cond_wait(ptr @strato_pool_work, ptr @strato_pool_mutex)
  br label %asleep
wake:
  atomicrmw sub ptr @strato_pool_sleepers, i32 1 seq_cst
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  br label %poll
region:
  store i64 %g, ptr %seen
  atomicrmw add ptr @strato_pool_active, i32 1 seq_cst
  %open = load atomic i64, ptr @strato_pool_open seq_cst, align 8
  %still_open = icmp eq i64 %open, %g
  br i1 %still_open, label %wanted, label %leave
wanted:
  %workers = load i32, ptr @strato_pool_job_workers
  %is_wanted = icmp ult i32 %id32, %workers
  br i1 %is_wanted, label %work, label %leave
work:
  %body = load ptr, ptr @strato_pool_job_body
  %ctx = load ptr, ptr @strato_pool_job_ctx
  %trip = load i64, ptr @strato_pool_job_trip
  %chunk = load i64, ptr @strato_pool_job_chunk
  call void @strato_pool_run_chunks(ptr %body, ptr %ctx, i64 %trip, i64 %chunk)
  br label %leave
leave:
  atomicrmw sub ptr @strato_pool_active, i32 1 seq_cst
  br label %poll
}}

; start workers (the mutex held) until `want` exist or the system refuses one;
; returns how many exist
define internal i32 @strato_pool_start_workers(i32 %want) {{
entry:
  %tid = alloca i64
  br label %check
check:
  %have = load atomic i32, ptr @strato_pool_workers seq_cst, align 4
  %enough = icmp sge i32 %have, %want
  br i1 %enough, label %done, label %start
start:
  %index = zext i32 %have to i64
  %slot = getelementptr [{MAX_THREADS} x i64], ptr @strato_pool_start_generation, i64 0, i64 %index
  %g = load atomic i64, ptr @strato_pool_generation seq_cst, align 8
  store atomic i64 %g, ptr %slot seq_cst, align 8
  %arg = inttoptr i64 %index to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @strato_pool_worker, ptr %arg)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %done, label %started
started:
  %thread = load i64, ptr %tid
  call i32 @pthread_detach(i64 %thread)
  %have1 = add i32 %have, 1
  store atomic i32 %have1, ptr @strato_pool_workers seq_cst, align 4
  br label %check
done:
  %n = load atomic i32, ptr @strato_pool_workers seq_cst, align 4
  ret i32 %n
}}

define void @{PARALLEL_FOR_SYMBOL}(ptr %body, ptr %ctx, i64 %trip, i64 %threads) {{
entry:
  %spins = alloca i64
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
  %n32 = trunc i64 %n to i32
  %want = sub i32 %n32, 1
  %started = load atomic i32, ptr @strato_pool_workers seq_cst, align 4
  %enough = icmp sge i32 %started, %want
  br i1 %enough, label %ready, label %start
start:
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  call i32 @strato_pool_start_workers(i32 %want)
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  br label %ready
ready:
  %have = load atomic i32, ptr @strato_pool_workers seq_cst, align 4
  %short = icmp slt i32 %have, %want
  %workers = select i1 %short, i32 %have, i32 %want
  %none = icmp eq i32 %workers, 0
  br i1 %none, label %give_up, label %open
give_up:
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
  store i32 %workers, ptr @strato_pool_job_workers
  store atomic i64 0, ptr @strato_pool_next_chunk monotonic, align 8
  %g = load atomic i64, ptr @strato_pool_generation seq_cst, align 8
  %g1 = add i64 %g, 1
  store atomic i64 %g1, ptr @strato_pool_open seq_cst, align 8
  store atomic i64 %g1, ptr @strato_pool_generation seq_cst, align 8
  %sleepers = load atomic i32, ptr @strato_pool_sleepers seq_cst, align 4
  %asleep = icmp ne i32 %sleepers, 0
  br i1 %asleep, label %wake, label %run
wake:
  call i32 @pthread_mutex_lock(ptr @strato_pool_mutex)
  call i32 @pthread_cond_broadcast(ptr @strato_pool_work)
  call i32 @pthread_mutex_unlock(ptr @strato_pool_mutex)
  br label %run
run:
  call void @strato_pool_run_chunks(ptr %body, ptr %ctx, i64 %trip, i64 %chunk)
  store atomic i64 0, ptr @strato_pool_open seq_cst, align 8
  store i64 0, ptr %spins
  br label %join
join:
  %active = load atomic i32, ptr @strato_pool_active seq_cst, align 4
  %finished = icmp eq i32 %active, 0
  br i1 %finished, label %close, label %linger
linger:
  %k = load i64, ptr %spins
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %spins
  %patient = icmp ult i64 %k1, {CALLER_SPINS}
  br i1 %patient, label %hint, label %yield
hint:
  {pause}
  br label %join
yield:
  call i32 @sched_yield()
  br label %join
close:
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
        _bind_libc()
        module = llvm.parse_assembly(runtime_ir(host_target().triple))
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
        self.release = ctypes.CFUNCTYPE(None)(
            self.engine.get_function_address("strato_workspace_release")
        )
        self.init()
        for name in IMPORTED_FUNCTIONS:
            llvm.add_symbol(name, self.engine.get_function_address(name))


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


def _bind_libc() -> None:
    """Bind the pthread (and sched_yield) functions the runtime calls to their addresses in this process
    (in libc, or libpthread on older C libraries), however Python was linked."""
    libraries = [ctypes.CDLL(None)]
    for name in _LIBC_FUNCTIONS:
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


def runtime_object(machine: HostTarget | None = None) -> bytes:
    """The runtime as an object file for `machine` (the host by default), to link with
    code that declares `strato_parallel_for` into a C program (`-lpthread` where
    pthreads are a separate library)."""
    if machine is None:
        host_target()
        emitter = _runtime_machine(jit=False)
        triple = emitter.triple
    else:
        emitter = target_machine(machine, 2)
        triple = machine.triple
    module = llvm.parse_assembly(runtime_ir(triple))
    module.triple = triple
    module.data_layout = str(emitter.target_data)
    return emitter.emit_object(module)


WORKSPACE_TAKE = "strato_workspace_take"
WORKSPACE_GIVE = "strato_workspace_give"

IMPORTED_FUNCTIONS = (PARALLEL_FOR_SYMBOL, WORKSPACE_TAKE, WORKSPACE_GIVE)
"""The runtime's functions compiled code calls: a module or object that declares one of
them needs the runtime (bound process-wide for the JIT, defined inside object files)."""

RUNTIME_FUNCTIONS = (
    *IMPORTED_FUNCTIONS,
    "strato_parallel_init",
    "strato_parallel_workers",
    "strato_workspace_release",
)
"""The functions the runtime's IR defines with external linkage."""


def release_workspace() -> None:
    """Free the buffers the workspace keeps between calls in this process (the next calls
    allocate them again)."""
    install_parallel_runtime()
    assert _RUNTIME is not None
    _RUNTIME.release()

_CONSTRUCTOR = """
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @strato_parallel_init, ptr null }]
declare void @strato_parallel_init()
"""


def _declares(module: llvm.ModuleRef, name: str) -> bool:
    try:
        return module.get_function(name).is_declaration
    except NameError:
        return False


def define_runtime_in(module: llvm.ModuleRef, triple: str) -> bool:
    """Define the pool inside `module` when the module calls one of its functions
    (`IMPORTED_FUNCTIONS`: a parallel loop, a workspace buffer):
    a private copy (every symbol of it internal, so objects of several models link into
    one program) that a constructor initializes when the program starts. Returns
    whether the module needed it. Used for object files, which no process binds the
    pool for; a JIT-compiled module shares the process's pool instead."""
    if not any(_declares(module, name) for name in IMPORTED_FUNCTIONS):
        return False
    runtime = llvm.parse_assembly(runtime_ir(triple))
    runtime.link_in(llvm.parse_assembly(_CONSTRUCTOR))
    module.link_in(runtime)
    for name in RUNTIME_FUNCTIONS:
        module.get_function(name).linkage = llvm.Linkage.internal
    return True


__all__ = [
    "CHUNKS_PER_THREAD",
    "IMPORTED_FUNCTIONS",
    "PARALLEL_FOR_SYMBOL",
    "RUNTIME_FUNCTIONS",
    "WORKSPACE_GIVE",
    "WORKSPACE_SLOTS",
    "WORKSPACE_TAKE",
    "define_runtime_in",
    "install_parallel_runtime",
    "pool_workers",
    "release_workspace",
    "runtime_object",
]
