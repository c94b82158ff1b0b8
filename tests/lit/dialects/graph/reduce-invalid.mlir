// Every verifier error of the reductions, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @no_axes(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.reduce_sum' needs at least one axis}}
  %r = graph.reduce_sum %a [] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @unsorted_axes(%a: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.reduce_max' axes [1, 0] must be increasing without repeats}}
  %r = graph.reduce_max %a [1, 0] : (tensor<2x3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// -----

func.func @repeated_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.reduce_mean' axes [1, 1] must be increasing without repeats}}
  %r = graph.reduce_mean %a [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @axis_too_large(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.reduce_sum' axes [2] are out of range for rank 2}}
  %r = graph.reduce_sum %a [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @negative_axis(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.reduce_sum' axes [-1] are out of range for rank 2}}
  %r = graph.reduce_sum %a [-1] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @keepdims_result(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.reduce_sum' result shape [2] does not match the inferred shape [2, 1]}}
  %r = graph.reduce_sum %a [1] keepdims : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @element_type(%a: tensor<2x3xf32>) -> tensor<2xf16> {
  // expected-error @+1 {{'graph.reduce_max' operand element type f32 differs from result element type f16}}
  %r = graph.reduce_max %a [1] : (tensor<2x3xf32>) -> tensor<2xf16>
  func.return %r : tensor<2xf16>
}

// -----

func.func @axes_type(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{Expected attribute i64 but got i32}}
  %r = "graph.reduce_sum"(%a) <{axes = array<i32: 1>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @l2_of_integers(%a: tensor<2x3xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'graph.reduce_l2' expects float tensors, got tensor<2x3xi32>}}
  %r = graph.reduce_l2 %a [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}

// -----

func.func @arg_axis(%a: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'graph.arg_max' axis 2 is out of range for rank 2}}
  %r = graph.arg_max %a axis 2 : (tensor<2x3xf32>) -> tensor<2xi64>
  func.return %r : tensor<2xi64>
}

// -----

func.func @arg_result_type(%a: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'graph.arg_min' result must be an i64 tensor, got tensor<2xi32>}}
  %r = graph.arg_min %a axis 1 : (tensor<2x3xf32>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}

// -----

func.func @arg_empty_axis(%a: tensor<2x0xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'graph.arg_max' cannot reduce the empty axis 1}}
  %r = graph.arg_max %a axis 1 : (tensor<2x0xf32>) -> tensor<2xi64>
  func.return %r : tensor<2xi64>
}

// -----

func.func @top_k_too_many(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.top_k' k 4 is not in [0, 3] (the size of axis 1)}}
  %v, %i = graph.top_k %a axis 1 k 4 largest : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  func.return
}

// -----

func.func @top_k_index_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.top_k' indices must be a tensor of i64 of shape [2, 2], got tensor<2x2xi32>}}
  %v, %i = graph.top_k %a axis 1 k 2 : (tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  func.return
}

// -----

func.func @cumsum_axis_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.cumsum' axis 2 is out of range for rank 2}}
  %c = graph.cumsum %a axis 2 : tensor<2x3xf32>
  func.return
}

