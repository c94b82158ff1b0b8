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

// Only the rows are pruned (the columns' taps all read the input); the padding before
// shrinks by the dropped taps and the output keeps its size.
// CHECK-LABEL: func.func @rows_only
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<4x4x2x3xf32>
// CHECK-NEXT:    %y = graph.conv %x, %w strides [1, 1] padding [4, 1, 0, 1] dilations [4, 1]
// CHECK-SAME:      -> tensor<1x4x5x6xf32>
func.func @rows_only(%x: tensor<1x4x5x6xf32>) -> tensor<1x4x5x6xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [8, 1, 0, 1] dilations [4, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x5x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x6xf32>
  func.return %y : tensor<1x4x5x6xf32>
}

// -----

// Every tap reads the input for some output: nothing changes.
// CHECK-LABEL: func.func @all_live
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<4x4x3x3xf32>
// CHECK-NEXT:    graph.conv %x, %w strides [1, 1] padding [2, 2, 2, 2] dilations [2, 2]
func.func @all_live(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [2, 2, 2, 2] dilations [2, 2] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
