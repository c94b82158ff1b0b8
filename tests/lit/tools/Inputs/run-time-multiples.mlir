// A function over a batch of run-time size, which its bounds make a multiple of 8
// (check-equivalence.mlir checks it).
func.func @main(%x: tensor<?x8xf32> {graph.sizes = ["batch"]}, %w: tensor<4x8xf32>) -> tensor<?x4xf32> attributes {graph.size_bounds = {batch = array<i64: 0, -1, 8>}} {
  %r = graph.relu %x : tensor<?x8xf32>
  %d = graph.dense %r, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %p = graph.softmax %d axes [1] : tensor<?x4xf32>
  func.return %p : tensor<?x4xf32>
}
