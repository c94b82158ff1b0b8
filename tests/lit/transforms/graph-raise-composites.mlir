// RUN: strato-opt %s --split-input-file -p graph-raise-composites | filecheck %s

// GELU as BERT's export writes it: x * (1 + erf(x / sqrt 2)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-NEXT:    %y = graph.gelu %x : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_erf(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %y = graph.mul %m, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// The same with the halving first, 1 / sqrt 2 as a Mul and the Add's operands swapped.
// CHECK-LABEL: func.func @gelu_erf_reordered
// CHECK-NEXT:    %y = graph.gelu %x : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_erf_reordered(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %h = graph.mul %half, %x : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = graph.constant dense<0.707106769> : tensor<1xf32>
  %d = graph.mul %x, %r : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %one, %e : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = graph.mul %h, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// An intermediate value read outside the chain keeps it as it is.
// CHECK-LABEL: func.func @gelu_erf_shared
// CHECK-NOT:     graph.gelu
// CHECK:         graph.erf
func.func @gelu_erf_shared(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %y = graph.mul %m, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %y, %e : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A different constant is a different function.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT:     graph.gelu
func.func @not_gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = graph.constant dense<2.0> : tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %y = graph.mul %m, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// GPT-2's tanh form, the cube as Pow(x, 3).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-NEXT:    %y = graph.gelu %x approximate tanh : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_tanh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %h = graph.mul %x, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %p = graph.pow %x, %three : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %c = graph.constant dense<0.044715> : tensor<f32>
  %pc = graph.mul %p, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %s = graph.add %x, %pc : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = graph.constant dense<0.797884583> : tensor<f32>
  %sk = graph.mul %s, %k : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %t = graph.tanh %sk : tensor<2x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %t, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %y = graph.mul %h, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// Layer normalization as older exporters decompose it, with scale and bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    %g = graph.constant dense<2.000000e+00> : tensor<8xf32>
// CHECK-NEXT:    %b = graph.constant dense<5.000000e-01> : tensor<8xf32>
// CHECK-NEXT:    %y = graph.layer_norm %x scale %g bias %b axis 1 epsilon 1.000000e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %y
func.func @layer_norm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = graph.reduce_mean %x [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %g = graph.constant dense<2.0> : tensor<8xf32>
  %ng = graph.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b = graph.constant dense<0.5> : tensor<8xf32>
  %y = graph.add %ng, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// Without scale and bias, the square as d * d, over the last two axes.
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK-NEXT:    %n = graph.layer_norm %x axis 1 epsilon 1.000000e-05 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %n
func.func @layer_norm_plain(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %m = graph.reduce_mean %x [1, 2] keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %d = graph.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %sq = graph.mul %d, %d : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = graph.reduce_mean %sq [1, 2] keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %ve = graph.add %eps, %v : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %s = graph.sqrt %ve : tensor<2x1x1xf32>
  %n = graph.div %d, %s : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  func.return %n : tensor<2x3x4xf32>
}
