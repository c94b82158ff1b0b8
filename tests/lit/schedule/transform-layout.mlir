// transform_layout: dense's buffer stored as [j // 2, i, j % 2].
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/transform-layout.json"}' | filecheck %s

// CHECK-LABEL: func.func @dense_relu(%x: memref<4x3xf32>, %w: memref<6x3xf32>, %r: memref<4x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   %d = memref.alloc() : memref<3x4x2xf32, #loop.scope<local>>
// CHECK-NEXT:   loop.for %i = 0 to 4 axis "i" attributes {stage = "dense", init} {
// CHECK-NEXT:     loop.for %j = 0 to 6 axis "j" attributes {stage = "dense", init} {
// CHECK-NEXT:       %init = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %0 = arith.constant 2 : index
// CHECK-NEXT:       %1 = arith.divui %j, %0 : index
// CHECK-NEXT:       %2 = arith.constant 2 : index
// CHECK-NEXT:       %3 = arith.remui %j, %2 : index
// CHECK-NEXT:       memref.store %init, %d[%1, %i, %3] : memref<3x4x2xf32, #loop.scope<local>>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_1 = 0 to 4 axis "i" attributes {stage = "dense"} {
// CHECK-NEXT:     loop.for %j_1 = 0 to 6 axis "j" attributes {stage = "dense"} {
// CHECK-NEXT:       loop.for %k = 0 to 3 axis "k" attributes {stage = "dense", reduction} {
// CHECK-NEXT:         %a = memref.load %x[%i_1, %k] : memref<4x3xf32>
// CHECK-NEXT:         %b = memref.load %w[%j_1, %k] : memref<6x3xf32>
// CHECK-NEXT:         %p = arith.mulf %a, %b : f32
// CHECK-NEXT:         %4 = arith.constant 2 : index
// CHECK-NEXT:         %5 = arith.divui %j_1, %4 : index
// CHECK-NEXT:         %6 = arith.constant 2 : index
// CHECK-NEXT:         %7 = arith.remui %j_1, %6 : index
// CHECK-NEXT:         %acc = memref.load %d[%5, %i_1, %7] : memref<3x4x2xf32, #loop.scope<local>>
// CHECK-NEXT:         %sum = arith.addf %acc, %p : f32
// CHECK-NEXT:         %8 = arith.constant 2 : index
// CHECK-NEXT:         %9 = arith.divui %j_1, %8 : index
// CHECK-NEXT:         %10 = arith.constant 2 : index
// CHECK-NEXT:         %11 = arith.remui %j_1, %10 : index
// CHECK-NEXT:         memref.store %sum, %d[%9, %i_1, %11] : memref<3x4x2xf32, #loop.scope<local>>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_2 = 0 to 4 axis "i" attributes {stage = "relu"} {
// CHECK-NEXT:     loop.for %j_2 = 0 to 6 axis "j" attributes {stage = "relu"} {
// CHECK-NEXT:       %12 = arith.constant 2 : index
// CHECK-NEXT:       %13 = arith.divui %j_2, %12 : index
// CHECK-NEXT:       %14 = arith.constant 2 : index
// CHECK-NEXT:       %15 = arith.remui %j_2, %14 : index
// CHECK-NEXT:       %v = memref.load %d[%13, %i_2, %15] : memref<3x4x2xf32, #loop.scope<local>>
// CHECK-NEXT:       %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:       memref.store %m, %r[%i_2, %j_2] : memref<4x6xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   memref.dealloc %d : memref<3x4x2xf32, #loop.scope<local>>
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
