// RUN: strato-opt %s --split-input-file -p cse | filecheck %s

// Identical graph ops on the same operands are computed once; constants with the same
// value are one constant.
// CHECK-LABEL: func.func @duplicates
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<3x4xf32>
// CHECK-NEXT:    %a = graph.dense %x, %w
// CHECK-NEXT:    %r = graph.relu %a
// CHECK-NEXT:    %s = graph.add %r, %r
// CHECK-NEXT:    func.return %s
func.func @duplicates(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.5> : tensor<3x4xf32>
  %v = graph.constant dense<0.5> : tensor<3x4xf32>
  %a = graph.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %b = graph.dense %x, %v : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %r = graph.relu %a : tensor<2x3xf32>
  %q = graph.relu %b : tensor<2x3xf32>
  %s = graph.add %r, %q : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}

// -----

// Ops with different attributes are different.
// CHECK-LABEL: func.func @different_perms
// CHECK-NEXT:    graph.transpose %x [1, 0, 2]
// CHECK-NEXT:    graph.transpose %x [0, 2, 1]
func.func @different_perms(%x: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>) {
  %a = graph.transpose %x [1, 0, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %b = graph.transpose %x [0, 2, 1] : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  func.return %a, %b : tensor<2x2x2xf32>, tensor<2x2x2xf32>
}
