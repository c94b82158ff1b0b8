// Round trip of equal, where, cast and bitcast, over the element types beyond f32.
// RUN: strato-opt %s | strato-opt | filecheck %s

// CHECK-LABEL: func.func @equal_broadcast
// CHECK: graph.equal %a, %b : (tensor<3x4xui8>, tensor<4xui8>) -> tensor<3x4xi1>
func.func @equal_broadcast(%a: tensor<3x4xui8>, %b: tensor<4xui8>) -> tensor<3x4xi1> {
  %r = graph.equal %a, %b : (tensor<3x4xui8>, tensor<4xui8>) -> tensor<3x4xi1>
  func.return %r : tensor<3x4xi1>
}

// CHECK-LABEL: func.func @where_three_way_broadcast
// CHECK: graph.where %c, %x, %y : (tensor<2x1x5xi1>, tensor<3x1xbf16>, tensor<bf16>) -> tensor<2x3x5xbf16>
func.func @where_three_way_broadcast(%c: tensor<2x1x5xi1>, %x: tensor<3x1xbf16>, %y: tensor<bf16>) -> tensor<2x3x5xbf16> {
  %r = graph.where %c, %x, %y : (tensor<2x1x5xi1>, tensor<3x1xbf16>, tensor<bf16>) -> tensor<2x3x5xbf16>
  func.return %r : tensor<2x3x5xbf16>
}

// CHECK-LABEL: func.func @casts
// CHECK: graph.cast %x : tensor<4xf32> to tensor<4xf16>
// CHECK: graph.cast %x {saturate = false} : tensor<4xf32> to tensor<4xf8E4M3FN>
// CHECK: graph.cast %x {round_mode = "nearest"} : tensor<4xf32> to tensor<4xf8E8M0FNU>
// CHECK: graph.cast %x : tensor<4xf32> to tensor<4xi4>
// CHECK: graph.cast %x : tensor<4xf32> to tensor<4xf4E2M1FN>
// CHECK: graph.cast %x {note = "kept"} : tensor<4xf32> to tensor<4xi1>
func.func @casts(%x: tensor<4xf32>) -> tensor<4xi1> {
  %h = graph.cast %x : tensor<4xf32> to tensor<4xf16>
  %q = graph.cast %x {saturate = false} : tensor<4xf32> to tensor<4xf8E4M3FN>
  %e = graph.cast %x {round_mode = "nearest"} : tensor<4xf32> to tensor<4xf8E8M0FNU>
  %i = graph.cast %x : tensor<4xf32> to tensor<4xi4>
  %f = graph.cast %x : tensor<4xf32> to tensor<4xf4E2M1FN>
  %b = graph.cast %x {note = "kept"} : tensor<4xf32> to tensor<4xi1>
  func.return %b : tensor<4xi1>
}

// CHECK-LABEL: func.func @bitcasts
// CHECK: graph.bitcast %x : tensor<4xf32> to tensor<4xi32>
// CHECK: graph.bitcast %h : tensor<4xbf16> to tensor<4xf16>
// CHECK: graph.bitcast %b : tensor<4xi1> to tensor<4xf8E4M3FN>
func.func @bitcasts(%x: tensor<4xf32>, %h: tensor<4xbf16>, %b: tensor<4xi1>) -> tensor<4xf8E4M3FN> {
  %i = graph.bitcast %x : tensor<4xf32> to tensor<4xi32>
  %f = graph.bitcast %h : tensor<4xbf16> to tensor<4xf16>
  %q = graph.bitcast %b : tensor<4xi1> to tensor<4xf8E4M3FN>
  func.return %q : tensor<4xf8E4M3FN>
}

// CHECK-LABEL: func.func @unsigned_and_small_constants
// CHECK: graph.constant dense<[0, 200, 255]> : tensor<3xui8>
// CHECK: graph.constant dense<[true, false]> : tensor<2xi1>
func.func @unsigned_and_small_constants() -> (tensor<3xui8>, tensor<2xi1>) {
  %u = graph.constant dense<[0, 200, 255]> : tensor<3xui8>
  %b = graph.constant dense<[true, false]> : tensor<2xi1>
  func.return %u, %b : tensor<3xui8>, tensor<2xi1>
}

