// RUN: strato-opt %s --split-input-file -p 'convert-graph-to-te{row_blocks=4,1}' | filecheck %s
// RUN: strato-opt %s --split-input-file -p 'convert-graph-to-te{row_blocks=4,1},convert-te-to-loops' | filecheck %s --check-prefix=LOOPS
// RUN: not strato-opt %s --split-input-file -p 'convert-graph-to-te{row_blocks=4,2}' 2>&1 | filecheck %s --check-prefix=BAD

// A primitive of run-time sizes that computes each row (over its leading run-time
// dimensions, batch x seq) from the same row alone is also built for blocks of 4 rows
// and of 1 (static shapes: 1 x 4 and 1 x 1), which it names (te.row_blocks); a
// reduction over the sequence mixes rows, and has none. The dense layer reads its
// weight whole in every block.
// CHECK-LABEL: te.primitive @dense_0 attributes {te.row_blocks = {rows = ["batch", "seq"], blocks = [[4 : i64, @dense_0_rows4_1], [1 : i64, @dense_0_rows1_2]]}} {
// CHECK-NEXT:    %batch = te.size "batch" : index
// CHECK-NEXT:    %seq = te.size "seq" : index
// CHECK-NEXT:    %x = te.placeholder "x" sizes(%batch, %seq) : tensor<?x?x8xf32>
// CHECK-LABEL: te.primitive @dense_0_rows4_1 {
// CHECK-NEXT:    %x = te.placeholder "x" : tensor<1x4x8xf32>
// CHECK-NEXT:    %w = te.placeholder "w" : tensor<4x8xf32>
// CHECK-NEXT:    %b = te.placeholder "b" : tensor<4xf32>
// CHECK-NEXT:    %0 = te.reduce "dense" sum (%i, %j, %l) over (%k : 8) init 0.000000e+00 : tensor<1x4x4xf32> {
// CHECK:         te.output %d : tensor<1x4x4xf32>
// CHECK-LABEL: te.primitive @dense_0_rows1_2 {
// CHECK-NEXT:    %x = te.placeholder "x" : tensor<1x1x8xf32>
// CHECK:         te.output %d : tensor<1x1x4xf32>
// CHECK-LABEL: te.primitive @reduce_sum_3 {
// CHECK-LABEL: func.func @block
// CHECK-NEXT:    %d = te.call @dense_0(%x, %w, %b) : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
// CHECK-NEXT:    %t = te.call @reduce_sum_3(%x) : (tensor<?x?x8xf32>) -> tensor<?x1x8xf32>

