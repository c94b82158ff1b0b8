// RUN: strato-opt %s -p 'convert-loops-to-llvm{threads=1}' | filecheck %s

// A loop becomes header, body and latch blocks named after its axis; the kind of a
// non-serial loop that stays a loop (virtual threads, and parallel loops on one thread:
// convert-loops-to-llvm-parallel.mlir shows them on more) is on the back edge. Memrefs are bare pointers, index is i64.
// CHECK-LABEL: llvm.func @relu(%a: !llvm.ptr {strato.memref_type = memref<8xf32>}, %o: !llvm.ptr {loop.output, strato.memref_type = memref<8xf32>}) attributes {loop.kernel} {
// CHECK-NEXT:    %[[LB:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    llvm.br ^i_header(%[[LB]] : i64)
// CHECK-NEXT:  ^i_header(%i: i64):
// CHECK-NEXT:    %[[UB:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[IN:.*]] = llvm.icmp "slt" %i, %[[UB]] : i64
// CHECK-NEXT:    llvm.cond_br %[[IN]], ^i_body, ^i_exit
// CHECK-NEXT:  ^i_body:
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[V]], %[[Z]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %o[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[M]], %[[Q]] : f32, !llvm.ptr
// CHECK-NEXT:    %[[STEP:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %i, %[[STEP]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^i_header(%[[NEXT]] : i64) {strato.loop_kind = "virtual_thread"}
// CHECK-NEXT:  ^i_exit:
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
func.func @relu(%a: memref<8xf32>, %o: memref<8xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 8 virtual_thread axis "i" {
    %v = memref.load %a[%i] : memref<8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %o[%i] : memref<8xf32>
  }
  func.return
}


// Nested loops nest their CFGs: the outer latch follows the inner exit. A 2-d access
// is linearized row-major. A serial loop's back edge carries no kind.
// CHECK-LABEL: llvm.func @row_major(
// CHECK:       ^i_header{{.*}}(%[[I:.*]]: i64):
// CHECK:       ^j_header(%j: i64):
// CHECK:       ^j_body:
// CHECK-NEXT:    %[[C8:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[ROW:.*]] = llvm.mul %[[I]], %[[C8]] overflow<nsw> : i64
// CHECK-NEXT:    %[[LIN:.*]] = llvm.add %[[ROW]], %j overflow<nsw> : i64
// CHECK-NEXT:    llvm.getelementptr inbounds %{{.*}}[%[[LIN]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.br ^j_header(%{{.*}} : i64){{$}}
// CHECK-NEXT:  ^j_exit:
// CHECK-NEXT:    %[[STEP:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %[[I]], %[[STEP]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^i_header{{.*}}(%[[NEXT]] : i64) {strato.loop_kind = "parallel"}
func.func @row_major(%a: memref<4x8xf32>, %o: memref<4x8xf32> {loop.output}) {
  loop.for %i = 0 to 4 step 2 parallel axis "i" {
    loop.for %j = 0 to 8 axis "j" {
      %v = memref.load %a[%i, %j] : memref<4x8xf32>
      memref.store %v, %o[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}

// A static strided layout: offset + sum of index * stride.
// CHECK-LABEL: llvm.func @strided(
// CHECK:         %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[C2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[S:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[T:.*]] = llvm.mul %[[C2]], %[[S]] overflow<nsw> : i64
// CHECK-NEXT:    %[[U:.*]] = llvm.add %[[C1]], %[[T]] overflow<nsw> : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.mlir.constant(5) : i64
// CHECK-NEXT:    %[[LIN:.*]] = llvm.add %[[U]], %[[OFF]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.getelementptr inbounds %{{.*}}[%[[LIN]]]
func.func @strided(%a: memref<2x3xf32, strided<[1, 2], offset: 5>>, %o: memref<1xf32> {loop.output}) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = memref.load %a[%c1, %c2] : memref<2x3xf32, strided<[1, 2], offset: 5>>
  %c0 = arith.constant 0 : index
  memref.store %v, %o[%c0] : memref<1xf32>
  func.return
}

// Index arithmetic is i64 arithmetic; floordivsi corrects the truncated quotient.
// A divisor that is not a safe constant is guarded so nothing traps: 1 replaces a zero
// divisor (and -1 under INT_MIN), and a zero divisor gives 0.
// CHECK-LABEL: llvm.func @index_math(%i{{.*}}: i64, %j{{.*}}: i64) -> i64 {
// CHECK-NEXT:    %[[S:.*]] = llvm.add %i{{.*}}, %j{{.*}} : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.mul %[[S]], %j{{.*}} : i64
// CHECK:         %[[IZ:.*]] = llvm.icmp "eq" %i{{.*}}, %{{.*}} : i64
// CHECK:         %[[BAD:.*]] = llvm.or %[[IZ]], %{{.*}} : i1
// CHECK-NEXT:    %[[D:.*]] = llvm.select %[[BAD]], %{{.*}}, %i{{.*}} : i1, i64
// CHECK-NEXT:    %[[R0:.*]] = llvm.srem %[[P]], %[[D]] : i64
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.select %[[IZ]], %[[Z]], %[[R0]] : i1, i64
// CHECK:         %[[JD:.*]] = llvm.select %{{.*}}, %{{.*}}, %j{{.*}} : i1, i64
// CHECK:         %[[Q:.*]] = llvm.sdiv %[[R]], %[[JD]] : i64
// CHECK:         %[[ADJ:.*]] = llvm.and
// CHECK-NEXT:    %[[QM1:.*]] = llvm.sub %[[Q]], %{{.*}} : i64
// CHECK-NEXT:    %[[F0:.*]] = llvm.select %[[ADJ]], %[[QM1]], %[[Q]] : i1, i64
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[F:.*]] = llvm.select %{{.*}}, %{{.*}}, %[[F0]] : i1, i64
// CHECK-NEXT:    llvm.return %[[F]] : i64
func.func @index_math(%i: index, %j: index) -> index {
  %s = arith.addi %i, %j : index
  %p = arith.muli %s, %j : index
  %r = arith.remsi %p, %i : index
  %f = arith.floordivsi %r, %j : index
  func.return %f : index
}

// A constant divisor other than 0 and -1 needs no guard.
// CHECK-LABEL: llvm.func @constant_divisor(%i{{.*}}: i64) -> i64 {
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(7) : i64
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %i{{.*}}, %[[C]] : i64
// CHECK-NEXT:    llvm.return %[[Q]] : i64
func.func @constant_divisor(%i: index) -> index {
  %c7 = arith.constant 7 : index
  %q = arith.divsi %i, %c7 : index
  func.return %q : index
}

// CHECK-LABEL: llvm.func @float_math(%a{{.*}}: f32, %b{{.*}}: f32) -> f32 {
// CHECK-NEXT:    %[[LT:.*]] = llvm.fcmp "olt" %a{{.*}}, %b{{.*}} : f32
// CHECK-NEXT:    %[[S:.*]] = llvm.select %[[LT]], %a{{.*}}, %b{{.*}} : i1, f32
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.minimum.f32"(%[[S]], %b{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %[[N:.*]] = llvm.fneg %[[M]] : f32
// CHECK-NEXT:    %[[D:.*]] = llvm.fdiv %[[N]], %a{{.*}} : f32
// CHECK-NEXT:    llvm.return %[[D]] : f32
func.func @float_math(%a: f32, %b: f32) -> f32 {
  %lt = arith.cmpf olt, %a, %b : f32
  %s = arith.select %lt, %a, %b : f32
  %m = arith.minimumf %s, %b : f32
  %n = arith.negf %m : f32
  %d = arith.divf %n, %a : f32
  func.return %d : f32
}

// fptosi goes through the saturating intrinsic (xDSL's llvm dialect has no fptosi).
// CHECK-LABEL: llvm.func @conversions(%i{{.*}}: i64, %x: f32) -> f64 {
// CHECK-NEXT:    %[[W:.*]] = llvm.trunc %i{{.*}} : i64 to i32
// CHECK-NEXT:    %[[F:.*]] = llvm.sitofp %[[W]] : i32 to f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%x) : (f32) -> i32
// CHECK-NEXT:    %[[E:.*]] = llvm.fpext %[[F]] : f32 to f64
// CHECK-NEXT:    llvm.return %[[E]] : f64
func.func @conversions(%i: index, %x: f32) -> f64 {
  %w = arith.index_cast %i : index to i32
  %f = arith.sitofp %w : i32 to f32
  %t = arith.fptosi %x : f32 to i32
  %e = arith.extf %f : f32 to f64
  func.return %e : f64
}

// LLVM intrinsics where LLVM has them, libm calls (declared once) where it does not.
// CHECK-LABEL: llvm.func @math(%x{{.*}}: f64) -> f64 {
// CHECK-NEXT:    %[[E:.*]] = llvm.call_intrinsic "llvm.exp.f64"(%x{{.*}}) : (f64) -> f64
// CHECK-NEXT:    %[[R:.*]] = llvm.call @erf(%[[E]]) : (f64) -> f64
// CHECK-NEXT:    %[[T:.*]] = llvm.call_intrinsic "llvm.tanh.f64"(%[[R]]) : (f64) -> f64
// CHECK-NEXT:    %[[SQ:.*]] = llvm.call_intrinsic "llvm.sqrt.f64"(%[[T]]) : (f64) -> f64
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f64) : f64
// CHECK-NEXT:    %[[RS:.*]] = llvm.fdiv %[[ONE]], %[[SQ]] : f64
// CHECK-NEXT:    llvm.return %[[RS]] : f64
func.func @math(%x: f64) -> f64 {
  %e = math.exp %x : f64
  %r = math.erf %e : f64
  %t = math.tanh %r : f64
  %s = math.rsqrt %t : f64
  func.return %s : f64
}

// exp, erf and tanh of f32 are inline arithmetic (strato.targets.llvm.vector_math): no
// call, so a loop around them vectorizes. exp: clamp, round to n, reduce, polynomial,
// scale by two powers of two built in the exponent bits.
// CHECK-LABEL: llvm.func @inline_math(%x{{.*}}: f32) -> f32 {
// CHECK-NOT:     llvm.call @
// CHECK:         llvm.call_intrinsic "llvm.maximum.f32"(%x{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK:         llvm.call_intrinsic "llvm.fma.f32"
// CHECK:         llvm.bitcast %{{.*}} : f32 to i32
// CHECK:         llvm.shl
// CHECK-NOT:     llvm.call @
// CHECK:         llvm.call_intrinsic "llvm.copysign.f32"
// CHECK-NOT:     llvm.call @
// CHECK:         llvm.call_intrinsic "llvm.copysign.f32"
// CHECK-NOT:     llvm.call @
// CHECK:         llvm.return
func.func @inline_math(%x: f32) -> f32 {
  %e = math.exp %x : f32
  %r = math.erf %e : f32
  %t = math.tanh %r : f32
  func.return %t : f32
}

// log of f32 too: k and m from the bits (k the exponent of x over sqrt(1/2)), the
// polynomial in s = f / (2 + f), k ln 2 added; +-0, +inf, negatives and NaN taken from
// the bits.
// CHECK-LABEL: llvm.func @inline_log(%x{{.*}}: f32) -> f32 {
// CHECK-NOT:     llvm.call @
// CHECK:         llvm.bitcast %x{{.*}} : f32 to i32
// CHECK:         llvm.ashr
// CHECK:         llvm.fdiv
// CHECK:         llvm.sitofp
// CHECK-NOT:     llvm.call @
// CHECK:         llvm.return
func.func @inline_log(%x: f32) -> f32 {
  %l = math.log %x : f32
  func.return %l : f32
}

// Global-scope buffers are taken from the runtime's workspace and given back to it
// with their size (kept for the next call); a small local buffer is one alloca at the
// function entry and its dealloc disappears. A copy is a memcpy.
// CHECK-LABEL: llvm.func @buffers(%o{{.*}}: !llvm.ptr {loop.output, strato.memref_type = memref<4xf32>}) {
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %{{.*}} = llvm.alloca %[[N]] x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[BYTES:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[G:.*]] = llvm.call @strato_workspace_take(%[[BYTES]]) : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[SIZE:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[VOL:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%o{{.*}}, %[[G]], %[[SIZE]], %[[VOL]]) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
// CHECK-NEXT:    %[[GIVEN:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    llvm.call @strato_workspace_give(%[[G]], %[[GIVEN]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    llvm.return
func.func @buffers(%o: memref<4xf32> {loop.output}) {
  %g = memref.alloc() : memref<4xf32>
  %l = memref.alloc() : memref<4xf32, #loop.scope<local>>
  "memref.copy"(%g, %o) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %l : memref<4xf32, #loop.scope<local>>
  memref.dealloc %g : memref<4xf32>
  func.return
}

// An arena of 64-byte-aligned bytes comes from the workspace (whose buffers are all
// 64-byte aligned); a view of it is its pointer advanced by the byte shift.
// CHECK-LABEL: llvm.func @arena(%o{{.*}}: !llvm.ptr {loop.output, strato.memref_type = memref<4xf32>}) {
// CHECK-NEXT:    %[[BYTES:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    %[[A:.*]] = llvm.call @strato_workspace_take(%[[BYTES]]) : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[SHIFT:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[V:.*]] = llvm.getelementptr inbounds %[[A]][%[[SHIFT]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%o{{.*}}, %[[V]], {{.*}})
// CHECK-NEXT:    %[[GIVEN:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    llvm.call @strato_workspace_give(%[[A]], %[[GIVEN]]) : (!llvm.ptr, i64) -> ()
func.func @arena(%o: memref<4xf32> {loop.output}) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
  %offset = arith.constant 64 : index
  %v = memref.view %a[%offset][] : memref<128xi8> to memref<4xf32>
  "memref.copy"(%v, %o) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %a : memref<128xi8>
  func.return
}

// A loop.view of a block of rows is the buffer's pointer advanced by its element
// offset; accesses through it are addressed by the view's static layout.
// CHECK-LABEL: llvm.func @row_block(%blocked: !llvm.ptr {strato.memref_type = memref<?x8xf32>}, %first: i64) {
// CHECK-NEXT:    %block = llvm.getelementptr inbounds %blocked[%first] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %one = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[EIGHT:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[ROW:.*]] = llvm.mul %one, %[[EIGHT]] overflow<nsw> : i64
// CHECK-NEXT:    %[[AT:.*]] = llvm.add %[[ROW]], %one overflow<nsw> : i64
// CHECK-NEXT:    %{{.*}} = llvm.getelementptr inbounds %block[%[[AT]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
func.func @row_block(%blocked: memref<?x8xf32>, %first: index) {
  %block = loop.view %blocked[%first] : memref<?x8xf32> to memref<4x8xf32>
  %one = arith.constant 1 : index
  %elt = memref.load %block[%one, %one] : memref<4x8xf32>
  memref.store %elt, %block[%one, %one] : memref<4x8xf32>
  func.return
}

// A constant global keeps its dense bytes, flattened, in an internal llvm global.
// (xDSL 0.75 has no custom syntax for memref.global and memref.copy.)
// CHECK:       llvm.mlir.global internal constant @w(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<4 x f32>
// CHECK-LABEL: llvm.func @weights(
// CHECK-NEXT:    %[[W:.*]] = llvm.mlir.addressof @w : !llvm.ptr
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2x2xf32>, initial_value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>, constant}> : () -> ()
func.func @weights(%o: memref<2x2xf32> {loop.output}) {
  %w = memref.get_global @w : memref<2x2xf32>
  "memref.copy"(%w, %o) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  func.return
}

