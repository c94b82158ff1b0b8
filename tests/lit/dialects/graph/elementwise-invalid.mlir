// Every verifier and parse error of the element-wise operators, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @float_only(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.sigmoid' expects float tensors, got tensor<4xi32>}}
  %r = graph.sigmoid %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @alpha_not_finite(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.leaky_relu' alpha must be finite, got nan}}
  %r = "graph.leaky_relu"(%a) <{alpha = 0x7FC00000 : f32}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @alpha_missing(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{property 'alpha' expected}}
  %r = graph.leaky_relu %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @alpha_type(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{f32}}
  %r = "graph.leaky_relu"(%a) <{alpha = 1.0 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @clip_bound_not_finite(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.clip' min must be finite, got -inf}}
  %r = "graph.clip"(%a) <{min = 0xFF800000 : f32}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @gelu_approximation(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.gelu' approximate must be one of none, tanh, got 'fast'}}
  %r = graph.gelu %a approximate fast : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @unary_result_type(%a: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{attribute tensor<4xf32> expected from variable 'T', but got tensor<2x2xf32>}}
  %r = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}

// -----

func.func @binary_shapes(%a: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.sub' operand shapes [4, 8] and [4] do not broadcast}}
  %r = graph.sub %a, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

func.func @binary_result_shape(%a: tensor<4x1xf32>, %b: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'graph.maximum' result shape [4, 1] does not match the inferred shape [4, 8]}}
  %r = graph.maximum %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  func.return %r : tensor<4x1xf32>
}

// -----

func.func @binary_element_types(%a: tensor<4xi32>, %b: tensor<4xi64>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.div' operand element type i64 differs from result element type i32}}
  %r = graph.div %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @pow_base_type(%a: tensor<4xi32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.pow' base element type i32 differs from result element type f32}}
  %r = graph.pow %a, %b : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @keyword_value(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{integer or float literal expected as the value of 'max'}}
  %r = graph.clip %a max : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @celu_alpha_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.celu' alpha must be nonzero}}
  %r = graph.celu %a alpha 0.0 : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @selu_gamma_missing(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{property 'gamma' expected}}
  %r = graph.selu %a alpha 1.0 : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @hard_sigmoid_beta_not_finite(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.hard_sigmoid' beta must be finite, got inf}}
  %r = "graph.hard_sigmoid"(%a) <{alpha = 2.0e-01 : f32, beta = 0x7F800000 : f32}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @round_of_integers(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.round' expects float tensors, got tensor<4xi32>}}
  %r = graph.round %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}
