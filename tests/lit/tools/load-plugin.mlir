// --load-plugin loads a module that registers a dialect and passes: its ops parse, its
// passes run (and are checked for equivalence), its entries are listed under its name,
// and a plugin that cannot be loaded is one warning while the rest still works.
// RUN: env PYTHONPATH=%S/../../../examples/custom_dialect strato-opt --load-plugin strato_silu %s -p act-fuse-silu --check-equivalence=4 | filecheck %s
// RUN: env PYTHONPATH=%S/../../../examples/custom_dialect strato-opt --load-plugin strato_silu %s -p act-fuse-silu,convert-graph-to-te | filecheck %s --check-prefix=LOWER
// RUN: env PYTHONPATH=%S/../../../examples/custom_dialect strato-opt --load-plugin=strato_silu --list-passes | filecheck %s --check-prefix=PASSES
// RUN: env PYTHONPATH=%S/../../../examples/custom_dialect strato-opt --load-plugin strato_silu --list-dialects | filecheck %s --check-prefix=DIALECTS
// RUN: env PYTHONPATH=%S/../../../examples/custom_dialect strato-opt --load-plugin strato_silu --help | filecheck %s --check-prefix=HELP
// RUN: strato-opt --load-plugin no_such_plugin %s -p graph-fuse-ops 2>&1 >/dev/null | filecheck %s --check-prefix=BROKEN

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %y = act.silu %x : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// LOWER:       te.primitive @silu_0
// LOWER:         te.compute "silu"
// LOWER:         math.exp
// LOWER-LABEL: func.func @main
// LOWER-NEXT:    te.call @silu_0(%x)

// PASSES: act-expand-silu {{ +}}strato_silu {{ +}}Lower every act.silu to graph.sigmoid and graph.mul.
// PASSES: act-fuse-silu {{ +}}strato_silu {{ +}}Fuse x * sigmoid(x) into one act.silu op.
// PASSES: convert-graph-to-te {{ +}}strato {{ +}}Lower every graph op
// PASSES: cse {{ +}}xDSL

// DIALECTS: act {{ +}}strato_silu {{ +}}silu
// DIALECTS: graph {{ +}}strato

// HELP:      passes of plugin 'strato_silu':
// HELP-NEXT:   act-fuse-silu {{ +}}Fuse x * sigmoid(x) into one act.silu op.
// HELP-NEXT:   act-expand-silu {{ +}}Lower every act.silu to graph.sigmoid and graph.mul.
// HELP:      upstream xDSL passes:
// HELP-NOT:  silu
// HELP:      targets:

// BROKEN: strato-opt: warning: plugin 'no_such_plugin' not loaded: ModuleNotFoundError: No module named 'no_such_plugin'
// BROKEN-NOT: error

func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = graph.sigmoid %x : tensor<2x8xf32>
  %y = graph.mul %x, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
