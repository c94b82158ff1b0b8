// compute_at: dense is computed inside loop i of relu, over the one row relu reads
// (init and update nests both move; the row offset is %i). Its local buffer shrinks to
// the 1x6 region, indexed relative to the row.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/compute-at.json"}' | filecheck %s

// CHECK-LABEL: func.func @dense_relu(%x: memref<4x3xf32>, %w: memref<6x3xf32>, %r: memref<4x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   %d = memref.alloc() : memref<1x6xf32, #loop.scope<local>>
// CHECK-NEXT:   loop.for %i = 0 to 4 axis "i" attributes {stage = "relu"} {
// CHECK-NEXT:     loop.for %i_1 = 0 to 1 axis "i" attributes {stage = "dense", init} {
// CHECK-NEXT:       loop.for %j = 0 to 6 axis "j" attributes {stage = "dense", init} {
// CHECK-NEXT:         %i_2 = arith.addi %i, %i_1 : index
// CHECK-NEXT:         %init = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         memref.store %init, %d[%i_1, %j] : memref<1x6xf32, #loop.scope<local>>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %i_3 = 0 to 1 axis "i" attributes {stage = "dense"} {
// CHECK-NEXT:       loop.for %j_1 = 0 to 6 axis "j" attributes {stage = "dense"} {
// CHECK-NEXT:         loop.for %k = 0 to 3 axis "k" attributes {stage = "dense", reduction} {
// CHECK-NEXT:           %i_4 = arith.addi %i, %i_3 : index
// CHECK-NEXT:           %a = memref.load %x[%i_4, %k] : memref<4x3xf32>
// CHECK-NEXT:           %b = memref.load %w[%j_1, %k] : memref<6x3xf32>
// CHECK-NEXT:           %p = arith.mulf %a, %b : f32
// CHECK-NEXT:           %acc = memref.load %d[%i_3, %j_1] : memref<1x6xf32, #loop.scope<local>>
// CHECK-NEXT:           %sum = arith.addf %acc, %p : f32
// CHECK-NEXT:           memref.store %sum, %d[%i_3, %j_1] : memref<1x6xf32, #loop.scope<local>>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %j_2 = 0 to 6 axis "j" attributes {stage = "relu"} {
// CHECK-NEXT:       %0 = arith.constant 0 : index
// CHECK-NEXT:       %v = memref.load %d[%0, %j_2] : memref<1x6xf32, #loop.scope<local>>
// CHECK-NEXT:       %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:       memref.store %m, %r[%i, %j_2] : memref<4x6xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   memref.dealloc %d : memref<1x6xf32, #loop.scope<local>>
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<4x3xf32>
  %w = te.placeholder "w" : tensor<6x3xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 3) init 0.0 : tensor<4x6xf32> {
    %a = te.read %x[%i, %k] : tensor<4x3xf32>
    %b = te.read %w[%j, %k] : tensor<6x3xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %d[%i, %j] : tensor<4x6xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4x6xf32>
}
