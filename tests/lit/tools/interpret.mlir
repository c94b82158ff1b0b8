// -t interpret runs the entry function on seeded random inputs at every level (llvm
// through the JIT) and prints the outputs; the lowerings keep the values, so all
// levels print the same.
// RUN: strato-opt %s -t interpret | filecheck %s --check-prefix=GRAPH
// RUN: strato-opt %s -p convert-graph-to-te -t interpret | filecheck %s --check-prefix=TE
// RUN: strato-opt %s -p convert-graph-to-te,convert-te-to-loops -t interpret | filecheck %s --check-prefix=LOOP
// RUN: strato-opt %s -p convert-graph-to-te,convert-te-to-loops,convert-loops-to-llvm -t interpret | filecheck %s --check-prefix=LLVM
// RUN: strato-opt %s -t 'interpret{function=main seed=0 print-inputs=true}' | filecheck %s --check-prefix=INPUTS
// RUN: strato-opt %s -t 'interpret{seed=7}' | filecheck %s --check-prefix=SEED
// RUN: not strato-opt %s -t 'interpret{function=nowhere}' 2>&1 | filecheck %s --check-prefix=MISSING

// GRAPH:      // @main at graph level, inputs from seed 0
// GRAPH-NEXT: output 0: shape (2, 3) float32
// GRAPH-NEXT: {{\[\[}}0.0000, 0.0000, 0.0000],
// GRAPH-NEXT:  [0.5591, 1.9243, 0.0934]]

// TE:         // @main at te level, inputs from seed 0
// TE-NEXT:    output 0: shape (2, 3) float32
// TE-NEXT:    {{\[\[}}0.0000, 0.0000, 0.0000],
// TE-NEXT:     [0.5591, 1.9243, 0.0934]]

// LOOP:       // @main at loop level, inputs from seed 0
// LOOP-NEXT:  output 0: shape (2, 3) float32
// LOOP-NEXT:  {{\[\[}}0.0000, 0.0000, 0.0000],
// LOOP-NEXT:   [0.5591, 1.9243, 0.0934]]

// LLVM:       // @main at llvm level, inputs from seed 0
// LLVM-NEXT:  output 0: shape (2, 3) float32
// LLVM-NEXT:  {{\[\[}}0.0000, 0.0000, 0.0000],
// LLVM-NEXT:   [0.5591, 1.9243, 0.0934]]

// INPUTS:      // @main at graph level, inputs from seed 0
// INPUTS-NEXT: input 0: shape (2, 4) float32
// INPUTS-NEXT: {{\[\[}} 0.2739, -0.4604, -0.9181, -0.9669],
// INPUTS-NEXT:  [ 0.6265,  0.8255,  0.2133,  0.4590]]
// INPUTS-NEXT: output 0: shape (2, 3) float32

// SEED:       // @main at graph level, inputs from seed 7
// SEED-NOT:   0.5591, 1.9243, 0.0934

// MISSING:    interpret.mlir:1:1: error: no function named @nowhere in the module

func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.0, 1.0, 1.0, 1.0], [-0.5, 0.0, 0.5, 0.0]]> : tensor<3x4xf32>
  %b = graph.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf32>
  %y = graph.dense %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %y : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
