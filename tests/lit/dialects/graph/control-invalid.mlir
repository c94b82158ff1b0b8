// Every verifier error of graph.if, graph.cond_call, graph.loop, graph.loop_call,
// graph.scan and graph.scan_call,
// one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @if_condition_not_bool(%c: tensor<f32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.if' condition must be a tensor of i1 holding one element, got tensor<f32>}}
  %r = graph.if %c : tensor<f32> -> (tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  } else {
    graph.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_condition_of_two(%c: tensor<2xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.if' condition must be a tensor of i1 holding one element, got tensor<2xi1>}}
  %r = graph.if %c : tensor<2xi1> -> (tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  } else {
    graph.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_branch_types(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.if' else region yields (tensor<2xf32>), but the op returns (tensor<4xf32>)}}
  %r = graph.if %c : tensor<i1> -> (tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  } else {
    graph.yield %y : tensor<2xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_dynamic_result(%c: tensor<i1>, %x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'graph.if' results must be tensors of static shape, got tensor<?xf32>}}
  %r = graph.if %c : tensor<i1> -> (tensor<?xf32>) {
    graph.yield %x : tensor<?xf32>
  } else {
    graph.yield %x : tensor<?xf32>
  }
  func.return %r : tensor<?xf32>
}

// -----

func.func @cond_call_missing(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.cond_call' calls @nowhere, which is not a function}}
  %r = graph.cond_call %c, @nowhere, @nowhere(%x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @cond_call_type(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.cond_call' calls @two with (tensor<4xf32>) for (tensor<4xf32>), but its type is (tensor<2xf32>) -> tensor<2xf32>}}
  %r = graph.cond_call %c, @two, @two(%x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func private @two(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}

// -----

func.func @loop_trip_count(%m: tensor<i32>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.loop' trip count must be a tensor of i64 holding one element, got tensor<i32>}}
  %r = graph.loop %m, %c inits(%x) : (tensor<i32>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>):
    graph.yield %go, %s : tensor<i1>, tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @loop_body_arguments(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.loop' body takes (tensor<i64>, tensor<i1>, tensor<4xf32>) (iteration, condition, carried values), got (tensor<i64>, tensor<4xf32>)}}
  %r = graph.loop %m, %c inits(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<i64>, %s: tensor<4xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @loop_body_yield(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.loop' body yields (tensor<i1>, tensor<2xf32>), expected (tensor<i1>, tensor<4xf32>) (condition, carried values)}}
  %r = graph.loop %m, %c inits(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>):
    graph.yield %go, %y : tensor<i1>, tensor<2xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @loop_call_type(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.loop_call' calls @body with (tensor<i64>, tensor<i1>, tensor<4xf32>) for (tensor<i1>, tensor<4xf32>), but its type is (tensor<4xf32>) -> tensor<4xf32>}}
  %r = graph.loop_call %m, %c, @body inits(%x) captured() : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func private @body(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

func.func @scan_nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.scan' scans at least one tensor}}
  %r = graph.scan inits(%x) over() : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%s: tensor<4xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @scan_scalar(%x: tensor<4xf32>, %t: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.scan' scanned tensors must have a first axis to scan}}
  %r = graph.scan inits(%x) over(%t) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> {
  ^bb0(%s: tensor<4xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @scan_lengths(%x: tensor<4xf32>, %a: tensor<3x4xf32>, %b: tensor<2x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.scan' scanned tensors have different lengths [2, 3] on their first axis}}
  %r = graph.scan inits(%x) over(%a, %b) : (tensor<4xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<4xf32> {
  ^bb0(%s: tensor<4xf32>, %u: tensor<4xf32>, %v: tensor<4xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @scan_results(%x: tensor<4xf32>, %a: tensor<3x4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.scan' results must start with the carried values' types (tensor<4xf32>)}}
  %r = graph.scan inits(%x) over(%a) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<2xf32> {
  ^bb0(%s: tensor<4xf32>, %u: tensor<4xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

func.func @scan_output_length(%x: tensor<4xf32>, %a: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.scan' scan output 0 is tensor<2x4xf32>: it stacks one row per position, so its first dimension must be the scan's length 3}}
  %r, %y = graph.scan inits(%x) over(%a) : (tensor<4xf32>, tensor<3x4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  ^bb0(%s: tensor<4xf32>, %u: tensor<4xf32>):
    graph.yield %s, %u : tensor<4xf32>, tensor<4xf32>
  }
  func.return %y : tensor<2x4xf32>
}

// -----

func.func @scan_body_arguments(%x: tensor<4xf32>, %a: tensor<3x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.scan' body takes (tensor<4xf32>, tensor<2xf32>) (carried values, then a position of each scanned tensor), got (tensor<4xf32>, tensor<3x2xf32>)}}
  %r = graph.scan inits(%x) over(%a) : (tensor<4xf32>, tensor<3x2xf32>) -> tensor<4xf32> {
  ^bb0(%s: tensor<4xf32>, %u: tensor<3x2xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @scan_body_yield(%x: tensor<4xf32>, %a: tensor<3x2xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  // expected-error @+1 {{'graph.scan' body yields (tensor<4xf32>, tensor<2xf32>), expected (tensor<4xf32>, tensor<4xf32>) (carried values, then a row of each scan output)}}
  %r, %y = graph.scan inits(%x) over(%a) : (tensor<4xf32>, tensor<3x2xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  ^bb0(%s: tensor<4xf32>, %u: tensor<2xf32>):
    graph.yield %s, %u : tensor<4xf32>, tensor<2xf32>
  }
  func.return %r, %y : tensor<4xf32>, tensor<3x4xf32>
}

// -----

func.func @scan_call_type(%x: tensor<4xf32>, %a: tensor<3x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.scan_call' calls @body with (tensor<4xf32>, tensor<4xf32>) for (tensor<4xf32>), but its type is (tensor<4xf32>) -> tensor<4xf32>}}
  %r = graph.scan_call @body inits(%x) over(%a) captured() : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
func.func private @body(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

func.func @scan_stops_without_condition(%x: tensor<4xf32>, %a: tensor<3x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.scan' that stops carries its condition first, a tensor<i1>; got (tensor<4xf32>)}}
  %r = graph.scan stops inits(%x) over(%a) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32> {
  ^bb0(%s: tensor<4xf32>, %u: tensor<4xf32>):
    graph.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
