// Every verifier error of the quantized ops (quant.mlir), one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @quantize_to_int32(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.quantize' result and zero point must be one 8-bit integer type, got i32 and i32}}
  %q = graph.quantize %x, %s, %z axis 0 : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xi32>
  func.return %q : tensor<4xi32>
}

// -----

func.func @scale_per_wrong_axis(%x: tensor<2x4xf32>, %s: tensor<2xf32>, %z: tensor<ui8>) -> tensor<2x4xui8> {
  // expected-error @+1 {{'graph.quantize' scale must be a scalar or have shape [4] (axis 1), got [2]}}
  %q = graph.quantize %x, %s, %z axis 1 : (tensor<2x4xf32>, tensor<2xf32>, tensor<ui8>) -> tensor<2x4xui8>
  func.return %q : tensor<2x4xui8>
}

// -----

func.func @dequantize_mixed_zero_point(%q: tensor<4xui8>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.dequantize' input and zero point must be one 8-bit integer type or int32, got ui8 and i8}}
  %f = graph.dequantize %q, %s, %z axis 0 : (tensor<4xui8>, tensor<f32>, tensor<i8>) -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}

// -----

func.func @requantize_float(%a: tensor<4xf32>, %m: tensor<f32>, %z: tensor<ui8>) -> tensor<4xui8> {
  // expected-error @+1 {{'graph.requantize' input must be int32, got tensor<4xf32>}}
  %r = graph.requantize %a, %m, %z axis 0 : (tensor<4xf32>, tensor<f32>, tensor<ui8>) -> tensor<4xui8>
  func.return %r : tensor<4xui8>
}

// -----

func.func @qconv_float(%x: tensor<1x4x4x4xf32>, %w: tensor<8x4x1x1xi8>) -> tensor<1x8x4x4xi32> {
  // expected-error @+1 {{'graph.qconv' input and weight must be 8-bit integers, got tensor<1x4x4x4xf32> and tensor<8x4x1x1xi8>}}
  %a = graph.qconv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 pad_value 0 layout "NCHW" : (tensor<1x4x4x4xf32>, tensor<8x4x1x1xi8>) -> tensor<1x8x4x4xi32>
  func.return %a : tensor<1x8x4x4xi32>
}

// -----

func.func @qconv_pad_out_of_range(%x: tensor<1x4x4x4xui8>, %w: tensor<8x4x1x1xi8>) -> tensor<1x8x4x4xi32> {
  // expected-error @+1 {{'graph.qconv' pad_value 300 is outside the input type's range [0, 255]}}
  %a = graph.qconv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 pad_value 300 layout "NCHW" : (tensor<1x4x4x4xui8>, tensor<8x4x1x1xi8>) -> tensor<1x8x4x4xi32>
  func.return %a : tensor<1x8x4x4xi32>
}

// -----

func.func @qconv_packed_groups(%x: tensor<1x8x4x4xui8>, %w: tensor<1x1x1x8x4xi8>) -> tensor<1x8x4x4xi32> {
  // expected-error @+1 {{'graph.qconv' packed weight must be [KH, KW, C/4, M, 4] with one group, got [1, 1, 1, 8, 4]}}
  %a = graph.qconv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 pad_value 0 layout "NCHW" packed : (tensor<1x8x4x4xui8>, tensor<1x1x1x8x4xi8>) -> tensor<1x8x4x4xi32>
  func.return %a : tensor<1x8x4x4xi32>
}

// -----

func.func @qdense_depth(%x: tensor<2x8xui8>, %w: tensor<3x6xi8>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'graph.qdense' multiplies [.., K] by [N, K], got [2, 8] and [3, 6]}}
  %d = graph.qdense %x, %w : (tensor<2x8xui8>, tensor<3x6xi8>) -> tensor<2x3xi32>
  func.return %d : tensor<2x3xi32>
}

// -----

func.func @qdense_bias_type(%x: tensor<2x8xui8>, %w: tensor<3x8xi8>, %b: tensor<3xf32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'graph.qdense' bias must be int32, got tensor<3xf32>}}
  %d = graph.qdense %x, %w, %b : (tensor<2x8xui8>, tensor<3x8xi8>, tensor<3xf32>) -> tensor<2x3xi32>
  func.return %d : tensor<2x3xi32>
}
