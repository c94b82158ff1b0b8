// RUN: strato-opt %s -p expand-math | filecheck %s

// f32 tanh and exp become arithmetic (the exponent bits of 2^n built with integer ops);
// other types are left to the LLVM lowering.
// CHECK-LABEL: func.func @activations(
// CHECK-NOT:     math.tanh %{{.*}} : f32
// CHECK-NOT:     math.exp %{{.*}} : f32
// CHECK:         math.absf
// CHECK:         math.floor
// CHECK:         arith.shli
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         arith.divf
// CHECK:         memref.store
// CHECK:         math.floor
// CHECK:         arith.cmpf uno
// CHECK:         memref.store
// CHECK:         math.exp %{{.*}} : f64
func.func @activations(%a: memref<64xf32>, %d: memref<4xf64>, %o: memref<64xf32> {loop.output}, %p: memref<64xf32> {loop.output}, %q: memref<4xf64> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 64 vectorized axis "i" attributes {stage = "tanh"} {
    %v = memref.load %a[%i] : memref<64xf32>
    %t = math.tanh %v : f32
    memref.store %t, %o[%i] : memref<64xf32>
  }
  loop.for %j = 0 to 64 axis "j" attributes {stage = "exp"} {
    %v = memref.load %a[%j] : memref<64xf32>
    %e = math.exp %v : f32
    memref.store %e, %p[%j] : memref<64xf32>
  }
  loop.for %k = 0 to 4 axis "k" attributes {stage = "exp64"} {
    %v = memref.load %d[%k] : memref<4xf64>
    %e = math.exp %v : f64
    memref.store %e, %q[%k] : memref<4xf64>
  }
  func.return
}
