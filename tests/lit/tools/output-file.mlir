// -o writes the program to a file; a run that fails leaves no file behind, and a
// failed write leaves the previous file whole (the text goes to a temporary file that
// is renamed over it). `-o -` is stdout.
// RUN: rm -f %t.ok %t.failed
// RUN: strato-opt %s -o %t.ok
// RUN: filecheck %s --input-file %t.ok
// RUN: strato-opt %s -o %t.ok
// RUN: filecheck %s --input-file %t.ok
// RUN: not strato-opt %S/Inputs/unmet-expectations.mlir -o %t.failed
// RUN: not ls %t.failed
// RUN: strato-opt %s -o - | filecheck %s
// RUN: not strato-opt %s -o /dev/full 2>&1 | filecheck %s --check-prefix=FULL

// FULL: {{^}}strato-opt: error: could not write output file '/dev/full': No space left on device

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @id(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:     func.return %a : tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

func.func @id(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
