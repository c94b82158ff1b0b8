// RUN: strato-opt %s --split-input-file -p graph-fold-qdq | filecheck %s

// A QDQ convolution (uint8 input, per-channel int8 weights, int32 bias) becomes an
// integer convolution padded with the input's zero point, its bias less the zero point
// times each output's weight sum (2 - 3 * 4 = -10), and a requantization by
// x_scale * w_scale / y_scale (0.5 * 0.25 / 0.125 = 1).
// CHECK-LABEL: func.func @conv
// CHECK-DAG:     %[[W:.*]] = graph.constant dense<1> : tensor<1x1x1x2x4xi8>
// CHECK-DAG:     %[[B:.*]] = graph.constant dense<-10> : tensor<2xi32>
// CHECK:         %[[A:.*]] = graph.qconv %q, %[[W]], %[[B]] strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 pad_value 3 layout "NCHW" packed : (tensor<1x4x4x4xui8>, tensor<1x1x1x2x4xi8>, tensor<2xi32>) -> tensor<1x2x6x6xi32>
// CHECK:         %[[M:.*]] = graph.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %r = graph.requantize %[[A]], %[[M]], %yz axis 1 : (tensor<1x2x6x6xi32>, tensor<2xf32>, tensor<ui8>) -> tensor<1x2x6x6xui8>
// CHECK-NEXT:    func.return %r
// CHECK-NOT:     graph.conv
func.func @conv(%q: tensor<1x4x4x4xui8>) -> tensor<1x2x6x6xui8> {
  %xs = graph.constant dense<0.5> : tensor<f32>
  %xz = graph.constant dense<3> : tensor<ui8>
  %x = graph.dequantize %q, %xs, %xz axis 1 : (tensor<1x4x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x4xf32>
  %wq = graph.constant dense<1> : tensor<2x4x1x1xi8>
  %ws = graph.constant dense<0.25> : tensor<2xf32>
  %wz = graph.constant dense<0> : tensor<2xi8>
  %w = graph.dequantize %wq, %ws, %wz axis 0 : (tensor<2x4x1x1xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x4x1x1xf32>
  %bq = graph.constant dense<2> : tensor<2xi32>
  %bs = graph.constant dense<0.125> : tensor<2xf32>
  %bz = graph.constant dense<0> : tensor<2xi32>
  %b = graph.dequantize %bq, %bs, %bz axis 0 : (tensor<2xi32>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x4x4xf32>, tensor<2x4x1x1xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  %ys = graph.constant dense<0.125> : tensor<f32>
  %yz = graph.constant dense<0> : tensor<ui8>
  %r = graph.quantize %y, %ys, %yz axis 1 : (tensor<1x2x6x6xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x6x6xui8>
  func.return %r : tensor<1x2x6x6xui8>
}

// -----

// An int8 input is shifted by 128 to uint8 (its zero point too), a matmul by the
// transpose of a dequantized [N, K] weight becomes a dense layer.
// CHECK-LABEL: func.func @matmul_int8_input
// CHECK:         graph.cast %q : tensor<2x8xi8> to tensor<2x8xi32>
// CHECK:         graph.add
// CHECK:         graph.cast %{{.*}} : tensor<2x8xi32> to tensor<2x8xui8>
// CHECK:         graph.qdense %{{.*}}, %{{.*}}, %{{.*}} packed : (tensor<2x8xui8>, tensor<2x4x4xi8>, tensor<4xi32>) -> tensor<2x4xi32>
// CHECK:         graph.requantize %{{.*}}, %{{.*}}, %yz axis 1 : (tensor<2x4xi32>, tensor<4xf32>, tensor<i8>) -> tensor<2x4xi8>
// CHECK-NOT:     graph.matmul
func.func @matmul_int8_input(%q: tensor<2x8xi8>) -> tensor<2x4xi8> {
  %xs = graph.constant dense<0.5> : tensor<f32>
  %xz = graph.constant dense<-2> : tensor<i8>
  %x = graph.dequantize %q, %xs, %xz axis 1 : (tensor<2x8xi8>, tensor<f32>, tensor<i8>) -> tensor<2x8xf32>
  %wq = graph.constant dense<3> : tensor<4x8xi8>
  %ws = graph.constant dense<0.25> : tensor<f32>
  %wz = graph.constant dense<0> : tensor<i8>
  %w = graph.dequantize %wq, %ws, %wz axis 0 : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %t = graph.transpose %w [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = graph.matmul %x, %t : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %ys = graph.constant dense<0.25> : tensor<f32>
  %yz = graph.constant dense<1> : tensor<i8>
  %r = graph.quantize %y, %ys, %yz axis 1 : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  func.return %r : tensor<2x4xi8>
}

// -----

// Max pooling between a dequantize and a quantize of the same scale and zero point runs
// on the integers.
// CHECK-LABEL: func.func @max_pool
// CHECK-NEXT:    %{{.*}} = graph.max_pool %q kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8>
func.func @max_pool(%q: tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8> {
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.constant dense<7> : tensor<ui8>
  %x = graph.dequantize %q, %s, %z axis 1 : (tensor<1x1x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x4x4xf32>
  %p = graph.max_pool %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  %r = graph.quantize %p, %s, %z axis 1 : (tensor<1x1x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x1x2x2xui8>
  func.return %r : tensor<1x1x2x2xui8>
}

// -----

// A convolution whose result has another user stays in f32.
// CHECK-LABEL: func.func @shared_result
// CHECK:         graph.conv
// CHECK-NOT:     graph.qconv
func.func @shared_result(%q: tensor<1x4x2x2xui8>) -> (tensor<1x2x2x2xui8>, tensor<1x2x2x2xf32>) {
  %xs = graph.constant dense<0.5> : tensor<f32>
  %xz = graph.constant dense<3> : tensor<ui8>
  %x = graph.dequantize %q, %xs, %xz axis 1 : (tensor<1x4x2x2xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x2x2xf32>
  %wq = graph.constant dense<1> : tensor<2x4x1x1xi8>
  %ws = graph.constant dense<0.25> : tensor<f32>
  %wz = graph.constant dense<0> : tensor<i8>
  %w = graph.dequantize %wq, %ws, %wz axis 0 : (tensor<2x4x1x1xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x2x2xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x2x2xf32>
  %ys = graph.constant dense<0.125> : tensor<f32>
  %yz = graph.constant dense<0> : tensor<ui8>
  %r = graph.quantize %y, %ys, %yz axis 1 : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xui8>
  func.return %r, %y : tensor<1x2x2x2xui8>, tensor<1x2x2x2xf32>
}
