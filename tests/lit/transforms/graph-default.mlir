// RUN: strato-opt %s -p graph-default | filecheck %s

// Constants fold, duplicates and dead ops go, dense + relu become one kernel, and the
// memory plan is recorded.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    arena_bytes = 0 : i64
// CHECK-NEXT:    %t = graph.constant dense<1.000000e+00> : tensor<4x4xf32>
// CHECK-NEXT:    %r = graph.fused "dense_relu" out_elemwise_fusable (%x, %t)
// CHECK:           %y = graph.dense
// CHECK-NEXT:      %r_1 = graph.relu %y
// CHECK-NEXT:      graph.yield %r_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %w = graph.constant dense<1.0> : tensor<4x4xf32>
  %t = graph.transpose %w [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = graph.dense %x, %t : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  %unused = graph.dense %x, %t : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  %r = graph.relu %y : tensor<1x4xf32>
  func.return %r : tensor<1x4xf32>
}
