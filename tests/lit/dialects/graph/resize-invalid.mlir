// Every verifier error of graph.resize, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @mode(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' mode must be one of nearest, linear, cubic, got 'area'}}
  %y = graph.resize %x "area" "half_pixel" scales [1.0, 2.0] : (tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

func.func @coordinates(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' coordinate_transformation_mode must be one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize, got 'centre'}}
  %y = graph.resize %x "linear" "centre" scales [1.0, 2.0] : (tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

func.func @nearest_mode(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' nearest_mode must be one of round_prefer_floor, round_prefer_ceil, floor, ceil, got 'up'}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, 2.0] {nearest_mode = "up"} : (tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

func.func @linear_integers(%x: tensor<1x4xi32>) {
  // expected-error @+1 {{'graph.resize' linear mode needs a float tensor, got tensor<1x4xi32>}}
  %y = graph.resize %x "linear" "half_pixel" scales [1.0, 2.0] : (tensor<1x4xi32>) -> tensor<1x8xi32>
  func.return
}

// -----

func.func @antialias_nearest(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' antialias applies to linear and cubic modes only}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, 0.5] {antialias} : (tensor<1x4xf32>) -> tensor<1x2xf32>
  func.return
}

// -----

func.func @rank(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' result rank 1 differs from input rank 2}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, 2.0] : (tensor<1x4xf32>) -> tensor<8xf32>
  func.return
}

// -----

func.func @scale_count(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' scales must be 2 positive numbers, got [2.0]}}
  %y = graph.resize %x "nearest" "half_pixel" scales [2.0] : (tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

func.func @negative_scale(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' scales must be 2 positive numbers, got [1.0, -2.0]}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, -2.0] : (tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

func.func @roi(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' roi must hold a start and an end for each of 2 axes}}
  %y = graph.resize %x "linear" "tf_crop_and_resize" scales [1.0, 2.0] {roi = array<f64: 0.0, 1.0>} : (tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

func.func @empty_axis(%x: tensor<1x0xf32>) {
  // expected-error @+1 {{'graph.resize' cannot resize the empty axis 1}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, 2.0] : (tensor<1x0xf32>) -> tensor<1x2xf32>
  func.return
}

// -----

func.func @output_size(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' axis 1 of size 4 at scale 2.0 cannot have 5 outputs}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, 2.0] : (tensor<1x4xf32>) -> tensor<1x5xf32>
  func.return
}

// -----

func.func @element_type(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'graph.resize' operand element type f32 differs from result element type f16}}
  %y = graph.resize %x "nearest" "half_pixel" scales [1.0, 2.0] : (tensor<1x4xf32>) -> tensor<1x8xf16>
  func.return
}
