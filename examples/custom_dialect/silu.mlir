func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %h = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %s = graph.sigmoid %h : tensor<2x8xf32>
  %y = graph.mul %h, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
