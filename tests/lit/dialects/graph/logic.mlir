// Round trip of equal, where and cast, over the element types beyond f32.
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

// CHECK-LABEL: func.func @unsigned_and_small_constants
// CHECK: graph.constant dense<[0, 200, 255]> : tensor<3xui8>
// CHECK: graph.constant dense<[true, false]> : tensor<2xi1>
func.func @unsigned_and_small_constants() -> (tensor<3xui8>, tensor<2xi1>) {
  %u = graph.constant dense<[0, 200, 255]> : tensor<3xui8>
  %b = graph.constant dense<[true, false]> : tensor<2xi1>
  func.return %u, %b : tensor<3xui8>, tensor<2xi1>
}
