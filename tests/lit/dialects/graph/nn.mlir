// Round trip of the convolution and pooling operators: custom form, custom form
// reparsed, and the generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @conv2d_with_bias
// CHECK-NEXT:    %y = graph.conv %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
// GENERIC-LABEL: sym_name = "conv2d_with_bias"
// GENERIC:         "graph.conv"(%x, %w, %b) <{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "NCHW", kernel_layout = "OIHW"}>
func.func @conv2d_with_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %y = graph.conv %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// Depthwise (groups = channels), dilated, asymmetric padding, no bias.
// CHECK-LABEL: func.func @conv2d_depthwise
// CHECK-NEXT:    %y = graph.conv %x, %w strides [1, 1] padding [0, 1, 2, 1] dilations [2, 2] groups 4 layout "NCHW" kernel_layout "OIHW" {tag} : (tensor<2x4x7x7xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
func.func @conv2d_depthwise(%x: tensor<2x4x7x7xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32> {
  %y = graph.conv %x, %w strides [1, 1] padding [0, 1, 2, 1] dilations [2, 2] groups 4 layout "NCHW" kernel_layout "OIHW" {tag} : (tensor<2x4x7x7xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
  func.return %y : tensor<2x4x5x5xf32>
}

// CHECK-LABEL: func.func @conv1d_and_conv3d
// CHECK-NEXT:    %a = graph.conv %x, %w strides [2] padding [1, 1] dilations [1] groups 1 layout "NCW" kernel_layout "OIW" : (tensor<1x2x9xf32>, tensor<3x2x3xf32>) -> tensor<1x3x5xf32>
// CHECK-NEXT:    %b = graph.conv %v, %k strides [1, 1, 1] padding [0, 0, 0, 0, 0, 0] dilations [1, 1, 1] groups 2 layout "NCDHW" kernel_layout "OIDHW" : (tensor<1x4x3x4x5xf32>, tensor<2x2x1x2x3xf32>) -> tensor<1x2x3x3x3xf32>
func.func @conv1d_and_conv3d(%x: tensor<1x2x9xf32>, %w: tensor<3x2x3xf32>, %v: tensor<1x4x3x4x5xf32>, %k: tensor<2x2x1x2x3xf32>) -> (tensor<1x3x5xf32>, tensor<1x2x3x3x3xf32>) {
  %a = graph.conv %x, %w strides [2] padding [1, 1] dilations [1] groups 1 layout "NCW" kernel_layout "OIW" : (tensor<1x2x9xf32>, tensor<3x2x3xf32>) -> tensor<1x3x5xf32>
  %b = graph.conv %v, %k strides [1, 1, 1] padding [0, 0, 0, 0, 0, 0] dilations [1, 1, 1] groups 2 layout "NCDHW" kernel_layout "OIDHW" : (tensor<1x4x3x4x5xf32>, tensor<2x2x1x2x3xf32>) -> tensor<1x2x3x3x3xf32>
  func.return %a, %b : tensor<1x3x5xf32>, tensor<1x2x3x3x3xf32>
}

// CHECK-LABEL: func.func @conv_transpose
// CHECK-NEXT:    %y = graph.conv_transpose %x, %w, %b strides [3, 2] padding [1, 0, 1, 0] output_padding [1, 1] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<2x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
// GENERIC-LABEL: sym_name = "conv_transpose"
// GENERIC:         "graph.conv_transpose"(%x, %w, %b) <{strides = array<i64: 3, 2>, padding = array<i64: 1, 0, 1, 0>, output_padding = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64, layout = "NCHW", kernel_layout = "IOHW"}>
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x3x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x8x8xf32> {
  %y = graph.conv_transpose %x, %w, %b strides [3, 2] padding [1, 0, 1, 0] output_padding [1, 1] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "IOHW" : (tensor<1x2x3x3xf32>, tensor<2x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
  func.return %y : tensor<1x6x8x8xf32>
}

// The unit flags are printed only when set.
// CHECK-LABEL: func.func @pools
// CHECK-NEXT:    %m = graph.max_pool %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %c = graph.max_pool %x kernel [2, 2] strides [3, 3] padding [0, 0, 0, 0] dilations [1, 1] ceil_mode layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    %a = graph.avg_pool %x kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %i = graph.avg_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 1, 1] dilations [2, 1] ceil_mode count_include_pad layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %g = graph.global_avg_pool %x layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// GENERIC-LABEL: sym_name = "pools"
// GENERIC:         "graph.max_pool"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, layout = "NCHW"}>
// GENERIC:         "graph.max_pool"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode, layout = "NCHW"}>
// GENERIC:         "graph.avg_pool"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, dilations = array<i64: 2, 1>, ceil_mode, count_include_pad, layout = "NCHW"}>
// GENERIC:         "graph.global_avg_pool"(%x) <{layout = "NCHW"}>
func.func @pools(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32> {
  %m = graph.max_pool %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %c = graph.max_pool %x kernel [2, 2] strides [3, 3] padding [0, 0, 0, 0] dilations [1, 1] ceil_mode layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xf32>
  %a = graph.avg_pool %x kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %i = graph.avg_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 1, 1] dilations [2, 1] ceil_mode count_include_pad layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %g = graph.global_avg_pool %x layout "NCHW" : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  func.return %g : tensor<1x4x1x1xf32>
}

// Pooling in one and three spatial dimensions.
// CHECK-LABEL: func.func @pools_1d_3d
// CHECK-NEXT:    %m = graph.max_pool %x kernel [2] strides [1] padding [0, 0] dilations [1] layout "NCW" : (tensor<1x3x5xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT:    %a = graph.avg_pool %v kernel [2, 2, 2] strides [2, 2, 2] padding [0, 0, 0, 0, 0, 0] dilations [1, 1, 1] layout "NCDHW" : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32>
// CHECK-NEXT:    %g = graph.global_avg_pool %v layout "NCDHW" : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x1x1x1xf32>
func.func @pools_1d_3d(%x: tensor<1x3x5xf32>, %v: tensor<1x2x4x4x4xf32>) -> tensor<1x3x4xf32> {
  %m = graph.max_pool %x kernel [2] strides [1] padding [0, 0] dilations [1] layout "NCW" : (tensor<1x3x5xf32>) -> tensor<1x3x4xf32>
  %a = graph.avg_pool %v kernel [2, 2, 2] strides [2, 2, 2] padding [0, 0, 0, 0, 0, 0] dilations [1, 1, 1] layout "NCDHW" : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32>
  %g = graph.global_avg_pool %v layout "NCDHW" : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x1x1x1xf32>
  func.return %m : tensor<1x3x4xf32>
}

// Max pooling works on integer tensors too.
// CHECK-LABEL: func.func @max_pool_integers
// CHECK-NEXT:    %m = graph.max_pool %x kernel [2, 2] strides [2, 2] padding [1, 1, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x5x5xui8>) -> tensor<1x1x3x3xui8>
func.func @max_pool_integers(%x: tensor<1x1x5x5xui8>) -> tensor<1x1x3x3xui8> {
  %m = graph.max_pool %x kernel [2, 2] strides [2, 2] padding [1, 1, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x5x5xui8>) -> tensor<1x1x3x3xui8>
  func.return %m : tensor<1x1x3x3xui8>
}

// Max pooling with the flat input index of each maximum, row- and column-major.
// CHECK-LABEL: func.func @max_pool_with_indices
// CHECK-NEXT:    %m, %i = graph.max_pool_with_indices %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>)
// CHECK-NEXT:    %c, %j = graph.max_pool_with_indices %x kernel [2, 2] strides [3, 3] padding [0, 0, 0, 0] dilations [1, 1] ceil_mode column_major layout "NCHW" : (tensor<1x4x8x8xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xi64>)
// GENERIC-LABEL: sym_name = "max_pool_with_indices"
// GENERIC:         "graph.max_pool_with_indices"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, layout = "NCHW"}>
// GENERIC:         "graph.max_pool_with_indices"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode, column_major, layout = "NCHW"}>
func.func @max_pool_with_indices(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xi64>, tensor<1x4x3x3xi64>) {
  %m, %i = graph.max_pool_with_indices %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>)
  %c, %j = graph.max_pool_with_indices %x kernel [2, 2] strides [3, 3] padding [0, 0, 0, 0] dilations [1, 1] ceil_mode column_major layout "NCHW" : (tensor<1x4x8x8xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xi64>)
  func.return %i, %j : tensor<1x4x4x4xi64>, tensor<1x4x3x3xi64>
}
