// Round trip of the normalization operators: custom form, custom form reparsed, and
// the generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %a = graph.softmax %x axes [2] : tensor<2x4x8xf32>
// CHECK-NEXT:    %b = graph.softmax %x axes [1, 2] {tag} : tensor<2x4x8xf32>
// CHECK-NEXT:    %c = graph.softmax %h axes [0] : tensor<3xf16>
// GENERIC-LABEL: sym_name = "softmax"
// GENERIC:         "graph.softmax"(%x) <{axes = array<i64: 2>}> : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// GENERIC:         "graph.softmax"(%x) <{axes = array<i64: 1, 2>}> {tag} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
func.func @softmax(%x: tensor<2x4x8xf32>, %h: tensor<3xf16>) -> tensor<2x4x8xf32> {
  %a = graph.softmax %x axes [2] : tensor<2x4x8xf32>
  %b = graph.softmax %x axes [1, 2] {tag} : tensor<2x4x8xf32>
  %c = graph.softmax %h axes [0] : tensor<3xf16>
  func.return %a : tensor<2x4x8xf32>
}

// Scale and bias are optional, each named by its keyword; with two more results the op
// also gives the mean and the inverse standard deviation.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    %a = graph.layer_norm %x scale %g bias %b axis 2 epsilon 1.000000e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %c = graph.layer_norm %x bias %b axis 2 epsilon 1.000000e-03 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %d = graph.layer_norm %x scale %s axis 1 epsilon 0.000000e+00 {tag} : (tensor<2x4x8xf32>, tensor<1x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %e, %mean, %inv = graph.layer_norm %x axis 1 epsilon 1.000000e-05 : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// GENERIC-LABEL: sym_name = "layer_norm"
// GENERIC:         "graph.layer_norm"(%x, %g, %b) <{epsilon = 1.000000e-05 : f32, axis = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}>
// GENERIC:         "graph.layer_norm"(%x, %b) <{epsilon = 1.000000e-03 : f32, axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}>
// GENERIC:         "graph.layer_norm"(%x) <{epsilon = 1.000000e-05 : f32, axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<1x8xf32>) -> tensor<2x4x8xf32> {
  %a = graph.layer_norm %x scale %g bias %b axis 2 epsilon 1.000000e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %c = graph.layer_norm %x bias %b axis 2 epsilon 1.0e-3 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %d = graph.layer_norm %x scale %s axis 1 epsilon 0.0 {tag} : (tensor<2x4x8xf32>, tensor<1x8xf32>) -> tensor<2x4x8xf32>
  %e, %mean, %inv = graph.layer_norm %x axis 1 epsilon 1.0e-5 : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  func.return %a : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-NEXT:    %y = graph.batch_norm %x, %s, %b, %m, %v epsilon 1.000000e-05 : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %z = graph.batch_norm %w, %s, %b, %m, %v epsilon 1.000000e-03 {tag} : (tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
// GENERIC-LABEL: sym_name = "batch_norm"
// GENERIC:         "graph.batch_norm"(%x, %s, %b, %m, %v) <{epsilon = 1.000000e-05 : f32}> : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
func.func @batch_norm(%x: tensor<1x3x4x4xf32>, %w: tensor<5x3xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.batch_norm %x, %s, %b, %m, %v epsilon 1.0e-5 : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %z = graph.batch_norm %w, %s, %b, %m, %v epsilon 1.0e-3 {tag} : (tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
