// -o writes the program to a file; a run that fails leaves no file behind.
// RUN: rm -f %t.ok %t.failed
// RUN: strato-opt %s -o %t.ok
// RUN: filecheck %s --input-file %t.ok
// RUN: not strato-opt %S/Inputs/unmet-expectations.mlir -o %t.failed
// RUN: not ls %t.failed

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @id(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:     func.return %a : tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

func.func @id(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
