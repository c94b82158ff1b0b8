// Programs -t interpret cannot run are located errors found before running: several
// blocks, recursion, buffers too large to allocate, loops too long to interpret, no
// function to run. Each chunk fails alone; the last one runs.
// RUN: not strato-opt %s --split-input-file -t interpret 2>&1 | filecheck %s
// CHECK-NOT: Traceback

// CHECK: hostile-interpret.mlir:[[# @LINE + 1]]:1: error: @two_blocks has 2 blocks; the interpreters run functions of a single block
func.func @two_blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next(%a : tensor<4xf32>)
^next(%b: tensor<4xf32>):
  func.return %b : tensor<4xf32>
}

// -----

func.func @recursive(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK:      hostile-interpret.mlir:[[# @LINE + 1]]:3: error: recursive call to @recursive: the interpreters run programs without recursion
  %r = func.call @recursive(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// CHECK:      hostile-interpret.mlir:[[# @LINE + 1]]:1: error: tensor<99999999999x8xf32> holds 799999999992 elements, more than -t interpret allocates (67108864)
func.func @huge(%a: tensor<99999999999x8xf32>) -> tensor<99999999999x8xf32> {
  func.return %a : tensor<99999999999x8xf32>
}

// -----

func.func @endless(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  // CHECK:      hostile-interpret.mlir:[[# @LINE + 1]]:3: error: 'loop.for' runs 9223372036854775807 steps, more than -t interpret runs (134217728); lower the module with convert-loops-to-llvm to run it compiled
  loop.for %i = 0 to 9223372036854775807 axis "i" {
    %c = arith.constant 0 : index
    %v = memref.load %a[%c] : memref<4xf32>
    memref.store %v, %o[%c] : memref<4xf32>
  }
  func.return
}

// -----

func.func @out_of_bounds(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" {
    %v = memref.load %a[%i] : memref<4xf32>
    %c = arith.constant 4 : index
    %j = arith.addi %i, %c : index
    // CHECK:      hostile-interpret.mlir:[[# @LINE + 1]]:5: error: 'memref.store' at index [4] is out of bounds of a buffer of shape [4]
    memref.store %v, %o[%j] : memref<4xf32>
  }
  func.return
}

// -----

// A module-level error is at the start of its chunk, the line after the marker.
// CHECK:      hostile-interpret.mlir:[[# @LINE - 2]]:1: error: the module has no function with a body to run
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

// -----

// CHECK:      // @fine at graph level, inputs from seed 0
// CHECK-NEXT: output 0: shape (4,) float32
func.func @fine(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
