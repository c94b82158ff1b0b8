// Every op read from the input carries its file:line:col (shown by --print-debuginfo),
// the position of its first token; ops of a split chunk keep their lines in the file;
// a location spelled in the input is kept.
// RUN: strato-opt %s --split-input-file --print-debuginfo | filecheck %s

// CHECK-LABEL: func.func @f
// CHECK-NEXT:    graph.relu {{.*}} loc("{{.*}}source-locations.mlir":[[# @LINE + 5]]:3)
// CHECK-NEXT:    te.call {{.*}} loc("given.py":7:1)
// CHECK-NEXT:    func.return {{.*}} loc("{{.*}}source-locations.mlir":[[# @LINE + 5]]:5)
// CHECK-NEXT:  } loc("{{.*}}source-locations.mlir":[[# @LINE + 1]]:1)
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a : tensor<4xf32>
  %s = te.call @p(%r) : (tensor<4xf32>) -> tensor<4xf32> loc("given.py":7:1)
    func.return %s : tensor<4xf32>
}
te.primitive @p {
  %x = te.placeholder "x" : tensor<4xf32>
  te.output %x : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @g
// CHECK-NEXT:    func.return loc("{{.*}}source-locations.mlir":[[# @LINE + 2]]:3)
func.func @g() {
  func.return
}
