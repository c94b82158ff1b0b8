// RUN: strato-opt %s -p loop-dedup-kernels | filecheck %s

// Two kernels equal up to names become the first; every call goes to it. A kernel that
// computes something else (another constant) and one that reads another global stay.
// CHECK-LABEL:   func.func @scale_1(
// CHECK-NOT:     func.func @scale_2(
// CHECK:         func.func @scale_3(
// CHECK:         func.func @bias_4(
// CHECK:         func.func @bias_5(
// CHECK-LABEL:   func.func @main(
// CHECK:           func.call @scale_1(%x, %a)
// CHECK-NEXT:      func.call @scale_1(%a, %b)
// CHECK-NEXT:      func.call @scale_3(%b, %c)
// CHECK-NEXT:      func.call @bias_4(%c, %d)
// CHECK-NEXT:      func.call @bias_5(%d, %y)
"memref.global"() <{sym_name = "one", type = memref<4xf32>, initial_value = dense<1.0> : tensor<4xf32>, sym_visibility = "private", constant}> : () -> ()
"memref.global"() <{sym_name = "two", type = memref<4xf32>, initial_value = dense<2.0> : tensor<4xf32>, sym_visibility = "private", constant}> : () -> ()
func.func @scale_1(%in: memref<4xf32>, %out: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" attributes {stage = "scale"} {
    %v = memref.load %in[%i] : memref<4xf32>
    %c = arith.constant 3.0 : f32
    %m = arith.mulf %v, %c : f32
    memref.store %m, %out[%i] : memref<4xf32>
  }
  func.return
}
func.func @scale_2(%p: memref<4xf32>, %q: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %j = 0 to 4 axis "i" attributes {stage = "scale"} {
    %w = memref.load %p[%j] : memref<4xf32>
    %k = arith.constant 3.0 : f32
    %n = arith.mulf %w, %k : f32
    memref.store %n, %q[%j] : memref<4xf32>
  }
  func.return
}
func.func @scale_3(%in: memref<4xf32>, %out: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" attributes {stage = "scale"} {
    %v = memref.load %in[%i] : memref<4xf32>
    %c = arith.constant 5.0 : f32
    %m = arith.mulf %v, %c : f32
    memref.store %m, %out[%i] : memref<4xf32>
  }
  func.return
}
func.func @bias_4(%in: memref<4xf32>, %out: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  %g = memref.get_global @one : memref<4xf32>
  loop.for %i = 0 to 4 axis "i" attributes {stage = "bias"} {
    %v = memref.load %in[%i] : memref<4xf32>
    %b = memref.load %g[%i] : memref<4xf32>
    %s = arith.addf %v, %b : f32
    memref.store %s, %out[%i] : memref<4xf32>
  }
  func.return
}
func.func @bias_5(%in: memref<4xf32>, %out: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  %g = memref.get_global @two : memref<4xf32>
  loop.for %i = 0 to 4 axis "i" attributes {stage = "bias"} {
    %v = memref.load %in[%i] : memref<4xf32>
    %b = memref.load %g[%i] : memref<4xf32>
    %s = arith.addf %v, %b : f32
    memref.store %s, %out[%i] : memref<4xf32>
  }
  func.return
}
func.func @main(%x: memref<4xf32>, %y: memref<4xf32> {loop.output}) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %c = memref.alloc() : memref<4xf32>
  %d = memref.alloc() : memref<4xf32>
  func.call @scale_1(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @scale_2(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @scale_3(%b, %c) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @bias_4(%c, %d) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @bias_5(%d, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  memref.dealloc %c : memref<4xf32>
  memref.dealloc %d : memref<4xf32>
  func.return
}
