// IR dumps go to stderr with MLIR's headers: before each pass, after each pass (the last
// one included); the program itself still goes to stdout (here to a file).
// RUN: strato-opt %s -p convert-graph-to-te,cse --print-ir-after-all -o %t.out 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: strato-opt %s -p convert-graph-to-te,cse --print-ir-before-all -o %t.out 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: strato-opt %s -p convert-graph-to-te --print-ir-before-all --print-ir-after-all --print-op-generic -o %t.out 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: filecheck %s --check-prefix=OUT < %t.out

// AFTER-NOT:   IR Dump Before
// AFTER:       // -----// IR Dump After convert-graph-to-te //----- //
// AFTER-NEXT:  builtin.module {
// AFTER:         te.primitive @relu_0
// AFTER:         te.call @relu_0
// AFTER:       // -----// IR Dump After cse //----- //
// AFTER-NEXT:  builtin.module {
// AFTER:         te.call @relu_0
// AFTER-NOT:   IR Dump

// BEFORE-NOT:  IR Dump After
// BEFORE:      // -----// IR Dump Before convert-graph-to-te //----- //
// BEFORE-NEXT: builtin.module {
// BEFORE:        graph.relu
// BEFORE:      // -----// IR Dump Before cse //----- //
// BEFORE-NEXT: builtin.module {
// BEFORE:        te.call @relu_0
// BEFORE-NOT:  IR Dump

// BOTH:        // -----// IR Dump Before convert-graph-to-te //----- //
// BOTH-NEXT:   "builtin.module"() ({
// BOTH:          "graph.relu"
// BOTH:        // -----// IR Dump After convert-graph-to-te //----- //
// BOTH-NEXT:   "builtin.module"() ({
// BOTH:          "te.call"

// OUT:         "builtin.module"() ({
// OUT:           "te.call"

func.func @relu(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = graph.relu %x : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
