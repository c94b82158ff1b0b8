// RUN: strato-opt %s --split-input-file -p graph-winograd | filecheck %s
// RUN: strato-opt %s --split-input-file -p 'graph-winograd{tile=2}' | filecheck %s --check-prefix=TILE2
// RUN: strato-opt %s --split-input-file -p graph-fuse-ops,graph-winograd | filecheck %s --check-prefix=FUSED

// A 14x14 layer has 16 tiles of 4x4: F(4x4, 3x3), the weight transformed at compile
// time into [36, M/16, C/16, 16, 16]; the bias stays an operand.
// CHECK-LABEL: func.func @fourteen
// CHECK:         %w.winograd = graph.constant dense<{{.*}}> : tensor<36x2x2x16x16xf32>
// CHECK-NEXT:    %y = graph.blocked_winograd_conv %x, %w.winograd, %b padding [1, 1, 1, 1] tile 4 layout "NCHW16c" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<36x2x2x16x16xf32>, tensor<32xf32>) -> tensor<1x2x14x14x16xf32>
// CHECK-NOT:     graph.blocked_conv
// TILE2-LABEL: func.func @fourteen
// TILE2:         graph.blocked_winograd_conv {{.*}} tile 2 {{.*}} : (tensor<1x2x14x14x16xf32>, tensor<16x2x2x16x16xf32>, tensor<32xf32>)
func.func @fourteen(%x: tensor<1x2x14x14x16xf32>) -> tensor<1x2x14x14x16xf32> {
  %w = graph.constant dense<0.5> : tensor<2x2x3x3x16x16xf32>
  %b = graph.constant dense<0.25> : tensor<32xf32>
  %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<2x2x3x3x16x16xf32>, tensor<32xf32>) -> tensor<1x2x14x14x16xf32>
  func.return %y : tensor<1x2x14x14x16xf32>
}

// -----

// 7x7 has 4 tiles of 4x4 but 16 of 2x2: F(2x2, 3x3).
// CHECK-LABEL: func.func @seven
// CHECK:         graph.blocked_winograd_conv %x, %w.winograd padding [1, 1, 1, 1] tile 2 {{.*}} : (tensor<1x2x7x7x16xf32>, tensor<16x2x2x16x16xf32>) -> tensor<1x2x7x7x16xf32>
func.func @seven(%x: tensor<1x2x7x7x16xf32>) -> tensor<1x2x7x7x16xf32> {
  %w = graph.constant dense<0.5> : tensor<2x2x3x3x16x16xf32>
  %y = graph.blocked_conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x2x7x7x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x7x7x16xf32>
  func.return %y : tensor<1x2x7x7x16xf32>
}

// -----

// Direct: stride 2, too few channels, a weight that is not a constant, too few tiles
// (3x3: one tile of 4x4, four of 2x2), and a 112x112x128 layer whose transformed
// tiles would take 13.8 MB (F(4, 3)) or 24.5 MB (F(2, 3)).
// CHECK-LABEL: func.func @direct
// CHECK-NOT:     graph.blocked_winograd_conv
// CHECK-COUNT-5: graph.blocked_conv
// CHECK-NOT:     graph.blocked_winograd_conv
func.func @direct(%x: tensor<1x2x14x14x16xf32>, %n: tensor<1x1x14x14x16xf32>, %k: tensor<2x2x3x3x16x16xf32>, %s: tensor<1x2x3x3x16xf32>, %l: tensor<1x8x112x112x16xf32>) -> (tensor<1x2x7x7x16xf32>, tensor<1x1x14x14x16xf32>, tensor<1x2x14x14x16xf32>, tensor<1x2x3x3x16xf32>, tensor<1x8x112x112x16xf32>) {
  %w = graph.constant dense<0.5> : tensor<2x2x3x3x16x16xf32>
  %v = graph.constant dense<0.5> : tensor<1x1x3x3x16x16xf32>
  %q = graph.constant dense<0.5> : tensor<8x8x3x3x16x16xf32>
  %a = graph.blocked_conv %x, %w strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x7x7x16xf32>
  %b = graph.blocked_conv %n, %v strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x1x14x14x16xf32>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x14x14x16xf32>
  %c = graph.blocked_conv %x, %k strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x14x14x16xf32>
  %d = graph.blocked_conv %s, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x2x3x3x16xf32>, tensor<2x2x3x3x16x16xf32>) -> tensor<1x2x3x3x16xf32>
  %e = graph.blocked_conv %l, %q strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x8x112x112x16xf32>, tensor<8x8x3x3x16x16xf32>) -> tensor<1x8x112x112x16xf32>
  func.return %a, %b, %c, %d, %e : tensor<1x2x7x7x16xf32>, tensor<1x1x14x14x16xf32>, tensor<1x2x14x14x16xf32>, tensor<1x2x3x3x16xf32>, tensor<1x8x112x112x16xf32>
}

// -----

// In a fused group (graph-fuse-ops first), the transformed weight replaces the weight
// as the group's operand and body argument, in the same place; the label follows.
// CHECK-LABEL: func.func @fused
// FUSED-LABEL: func.func @fused
// FUSED:         %w.winograd = graph.constant dense<{{.*}}> : tensor<36x2x2x16x16xf32>
// FUSED-NEXT:    %r = graph.fused "blocked_winograd_conv_relu" out_elemwise_fusable (%x, %w.winograd, %b) : (tensor<1x2x14x14x16xf32>, tensor<36x2x2x16x16xf32>, tensor<32xf32>) -> tensor<1x2x14x14x16xf32> {
// FUSED-NEXT:    ^bb0(%x_1: tensor<1x2x14x14x16xf32>, %w.winograd_1: tensor<36x2x2x16x16xf32>, %b_1: tensor<32xf32>):
// FUSED-NEXT:      %y = graph.blocked_winograd_conv %x_1, %w.winograd_1, %b_1 padding [1, 1, 1, 1] tile 4
// FUSED-NEXT:      %r_1 = graph.relu %y
// FUSED-NOT:     graph.blocked_conv
func.func @fused(%x: tensor<1x2x14x14x16xf32>) -> tensor<1x2x14x14x16xf32> {
  %w = graph.constant dense<0.5> : tensor<2x2x3x3x16x16xf32>
  %b = graph.constant dense<0.25> : tensor<32xf32>
  %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : (tensor<1x2x14x14x16xf32>, tensor<2x2x3x3x16x16xf32>, tensor<32xf32>) -> tensor<1x2x14x14x16xf32>
  %r = graph.relu %y : tensor<1x2x14x14x16xf32>
  func.return %r : tensor<1x2x14x14x16xf32>
}
