// RUN: strato-opt %s -p dce | filecheck %s

// Graph ops whose results are unused go, and so do the constants only they read.
// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    func.return %r
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<2.0> : tensor<4xf32>
  %unused = graph.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = graph.relu %x : tensor<4xf32>
  %also_unused = graph.add %r, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
