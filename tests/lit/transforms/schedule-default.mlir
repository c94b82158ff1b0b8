// RUN: strato-opt %s -p schedule-default | filecheck %s

// An elementwise stage: its innermost loop split by the vector width and vectorized;
// the kernel records the template and its knobs.
// CHECK-LABEL: func.func @relu(
// CHECK-SAME:    schedule.template = {relu = "injective"}, schedule.knobs = {relu = {vector_width = 16 : i64}}
// CHECK:         loop.for %{{.*}} = 0 to 4 axis "i.outer" attributes {stage = "relu"} {
// CHECK-NEXT:      loop.for %{{.*}} = 0 to 16 vectorized axis "i.inner" attributes {stage = "relu"} {
func.func @relu(%a: memref<64xf32>, %o: memref<64xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 64 axis "i" attributes {stage = "relu"} {
    %v = memref.load %a[%i] : memref<64xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %o[%i] : memref<64xf32>
  }
  func.return
}

// A matmul: the B panel packed per column block, each tile zeroed right before the
// CPU micro-kernel (rows unrolled, columns vectorized, k outside in unrolled steps of 4).
// CHECK-LABEL: func.func @mm(
// CHECK-SAME:    schedule.template = {matmul = "dense"}
// CHECK:         loop.for %{{.*}} = 0 to 2 axis "j.outer" attributes {stage = "matmul"} {
// CHECK:           attributes {stage = "matmul.B.local"}
// CHECK:           loop.for %{{.*}} = 0 to 8 axis "i.inner" attributes {stage = "matmul", init} {
// CHECK:           loop.for %{{.*}} = 0 to 8 unrolled axis "i.inner.load" attributes {stage = "matmul", tensorized = "cpu.fma_tile.8x32x16"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 32 vectorized axis "j.inner.load"
// CHECK:           loop.for %{{.*}} = 0 to 4 axis "k" attributes {stage = "matmul", reduction, tensorized = "cpu.fma_tile.8x32x16"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 4 unrolled axis "k.unrolled"
// CHECK:               loop.for %{{.*}} = 0 to 8 unrolled axis "i.inner.update"
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 32 vectorized axis "j.inner.update"
func.func @mm(%A: memref<16x16xf32>, %B: memref<16x64xf32>, %Y: memref<16x64xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 16 axis "i" attributes {stage = "matmul", init} {
    loop.for %j = 0 to 64 axis "j" attributes {stage = "matmul", init} {
      %init = arith.constant 0.000000e+00 : f32
      memref.store %init, %Y[%i, %j] : memref<16x64xf32>
    }
  }
  loop.for %i_1 = 0 to 16 axis "i" attributes {stage = "matmul"} {
    loop.for %j_1 = 0 to 64 axis "j" attributes {stage = "matmul"} {
      loop.for %k = 0 to 16 axis "k" attributes {stage = "matmul", reduction} {
        %0 = memref.load %A[%i_1, %k] : memref<16x16xf32>
        %1 = memref.load %B[%k, %j_1] : memref<16x64xf32>
        %2 = arith.mulf %0, %1 : f32
        %acc = memref.load %Y[%i_1, %j_1] : memref<16x64xf32>
        %sum = arith.addf %acc, %2 : f32
        memref.store %sum, %Y[%i_1, %j_1] : memref<16x64xf32>
      }
    }
  }
  func.return
}
