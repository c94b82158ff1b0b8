// Malformed or invalid IR is one line per error, `file:line:col: error: reason`, at the
// offending token or op, never a traceback; the exit status is 1.
// RUN: not strato-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s

// CHECK:      malformed-ir.mlir:[[# @LINE + 3]]:22: error: Expected ':'
// CHECK-NOT:  Traceback
func.func @missing_colon(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// CHECK-NEXT: malformed-ir.mlir:[[# @LINE + 2]]:25: error: Operation graph.frobnicate is not registered
func.func @unknown_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.frobnicate %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// CHECK-NEXT: malformed-ir.mlir:[[# @LINE + 2]]:3: error: 'graph.add' operand shapes [4] and [3] do not broadcast
func.func @verifier(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  %r = graph.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// A verifier error deep inside nested regions points at the nested op.
// CHECK-NEXT: malformed-ir.mlir:[[# @LINE + 6]]:7: error: 'te.read' of a rank-1 tensor needs 1 indices, got 2
te.primitive @nested {
  %x = te.placeholder "x" : tensor<4xf32>
  %r = te.compute "r" (%i) : tensor<4xf32> {
    %z = arith.constant 0 : index
    %v = arith.constant 1.0 : f32
      %w = te.read %x[%i, %z] : tensor<4xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

// CHECK-NEXT: malformed-ir.mlir:[[# @LINE + 3]]:3: error: Shape mismatch in dense literal. Expected [4] shape from the type, but got [2] shape.
func.func @dense_literal() -> tensor<4xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// CHECK-NEXT: malformed-ir.mlir:[[# @LINE + 2]]:3: error: Expected arguments to have the same types as the function output types: expected [tensor<3xf32>], got [tensor<4xf32>]
func.func @upstream_op(%a: tensor<4xf32>) -> tensor<3xf32> {
  func.return %a : tensor<4xf32>
}

// -----

// A chunk ends where its split marker is, even inside an unterminated region.
// CHECK-NEXT: malformed-ir.mlir:[[# @LINE + 1]]:28: error: in block definition
func.func @unterminated() {
// -----

// CHECK-NOT:  error
