// Every verifier error of the convolution and pooling operators, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- shared by every channel-first operator ---

func.func @input_rank_too_small(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.max_pool' input must be [N, C, spatial..] with 1 to 3 spatial dimensions, got rank 2}}
  %y = graph.max_pool %x kernel [1] strides [1] padding [0, 0] dilations [1] layout "NC" : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @input_rank_too_large(%x: tensor<1x1x2x2x2x2xf32>) -> tensor<1x1x1x1x1x1xf32> {
  // expected-error @+1 {{'graph.global_avg_pool' input must be [N, C, spatial..] with 1 to 3 spatial dimensions, got rank 6}}
  %y = graph.global_avg_pool %x layout "NCDHW" : (tensor<1x1x2x2x2x2xf32>) -> tensor<1x1x1x1x1x1xf32>
  func.return %y : tensor<1x1x1x1x1x1xf32>
}

// -----

func.func @layout(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x1x1xf32> {
  // expected-error @+1 {{'graph.global_avg_pool' layout "NHWC" is not supported for a rank-4 input; expected "NCHW"}}
  %y = graph.global_avg_pool %x layout "NHWC" : (tensor<1x8x8x3xf32>) -> tensor<1x8x1x1xf32>
  func.return %y : tensor<1x8x1x1xf32>
}

// -----

func.func @layout_of_rank(%x: tensor<1x2x8xf32>) -> tensor<1x2x1xf32> {
  // expected-error @+1 {{'graph.global_avg_pool' layout "NCHW" is not supported for a rank-3 input; expected "NCW"}}
  %y = graph.global_avg_pool %x layout "NCHW" : (tensor<1x2x8xf32>) -> tensor<1x2x1xf32>
  func.return %y : tensor<1x2x1xf32>
}

// -----

func.func @global_pool_shape(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x8xf32> {
  // expected-error @+1 {{'graph.global_avg_pool' result shape [1, 2, 8] does not match the inferred shape [1, 2, 1, 1]}}
  %y = graph.global_avg_pool %x layout "NCHW" : (tensor<1x2x8x8xf32>) -> tensor<1x2x8xf32>
  func.return %y : tensor<1x2x8xf32>
}

// -----

func.func @int_input(%x: tensor<1x2x4x4xi32>) -> tensor<1x2x2x2xi32> {
  // expected-error @+1 {{'graph.avg_pool' expects float tensors, got tensor<1x2x4x4xi32>}}
  %y = graph.avg_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xi32>) -> tensor<1x2x2x2xi32>
  func.return %y : tensor<1x2x2x2xi32>
}

// -----

func.func @bool_max_pool(%x: tensor<1x2x4x4xi1>) -> tensor<1x2x2x2xi1> {
  // expected-error @+1 {{'graph.max_pool' expects float or integer tensors, got tensor<1x2x4x4xi1>}}
  %y = graph.max_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xi1>) -> tensor<1x2x2x2xi1>
  func.return %y : tensor<1x2x2x2xi1>
}

// -----

func.func @max_pool_element_types(%x: tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xi8> {
  // expected-error @+1 {{'graph.max_pool' operand element type ui8 differs from result element type i8}}
  %y = graph.max_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xi8>
  func.return %y : tensor<1x2x2x2xi8>
}

// --- window attributes ---

// -----

func.func @strides_count(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.max_pool' strides must have 2 entries (one per spatial dimension), got 1}}
  %y = graph.max_pool %x kernel [2, 2] strides [1] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @strides_positive(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.avg_pool' strides must be positive, got [1, 0]}}
  %y = graph.avg_pool %x kernel [2, 2] strides [1, 0] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @dilations_count(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.max_pool' dilations must have 2 entries (one per spatial dimension), got 3}}
  %y = graph.max_pool %x kernel [2, 2] strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @dilations_positive(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x2x2xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.conv' dilations must be positive, got [0, 1]}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [0, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @padding_count(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.max_pool' padding must have 4 entries (begin, then end, per spatial dimension), got 2}}
  %y = graph.max_pool %x kernel [2, 2] strides [1, 1] padding [0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @padding_negative(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x3xf32> {
  // expected-error @+1 {{'graph.max_pool' padding must be non-negative, got [0, 0, -1, 0]}}
  %y = graph.max_pool %x kernel [2, 2] strides [1, 1] padding [0, 0, -1, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x3xf32>
  func.return %y : tensor<1x2x2x3xf32>
}

// -----

func.func @window_too_large(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32> {
  // expected-error @+1 {{'graph.max_pool' window does not fit the padded input along spatial dimension 1}}
  %y = graph.max_pool %x kernel [2, 3] strides [1, 1] padding [0, 0, 0, 0] dilations [1, 2] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  func.return %y : tensor<1x2x1x1xf32>
}

// -----

func.func @pool_result_shape(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32> {
  // expected-error @+1 {{'graph.max_pool' result shape [1, 2, 2, 2] does not match the inferred shape [1, 2, 3, 3]}}
  %y = graph.max_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] ceil_mode layout "NCHW" : (tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// --- pools ---

// -----

func.func @kernel_count(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.avg_pool' kernel must have 2 entries (one per spatial dimension), got 1}}
  %y = graph.avg_pool %x kernel [2] strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @kernel_positive(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.avg_pool' kernel must be positive, got [2, 0]}}
  %y = graph.avg_pool %x kernel [2, 0] strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// --- graph.conv ---

// -----

func.func @conv_weight_rank(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x2xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.conv' weight must have rank 4 like the input, got rank 3}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x4x4xf32>, tensor<2x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @conv_kernel_layout(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x2x2xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.conv' kernel_layout "HWIO" is not supported for a rank-4 weight; expected "OIHW"}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "HWIO" : (tensor<1x2x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @conv_groups_positive(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x2x2xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.conv' groups must be positive, got 0}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 0 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @conv_input_groups(%x: tensor<1x3x4x4xf32>, %w: tensor<2x1x2x2xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.conv' input channels 3 are not divisible by groups 2}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x4x4xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @conv_output_groups(%x: tensor<1x4x4x4xf32>, %w: tensor<3x2x2x2xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'graph.conv' output channels 3 are not divisible by groups 2}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x4x4xf32>, tensor<3x2x2x2xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// -----

func.func @conv_weight_channels(%x: tensor<1x4x4x4xf32>, %w: tensor<2x4x2x2xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{'graph.conv' weight has 4 input channels per group, expected 2 (4 channels in 2 groups)}}
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x4x4xf32>, tensor<2x4x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %b: tensor<2xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'graph.conv' bias must have shape [3], got [2]}}
  %y = graph.conv %x, %w, %b strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<2xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// -----

func.func @conv_result_shape(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'graph.conv' result shape [1, 3, 3, 3] does not match the inferred shape [1, 3, 2, 3]}}
  %y = graph.conv %x, %w strides [2, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// --- graph.conv_transpose ---

// -----

func.func @conv_transpose_kernel_layout(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x2x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' kernel_layout "OIHW" is not supported for a rank-4 weight; expected "IOHW"}}
  %y = graph.conv_transpose %x, %w strides [1, 1] padding [0, 0, 0, 0] output_padding [0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x3x3xf32>, tensor<2x3x2x2xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @conv_transpose_output_padding_count(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x2x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' output_padding must have 2 entries (one per spatial dimension), got 1}}
  %y = graph.conv_transpose %x, %w strides [1, 1] padding [0, 0, 0, 0] output_padding [0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<2x3x2x2xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @conv_transpose_output_padding_negative(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x2x2xf32>) -> tensor<1x3x3x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' output_padding must be non-negative, got [-1, 0]}}
  %y = graph.conv_transpose %x, %w strides [1, 1] padding [0, 0, 0, 0] output_padding [-1, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<2x3x2x2xf32>) -> tensor<1x3x3x4xf32>
  func.return %y : tensor<1x3x3x4xf32>
}

// -----

func.func @conv_transpose_weight_channels(%x: tensor<1x2x3x3xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' weight has 3 input channels, the input has 2}}
  %y = graph.conv_transpose %x, %w strides [1, 1] padding [0, 0, 0, 0] output_padding [0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<3x3x2x2xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @conv_transpose_groups(%x: tensor<1x3x3x3xf32>, %w: tensor<3x1x2x2xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' input channels 3 are not divisible by groups 2}}
  %y = graph.conv_transpose %x, %w strides [1, 1] padding [0, 0, 0, 0] output_padding [0, 0] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "IOHW" : (tensor<1x3x3x3xf32>, tensor<3x1x2x2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

func.func @conv_transpose_bias(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x2x2xf32>, %b: tensor<1x3xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' bias must have shape [3], got [1, 3]}}
  %y = graph.conv_transpose %x, %w, %b strides [1, 1] padding [0, 0, 0, 0] output_padding [0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<2x3x2x2xf32>, tensor<1x3xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @conv_transpose_cropped_away(%x: tensor<1x2x1x1xf32>, %w: tensor<2x3x1x1xf32>) -> tensor<1x3x1x1xf32> {
  // expected-error @+1 {{'graph.conv_transpose' window does not fit the padded input along spatial dimension 0}}
  %y = graph.conv_transpose %x, %w strides [1, 1] padding [1, 0, 0, 0] output_padding [0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  func.return %y : tensor<1x3x1x1xf32>
}

// -----

func.func @conv_transpose_result_shape(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x2x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'graph.conv_transpose' result shape [1, 3, 4, 4] does not match the inferred shape [1, 3, 7, 7]}}
  %y = graph.conv_transpose %x, %w strides [2, 2] padding [0, 0, 0, 0] output_padding [1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<2x3x2x2xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @max_pool_indices_element_type(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xi32> {
  // expected-error @+1 {{'graph.max_pool_with_indices' indices must be an i64 tensor, got tensor<1x1x2x2xi32>}}
  %m, %i = graph.max_pool_with_indices %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi32>)
  func.return %i : tensor<1x1x2x2xi32>
}

// -----

func.func @max_pool_indices_shape(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xi64> {
  // expected-error @+1 {{'graph.max_pool_with_indices' indices shape [1, 1, 3, 3] differs from the result shape [1, 1, 2, 2]}}
  %m, %i = graph.max_pool_with_indices %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x3x3xi64>)
  func.return %i : tensor<1x1x3x3xi64>
}

// -----

func.func @max_pool_indices_input_type(%x: tensor<1x1x4x4xi1>) -> tensor<1x1x2x2xi64> {
  // expected-error @+1 {{'graph.max_pool_with_indices' expects float or integer tensors, got tensor<1x1x4x4xi1>}}
  %m, %i = graph.max_pool_with_indices %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x4x4xi1>) -> (tensor<1x1x2x2xi1>, tensor<1x1x2x2xi64>)
  func.return %i : tensor<1x1x2x2xi64>
}
