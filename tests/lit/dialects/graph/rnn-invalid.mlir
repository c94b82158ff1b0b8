// Every verifier and parse error of the recurrent operators, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @unknown_direction(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{expected forward, reverse or bidirectional, got 'sideways'}}
  %y, %y_h, %y_c = graph.lstm sideways %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @unknown_direction_generic(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' direction must be forward, reverse or bidirectional, got 'sideways'}}
  %y, %y_h, %y_c = "graph.lstm"(%x, %w, %r) <{direction = "sideways", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>}> : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @two_operands(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>) {
  // expected-error @+1 {{'graph.lstm' takes x, w and r, then keyword operands}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w : (tensor<3x2x4xf32>, tensor<1x20x4xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @type_count(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' has 3 operands and 3 results, the type says 3 and 1}}
  %y = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> tensor<3x1x2x5xf32>
  func.return
}

// -----

func.func @dynamic_shape(%x: tensor<?x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' requires static shapes, got tensor<?x2x4xf32>}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<?x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @integer_input(%x: tensor<3x2x4xi32>, %w: tensor<1x20x4xi32>, %r: tensor<1x20x5xi32>) {
  // expected-error @+1 {{'graph.lstm' expects float tensors, got tensor<3x2x4xi32>}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xi32>, tensor<1x20x4xi32>, tensor<1x20x5xi32>) -> (tensor<3x1x2x5xi32>, tensor<1x2x5xi32>, tensor<1x2x5xi32>)
  func.return
}

// -----

func.func @mixed_element_types(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf64>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' element type of tensor<1x20x4xf64> differs from that of x (f32)}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf64>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @input_rank(%x: tensor<2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' x must be [steps, batch, input], got tensor<2x4xf32>}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @recurrent_weight_rank(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' r must be [directions, 4 * hidden, hidden], got tensor<20x5xf32>}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @input_weight_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x3xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' w must have shape [1, 20, 4] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 20, 3]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x3xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @one_direction_of_two(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' w must have shape [2, 20, 4] (bidirectional, D=2 S=3 B=2 I=4 H=5), got [1, 20, 4]}}
  %y, %y_h, %y_c = graph.lstm bidirectional %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>)
  func.return
}

// -----

func.func @recurrent_weight_gates(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x15x5xf32>) {
  // expected-error @+1 {{'graph.lstm' r must have shape [1, 20, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 15, 5]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x15x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @bias_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %b: tensor<1x20xf32>) {
  // expected-error @+1 {{'graph.lstm' bias must have shape [1, 40] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 20]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r bias %b : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<1x20xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @initial_h_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %h: tensor<1x5xf32>) {
  // expected-error @+1 {{'graph.lstm' initial_h must have shape [1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 5]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r initial_h %h : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<1x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @initial_c_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %c: tensor<1x1x5xf32>) {
  // expected-error @+1 {{'graph.lstm' initial_c must have shape [1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 1, 5]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r initial_c %c : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<1x1x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @peepholes_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %p: tensor<1x20xf32>) {
  // expected-error @+1 {{'graph.lstm' peepholes must have shape [1, 15] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 20]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r peepholes %p : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<1x20xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @float_sequence_lens(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %l: tensor<2xf32>) {
  // expected-error @+1 {{'graph.lstm' sequence_lens must be an integer tensor, got tensor<2xf32>}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r sequence_lens %l : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<2xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @sequence_lens_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %l: tensor<3xi32>) {
  // expected-error @+1 {{'graph.lstm' sequence_lens must have shape [2] (forward, D=1 S=3 B=2 I=4 H=5), got [3]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r sequence_lens %l : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<3xi32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @output_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' y must have shape [3, 1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [3, 2, 5]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @final_h_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' y_h must have shape [1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [2, 5]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<2x5xf32>, tensor<1x2x5xf32>)
  func.return
}

// -----

func.func @final_c_shape(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) {
  // expected-error @+1 {{'graph.lstm' y_c must have shape [1, 2, 5] (forward, D=1 S=3 B=2 I=4 H=5), got [1, 2, 6]}}
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x6xf32>)
  func.return
}
