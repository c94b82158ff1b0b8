// RUN: strato-opt %s --split-input-file -p graph-fuse-ops | filecheck %s

// Element-wise ops fuse into the output of a dense; constants stay outside.
// CHECK-LABEL: func.func @dense_bias_relu
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %r = graph.fused "dense_add_relu" out_elemwise_fusable (%x, %w, %s) : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<1x2xf32>) -> tensor<1x2xf32> {
// CHECK-NEXT:    ^bb0(%x_1: tensor<1x4xf32>, %w_1: tensor<2x4xf32>, %s_1: tensor<1x2xf32>):
// CHECK-NEXT:      %y = graph.dense %x_1, %w_1
// CHECK-NEXT:      %a = graph.add %y, %s_1
// CHECK-NEXT:      %r_1 = graph.relu %a
// CHECK-NEXT:      graph.yield %r_1 : tensor<1x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
func.func @dense_bias_relu(%x: tensor<1x4xf32>, %s: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<0.5> : tensor<2x4xf32>
  %y = graph.dense %x, %w : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %a = graph.add %y, %s : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %r = graph.relu %a : tensor<1x2xf32>
  func.return %r : tensor<1x2xf32>
}

// -----

// Two out-elementwise-fusable ops never share a group; a chain of injective ops does.
// CHECK-LABEL: func.func @two_dense
// CHECK:         graph.fused "dense_relu" out_elemwise_fusable
// CHECK:         graph.fused "dense_mul_relu" out_elemwise_fusable
func.func @two_dense(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4xf32>
  %v = graph.constant dense<0.5> : tensor<2x4xf32>
  %y = graph.dense %x, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  %r = graph.relu %y : tensor<1x4xf32>
  %z = graph.dense %r, %v : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %m = graph.mul %z, %z : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %q = graph.relu %m : tensor<1x2xf32>
  func.return %q : tensor<1x2xf32>
}

// -----

// A result with two users ends its group: relu stays alone, add and mul fuse.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NOT:     graph.add %r
// CHECK-NEXT:    %m = graph.fused "add_mul" broadcast (%r, %x)
func.func @shared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  %a = graph.add %r, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m = graph.mul %r, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}
