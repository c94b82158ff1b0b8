// -t interpret runs compiled (llvm-level) code in a child process: a store far out of
// its buffer cannot kill strato-opt; it is one located error naming the function,
// whether the code checks the index or the child is stopped by a signal.
// RUN: not strato-opt %s -p convert-loops-to-llvm -t interpret 2>&1 | filecheck %s
// CHECK:     {{^}}{{.*}}interpret-compiled-crash.mlir:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}
// CHECK-NOT: {{.}}

func.func @oob(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" {
    %v = memref.load %a[%i] : memref<4xf32>
    %c = arith.constant 100000000 : index
    %j = arith.addi %i, %c : index
    memref.store %v, %o[%j] : memref<4xf32>
  }
  func.return
}
