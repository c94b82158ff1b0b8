// Every verifier error of graph.blocked_winograd_conv, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @tile_not_defined(%x: tensor<1x2x8x8x16xf32>, %u: tensor<25x2x2x16x16xf32>) -> tensor<1x2x8x8x16xf32> {
  // expected-error @+1 {{'graph.blocked_winograd_conv' tile 3 is not one of 2, 4}}
  %y = graph.blocked_winograd_conv %x, %u padding [1, 1, 1, 1] tile 3 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x8x8x16xf32>, tensor<25x2x2x16x16xf32>) -> tensor<1x2x8x8x16xf32>
  func.return %y : tensor<1x2x8x8x16xf32>
}

// -----

func.func @weight_positions(%x: tensor<1x2x8x8x16xf32>, %u: tensor<16x2x2x16x16xf32>) -> tensor<1x2x8x8x16xf32> {
  // expected-error @+1 {{'graph.blocked_winograd_conv' weight must be [36, M/16, 2, 16, 16], got [16, 2, 2, 16, 16]}}
  %y = graph.blocked_winograd_conv %x, %u padding [1, 1, 1, 1] tile 4 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x8x8x16xf32>, tensor<16x2x2x16x16xf32>) -> tensor<1x2x8x8x16xf32>
  func.return %y : tensor<1x2x8x8x16xf32>
}

// -----

func.func @negative_padding(%x: tensor<1x2x8x8x16xf32>, %u: tensor<16x2x2x16x16xf32>) -> tensor<1x2x8x8x16xf32> {
  // expected-error @+1 {{'graph.blocked_winograd_conv' padding must be four non-negative integers (top, left, bottom, right)}}
  %y = graph.blocked_winograd_conv %x, %u padding [1, -1, 1, 1] tile 2 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x8x8x16xf32>, tensor<16x2x2x16x16xf32>) -> tensor<1x2x8x8x16xf32>
  func.return %y : tensor<1x2x8x8x16xf32>
}

// -----

func.func @bias_size(%x: tensor<1x2x8x8x16xf32>, %u: tensor<16x2x2x16x16xf32>, %b: tensor<16xf32>) -> tensor<1x2x8x8x16xf32> {
  // expected-error @+1 {{'graph.blocked_winograd_conv' bias must have shape [32], got [16]}}
  %y = graph.blocked_winograd_conv %x, %u, %b padding [1, 1, 1, 1] tile 2 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x8x8x16xf32>, tensor<16x2x2x16x16xf32>, tensor<16xf32>) -> tensor<1x2x8x8x16xf32>
  func.return %y : tensor<1x2x8x8x16xf32>
}

// -----

func.func @window_too_large(%x: tensor<1x2x1x1x16xf32>, %u: tensor<16x2x2x16x16xf32>) -> tensor<1x2x1x1x16xf32> {
  // expected-error @+1 {{'graph.blocked_winograd_conv' window does not fit the padded input}}
  %y = graph.blocked_winograd_conv %x, %u padding [0, 0, 0, 0] tile 2 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x1x1x16xf32>, tensor<16x2x2x16x16xf32>) -> tensor<1x2x1x1x16xf32>
  func.return %y : tensor<1x2x1x1x16xf32>
}
