// RUN: strato-opt %s --split-input-file -p convert-graph-to-te | filecheck %s

// Constants become arith.constant tensors; a graph op becomes a primitive and a call.
// CHECK-LABEL: te.primitive @relu_0
// CHECK-NEXT:    %x = te.placeholder "x" : tensor<2x4xf32>
// CHECK-NEXT:    %r = te.compute "relu" (%i, %j) : tensor<2x4xf32> {
// CHECK-NEXT:      %[[V:.*]] = te.read %x[%i, %j] : tensor<2x4xf32>
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[V]], %[[Z]] fastmath<nsz> : f32
// CHECK-NEXT:      te.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    te.output %r : tensor<2x4xf32>
// CHECK-LABEL: func.func @relu
// CHECK-NEXT:    %r = te.call @relu_0(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %r
func.func @relu(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = graph.relu %x : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

// Dense with bias: a sum reduction over the features, then a bias stage.
// CHECK-LABEL: te.primitive @dense_0
// CHECK:         te.placeholder "x" : tensor<2x4xf32>
// CHECK-NEXT:    te.placeholder "w" : tensor<3x4xf32>
// CHECK-NEXT:    te.placeholder "b" : tensor<3xf32>
// CHECK-NEXT:    %[[D:.*]] = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.000000e+00 : tensor<2x3xf32> {
// CHECK-NEXT:      te.read %x[%i, %k] : tensor<2x4xf32>
// CHECK-NEXT:      te.read %w[%j, %k] : tensor<3x4xf32>
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      te.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = te.compute "bias_add" (%i_1, %j_1) : tensor<2x3xf32> {
// CHECK-NEXT:      te.read %[[D]][%i_1, %j_1] : tensor<2x3xf32>
// CHECK-NEXT:      te.read %b[%j_1] : tensor<3xf32>
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      te.yield
// CHECK:       func.func @dense
// CHECK-NEXT:    %w = arith.constant dense<2.500000e-01> : tensor<3x4xf32>
// CHECK-NEXT:    %b = arith.constant dense<[5.000000e-01, -1.000000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %y = te.call @dense_0(%x, %w, %b) : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @dense(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.25> : tensor<3x4xf32>
  %b = graph.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %y = graph.dense %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Broadcasting reads index size-1 dims at 0 and drop missing leading dims.
// CHECK-LABEL: te.primitive @add_0
// CHECK:         %s = te.compute "add" (%i, %j) : tensor<2x3xf32> {
// CHECK-NEXT:      %[[A:.*]] = te.read %a[%i, %j] : tensor<2x3xf32>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[B:.*]] = te.read %b[%[[ZERO]], %j] : tensor<1x3xf32>
// CHECK-NEXT:      arith.addf %[[A]], %[[B]] : f32
// CHECK-LABEL: te.primitive @mul_1
// CHECK:           te.read %c[%j] : tensor<3xf32>
func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>, %c: tensor<3xf32>) -> tensor<2x3xf32> {
  %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %p = graph.mul %s, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}

// -----

// Batched matmul: batch dims broadcast, the last dim of lhs is reduced.
// CHECK-LABEL: te.primitive @matmul_0
// CHECK:         te.reduce "matmul" sum (%i, %j, %l) over (%k : 4) init 0.000000e+00 : tensor<2x3x5xf32> {
// CHECK-NEXT:      te.read %a[%i, %j, %k] : tensor<2x3x4xf32>
// CHECK-NEXT:      te.read %b[%k, %l] : tensor<4x5xf32>
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %c = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return %c : tensor<2x3x5xf32>
}

// -----

