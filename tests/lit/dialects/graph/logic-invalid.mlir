// Every verifier error of equal, where, cast and bitcast, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- graph.equal ---

func.func @equal_element_types(%a: tensor<2xi32>, %b: tensor<2xi64>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.equal' compares tensors of one element type, got i32 and i64}}
  %r = graph.equal %a, %b : (tensor<2xi32>, tensor<2xi64>) -> tensor<2xi1>
  func.return %r : tensor<2xi1>
}

// -----

func.func @equal_result_type(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'graph.equal' result must be a tensor of i1, got tensor<2xi32>}}
  %r = graph.equal %a, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}

// -----

func.func @equal_shapes(%a: tensor<2xi32>, %b: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{'graph.equal' operand shapes [2] and [3] do not broadcast}}
  %r = graph.equal %a, %b : (tensor<2xi32>, tensor<3xi32>) -> tensor<3xi1>
  func.return %r : tensor<3xi1>
}

// --- graph.where ---

// -----

func.func @where_condition(%c: tensor<2xi8>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.where' condition must be a tensor of i1, got tensor<2xi8>}}
  %r = graph.where %c, %x, %x : (tensor<2xi8>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @where_choices(%c: tensor<2xi1>, %x: tensor<2xf32>, %y: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.where' choices and result must have one element type, got f32, f16 and f32}}
  %r = graph.where %c, %x, %y : (tensor<2xi1>, tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @where_shapes(%c: tensor<3xi1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.where' operand shapes [3], [2], [2] do not broadcast}}
  %r = graph.where %c, %x, %x : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @where_result_shape(%c: tensor<2xi1>, %x: tensor<2xf32>) -> tensor<1x2xf32> {
  // expected-error @+1 {{'graph.where' result shape [1, 2] does not match the inferred shape [2]}}
  %r = graph.where %c, %x, %x : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %r : tensor<1x2xf32>
}

// --- graph.cast ---

// -----

func.func @cast_shape(%x: tensor<2xf32>) -> tensor<3xf16> {
  // expected-error @+1 {{'graph.cast' result shape [3] does not match the inferred shape [2]}}
  %r = graph.cast %x : tensor<2xf32> to tensor<3xf16>
  func.return %r : tensor<3xf16>
}

// -----

func.func @cast_unknown_type(%x: tensor<2xf32>) -> tensor<2xi3> {
  // expected-error @+1 {{'graph.cast' does not support element type i3}}
  %r = graph.cast %x : tensor<2xf32> to tensor<2xi3>
  func.return %r : tensor<2xi3>
}

// -----

func.func @cast_round_mode(%x: tensor<2xf32>) -> tensor<2xf8E8M0FNU> {
  // expected-error @+1 {{'graph.cast' round_mode 'sideways' is not one of up, down, nearest}}
  %r = graph.cast %x {round_mode = "sideways"} : tensor<2xf32> to tensor<2xf8E8M0FNU>
  func.return %r : tensor<2xf8E8M0FNU>
}

// -----

func.func @cast_saturate(%x: tensor<2xf32>) -> tensor<2xf8E4M3FN> {
  // expected-error @+1 {{'graph.cast' saturate must be a bool, got 2 : i32}}
  %r = graph.cast %x {saturate = 2 : i32} : tensor<2xf32> to tensor<2xf8E4M3FN>
  func.return %r : tensor<2xf8E4M3FN>
}

// -----

func.func @bitcast_dynamic(%x: tensor<?xf32>) -> tensor<?xi32> {
  // expected-error @+1 {{'graph.bitcast' requires static shapes, got tensor<?xf32>}}
  %r = graph.bitcast %x : tensor<?xf32> to tensor<?xi32>
  func.return %r : tensor<?xi32>
}

// -----

func.func @less_of_two_types(%a: tensor<2xi32>, %b: tensor<2xi64>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.less' compares tensors of one element type, got i32 and i64}}
  %r = graph.less %a, %b : (tensor<2xi32>, tensor<2xi64>) -> tensor<2xi1>
  func.return %r : tensor<2xi1>
}

// -----

func.func @and_of_integers(%a: tensor<2xi8>) -> tensor<2xi8> {
  // expected-error @+1 {{'graph.and' result must be a tensor of i1, got tensor<2xi8>}}
  %r = graph.and %a, %a : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
  func.return %r : tensor<2xi8>
}

// -----

func.func @not_of_floats(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.not' result must be a tensor of i1, got tensor<2xf32>}}
  %r = graph.not %a : tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @is_nan_of_integers(%a: tensor<2xi32>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.is_nan' expects float tensors, got tensor<2xi32>}}
  %r = graph.is_nan %a : tensor<2xi32> -> tensor<2xi1>
  func.return %r : tensor<2xi1>
}

// -----

func.func @is_inf_flag(%a: tensor<2xf32>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.is_inf' flags must be bools, got 2 : i32}}
  %r = graph.is_inf %a {detect_positive = 2 : i32} : tensor<2xf32> -> tensor<2xi1>
  func.return %r : tensor<2xi1>
}

// -----

func.func @is_inf_result(%a: tensor<2xf32>) -> tensor<3xi1> {
  // expected-error @+1 {{'graph.is_inf' result shape [3] does not match the inferred shape [2]}}
  %r = graph.is_inf %a : tensor<2xf32> -> tensor<3xi1>
  func.return %r : tensor<3xi1>
}

// -----

func.func @bitwise_of_floats(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.bitwise_and' expects integer tensors, got tensor<2xf32>}}
  %r = graph.bitwise_and %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @bitwise_not_of_bools(%a: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.bitwise_not' expects integer tensors, got tensor<2xi1>}}
  %r = graph.bitwise_not %a : tensor<2xi1>
  func.return %r : tensor<2xi1>
}

// -----

func.func @bit_shift_direction(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'graph.bit_shift' direction must be left or right, got 'up'}}
  %r = graph.bit_shift %a, %a direction "up" : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}

// --- graph.bitcast ---

// -----

func.func @bitcast_width(%x: tensor<2xf32>) -> tensor<2xi16> {
  // expected-error @+1 {{'graph.bitcast' reinterprets f32 (32 bits) as i16 (16 bits): the widths must be equal}}
  %r = graph.bitcast %x : tensor<2xf32> to tensor<2xi16>
  func.return %r : tensor<2xi16>
}

// -----

func.func @bitcast_sub_byte(%x: tensor<2xi4>) -> tensor<2xui4> {
  // expected-error @+1 {{'graph.bitcast' does not reinterpret element type i4}}
  %r = graph.bitcast %x : tensor<2xi4> to tensor<2xui4>
  func.return %r : tensor<2xui4>
}
