// Round trip of the blocked-layout operators: custom form, custom form reparsed, and
// the generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @layout_transforms
// CHECK-NEXT:    %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %c = graph.layout_transform %b from "NCHW8c" to "NCHW4c" : (tensor<1x2x4x4x8xf32>) -> tensor<1x4x4x4x4xf32>
// CHECK-NEXT:    %w = graph.layout_transform %k from "OIHW" to "OIHW8i8o" : (tensor<16x8x3x3xi8>) -> tensor<2x1x3x3x8x8xi8>
// GENERIC-LABEL: sym_name = "layout_transforms"
// GENERIC:         "graph.layout_transform"(%x) <{src_layout = "NCHW", dst_layout = "NCHW8c"}>
func.func @layout_transforms(%x: tensor<1x16x4x4xf32>, %k: tensor<16x8x3x3xi8>) -> (tensor<1x4x4x4x4xf32>, tensor<2x1x3x3x8x8xi8>) {
  %b = graph.layout_transform %x from "NCHW" to "NCHW8c" : (tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32>
  %c = graph.layout_transform %b from "NCHW8c" to "NCHW4c" : (tensor<1x2x4x4x8xf32>) -> tensor<1x4x4x4x4xf32>
  %w = graph.layout_transform %k from "OIHW" to "OIHW8i8o" : (tensor<16x8x3x3xi8>) -> tensor<2x1x3x3x8x8xi8>
  func.return %c, %w : tensor<1x4x4x4x4xf32>, tensor<2x1x3x3x8x8xi8>
}

// CHECK-LABEL: func.func @convolutions
// CHECK-NEXT:    %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<16xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %z = graph.blocked_conv %y, %v strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW4o8i" out_layout "NCHW4c" : (tensor<1x2x8x8x8xf32>, tensor<1x2x1x1x4x8xf32>) -> tensor<1x1x4x4x4xf32>
// CHECK-NEXT:    %d = graph.blocked_conv %y, %dw strides [1, 1] padding [1, 1, 1, 1] dilations [2, 2] groups 16 layout "NCHW8c" kernel_layout "OIHW1i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK-NEXT:    %g = graph.blocked_conv %y, %gw strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 layout "NCHW8c" kernel_layout "OIHW8o8i" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x1x1x1x8x8xf32>) -> tensor<1x2x8x8x8xf32>
func.func @convolutions(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x3x3x8x8xf32>, %b: tensor<16xf32>, %v: tensor<1x2x1x1x4x8xf32>, %dw: tensor<2x1x3x3x1x8xf32>, %gw: tensor<2x1x1x1x8x8xf32>) -> (tensor<1x1x4x4x4xf32>, tensor<1x2x6x6x8xf32>, tensor<1x2x8x8x8xf32>) {
  %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW8i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<16xf32>) -> tensor<1x2x8x8x8xf32>
  %z = graph.blocked_conv %y, %v strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW8c" kernel_layout "OIHW4o8i" out_layout "NCHW4c" : (tensor<1x2x8x8x8xf32>, tensor<1x2x1x1x4x8xf32>) -> tensor<1x1x4x4x4xf32>
  %d = graph.blocked_conv %y, %dw strides [1, 1] padding [1, 1, 1, 1] dilations [2, 2] groups 16 layout "NCHW8c" kernel_layout "OIHW1i8o" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x6x6x8xf32>
  %g = graph.blocked_conv %y, %gw strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 layout "NCHW8c" kernel_layout "OIHW8o8i" out_layout "NCHW8c" : (tensor<1x2x8x8x8xf32>, tensor<2x1x1x1x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  func.return %z, %d, %g : tensor<1x1x4x4x4xf32>, tensor<1x2x6x6x8xf32>, tensor<1x2x8x8x8xf32>
}

// CHECK-LABEL: func.func @pools
// CHECK-NEXT:    %m = graph.blocked_max_pool %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] ceil_mode layout "NCHW8c" : (tensor<1x2x8x8x8xi32>) -> tensor<1x2x5x5x8xi32>
// CHECK-NEXT:    %a = graph.blocked_avg_pool %f kernel [2, 2] strides [1, 1] padding [0, 0, 1, 1] dilations [1, 1] count_include_pad layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %g = graph.blocked_global_avg_pool %a layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x1x1x8xf32>
func.func @pools(%x: tensor<1x2x8x8x8xi32>, %f: tensor<1x2x8x8x8xf32>) -> (tensor<1x2x5x5x8xi32>, tensor<1x2x1x1x8xf32>) {
  %m = graph.blocked_max_pool %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] ceil_mode layout "NCHW8c" : (tensor<1x2x8x8x8xi32>) -> tensor<1x2x5x5x8xi32>
  %a = graph.blocked_avg_pool %f kernel [2, 2] strides [1, 1] padding [0, 0, 1, 1] dilations [1, 1] count_include_pad layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  %g = graph.blocked_global_avg_pool %a layout "NCHW8c" : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x1x1x8xf32>
  func.return %m, %g : tensor<1x2x5x5x8xi32>, tensor<1x2x1x1x8xf32>
}
