// RUN: strato-opt %s --split-input-file -p graph-alter-layout | filecheck %s
// RUN: strato-opt %s --split-input-file -p 'graph-alter-layout{block=4}' | filecheck %s --check-prefix=BLOCK4
// RUN: strato-opt %s --split-input-file -p 'graph-alter-layout{block=16 min_block=8}' | filecheck %s --check-prefix=MIXED

// Two convolutions and a relu run blocked: one transform in, one out; the constant
// weights are re-laid out at compile time.
// CHECK-LABEL: func.func @conv_chain
// CHECK-NEXT:    %x.blocked = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x6x6xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<2x2x3x3x8x8xf32>
// CHECK-NEXT:    %b = graph.constant dense<2.500000e-01> : tensor<16xf32>
// CHECK-NEXT:    %y = graph.blocked_conv %x.blocked, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x6x6x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<16xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %r = graph.relu %y : tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %v = graph.constant dense<5.000000e-01> : tensor<1x2x1x1x8x8xf32>
// CHECK-NEXT:    %z = graph.blocked_conv %r, %v
// CHECK-SAME:      -> tensor<1x1x6x6x8xf32>
// CHECK-NEXT:    %z_1 = graph.layout_transform %z from "NCHW8c" to "NCHW" : (tensor<1x1x6x6x8xf32>) -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    func.return %z_1
// BLOCK4-LABEL: func.func @conv_chain
// BLOCK4:         graph.layout_transform %x from "NCHW" to "NCHW4c" : (tensor<1x16x6x6xf32>) -> tensor<1x4x6x6x4xf32>
// BLOCK4:         graph.constant dense<5.000000e-01> : tensor<4x4x3x3x4x4xf32>
// BLOCK4:         graph.blocked_conv
// BLOCK4-SAME:      kernel_layout "OIHW4i4o"
func.func @conv_chain(%x: tensor<1x16x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x3x3xf32>
  %b = graph.constant dense<0.25> : tensor<16xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
  %r = graph.relu %y : tensor<1x16x6x6xf32>
  %v = graph.constant dense<0.5> : tensor<8x16x1x1xf32>
  %z = graph.conv %r, %v strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x6x6xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x6x6xf32>
  func.return %z : tensor<1x8x6x6xf32>
}

// -----

// A residual block: the input enters once (used by the conv and by the add); the add
// of two blocked values stays blocked.
// CHECK-LABEL: func.func @residual
// CHECK-NEXT:    %x.blocked = graph.layout_transform %x from "NCHW" to "NCHW8c"
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.blocked_conv %x.blocked, %w
// CHECK-NEXT:    %a = graph.add %y, %x.blocked : (tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %r = graph.relu %a : tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %r_1 = graph.layout_transform %r from "NCHW8c" to "NCHW"
// CHECK-NEXT:    func.return %r_1
func.func @residual(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %a = graph.add %y, %x : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.relu %a : tensor<1x8x4x4xf32>
  func.return %r : tensor<1x8x4x4xf32>
}

// -----

