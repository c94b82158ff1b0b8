// vectorize: the innermost loop after a split by 3 becomes vectorized.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/vectorize.json"}' | filecheck %s

// CHECK-LABEL: func.func @relu(%a: memref<8x6xf32>, %r: memref<8x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   loop.for %i = 0 to 8 axis "i" attributes {stage = "relu"} {
// CHECK-NEXT:     loop.for %j_outer = 0 to 2 axis "j.outer" attributes {stage = "relu"} {
// CHECK-NEXT:       loop.for %j_inner = 0 to 3 vectorized axis "j.inner" attributes {stage = "relu"} {
// CHECK-NEXT:         %0 = arith.constant 3 : index
// CHECK-NEXT:         %1 = arith.muli %j_outer, %0 : index
// CHECK-NEXT:         %j = arith.addi %1, %j_inner : index
// CHECK-NEXT:         %v = memref.load %a[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:         %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:         memref.store %m, %r[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
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
