// split: i (8) by 4 into i.outer x i.inner; j (6) by 4 leaves a tail, guarded;
// i.inner again into three parts i.inner.0..2.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/split.json"}' | filecheck %s

// CHECK-LABEL: func.func @relu(%a: memref<8x6xf32>, %r: memref<8x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   loop.for %i_outer = 0 to 2 axis "i.outer" attributes {stage = "relu"} {
// CHECK-NEXT:     loop.for %i_inner_p0 = 0 to 2 axis "i.inner.0" attributes {stage = "relu"} {
// CHECK-NEXT:       loop.for %i_inner_p1 = 0 to 2 axis "i.inner.1" attributes {stage = "relu"} {
// CHECK-NEXT:         loop.for %i_inner_p2 = 0 to 1 axis "i.inner.2" attributes {stage = "relu"} {
// CHECK-NEXT:           loop.for %j_outer = 0 to 2 axis "j.outer" attributes {stage = "relu"} {
// CHECK-NEXT:             loop.for %j_inner = 0 to 4 axis "j.inner" attributes {stage = "relu"} {
// CHECK-NEXT:               %0 = arith.constant 2 : index
// CHECK-NEXT:               %1 = arith.muli %i_inner_p0, %0 : index
// CHECK-NEXT:               %2 = arith.addi %1, %i_inner_p1 : index
// CHECK-NEXT:               %i_inner = arith.addi %2, %i_inner_p2 : index
// CHECK-NEXT:               %3 = arith.constant 4 : index
// CHECK-NEXT:               %4 = arith.muli %j_outer, %3 : index
// CHECK-NEXT:               %j = arith.addi %4, %j_inner : index
// CHECK-NEXT:               %5 = arith.constant 6 : index
// CHECK-NEXT:               %6 = arith.cmpi slt, %j, %5 : index
// CHECK-NEXT:               %7 = arith.constant 4 : index
// CHECK-NEXT:               %8 = arith.muli %i_outer, %7 : index
// CHECK-NEXT:               %i = arith.addi %8, %i_inner : index
// CHECK-NEXT:               scf.if %6 {
// CHECK-NEXT:                 %v = memref.load %a[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:                 %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:                 %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:                 memref.store %m, %r[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:               }
// CHECK-NEXT:             }
// CHECK-NEXT:           }
// CHECK-NEXT:         }
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