// convert-te-to-loops runs the call as its blocks (the kernel of run-time sizes is not
// made; a flat buffer keeps its tensor's shape, loop.shape): the rows batch x seq, as many blocks of 4 as fit, each a call of its static
// kernel on views of the rows of the buffers of run-time sizes (8 elements a row of x,
// 4 of d) and on the weights whole, as a parallel loop (each block writes rows of its
// own; its kernel's parallel loops then run in the block's thread); then, for the
// rows left, one more block of 4
// ending at the last row when there are 4 rows or more (it writes some rows again, as
// they were), else the rows one by one.
// LOOPS-NOT:   func.func @dense_0(
// LOOPS-LABEL: func.func @dense_0_rows4_1(%x: memref<1x4x8xf32>, %w: memref<4x8xf32>, %b: memref<4xf32>, %d: memref<1x4x4xf32> {loop.output}) attributes {loop.kernel}
// LOOPS-LABEL: func.func @dense_0_rows1_2(%x: memref<1x1x8xf32>, %w: memref<4x8xf32>, %b: memref<4xf32>, %d: memref<1x1x4xf32> {loop.output}) attributes {loop.kernel}
// LOOPS-LABEL: func.func @reduce_sum_3(
// LOOPS-LABEL: func.func @block(%x: memref<?xf32> {te.sizes = ["batch", "seq"], loop.shape = array<i64: -1, -1, 8>}, %w: memref<4x8xf32>, %b: memref<4xf32>, %d: memref<?xf32> {loop.output, te.sizes = ["batch", "seq"], loop.shape = array<i64: -1, -1, 4>}, %t: memref<?x1x8xf32> {loop.output, te.sizes = ["batch"]}, %batch: index {loop.size = "batch"}, %seq: index {loop.size = "seq"}) {
// LOOPS-NEXT:    %[[ROWS:.*]] = arith.muli %batch, %seq : index
// LOOPS-NEXT:    %[[FOUR:.*]] = arith.constant 4 : index
// LOOPS-NEXT:    %[[BLOCKS:.*]] = arith.divui %[[ROWS]], %[[FOUR]] : index
// LOOPS-NEXT:    loop.for %[[B:.*]] = 0 to %[[BLOCKS]] parallel axis "dense_0_rows4_1.blocks" {
// LOOPS-NEXT:      %[[FIRST:.*]] = arith.muli %[[B]], %[[FOUR]] : index
// LOOPS-NEXT:      %[[EIGHT:.*]] = arith.constant 8 : index
// LOOPS-NEXT:      %[[XAT:.*]] = arith.muli %[[FIRST]], %[[EIGHT]] : index
// LOOPS-NEXT:      %x_1 = loop.view %x[%[[XAT]]] : memref<?xf32> to memref<1x4x8xf32>
// LOOPS-NEXT:      %[[FOUR2:.*]] = arith.constant 4 : index
// LOOPS-NEXT:      %[[DAT:.*]] = arith.muli %[[FIRST]], %[[FOUR2]] : index
// LOOPS-NEXT:      %d_1 = loop.view %d[%[[DAT]]] : memref<?xf32> to memref<1x4x4xf32>
// LOOPS-NEXT:      func.call @dense_0_rows4_1(%x_1, %w, %b, %d_1) : (memref<1x4x8xf32>, memref<4x8xf32>, memref<4xf32>, memref<1x4x4xf32>) -> ()
// LOOPS-NEXT:    }
// LOOPS-NEXT:    %[[DONE:.*]] = arith.muli %[[BLOCKS]], %[[FOUR]] : index
// LOOPS-NEXT:    %[[SIZE:.*]] = arith.constant 4 : index
// LOOPS-NEXT:    %[[ENOUGH:.*]] = arith.cmpi uge, %[[ROWS]], %[[SIZE]] : index
// LOOPS-NEXT:    %[[SOME:.*]] = arith.cmpi ne, %[[ROWS]], %[[DONE]] : index
// LOOPS-NEXT:    %[[OVERLAP:.*]] = arith.andi %[[ENOUGH]], %[[SOME]] : i1
// LOOPS-NEXT:    scf.if %[[OVERLAP]] {
// LOOPS-NEXT:      %[[LAST:.*]] = arith.subi %[[ROWS]], %[[SIZE]] : index
// LOOPS:           %x_2 = loop.view %x[%{{.*}}] : memref<?xf32> to memref<1x4x8xf32>
// LOOPS:           %d_2 = loop.view %d[%{{.*}}] : memref<?xf32> to memref<1x4x4xf32>
// LOOPS-NEXT:      func.call @dense_0_rows4_1(%x_2, %w, %b, %d_2)
// LOOPS-NEXT:    } else {
// LOOPS-NEXT:      %[[LEFT:.*]] = arith.subi %[[ROWS]], %[[DONE]] : index
// LOOPS:           scf.for %[[R:.*]] = %{{.*}} to %[[LEFT]] step %{{.*}} {
// LOOPS-NEXT:        %[[ROW:.*]] = arith.addi %[[DONE]], %[[R]] : index
// LOOPS:             %x_3 = loop.view %x[%{{.*}}] : memref<?xf32> to memref<1x1x8xf32>
// LOOPS:             %d_3 = loop.view %d[%{{.*}}] : memref<?xf32> to memref<1x1x4xf32>
// LOOPS-NEXT:        func.call @dense_0_rows1_2(%x_3, %w, %b, %d_3) : (memref<1x1x8xf32>, memref<4x8xf32>, memref<4xf32>, memref<1x1x4xf32>) -> ()
// LOOPS-NEXT:      }
// LOOPS-NEXT:    }
// LOOPS-NEXT:    func.call @reduce_sum_3(%x, %t, %batch, %seq) : (memref<?xf32>, memref<?x1x8xf32>, index, index) -> ()
func.func @block(%x: tensor<?x?x8xf32> {graph.sizes = ["batch", "seq"]}, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> (tensor<?x?x4xf32>, tensor<?x1x8xf32>) {
  %d = graph.dense %x, %w, %b : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %t = graph.reduce_sum %x [1] keepdims : (tensor<?x?x8xf32>) -> tensor<?x1x8xf32>
  func.return %d, %t : tensor<?x?x4xf32>, tensor<?x1x8xf32>
}

// BAD: error: convert-graph-to-te: row_blocks must be row counts, decreasing, ending in 1 (e.g. 32,8,1), got 4,2

// -----

// A fused group keeps its rows apart through its transposes and reshapes, a row of
// its intermediate anywhere (the packed product's [N/NR, rows, NR]); softmax over a
// static axis keeps them too.
// CHECK-LABEL: te.primitive @packed_0 attributes {te.row_blocks = {rows = ["n"], blocks = [[4 : i64, @packed_0_rows4_1], [1 : i64, @packed_0_rows1_2]]}}
// CHECK-LABEL: te.primitive @packed_0_rows4_1 {
// CHECK-NEXT:    %a = te.placeholder "a" : tensor<4x8xf32>
// CHECK-NEXT:    %b = te.placeholder "b" : tensor<2x8x2xf32>
// CHECK:         te.output %{{.*}} : tensor<4x4xf32>
// CHECK-LABEL: te.primitive @packed_0_rows1_2 {
func.func @fused(%x: tensor<?x8xf32> {graph.sizes = ["n"]}, %w: tensor<2x8x2xf32>) -> tensor<?x4xf32> {
  %r = graph.fused "packed" out_elemwise_fusable (%x, %w) : (tensor<?x8xf32>, tensor<2x8x2xf32>) -> tensor<?x4xf32> {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<2x8x2xf32>):
    %m = graph.matmul %a, %b : (tensor<?x8xf32>, tensor<2x8x2xf32>) -> tensor<2x?x2xf32>
    %t = graph.transpose %m [1, 0, 2] : (tensor<2x?x2xf32>) -> tensor<?x2x2xf32>
    %s = graph.reshape %t : (tensor<?x2x2xf32>) -> tensor<?x4xf32>
    %o = graph.softmax %s axes [1] : tensor<?x4xf32>
    graph.yield %o : tensor<?x4xf32>
  }
  func.return %r : tensor<?x4xf32>
}

