// Round trip of the reductions: custom form, custom form reparsed (stable text), and
// the generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %s = graph.reduce_sum %a [1] keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %m = graph.reduce_mean %a [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %x = graph.reduce_max %a [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %k = graph.reduce_max %a [0, 1, 2] keepdims : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:    %i = graph.reduce_sum %b [0] : (tensor<5xi32>) -> tensor<i32>
// GENERIC-LABEL: sym_name = "reductions"
// GENERIC:         "graph.reduce_sum"(%a) <{axes = array<i64: 1>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// GENERIC:         "graph.reduce_mean"(%a) <{axes = array<i64: 0, 2>}> : (tensor<2x3x4xf32>) -> tensor<3xf32>
// GENERIC:         "graph.reduce_max"(%a) <{axes = array<i64: 0, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<f32>
func.func @reductions(%a: tensor<2x3x4xf32>, %b: tensor<5xi32>) -> tensor<3xf32> {
  %s = graph.reduce_sum %a [1] keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %m = graph.reduce_mean %a [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %x = graph.reduce_max %a [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  %k = graph.reduce_max %a [0, 1, 2] keepdims : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %i = graph.reduce_sum %b [0] : (tensor<5xi32>) -> tensor<i32>
  func.return %m : tensor<3xf32>
}

// CHECK-LABEL: func.func @more_reductions
// CHECK-NEXT:    %0 = graph.reduce_min %a [1] : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %1 = graph.reduce_prod %a [0, 2] keepdims : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:    %2 = graph.reduce_l1 %a [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.reduce_l2 %a [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.reduce_sum_square %b [0] : (tensor<5xi32>) -> tensor<i32>
// CHECK-NEXT:    %5 = graph.reduce_log_sum_exp %a [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %6 = graph.arg_max %a axis 1 keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT:    %7 = graph.arg_min %b axis 0 select_last_index : (tensor<5xi32>) -> tensor<i64>
// CHECK-NEXT:    %v, %vi = graph.top_k %a axis 2 k 3 largest : (tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x3xi64>)
// CHECK-NEXT:    %w, %wi = graph.top_k %b axis 0 k 1 : (tensor<5xi32>) -> (tensor<1xi32>, tensor<1xi64>)
// CHECK-NEXT:    %c = graph.cumsum %a axis 1 : tensor<2x3x4xf32>
// CHECK-NEXT:    %d = graph.cumsum %b axis 0 exclusive reverse : tensor<5xi32>
// CHECK-NEXT:    %e = graph.cumprod %a axis 2 reverse : tensor<2x3x4xf32>
// GENERIC-LABEL: sym_name = "more_reductions"
// GENERIC:         "graph.arg_max"(%a) <{axis = 1 : i64, keepdims}> : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// GENERIC:         "graph.arg_min"(%b) <{axis = 0 : i64, select_last_index}> : (tensor<5xi32>) -> tensor<i64>
// GENERIC:         "graph.top_k"(%a) <{axis = 2 : i64, k = 3 : i64, largest}> : (tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x3xi64>)
// GENERIC:         "graph.cumsum"(%b) <{axis = 0 : i64, exclusive, reverse}> : (tensor<5xi32>) -> tensor<5xi32>
func.func @more_reductions(%a: tensor<2x3x4xf32>, %b: tensor<5xi32>) {
  %0 = graph.reduce_min %a [1] : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %1 = graph.reduce_prod %a [0, 2] keepdims : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %2 = graph.reduce_l1 %a [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %3 = graph.reduce_l2 %a [2] : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %4 = graph.reduce_sum_square %b [0] : (tensor<5xi32>) -> tensor<i32>
  %5 = graph.reduce_log_sum_exp %a [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  %6 = graph.arg_max %a axis 1 keepdims : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  %7 = graph.arg_min %b axis 0 select_last_index : (tensor<5xi32>) -> tensor<i64>
  %v, %vi = graph.top_k %a axis 2 k 3 largest : (tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x3xi64>)
  %w, %wi = graph.top_k %b axis 0 k 1 : (tensor<5xi32>) -> (tensor<1xi32>, tensor<1xi64>)
  %c = graph.cumsum %a axis 1 : tensor<2x3x4xf32>
  %d = graph.cumsum %b axis 0 exclusive reverse : tensor<5xi32>
  %e = graph.cumprod %a axis 2 reverse : tensor<2x3x4xf32>
  func.return
}

// A running sum of run-time dimensions, along one of them (forward or in reverse) or a
// static one.
// CHECK-LABEL: func.func @run_time_running_sums
// CHECK-NEXT:    %p = graph.cumsum %m axis 1 : tensor<?x?xi64>
// CHECK-NEXT:    %q = graph.cumsum %x axis 1 exclusive reverse : tensor<?x4xf32>
// CHECK-NEXT:    %r = graph.cumsum %m axis 1 reverse : tensor<?x?xi64>
// CHECK-NEXT:    %s = graph.cumsum %x axis 0 reverse : tensor<?x4xf32>
func.func @run_time_running_sums(%m: tensor<?x?xi64>, %x: tensor<?x4xf32>) {
  %p = graph.cumsum %m axis 1 : tensor<?x?xi64>
  %q = graph.cumsum %x axis 1 exclusive reverse : tensor<?x4xf32>
  %r = graph.cumsum %m axis 1 reverse : tensor<?x?xi64>
  %s = graph.cumsum %x axis 0 reverse : tensor<?x4xf32>
  func.return
}
