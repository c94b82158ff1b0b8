// --check-equivalence interprets the IR before and after each pass (graph, te and loop
// levels) on the same inputs; a correct pipeline passes, and IR without an interpreter
// (LLVM) ends the check with a warning. --print-ir-diff shows what each pass changed.
// RUN: strato-opt %s -p cse,graph-fuse-ops,convert-graph-to-te,convert-te-to-loops --check-equivalence=3 -o %t.out 2>&1 | filecheck %s --check-prefix=PASS --allow-empty
// RUN: strato-opt %s -p cse,convert-graph-to-te,convert-te-to-loops,convert-loops-to-llvm --check-equivalence=2 -o %t.out 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: strato-opt %s -p graph-fold-constants,cse --print-ir-diff -o %t.out 2>&1 | filecheck %s --check-prefix=DIFF
// RUN: not strato-opt %s -p cse --check-equivalence=0 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not strato-opt %s -p cse --reduce 2>&1 | filecheck %s --check-prefix=REDUCE
// RUN: strato-opt %S/Inputs/run-time-sizes.mlir -p "graph-fuse-ops,convert-graph-to-te{row_blocks=4,1},te-inline-stages,convert-te-to-loops,schedule-default" --check-equivalence=2 -o %t.out 2>&1 | filecheck %s --check-prefix=SIZES
// RUN: strato-opt %S/Inputs/run-time-kernel.mlir -p schedule-default{threads=2} --check-equivalence=3 -o %t.out 2>&1 | filecheck %s --check-prefix=KERNEL
// RUN: strato-opt %S/Inputs/run-time-multiples.mlir -p "graph-fuse-ops,convert-graph-to-te{row_blocks=32,16,8,4,1},te-inline-stages,convert-te-to-loops,schedule-default" --check-equivalence=3 -o %t.out 2>&1 | filecheck %s --check-prefix=MULTIPLES

// PASS-NOT: error
// PASS-NOT: warning

// LLVM: check-equivalence.mlir:1:1: warning: cannot check equivalence after convert-loops-to-llvm: no interpreter for llvm-level IR

// DIFF-NOT:   before graph-fold-constants
// DIFF:       --- before cse
// DIFF-NEXT:  +++ after cse
// DIFF:       -    %b = graph.relu %x : tensor<2x3xf32>
// DIFF-NEXT:  -    %c = graph.add %a, %b
// DIFF-NEXT:  +    %c = graph.add %a, %a

// A batch of run-time size: the inputs draw a size per name, and every level is
// checked on them; the loop level's function takes the buffers (a flat one viewed as
// the tensor its loop.shape gives) and the sizes the inputs give.
// SIZES: equivalence: ran the IR after te-inline-stages on 2 input(s) (te level
// SIZES: equivalence: ran the IR after convert-te-to-loops on 2 input(s) (loop level
// SIZES: equivalence: ran the IR after schedule-default on 2 input(s) (loop level
// SIZES: equivalence: 5 pass(es) keep the results on 2 input(s)
// SIZES-NOT: warning

// A kernel of two run-time sizes on its own (no entry calls it): the sizes its
// arguments name are drawn, and the flat output buffer is viewed as its tensor.
// KERNEL: equivalence: ran the program before the pipeline on 3 input(s) (loop level
// KERNEL: equivalence: 1 pass(es) keep the results on 3 input(s)
// KERNEL-NOT: warning

// Sizes whose bounds make them multiples of 8 (graph.size_bounds): the inputs draw
// multiples of 8, which the blocks of 32, 16 and 8 rows (no smaller one) cover.
// MULTIPLES: equivalence: ran the IR after convert-te-to-loops on 3 input(s) (loop level
// MULTIPLES: equivalence: 5 pass(es) keep the results on 3 input(s)
// MULTIPLES-NOT: warning

// ZERO: strato-opt: error: argument --check-equivalence: expected a number >= 1, got 0
// REDUCE: strato-opt: error: --reduce needs --check-equivalence

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %two = graph.constant dense<2.0> : tensor<2x3xf32>
  %a = graph.relu %x : tensor<2x3xf32>
  %b = graph.relu %x : tensor<2x3xf32>
  %c = graph.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = graph.mul %c, %two : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}
