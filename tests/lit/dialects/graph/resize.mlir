// Round trip of graph.resize: custom form, custom form reparsed (stable text), and the
// generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @modes
// CHECK-NEXT:    %l = graph.resize %x "linear" "half_pixel" scales [1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00] : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %n = graph.resize %x "nearest" "asymmetric" scales [1.000000e+00, 1.000000e+00, 5.000000e-01, 5.000000e-01] {nearest_mode = "floor"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    %c = graph.resize %x "cubic" "align_corners" scales [1.000000e+00, 1.000000e+00, 7.500000e-01, 1.500000e+00] {cubic_coeff_a = -5.000000e-01 : f64, exclude_outside} : (tensor<1x3x4x4xf32>) -> tensor<1x3x3x6xf32>
// CHECK-NEXT:    %a = graph.resize %x "linear" "pytorch_half_pixel" scales [1.000000e+00, 1.000000e+00, 5.000000e-01, 5.000000e-01] {antialias} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    %t = graph.resize %x "linear" "tf_crop_and_resize" scales [1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00] {roi = array<f64: 0.000000e+00, 0.000000e+00, 4.000000e-01, 6.000000e-01, 1.000000e+00, 1.000000e+00, 1.200000e+00, 1.700000e+00>, extrapolation_value = 1.000000e+01 : f64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %i = graph.resize %b "nearest" "half_pixel_symmetric" scales [3.000000e+00] : (tensor<5xui8>) -> tensor<15xui8>
// GENERIC-LABEL: "func.func"() <{sym_name = "modes"
// GENERIC:         "graph.resize"(%x) <{mode = "linear", coordinate_transformation_mode = "half_pixel", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>}> : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
func.func @modes(%x: tensor<1x3x4x4xf32>, %b: tensor<5xui8>) -> tensor<1x3x8x8xf32> {
  %l = graph.resize %x "linear" "half_pixel" scales [1.0, 1.0, 2.0, 2.0] : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  %n = graph.resize %x "nearest" "asymmetric" scales [1.0, 1.0, 0.5, 0.5] {nearest_mode = "floor"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
  %c = graph.resize %x "cubic" "align_corners" scales [1.0, 1.0, 0.75, 1.5] {cubic_coeff_a = -0.5 : f64, exclude_outside} : (tensor<1x3x4x4xf32>) -> tensor<1x3x3x6xf32>
  %a = graph.resize %x "linear" "pytorch_half_pixel" scales [1.0, 1.0, 0.5, 0.5] {antialias} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
  %t = graph.resize %x "linear" "tf_crop_and_resize" scales [1.0, 1.0, 1.0, 1.0] {roi = array<f64: 0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 1.2, 1.7>, extrapolation_value = 10.0 : f64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %i = graph.resize %b "nearest" "half_pixel_symmetric" scales [3.0] : (tensor<5xui8>) -> tensor<15xui8>
  func.return %l : tensor<1x3x8x8xf32>
}
