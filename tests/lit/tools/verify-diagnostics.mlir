// --verify-diagnostics passes (exit 0, nothing on stderr) when every diagnostic is
// expected and every expectation is met: designators on the line itself, @+N, @-N,
// @above, @below, the -re form, and errors from the parser, the verifier and a chunk
// that has none.
// RUN: strato-opt %s --split-input-file --verify-diagnostics -o %t.out 2> %t.err
// RUN: echo END >> %t.err
// RUN: filecheck %s --check-prefix=QUIET --input-file %t.err
// QUIET-NOT: {{error|warning|remark|note|Traceback}}
// QUIET:     {{^END$}}

func.func @same_line(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = graph.relu %a : tensor<4xi32> // expected-error {{'graph.relu' expects float tensors}}
  func.return %r : tensor<4xi32>
}

// -----

func.func @relative(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = graph.relu %a : tensor<4xi32>
  // expected-error @-1 {{expects float tensors, got tensor<4xi32>}}
  func.return %r : tensor<4xi32>
}

// -----

func.func @above_and_below(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @below {{is not a permutation of 2 dimensions}}
  %t = graph.transpose %a [0, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}

// -----

func.func @above(%a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  %r = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  // expected-error @above {{contraction dimensions differ}}
  func.return %r : tensor<4x3xf32>
}

// -----

func.func @regex(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error-re @+1 {{batch dimensions {{\[[0-9]+\]}} and [3] do not broadcast}}
  %r = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return %r : tensor<2x4x5xf32>
}

// -----

func.func @parse_error(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Operation graph.frobnicate is not registered}}
  %r = graph.frobnicate %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @undefined_value() -> tensor<4xf32> {
  func.return %nowhere : tensor<4xf32>
}
// expected-error @+1 {{values used but not defined: [%nowhere]}}

// -----

func.func @no_error(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
