// An annotation --verify-diagnostics cannot read fails the run, at the annotation, rather
// than being skipped (a typo would otherwise let a test pass). Prose that merely
// mentions expected-output is not an annotation.
// RUN: not strato-opt %s --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s
// CHECK-NOT: Traceback

func.func @unterminated(%a: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK: verify-diagnostics-malformed.mlir:[[# @LINE + 1]]:6: error: unterminated expected{{.}}error: no '}}' closes the expected text
  // expected-error @+1 {{expects float tensors
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @unknown_kind(%a: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK-NEXT: verify-diagnostics-malformed.mlir:[[# @LINE + 1]]:6: error: unknown annotation 'expected{{.}}eror': use expected{{.}}error, expected{{.}}warning, expected{{.}}remark or expected{{.}}note
  // expected-eror @+1 {{expects float tensors}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @bad_designator(%a: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK-NEXT: verify-diagnostics-malformed.mlir:[[# @LINE + 1]]:6: error: malformed designator '@+x' in expected{{.}}error: use @+N, @-N, @above, @below or @unknown
  // expected-error @+x {{expects float tensors}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @bad_regex(%a: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK-NEXT: verify-diagnostics-malformed.mlir:[[# @LINE + 1]]:6: error: invalid regex in expected{{.}}error-re: unterminated character set at position 3
  // expected-error-re @+1 {{{{[}}}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @no_braces(%a: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK-NEXT: verify-diagnostics-malformed.mlir:[[# @LINE + 1]]:6: error: expected{{.}}error needs its expected text in '{{[{][{]}}...}}'
  // expected-error @+1 expects float tensors
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @outside(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: verify-diagnostics-malformed.mlir:[[# @LINE + 1]]:6: error: expected{{.}}error @+100 points outside the input (line [[# @LINE + 101]])
  // expected-error @+100 {{never}}
  func.return %a : tensor<4xf32>
}

// -----

// A well-formed chunk is still checked: here everything matches.
// CHECK-NOT: error
func.func @fine(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{expects float tensors}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}