// CHECK-LABEL: func.func @comparisons
// CHECK-NEXT:    %lt = graph.less %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
// CHECK-NEXT:    %le = graph.less_equal %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
// CHECK-NEXT:    %gt = graph.greater %u, %v : (tensor<4xui16>, tensor<ui16>) -> tensor<4xi1>
// CHECK-NEXT:    %ge = graph.greater_equal %a, %b {tag} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
func.func @comparisons(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %u: tensor<4xui16>, %v: tensor<ui16>) -> tensor<3x4xi1> {
  %lt = graph.less %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  %le = graph.less_equal %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  %gt = graph.greater %u, %v : (tensor<4xui16>, tensor<ui16>) -> tensor<4xi1>
  %ge = graph.greater_equal %a, %b {tag} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  func.return %ge : tensor<3x4xi1>
}

// CHECK-LABEL: func.func @booleans_and_float_classes
// CHECK-NEXT:    %n = graph.is_nan %x : tensor<3x4xf16> -> tensor<3x4xi1>
// CHECK-NEXT:    %i = graph.is_inf %x : tensor<3x4xf16> -> tensor<3x4xi1>
// CHECK-NEXT:    %p = graph.is_inf %x {detect_negative = false} : tensor<3x4xf16> -> tensor<3x4xi1>
// CHECK-NEXT:    %a = graph.and %n, %m : (tensor<3x4xi1>, tensor<4xi1>) -> tensor<3x4xi1>
// CHECK-NEXT:    %o = graph.or %a, %i : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
// CHECK-NEXT:    %e = graph.xor %o, %p : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
// CHECK-NEXT:    %r = graph.not %e : tensor<3x4xi1>
func.func @booleans_and_float_classes(%x: tensor<3x4xf16>, %m: tensor<4xi1>) -> tensor<3x4xi1> {
  %n = graph.is_nan %x : tensor<3x4xf16> -> tensor<3x4xi1>
  %i = graph.is_inf %x : tensor<3x4xf16> -> tensor<3x4xi1>
  %p = graph.is_inf %x {detect_negative = false} : tensor<3x4xf16> -> tensor<3x4xi1>
  %a = graph.and %n, %m : (tensor<3x4xi1>, tensor<4xi1>) -> tensor<3x4xi1>
  %o = graph.or %a, %i : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
  %e = graph.xor %o, %p : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
  %r = graph.not %e : tensor<3x4xi1>
  func.return %r : tensor<3x4xi1>
}

// CHECK-LABEL: func.func @bitwise
// CHECK-NEXT:    %n = graph.bitwise_and %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT:    %o = graph.bitwise_or %n, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT:    %x = graph.bitwise_xor %o, %a : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT:    %c = graph.bitwise_not %x : tensor<3x4xi32>
// CHECK-NEXT:    %l = graph.bit_shift %c, %b direction "left" : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT:    %r = graph.bit_shift %u, %v direction "right" : (tensor<2xui8>, tensor<ui8>) -> tensor<2xui8>
func.func @bitwise(%a: tensor<3x4xi32>, %b: tensor<4xi32>, %u: tensor<2xui8>, %v: tensor<ui8>) -> tensor<3x4xi32> {
  %n = graph.bitwise_and %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
  %o = graph.bitwise_or %n, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
  %x = graph.bitwise_xor %o, %a : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
  %c = graph.bitwise_not %x : tensor<3x4xi32>
  %l = graph.bit_shift %c, %b direction "left" : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
  %r = graph.bit_shift %u, %v direction "right" : (tensor<2xui8>, tensor<ui8>) -> tensor<2xui8>
  func.return %l : tensor<3x4xi32>
}

// Comparisons, casts, class tests and selections take run-time dimensions (a mask over
// batch and sequence).
// CHECK-LABEL: func.func @run_time_mask
// CHECK-NEXT:    %f = graph.cast %m : tensor<?x?xi64> to tensor<?x?xf32>
// CHECK-NEXT:    %z = graph.equal %f, %zero : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xi1>
// CHECK-NEXT:    %n = graph.is_nan %f : tensor<?x?xf32> -> tensor<?x?xi1>
// CHECK-NEXT:    %o = graph.or %z, %n : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
// CHECK-NEXT:    %w = graph.where %o, %zero, %f : (tensor<?x?xi1>, tensor<f32>, tensor<?x?xf32>) -> tensor<?x?xf32>
func.func @run_time_mask(%m: tensor<?x?xi64>, %zero: tensor<f32>) -> tensor<?x?xf32> {
  %f = graph.cast %m : tensor<?x?xi64> to tensor<?x?xf32>
  %z = graph.equal %f, %zero : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xi1>
  %n = graph.is_nan %f : tensor<?x?xf32> -> tensor<?x?xi1>
  %o = graph.or %z, %n : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %w = graph.where %o, %zero, %f : (tensor<?x?xi1>, tensor<f32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  func.return %w : tensor<?x?xf32>
}
