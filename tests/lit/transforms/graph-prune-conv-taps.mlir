// RUN: strato-opt %s --split-input-file -p graph-prune-conv-taps | filecheck %s

// An atrous convolution whose outer taps read only padding becomes a 1x1 convolution.
// CHECK-LABEL: func.func @aspp_branch
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<8x8x1x1xf32>
// CHECK-NEXT:    %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return %y
func.func @aspp_branch(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [6, 6, 6, 6] dilations [6, 6] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// -----

// Every tap reads the input for some output, and splitting the border outputs off
// would not halve the work: nothing changes.
// CHECK-LABEL: func.func @all_live
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<4x4x3x3xf32>
// CHECK-NEXT:    graph.conv %x, %w strides [1, 1] padding [2, 2, 2, 2] dilations [2, 2]
func.func @all_live(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [2, 2, 2, 2] dilations [2, 2] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// -----

// Dilated 4 over 6x6 with padding 4: the outputs of the first and last two rows (and
// columns) read the input with two taps, those between with the middle one only. Nine
// regions, each a convolution over the slice of the input it reads with its live taps,
// joined along W, then H.
// CHECK-LABEL: func.func @regions
// CHECK-DAG:     graph.slice %x starts [0, 0, 2, 2] steps [1, 1, 1, 1] : (tensor<1x2x6x6xf32>) -> tensor<1x2x2x2xf32>
// CHECK-DAG:     graph.conv %{{.*}}, %{{.*}} strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-DAG:     graph.conv %x, %{{.*}} strides [1, 1] padding [0, 0, 0, 0] dilations [4, 4] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x6x6xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x2x2xf32>
// CHECK:         graph.concat %{{.*}}, %{{.*}}, %{{.*}} axis 3
// CHECK:         %y = graph.concat %{{.*}}, %{{.*}}, %{{.*}} axis 2 : (tensor<1x2x2x6xf32>, tensor<1x2x2x6xf32>, tensor<1x2x2x6xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    func.return %y
func.func @regions(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<2x2x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [4, 4, 4, 4] dilations [4, 4] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  func.return %y : tensor<1x2x6x6xf32>
}
