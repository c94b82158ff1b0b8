// fuse: i and j into i.j.fused over 48 iterations, the indices recovered by
// division and remainder.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/fuse.json"}' | filecheck %s

// CHECK-LABEL: func.func @relu(%a: memref<8x6xf32>, %r: memref<8x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   loop.for %i_j_fused = 0 to 48 axis "i.j.fused" attributes {stage = "relu"} {
// CHECK-NEXT:     %0 = arith.constant 6 : index
// CHECK-NEXT:     %i = arith.divui %i_j_fused, %0 : index
// CHECK-NEXT:     %1 = arith.constant 6 : index
// CHECK-NEXT:     %j = arith.remui %i_j_fused, %1 : index
// CHECK-NEXT:     %v = memref.load %a[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:     %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:     memref.store %m, %r[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
te.primitive @relu {
  %a = te.placeholder "a" : tensor<8x6xf32>
  %r = te.compute "relu" (%i, %j) : tensor<8x6xf32> {
    %v = te.read %a[%i, %j] : tensor<8x6xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<8x6xf32>
}
