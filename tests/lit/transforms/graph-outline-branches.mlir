// RUN: strato-opt %s --split-input-file -p graph-outline-branches | filecheck %s

// Each region becomes a private function of the values the regions read from outside
// (in order of first use; the same arguments for both); a constant a region reads is
// copied into its function; graph.yield becomes func.return.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %w = graph.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %r = graph.cond_call %c, @main_if0_then, @main_if0_else(%x, %y) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %r : tensor<4xf32>
// CHECK:       func.func private @main_if0_then(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %w = graph.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %a = graph.mul %x, %w
// CHECK-NEXT:    %b = graph.add %a, %y
// CHECK-NEXT:    func.return %b : tensor<4xf32>
// CHECK:       func.func private @main_if0_else(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.constant dense<2.0> : tensor<4xf32>
  %r = graph.if %c : tensor<i1> -> (tensor<4xf32>) {
    %a = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = graph.add %a, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %b : tensor<4xf32>
  } else {
    graph.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// A graph.if in a region is outlined from the function its region became; names do not
// clash with functions already in the module.
// CHECK-LABEL: func.func @f
// CHECK-NEXT:    graph.cond_call %c, @f_if1_then, @f_if1_else(%d, %x)
// CHECK:       func.func private @f_if1_then(%d: tensor<1xi1>, %x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    %i = graph.cond_call %d, @f_if1_then_if0_then, @f_if1_then_if0_else(%x)
// CHECK:       func.func private @f_if1_then_if0_then(%x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    %n = graph.neg %x
// CHECK:       func.func private @f_if1_then_if0_else(%x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    func.return %x
// CHECK:       func.func private @f_if1_else(%d: tensor<1xi1>, %x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    %m = graph.relu %x
// CHECK:       func.func private @f_if0_then
func.func @f(%c: tensor<i1>, %d: tensor<1xi1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = graph.if %c : tensor<i1> -> (tensor<2xf32>) {
    %i = graph.if %d : tensor<1xi1> -> (tensor<2xf32>) {
      %n = graph.neg %x : tensor<2xf32>
      graph.yield %n : tensor<2xf32>
    } else {
      graph.yield %x : tensor<2xf32>
    }
    graph.yield %i : tensor<2xf32>
  } else {
    %m = graph.relu %x : tensor<2xf32>
    graph.yield %m : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}
func.func private @f_if0_then(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}

// -----

// A graph.loop's body becomes a function of the iteration number, the condition, the
// carried values and then the values it reads from outside; it returns the next
// condition and carried values.
// CHECK-LABEL: func.func @loop
// CHECK:         %r = graph.loop_call %m, %c, @loop_loop0_body inits(%x) captured(%w) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK:       func.func private @loop_loop0_body(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
// CHECK-NEXT:    %half = graph.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-NEXT:    %a = graph.mul %s, %half
// CHECK-NEXT:    %b = graph.add %a, %w
// CHECK-NEXT:    func.return %go, %b : tensor<i1>, tensor<4xf32>
func.func @loop(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %half = graph.constant dense<0.5> : tensor<4xf32>
  %r = graph.loop %m, %c inits(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>):
    %a = graph.mul %s, %half : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = graph.add %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %go, %b : tensor<i1>, tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// A graph.scan's body becomes a function of the carried values, a position of each
// scanned tensor and then the values it reads from outside; a graph.if in the body is
// outlined in turn from that function.
// CHECK-LABEL: func.func @scan
// CHECK:         %h, %ys = graph.scan_call @scan_scan0_body inits(%h0) over(%xs) captured(%c, %w) : (tensor<4xf32>, tensor<6x4xf32>, tensor<i1>, tensor<4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>)
// CHECK:       func.func private @scan_scan0_body(%s: tensor<4xf32>, %x: tensor<4xf32>, %c: tensor<i1>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:    %a = graph.add %s, %x
// CHECK-NEXT:    %b = graph.cond_call %c, @scan_scan0_body_if0_then, @scan_scan0_body_if0_else(%a, %w)
// CHECK-NEXT:    func.return %b, %a : tensor<4xf32>, tensor<4xf32>
// CHECK:       func.func private @scan_scan0_body_if0_then(%a: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
func.func @scan(%h0: tensor<4xf32>, %xs: tensor<6x4xf32>, %w: tensor<4xf32>, %c: tensor<i1>) -> (tensor<4xf32>, tensor<6x4xf32>) {
  %h, %ys = graph.scan inits(%h0) over(%xs) : (tensor<4xf32>, tensor<6x4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>) {
  ^bb0(%s: tensor<4xf32>, %x: tensor<4xf32>):
    %a = graph.add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b = graph.if %c : tensor<i1> -> (tensor<4xf32>) {
      %m = graph.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      graph.yield %m : tensor<4xf32>
    } else {
      graph.yield %a : tensor<4xf32>
    }
    graph.yield %b, %a : tensor<4xf32>, tensor<4xf32>
  }
  func.return %h, %ys : tensor<4xf32>, tensor<6x4xf32>
}
