// Round trip of the graph ops (constants, fused groups, the basic element-wise ops,
// layout, linear algebra, logic, reductions): custom form, custom form reparsed (stable
// text), and the generic form. The operator families with files of their own here
// (elementwise, nn, normalization, rnn) are round-tripped in those.
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

// CHECK-LABEL: func.func @layout_ops
// CHECK-NEXT:    %r = graph.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %c = graph.concat %a, %b axis 1 : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %c1 = graph.concat %n axis 0 {tag} : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %s0, %s1 = graph.split %b axis 1 : (tensor<2x5x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT:    %sl = graph.slice %a starts [1, 2, 0] steps [1, -1, 2] : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT:    %p = graph.pad %n low [0, 1] high [1, 2] mode "constant" value 5.000000e-01 : (tensor<2x3xi32>) -> tensor<3x6xi32>
// CHECK-NEXT:    %q = graph.pad %a low [1, 1, 0] high [1, 1, 3] mode "reflect" : (tensor<2x3x4xf32>) -> tensor<4x5x7xf32>
// CHECK-NEXT:    %e = graph.pad %a low [0, 0, 1] high [0, 0, 0] mode "edge" : (tensor<2x3x4xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %w = graph.pad %a low [2, 0, 0] high [0, 0, 0] mode "wrap" : (tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
// CHECK-NEXT:    %g = graph.gather %a, %i axis 1 : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %bc = graph.broadcast_to %n : (tensor<2x3xi32>) -> tensor<5x2x3xi32>
// CHECK-NEXT:    %id = graph.identity %a : tensor<2x3x4xf32>
// CHECK-NEXT:    %d = graph.dropout %a ratio 5.000000e-01 : tensor<2x3x4xf32>
// CHECK-NEXT:    %d2 = graph.dropout %n : tensor<2x3xi32>
// GENERIC-LABEL: sym_name = "layout_ops"
// GENERIC:         "graph.concat"(%a, %b) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// GENERIC:         "graph.split"(%b) <{axis = 1 : i64}> : (tensor<2x5x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x3x4xf32>)
// GENERIC:         "graph.slice"(%a) <{starts = array<i64: 1, 2, 0>, steps = array<i64: 1, -1, 2>}> : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
// GENERIC:         "graph.pad"(%n) <{low = array<i64: 0, 1>, high = array<i64: 1, 2>, mode = "constant", value = 5.000000e-01 : f64}> : (tensor<2x3xi32>) -> tensor<3x6xi32>
// GENERIC:         "graph.gather"(%a, %i) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
// GENERIC:         "graph.dropout"(%a) <{ratio = 5.000000e-01 : f64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
func.func @layout_ops(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>, %i: tensor<3xi64>, %n: tensor<2x3xi32>) -> tensor<6x4xf32> {
  %r = graph.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %c = graph.concat %a, %b axis 1 : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %c1 = graph.concat %n axis 0 {tag} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %s0, %s1 = graph.split %b axis 1 : (tensor<2x5x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x3x4xf32>)
  %sl = graph.slice %a starts [1, 2, 0] steps [1, -1, 2] : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
  %p = graph.pad %n low [0, 1] high [1, 2] mode "constant" value 0.5 : (tensor<2x3xi32>) -> tensor<3x6xi32>
  %q = graph.pad %a low [1, 1, 0] high [1, 1, 3] mode "reflect" : (tensor<2x3x4xf32>) -> tensor<4x5x7xf32>
  %e = graph.pad %a low [0, 0, 1] high [0, 0, 0] mode "edge" : (tensor<2x3x4xf32>) -> tensor<2x3x5xf32>
  %w = graph.pad %a low [2, 0, 0] high [0, 0, 0] mode "wrap" : (tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  %g = graph.gather %a, %i axis 1 : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %bc = graph.broadcast_to %n : (tensor<2x3xi32>) -> tensor<5x2x3xi32>
  %id = graph.identity %a : tensor<2x3x4xf32>
  %d = graph.dropout %a ratio 0.5 : tensor<2x3x4xf32>
  %d2 = graph.dropout %n : tensor<2x3xi32>
  func.return %r : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @logic_ops
// CHECK-NEXT:    %m = graph.equal %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi1>
// CHECK-NEXT:    %w = graph.where %m, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %h = graph.cast %x : tensor<3x4xf32> to tensor<3x4xf16>
// CHECK-NEXT:    %k = graph.cast %x {saturate = false} : tensor<3x4xf32> to tensor<3x4xf8E4M3FN>
// CHECK-NEXT:    %e = graph.cast %x {round_mode = "nearest"} : tensor<3x4xf32> to tensor<3x4xf8E8M0FNU>
// CHECK-NEXT:    %u = graph.cast %m : tensor<3x4xi1> to tensor<3x4xui8>
// GENERIC-LABEL: sym_name = "logic_ops"
// GENERIC:         "graph.equal"(%a, %b) : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi1>
// GENERIC:         "graph.where"(%m, %x, %y) : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// GENERIC:         "graph.cast"(%x) <{saturate = false}> : (tensor<3x4xf32>) -> tensor<3x4xf8E4M3FN>
func.func @logic_ops(%a: tensor<3x4xi32>, %b: tensor<4xi32>, %x: tensor<3x4xf32>, %y: tensor<f32>) -> tensor<3x4xf32> {
  %m = graph.equal %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi1>
  %w = graph.where %m, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %h = graph.cast %x : tensor<3x4xf32> to tensor<3x4xf16>
  %k = graph.cast %x {saturate = false} : tensor<3x4xf32> to tensor<3x4xf8E4M3FN>
  %e = graph.cast %x {round_mode = "nearest"} : tensor<3x4xf32> to tensor<3x4xf8E8M0FNU>
  %u = graph.cast %m : tensor<3x4xi1> to tensor<3x4xui8>
  func.return %w : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %s = graph.reduce_sum %a [1] keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %m = graph.reduce_mean %a [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %x = graph.reduce_max %n [0, 1] {tag} : (tensor<3x4xi32>) -> tensor<i32>
// GENERIC-LABEL: sym_name = "reductions"
// GENERIC:         "graph.reduce_sum"(%a) <{axes = array<i64: 1>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// GENERIC:         "graph.reduce_max"(%n) <{axes = array<i64: 0, 1>}> {tag} : (tensor<3x4xi32>) -> tensor<i32>
func.func @reductions(%a: tensor<2x3x4xf32>, %n: tensor<3x4xi32>) -> tensor<3xf32> {
  %s = graph.reduce_sum %a [1] keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %m = graph.reduce_mean %a [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %x = graph.reduce_max %n [0, 1] {tag} : (tensor<3x4xi32>) -> tensor<i32>
  func.return %m : tensor<3xf32>
}
