// RUN: strato-opt %s --split-input-file -p te-dedup-primitives | filecheck %s

// Two primitives equal up to their names (and their values' and placeholders') become
// the first; every call goes to it. One that computes something else (another constant) stays.
// CHECK-LABEL:   te.primitive @scale_1 {
// CHECK-NOT:     te.primitive @scale_2
// CHECK:         te.primitive @scale_3 {
// CHECK-LABEL:   func.func @main(
// CHECK:           %a = te.call @scale_1(%x)
// CHECK-NEXT:      %b = te.call @scale_1(%a)
// CHECK-NEXT:      %c = te.call @scale_3(%b)
te.primitive @scale_1 {
  %t0 = te.placeholder "t0" : tensor<4xf32>
  %0 = te.compute "scale" (%i) : tensor<4xf32> {
    %1 = te.read %t0[%i] : tensor<4xf32>
    %2 = arith.constant 3.0 : f32
    %3 = arith.mulf %1, %2 : f32
    te.yield %3 : f32
  }
  te.output %0 : tensor<4xf32>
}
te.primitive @scale_2 {
  %p = te.placeholder "input" : tensor<4xf32>
  %s = te.compute "scale" (%k) : tensor<4xf32> {
    %v = te.read %p[%k] : tensor<4xf32>
    %c = arith.constant 3.0 : f32
    %m = arith.mulf %v, %c : f32
    te.yield %m : f32
  }
  te.output %s : tensor<4xf32>
}
te.primitive @scale_3 {
  %t0 = te.placeholder "t0" : tensor<4xf32>
  %0 = te.compute "scale" (%i) : tensor<4xf32> {
    %1 = te.read %t0[%i] : tensor<4xf32>
    %2 = arith.constant 5.0 : f32
    %3 = arith.mulf %1, %2 : f32
    te.yield %3 : f32
  }
  te.output %0 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = te.call @scale_1(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = te.call @scale_2(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %c = te.call @scale_3(%b) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// The blocks of rows a primitive names (te.row_blocks) follow the primitives merged
// into others.
// CHECK-LABEL:   te.primitive @relu attributes {te.row_blocks = {rows = ["n"], blocks = [[1 : i64, @relu_a]]}} {
// CHECK:         te.primitive @relu_a {
// CHECK-NOT:     te.primitive @relu_b
te.primitive @relu attributes {te.row_blocks = {rows = ["n"], blocks = [[1 : i64, @relu_b]]}} {
  %n = te.size "n" : index
  %t0 = te.placeholder "t0" sizes(%n) : tensor<?x4xf32>
  %0 = te.compute "relu" (%i, %j) sizes(%n) : tensor<?x4xf32> {
    %1 = te.read %t0[%i, %j] : tensor<?x4xf32>
    %2 = arith.constant 0.0 : f32
    %3 = arith.maximumf %1, %2 : f32
    te.yield %3 : f32
  }
  te.output %0 : tensor<?x4xf32>
}
te.primitive @relu_a {
  %t0 = te.placeholder "t0" : tensor<1x4xf32>
  %0 = te.compute "relu" (%i, %j) : tensor<1x4xf32> {
    %1 = te.read %t0[%i, %j] : tensor<1x4xf32>
    %2 = arith.constant 0.0 : f32
    %3 = arith.maximumf %1, %2 : f32
    te.yield %3 : f32
  }
  te.output %0 : tensor<1x4xf32>
}
te.primitive @relu_b {
  %t0 = te.placeholder "t0" : tensor<1x4xf32>
  %0 = te.compute "relu" (%i, %j) : tensor<1x4xf32> {
    %1 = te.read %t0[%i, %j] : tensor<1x4xf32>
    %2 = arith.constant 0.0 : f32
    %3 = arith.maximumf %1, %2 : f32
    te.yield %3 : f32
  }
  te.output %0 : tensor<1x4xf32>
}
