// RUN: strato-opt %s --split-input-file -p graph-plan-memory | filecheck %s

// A chain of kernels ping-pongs between two buffers; the result is not in the arena.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    arena_bytes = 2048 : i64
// CHECK-SAME:    intermediate_bytes = 3072 : i64
// CHECK-NEXT:    %a = graph.relu %x {arena_offsets = array<i64: 0>}
// CHECK-NEXT:    %b = graph.relu %a {arena_offsets = array<i64: 1024>}
// CHECK-NEXT:    %c = graph.relu %b {arena_offsets = array<i64: 0>}
// CHECK-NEXT:    %d = graph.relu %c {arena_offsets = array<i64: -1>}
func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = graph.relu %x : tensor<256xf32>
  %b = graph.relu %a : tensor<256xf32>
  %c = graph.relu %b : tensor<256xf32>
  %d = graph.relu %c : tensor<256xf32>
  func.return %d : tensor<256xf32>
}

// -----

// A tensor read late keeps its bytes until its last reader.
// CHECK-LABEL: func.func @long_lived
// CHECK-SAME:    arena_bytes = 2048 : i64
// CHECK-NEXT:    %a = graph.relu %x {arena_offsets = array<i64: 0>}
// CHECK-NEXT:    %b = graph.relu %a {arena_offsets = array<i64: 1024>}
// CHECK-NEXT:    %c = graph.add %a, %b {arena_offsets = array<i64: -1>}
func.func @long_lived(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = graph.relu %x : tensor<256xf32>
  %b = graph.relu %a : tensor<256xf32>
  %c = graph.add %a, %b : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  func.return %c : tensor<256xf32>
}
