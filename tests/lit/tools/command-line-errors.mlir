// A bad command line is one line `strato-opt: error: reason`, exit status 1, no
// traceback and no usage text.
// RUN: not strato-opt %s -p graph-fuse-op 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not strato-opt %s -p nonsense 2>&1 | filecheck %s --check-prefix=NOMATCH
// RUN: not strato-opt %s -p 'cse{depth=3}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not strato-opt %s -p 'cse,{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not strato-opt %s -t wasm 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not strato-opt %s -t 'interpret{seed=many}' 2>&1 | filecheck %s --check-prefix=TARGET-OPTION
// RUN: not strato-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not strato-opt %t.does-not-exist 2>&1 | filecheck %s --check-prefix=MISSING

// UNKNOWN:      {{^}}strato-opt: error: unknown pass 'graph-fuse-op'; did you mean 'graph-fuse-ops'? (see 'strato-opt --help' for the list)
// UNKNOWN-NOT:  {{.}}
// NOMATCH:      {{^}}strato-opt: error: unknown pass 'nonsense' (see 'strato-opt --help' for the list)
// NOMATCH-NOT:  {{.}}
// OPTION:       {{^}}strato-opt: error: bad options for pass 'cse': provided arguments ["depth"] not found in expected arguments []
// OPTION-NOT:   {{.}}
// SYNTAX:       {{^}}strato-opt: error: malformed pass pipeline 'cse,{': expected pass name here (at column 5)
// SYNTAX-NOT:   {{.}}
// TARGET:       {{^}}strato-opt: error: unknown target 'wasm'; choose from mlir, llvm, {{.*}}interpret
// TARGET-NOT:   {{.}}
// TARGET-OPTION: {{^}}strato-opt: error: bad options for target 'interpret': incompatible types: given ('many',), expected int
// TARGET-OPTION-NOT: {{.}}
// FLAG:         {{^}}strato-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT:     {{.}}
// MISSING:      {{^}}strato-opt: error: could not open input file '{{.*}}does-not-exist': No such file or directory
// MISSING-NOT:  {{.}}

func.func @id(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
