// Round trip of graph.gru and graph.rnn.
// RUN: strato-opt %s | strato-opt | filecheck %s

// The default activations are not spelled.
// CHECK-LABEL: func.func @gru_forward
// CHECK: %{{.*}}, %{{.*}} = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
func.func @gru_forward(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) -> tensor<1x2x5xf32> {
  %y, %y_h = graph.gru forward %x, %w, %r activations [sigmoid, tanh] : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return %y_h : tensor<1x2x5xf32>
}

// Every optional operand in operand order, activations with their parameters, clip,
// linear_before_reset and an attribute dictionary.
// CHECK-LABEL: func.func @gru_everything
// CHECK: graph.gru bidirectional %x, %w, %r bias %b sequence_lens %lens initial_h %h0 activations [hard_sigmoid(0.25, 0.5), softsign, leaky_relu(-0.5), scaled_tanh(2.0, 0.75)] clip 3.5 linear_before_reset {note = "kept"} : (tensor<3x2x4xf32>, tensor<2x15x4xf32>, tensor<2x15x5xf32>, tensor<2x30xf32>, tensor<2xi32>, tensor<2x2x5xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>)
func.func @gru_everything(%x: tensor<3x2x4xf32>, %w: tensor<2x15x4xf32>, %r: tensor<2x15x5xf32>, %b: tensor<2x30xf32>, %lens: tensor<2xi32>, %h0: tensor<2x2x5xf32>) -> tensor<3x2x2x5xf32> {
  %y, %y_h = graph.gru bidirectional %x, %w, %r bias %b sequence_lens %lens initial_h %h0 activations [hard_sigmoid(0.25, 0.5), softsign, leaky_relu(-0.5), scaled_tanh(2.0, 0.75)] clip 3.5 linear_before_reset {note = "kept"} : (tensor<3x2x4xf32>, tensor<2x15x4xf32>, tensor<2x15x5xf32>, tensor<2x30xf32>, tensor<2xi32>, tensor<2x2x5xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>)
  func.return %y : tensor<3x2x2x5xf32>
}

// The generic form prints as the custom one.
// CHECK-LABEL: func.func @gru_generic
// CHECK: graph.gru reverse %x, %w, %r initial_h %h0 activations [sigmoid, relu] : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, tensor<1x2x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
func.func @gru_generic(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>, %h0: tensor<1x2x5xf32>) -> tensor<1x2x5xf32> {
  %y, %y_h = "graph.gru"(%x, %w, %r, %h0) <{direction = "reverse", activations = ["sigmoid", "relu"], activation_alpha = [0.0, 0.0], activation_beta = [0.0, 0.0], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>}> : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, tensor<1x2x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return %y_h : tensor<1x2x5xf32>
}

// CHECK-LABEL: func.func @rnn_forward
// CHECK: graph.rnn forward %x, %w, %r bias %b : (tensor<3x2x4xf32>, tensor<1x5x4xf32>, tensor<1x5x5xf32>, tensor<1x10xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
func.func @rnn_forward(%x: tensor<3x2x4xf32>, %w: tensor<1x5x4xf32>, %r: tensor<1x5x5xf32>, %b: tensor<1x10xf32>) -> tensor<3x1x2x5xf32> {
  %y, %y_h = graph.rnn forward %x, %w, %r bias %b : (tensor<3x2x4xf32>, tensor<1x5x4xf32>, tensor<1x5x5xf32>, tensor<1x10xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return %y : tensor<3x1x2x5xf32>
}

// CHECK-LABEL: func.func @rnn_bidirectional
// CHECK: graph.rnn bidirectional %x, %w, %r sequence_lens %lens activations [affine(0.5, -1.0), thresholded_relu(1.0)] clip 1.0 : (tensor<3x2x4xf32>, tensor<2x5x4xf32>, tensor<2x5x5xf32>, tensor<2xi64>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>)
func.func @rnn_bidirectional(%x: tensor<3x2x4xf32>, %w: tensor<2x5x4xf32>, %r: tensor<2x5x5xf32>, %lens: tensor<2xi64>) -> tensor<2x2x5xf32> {
  %y, %y_h = graph.rnn bidirectional %x, %w, %r sequence_lens %lens activations [affine(0.5, -1), thresholded_relu(1.0)] clip 1 : (tensor<3x2x4xf32>, tensor<2x5x4xf32>, tensor<2x5x5xf32>, tensor<2xi64>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>)
  func.return %y_h : tensor<2x2x5xf32>
}
