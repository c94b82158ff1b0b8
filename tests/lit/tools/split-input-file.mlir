// Each chunk is parsed, transformed and printed on its own; the outputs are separated by
// `// -----`. A failing chunk is reported at its line in the whole file, the next
// chunks still run, and the exit status is 1.
// RUN: not strato-opt %s --split-input-file 2> %t.err | filecheck %s
// RUN: filecheck %s --check-prefix=ERR < %t.err
// Without the flag the markers are comments and the first error stops everything.
// RUN: not strato-opt %s 2>&1 | filecheck %s --check-prefix=WHOLE

// CHECK:       func.func @first
// CHECK-NEXT:    graph.relu
// CHECK:       // -----
// CHECK-NOT:   @second
// CHECK:       // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @third
// CHECK:       // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:  }
// CHECK-NOT:   // -----

// ERR: split-input-file.mlir:32:3: error: 'graph.relu' expects float tensors, got tensor<4xi32>
// ERR-NOT: error

// WHOLE: split-input-file.mlir:32:3: error: 'graph.relu' expects float tensors, got tensor<4xi32>

func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// -----
func.func @second(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @third(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

// A chunk with comments only is an empty module, as in mlir-opt.
