// RUN: strato-opt %s -p 'convert-loops-to-llvm{threads=4}' | filecheck %s
// RUN: strato-opt %s -p 'convert-loops-to-llvm{threads=1}' | filecheck %s --check-prefix=SERIAL

// A parallel loop becomes a task of the thread pool: the captured values go into a
// stack array of slots allocated at the function entry, the loop into a call of
// strato_parallel_for with the task, the context, the trip count and the thread count.
// The buffer only the loop uses is private: the body allocates its own copy. Constants
// are rebuilt in the body, not captured.
// CHECK-LABEL: llvm.func @scale(%a: !llvm.ptr {{.*}}, %s: f32, %o: !llvm.ptr {{.*}}) attributes {loop.kernel} {
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %ctx = llvm.alloca %[[N]] x !llvm.ptr {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr inbounds %ctx[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %a, %[[S0]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr inbounds %ctx[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %s, %[[S1]] : f32, !llvm.ptr
// CHECK-NEXT:    %[[S2:.*]] = llvm.getelementptr inbounds %ctx[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %o, %[[S2]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[TASK:.*]] = llvm.mlir.addressof @scale_parallel_0_task : !llvm.ptr
// CHECK-NEXT:    %[[TRIP:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[THREADS:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    llvm.call @strato_parallel_for(%[[TASK]], %ctx, %[[TRIP]], %[[THREADS]]) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
//
// The body runs iterations begin..end: induction values lb + step * iteration. Kernel
// buffers stay noalias, and LLVM never inlines the body into the task.
// CHECK-LABEL: llvm.func @scale_parallel_0(%a_1: !llvm.ptr {llvm.noalias, strato.memref_type = memref<64x16xf32>}, %s_1: f32, %o_1: !llvm.ptr {llvm.noalias, strato.memref_type = memref<64x16xf32>}, %begin: i64, %end: i64) attributes {llvm.noinline} {
// CHECK-NEXT:    %[[SIZE:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %tmp = llvm.alloca %[[SIZE]] x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[STEP:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[FIRST:.*]] = llvm.mul %begin, %[[STEP]] : i64
// CHECK-NEXT:    %[[LAST:.*]] = llvm.mul %end, %[[STEP]] : i64
// CHECK-NEXT:    llvm.br ^for_header(%[[FIRST]] : i64)
// CHECK-NEXT:  ^for_header(%i: i64):
// CHECK-NEXT:    %[[MORE:.*]] = llvm.icmp "slt" %i, %[[LAST]] : i64
// CHECK:         llvm.fmul %{{.*}}, %s_1 : f32
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.add %i, %[[STEP]] : i64
//
// The task the pool calls loads the captures and calls the body.
// CHECK-LABEL: llvm.func internal @scale_parallel_0_task(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64) {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr inbounds %[[CTX]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr inbounds %[[CTX]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[S:.*]] = llvm.load %[[P1]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr inbounds %[[CTX]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[O:.*]] = llvm.load %[[P2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @scale_parallel_0(%[[A]], %[[S]], %[[O]], %[[BEGIN]], %[[END]]) : (!llvm.ptr, f32, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
//
// On one thread the loop stays a loop and runs serially.
// SERIAL-LABEL: llvm.func @scale(
// SERIAL-NOT:   strato_parallel_for
// SERIAL:       llvm.br ^i_header(%{{.*}} : i64) {strato.loop_kind = "parallel"}
func.func @scale(%a: memref<64x16xf32>, %s: f32, %o: memref<64x16xf32> {loop.output}) attributes {loop.kernel} {
  %tmp = memref.alloc() : memref<16xf32, #loop.scope<local>>
  loop.for %i = 0 to 64 step 2 parallel axis "i" {
    loop.for %j = 0 to 16 axis "j" {
      %v = memref.load %a[%i, %j] : memref<64x16xf32>
      %m = arith.mulf %v, %s : f32
      memref.store %m, %tmp[%j] : memref<16xf32, #loop.scope<local>>
    }
    loop.for %j2 = 0 to 16 vectorized axis "j2" {
      %w = memref.load %tmp[%j2] : memref<16xf32, #loop.scope<local>>
      %c = arith.constant 1.0 : f32
      %r = arith.addf %w, %c : f32
      memref.store %r, %o[%i, %j2] : memref<64x16xf32>
    }
  }
  memref.dealloc %tmp : memref<16xf32, #loop.scope<local>>
  func.return
}

// A parallel loop with a run-time upper bound: the pool gets max(0, (n - lb + step - 1)
// / step) iterations, computed before the call, when they are enough work for a region
// (PARALLEL_MIN_ITERATIONS innermost iterations; here one per iteration); else the
// caller runs them all through the body function itself, without the captures' slots
// and the pool.
// CHECK-LABEL: llvm.func @run_time_trips(
// CHECK:         %[[LB:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[SPAN:.*]] = llvm.sub %trips, %[[LB]] : i64
// CHECK-NEXT:    %[[UP:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[STEP:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[ROUNDED:.*]] = llvm.add %[[SPAN]], %[[UP]] : i64
// CHECK-NEXT:    %[[TRIPS:.*]] = llvm.sdiv %[[ROUNDED]], %[[STEP]] : i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[POSITIVE:.*]] = llvm.icmp "sgt" %[[TRIPS]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[COUNT:.*]] = llvm.select %[[POSITIVE]], %[[TRIPS]], %[[ZERO]] : i1, i64
// CHECK-NEXT:    %[[ENOUGH:.*]] = llvm.mlir.constant(32768) : i64
// CHECK-NEXT:    %[[WORTH:.*]] = llvm.icmp "sge" %[[COUNT]], %[[ENOUGH]] : i64
// CHECK-NEXT:    llvm.cond_br %[[WORTH]], ^[[POOL:.*]], ^[[ALONE:.*]]
// CHECK-NEXT:  ^[[POOL]]:
// CHECK:         %[[TASK:.*]] = llvm.mlir.addressof @run_time_trips_parallel_0_task : !llvm.ptr
// CHECK-NEXT:    %[[THREADS:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    llvm.call @strato_parallel_for(%[[TASK]], %{{.*}}, %[[COUNT]], %[[THREADS]])
// CHECK:       ^[[ALONE]]:
// CHECK-NEXT:    %[[FIRST:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    llvm.call @run_time_trips_parallel_0(%trips_in, %trips_out, %[[FIRST]], %[[COUNT]])
// SERIAL-LABEL: llvm.func @run_time_trips(
// SERIAL-NOT:     strato_parallel_for
// SERIAL:         llvm.icmp "slt" %t, %trips : i64
func.func @run_time_trips(%trips_in: memref<?x4xf32>, %trips_out: memref<?x4xf32> {loop.output}, %trips: index) attributes {loop.kernel} {
  loop.for %t = 1 to %trips step 2 parallel axis "t" {
    %v = memref.load %trips_in[%t, %t] : memref<?x4xf32>
    memref.store %v, %trips_out[%t, %t] : memref<?x4xf32>
  }
  func.return
}

// Loops to run-time bounds inside: one to a size known before the loop (%cols, an
// argument) counts that many iterations, times the static 8 inside it; one to a count
// computed in the body (%half) counts what it is in the first iteration, rebuilt before
// the loop (%cols / 2, at least 0), times the 4 of its static loop. The pool gets the iterations
// when the trip count times that work, computed before the call, is enough for a region.
// CHECK-LABEL: llvm.func @run_time_work(
// CHECK:         %[[EIGHT:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[ROW:.*]] = llvm.mul %cols, %[[EIGHT]] : i64
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[HALF:.*]] = llvm.udiv %cols, %[[TWO]] : i64
// CHECK-NEXT:    %[[NONE:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[SOME:.*]] = llvm.icmp "sgt" %[[HALF]], %[[NONE]] : i64
// CHECK-NEXT:    %[[COUNT:.*]] = llvm.select %[[SOME]], %[[HALF]], %[[NONE]] : i1, i64
// CHECK-NEXT:    %[[FOUR:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[HALVES:.*]] = llvm.mul %[[COUNT]], %[[FOUR]] : i64
// CHECK-NEXT:    %[[WORK:.*]] = llvm.add %[[ROW]], %[[HALVES]] : i64
// CHECK-NEXT:    %[[TOTAL:.*]] = llvm.mul %{{.*}}, %[[WORK]] overflow<nsw> : i64
// CHECK-NEXT:    %[[ENOUGH:.*]] = llvm.mlir.constant(32768) : i64
// CHECK-NEXT:    %[[WORTH:.*]] = llvm.icmp "sge" %[[TOTAL]], %[[ENOUGH]] : i64
// CHECK-NEXT:    llvm.cond_br %[[WORTH]], ^{{.*}}, ^{{.*}}
// CHECK:         llvm.call @strato_parallel_for(
// CHECK:         llvm.call @run_time_work_parallel_0(
func.func @run_time_work(%work_in: memref<?x8xf32>, %work_out: memref<?x8xf32> {loop.output}, %rows: index, %cols: index) attributes {loop.kernel} {
  loop.for %r = 0 to %rows parallel axis "r" {
    loop.for %c = 0 to %cols axis "c" {
      loop.for %e = 0 to 8 axis "e" {
        %v = memref.load %work_in[%c, %e] : memref<?x8xf32>
        memref.store %v, %work_out[%r, %e] : memref<?x8xf32>
      }
    }
    %two = arith.constant 2 : index
    %half = arith.divui %cols, %two : index
    loop.for %h = 0 to %half axis "h" {
      loop.for %e2 = 0 to 4 axis "e2" {
        %w = memref.load %work_in[%h, %e2] : memref<?x8xf32>
        memref.store %w, %work_out[%r, %e2] : memref<?x8xf32>
      }
    }
  }
  func.return
}

// Calls in a parallel loop (the blocks of rows of a kernel of run-time sizes, each a
// call of the block's kernel): a loop calling a kernel that allocates nothing on the
// heap, defined in the module or declared `strato.task_callable` (compiled on its
// own), becomes a task, each call counted as a region's work (the pool gets the
// threads from one call on); a loop calling a kernel that allocates on the heap, or a
// function declared without the attribute, stays serial.
// CHECK-LABEL: llvm.func @blocks(
// CHECK:         %[[TRIP:.*]] = llvm.select %{{.*}}, %n, %{{.*}} : i1, i64
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[WORTH:.*]] = llvm.icmp "sge" %[[TRIP]], %[[ONE]] : i64
// CHECK-NEXT:    llvm.cond_br %[[WORTH]], ^{{.*}}, ^{{.*}}
// CHECK:         %[[TASK:.*]] = llvm.mlir.addressof @blocks_parallel_0_task : !llvm.ptr
// CHECK-NEXT:    %[[THREADS:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    llvm.call @strato_parallel_for(%[[TASK]], %{{.*}}, %[[TRIP]], %[[THREADS]])
// CHECK:         llvm.mlir.addressof @blocks_parallel_1_task : !llvm.ptr
// CHECK:         llvm.call @strato_parallel_for(
// CHECK-NOT:     llvm.call @strato_parallel_for(
// CHECK:         llvm.call @heap_kernel(
// CHECK:         llvm.br ^heap_header{{.*}} {strato.loop_kind = "parallel"}
// CHECK:         llvm.call @unknown(
// CHECK:         llvm.br ^unknown_header{{.*}} {strato.loop_kind = "parallel"}
// CHECK-LABEL: llvm.func @blocks_parallel_1(
// CHECK:         llvm.call @compiled(
// CHECK-LABEL: llvm.func @blocks_parallel_0(
// CHECK:         llvm.call @block_kernel(
func.func @blocks(%x: memref<?xf32>, %y: memref<?xf32> {loop.output}, %n: index) {
  loop.for %b = 0 to %n parallel axis "defined" {
    %vx = loop.view %x[%b] : memref<?xf32> to memref<4xf32>
    %vy = loop.view %y[%b] : memref<?xf32> to memref<4xf32>
    func.call @block_kernel(%vx, %vy) : (memref<4xf32>, memref<4xf32>) -> ()
  }
  loop.for %c = 0 to %n parallel axis "compiled" {
    %vx = loop.view %x[%c] : memref<?xf32> to memref<4xf32>
    %vy = loop.view %y[%c] : memref<?xf32> to memref<4xf32>
    func.call @compiled(%vx, %vy) : (memref<4xf32>, memref<4xf32>) -> ()
  }
  loop.for %d = 0 to %n parallel axis "heap" {
    %vx = loop.view %x[%d] : memref<?xf32> to memref<4xf32>
    %vy = loop.view %y[%d] : memref<?xf32> to memref<4xf32>
    func.call @heap_kernel(%vx, %vy) : (memref<4xf32>, memref<4xf32>) -> ()
  }
  loop.for %e = 0 to %n parallel axis "unknown" {
    %vx = loop.view %x[%e] : memref<?xf32> to memref<4xf32>
    %vy = loop.view %y[%e] : memref<?xf32> to memref<4xf32>
    func.call @unknown(%vx, %vy) : (memref<4xf32>, memref<4xf32>) -> ()
  }
  func.return
}
func.func @block_kernel(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" {
    %v = memref.load %a[%i] : memref<4xf32>
    memref.store %v, %o[%i] : memref<4xf32>
  }
  func.return
}
func.func private @compiled(memref<4xf32>, memref<4xf32>) attributes {strato.task_callable}
func.func @heap_kernel(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  %big = memref.alloc() : memref<4xf32>
  loop.for %i = 0 to 4 axis "i" {
    %v = memref.load %a[%i] : memref<4xf32>
    memref.store %v, %big[%i] : memref<4xf32>
    %w = memref.load %big[%i] : memref<4xf32>
    memref.store %w, %o[%i] : memref<4xf32>
  }
  memref.dealloc %big : memref<4xf32>
  func.return
}
func.func private @unknown(memref<4xf32>, memref<4xf32>)

// A parallel loop fused from a nest over rows of a run-time length (the body recovers
// the row and the column as the index divided by %cols and its remainder): the body
// function divides the first and the last iteration of its range, then runs a loop over
// the rows and, inside it, one over the columns each row takes in the range; no
// division is left in the loops.
// CHECK-LABEL: llvm.func @fused_rows_parallel_0(
// CHECK-SAME:    %[[COLS:[^:]*]]: i64
// CHECK:         llvm.icmp "eq" %[[COLS]], %{{.*}} : i64
// CHECK:         llvm.udiv %begin{{.*}}, %{{.*}} : i64
// CHECK:         llvm.urem %begin{{.*}}, %{{.*}} : i64
// CHECK:         %[[LAST:.*]] = llvm.sub %end{{.*}}, %{{.*}} : i64
// CHECK:         llvm.udiv %[[LAST]], %{{.*}} : i64
// CHECK:         llvm.urem %[[LAST]], %{{.*}} : i64
// CHECK:         llvm.br ^[[ROWS:.*]](%{{.*}} : i64)
// CHECK-NEXT:  ^[[ROWS]](%[[ROW:.*]]: i64):
// CHECK:         llvm.icmp "eq" %[[ROW]], %{{.*}} : i64
// CHECK:         llvm.icmp "eq" %[[ROW]], %{{.*}} : i64
// CHECK:         llvm.select %{{.*}}, %{{.*}}, %[[COLS]] : i1, i64
// CHECK-NOT:     llvm.udiv
// CHECK-NOT:     llvm.urem
// CHECK:         %[[BASE:.*]] = llvm.mul %[[ROW]], %[[COLS]] : i64
// CHECK-NOT:     llvm.udiv
// CHECK-NOT:     llvm.urem
// CHECK:         llvm.return
func.func @fused_rows(%rows_in: memref<?xf32>, %rows_out: memref<?xf32> {loop.output}, %rows: index, %cols: index) attributes {loop.kernel} {
  %total = arith.muli %rows, %cols : index
  loop.for %f = 0 to %total parallel axis "r.c.fused" {
    %c = arith.remui %f, %cols : index
    %r = arith.divui %f, %cols : index
    %base = arith.muli %r, %cols : index
    %at = arith.addi %base, %c : index
    %v = memref.load %rows_in[%at] : memref<?xf32>
    memref.store %v, %rows_out[%at] : memref<?xf32>
  }
  func.return
}

// A buffer also used after the loop is shared, not private; a loop that allocates on
// the heap inside stays serial (its allocation failure could not reach the caller),
// and so does a parallel loop nested in an outlined one.
// CHECK-LABEL: llvm.func @shared_and_heap(
// CHECK:         llvm.call @strato_parallel_for(
// CHECK-NOT:     llvm.call @strato_parallel_for(
// CHECK:         llvm.call @strato_workspace_take(
// CHECK:         llvm.br ^k_header{{.*}}(%{{.*}} : i64) {strato.loop_kind = "parallel"}
// CHECK-LABEL: llvm.func @shared_and_heap_parallel_0(
// CHECK-NOT:     llvm.call @strato_parallel_for(
// CHECK:         llvm.br ^j_header{{.*}}(%{{.*}} : i64) {strato.loop_kind = "parallel"}
// CHECK-LABEL: llvm.func internal @shared_and_heap_parallel_0_task(
// The pool's entry point is declared once.
// CHECK:       llvm.func @strato_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)
func.func @shared_and_heap(%a: memref<8x8xf32>, %o: memref<8x8xf32> {loop.output}) attributes {loop.kernel} {
  %acc = memref.alloc() : memref<8xf32, #loop.scope<local>>
  loop.for %i = 0 to 8 parallel axis "i" {
    loop.for %j = 0 to 8 parallel axis "j" {
      %v = memref.load %a[%i, %j] : memref<8x8xf32>
      memref.store %v, %acc[%i] : memref<8xf32, #loop.scope<local>>
    }
  }
  loop.for %k = 0 to 8 parallel axis "k" {
    %big = memref.alloc() : memref<8x8xf32>
    %w = memref.load %acc[%k] : memref<8xf32, #loop.scope<local>>
    memref.store %w, %o[%k, %k] : memref<8x8xf32>
    memref.dealloc %big : memref<8x8xf32>
  }
  memref.dealloc %acc : memref<8xf32, #loop.scope<local>>
  func.return
}