// Transpose reads the input at the inverse permutation.
// CHECK-LABEL: te.primitive @transpose_0
// CHECK:         te.compute "transpose" (%i, %j, %l) : tensor<4x2x3xf32> {
// CHECK-NEXT:      te.read %a[%j, %l, %i] : tensor<2x3x4xf32>
func.func @transpose(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %t = graph.transpose %a [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %t : tensor<4x2x3xf32>
}

// -----

// The memory plan stays: each kernel's arena offsets move to its call, the function
// keeps its arena size.
// CHECK-LABEL: func.func @planned
// CHECK-SAME:    arena_bytes = 1024 : i64
// CHECK-NEXT:    %a = te.call @relu_0(%x) {arena_offsets = array<i64: 0>}
// CHECK-NEXT:    %b = te.call @relu_1(%a) {arena_offsets = array<i64: -1>}
func.func @planned(%x: tensor<256xf32>) -> tensor<256xf32> attributes {arena_bytes = 1024 : i64} {
  %a = graph.relu %x {arena_offsets = array<i64: 0>} : tensor<256xf32>
  %b = graph.relu %a {arena_offsets = array<i64: -1>} : tensor<256xf32>
  func.return %b : tensor<256xf32>
}

// -----

// Run-time dimensions: each primitive takes one te.size per class of equal run-time
// dimensions (named by the arguments' graph.sizes, else after the argument), and the
// function names the sizes of its arguments and results (te.sizes).
// CHECK-LABEL: te.primitive @add_0
// CHECK-NEXT:    %batch = te.size "batch" : index
// CHECK-NEXT:    %x = te.placeholder "x" sizes(%batch) : tensor<?x8xf32>
// CHECK-NEXT:    %y = te.placeholder "y" sizes(%batch) : tensor<?x8xf32>
// CHECK-NEXT:    %s = te.compute "add" (%i, %j) sizes(%batch) : tensor<?x8xf32> {
// CHECK-LABEL: te.primitive @dense_1
// CHECK-NEXT:    %batch = te.size "batch" : index
// CHECK-NEXT:    %s = te.placeholder "s" sizes(%batch) : tensor<?x8xf32>
// CHECK-NEXT:    %w = te.placeholder "w" : tensor<4x8xf32>
// CHECK-NEXT:    %d = te.reduce "dense" sum (%i, %j) over (%k : 8) init 0.000000e+00 sizes(%batch) : tensor<?x4xf32> {
// CHECK-LABEL: te.primitive @matmul_2
// CHECK-NEXT:    %batch = te.size "batch" : index
// CHECK-NEXT:    %[[Z:.*]] = te.size "z_1" : index
// CHECK-NEXT:    %d = te.placeholder "d" sizes(%batch) : tensor<?x4xf32>
// CHECK-NEXT:    %{{.*}} = te.placeholder "z" sizes(%[[Z]]) : tensor<4x?xf32>
// CHECK-NEXT:    %m = te.reduce "matmul" sum (%i, %j) over (%k : 4) init 0.000000e+00 sizes(%batch, %[[Z]]) : tensor<?x?xf32> {
// CHECK-LABEL: func.func @rows
// CHECK-SAME:    (%x: tensor<?x8xf32> {te.sizes = ["batch"]}, %y: tensor<?x8xf32> {te.sizes = ["batch"]}, %w: tensor<4x8xf32>, %z: tensor<4x?xf32> {te.sizes = ["z_1"]})
// CHECK-SAME:    -> (tensor<?x?xf32> {te.sizes = ["batch", "z_1"]})
// CHECK-NEXT:    %s = te.call @add_0(%x, %y) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
func.func @rows(%x: tensor<?x8xf32> {graph.sizes = ["batch"]}, %y: tensor<?x8xf32>, %w: tensor<4x8xf32>, %z: tensor<4x?xf32>) -> tensor<?x?xf32> {
  %s = graph.add %x, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %d = graph.dense %s, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %m = graph.matmul %d, %z : (tensor<?x4xf32>, tensor<4x?xf32>) -> tensor<?x?xf32>
  func.return %m : tensor<?x?xf32>
}

// -----

// The positions along a run-time dimension (graph.iota: the operand gives the length,
// its elements are not read), and an embedding at indices of run-time sizes.
// CHECK-LABEL: te.primitive @iota_0 {
// CHECK-NEXT:    %batch = te.size "batch" : index
// CHECK-NEXT:    %seq = te.size "seq" : index
// CHECK-NEXT:    %ids = te.placeholder "ids" sizes(%batch, %seq) : tensor<?x?xi64>
// CHECK-NEXT:    %p = te.compute "iota" (%i) sizes(%seq) : tensor<?xi64> {
// CHECK-NEXT:      %0 = arith.index_cast %i : index to i64
// CHECK-NEXT:      te.yield %0 : i64
// CHECK-NEXT:    }
// CHECK-LABEL: te.primitive @gather_1 {
// CHECK:         %ids = te.placeholder "ids" sizes(%batch, %seq) : tensor<?x?xi64>
// CHECK-NEXT:    %e = te.compute "gather" (%i, %j, %l) sizes(%batch, %seq) : tensor<?x?x4xf32> {
// CHECK-NEXT:      %0 = te.read %ids[%i, %j] : tensor<?x?xi64>
// CHECK:           %{{.*}} = te.read %t[%{{.*}}, %l] : tensor<5x4xf32>
func.func @positions(%ids: tensor<?x?xi64> {graph.sizes = ["batch", "seq"]}, %t: tensor<5x4xf32>) -> (tensor<?xi64>, tensor<?x?x4xf32>) {
  %p = graph.iota %ids dim 1 : (tensor<?x?xi64>) -> tensor<?xi64>
  %e = graph.gather %t, %ids axis 0 : (tensor<5x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  func.return %p, %e : tensor<?xi64>, tensor<?x?x4xf32>
}

// -----

// A shift along a run-time dimension: the body reads the primitive's te.size to test
// and clamp the shifted position.
// CHECK-LABEL: te.primitive @pad_0 {
// CHECK-NEXT:    %batch = te.size "batch" : index
// CHECK-NEXT:    %seq = te.size "seq" : index
// CHECK-NEXT:    %x = te.placeholder "x" sizes(%batch, %seq) : tensor<?x?x8xf32>
// CHECK-NEXT:    %a = te.compute "pad" (%i, %j, %l) sizes(%batch, %seq) : tensor<?x?x8xf32> {
// CHECK-NEXT:      %0 = arith.constant 1 : index
// CHECK-NEXT:      %1 = arith.addi %j, %0 : index
// CHECK-NEXT:      %2 = arith.cmpi slt, %1, %seq : index
// CHECK-NEXT:      %3 = arith.constant 1 : index
// CHECK-NEXT:      %4 = arith.subi %seq, %3 : index
// CHECK-NEXT:      %5 = arith.cmpi sgt, %1, %4 : index
// CHECK-NEXT:      %6 = arith.select %5, %4, %1 : index
// CHECK-NEXT:      %7 = te.read %x[%i, %6, %l] : tensor<?x?x8xf32>
// CHECK-NEXT:      %8 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %9 = arith.select %2, %7, %8 : f32
// CHECK-NEXT:      te.yield %9 : f32
func.func @shift(%x: tensor<?x?x8xf32> {graph.sizes = ["batch", "seq"]}) -> tensor<?x?x8xf32> {
  %a = graph.pad %x low [0, -1, 0] high [0, 1, 0] mode "constant" : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  func.return %a : tensor<?x?x8xf32>
}

// -----

// A concatenation along a run-time dimension: the result's size is a class of its own,
// named by the sum (`past + seq`), and the body reads each input at its offset, the
// sum of the sizes before it.
// CHECK-LABEL: te.primitive @concat_0 {
// CHECK-NEXT:    %past = te.size "past" : index
// CHECK-NEXT:    %seq = te.size "seq" : index
// CHECK-NEXT:    %[[TOTAL:.*]] = te.size "past + seq" : index
// CHECK:         %c = te.compute "concat" (%i, %j, %l) sizes(%[[TOTAL]]) : tensor<2x?x8xf32> {
// CHECK:           %[[FIRST:.*]] = te.read %{{.*}}[%i, %{{.*}}, %l] : tensor<2x?x8xf32>
// CHECK-NEXT:      %[[AT:.*]] = arith.subi %j, %past : index
// CHECK:           %[[SECOND:.*]] = te.read %new[%i, %{{.*}}, %l] : tensor<2x?x8xf32>
// CHECK-NEXT:      %[[AFTER:.*]] = arith.cmpi sge, %j, %past : index
// CHECK-NEXT:      %{{.*}} = arith.select %[[AFTER]], %[[SECOND]], %[[FIRST]] : f32
// CHECK-LABEL: te.primitive @relu_1 {
// CHECK-NEXT:    %[[TOTAL2:.*]] = te.size "past + seq" : index
// CHECK-LABEL: func.func @kv_cache(%past: tensor<2x?x8xf32> {te.sizes = ["past"]}, %new: tensor<2x?x8xf32> {te.sizes = ["seq"]}) -> (tensor<2x?x8xf32> {te.sizes = ["past + seq"]}) {
func.func @kv_cache(%past: tensor<2x?x8xf32> {graph.sizes = ["past"]}, %new: tensor<2x?x8xf32> {graph.sizes = ["seq"]}) -> tensor<2x?x8xf32> {
  %c = graph.concat %past, %new axis 1 : (tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  %r = graph.relu %c : tensor<2x?x8xf32>
  func.return %r : tensor<2x?x8xf32>
}

// -----

// A slice dropping the first element of a run-time dimension: its result's size is
// `seq - 1`, and the body reads from the start.
// CHECK-LABEL: te.primitive @slice_0 {
// CHECK-NEXT:    %seq = te.size "seq" : index
// CHECK-NEXT:    %[[SHORTER:.*]] = te.size "seq - 1" : index
// CHECK-NEXT:    %x = te.placeholder "x" sizes(%seq) : tensor<2x?xf32>
// CHECK-NEXT:    %s = te.compute "slice" (%i, %j) sizes(%[[SHORTER]]) : tensor<2x?xf32> {
// CHECK-NEXT:      %0 = arith.constant 1 : index
// CHECK-NEXT:      %1 = arith.addi %j, %0 : index
// CHECK-NEXT:      %2 = te.read %x[%i, %1] : tensor<2x?xf32>
// CHECK-LABEL: func.func @later(%x: tensor<2x?xf32> {te.sizes = ["seq"]}) -> (tensor<2x?xf32> {te.sizes = ["seq - 1"]}) {
func.func @later(%x: tensor<2x?xf32> {graph.sizes = ["seq"]}) -> tensor<2x?xf32> {
  %s = graph.slice %x starts [0, 1] steps [1, 1] : (tensor<2x?xf32>) -> tensor<2x?xf32>
  func.return %s : tensor<2x?xf32>
}
