// RUN: strato-opt %s --split-input-file -p 'graph-pad-channels{multiple=4 min_multiple=4 max_extra_percent=100}' | filecheck %s
// RUN: strato-opt %s --split-input-file -p 'graph-pad-channels{multiple=8 min_multiple=4 max_extra_percent=0 narrow_extra_percent=50}' | filecheck %s --check-prefix=NARROW
// RUN: strato-opt %s --split-input-file -p 'graph-pad-channels{multiple=8 min_multiple=4 max_extra_percent=0 narrow_extra_percent=0}' | filecheck %s --check-prefix=KEPT

// Six output channels become eight: the weight gains two rows of zeros and the bias two
// zeros; the ReLU and the convolution after it take the padded tensor (the second
// convolution's weight gains two input channels of zeros), so nothing drops the added
// channels.
// CHECK-LABEL: func.func @chain
// CHECK:         %y = graph.conv %x, %w, %b {{.*}} : (tensor<1x4x5x5xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
// CHECK-NEXT:    %r = graph.relu %y : tensor<1x8x5x5xf32>
// CHECK:         %z = graph.conv %r, %v {{.*}} : (tensor<1x8x5x5xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x5x5xf32>
// CHECK-NEXT:    func.return %z
// CHECK-NOT:     graph.slice
func.func @chain(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %w = graph.constant dense<0.5> : tensor<6x4x1x1xf32>
  %b = graph.constant dense<1.0> : tensor<6xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>, tensor<6xf32>) -> tensor<1x6x5x5xf32>
  %r = graph.relu %y : tensor<1x6x5x5xf32>
  %v = graph.constant dense<0.25> : tensor<4x6x3x3xf32>
  %z = graph.conv %r, %v strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x6x5x5xf32>, tensor<4x6x3x3xf32>) -> tensor<1x4x5x5xf32>
  func.return %z : tensor<1x4x5x5xf32>
}

// -----

// A 3-D convolution is padded alike; the function's result reads a slice of the six
// channels it had.
// CHECK-LABEL: func.func @result
// CHECK:         %y = graph.conv {{.*}} -> tensor<1x8x2x3x3xf32>
// CHECK-NEXT:    %{{.*}} = graph.slice %y starts [0, 0, 0, 0, 0] steps [1, 1, 1, 1, 1] : (tensor<1x8x2x3x3xf32>) -> tensor<1x6x2x3x3xf32>
func.func @result(%x: tensor<1x4x2x3x3xf32>) -> tensor<1x6x2x3x3xf32> {
  %w = graph.constant dense<0.5> : tensor<6x4x1x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1, 1] padding [0, 1, 1, 0, 1, 1] dilations [1, 1, 1] groups 1 layout "NCDHW" kernel_layout "OIDHW" : (tensor<1x4x2x3x3xf32>, tensor<6x4x1x3x3xf32>) -> tensor<1x6x2x3x3xf32>
  func.return %y : tensor<1x6x2x3x3xf32>
}

// -----

// A depthwise convolution gains groups; a squeeze-and-excitation gate (global pool,
// convolutions, sigmoid) and the product with it stay padded (the squeeze to two
// channels is padded to four as well): the sigmoid makes the added channels 0.5, and
// their product with zeros is zero.
// CHECK-LABEL: func.func @depthwise_gate
// CHECK:         %y = graph.conv {{.*}} -> tensor<1x8x4x4xf32>
// CHECK:         %d = graph.conv %y, {{.*}} groups 8 {{.*}} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %g = graph.global_avg_pool %d layout "NCHW" : (tensor<1x8x4x4xf32>) -> tensor<1x8x1x1xf32>
// CHECK:         %s = graph.conv %g, {{.*}} : (tensor<1x8x1x1xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x1x1xf32>
// CHECK:         %e = graph.conv %s, {{.*}} : (tensor<1x4x1x1xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %a = graph.sigmoid %e : tensor<1x8x1x1xf32>
// CHECK-NEXT:    %m = graph.mul %d, %a : (tensor<1x8x4x4xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.slice %m
func.func @depthwise_gate(%x: tensor<1x4x4x4xf32>) -> tensor<1x6x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<6x4x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
  %k = graph.constant dense<0.125> : tensor<6x1x3x3xf32>
  %d = graph.conv %y, %k strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 6 layout "NCHW" kernel_layout "OIHW" : (tensor<1x6x4x4xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x4x4xf32>
  %g = graph.global_avg_pool %d layout "NCHW" : (tensor<1x6x4x4xf32>) -> tensor<1x6x1x1xf32>
  %q = graph.constant dense<0.5> : tensor<2x6x1x1xf32>
  %s = graph.conv %g, %q strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x6x1x1xf32>, tensor<2x6x1x1xf32>) -> tensor<1x2x1x1xf32>
  %u = graph.constant dense<0.5> : tensor<6x2x1x1xf32>
  %e = graph.conv %s, %u strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x1x1xf32>, tensor<6x2x1x1xf32>) -> tensor<1x6x1x1xf32>
  %a = graph.sigmoid %e : tensor<1x6x1x1xf32>
  %m = graph.mul %d, %a : (tensor<1x6x4x4xf32>, tensor<1x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  func.return %m : tensor<1x6x4x4xf32>
}

