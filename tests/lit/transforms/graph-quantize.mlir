// RUN: strato-opt %s --split-input-file -p 'graph-quantize{samples=2}' --mlir-elide-elementsattrs-if-larger 1 | filecheck %s

// A conv with bias followed by relu: int8 input and weights, int32 accumulation and bias,
// the relu absorbed into clip(acc >> s, 0, 127), VTA layouts on the int32 conv.
// CHECK-LABEL: func.func @conv_relu
// CHECK:         %[[S:.*]] = graph.mul %x, %{{.*}} : (tensor<1x16x6x6xf32>, tensor<f32>)
// CHECK-NEXT:    %[[R:.*]] = graph.round %[[S]]
// CHECK-NEXT:    %[[C:.*]] = graph.clip %[[R]] min -1.270000e+02 max 1.270000e+02
// CHECK-NEXT:    %[[X8:.*]] = graph.cast %[[C]] : tensor<1x16x6x6xf32> to tensor<1x16x6x6xi8>
// CHECK-NEXT:    %[[X:.*]] = graph.cast %[[X8]] : tensor<1x16x6x6xi8> to tensor<1x16x6x6xi32>
// CHECK-NEXT:    %[[W8:.*]] = graph.constant {{.*}} : tensor<16x16x3x3xi8>
// CHECK-NEXT:    %[[W:.*]] = graph.cast %[[W8]] : tensor<16x16x3x3xi8> to tensor<16x16x3x3xi32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant {{.*}} : tensor<16xi32>
// CHECK-NEXT:    %[[ACC:.*]] = graph.conv %[[X]], %[[W]], %[[B]] {{.*}} {vta_layout = "NCHW1n16c", vta_kernel_layout = "OIHW16o16i"} : {{.*}} -> tensor<1x16x6x6xi32>
// CHECK-NEXT:    %[[D:.*]] = graph.constant dense<{{[0-9]+}}> : tensor<i32>
// CHECK-NEXT:    %[[M:.*]] = graph.mod %[[ACC]], %[[D]]
// CHECK-NEXT:    %[[E:.*]] = graph.sub %[[ACC]], %[[M]]
// CHECK-NEXT:    %[[Q:.*]] = graph.div %[[E]], %[[D]]
// CHECK-NEXT:    %[[K:.*]] = graph.clip %[[Q]] min 0.000000e+00 max 1.270000e+02 : tensor<1x16x6x6xi32>
// CHECK-NEXT:    %[[Y8:.*]] = graph.cast %[[K]] : tensor<1x16x6x6xi32> to tensor<1x16x6x6xi8>
// CHECK-NEXT:    %[[YF:.*]] = graph.cast %[[Y8]] : tensor<1x16x6x6xi8> to tensor<1x16x6x6xf32>
// CHECK-NEXT:    %{{.*}} = graph.constant
// CHECK-NEXT:    %r = graph.mul %[[YF]]
// CHECK-NEXT:    func.return %r
// CHECK-NOT:     graph.relu
func.func @conv_relu(%x: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w = graph.constant dense<0.05> : tensor<16x16x3x3xf32>
  %b = graph.constant dense<0.1> : tensor<16xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
  %r = graph.relu %y : tensor<1x16x6x6xf32>
  func.return %r : tensor<1x16x6x6xf32>
}

// -----

// A first conv (3 input channels) is quantized but gets no VTA layout; without relu the
// requantization clips to [-127, 127].
// CHECK-LABEL: func.func @first_layer
// CHECK:         graph.conv {{.*}} groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x4x4xi32>, tensor<16x3x1x1xi32>) -> tensor<1x16x4x4xi32>
// CHECK:         graph.clip %{{.*}} min -1.270000e+02 max 1.270000e+02 : tensor<1x16x4x4xi32>
func.func @first_layer(%x: tensor<1x3x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x3x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x4x4xf32>, tensor<16x3x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}

// -----

// dense: int32 matmul of int8 values; a weight that is not a constant is left in float.
// CHECK-LABEL: func.func @dense
// CHECK:         graph.dense %{{.*}}, %{{.*}} : (tensor<2x32xi32>, tensor<8x32xi32>) -> tensor<2x8xi32>
// CHECK:         graph.dense %x, %v : (tensor<2x32xf32>, tensor<8x32xf32>) -> tensor<2x8xf32>
func.func @dense(%x: tensor<2x32xf32>, %v: tensor<8x32xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %w = graph.constant dense<0.25> : tensor<8x32xf32>
  %y = graph.dense %x, %w : (tensor<2x32xf32>, tensor<8x32xf32>) -> tensor<2x8xf32>
  %z = graph.dense %x, %v : (tensor<2x32xf32>, tensor<8x32xf32>) -> tensor<2x8xf32>
  func.return %y, %z : tensor<2x8xf32>, tensor<2x8xf32>
}
