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

// -----

// A slice dropping the extra columns of a convolution computed wider goes to the group
// of its reader (a pool here, or an element-wise op), which reads through it, rather
// than making a pass of its own after the convolution's tiles.
// CHECK-LABEL: func.func @wide_conv_slice_pool
// CHECK:         %r.wide = graph.fused "blocked_conv_relu" out_elemwise_fusable
// CHECK:         %mp = graph.fused "slice_blocked_max_pool" out_elemwise_fusable (%r.wide)
// CHECK:         %e = graph.fused "slice_sigmoid" injective (%d.wide)
func.func @wide_conv_slice_pool(%x: tensor<1x1x4x31x8xf32>) -> (tensor<1x1x1x15x8xf32>, tensor<1x1x4x31x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<1x1x1x1x8x8xf32>
  %c.wide = graph.blocked_conv %x, %w strides [1, 1] padding [0, 0, 0, 11] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x1x4x31x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x4x42x8xf32>
  %r.wide = graph.relu %c.wide : tensor<1x1x4x42x8xf32>
  %r = graph.slice %r.wide starts [0, 0, 0, 0, 0] steps [1, 1, 1, 1, 1] : (tensor<1x1x4x42x8xf32>) -> tensor<1x1x4x31x8xf32>
  %mp = graph.blocked_max_pool %r kernel [3, 3] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x1x4x31x8xf32>) -> tensor<1x1x1x15x8xf32>
  %d.wide = graph.blocked_conv %x, %w strides [1, 1] padding [0, 0, 0, 11] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x1x4x31x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x4x42x8xf32>
  %d = graph.slice %d.wide starts [0, 0, 0, 0, 0] steps [1, 1, 1, 1, 1] : (tensor<1x1x4x42x8xf32>) -> tensor<1x1x4x31x8xf32>
  %e = graph.sigmoid %d : tensor<1x1x4x31x8xf32>
  func.return %mp, %e : tensor<1x1x1x15x8xf32>, tensor<1x1x4x31x8xf32>
}

// -----

// A blocked convolution reading its NCHW input as it is (a unit-block view, NCHW ->
// NCHW1c) takes the view into its group, and its relu after it; the view does not join
// the group of the element-wise op that produces its input.
// CHECK-LABEL: func.func @unit_block_view
// CHECK-NEXT:    %n = graph.neg %x
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %r = graph.fused "layout_transform_blocked_conv_relu" out_elemwise_fusable (%n, %w) : (tensor<1x8x4x4xf32>, tensor<1x8x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32> {
// CHECK-NEXT:    ^bb0(%n_1: tensor<1x8x4x4xf32>, %w_1: tensor<1x8x1x1x1x8xf32>):
// CHECK-NEXT:      %v = graph.layout_transform %n_1 from "NCHW" to "NCHW1c"
// CHECK-NEXT:      %y = graph.blocked_conv %v, %w_1
// CHECK-NEXT:      %r_1 = graph.relu %y
// CHECK-NEXT:      graph.yield %r_1 : tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    }
func.func @unit_block_view(%x: tensor<1x8x4x4xf32>) -> tensor<1x1x4x4x8xf32> {
  %n = graph.neg %x : tensor<1x8x4x4xf32>
  %w = graph.constant dense<0.5> : tensor<1x8x1x1x1x8xf32>
  %v = graph.layout_transform %n from "NCHW" to "NCHW1c" : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4x1xf32>
  %y = graph.blocked_conv %v, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW1c" kernel_layout "OIHW1i8o" out_layout "NCHW8c" : (tensor<1x8x4x4x1xf32>, tensor<1x8x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32>
  %r = graph.relu %y : tensor<1x1x4x4x8xf32>
  func.return %r : tensor<1x1x4x4x8xf32>
}

// -----

// A transpose that moves run-time dimensions away from the front ([n, 8] -> [8, n])
// starts a group of its own rather than join the dense's (whose kernel then runs as
// blocks of rows); a relu after the dense, and one after the transpose, join them.
// CHECK-LABEL: func.func @rows_moved_inward
// CHECK:         %r = graph.fused "dense_relu" out_elemwise_fusable
// CHECK:         %s = graph.fused "transpose_relu" injective (%r)
func.func @rows_moved_inward(%x: tensor<?x8xf32>) -> tensor<8x?xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8xf32>
  %d = graph.dense %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %r = graph.relu %d : tensor<?x8xf32>
  %t = graph.transpose %r [1, 0] : (tensor<?x8xf32>) -> tensor<8x?xf32>
  %s = graph.relu %t : tensor<8x?xf32>
  func.return %s : tensor<8x?xf32>
}
