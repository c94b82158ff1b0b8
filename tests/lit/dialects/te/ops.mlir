// Round trip of every te op: custom form, custom form reparsed (stable text), and the
// generic form.
// RUN: strato-opt %s | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: te.primitive @dense_relu {
// CHECK-NEXT:    %x = te.placeholder "x" : tensor<1x4xf32>
// CHECK-NEXT:    %w = te.placeholder "w" : tensor<2x4xf32>
// CHECK-NEXT:    %d = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.000000e+00 : tensor<1x2xf32> {
// CHECK-NEXT:      %a = te.read %x[%i, %k] : tensor<1x4xf32>
// CHECK-NEXT:      %b = te.read %w[%j, %k] : tensor<2x4xf32>
// CHECK-NEXT:      %p = arith.mulf %a, %b : f32
// CHECK-NEXT:      te.yield %p : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = te.compute "relu" (%i_1, %j_1) : tensor<1x2xf32> {
// CHECK-NEXT:      %v = te.read %d[%i_1, %j_1] : tensor<1x2xf32>
// CHECK-NEXT:      %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:      te.yield %m : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    te.output %r : tensor<1x2xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "te.primitive"() <{sym_name = "dense_relu"}> ({
// GENERIC-NEXT:    %x = "te.placeholder"() <{name = "x"}> : () -> tensor<1x4xf32>
// GENERIC-NEXT:    %w = "te.placeholder"() <{name = "w"}> : () -> tensor<2x4xf32>
// GENERIC-NEXT:    %d = "te.reduce"() <{stage = "dense", kind = #te<reduce_kind sum>, extents = [#builtin.int<4>], init = 0.000000e+00 : f32}> ({
// GENERIC-NEXT:    ^bb0(%i: index, %j: index, %k: index):
// GENERIC-NEXT:      %a = "te.read"(%x, %i, %k) : (tensor<1x4xf32>, index, index) -> f32
// GENERIC:           "te.yield"(%p) : (f32) -> ()
// GENERIC-NEXT:    }) : () -> tensor<1x2xf32>
// GENERIC-NEXT:    %r = "te.compute"() <{stage = "relu"}> ({
// GENERIC-NEXT:    ^bb0(%i_1: index, %j_1: index):
// GENERIC:           "te.output"(%r) : (tensor<1x2xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<1x4xf32>
  %w = te.placeholder "w" : tensor<2x4xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.0 : tensor<1x2xf32> {
    %a = te.read %x[%i, %k] : tensor<1x4xf32>
    %b = te.read %w[%j, %k] : tensor<2x4xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<1x2xf32> {
    %v = te.read %d[%i, %j] : tensor<1x2xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<1x2xf32>
}

// Several reduction axes, max/min/sum kinds, integer init, rank-0 stages, attributes on
// every op, several outputs.
// CHECK-LABEL: te.primitive @pool attributes {target = "cpu"} {
// CHECK-NEXT:    %x = te.placeholder "x" {layout = "NCHW"} : tensor<1x1x4x4xf32>
// CHECK-NEXT:    %mx = te.reduce "max" max (%n, %c, %h, %w) over (%kh : 2, %kw : 2) init -3.400000e+38 attributes {tag} : tensor<1x1x2x2xf32> {
// CHECK:           %v = te.read %x[%n, %c, %hh, %ww] {note = 1 : i64} : tensor<1x1x4x4xf32>
// CHECK-NEXT:      te.yield %v : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %mn = te.reduce "min" min (%n_1, %c_1) over (%kh_1 : 2) init 1.000000e+30 : tensor<1x1xf32> {
// CHECK:         %cnt = te.reduce "count" sum () over (%k : 16) init 0 : tensor<i32> {
// CHECK-NEXT:      %one = arith.constant 1 : i32
// CHECK-NEXT:      te.yield %one : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    %s = te.compute "scalar" () : tensor<f32> {
// CHECK-NEXT:      %z_1 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      te.yield %z_1 {last} : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    te.output %mx, %mn, %cnt, %s {all} : tensor<1x1x2x2xf32>, tensor<1x1xf32>, tensor<i32>, tensor<f32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "te.primitive"() <{sym_name = "pool"}> ({
// GENERIC:         %mx = "te.reduce"() <{stage = "max", kind = #te<reduce_kind max>, extents = [#builtin.int<2>, #builtin.int<2>], init = -3.400000e+38 : f32}> ({
// GENERIC:         }) {tag} : () -> tensor<1x1x2x2xf32>
// GENERIC:         %cnt = "te.reduce"() <{stage = "count", kind = #te<reduce_kind sum>, extents = [#builtin.int<16>], init = 0 : i32}> ({
// GENERIC:       }) {target = "cpu"} : () -> ()
te.primitive @pool attributes {target = "cpu"} {
  %x = te.placeholder "x" {layout = "NCHW"} : tensor<1x1x4x4xf32>
  %mx = te.reduce "max" max (%n, %c, %h, %w) over (%kh : 2, %kw : 2) init -3.4e38 attributes {tag} : tensor<1x1x2x2xf32> {
    %c2 = arith.constant 2 : index
    %h2 = arith.muli %h, %c2 : index
    %hh = arith.addi %h2, %kh : index
    %w2 = arith.muli %w, %c2 : index
    %ww = arith.addi %w2, %kw : index
    %v = te.read %x[%n, %c, %hh, %ww] {note = 1} : tensor<1x1x4x4xf32>
    te.yield %v : f32
  }
  %mn = te.reduce "min" min (%n, %c) over (%kh : 2) init 1.0e30 : tensor<1x1xf32> {
    %z = arith.constant 0 : index
    %v = te.read %mx[%n, %c, %kh, %z] : tensor<1x1x2x2xf32>
    te.yield %v : f32
  }
  %cnt = te.reduce "count" sum () over (%k : 16) init 0 : tensor<i32> {
    %one = arith.constant 1 : i32
    te.yield %one : i32
  }
  %s = te.compute "scalar" () : tensor<f32> {
    %z = arith.constant 1.0 : f32
    te.yield %z {last} : f32
  }
  te.output %mx, %mn, %cnt, %s {all} : tensor<1x1x2x2xf32>, tensor<1x1xf32>, tensor<i32>, tensor<f32>
}

// Inside a stage an element has its scalar type: signless integers for unsigned tensors,
// f32 for bf16.
// CHECK-LABEL: te.primitive @storage_types {
// CHECK-NEXT:    %q = te.placeholder "q" : tensor<4xui8>
// CHECK-NEXT:    %h = te.placeholder "h" : tensor<4xbf16>
// CHECK-NEXT:    %s = te.reduce "qsum" sum () over (%k : 4) init 0 : tensor<ui8> {
// CHECK-NEXT:      %v = te.read %q[%k] : tensor<4xui8>
// CHECK-NEXT:      te.yield %v : i8
// CHECK-NEXT:    }
// CHECK-NEXT:    %b = te.compute "widen" (%i) : tensor<4xbf16> {
// CHECK-NEXT:      %v_1 = te.read %h[%i] : tensor<4xbf16>
// CHECK-NEXT:      %w = arith.addf %v_1, %v_1 : f32
// CHECK-NEXT:      te.yield %w : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    te.output %s, %b : tensor<ui8>, tensor<4xbf16>
// GENERIC-LABEL: "te.primitive"() <{sym_name = "storage_types"}> ({
// GENERIC:         "te.reduce"() <{stage = "qsum", kind = #te<reduce_kind sum>, extents = [#builtin.int<4>], init = 0 : i8}> ({
// GENERIC-NEXT:    ^bb0(%k: index):
// GENERIC-NEXT:      %v = "te.read"(%q, %k) : (tensor<4xui8>, index) -> i8
// GENERIC:           %v_1 = "te.read"(%h, %i) : (tensor<4xbf16>, index) -> f32
te.primitive @storage_types {
  %q = te.placeholder "q" : tensor<4xui8>
  %h = te.placeholder "h" : tensor<4xbf16>
  %s = te.reduce "qsum" sum () over (%k : 4) init 0 : tensor<ui8> {
    %v = te.read %q[%k] : tensor<4xui8>
    te.yield %v : i8
  }
  %b = te.compute "widen" (%i) : tensor<4xbf16> {
    %v = te.read %h[%i] : tensor<4xbf16>
    %w = arith.addf %v, %v : f32
    te.yield %w : f32
  }
  te.output %s, %b : tensor<ui8>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %y = te.call @dense_relu(%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:    %a, %b, %c, %d = te.call @pool(%p) {note} : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1xf32>, tensor<i32>, tensor<f32>)
// CHECK-NEXT:    func.return %y : tensor<1x2xf32>
// GENERIC-LABEL: sym_name = "main"
// GENERIC:         %y = "te.call"(%x, %w) <{callee = @dense_relu}> : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
// GENERIC-NEXT:    %a, %b, %c, %d = "te.call"(%p) <{callee = @pool}> {note} : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1xf32>, tensor<i32>, tensor<f32>)
func.func @main(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %p: tensor<1x1x4x4xf32>) -> tensor<1x2xf32> {
  %y = te.call @dense_relu(%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %a, %b, %c, %d = te.call @pool(%p) {note} : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1xf32>, tensor<i32>, tensor<f32>)
  func.return %y : tensor<1x2xf32>
}

// CHECK-LABEL: func.func @branching
// CHECK-NEXT:    %y = te.cond_call %c, @main, @main(%x, %w, %p) {arena_offsets = array<i64: 0>} : (tensor<i1>, tensor<1x4xf32>, tensor<2x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2xf32>
// GENERIC-LABEL: sym_name = "branching"
// GENERIC:         %y = "te.cond_call"(%c, %x, %w, %p) <{then_callee = @main, else_callee = @main}> {arena_offsets = array<i64: 0>} : (tensor<i1>, tensor<1x4xf32>, tensor<2x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2xf32>
func.func @branching(%c: tensor<i1>, %x: tensor<1x4xf32>, %w: tensor<2x4xf32>, %p: tensor<1x1x4x4xf32>) -> tensor<1x2xf32> {
  %y = te.cond_call %c, @main, @main(%x, %w, %p) {arena_offsets = array<i64: 0>} : (tensor<i1>, tensor<1x4xf32>, tensor<2x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// CHECK-LABEL: func.func @scanning
// CHECK-NEXT:    %h, %ys = te.scan_call @step inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>), (tensor<5x4xf32>), (tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
// GENERIC-LABEL: sym_name = "scanning"
// GENERIC:         %h, %ys = "te.scan_call"(%h0, %xs, %w) <{body = @step, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
func.func @scanning(%h0: tensor<4xf32>, %xs: tensor<5x4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>) {
  %h, %ys = te.scan_call @step inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>), (tensor<5x4xf32>), (tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
  func.return %h, %ys : tensor<4xf32>, tensor<5x4xf32>
}
func.func private @step(%s: tensor<4xf32>, %x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  func.return %s, %x : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @stopping
// CHECK-NEXT:    %go, %h, %ys = te.scan_call @stop_step stops inits(%go0, %h0) over(%xs) captured() : (tensor<i1>, tensor<4xf32>), (tensor<5x4xf32>), () -> (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>)
// GENERIC-LABEL: sym_name = "stopping"
// GENERIC:         %go, %h, %ys = "te.scan_call"(%go0, %h0, %xs) <{body = @stop_step, stops, operandSegmentSizes = array<i32: 2, 1, 0>}> : (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>)
func.func @stopping(%go0: tensor<i1>, %h0: tensor<4xf32>, %xs: tensor<5x4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>) {
  %go, %h, %ys = te.scan_call @stop_step stops inits(%go0, %h0) over(%xs) captured() : (tensor<i1>, tensor<4xf32>), (tensor<5x4xf32>), () -> (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>)
  func.return %h, %ys : tensor<4xf32>, tensor<5x4xf32>
}
func.func private @stop_step(%c: tensor<i1>, %s: tensor<4xf32>, %x: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<4xf32>) {
  func.return %c, %s, %x : tensor<i1>, tensor<4xf32>, tensor<4xf32>
}

// Run-time sizes: te.size values, given to the placeholders and stages whose tensor
// types have `?` dimensions, in order; the generic form takes them as operands.
// CHECK-LABEL: te.primitive @run_time_rows {
// CHECK-NEXT:    %n = te.size "n" : index
// CHECK-NEXT:    %m = te.size "m" : index
// CHECK-NEXT:    %x = te.placeholder "x" sizes(%n, %m) : tensor<?x4x?xf32>
// CHECK-NEXT:    %s = te.reduce "s" sum (%i, %j) over (%k : 2) init 0.000000e+00 sizes(%n) : tensor<?x4xf32> {
// CHECK:         %r = te.compute "r" (%{{.*}}, %{{.*}}) sizes(%n) : tensor<?x4xf32> {
// GENERIC-LABEL: sym_name = "run_time_rows"
// GENERIC:         %n = "te.size"() <{name = "n"}> : () -> index
// GENERIC:         %x = "te.placeholder"(%n, %m) <{name = "x"}> : (index, index) -> tensor<?x4x?xf32>
te.primitive @run_time_rows {
  %n = te.size "n" : index
  %m = te.size "m" : index
  %x = te.placeholder "x" sizes(%n, %m) : tensor<?x4x?xf32>
  %s = te.reduce "s" sum (%i, %j) over (%k : 2) init 0.0 sizes(%n) : tensor<?x4xf32> {
    %v = te.read %x[%i, %j, %k] : tensor<?x4x?xf32>
    te.yield %v : f32
  }
  %r = te.compute "r" (%i, %j) sizes(%n) : tensor<?x4xf32> {
    %v = te.read %s[%i, %j] : tensor<?x4xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<?x4xf32>
}

// A reduction axis of run-time extent: `over (%k : %m)`; the generic form lists its
// size after the result's.
// CHECK-LABEL: te.primitive @run_time_extent {
// CHECK:         %s = te.reduce "s" max (%i) over (%k : %m) init 0xff800000 sizes(%n) : tensor<?xf32> {
// GENERIC-LABEL: sym_name = "run_time_extent"
// GENERIC:         "te.reduce"(%n, %m) <{stage = "s", kind = #te<reduce_kind max>, extents = [#builtin.int<-9223372036854775808>], init = 0xff800000 : f32}>
te.primitive @run_time_extent {
  %n = te.size "n" : index
  %m = te.size "m" : index
  %x = te.placeholder "x" sizes(%n, %m) : tensor<?x?xf32>
  %s = te.reduce "s" max (%i) over (%k : %m) init 0xFF800000 sizes(%n) : tensor<?xf32> {
    %v = te.read %x[%i, %k] : tensor<?x?xf32>
    te.yield %v : f32
  }
  te.output %s : tensor<?xf32>
}