// Per-channel constants that broadcast are re-laid out: [C, 1, 1] -> [C/8, 1, 1, 8];
// a scalar stays as it is.
// CHECK-LABEL: func.func @channel_constants
// CHECK:         %y = graph.blocked_conv
// CHECK-NEXT:    %s = graph.constant dense<2.000000e+00> : tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %m = graph.mul %y, %s : (tensor<1x2x4x4x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %c = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %a = graph.add %c, %m : (tensor<f32>, tensor<1x2x4x4x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %a_1 = graph.layout_transform %a from "NCHW8c" to "NCHW"
func.func @channel_constants(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %s = graph.constant dense<2.0> : tensor<16x1x1xf32>
  %m = graph.mul %y, %s : (tensor<1x16x4x4xf32>, tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %c = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %c, %m : (tensor<f32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return %a : tensor<1x16x4x4xf32>
}

// -----

// Pools follow the chain; the global pool's small result leaves it for the reshape.
// CHECK-LABEL: func.func @pools
// CHECK:         %y = graph.blocked_conv
// CHECK-NEXT:    %p = graph.blocked_max_pool %y kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW8c" : (tensor<1x1x8x8x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %q = graph.blocked_avg_pool %p kernel [2, 2] strides [1, 1] padding [0, 0, 1, 1] dilations [1, 1] layout "NCHW8c" : (tensor<1x1x4x4x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %g = graph.blocked_global_avg_pool %q layout "NCHW8c" : (tensor<1x1x4x4x8xf32>) -> tensor<1x1x1x1x8xf32>
// CHECK-NEXT:    %g_1 = graph.layout_transform %g from "NCHW8c" to "NCHW" : (tensor<1x1x1x1x8xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %f = graph.reshape %g_1
func.func @pools(%x: tensor<1x8x8x8xf32>) -> tensor<1x8xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  %p = graph.max_pool %y kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %q = graph.avg_pool %p kernel [2, 2] strides [1, 1] padding [0, 0, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %g = graph.global_avg_pool %q layout "NCHW" : (tensor<1x8x4x4xf32>) -> tensor<1x8x1x1xf32>
  %f = graph.reshape %g : (tensor<1x8x1x1xf32>) -> tensor<1x8xf32>
  func.return %f : tensor<1x8xf32>
}

// -----

// Channels the block does not divide: the conv stays NCHW, and so does the relu.
// CHECK-LABEL: func.func @indivisible
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.conv %x, %w
// CHECK-NEXT:    %r = graph.relu %y : tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return %r
func.func @indivisible(%x: tensor<1x12x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x12x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x12x4x4xf32>, tensor<8x12x1x1xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.relu %y : tensor<1x8x4x4xf32>
  func.return %r : tensor<1x8x4x4xf32>
}

// -----

// A first layer's input of fewer channels than the smallest block (an RGB image) is
// one block of its 3 channels; the convolution writes 8-channel blocks, and the relu
// and max pool after it run blocked.
// CHECK-LABEL: func.func @stem
// CHECK-NEXT:    %x.blocked = graph.layout_transform %x from "NCHW" to "NCHW3c" : (tensor<1x3x8x8xf32>) -> tensor<1x1x8x8x3xf32>
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<1x1x3x3x3x8xf32>
// CHECK-NEXT:    %y = graph.blocked_conv %x.blocked, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW3c" kernel_layout "OIHW3i8o" out_layout "NCHW8c" : (tensor<1x1x8x8x3xf32>, tensor<1x1x3x3x3x8xf32>) -> tensor<1x1x8x8x8xf32>
// CHECK-NEXT:    %r = graph.relu %y : tensor<1x1x8x8x8xf32>
// CHECK-NEXT:    %p = graph.blocked_max_pool %r
// CHECK-NEXT:    %p_1 = graph.layout_transform %p from "NCHW8c" to "NCHW"
// CHECK-NEXT:    func.return %p_1
func.func @stem(%x: tensor<1x3x8x8xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x3x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
  %r = graph.relu %y : tensor<1x8x8x8xf32>
  %p = graph.max_pool %r kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  func.return %p : tensor<1x8x4x4xf32>
}

// -----

// A depthwise convolution runs blocked with weight layout OIHW1i8o.
// CHECK-LABEL: func.func @depthwise
// CHECK-NEXT:    %x.blocked = graph.layout_transform %x from "NCHW" to "NCHW8c"
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<1x1x3x3x1x8xf32>
// CHECK-NEXT:    %y = graph.blocked_conv %x.blocked, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 8 layout "NCHW8c" kernel_layout "OIHW1i8o" out_layout "NCHW8c"
func.func @depthwise(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x1x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 8 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// -----

// A blocked value that is both returned and read by an NCHW op leaves the chain once;
// an element-wise op on the NCHW input (not produced by the chain) stays NCHW.
// The 1x1 convolution reads its NCHW input as it is (blocks of one channel).
// CHECK-LABEL: func.func @exits
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %x.direct = graph.layout_transform %x from "NCHW" to "NCHW1c"
// CHECK-NEXT:    %y = graph.blocked_conv %x.direct, %w
// CHECK-NEXT:    %y_1 = graph.layout_transform %y from "NCHW8c" to "NCHW"
// CHECK-NEXT:    %t = graph.transpose %y_1
// CHECK-NEXT:    %n = graph.neg %x : tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return %y_1, %t, %n
func.func @exits(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %t = graph.transpose %y [0, 1, 3, 2] : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %n = graph.neg %x : tensor<1x8x4x4xf32>
  func.return %y, %t, %n : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// -----

// Twelve channels: the default block 8 does not divide them, block 4 does.
// CHECK-LABEL: func.func @block_option
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.conv %x, %w
// BLOCK4-LABEL: func.func @block_option
// BLOCK4-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<3x12x1x1x1x4xf32>
// BLOCK4-NEXT:    %x.direct = graph.layout_transform %x from "NCHW" to "NCHW1c" : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4x1xf32>
// BLOCK4-NEXT:    %y = graph.blocked_conv %x.direct, %w
func.func @block_option(%x: tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<12x12x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x12x4x4xf32>, tensor<12x12x1x1xf32>) -> tensor<1x12x4x4xf32>
  func.return %y : tensor<1x12x4x4xf32>
}

// -----

// With block=16 min_block=8 each tensor takes the largest block dividing its channels:
// 24 channels are NCHW8c, 32 channels NCHW16c, and the convolution between them reads
// 8-channel blocks and writes 16-channel ones (kernel OIHW8i16o). (Its weights
// outweigh its input, so it does not read the input as it is.)
// MIXED-LABEL: func.func @mixed_blocks
// MIXED-NEXT:    %x.blocked = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x24x4x4xf32>) -> tensor<1x3x4x4x8xf32>
// MIXED-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<2x3x3x3x8x16xf32>
// MIXED-NEXT:    %y = graph.blocked_conv %x.blocked, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i16o" out_layout "NCHW16c" : (tensor<1x3x4x4x8xf32>, tensor<2x3x3x3x8x16xf32>) -> tensor<1x2x4x4x16xf32>
// MIXED-NEXT:    %r = graph.relu %y : tensor<1x2x4x4x16xf32>
// MIXED-NEXT:    %r_1 = graph.layout_transform %r from "NCHW16c" to "NCHW" : (tensor<1x2x4x4x16xf32>) -> tensor<1x32x4x4xf32>
// MIXED-NEXT:    func.return %r_1
func.func @mixed_blocks(%x: tensor<1x24x4x4xf32>) -> tensor<1x32x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<32x24x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x24x4x4xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x4x4xf32>
  %r = graph.relu %y : tensor<1x32x4x4xf32>
  func.return %r : tensor<1x32x4x4xf32>
}

// -----

// A channel concatenation of blocked values (a fire module's two branches) joins the
// blocked tensors along their channel-block axis and stays in the chain.
// MIXED-LABEL: func.func @blocked_concat
// MIXED:         %a = graph.blocked_conv
// MIXED:         %b = graph.blocked_conv
// MIXED-NEXT:    %c = graph.concat %a, %b axis 1 : (tensor<1x1x4x4x16xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
// MIXED-NEXT:    %r = graph.relu %c : tensor<1x3x4x4x16xf32>
// MIXED-NEXT:    %r_1 = graph.layout_transform %r from "NCHW16c" to "NCHW"
// MIXED-NEXT:    func.return %r_1
func.func @blocked_concat(%x: tensor<1x16x4x4xf32>) -> tensor<1x48x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %v = graph.constant dense<0.5> : tensor<32x16x3x3xf32>
  %b = graph.conv %x, %v strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x4x4xf32>
  %c = graph.concat %a, %b axis 1 : (tensor<1x16x4x4xf32>, tensor<1x32x4x4xf32>) -> tensor<1x48x4x4xf32>
  %r = graph.relu %c : tensor<1x48x4x4xf32>
  func.return %r : tensor<1x48x4x4xf32>
}

// -----

// Inputs of different blocks (8 and 16 channels) leave the chain: the concatenation
// runs in NCHW.
// MIXED-LABEL: func.func @concat_of_different_blocks
// MIXED:         graph.layout_transform %a from "NCHW8c" to "NCHW"
// MIXED:         graph.concat %{{.*}}, %{{.*}} axis 1 : (tensor<1x8x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x24x4x4xf32>
func.func @concat_of_different_blocks(%x: tensor<1x16x4x4xf32>) -> tensor<1x24x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x16x1x1xf32>
  %a = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x4x4xf32>
  %c = graph.concat %a, %x axis 1 : (tensor<1x8x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x24x4x4xf32>
  func.return %c : tensor<1x24x4x4xf32>
}

// -----

// A mean over H and W that keeps them (a squeeze-and-excitation block's pooling as
// exporters write it) is a blocked global average pool, and the chain goes on.
// CHECK-LABEL: func.func @spatial_mean_keeping_dims
// CHECK:         %y = graph.blocked_conv
// CHECK-NEXT:    %m = graph.blocked_global_avg_pool %y layout "NCHW8c" : (tensor<1x2x6x6x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %s = graph.sigmoid %m : tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %z = graph.mul %y, %s : (tensor<1x2x6x6x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %z_1 = graph.layout_transform %z from "NCHW8c" to "NCHW"
func.func @spatial_mean_keeping_dims(%x: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x6x6xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x6x6xf32>
  %m = graph.reduce_mean %y [2, 3] keepdims : (tensor<1x16x6x6xf32>) -> tensor<1x16x1x1xf32>
  %s = graph.sigmoid %m : tensor<1x16x1x1xf32>
  %z = graph.mul %y, %s : (tensor<1x16x6x6xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32>
  func.return %z : tensor<1x16x6x6xf32>
}

// -----

// A mean over H and W that drops them stays in NCHW.
// CHECK-LABEL: func.func @spatial_mean_dropping_dims
// CHECK:         %y_1 = graph.layout_transform %y from "NCHW8c" to "NCHW"
// CHECK-NEXT:    %m = graph.reduce_mean %y_1 [2, 3] : (tensor<1x16x6x6xf32>) -> tensor<1x16xf32>
func.func @spatial_mean_dropping_dims(%x: tensor<1x16x6x6xf32>) -> tensor<1x16xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x6x6xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x6x6xf32>
  %m = graph.reduce_mean %y [2, 3] : (tensor<1x16x6x6xf32>) -> tensor<1x16xf32>
  func.return %m : tensor<1x16xf32>
}

// -----

// 31 output columns (a prime, more than two register tiles): the convolution computes
// 32 columns (four tiles of 8), reading one more column of zero padding, and a slice
// keeps the first 31.
// The element-wise ops after it apply to the 32 columns and the slice follows them (they
// then fold into the convolution's tile, the slice into the reader of the result).
// CHECK-LABEL: func.func @prime_width
// CHECK:         %y.wide = graph.blocked_conv %x.direct, %w strides [1, 1] padding [0, 0, 0, 1]
// CHECK-SAME:      -> tensor<1x1x2x32x8xf32>
// CHECK-NEXT:    %r.wide = graph.relu %y.wide : tensor<1x1x2x32x8xf32>
// CHECK-NEXT:    %s.wide = graph.sigmoid %r.wide : tensor<1x1x2x32x8xf32>
// CHECK-NEXT:    %s = graph.slice %s.wide starts [0, 0, 0, 0, 0] steps [1, 1, 1, 1, 1] : (tensor<1x1x2x32x8xf32>) -> tensor<1x1x2x31x8xf32>
// CHECK-NOT:     graph.slice
func.func @prime_width(%x: tensor<1x8x2x31xf32>) -> tensor<1x8x2x31xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x2x31xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x31xf32>
  %r = graph.relu %y : tensor<1x8x2x31xf32>
  %s = graph.sigmoid %r : tensor<1x8x2x31xf32>
  func.return %s : tensor<1x8x2x31xf32>
}

