// Round trip of the recurrent operators.
// RUN: strato-opt %s | strato-opt | filecheck %s

// CHECK-LABEL: func.func @lstm_forward
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
func.func @lstm_forward(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) -> tensor<1x2x5xf32> {
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return %y_h : tensor<1x2x5xf32>
}

// CHECK-LABEL: func.func @lstm_reverse_with_bias
// CHECK: graph.lstm reverse %x, %w, %r bias %b : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<1x40xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
func.func @lstm_reverse_with_bias(%x: tensor<3x2x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>, %b: tensor<1x40xf32>) -> tensor<3x1x2x5xf32> {
  %y, %y_h, %y_c = graph.lstm reverse %x, %w, %r bias %b : (tensor<3x2x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, tensor<1x40xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>)
  func.return %y : tensor<3x1x2x5xf32>
}

// Every optional operand, in operand order.
// CHECK-LABEL: func.func @lstm_bidirectional_all_operands
// CHECK: graph.lstm bidirectional %x, %w, %r bias %b sequence_lens %lens initial_h %h0 initial_c %c0 peepholes %p : (tensor<3x2x4xf32>, tensor<2x20x4xf32>, tensor<2x20x5xf32>, tensor<2x40xf32>, tensor<2xi32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x15xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>)
func.func @lstm_bidirectional_all_operands(%x: tensor<3x2x4xf32>, %w: tensor<2x20x4xf32>, %r: tensor<2x20x5xf32>, %b: tensor<2x40xf32>, %lens: tensor<2xi32>, %h0: tensor<2x2x5xf32>, %c0: tensor<2x2x5xf32>, %p: tensor<2x15xf32>) -> tensor<2x2x5xf32> {
  %y, %y_h, %y_c = graph.lstm bidirectional %x, %w, %r bias %b sequence_lens %lens initial_h %h0 initial_c %c0 peepholes %p : (tensor<3x2x4xf32>, tensor<2x20x4xf32>, tensor<2x20x5xf32>, tensor<2x40xf32>, tensor<2xi32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x15xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>)
  func.return %y_c : tensor<2x2x5xf32>
}

// Some optional operands only, and an attribute dictionary.
// CHECK-LABEL: func.func @lstm_initial_state_only
// CHECK: graph.lstm forward %x, %w, %r initial_h %h0 peepholes %p {note = "kept"} : (tensor<1x1x2xf32>, tensor<1x12x2xf32>, tensor<1x12x3xf32>, tensor<1x1x3xf32>, tensor<1x9xf32>) -> (tensor<1x1x1x3xf32>, tensor<1x1x3xf32>, tensor<1x1x3xf32>)
func.func @lstm_initial_state_only(%x: tensor<1x1x2xf32>, %w: tensor<1x12x2xf32>, %r: tensor<1x12x3xf32>, %h0: tensor<1x1x3xf32>, %p: tensor<1x9xf32>) -> tensor<1x1x3xf32> {
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r initial_h %h0 peepholes %p {note = "kept"} : (tensor<1x1x2xf32>, tensor<1x12x2xf32>, tensor<1x12x3xf32>, tensor<1x1x3xf32>, tensor<1x9xf32>) -> (tensor<1x1x1x3xf32>, tensor<1x1x3xf32>, tensor<1x1x3xf32>)
  func.return %y_h : tensor<1x1x3xf32>
}
