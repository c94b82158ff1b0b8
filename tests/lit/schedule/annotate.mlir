// annotate: a loop gets an attribute; a stage annotation goes on its outermost loop.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/annotate.json"}' | filecheck %s

// CHECK-LABEL: func.func @relu(%a: memref<8x6xf32>, %r: memref<8x6xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   loop.for %i = 0 to 8 axis "i" attributes {stage = "relu", note = "hot"} {
// CHECK-NEXT:     loop.for %j = 0 to 6 axis "j" attributes {stage = "relu", pragma_unroll = 2 : i64} {
// CHECK-NEXT:       %v = memref.load %a[%i, %j] : memref<8x6xf32>
// CHECK-NEXT:       %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:       memref.store %m, %r[%i, %j] : memref<8x6xf32>
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
