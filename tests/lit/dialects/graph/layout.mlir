// Round trip of the layout ops: custom form, custom form reparsed (stable text), and
// the generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reshape
// CHECK-NEXT:    %r = graph.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %s = graph.reshape %r : (tensor<6x4xf32>) -> tensor<1x24x1xf32>
// CHECK-NEXT:    %i = graph.reshape %b : (tensor<2x3xi64>) -> tensor<6xi64>
// CHECK-NEXT:    %z = graph.reshape %c : (tensor<f32>) -> tensor<1x1xf32>
// GENERIC-LABEL: sym_name = "reshape"
// GENERIC:         "graph.reshape"(%a) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
func.func @reshape(%a: tensor<2x3x4xf32>, %b: tensor<2x3xi64>, %c: tensor<f32>) -> tensor<1x24x1xf32> {
  %r = graph.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %s = graph.reshape %r : (tensor<6x4xf32>) -> tensor<1x24x1xf32>
  %i = graph.reshape %b : (tensor<2x3xi64>) -> tensor<6xi64>
  %z = graph.reshape %c : (tensor<f32>) -> tensor<1x1xf32>
  func.return %s : tensor<1x24x1xf32>
}

// CHECK-LABEL: func.func @concat_split
// CHECK-NEXT:    %c = graph.concat %a, %b, %a axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
// CHECK-NEXT:    %one = graph.concat %a axis 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %p, %q, %r = graph.split %c axis 1 : (tensor<2x11xf32>) -> (tensor<2x4xf32>, tensor<2x0xf32>, tensor<2x7xf32>)
// GENERIC-LABEL: sym_name = "concat_split"
// GENERIC:         "graph.concat"(%a, %b, %a) <{axis = 1 : i64}> : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
// GENERIC:         "graph.split"(%c) <{axis = 1 : i64}> : (tensor<2x11xf32>) -> (tensor<2x4xf32>, tensor<2x0xf32>, tensor<2x7xf32>)
func.func @concat_split(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x7xf32> {
  %c = graph.concat %a, %b, %a axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %one = graph.concat %a axis 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %p, %q, %r = graph.split %c axis 1 : (tensor<2x11xf32>) -> (tensor<2x4xf32>, tensor<2x0xf32>, tensor<2x7xf32>)
  func.return %r : tensor<2x7xf32>
}

// A slice of the static dimensions of a tensor of run-time size, which it keeps whole.
// CHECK-LABEL: func.func @slice_run_time
// CHECK-NEXT:    %h = graph.slice %a starts [0, 8] steps [1, 1] : (tensor<?x16xf32>) -> tensor<?x8xf32>
func.func @slice_run_time(%a: tensor<?x16xf32> {graph.sizes = ["n"]}) -> tensor<?x8xf32> {
  %h = graph.slice %a starts [0, 8] steps [1, 1] : (tensor<?x16xf32>) -> tensor<?x8xf32>
  func.return %h : tensor<?x8xf32>
}

// A reshape of run-time dimensions keeps them in order and reshapes each stretch of
// static dimensions around them within itself (grouped heads between a batch and a
// sequence, dimensions of size 1 around them).
// CHECK-LABEL: func.func @reshape_stretches
// CHECK-NEXT:    %h = graph.reshape %a : (tensor<?x2x2x?x16xf32>) -> tensor<?x4x?x4x4xf32>
// CHECK-NEXT:    %o = graph.reshape %a : (tensor<?x2x2x?x16xf32>) -> tensor<1x?x4x1x?x16xf32>
func.func @reshape_stretches(%a: tensor<?x2x2x?x16xf32> {graph.sizes = ["b", "s"]}) -> tensor<?x4x?x4x4xf32> {
  %h = graph.reshape %a : (tensor<?x2x2x?x16xf32>) -> tensor<?x4x?x4x4xf32>
  %o = graph.reshape %a : (tensor<?x2x2x?x16xf32>) -> tensor<1x?x4x1x?x16xf32>
  func.return %h : tensor<?x4x?x4x4xf32>
}

// CHECK-LABEL: func.func @slice_pad
// CHECK-NEXT:    %s = graph.slice %a starts [0, 9] steps [2, -1] : (tensor<20x10xf32>) -> tensor<10x10xf32>
// CHECK-NEXT:    %e = graph.slice %a starts [0, 0] steps [1, 1] : (tensor<20x10xf32>) -> tensor<0x10xf32>
// CHECK-NEXT:    %c = graph.pad %a low [0, 1] high [2, 0] mode "constant" : (tensor<20x10xf32>) -> tensor<22x11xf32>
// CHECK-NEXT:    %v = graph.pad %a low [0, 1] high [2, 0] mode "constant" value 1.500000e+00 : (tensor<20x10xf32>) -> tensor<22x11xf32>
// CHECK-NEXT:    %r = graph.pad %a low [1, 1] high [1, 9] mode "reflect" : (tensor<20x10xf32>) -> tensor<22x20xf32>
// CHECK-NEXT:    %d = graph.pad %a low [5, 0] high [0, 30] mode "edge" : (tensor<20x10xf32>) -> tensor<25x40xf32>
// CHECK-NEXT:    %w = graph.pad %a low [50, 0] high [0, 30] mode "wrap" : (tensor<20x10xf32>) -> tensor<70x40xf32>
// GENERIC-LABEL: sym_name = "slice_pad"
// GENERIC:         "graph.slice"(%a) <{starts = array<i64: 0, 9>, steps = array<i64: 2, -1>}> : (tensor<20x10xf32>) -> tensor<10x10xf32>
// GENERIC:         "graph.pad"(%a) <{low = array<i64: 0, 1>, high = array<i64: 2, 0>, mode = "constant", value = 1.500000e+00 : f64}> : (tensor<20x10xf32>) -> tensor<22x11xf32>
func.func @slice_pad(%a: tensor<20x10xf32>) -> tensor<10x10xf32> {
  %s = graph.slice %a starts [0, 9] steps [2, -1] : (tensor<20x10xf32>) -> tensor<10x10xf32>
  %e = graph.slice %a starts [0, 0] steps [1, 1] : (tensor<20x10xf32>) -> tensor<0x10xf32>
  %c = graph.pad %a low [0, 1] high [2, 0] mode "constant" : (tensor<20x10xf32>) -> tensor<22x11xf32>
  %v = graph.pad %a low [0, 1] high [2, 0] mode "constant" value 1.5 : (tensor<20x10xf32>) -> tensor<22x11xf32>
  %r = graph.pad %a low [1, 1] high [1, 9] mode "reflect" : (tensor<20x10xf32>) -> tensor<22x20xf32>
  %d = graph.pad %a low [5, 0] high [0, 30] mode "edge" : (tensor<20x10xf32>) -> tensor<25x40xf32>
  %w = graph.pad %a low [50, 0] high [0, 30] mode "wrap" : (tensor<20x10xf32>) -> tensor<70x40xf32>
  func.return %s : tensor<10x10xf32>
}

// A shift: one pad of a dimension negative, the other making up for it (low + high =
// 0); the only pads a run-time dimension takes.
// CHECK-LABEL: func.func @shift
// CHECK-NEXT:    %s = graph.pad %a low [0, -1] high [0, 1] mode "constant" : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %t = graph.pad %a low [2, 1] high [-2, 0] mode "constant" value 1.500000e+00 : (tensor<?x8xf32>) -> tensor<?x9xf32>
// CHECK-NEXT:    %u = graph.pad %c low [-3] high [3] mode "constant" : (tensor<4xf32>) -> tensor<4xf32>
func.func @shift(%a: tensor<?x8xf32> {graph.sizes = ["n"]}, %c: tensor<4xf32>) -> tensor<?x8xf32> {
  %s = graph.pad %a low [0, -1] high [0, 1] mode "constant" : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %t = graph.pad %a low [2, 1] high [-2, 0] mode "constant" value 1.5 : (tensor<?x8xf32>) -> tensor<?x9xf32>
  %u = graph.pad %c low [-3] high [3] mode "constant" : (tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @gather_broadcast
// CHECK-NEXT:    %g = graph.gather %data, %idx axis 0 : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK-NEXT:    %h = graph.gather %data, %mat axis 1 : (tensor<5x4xf32>, tensor<2x2xi32>) -> tensor<5x2x2xf32>
// CHECK-NEXT:    %s = graph.gather %data, %one axis 1 : (tensor<5x4xf32>, tensor<i64>) -> tensor<5xf32>
// CHECK-NEXT:    %b = graph.broadcast_to %col : (tensor<4x1xf32>) -> tensor<2x4x3xf32>
// GENERIC-LABEL: sym_name = "gather_broadcast"
// GENERIC:         "graph.gather"(%data, %idx) <{axis = 0 : i64}> : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// GENERIC:         "graph.broadcast_to"(%col) : (tensor<4x1xf32>) -> tensor<2x4x3xf32>
func.func @gather_broadcast(%data: tensor<5x4xf32>, %idx: tensor<3xi64>, %mat: tensor<2x2xi32>, %one: tensor<i64>, %col: tensor<4x1xf32>) -> tensor<3x4xf32> {
  %g = graph.gather %data, %idx axis 0 : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %h = graph.gather %data, %mat axis 1 : (tensor<5x4xf32>, tensor<2x2xi32>) -> tensor<5x2x2xf32>
  %s = graph.gather %data, %one axis 1 : (tensor<5x4xf32>, tensor<i64>) -> tensor<5xf32>
  %b = graph.broadcast_to %col : (tensor<4x1xf32>) -> tensor<2x4x3xf32>
  func.return %g : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @inference_no_ops
// CHECK-NEXT:    %i = graph.identity %a : tensor<2x3xf32>
// CHECK-NEXT:    %d = graph.dropout %i ratio 5.000000e-01 : tensor<2x3xf32>
// CHECK-NEXT:    %e = graph.dropout %d : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "inference_no_ops"
// GENERIC:         "graph.identity"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         "graph.dropout"(%i) <{ratio = 5.000000e-01 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @inference_no_ops(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %i = graph.identity %a : tensor<2x3xf32>
  %d = graph.dropout %i ratio 0.5 : tensor<2x3xf32>
  %e = graph.dropout %d : tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}

// Pass-through ops take run-time dimensions: the result's are the input's.
// CHECK-LABEL: func.func @inference_no_ops_run_time
// CHECK-NEXT:    %i = graph.identity %a : tensor<?x3xf32>
// CHECK-NEXT:    %d = graph.dropout %i : tensor<?x3xf32>
// GENERIC-LABEL: sym_name = "inference_no_ops_run_time"
// GENERIC:         "graph.identity"(%a) : (tensor<?x3xf32>) -> tensor<?x3xf32>
func.func @inference_no_ops_run_time(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %i = graph.identity %a : tensor<?x3xf32>
  %d = graph.dropout %i : tensor<?x3xf32>
  func.return %d : tensor<?x3xf32>
}

// Run-time dimensions: the positions along one (graph.iota), an embedding of indices of
// run-time sizes, and reshapes that add or drop dimensions of size 1 among them.
// CHECK-LABEL: func.func @run_time_positions
// CHECK-NEXT:    %p = graph.iota %ids dim 1 : (tensor<?x?xi64>) -> tensor<?xi64>
// CHECK-NEXT:    %q = graph.iota %t dim 0 : (tensor<5x4xf32>) -> tensor<5xi32>
// CHECK-NEXT:    %e = graph.gather %t, %ids axis 0 : (tensor<5x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
// CHECK-NEXT:    %u = graph.reshape %p : (tensor<?xi64>) -> tensor<1x?x1xi64>
// CHECK-NEXT:    %v = graph.reshape %e : (tensor<?x?x4xf32>) -> tensor<?x1x?x2x2xf32>
// GENERIC-LABEL: sym_name = "run_time_positions"
// GENERIC:         "graph.iota"(%ids) <{dim = 1 : i64}> : (tensor<?x?xi64>) -> tensor<?xi64>
func.func @run_time_positions(%ids: tensor<?x?xi64>, %t: tensor<5x4xf32>) -> tensor<?x1x?x2x2xf32> {
  %p = graph.iota %ids dim 1 : (tensor<?x?xi64>) -> tensor<?xi64>
  %q = graph.iota %t dim 0 : (tensor<5x4xf32>) -> tensor<5xi32>
  %e = graph.gather %t, %ids axis 0 : (tensor<5x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %u = graph.reshape %p : (tensor<?xi64>) -> tensor<1x?x1xi64>
  %v = graph.reshape %e : (tensor<?x?x4xf32>) -> tensor<?x1x?x2x2xf32>
  func.return %v : tensor<?x1x?x2x2xf32>
}

// More of run-time dimensions: a broadcast to a size the input has 1 for, given by a
// tensor of the result's rank (`like`, not read); a split of a static axis and a
// concatenation along one; a gather of elements along a static axis.
// CHECK-LABEL: func.func @run_time_broadcast_split
// CHECK-NEXT:    %b = graph.broadcast_to %t like %ids : (tensor<1x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
// CHECK-NEXT:    %c = graph.broadcast_to %x : (tensor<?x1xf32>) -> tensor<?x6xf32>
// CHECK-NEXT:    %p, %q = graph.split %c axis 1 : (tensor<?x6xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>)
// CHECK-NEXT:    %j = graph.concat %q, %p axis 1 : (tensor<?x4xf32>, tensor<?x2xf32>) -> tensor<?x6xf32>
// CHECK-NEXT:    %g = graph.gather_elements %buffer, %t axis 1 : (tensor<1x8xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
// GENERIC-LABEL: sym_name = "run_time_broadcast_split"
// GENERIC:         "graph.broadcast_to"(%t, %ids) : (tensor<1x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
func.func @run_time_broadcast_split(%t: tensor<1x?xi64>, %ids: tensor<?x?xi64>, %x: tensor<?x1xf32>, %buffer: tensor<1x8xi64>) -> tensor<?x?xi64> {
  %b = graph.broadcast_to %t like %ids : (tensor<1x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  %c = graph.broadcast_to %x : (tensor<?x1xf32>) -> tensor<?x6xf32>
  %p, %q = graph.split %c axis 1 : (tensor<?x6xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>)
  %j = graph.concat %q, %p axis 1 : (tensor<?x4xf32>, tensor<?x2xf32>) -> tensor<?x6xf32>
  %g = graph.gather_elements %buffer, %t axis 1 : (tensor<1x8xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  func.return %b : tensor<?x?xi64>
}

// A concatenation along a run-time dimension: its size is the sum of the inputs'
// (past keys and new ones), a static one among them.
// CHECK-LABEL: func.func @run_time_concat
// CHECK-NEXT:    %c = graph.concat %past, %new, %one axis 1 : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x1x8xf32>) -> tensor<2x?x8xf32>
// GENERIC-LABEL: sym_name = "run_time_concat"
// GENERIC:         "graph.concat"(%past, %new, %one) <{axis = 1 : i64}> : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x1x8xf32>) -> tensor<2x?x8xf32>
func.func @run_time_concat(%past: tensor<2x?x8xf32>, %new: tensor<2x?x8xf32>, %one: tensor<2x1x8xf32>) -> tensor<2x?x8xf32> {
  %c = graph.concat %past, %new, %one axis 1 : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x1x8xf32>) -> tensor<2x?x8xf32>
  func.return %c : tensor<2x?x8xf32>
}

// Sizes computed from a run-time one: a slice dropping its first element and its last
// two (`seq - 3`), and a pad lengthening it in constant mode (`seq + 2`).
// CHECK-LABEL: func.func @run_time_slice_and_pad
// CHECK-NEXT:    %s = graph.slice %x starts [0, 1] steps [1, 1] drops [0, 2] : (tensor<2x?xf32>) -> tensor<2x?xf32>
// CHECK-NEXT:    %p = graph.pad %x low [0, 1] high [0, 1] mode "constant" : (tensor<2x?xf32>) -> tensor<2x?xf32>
// GENERIC-LABEL: sym_name = "run_time_slice_and_pad"
// GENERIC:         "graph.slice"(%x) <{starts = array<i64: 0, 1>, steps = array<i64: 1, 1>, drops = array<i64: 0, 2>}> : (tensor<2x?xf32>) -> tensor<2x?xf32>
func.func @run_time_slice_and_pad(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %s = graph.slice %x starts [0, 1] steps [1, 1] drops [0, 2] : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %p = graph.pad %x low [0, 1] high [0, 1] mode "constant" : (tensor<2x?xf32>) -> tensor<2x?xf32>
  func.return %s : tensor<2x?xf32>
}

// A run-time size as data, and a gather along a run-time dimension: the last `seq`
// positions of `past + seq` (the indices give the result's dimension).
// CHECK-LABEL: func.func @run_time_size_of
// CHECK-NEXT:    %n = graph.size_of %past dim 1 : (tensor<2x?x8xf32>) -> tensor<i64>
// CHECK-NEXT:    %p = graph.iota %ids dim 0 : (tensor<?xi64>) -> tensor<?xi64>
// CHECK-NEXT:    %q = graph.add %p, %n : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
// CHECK-NEXT:    %g = graph.gather %all, %q axis 1 : (tensor<2x?x8xf32>, tensor<?xi64>) -> tensor<2x?x8xf32>
// GENERIC-LABEL: sym_name = "run_time_size_of"
// GENERIC:         "graph.size_of"(%past) <{dim = 1 : i64}> : (tensor<2x?x8xf32>) -> tensor<i64>
func.func @run_time_size_of(%past: tensor<2x?x8xf32>, %ids: tensor<?xi64>, %all: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  %n = graph.size_of %past dim 1 : (tensor<2x?x8xf32>) -> tensor<i64>
  %p = graph.iota %ids dim 0 : (tensor<?xi64>) -> tensor<?xi64>
  %q = graph.add %p, %n : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %g = graph.gather %all, %q axis 1 : (tensor<2x?x8xf32>, tensor<?xi64>) -> tensor<2x?x8xf32>
  func.return %g : tensor<2x?x8xf32>
}

// CHECK-LABEL: func.func @gather_scatter_tile
// CHECK-NEXT:    %g = graph.gather_elements %data, %idx axis 1 : (tensor<5x4xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
// CHECK-NEXT:    %s = graph.scatter_nd %data, %rows, %upd reduction "none" : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %a = graph.scatter_nd %data, %rows, %upd reduction "add" : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %t = graph.tile %data [2, 1] : (tensor<5x4xf32>) -> tensor<10x4xf32>
// GENERIC-LABEL: sym_name = "gather_scatter_tile"
// GENERIC:         "graph.gather_elements"(%data, %idx) <{axis = 1 : i64}> : (tensor<5x4xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
// GENERIC:         "graph.scatter_nd"(%data, %rows, %upd) <{reduction = "none"}> : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
// GENERIC:         "graph.tile"(%data) <{repeats = array<i64: 2, 1>}> : (tensor<5x4xf32>) -> tensor<10x4xf32>
func.func @gather_scatter_tile(%data: tensor<5x4xf32>, %idx: tensor<5x2xi64>, %rows: tensor<2x1xi64>, %upd: tensor<2x4xf32>) -> tensor<5x2xf32> {
  %g = graph.gather_elements %data, %idx axis 1 : (tensor<5x4xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  %s = graph.scatter_nd %data, %rows, %upd reduction "none" : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
  %a = graph.scatter_nd %data, %rows, %upd reduction "add" : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
  %t = graph.tile %data [2, 1] : (tensor<5x4xf32>) -> tensor<10x4xf32>
  func.return %g : tensor<5x2xf32>
}

// CHECK-LABEL: func.func @gather_nd
// CHECK-NEXT:    %g = graph.gather_nd %data, %idx batch_dims 0 : (tensor<5x4xf32>, tensor<3x1xi64>) -> tensor<3x4xf32>
// CHECK-NEXT:    %b = graph.gather_nd %data, %rows batch_dims 1 : (tensor<5x4xf32>, tensor<5x1xi64>) -> tensor<5xf32>
// GENERIC-LABEL: sym_name = "gather_nd"
// GENERIC:         "graph.gather_nd"(%data, %idx) <{batch_dims = 0 : i64}> : (tensor<5x4xf32>, tensor<3x1xi64>) -> tensor<3x4xf32>
func.func @gather_nd(%data: tensor<5x4xf32>, %idx: tensor<3x1xi64>, %rows: tensor<5x1xi64>) -> tensor<3x4xf32> {
  %g = graph.gather_nd %data, %idx batch_dims 0 : (tensor<5x4xf32>, tensor<3x1xi64>) -> tensor<3x4xf32>
  %b = graph.gather_nd %data, %rows batch_dims 1 : (tensor<5x4xf32>, tensor<5x1xi64>) -> tensor<5xf32>
  func.return %g : tensor<3x4xf32>
}
