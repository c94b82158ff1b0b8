// --verify-diagnostics fails (exit 1) on a wrong message, a wrong line, an expectation
// nothing produced, an unexpected error and a wrong severity; each mismatch is one
// error line at the annotation or at the diagnostic, and every chunk is checked.
// RUN: not strato-opt %S/Inputs/unmet-expectations.mlir --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s

// CHECK:      unmet-expectations.mlir:3:3: error: unexpected error: 'graph.relu' expects float tensors, got tensor<4xi32>
// CHECK-NEXT: unmet-expectations.mlir:2:6: error: expected error "this is not the message" was not produced
// CHECK-NEXT: unmet-expectations.mlir:11:3: error: unexpected error: 'graph.relu' expects float tensors, got tensor<4xi32>
// CHECK-NEXT: unmet-expectations.mlir:10:6: error: expected error "expects float tensors" was not produced
// CHECK-NEXT: unmet-expectations.mlir:18:6: error: expected error "expects float tensors" was not produced
// CHECK-NEXT: unmet-expectations.mlir:26:3: error: unexpected error: 'graph.relu' expects float tensors, got tensor<4xi32>
// CHECK-NEXT: unmet-expectations.mlir:34:3: error: unexpected error: 'graph.relu' expects float tensors, got tensor<4xi32>
// CHECK-NEXT: unmet-expectations.mlir:33:6: error: expected warning "expects float tensors" was not produced
// CHECK-NOT:  error
