// Every verifier error of graph.if, graph.cond_call, graph.loop and graph.loop_call,
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
