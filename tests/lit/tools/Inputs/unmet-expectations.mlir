func.func @wrong_message(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{this is not the message}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @wrong_line(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+2 {{expects float tensors}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @never_produced(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects float tensors}}
  %r = graph.relu %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @unexpected(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @wrong_severity(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-warning @+1 {{expects float tensors}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @fine(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
