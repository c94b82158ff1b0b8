// reverse_compute_inline: relu is folded into tanh, which writes the output; the
// buffer tanh wrote is no longer allocated.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/reverse-compute-inline.json"}' | filecheck %s

// CHECK-LABEL: func.func @chain(%a: memref<4x6xf32>, %r: memref<4x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NOT:    memref.alloc
// CHECK:        loop.for %i = 0 to 4 axis "i" attributes {stage = "tanh"} {
// CHECK-NEXT:     loop.for %j = 0 to 6 axis "j" attributes {stage = "tanh"} {
// CHECK-NEXT:       %v = memref.load %a[%i, %j] : memref<4x6xf32>
// CHECK-NEXT:       %m = math.tanh %v : f32
// CHECK-NEXT:       %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %m_1 = arith.maximumf %m, %z : f32
// CHECK-NEXT:       memref.store %m_1, %r[%i, %j] : memref<4x6xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
te.primitive @chain {
  %a = te.placeholder "a" : tensor<4x6xf32>
  %t = te.compute "tanh" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %a[%i, %j] : tensor<4x6xf32>
    %m = math.tanh %v : f32
    te.yield %m : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %t[%i, %j] : tensor<4x6xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4x6xf32>
}
