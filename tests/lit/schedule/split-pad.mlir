// split with tail="pad": the loops of square run over the padded extent 8 of j;
// the local buffers it indexes with j (t, s) grow to 4x8, and no guard is needed.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/split-pad.json"}' | filecheck %s

// CHECK-LABEL: func.func @chain3(%a: memref<4x6xf32>, %r: memref<4x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   %t = memref.alloc() : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:   loop.for %i = 0 to 4 axis "i" attributes {stage = "tanh"} {
// CHECK-NEXT:     loop.for %j = 0 to 6 axis "j" attributes {stage = "tanh"} {
// CHECK-NEXT:       %v = memref.load %a[%i, %j] : memref<4x6xf32>
// CHECK-NEXT:       %m = math.tanh %v : f32
// CHECK-NEXT:       memref.store %m, %t[%i, %j] : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   %s = memref.alloc() : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:   loop.for %i_1 = 0 to 4 axis "i" attributes {stage = "square"} {
// CHECK-NEXT:     loop.for %j_outer = 0 to 2 axis "j.outer" attributes {stage = "square"} {
// CHECK-NEXT:       loop.for %j_inner = 0 to 4 axis "j.inner" attributes {stage = "square"} {
// CHECK-NEXT:         %0 = arith.constant 4 : index
// CHECK-NEXT:         %1 = arith.muli %j_outer, %0 : index
// CHECK-NEXT:         %j_1 = arith.addi %1, %j_inner : index
// CHECK-NEXT:         %v_1 = memref.load %t[%i_1, %j_1] : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:         %m_1 = arith.mulf %v_1, %v_1 : f32
// CHECK-NEXT:         memref.store %m_1, %s[%i_1, %j_1] : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_2 = 0 to 4 axis "i" attributes {stage = "relu"} {
// CHECK-NEXT:     loop.for %j_2 = 0 to 6 axis "j" attributes {stage = "relu"} {
// CHECK-NEXT:       %v_2 = memref.load %s[%i_2, %j_2] : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:       %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %m_2 = arith.maximumf %v_2, %z : f32
// CHECK-NEXT:       memref.store %m_2, %r[%i_2, %j_2] : memref<4x6xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   memref.dealloc %t : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:   memref.dealloc %s : memref<4x8xf32, #loop.scope<local>>
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
te.primitive @chain3 {
  %a = te.placeholder "a" : tensor<4x6xf32>
  %t = te.compute "tanh" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %a[%i, %j] : tensor<4x6xf32>
    %m = math.tanh %v : f32
    te.yield %m : f32
  }
  %s = te.compute "square" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %t[%i, %j] : tensor<4x6xf32>
    %m = arith.mulf %v, %v : f32
    te.yield %m : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %s[%i, %j] : tensor<4x6xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4x6xf32>
}
