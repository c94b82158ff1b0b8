// --help lists the options, strato's passes with the first line of their docstrings
// and their options, the upstream passes and the targets.
// RUN: strato-opt --help | filecheck %s
// RUN: strato-opt --version | filecheck %s --check-prefix=VERSION

// CHECK:      usage: strato-opt
// CHECK:      --split-input-file
// CHECK:      --verify-diagnostics
// CHECK:      --print-ir-after-all
// CHECK:      --time-passes
// CHECK:      strato passes:
// CHECK-NEXT:   convert-graph-to-te {{ +}}Lower every graph op to a te primitive
// CHECK:      upstream xDSL passes:
// CHECK-NEXT:   {{.*}}canonicalize
// CHECK:      targets:
// CHECK-NEXT:   mlir
// CHECK-NEXT:   llvm
// CHECK:        interpret
// CHECK-NEXT:   {{ +}}options: function: str | None = none, seed: int = 0, print-inputs: bool = false

// VERSION:    strato-opt {{.+}} (xDSL 0.75.0)
