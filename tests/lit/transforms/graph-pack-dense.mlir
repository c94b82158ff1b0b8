// RUN: strato-opt %s --split-input-file -p 'graph-pack-dense{lanes=16}' | filecheck %s
// RUN: strato-opt %s --split-input-file -p 'graph-pack-dense{lanes=8}' | filecheck %s --check-prefix=LANES8

// A constant weight [N, K] becomes K x NR panels [N / NR, K, NR]; the layer a batched
// product over the panels, its result transposed back to [.., N], then the bias.
// CHECK-LABEL: func.func @decoder
// CHECK-NEXT:    %b = graph.constant dense<2.500000e-01> : tensor<64xf32>
// CHECK-NEXT:    %w.packed = graph.constant dense<5.000000e-01> : tensor<2x8x32xf32>
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %1 = graph.matmul %0, %w.packed : (tensor<4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x4x32xf32>
// CHECK-NEXT:    %2 = graph.transpose %1 [1, 0, 2] : (tensor<2x4x32xf32>) -> tensor<4x2x32xf32>
// CHECK-NEXT:    %3 = graph.reshape %2 : (tensor<4x2x32xf32>) -> tensor<4x1x64xf32>
// CHECK-NEXT:    %y = graph.add %3, %b : (tensor<4x1x64xf32>, tensor<64xf32>) -> tensor<4x1x64xf32>
// CHECK-NEXT:    func.return %y
// LANES8-LABEL: func.func @decoder
// LANES8:         graph.constant dense<5.000000e-01> : tensor<4x8x16xf32>
// LANES8:         graph.matmul {{.*}} -> tensor<4x4x16xf32>
func.func @decoder(%x: tensor<4x1x8xf32>) -> tensor<4x1x64xf32> {
  %w = graph.constant dense<0.5> : tensor<64x8xf32>
  %b = graph.constant dense<0.25> : tensor<64xf32>
  %y = graph.dense %x, %w, %b : (tensor<4x1x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<4x1x64xf32>
  func.return %y : tensor<4x1x64xf32>
}

// -----

// Left as they are: a weight computed at run time, a single row (a matrix-vector
// product reads each weight once), columns that whole vectors do not divide.
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT:     graph.matmul
// CHECK:         graph.dense %x, %w
// CHECK:         graph.dense %row, %c
// CHECK:         graph.dense %x, %odd
// CHECK-NOT:     graph.matmul
func.func @unchanged(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>, %row: tensor<1x8xf32>) -> (tensor<4x32xf32>, tensor<1x32xf32>, tensor<4x20xf32>) {
  %y = graph.dense %x, %w : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  %c = graph.constant dense<0.5> : tensor<32x8xf32>
  %z = graph.dense %row, %c : (tensor<1x8xf32>, tensor<32x8xf32>) -> tensor<1x32xf32>
  %odd = graph.constant dense<0.5> : tensor<20x8xf32>
  %u = graph.dense %x, %odd : (tensor<4x8xf32>, tensor<20x8xf32>) -> tensor<4x20xf32>
  func.return %y, %z, %u : tensor<4x32xf32>, tensor<1x32xf32>, tensor<4x20xf32>
}

// -----

// Rows of run-time sizes (the input's leading dimensions): packed for the tile of 32
// rows, as a product that keeps them whole, the weight with a unit dimension for each
// run-time dimension but the last (its panels broadcast over the batch). Input
// features of run-time size, or a static dimension among the rows, keep the layer.
// CHECK-LABEL: func.func @run_time_rows
// CHECK-NEXT:    %v = graph.constant dense<5.000000e-01> : tensor<64x8xf32>
// CHECK-NEXT:    %b = graph.constant dense<2.500000e-01> : tensor<64xf32>
// CHECK-NEXT:    %w.packed = graph.constant dense<5.000000e-01> : tensor<2x8x32xf32>
// CHECK-NEXT:    %0 = graph.matmul %x, %w.packed : (tensor<?x8xf32>, tensor<2x8x32xf32>) -> tensor<2x?x32xf32>
// CHECK-NEXT:    %1 = graph.transpose %0 [1, 0, 2] : (tensor<2x?x32xf32>) -> tensor<?x2x32xf32>
// CHECK-NEXT:    %y = graph.reshape %1 : (tensor<?x2x32xf32>) -> tensor<?x64xf32>
// CHECK-NEXT:    %v.packed = graph.constant dense<5.000000e-01> : tensor<2x1x8x32xf32>
// CHECK-NEXT:    %2 = graph.matmul %s, %v.packed : (tensor<?x?x8xf32>, tensor<2x1x8x32xf32>) -> tensor<2x?x?x32xf32>
// CHECK-NEXT:    %3 = graph.transpose %2 [1, 2, 0, 3] : (tensor<2x?x?x32xf32>) -> tensor<?x?x2x32xf32>
// CHECK-NEXT:    %4 = graph.reshape %3 : (tensor<?x?x2x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT:    %z = graph.add %4, %b : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT:    %u = graph.dense %m, %v, %b
// CHECK-NEXT:    func.return
func.func @run_time_rows(%x: tensor<?x8xf32>, %s: tensor<?x?x8xf32>, %m: tensor<?x3x8xf32>) -> (tensor<?x64xf32>, tensor<?x?x64xf32>, tensor<?x3x64xf32>) {
  %w = graph.constant dense<0.5> : tensor<64x8xf32>
  %v = graph.constant dense<0.5> : tensor<64x8xf32>
  %b = graph.constant dense<0.25> : tensor<64xf32>
  %y = graph.dense %x, %w : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %z = graph.dense %s, %v, %b : (tensor<?x?x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %u = graph.dense %m, %v, %b : (tensor<?x3x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<?x3x64xf32>
  func.return %y, %z, %u : tensor<?x64xf32>, tensor<?x?x64xf32>, tensor<?x3x64xf32>
}
