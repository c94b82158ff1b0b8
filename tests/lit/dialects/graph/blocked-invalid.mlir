// Every verifier error of the blocked-layout operators, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @src_layout_not_a_layout(%x: tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.layout_transform' src_layout "NCHWc" is not a layout: unexpected 'c' at position 4}}
  %b = graph.layout_transform %x from "NCHWc" to "NCHW8c" : (tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %b : tensor<1x2x4x4x8xf32>
}

// -----

func.func @different_primal_axes(%x: tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.layout_transform' layouts NCHW and NCDW8c have different primal axes (NCHW and NCDW)}}
  %b = graph.layout_transform %x from "NCHW" to "NCDW8c" : (tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %b : tensor<1x2x4x4x8xf32>
}

// -----

func.func @rank_of_layout(%x: tensor<1x16x4xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.layout_transform' shape [1, 16, 4] has rank 3, layout NCHW has 4}}
  %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x4xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %b : tensor<1x2x4x4x8xf32>
}

// -----

func.func @block_size_of_input(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x8x4x4xf32> {
  // expected-error @+1 {{'graph.layout_transform' block 'c' of NCHW8c has size 8, the shape has 4}}
  %b = graph.layout_transform %x from "NCHW8c" to "NCHW" : (tensor<1x2x4x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %b : tensor<1x8x4x4xf32>
}

// -----

func.func @extent_not_divisible(%x: tensor<1x12x4x4xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.layout_transform' axis C of extent 12 does not split into blocks of 8}}
  %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x12x4x4xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %b : tensor<1x2x4x4x8xf32>
}

// -----

func.func @result_shape(%x: tensor<1x16x4x4xf32>) -> tensor<1x4x4x4x4xf32> {
  // expected-error @+1 {{'graph.layout_transform' result shape [1, 4, 4, 4, 4] does not match the inferred shape [1, 2, 4, 4, 8]}}
  %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x4x4xf32>) -> tensor<1x4x4x4x4xf32>
  func.return %b : tensor<1x4x4x4x4xf32>
}

// -----

func.func @conv_layout(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' layout "NCHW" is not a blocked layout NCHW<b>c}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_kernel_layout(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' kernel_layout "OIHW" is not a blocked weight layout OIHW<i>i<o>o or OIHW<o>o<i>i}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_kernel_out_block(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' kernel_layout output block 8 differs from the out_layout block 4}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW4c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_input_shape(%x: tensor<1x2x8x8x4xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' input must be [N, C/8, H, W, 8], got [1, 2, 8, 8, 4]}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x4xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_weight_shape(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x4xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' weight must be [M/8, C/groups/8, KH, KW, 8, 8] in layout OIHW8i8o, got [2, 2, 3, 3, 8, 4]}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x4xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_groups(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' weight [16, 16, ..] does not fit 16 input channels in 2 groups}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 2 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_blocks_split_groups(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x4x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' channel blocks must tile the groups (input block 8, kernel blocks 4i8o, 2 groups) or the convolution be depthwise}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 2 layout "NCHW8c" kernel_layout "OIHW4i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x4x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @depthwise_blocks(%x: tensor<1x2x8x8x8xf32>, %w: tensor<4x1x3x3x1x4xf32>) -> tensor<1x4x8x8x4xf32> {
  // expected-error @+1 {{'graph.blocked_conv' depthwise convolution needs equal input and output blocks}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 16 layout "NCHW8c" kernel_layout "OIHW1i4o" out_layout "NCHW4c" : (tensor<1x2x8x8x8xf32>, tensor<4x1x3x3x1x4xf32>) -> tensor<1x4x8x8x4xf32>
  func.return %y : tensor<1x4x8x8x4xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>, %b: tensor<8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' bias must have shape [16], got [8]}}
  %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_window(%x: tensor<1x2x2x2x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x1x1x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' window does not fit the padded input}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x2x2x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x1x1x8xf32>
  func.return %y : tensor<1x2x1x1x8xf32>
}

// -----

func.func @conv_strides(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' strides must be two positive integers}}
  %y = graph.blocked_conv %x, %w strides [1, 0] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @conv_padding(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32> {
  // expected-error @+1 {{'graph.blocked_conv' padding must be four non-negative integers (begin, then end)}}
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %y : tensor<1x2x8x8x8xf32>
}

// -----

func.func @pool_layout(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.blocked_max_pool' layout "NCHW8C" is not a blocked layout NCHW<b>c}}
  %y = graph.blocked_max_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8C" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}

// -----

func.func @pool_input_shape(%x: tensor<1x16x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.blocked_avg_pool' input must be [N, C/8, H, W, 8], got [1, 16, 8, 8]}}
  %y = graph.blocked_avg_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x16x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}

// -----

func.func @pool_kernel(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{'graph.blocked_max_pool' kernel must be two positive integers}}
  %y = graph.blocked_max_pool %x kernel [2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}

// -----

func.func @pool_window(%x: tensor<1x2x2x2x8xf32>) -> tensor<1x2x1x1x8xf32> {
  // expected-error @+1 {{'graph.blocked_max_pool' window does not fit the padded input}}
  %y = graph.blocked_max_pool %x kernel [3, 3] strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x2x2x2x8xf32>) -> tensor<1x2x1x1x8xf32>
  func.return %y : tensor<1x2x1x1x8xf32>
}

// -----

func.func @max_pool_bool(%x: tensor<1x2x8x8x8xi1>) -> tensor<1x2x4x4x8xi1> {
  // expected-error @+1 {{'graph.blocked_max_pool' expects float or integer tensors, got tensor<1x2x8x8x8xi1>}}
  %y = graph.blocked_max_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW8c" : (tensor<1x2x8x8x8xi1>) -> tensor<1x2x4x4x8xi1>
  func.return %y : tensor<1x2x4x4x8xi1>
}

// -----

func.func @global_pool_layout(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x1x1x8xf32> {
  // expected-error @+1 {{'graph.blocked_global_avg_pool' layout "NCHW" is not a blocked layout NCHW<b>c}}
  %y = graph.blocked_global_avg_pool %x layout "NCHW" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x1x1x8xf32>
  func.return %y : tensor<1x2x1x1x8xf32>
}

// -----

func.func @global_pool_input_shape(%x: tensor<1x2x8x8x4xf32>) -> tensor<1x2x1x1x4xf32> {
  // expected-error @+1 {{'graph.blocked_global_avg_pool' input must be [N, C/8, H, W, 8], got [1, 2, 8, 8, 4]}}
  %y = graph.blocked_global_avg_pool %x layout "NCHW8c" : (tensor<1x2x8x8x4xf32>) -> tensor<1x2x1x1x4xf32>
  func.return %y : tensor<1x2x1x1x4xf32>
}