// CHECK-LABEL: llvm.func @model(%x{{.*}}: !llvm.ptr {strato.memref_type = memref<8xf32>}, %y: !llvm.ptr {loop.output, strato.memref_type = memref<8xf32>}) {
// CHECK-NEXT:    llvm.call @relu(%x{{.*}}, %y) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
func.func @model(%x: memref<8xf32>, %y: memref<8xf32> {loop.output}) {
  func.call @relu(%x, %y) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// scf.if results and scf.for carried values become block arguments.
// CHECK-LABEL: llvm.func @structured(%c: i1, %a{{.*}}: f32, %b{{.*}}: f32) -> f32 {
// CHECK-NEXT:    llvm.cond_br %c, ^if_then, ^if_else
// CHECK-NEXT:  ^if_then:
// CHECK-NEXT:    llvm.br ^if_end(%a{{.*}} : f32)
// CHECK-NEXT:  ^if_else:
// CHECK-NEXT:    llvm.br ^if_end(%b{{.*}} : f32)
// CHECK-NEXT:  ^if_end(%[[R:.*]]: f32):
// CHECK-NEXT:    %[[LB:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[UB:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[ST:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    llvm.br ^for_header(%[[LB]], %[[R]] : i64, f32)
// CHECK-NEXT:  ^for_header(%k: i64, %acc: f32):
// CHECK-NEXT:    %[[IN:.*]] = llvm.icmp "slt" %k, %[[UB]] : i64
// CHECK-NEXT:    llvm.cond_br %[[IN]], ^for_body, ^for_exit
// CHECK-NEXT:  ^for_body:
// CHECK-NEXT:    %[[N:.*]] = llvm.fadd %acc, %a{{.*}} : f32
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %k, %[[ST]] : i64
// CHECK-NEXT:    llvm.br ^for_header(%[[NEXT]], %[[N]] : i64, f32)
// CHECK-NEXT:  ^for_exit:
// CHECK-NEXT:    llvm.return %acc : f32
func.func @structured(%c: i1, %a: f32, %b: f32) -> f32 {
  %r = scf.if %c -> (f32) {
    scf.yield %a : f32
  } else {
    scf.yield %b : f32
  }
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %st = arith.constant 1 : index
  %sum = scf.for %k = %lb to %ub step %st iter_args(%acc = %r) -> (f32) {
    %n = arith.addf %acc, %a : f32
    scf.yield %n : f32
  }
  func.return %sum : f32
}

// scf.while: the before region is the header, branching on scf.condition to the body
// (which branches back with the values it yields) or out with the values it forwards.
// CHECK-LABEL: llvm.func @doubling(%n{{.*}}: i64, %x{{.*}}: f32) -> f32 {
// CHECK-NEXT:    %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    llvm.br ^while_header(%[[C0]], %x{{.*}} : i64, f32)
// CHECK-NEXT:  ^while_header(%[[I:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK-NEXT:    %[[GO:.*]] = llvm.icmp "slt" %[[I]], %n{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %[[GO]], ^while_body(%[[I]], %[[ACC]] : i64, f32), ^while_exit(%[[I]], %[[ACC]] : i64, f32)
// CHECK-NEXT:  ^while_body(%[[J:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[D:.*]] = llvm.fadd %[[V]], %[[V]] : f32
// CHECK-NEXT:    %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[K:.*]] = llvm.add %[[J]], %[[C1]] : i64
// CHECK-NEXT:    llvm.br ^while_header(%[[K]], %[[D]] : i64, f32)
// CHECK-NEXT:  ^while_exit(%{{.*}}: i64, %[[R:.*]]: f32):
// CHECK-NEXT:    llvm.return %[[R]] : f32
func.func @doubling(%n: index, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %r:2 = scf.while (%i = %c0, %acc = %x) : (index, f32) -> (index, f32) {
    %go = arith.cmpi slt, %i, %n : index
    scf.condition(%go) %i, %acc : index, f32
  } do {
  ^bb0(%j: index, %v: f32):
    %d = arith.addf %v, %v : f32
    %c1 = arith.constant 1 : index
    %k = arith.addi %j, %c1 : index
    scf.yield %k, %d : index, f32
  }
  func.return %r#1 : f32
}

// Branch arguments and block arguments of type index become i64.
// CHECK-LABEL: llvm.func @branches(%n{{.*}}: i64) -> i64 {
// CHECK-NEXT:    %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    llvm.br ^loop(%[[C0]] : i64)
// CHECK-NEXT:  ^loop(%[[I:.*]]: i64):
// CHECK-NEXT:    %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %next = llvm.add %[[I]], %[[C1]] : i64
// CHECK-NEXT:    %done = llvm.icmp "sge" %next, %n{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %done, ^exit, ^loop(%next : i64)
// CHECK-NEXT:  ^exit:
// CHECK-NEXT:    llvm.return %next : i64
func.func @branches(%n: index) -> index {
  %c0 = arith.constant 0 : index
  cf.br ^loop(%c0 : index)
^loop(%i: index):
  %c1 = arith.constant 1 : index
  %next = arith.addi %i, %c1 : index
  %done = arith.cmpi sge, %next, %n : index
  cf.cond_br %done, ^exit, ^loop(%next : index)
^exit:
  func.return %next : index
}

// A vectorized loop is no loop: one vector load at the first lane's address, the op
// on <8 x f32> (a uniform operand broadcast), one vector store.
// CHECK-LABEL: llvm.func @relu_vectorized(
// CHECK-NOT:     llvm.br
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %a{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:         %[[B:.*]] = llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.maximum.v8f32"(%[[V]], %[[B]]) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:         llvm.store %[[M]], %{{.*}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
// CHECK-NEXT:    llvm.return
func.func @relu_vectorized(%a: memref<8xf32>, %o: memref<8xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 8 vectorized axis "i" {
    %v = memref.load %a[%i] : memref<8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %o[%i] : memref<8xf32>
  }
  func.return
}

// A max or min whose zeros need no order by sign (the strategies' and reductions',
// fastmath<nsz>) keeps the flag on the intrinsic, scalar or vectorized: LLVM then drops
// the code that orders -0.0 below +0.0, NaN still propagates.
// CHECK-LABEL: llvm.func @max_min_without_signed_zeros(
// CHECK:         llvm.call_intrinsic "llvm.maximum.v8f32"(%{{.*}}, %{{.*}}) {fastmathFlags = #llvm.fastmath<nsz>} : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:         llvm.call_intrinsic "llvm.minimum.f32"(%{{.*}}, %{{.*}}) {fastmathFlags = #llvm.fastmath<nsz>} : (f32, f32) -> f32
// CHECK:         llvm.call_intrinsic "llvm.maximum.f32"(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
func.func @max_min_without_signed_zeros(%a: memref<8xf32>, %o: memref<8xf32> {loop.output}, %p: memref<1xf32> {loop.output}) attributes {loop.kernel} {
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 8 vectorized axis "i" {
    %v = memref.load %a[%i] : memref<8xf32>
    %m = arith.maximumf %v, %z fastmath<nsz> : f32
    memref.store %m, %o[%i] : memref<8xf32>
  }
  %c0 = arith.constant 0 : index
  %w = memref.load %a[%c0] : memref<8xf32>
  %n = arith.minimumf %w, %z fastmath<nsz> : f32
  %x = arith.maximumf %n, %z : f32
  memref.store %x, %p[%c0] : memref<1xf32>
  func.return
}

// An unrolled loop stays a loop marked on its back edge: LLVM unrolls it fully (the
// emitted branch carries llvm.loop.unroll.full), so the lowering and LLVM IR emission
// work on one copy of the body.
// CHECK-LABEL: llvm.func @unrolled(
// CHECK-COUNT-1: llvm.fneg
// CHECK-NOT:     llvm.fneg
// CHECK:         llvm.br ^{{.*}}(%{{.*}} : i64) {strato.loop_kind = "unrolled"}
func.func @unrolled(%a: memref<3xf32>, %o: memref<3xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 3 unrolled axis "i" {
    %v = memref.load %a[%i] : memref<3xf32>
    %n = arith.negf %v : f32
    memref.store %n, %o[%i] : memref<3xf32>
  }
  func.return
}

// Inside a vectorized loop, an unrolled loop is one copy of the body per iteration, at
// constant indices (vector code is made of straight-line bodies).
// CHECK-LABEL: llvm.func @unrolled_in_vector(
// CHECK-NOT:     llvm.br
// CHECK-COUNT-2: llvm.fneg %{{.*}} : vector<16xf32>
// CHECK-NOT:     llvm.fneg
// CHECK:         llvm.return
func.func @unrolled_in_vector(%a: memref<2x16xf32>, %o: memref<16xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %j = 0 to 16 vectorized axis "j" {
    loop.for %i = 0 to 2 unrolled axis "i" {
      %v = memref.load %a[%i, %j] : memref<2x16xf32>
      %n = arith.negf %v : f32
      memref.store %n, %o[%j] : memref<16xf32>
    }
  }
  func.return
}

// Copies of a vectorized loop side by side that move a block of a transpose (copy k
// reads column k of the input, one row per lane, and writes row k of the output) move
// it together: one vector load per input row, two rounds of shuffles, one vector store
// per output row.
// CHECK-LABEL: llvm.func @transposed_block(
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.shufflevector %{{.*}}, %{{.*}} [0, 4, 2, 6] : vector<4xf32>
// CHECK:         llvm.shufflevector %{{.*}}, %{{.*}} [0, 1, 4, 5] : vector<4xf32>
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NOT:     llvm.load
// CHECK:         llvm.return
func.func @transposed_block(%a: memref<4x4xf32>, %o: memref<4x4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %k = 0 to 4 unrolled axis "k" attributes {unroll.explicit} {
    loop.for %w = 0 to 4 vectorized axis "w" {
      %v = memref.load %a[%w, %k] : memref<4x4xf32>
      memref.store %v, %o[%k, %w] : memref<4x4xf32>
    }
  }
  func.return
}

// The update of a reduction may be reassociated and contracted into an FMA.
// CHECK-LABEL: llvm.func @sum_of_squares(
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
func.func @sum_of_squares(%a: memref<8xf32>, %o: memref<1xf32> {loop.output}) attributes {loop.kernel} {
  %q_c0 = arith.constant 0 : index
  loop.for %q_k = 0 to 8 axis "k" {
    %q_e = memref.load %a[%q_k] : memref<8xf32>
    %q_p = arith.mulf %q_e, %q_e : f32
    %q_s = memref.load %o[%q_c0] : memref<1xf32>
    %q_t = arith.addf %q_s, %q_p : f32
    memref.store %q_t, %o[%q_c0] : memref<1xf32>
  }
  func.return
}

// A run-time upper bound: the header compares with the index argument (an i64); a memref
// whose only run-time size is the first is addressed by its static strides.
// CHECK-LABEL: llvm.func @run_time_rows(%rows_in: !llvm.ptr {strato.memref_type = memref<?x4xf32>}, %rows_out: !llvm.ptr {loop.output, strato.memref_type = memref<?x4xf32>}, %rows: i64) attributes {loop.kernel} {
// CHECK:       ^r_header(%[[R:.*]]: i64):
// CHECK-NEXT:    %[[IN:.*]] = llvm.icmp "slt" %[[R]], %rows : i64
// CHECK-NEXT:    llvm.cond_br %[[IN]], ^r_body, ^r_exit
// CHECK-NEXT:  ^r_body:
// CHECK-NEXT:    %[[ROW:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[AT:.*]] = llvm.mul %[[R]], %[[ROW]] overflow<nsw> : i64
func.func @run_time_rows(%rows_in: memref<?x4xf32>, %rows_out: memref<?x4xf32> {loop.output}, %rows: index) attributes {loop.kernel} {
  loop.for %r = 0 to %rows axis "r" {
    %v = memref.load %rows_in[%r, %r] : memref<?x4xf32>
    memref.store %v, %rows_out[%r, %r] : memref<?x4xf32>
  }
  func.return
}

// The C library's and the runtime's functions used are declared at the end of the module.
// CHECK-DAG:   llvm.func @erf(f64) -> f64
// CHECK-DAG:   llvm.func @strato_workspace_take(i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @strato_workspace_give(!llvm.ptr, i64)
