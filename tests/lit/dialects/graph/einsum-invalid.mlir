// Every verifier error of graph.einsum, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @no_output(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.einsum' equation 'ij' has no '->' and output term}}
  %r = graph.einsum "ij" %a : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @ellipsis_left(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.einsum' equation '...j->j' has the invalid character '.'}}
  %r = graph.einsum "...j->j" %a : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @term_count(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.einsum' equation 'ij,jk->ik' has 2 input terms for 1 operands}}
  %r = graph.einsum "ij,jk->ik" %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @rank(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.einsum' term 'ijk' has 3 letters for operand 0 of rank 2}}
  %r = graph.einsum "ijk->i" %a : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @sizes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'graph.einsum' letter 'j' has sizes 3 and 4}}
  %r = graph.einsum "ij,jk->ik" %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @repeated_output(%a: tensor<2x2xf32>) {
  // expected-error @+1 {{'graph.einsum' output 'ii' of equation 'ij->ii' repeats a letter}}
  %r = graph.einsum "ij->ii" %a : (tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @unknown_output_letter(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.einsum' output 'ik' of equation 'ij->ik' names 'k', which no input has}}
  %r = graph.einsum "ij->ik" %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @result_shape(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{'graph.einsum' result shape [5, 2] does not match the inferred shape [2, 5]}}
  %r = graph.einsum "ij,jk->ik" %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<5x2xf32>
  func.return
}

// -----

func.func @element_types(%a: tensor<2x3xf32>, %b: tensor<3x5xi32>) {
  // expected-error @+1 {{'graph.einsum' operand element type i32 differs from result element type f32}}
  %r = graph.einsum "ij,jk->ik" %a, %b : (tensor<2x3xf32>, tensor<3x5xi32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @no_operand() {
  // expected-error @+1 {{'graph.einsum' needs at least one operand}}
  %r = "graph.einsum"() <{equation = "->"}> : () -> tensor<f32>
  func.return
}
