// Round trip of graph.if (regions reading the enclosing values, nested, a constant
// yielded), graph.loop, graph.scan, and their outlined forms graph.cond_call,
// graph.loop_call and graph.scan_call.
// RUN: strato-opt %s | strato-opt | filecheck %s

// CHECK-LABEL: func.func @if_reads_outer_values
// CHECK:      %r = graph.if %c : tensor<i1> -> (tensor<4xf32>) {
// CHECK-NEXT:   %a = graph.relu %x : tensor<4xf32>
// CHECK-NEXT:   graph.yield %a : tensor<4xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT:   graph.yield %x : tensor<4xf32>
// CHECK-NEXT: }
func.func @if_reads_outer_values(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.if %c : tensor<i1> -> (tensor<4xf32>) {
    %a = graph.relu %x : tensor<4xf32>
    graph.yield %a : tensor<4xf32>
  } else {
    graph.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @nested_with_two_results
// CHECK:      %r, %s = graph.if %c : tensor<1xi1> -> (tensor<2xf32>, tensor<2xi64>) {
// CHECK:        %i = graph.if %d : tensor<1x1xi1> -> (tensor<2xf32>) {
// CHECK:        graph.yield %i, %k : tensor<2xf32>, tensor<2xi64>
// CHECK:      } else {
// CHECK:        graph.constant dense<[1, 2]> : tensor<2xi64>
func.func @nested_with_two_results(%c: tensor<1xi1>, %d: tensor<1x1xi1>, %x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xi64>) {
  %r, %s = graph.if %c : tensor<1xi1> -> (tensor<2xf32>, tensor<2xi64>) {
    %i = graph.if %d : tensor<1x1xi1> -> (tensor<2xf32>) {
      %n = graph.neg %x : tensor<2xf32>
      graph.yield %n : tensor<2xf32>
    } else {
      graph.yield %x : tensor<2xf32>
    }
    %k = graph.constant dense<[3, 4]> : tensor<2xi64>
    graph.yield %i, %k : tensor<2xf32>, tensor<2xi64>
  } else {
    %k = graph.constant dense<[1, 2]> : tensor<2xi64>
    graph.yield %x, %k : tensor<2xf32>, tensor<2xi64>
  }
  func.return %r, %s : tensor<2xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @cond_call
// CHECK: %r = graph.cond_call %c, @relu, @same(%x) {arena_offsets = array<i64: -1>} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
func.func @cond_call(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.cond_call %c, @relu, @same(%x) {arena_offsets = array<i64: -1>} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func private @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu %x : tensor<4xf32>
  func.return %a : tensor<4xf32>
}
func.func private @same(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// CHECK-LABEL: func.func @loop
// CHECK:      %r, %k = graph.loop %m, %c inits(%x, %n) : (tensor<1xi64>, tensor<i1>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<i64>) {
// CHECK-NEXT: ^bb0(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>, %t: tensor<i64>):
// CHECK-NEXT:   %a = graph.add %s, %w
// CHECK-NEXT:   graph.yield %go, %a, %i : tensor<i1>, tensor<4xf32>, tensor<i64>
// CHECK-NEXT: }
func.func @loop(%m: tensor<1xi64>, %c: tensor<i1>, %x: tensor<4xf32>, %n: tensor<i64>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %r, %k = graph.loop %m, %c inits(%x, %n) : (tensor<1xi64>, tensor<i1>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<i64>) {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>, %t: tensor<i64>):
    %a = graph.add %s, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %go, %a, %i : tensor<i1>, tensor<4xf32>, tensor<i64>
  }
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @loop_call
// CHECK: %r = graph.loop_call %m, %c, @body inits(%x) captured(%w) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @loop_call(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.loop_call %m, %c, @body inits(%x) captured(%w) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func private @body(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  %a = graph.add %s, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %go, %a : tensor<i1>, tensor<4xf32>
}

// CHECK-LABEL: func.func @scan
// CHECK:      %h, %ys = graph.scan inits(%h0) over(%xs, %ts) : (tensor<4xf32>, tensor<3x4xf32>, tensor<3xi64>) -> (tensor<4xf32>, tensor<3x2x4xf32>) {
// CHECK-NEXT: ^bb0(%s: tensor<4xf32>, %x: tensor<4xf32>, %t: tensor<i64>):
// CHECK-NEXT:   %a = graph.add %s, %x
// CHECK-NEXT:   %r = graph.reshape %a
// CHECK-NEXT:   %p = graph.concat %r, %w axis 0
// CHECK-NEXT:   graph.yield %a, %p : tensor<4xf32>, tensor<2x4xf32>
// CHECK-NEXT: }
func.func @scan(%h0: tensor<4xf32>, %xs: tensor<3x4xf32>, %ts: tensor<3xi64>, %w: tensor<1x4xf32>) -> (tensor<4xf32>, tensor<3x2x4xf32>) {
  %h, %ys = graph.scan inits(%h0) over(%xs, %ts) : (tensor<4xf32>, tensor<3x4xf32>, tensor<3xi64>) -> (tensor<4xf32>, tensor<3x2x4xf32>) {
  ^bb0(%s: tensor<4xf32>, %x: tensor<4xf32>, %t: tensor<i64>):
    %a = graph.add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = graph.reshape %a : (tensor<4xf32>) -> tensor<1x4xf32>
    %p = graph.concat %r, %w axis 0 : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
    graph.yield %a, %p : tensor<4xf32>, tensor<2x4xf32>
  }
  func.return %h, %ys : tensor<4xf32>, tensor<3x2x4xf32>
}

// CHECK-LABEL: func.func @scan_call
// CHECK: %h, %ys = graph.scan_call @scan_body inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
func.func @scan_call(%h0: tensor<4xf32>, %xs: tensor<5x4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>) {
  %h, %ys = graph.scan_call @scan_body inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
  func.return %h, %ys : tensor<4xf32>, tensor<5x4xf32>
}
func.func private @scan_body(%s: tensor<4xf32>, %x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = graph.add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// A scan that stops carries its condition first and runs while it holds.
// CHECK-LABEL: func.func @scan_stops
// CHECK:      %go, %h, %ys = graph.scan stops inits(%go0, %h0) over(%xs) : (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) {
// CHECK-NEXT: ^bb0(%c: tensor<i1>, %s: tensor<4xf32>, %x: tensor<4xf32>):
// CHECK:        graph.yield %more, %a, %a : tensor<i1>, tensor<4xf32>, tensor<4xf32>
// CHECK:      %g2, %h2, %ys2 = graph.scan_call @stopping_body stops inits(%go0, %h0) over(%xs) captured() : (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>)
func.func @scan_stops(%go0: tensor<i1>, %h0: tensor<4xf32>, %xs: tensor<3x4xf32>, %limit: tensor<f32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %go, %h, %ys = graph.scan stops inits(%go0, %h0) over(%xs) : (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) {
  ^bb0(%c: tensor<i1>, %s: tensor<4xf32>, %x: tensor<4xf32>):
    %a = graph.add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = graph.reduce_sum %a [0] : (tensor<4xf32>) -> tensor<f32>
    %more = graph.less %t, %limit : (tensor<f32>, tensor<f32>) -> tensor<i1>
    graph.yield %more, %a, %a : tensor<i1>, tensor<4xf32>, tensor<4xf32>
  }
  %g2, %h2, %ys2 = graph.scan_call @stopping_body stops inits(%go0, %h0) over(%xs) captured() : (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>)
  func.return %ys, %ys2 : tensor<3x4xf32>, tensor<3x4xf32>
}
func.func private @stopping_body(%c: tensor<i1>, %s: tensor<4xf32>, %x: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<4xf32>) {
  func.return %c, %x, %s : tensor<i1>, tensor<4xf32>, tensor<4xf32>
}
