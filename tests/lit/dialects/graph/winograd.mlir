// Round trip of graph.blocked_winograd_conv: custom form, custom form reparsed, and the
// generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @winograd
// CHECK-NEXT:    %y = graph.blocked_winograd_conv %x, %u, %b padding [1, 1, 1, 1] tile 4 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<36x2x2x16x16xf32>, tensor<32xf32>) -> tensor<1x2x14x14x16xf32>
// CHECK-NEXT:    %z = graph.blocked_winograd_conv %y, %v padding [0, 1, 2, 0] tile 2 layout "NCHW16c" out_layout "NCHW8c" : (tensor<1x2x14x14x16xf32>, tensor<16x1x2x16x8xf32>) -> tensor<1x1x14x13x8xf32>
// GENERIC-LABEL: sym_name = "winograd"
// GENERIC:         "graph.blocked_winograd_conv"(%x, %u, %b) <{padding = array<i64: 1, 1, 1, 1>, tile = 4 : i64, layout = "NCHW16c", out_layout = "NCHW16c"}>
func.func @winograd(%x: tensor<1x2x14x14x16xf32>, %u: tensor<36x2x2x16x16xf32>, %b: tensor<32xf32>, %v: tensor<16x1x2x16x8xf32>) -> tensor<1x1x14x13x8xf32> {
  %y = graph.blocked_winograd_conv %x, %u, %b padding [1, 1, 1, 1] tile 4 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<36x2x2x16x16xf32>, tensor<32xf32>) -> tensor<1x2x14x14x16xf32>
  %z = graph.blocked_winograd_conv %y, %v padding [0, 1, 2, 0] tile 2 layout "NCHW16c" out_layout "NCHW8c" : (tensor<1x2x14x14x16xf32>, tensor<16x1x2x16x8xf32>) -> tensor<1x1x14x13x8xf32>
  func.return %z : tensor<1x1x14x13x8xf32>
}