// -----

// The log of the added channels' zeros would be infinite: the log reads a slice, as
// does the concatenation, which cannot take the padded tensor.
// CHECK-LABEL: func.func @not_carried
// CHECK:         %y = graph.conv {{.*}} -> tensor<1x8x2x2xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.slice %y {{.*}} -> tensor<1x6x2x2xf32>
// CHECK-NEXT:    %l = graph.log %[[S]] : tensor<1x6x2x2xf32>
// CHECK-NEXT:    %c = graph.concat %[[S]], %l
func.func @not_carried(%x: tensor<1x4x2x2xf32>) -> tensor<1x12x2x2xf32> {
  %w = graph.constant dense<0.5> : tensor<6x4x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x2x2xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x2x2xf32>
  %l = graph.log %y : tensor<1x6x2x2xf32>
  %c = graph.concat %y, %l axis 1 : (tensor<1x6x2x2xf32>, tensor<1x6x2x2xf32>) -> tensor<1x12x2x2xf32>
  func.return %c : tensor<1x12x2x2xf32>
}

// -----

// Channels a multiple of min_multiple, or a weight that is no constant: nothing changes.
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT:     graph.slice
// CHECK:         -> tensor<1x8x2x2xf32>
// CHECK:         -> tensor<1x6x2x2xf32>
// CHECK-NOT:     graph.slice
func.func @unchanged(%x: tensor<1x4x2x2xf32>, %v: tensor<6x4x1x1xf32>) -> (tensor<1x8x2x2xf32>, tensor<1x6x2x2xf32>) {
  %w = graph.constant dense<0.5> : tensor<8x4x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x2x2xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x2x2xf32>
  %z = graph.conv %x, %v strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x2x2xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x2x2xf32>
  func.return %y, %z : tensor<1x8x2x2xf32>, tensor<1x6x2x2xf32>
}

// -----

// Twelve channels, which blocks of 4 (min_multiple) divide: narrower vectors than
// blocks of 8. They are padded to 16 within narrow_extra_percent (33% of 50%), and left
// as they are with it 0; six channels, which no block of 4 divides, are not padded
// beyond max_extra_percent (0).
// CHECK-LABEL:  func.func @narrow
// NARROW-LABEL: func.func @narrow
// NARROW:         %y = graph.conv {{.*}} -> tensor<1x16x2x2xf32>
// NARROW:         graph.slice %y {{.*}} -> tensor<1x12x2x2xf32>
// NARROW:         %z = graph.conv {{.*}} -> tensor<1x6x2x2xf32>
// KEPT-LABEL:     func.func @narrow
// KEPT-NOT:       graph.slice
// KEPT:           %y = graph.conv {{.*}} -> tensor<1x12x2x2xf32>
// KEPT:           %z = graph.conv {{.*}} -> tensor<1x6x2x2xf32>
func.func @narrow(%x: tensor<1x4x2x2xf32>) -> (tensor<1x12x2x2xf32>, tensor<1x6x2x2xf32>) {
  %w = graph.constant dense<0.5> : tensor<12x4x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x2x2xf32>, tensor<12x4x1x1xf32>) -> tensor<1x12x2x2xf32>
  %v = graph.constant dense<0.5> : tensor<6x4x1x1xf32>
  %z = graph.conv %x, %v strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x2x2xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x2x2xf32>
  func.return %y, %z : tensor<1x12x2x2xf32>, tensor<1x6x2x2xf32>
}
