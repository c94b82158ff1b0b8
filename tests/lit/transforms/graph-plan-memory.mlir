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

// -----

// A channel concatenation of two intermediates is done in place: each input is
// placed at its run of the result's bytes, the kernels computing them write there,
// and the concatenation copies nothing.
// CHECK-LABEL: func.func @concat_in_place
// CHECK-SAME:    arena_bytes = 8192 : i64
// CHECK-NEXT:    %a = graph.relu %x {arena_offsets = array<i64: 0>}
// CHECK-NEXT:    %b = graph.sigmoid %x {arena_offsets = array<i64: 4096>}
// CHECK-NEXT:    %c = graph.concat %a, %b axis 1 {arena_offsets = array<i64: 0>, in_place}
// CHECK-NEXT:    %d = graph.relu %c {arena_offsets = array<i64: -1>}
func.func @concat_in_place(%x: tensor<1x16x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %a = graph.relu %x : tensor<1x16x8x8xf32>
  %b = graph.sigmoid %x : tensor<1x16x8x8xf32>
  %c = graph.concat %a, %b axis 1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x32x8x8xf32>
  %d = graph.relu %c : tensor<1x32x8x8xf32>
  func.return %d : tensor<1x32x8x8xf32>
}

// -----

// A concatenation that reads a function argument (its bytes are the caller's) or
// joins along an axis after a dimension over 1 (its inputs' runs interleave) copies.
// CHECK-LABEL: func.func @concat_copies
// CHECK:         graph.concat %x, %a axis 1 {arena_offsets = array<i64: 0>} :
// CHECK:         graph.concat %a, %b axis 3 {arena_offsets = array<i64: {{[0-9]+}}>} :
// CHECK-NOT:     in_place
func.func @concat_copies(%x: tensor<1x16x8x8xf32>) -> (tensor<1x32x8x8xf32>, tensor<1x16x8x16xf32>) {
  %a = graph.relu %x : tensor<1x16x8x8xf32>
  %c = graph.concat %x, %a axis 1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x32x8x8xf32>
  %d = graph.relu %c : tensor<1x32x8x8xf32>
  %b = graph.sigmoid %x : tensor<1x16x8x8xf32>
  %e = graph.concat %a, %b axis 3 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x16xf32>
  %f = graph.relu %e : tensor<1x16x8x16xf32>
  func.return %d, %f : tensor<1x32x8x8xf32>, tensor<1x16x8x16xf32>
}