// -----

// An embedding keeps its rows apart: each row of the result is the table's row the
// same row of the indices picks; a gather from a table of run-time rows has no rows.
// CHECK-LABEL: te.primitive @gather_0 attributes {te.row_blocks = {rows = ["batch", "seq"], blocks = [[4 : i64, @gather_0_rows4_1], [1 : i64, @gather_0_rows1_2]]}}
// CHECK-LABEL: te.primitive @gather_0_rows4_1 {
// CHECK-NEXT:    %t = te.placeholder "t" : tensor<5x4xf32>
// CHECK-NEXT:    %ids = te.placeholder "ids" : tensor<1x4xi64>
// CHECK-NEXT:    %e = te.compute "gather" (%i, %j, %l) : tensor<1x4x4xf32> {
// CHECK-LABEL: te.primitive @gather_0_rows1_2 {
// CHECK-LABEL: te.primitive @gather_3 {
// CHECK-NOT:     te.row_blocks
func.func @embedding(%ids: tensor<?x?xi64> {graph.sizes = ["batch", "seq"]}, %t: tensor<5x4xf32>, %u: tensor<?x4xf32>, %k: tensor<3xi64>) -> (tensor<?x?x4xf32>, tensor<?x3xf32>) {
  %e = graph.gather %t, %ids axis 0 : (tensor<5x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %f = graph.gather %u, %k axis 1 : (tensor<?x4xf32>, tensor<3xi64>) -> tensor<?x3xf32>
  func.return %e, %f : tensor<?x?x4xf32>, tensor<?x3xf32>
}

// -----

// No rows: an output without run-time dimensions; a softmax over the rows; a product
// contracting them; a tensor holding a run-time size twice; an input whose run-time
// dimension is not leading.
// CHECK-NOT:   te.row_blocks
func.func @mixed(%x: tensor<?x8xf32> {graph.sizes = ["n"]}, %y: tensor<8x?xf32>, %q: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x?xf32>, tensor<8x?xf32>) {
  %s = graph.softmax %x axes [0] : tensor<?x8xf32>
  %t = graph.transpose %x [1, 0] : (tensor<?x8xf32>) -> tensor<8x?xf32>
  %c = graph.matmul %t, %x : (tensor<8x?xf32>, tensor<?x8xf32>) -> tensor<8x8xf32>
  %qt = graph.transpose %q [1, 0] : (tensor<?x8xf32>) -> tensor<8x?xf32>
  %a = graph.matmul %x, %qt : (tensor<?x8xf32>, tensor<8x?xf32>) -> tensor<?x?xf32>
  %e = graph.exp %y : tensor<8x?xf32>
  func.return %s, %c, %a, %e : tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x?xf32>, tensor<8x?xf32>
}

// -----

// Rows whose sizes' bounds make them a multiple of a block (batch a multiple of 4, so
// batch x seq is one too): the blocks stop at that block, which records the multiple,
// and no block of fewer rows is made; convert-te-to-loops runs blocks of 4 only,
// leaving no rows. A multiple no smaller block divides (2) keeps every block.
// CHECK-LABEL: te.primitive @relu_0 attributes {te.row_blocks = {rows = ["batch", "seq"], blocks = [[4 : i64, @relu_0_rows4_1]], multiple = 4 : i64}} {
// CHECK-NOT:   te.primitive @relu_0_rows1
// CHECK-LABEL: te.primitive @exp_2 attributes {te.row_blocks = {rows = ["n"], blocks = [[4 : i64, @exp_2_rows4_3], [1 : i64, @exp_2_rows1_4]]}} {
// LOOPS-NOT:   func.func @relu_0_rows1
// LOOPS-LABEL: func.func @multiples(
// LOOPS:         %[[ROWS:.*]] = arith.muli %batch, %seq : index
// LOOPS-NEXT:    %[[FOUR:.*]] = arith.constant 4 : index
// LOOPS-NEXT:    %[[BLOCKS:.*]] = arith.divui %[[ROWS]], %[[FOUR]] : index
// LOOPS-NEXT:    loop.for %{{.*}} = 0 to %[[BLOCKS]] parallel axis "relu_0_rows4_1.blocks" {
// LOOPS:           func.call @relu_0_rows4_1(
// LOOPS-NEXT:    }
// LOOPS-NEXT:    %{{.*}} = arith.muli %[[BLOCKS]], %[[FOUR]] : index
// LOOPS-NEXT:    %{{.*}} = arith.constant 4 : index
// LOOPS-NEXT:    %{{.*}} = arith.divui %n, %{{.*}} : index
// LOOPS:         scf.if
// LOOPS:         func.call @exp_2_rows1_4(
func.func @multiples(%x: tensor<?x?x8xf32> {graph.sizes = ["batch", "seq"]}, %y: tensor<?x8xf32> {graph.sizes = ["n"]}) -> (tensor<?x?x8xf32>, tensor<?x8xf32>) attributes {graph.size_bounds = {batch = array<i64: 0, -1, 4>, n = array<i64: 2, 64, 2>}} {
  %r = graph.relu %x : tensor<?x?x8xf32>
  %e = graph.exp %y : tensor<?x8xf32>
  func.return %r, %e : tensor<?x?x8xf32>, tensor<?x8xf32>
}
