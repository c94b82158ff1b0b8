// Every verifier and parse error of the normalization operators, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @softmax_no_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.softmax' needs at least one axis}}
  %r = graph.softmax %x axes [] : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @softmax_unsorted_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.softmax' axes [1, 1] must be sorted and distinct}}
  %r = graph.softmax %x axes [1, 1] : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @softmax_axis_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.softmax' axes [-1] out of range for rank 2}}
  %r = graph.softmax %x axes [-1] : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @softmax_float_only(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'graph.softmax' expects float tensors, got tensor<2x3xi32>}}
  %r = graph.softmax %x axes [1] : tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' axis 2 out of range for rank 2}}
  %r = graph.layer_norm %x axis 2 epsilon 1.0e-5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' epsilon must not be negative, got -1.0}}
  %r = graph.layer_norm %x axis 1 epsilon -1.0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_epsilon_not_finite(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' epsilon must be finite, got inf}}
  %r = "graph.layer_norm"(%x) <{axis = 1 : i64, epsilon = 0x7F800000 : f32, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x3x4xf32>, %g: tensor<2x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'graph.layer_norm' scale shape [2, 4] does not broadcast to the normalized shape [3, 4]}}
  %r = graph.layer_norm %x scale %g axis 1 epsilon 1.0e-5 : (tensor<2x3x4xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// -----

func.func @layer_norm_bias_rank(%x: tensor<2x3xf32>, %b: tensor<1x1x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' bias shape [1, 1, 3] does not broadcast to the normalized shape [3]}}
  %r = graph.layer_norm %x bias %b axis 1 epsilon 1.0e-5 : (tensor<2x3xf32>, tensor<1x1x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_result_count(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' has 1 or 3 results (with mean and inverse standard deviation), got 2}}
  %r, %m = graph.layer_norm %x axis 1 epsilon 1.0e-5 : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>)
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_stats_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' statistics shape [2] differs from [2, 1]}}
  %r, %m, %i = graph.layer_norm %x axis 1 epsilon 1.0e-5 : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>)
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_stats_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' statistics must be float tensors, got tensor<2x1xi32>}}
  %r, %m, %i = graph.layer_norm %x axis 1 epsilon 1.0e-5 : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x1xi32>, tensor<2x1xi32>)
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @layer_norm_result_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'graph.layer_norm' result shape [3, 2] does not match the inferred shape [2, 3]}}
  %r = graph.layer_norm %x axis 1 epsilon 1.0e-5 : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

// -----

func.func @layer_norm_missing_epsilon(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.layer_norm' expects 'epsilon' after the axis}}
  %r = graph.layer_norm %x axis 1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @batch_norm_rank(%x: tensor<3xf32>, %p: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.batch_norm' input must have rank >= 2 (N, C, ...), got rank 1}}
  %r = graph.batch_norm %x, %p, %p, %p, %p epsilon 1.0e-5 : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

func.func @batch_norm_parameter_shape(%x: tensor<1x3x2xf32>, %p: tensor<3xf32>, %q: tensor<1x3xf32>) -> tensor<1x3x2xf32> {
  // expected-error @+1 {{'graph.batch_norm' variance must have shape [3] (one value a channel), got [1, 3]}}
  %r = graph.batch_norm %x, %p, %p, %p, %q epsilon 1.0e-5 : (tensor<1x3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>) -> tensor<1x3x2xf32>
  func.return %r : tensor<1x3x2xf32>
}

// -----

func.func @batch_norm_epsilon_not_finite(%x: tensor<1x3xf32>, %p: tensor<3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{'graph.batch_norm' epsilon must be finite, got nan}}
  %r = "graph.batch_norm"(%x, %p, %p, %p, %p) <{epsilon = 0x7FC00000 : f32}> : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  func.return %r : tensor<1x3xf32>
}

// -----

func.func @batch_norm_operand_count(%x: tensor<1x3xf32>, %p: tensor<3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{Expected 5 operands, but got 4}}
  %r = graph.batch_norm %x, %p, %p, %p epsilon 1.0e-5 : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  func.return %r : tensor<1x3xf32>
}
