// Round trip of the core graph ops (constants, fused groups and their yield, add, mul,
// relu, transpose, matmul, dense): custom form, custom form reparsed (stable text), and
// the generic form. The operator families with files of their own in this directory
// (elementwise, layout, logic, nn, normalization, reduce, rnn, ...) are round-tripped
// there.
// RUN: strato-opt %s | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %splat = graph.constant dense<5.000000e-01> : tensor<2x4xf32>
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %d = graph.constant dense<1.500000e+00> : tensor<3xf64> {weight = "fc1"}
// CHECK-NEXT:    func.return %splat, %w : tensor<2x4xf32>, tensor<2x2xf32>
// GENERIC-LABEL: sym_name = "constants"
// GENERIC:         "graph.constant"() <{value = dense<5.000000e-01> : tensor<2x4xf32>}> : () -> tensor<2x4xf32>
// GENERIC:         "graph.constant"() <{value = dense<1.500000e+00> : tensor<3xf64>}> {weight = "fc1"} : () -> tensor<3xf64>
func.func @constants() -> (tensor<2x4xf32>, tensor<2x2xf32>) {
  %splat = graph.constant dense<0.5> : tensor<2x4xf32>
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %d = graph.constant dense<1.5> : tensor<3xf64> {weight = "fc1"}
  func.return %splat, %w : tensor<2x4xf32>, tensor<2x2xf32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK-NEXT:    %s = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %p = graph.mul %s, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %q = graph.mul %a, %a {tag} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r = graph.relu %p : tensor<4x8xf32>
// CHECK-NEXT:    %h = graph.relu %h_in : tensor<2x3xf16>
// GENERIC-LABEL: sym_name = "elementwise"
// GENERIC:         "graph.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// GENERIC:         "graph.mul"(%s, %c) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// GENERIC:         "graph.mul"(%a, %a) {tag} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC:         "graph.relu"(%p) : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>, %h_in: tensor<2x3xf16>) -> tensor<4x8xf32> {
  %s = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p = graph.mul %s, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %q = graph.mul %a, %a {tag} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = graph.relu %p : tensor<4x8xf32>
  %h = graph.relu %h_in : tensor<2x3xf16>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @layout
// CHECK-NEXT:    %t = graph.transpose %a [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %u = graph.transpose %b [2, 0, 1] : (tensor<2x3x5xf32>) -> tensor<5x2x3xf32>
// CHECK-NEXT:    %v = graph.transpose %c [0] : (tensor<7xf32>) -> tensor<7xf32>
// GENERIC-LABEL: sym_name = "layout"
// GENERIC:         "graph.transpose"(%a) <{perm = array<i64: 1, 0>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
func.func @layout(%a: tensor<4x8xf32>, %b: tensor<2x3x5xf32>, %c: tensor<7xf32>) -> tensor<8x4xf32> {
  %t = graph.transpose %a [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %u = graph.transpose %b [2, 0, 1] : (tensor<2x3x5xf32>) -> tensor<5x2x3xf32>
  %v = graph.transpose %c [0] : (tensor<7xf32>) -> tensor<7xf32>
  func.return %t : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @linear_algebra
// CHECK-NEXT:    %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %bm = graph.matmul %batch, %b : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %bb = graph.matmul %batch, %batch_t : (tensor<2x4x8xf32>, tensor<1x8x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT:    %y = graph.dense %a, %w, %bias : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %z = graph.dense %batch, %w : (tensor<2x4x8xf32>, tensor<3x8xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %v = graph.dense %vec, %w : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<3xf32>
// GENERIC-LABEL: sym_name = "linear_algebra"
// GENERIC:         "graph.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// GENERIC:         "graph.dense"(%a, %w, %bias) : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// GENERIC:         "graph.dense"(%batch, %w) : (tensor<2x4x8xf32>, tensor<3x8xf32>) -> tensor<2x4x3xf32>
func.func @linear_algebra(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %batch: tensor<2x4x8xf32>, %batch_t: tensor<1x8x4xf32>, %w: tensor<3x8xf32>, %bias: tensor<3xf32>, %vec: tensor<8xf32>) -> tensor<4x3xf32> {
  %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %bm = graph.matmul %batch, %b : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %bb = graph.matmul %batch, %batch_t : (tensor<2x4x8xf32>, tensor<1x8x4xf32>) -> tensor<2x4x4xf32>
  %y = graph.dense %a, %w, %bias : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.dense %batch, %w : (tensor<2x4x8xf32>, tensor<3x8xf32>) -> tensor<2x4x3xf32>
  %v = graph.dense %vec, %w : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<3xf32>
  func.return %y : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %r = graph.fused "dense_relu" out_elemwise_fusable (%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32> {
// CHECK-NEXT:    ^bb0(%a: tensor<1x4xf32>, %b: tensor<2x4xf32>):
// CHECK-NEXT:      %y = graph.dense %a, %b : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:      %z = graph.relu %y : tensor<1x2xf32>
// CHECK-NEXT:      graph.yield %z : tensor<1x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %p, %q = graph.fused "pair" injective (%x) attributes {note = 1 : i64} : (tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
// CHECK-NEXT:    ^bb0(%c: tensor<1x4xf32>):
// CHECK-NEXT:      %d = graph.relu %c : tensor<1x4xf32>
// CHECK-NEXT:      graph.yield %c, %d : tensor<1x4xf32>, tensor<1x4xf32>
// CHECK-NEXT:    }
// GENERIC-LABEL: sym_name = "fused"
// GENERIC:         "graph.fused"(%x, %w) <{label = "dense_relu", kind = "out_elemwise_fusable"}> ({
// GENERIC:           "graph.yield"(%z) : (tensor<1x2xf32>) -> ()
// GENERIC:         }) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
func.func @fused(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x2xf32> {
  %r = graph.fused "dense_relu" out_elemwise_fusable (%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32> {
  ^bb0(%a: tensor<1x4xf32>, %b: tensor<2x4xf32>):
    %y = graph.dense %a, %b : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
    %z = graph.relu %y : tensor<1x2xf32>
    graph.yield %z : tensor<1x2xf32>
  }
  %p, %q = graph.fused "pair" injective (%x) attributes {note = 1} : (tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
  ^bb0(%c: tensor<1x4xf32>):
    %d = graph.relu %c : tensor<1x4xf32>
    graph.yield %c, %d : tensor<1x4xf32>, tensor<1x4xf32>
  }
  func.return %r : tensor<1x2xf32>
}
