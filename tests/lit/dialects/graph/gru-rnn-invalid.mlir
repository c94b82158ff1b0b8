// Every verifier and parse error of graph.gru and graph.rnn, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @unknown_direction(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{expected forward, reverse or bidirectional, got 'sideways'}}
  %y, %y_h = graph.gru sideways %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @unknown_direction_generic(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' direction must be forward, reverse or bidirectional, got 'sideways'}}
  %y, %y_h = "graph.gru"(%x, %w, %r) <{direction = "sideways", activations = ["sigmoid", "tanh"], activation_alpha = [0.0, 0.0], activation_beta = [0.0, 0.0], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @two_operands(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>) {
  // expected-error @+1 {{'graph.gru' takes x, w and r, then keyword operands}}
  %y, %y_h = graph.gru forward %x, %w : (tensor<3x2x4xf32>, tensor<1x15x4xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @type_count(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' has 3 operands and 2 results, the type says 3 and 1}}
  %y = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> tensor<3x1x2x5xf32>
  func.return
}

// -----

func.func @unknown_activation(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{expected an activation (sigmoid, tanh, relu, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, softplus), got 'swish'}}
  %y, %y_h = graph.gru forward %x, %w, %r activations [sigmoid, swish] : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @activation_parameters(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{activation leaky_relu takes 1 parameters, got 2}}
  %y, %y_h = graph.gru forward %x, %w, %r activations [leaky_relu(0.1, 0.2), tanh] : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @unknown_activation_generic(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' activation 'swish' is not one of sigmoid, tanh, relu, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, softplus}}
  %y, %y_h = "graph.gru"(%x, %w, %r) <{direction = "forward", activations = ["sigmoid", "swish"], activation_alpha = [0.0, 0.0], activation_beta = [0.0, 0.0], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @activation_count(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' needs 2 activations with an alpha and a beta each (2 a direction), got 1, 1 and 1}}
  %y, %y_h = graph.gru forward %x, %w, %r activations [sigmoid] : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @parameter_count_generic(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' needs 2 activations with an alpha and a beta each (2 a direction), got 2, 1 and 2}}
  %y, %y_h = "graph.gru"(%x, %w, %r) <{direction = "forward", activations = ["sigmoid", "tanh"], activation_alpha = [0.0], activation_beta = [0.0, 0.0], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @clip(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' clip must be positive, got -1.0}}
  %y, %y_h = graph.gru forward %x, %w, %r clip -1.0 : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @dynamic_shape(%x: tensor<?x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' requires static shapes, got tensor<?x2x4xf32>}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<?x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @integer_input(%x: tensor<3x2x4xi32>, %w: tensor<1x15x4xi32>, %r: tensor<1x15x5xi32>) {
  // expected-error @+1 {{'graph.rnn' expects float tensors, got tensor<3x2x4xi32>}}
  %y, %y_h = graph.rnn forward %x, %w, %r : (tensor<3x2x4xi32>, tensor<1x15x4xi32>, tensor<1x15x5xi32>) -> (tensor<3x1x2x5xi32>, tensor<1x2x5xi32>)
  func.return
}

// -----

func.func @mixed_element_types(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf64>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' element type of tensor<1x15x4xf64> differs from that of x (f32)}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf64>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @input_rank(%x: tensor<2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' x must be [steps, batch, input], got tensor<2x4xf32>}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @recurrent_weight_rank(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<15x5xf32>) {
  // expected-error @+1 {{'graph.gru' r must be [directions, 3 * hidden, hidden], got tensor<15x5xf32>}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @rnn_recurrent_weight_rank(%x: tensor<3x2x4xf32>, %w: tensor<1x5x4xf32>, %r: tensor<5x5xf32>) {
  // expected-error @+1 {{'graph.rnn' r must be [directions, hidden, hidden], got tensor<5x5xf32>}}
  %y, %y_h = graph.rnn forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x5x4xf32>, tensor<5x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @input_weight_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x15x3xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' w must have shape [1, 15, 4] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 15, 3]}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x3xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @one_direction_of_two(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' w must have shape [2, 15, 4] (bidirectional, D=2 S=3 B=2 I=4 H=5), got [1, 15, 4]}}
  %y, %y_h = graph.gru bidirectional %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>)
  func.return
}

// -----

func.func @recurrent_weight_gates(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.gru' r must have shape [1, 15, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 20, 5]}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @bias_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>, %b: tensor<1x15xf32>) {
  // expected-error @+1 {{'graph.gru' bias must have shape [1, 30] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 15]}}
  %y, %y_h = graph.gru forward %x, %w, %r bias %b : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, tensor<1x15xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @initial_h_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>, %h: tensor<1x5xf32>) {
  // expected-error @+1 {{'graph.gru' initial_h must have shape [1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 5]}}
  %y, %y_h = graph.gru forward %x, %w, %r initial_h %h : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, tensor<1x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @float_sequence_lens(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>, %l: tensor<2xf32>) {
  // expected-error @+1 {{'graph.gru' sequence_lens must be an integer tensor, got tensor<2xf32>}}
  %y, %y_h = graph.gru forward %x, %w, %r sequence_lens %l : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, tensor<2xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @sequence_lens_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>, %l: tensor<3xi32>) {
  // expected-error @+1 {{'graph.gru' sequence_lens must have shape [2] (forward, D=1 S=3 B=2 I=4 H=5), got [3]}}
  %y, %y_h = graph.gru forward %x, %w, %r sequence_lens %l : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, tensor<3xi32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @output_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' y must have shape [3, 1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [3, 2, 5]}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @final_h_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.gru' y_h must have shape [1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [2, 5]}}
  %y, %y_h = graph.gru forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<2x5xf32>)
  func.return
}
