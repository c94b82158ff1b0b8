// RUN: strato-opt %s --split-input-file -p graph-unroll-recurrences | filecheck %s

// An LSTM becomes one input projection for every step, split by time, then per step the
// recurrent product and the cell in element-wise ops; y gathers every step's h.
// CHECK-LABEL: func.func @lstm
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %w : (tensor<1x8x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT:    %[[X:.*]] = graph.reshape %x : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[XW:.*]] = graph.dense %[[X]], %[[W]] : (tensor<2x3xf32>, tensor<8x3xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %[[X0:.*]], %[[X1:.*]] = graph.split %[[XW]] axis 0
// CHECK-NEXT:    %[[H0:.*]] = graph.constant dense<0.000000e+00> : tensor<1x2xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %r : (tensor<1x8x2xf32>) -> tensor<8x2xf32>
// CHECK-NEXT:    %[[C0:.*]] = graph.constant dense<0.000000e+00> : tensor<1x2xf32>
// CHECK-NEXT:    %[[P0:.*]] = graph.dense %[[H0]], %[[R]]
// CHECK-NEXT:    %[[G0:.*]] = graph.add %[[X0]], %[[P0]]
// CHECK-NEXT:    %[[I:.*]], %[[O:.*]], %[[F:.*]], %[[C:.*]] = graph.split %[[G0]] axis 1 : (tensor<1x8xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
// CHECK-NEXT:    %[[SI:.*]] = graph.sigmoid %[[I]]
// CHECK-NEXT:    %[[SF:.*]] = graph.sigmoid %[[F]]
// CHECK-NEXT:    %[[FC:.*]] = graph.mul %[[SF]], %[[C0]]
// CHECK-NEXT:    %[[TC:.*]] = graph.tanh %[[C]]
// CHECK-NEXT:    %[[IC:.*]] = graph.mul %[[SI]], %[[TC]]
// CHECK-NEXT:    %[[C1:.*]] = graph.add %[[FC]], %[[IC]]
// CHECK-NEXT:    %[[SO:.*]] = graph.sigmoid %[[O]]
// CHECK-NEXT:    %[[TC1:.*]] = graph.tanh %[[C1]]
// CHECK-NEXT:    %[[H1:.*]] = graph.mul %[[SO]], %[[TC1]]
// CHECK-NEXT:    %{{.*}} = graph.dense %[[H1]], %[[R]]
// CHECK:         %y = graph.concat %{{.*}}, %{{.*}} axis 0 : (tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>) -> tensor<2x1x1x2xf32>
// CHECK-NEXT:    %y_h = graph.reshape
// CHECK-NEXT:    %y_c = graph.reshape
// CHECK-NEXT:    func.return %y, %y_h, %y_c
// CHECK-NOT:     graph.lstm
func.func @lstm(%x: tensor<2x1x3xf32>, %w: tensor<1x8x3xf32>, %r: tensor<1x8x2xf32>) -> (tensor<2x1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %y, %y_h, %y_c = graph.lstm forward %x, %w, %r : (tensor<2x1x3xf32>, tensor<1x8x3xf32>, tensor<1x8x2xf32>) -> (tensor<2x1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  func.return %y, %y_h, %y_c : tensor<2x1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// A bidirectional RNN: each direction slices its weights; the reverse one visits the
// last step first; y puts the directions side by side at each time.
// CHECK-LABEL: func.func @rnn
// CHECK:         graph.slice %w starts [0, 0, 0] steps [1, 1, 1] : (tensor<2x2x3xf32>) -> tensor<1x2x3xf32>
// CHECK:         graph.clip {{.*}} min -5.000000e+00 max 5.000000e+00
// CHECK:         graph.relu
// CHECK:         graph.slice %w starts [1, 0, 0] steps [1, 1, 1] : (tensor<2x2x3xf32>) -> tensor<1x2x3xf32>
// CHECK:         graph.tanh
// CHECK:         graph.concat %{{.*}}, %{{.*}} axis 1 : (tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x1x2xf32>
// CHECK:         %y = graph.concat {{.*}} axis 0 : {{.*}} -> tensor<3x2x1x2xf32>
// CHECK:         %y_h = graph.concat {{.*}} axis 0 : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<2x1x2xf32>
// CHECK-NOT:     graph.rnn
func.func @rnn(%x: tensor<3x1x3xf32>, %w: tensor<2x2x3xf32>, %r: tensor<2x2x2xf32>) -> (tensor<3x2x1x2xf32>, tensor<2x1x2xf32>) {
  %y, %y_h = graph.rnn bidirectional %x, %w, %r activations [relu, tanh] clip 5.0 : (tensor<3x1x3xf32>, tensor<2x2x3xf32>, tensor<2x2x2xf32>) -> (tensor<3x2x1x2xf32>, tensor<2x1x2xf32>)
  func.return %y, %y_h : tensor<3x2x1x2xf32>, tensor<2x1x2xf32>
}

// -----

// sequence_lens that may end a sequence early keep the op (its strategy masks them);
// constant lengths that are all the sequence length do not.
// CHECK-LABEL: func.func @lengths
// CHECK:         graph.gru forward %x, %w, %r sequence_lens %lens
// CHECK-LABEL: func.func @full_lengths
// CHECK-NOT:     graph.gru
// CHECK:         func.return
func.func @lengths(%x: tensor<2x2x3xf32>, %w: tensor<1x6x3xf32>, %r: tensor<1x6x2xf32>, %lens: tensor<2xi32>) -> tensor<2x1x2x2xf32> {
  %y, %y_h = graph.gru forward %x, %w, %r sequence_lens %lens : (tensor<2x2x3xf32>, tensor<1x6x3xf32>, tensor<1x6x2xf32>, tensor<2xi32>) -> (tensor<2x1x2x2xf32>, tensor<1x2x2xf32>)
  func.return %y : tensor<2x1x2x2xf32>
}
func.func @full_lengths(%x: tensor<2x2x3xf32>, %w: tensor<1x6x3xf32>, %r: tensor<1x6x2xf32>) -> tensor<2x1x2x2xf32> {
  %lens = graph.constant dense<2> : tensor<2xi32>
  %y, %y_h = graph.gru forward %x, %w, %r sequence_lens %lens linear_before_reset : (tensor<2x2x3xf32>, tensor<1x6x3xf32>, tensor<1x6x2xf32>, tensor<2xi32>) -> (tensor<2x1x2x2xf32>, tensor<1x2x2xf32>)
  func.return %y : tensor<2x1x2x2xf32>
}
