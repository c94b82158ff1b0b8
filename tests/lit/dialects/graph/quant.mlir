// Round trip of the quantized ops (quantize, dequantize, requantize, qconv, qdense):
// custom form and custom form reparsed (stable text).
// RUN: strato-opt %s | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2

// CHECK-LABEL: func.func @quantized
// CHECK-NEXT:    %q = graph.quantize %x, %s, %z axis 1 : (tensor<1x8x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8x4x4xui8>
// CHECK-NEXT:    %f = graph.dequantize %q, %s, %z axis 1 : (tensor<1x8x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %a = graph.qconv %q, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 pad_value 3 layout "NCHW" : (tensor<1x8x4x4xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>) -> tensor<1x16x4x4xi32>
// CHECK-NEXT:    %p = graph.qconv %q, %wp strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] groups 1 pad_value 0 layout "NCHW" packed : (tensor<1x8x4x4xui8>, tensor<1x1x2x16x4xi8>) -> tensor<1x16x2x2xi32>
// CHECK-NEXT:    %r = graph.requantize %a, %m, %z axis 1 : (tensor<1x16x4x4xi32>, tensor<16xf32>, tensor<ui8>) -> tensor<1x16x4x4xui8>
// CHECK-NEXT:    %r64 = graph.requantize %a, %m, %zi axis 1 f64 : (tensor<1x16x4x4xi32>, tensor<16xf32>, tensor<i8>) -> tensor<1x16x4x4xi8>
// CHECK-NEXT:    %d = graph.qdense %v, %dw, %db : (tensor<2x64xui8>, tensor<10x64xi8>, tensor<10xi32>) -> tensor<2x10xi32>
// CHECK-NEXT:    %dp = graph.qdense %v, %dwp packed : (tensor<2x64xui8>, tensor<16x10x4xi8>) -> tensor<2x10xi32>
func.func @quantized(%x: tensor<1x8x4x4xf32>, %s: tensor<f32>, %z: tensor<ui8>, %zi: tensor<i8>, %w: tensor<16x8x3x3xi8>, %wp: tensor<1x1x2x16x4xi8>, %b: tensor<16xi32>, %m: tensor<16xf32>, %v: tensor<2x64xui8>, %dw: tensor<10x64xi8>, %dwp: tensor<16x10x4xi8>, %db: tensor<10xi32>) -> (tensor<1x8x4x4xf32>, tensor<1x16x2x2xi32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xi8>, tensor<2x10xi32>, tensor<2x10xi32>) {
  %q = graph.quantize %x, %s, %z axis 1 : (tensor<1x8x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8x4x4xui8>
  %f = graph.dequantize %q, %s, %z axis 1 : (tensor<1x8x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x8x4x4xf32>
  %a = graph.qconv %q, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 pad_value 3 layout "NCHW" : (tensor<1x8x4x4xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>) -> tensor<1x16x4x4xi32>
  %p = graph.qconv %q, %wp strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] groups 1 pad_value 0 layout "NCHW" packed : (tensor<1x8x4x4xui8>, tensor<1x1x2x16x4xi8>) -> tensor<1x16x2x2xi32>
  %r = graph.requantize %a, %m, %z axis 1 : (tensor<1x16x4x4xi32>, tensor<16xf32>, tensor<ui8>) -> tensor<1x16x4x4xui8>
  %r64 = graph.requantize %a, %m, %zi axis 1 f64 : (tensor<1x16x4x4xi32>, tensor<16xf32>, tensor<i8>) -> tensor<1x16x4x4xi8>
  %d = graph.qdense %v, %dw, %db : (tensor<2x64xui8>, tensor<10x64xi8>, tensor<10xi32>) -> tensor<2x10xi32>
  %dp = graph.qdense %v, %dwp packed : (tensor<2x64xui8>, tensor<16x10x4xi8>) -> tensor<2x10xi32>
  func.return %f, %p, %r, %r64, %d, %dp : tensor<1x8x4x4xf32>, tensor<1x16x2x2xi32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xi8>, tensor<2x10xi32>, tensor<2x10xi32>
}
