// RUN: strato-opt %s --split-input-file -p graph-fold-constants | filecheck %s

// A chain of ops on constants folds into one constant; the dead inputs go away.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %s = graph.constant dense<{{\[\[}}1.000000e+00], [4.000000e+00]]> : tensor<2x1xf32>
// CHECK-NEXT:    %y = graph.matmul %x, %s
// CHECK-NEXT:    func.return %y
func.func @chain(%x: tensor<3x2xf32>) -> tensor<3x1xf32> {
  %w = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %t = graph.transpose %w [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
  %s = graph.mul %t, %t : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %y = graph.matmul %x, %s : (tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<3x1xf32>
  func.return %y : tensor<3x1xf32>
}

// -----

// An op with a non-constant operand is kept; a constant with other users is kept.
// CHECK-LABEL: func.func @partial
// CHECK-NEXT:    %c = graph.constant dense<2.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %a = graph.add %x, %c
// CHECK-NEXT:    %d = graph.constant dense<4.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %m = graph.mul %a, %d
func.func @partial(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<2.0> : tensor<2xf32>
  %a = graph.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %d = graph.add %c, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %m = graph.mul %a, %d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %m : tensor<2xf32>
}
