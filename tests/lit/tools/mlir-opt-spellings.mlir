// strato-opt takes mlir-opt's spellings: --pass-pipeline='builtin.module(...)', the
// --mlir-* aliases, --mlir-elide-elementsattrs-if-larger, --print-ir-after-change and
// --list-passes; -o - is stdout. A second pipeline, a repeated pass option and an empty
// -o are errors rather than silently ignored.
// RUN: strato-opt %s --pass-pipeline='builtin.module(convert-graph-to-te, te-inline-stages)' | filecheck %s --check-prefix=PIPELINE
// RUN: strato-opt %s -p convert-graph-to-te --mlir-print-ir-after-all --mlir-timing -o - 2>&1 | filecheck %s --check-prefix=ALIASES
// RUN: strato-opt %s --mlir-elide-elementsattrs-if-larger=2 | filecheck %s --check-prefix=ELIDE
// RUN: strato-opt %s -p cse,convert-graph-to-te,dce --print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE
// RUN: strato-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: not strato-opt %s -p cse -p dce 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not strato-opt %s -p 'graph-alter-layout{block=4 block=8}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not strato-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not strato-opt %s -o '' 2>&1 | filecheck %s --check-prefix=EMPTY

// PIPELINE:      te.primitive @dense_1
// PIPELINE:      func.func @main

// ALIASES:       // -----// IR Dump After convert-graph-to-te //----- //
// ALIASES:       func.func @main
// ALIASES:       Execution time report
// ALIASES:       convert-graph-to-te

// ELIDE:         %w = graph.constant dense_resource<__elided__> : tensor<3x4xf32>
// ELIDE-NEXT:    %b = graph.constant dense<[1.000000e-01, -2.000000e-01]> : tensor<2xf32>

// CHANGE:        {{^}}// -----// IR Dump After convert-graph-to-te //----- //
// CHANGE-NOT:    IR Dump

// LIST:          {{^}}convert-graph-to-te {{ *}}strato  Lower every graph op to a te primitive (by its operator strategy) and a te.call.
// LIST:          {{^}}cse {{ *}}xDSL    Eliminate common subexpressions

// TWICE:         {{^}}strato-opt: error: -p given after -p/--passes: write the whole pipeline in one option, passes separated by ','
// OPTION:        {{^}}strato-opt: error: option 'block' given twice to pass 'graph-alter-layout'
// NESTED:        {{^}}strato-opt: error: nested pipeline 'func.func(...)' in 'builtin.module(func.func(cse))': strato's passes run on the module, list them directly in builtin.module(...)
// EMPTY:         {{^}}strato-opt: error: -o needs a file name ('-' for stdout)

func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.0, 1.0, 1.0, 1.0], [-0.5, 0.0, 0.5, 0.0]]> : tensor<3x4xf32>
  %b = graph.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %c = graph.constant dense<[0.3]> : tensor<1xf32>
  %bc = graph.concat %b, %c axis 0 : (tensor<2xf32>, tensor<1xf32>) -> tensor<3xf32>
  %y = graph.dense %x, %w, %bc : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