// -----

// A wide convolution's result read by an element-wise op and by another op: the slice
// of the convolution stays for that reader.
// CHECK-LABEL: func.func @prime_width_two_readers
// CHECK:         %y.wide = graph.blocked_conv
// CHECK-NEXT:    %y = graph.slice %y.wide {{.*}} -> tensor<1x1x2x31x8xf32>
// CHECK-NEXT:    %r.wide = graph.relu %y.wide : tensor<1x1x2x32x8xf32>
// CHECK-NEXT:    %r = graph.slice %r.wide {{.*}} -> tensor<1x1x2x31x8xf32>
// CHECK-NEXT:    %a = graph.add %y, %r
func.func @prime_width_two_readers(%x: tensor<1x8x2x31xf32>) -> tensor<1x8x2x31xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x2x31xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x31xf32>
  %r = graph.relu %y : tensor<1x8x2x31xf32>
  %a = graph.add %y, %r : (tensor<1x8x2x31xf32>, tensor<1x8x2x31xf32>) -> tensor<1x8x2x31xf32>
  func.return %a : tensor<1x8x2x31xf32>
}

// -----

// A window of H and W of a blocked value, and the concatenation of such pieces along
// H or W (the regions of a split convolution), stay blocked.
// CHECK-LABEL: func.func @spatial_slice_and_concat
// CHECK:         %s = graph.slice %y starts [0, 0, 1, 0, 0] steps [1, 1, 1, 1, 1] : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x3x4x8xf32>
// CHECK-NEXT:    %t = graph.slice %y starts [0, 0, 0, 0, 0] steps [1, 1, 1, 1, 1] : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x1x4x8xf32>
// CHECK-NEXT:    %c = graph.concat %s, %t axis 2 : (tensor<1x2x3x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %c_1 = graph.layout_transform %c from "NCHW8c" to "NCHW"
func.func @spatial_slice_and_concat(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %s = graph.slice %y starts [0, 0, 1, 0] steps [1, 1, 1, 1] : (tensor<1x16x4x4xf32>) -> tensor<1x16x3x4xf32>
  %t = graph.slice %y starts [0, 0, 0, 0] steps [1, 1, 1, 1] : (tensor<1x16x4x4xf32>) -> tensor<1x16x1x4xf32>
  %c = graph.concat %s, %t axis 2 : (tensor<1x16x3x4xf32>, tensor<1x16x1x4xf32>) -> tensor<1x16x4x4xf32>
  func.return %c : tensor<1x16x4x4xf32>
}
