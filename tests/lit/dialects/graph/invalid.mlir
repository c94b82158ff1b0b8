// Every verifier error of the graph ops round-tripped in ops.mlir, one case a chunk (the
// operator families with files of their own have their own *-invalid.mlir).
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- shared by every operator ---

func.func @int_operand(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.relu' expects float tensors, got tensor<4xi32>}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @dynamic_operand(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.add' requires static shapes, got tensor<?x4xf32>}}
  %r = graph.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

func.func @dynamic_result(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'graph.add' requires static shapes, got tensor<?x4xf32>}}
  %r = graph.add %a, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}

// -----

func.func @element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.add' operand element type f64 differs from result element type f32}}
  %r = graph.add %a, %b : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @result_shape(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'graph.matmul' result shape [4, 4] does not match the inferred shape [4, 3]}}
  %r = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// -----

func.func @not_a_tensor(%a: memref<4xf32>) {
  // expected-error @+1 {{operand 'input' at position 0 does not verify: memref<4xf32> should be of base attribute tensor}}
  %r = "graph.relu"(%a) : (memref<4xf32>) -> tensor<4xf32>
  func.return
}

// --- graph.constant ---

// -----

func.func @constant_type() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.constant' value type tensor<2xf32> differs from result type tensor<4xf32>}}
  %c = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

func.func @constant_dynamic() -> tensor<?xf32> {
  // expected-error @+1 {{'graph.constant' value type tensor<2xf32> differs from result type tensor<?xf32>}}
  %c = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<?xf32>
  func.return %c : tensor<?xf32>
}

// -----

func.func @constant_not_dense() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.constant' expects a dense elements attribute}}
  %c = graph.constant 1.0 : f32
  func.return %c : tensor<4xf32>
}

// --- element-wise ---

// -----

func.func @unary_type(%a: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{result 'result' at position 0 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<2x2xf32>}}
  %r = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}

// -----

func.func @no_broadcast(%a: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.mul' operand shapes [4, 8] and [4] do not broadcast}}
  %r = graph.mul %a, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

func.func @broadcast_result(%a: tensor<4x1xf32>, %b: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'graph.add' result shape [4, 1] does not match the inferred shape [4, 8]}}
  %r = graph.add %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  func.return %r : tensor<4x1xf32>
}

// --- graph.transpose ---

// -----

func.func @perm_length(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'graph.transpose' perm [1, 0, 2] is not a permutation of 2 dimensions}}
  %t = graph.transpose %a [1, 0, 2] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}

// -----

func.func @perm_repeat(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'graph.transpose' perm [1, 1] is not a permutation of 2 dimensions}}
  %t = graph.transpose %a [1, 1] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}

// -----

func.func @transpose_result(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.transpose' result shape [4, 8] does not match the inferred shape [8, 4]}}
  %t = graph.transpose %a [1, 0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}

// -----

func.func @perm_element_type(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{Expected attribute i64 but got i32}}
  %t = "graph.transpose"(%a) <{perm = array<i32: 1, 0>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}

// -----

func.func @perm_missing(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{property 'perm' expected in operation 'graph.transpose'}}
  %t = "graph.transpose"(%a) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}

// --- graph.matmul ---

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.matmul' operands must have rank >= 2}}
  %r = graph.matmul %a, %b : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.matmul' contraction dimensions differ: 8 and 7}}
  %r = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error @+1 {{'graph.matmul' batch dimensions [2] and [3] do not broadcast}}
  %r = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return %r : tensor<2x4x5xf32>
}

// --- graph.dense ---

// -----

func.func @dense_input_rank(%x: tensor<f32>, %w: tensor<3x1xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.dense' input must have rank >= 1}}
  %r = graph.dense %x, %w : (tensor<f32>, tensor<3x1xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

func.func @dense_weight_rank(%x: tensor<2x8xf32>, %w: tensor<3x8x1xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.dense' weight must have rank 2, got rank 3}}
  %r = graph.dense %x, %w : (tensor<2x8xf32>, tensor<3x8x1xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @dense_features(%x: tensor<2x8xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.dense' input features 8 differ from weight features 4}}
  %r = graph.dense %x, %w : (tensor<2x8xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @dense_bias(%x: tensor<2x8xf32>, %w: tensor<3x8xf32>, %b: tensor<8xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.dense' bias must have shape [3], got [8]}}
  %r = graph.dense %x, %w, %b : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<8xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @dense_result(%x: tensor<2x8xf32>, %w: tensor<3x8xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'graph.dense' result shape [3, 2] does not match the inferred shape [2, 3]}}
  %r = graph.dense %x, %w : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

// --- graph.fused and graph.yield ---

// -----

func.func @fused_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fused' kind 'elementwise' is not a pattern kind}}
  %r = "graph.fused"(%x) <{label = "g", kind = "elementwise"}> ({
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @fused_arguments(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fused' body argument types must match the operand types}}
  %r = graph.fused "g" injective (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    %b = graph.relu %a : tensor<2x2xf32>
    graph.yield %b : tensor<2x2xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @fused_yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fused' yielded types must match the result types}}
  %r = graph.fused "g" injective (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @fused_terminator(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fused' body must end with graph.yield}}
  %r = graph.fused "g" injective (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    llvm.unreachable
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @fused_not_isolated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent: ReluOp(%b = graph.relu %x : tensor<4xf32>)}}
  %r = graph.fused "g" injective (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %b = graph.relu %x : tensor<4xf32>
    graph.yield %b : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.yield' expects parent op 'graph.fused'}}
  graph.yield %x : tensor<4xf32>
}

// --- graph.reshape ---

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'graph.reshape' cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)}}
  %r = graph.reshape %a : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}

// -----

func.func @reshape_element_type(%a: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'graph.reshape' operand element type f32 differs from result element type f16}}
  %r = graph.reshape %a : (tensor<2x3xf32>) -> tensor<6xf16>
  func.return %r : tensor<6xf16>
}

// --- graph.concat ---

// -----

func.func @concat_no_input() -> tensor<2xf32> {
  // expected-error @+1 {{'graph.concat' needs at least one input}}
  %c = "graph.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.concat' axis 2 is out of range for rank 2 (expected 0 to 1)}}
  %c = graph.concat %a axis 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.concat' input shapes [2, 3] and [3, 3] differ outside axis 1}}
  %c = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'graph.concat' result shape [2, 5] does not match the inferred shape [2, 6]}}
  %c = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return %c : tensor<2x5xf32>
}

// --- graph.split ---

// -----

func.func @split_no_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.split' needs at least one result}}
  "graph.split"(%a) <{axis = 0 : i64}> : (tensor<4xf32>) -> ()
  func.return
}

// -----

func.func @split_axis(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.split' axis 1 is out of range for rank 1 (expected 0 to 0)}}
  %s = graph.split %a axis 1 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// -----

func.func @split_element_type(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.split' result 1 element type f16 differs from the input's f32}}
  %s, %t = graph.split %a axis 0 : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf16>)
  func.return %s : tensor<2xf32>
}

// -----

func.func @split_shape(%a: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.split' result 1 shape [2, 2] differs from the input shape [4, 3] outside axis 0}}
  %s, %t = graph.split %a axis 0 : (tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  func.return %s : tensor<2x3xf32>
}

// -----

func.func @split_sizes(%a: tensor<5xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.split' result sizes [2, 2] along axis 0 do not add up to the input's 5}}
  %s, %t = graph.split %a axis 0 : (tensor<5xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return %s : tensor<2xf32>
}

// --- graph.slice ---

// -----

func.func @slice_rank(%a: tensor<4x4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'graph.slice' needs one start and one step per dimension of the rank-2 input and a rank-2 result, got 1 starts, 2 steps and a rank-2 result}}
  %s = graph.slice %a starts [0] steps [1, 1] : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return %s : tensor<2x2xf32>
}

// -----

func.func @slice_zero_step(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.slice' step of dimension 0 is 0}}
  %s = graph.slice %a starts [0] steps [0] : (tensor<4xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}

// -----

func.func @slice_bounds(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.slice' dimension 0 reads indices 1 to 5, outside [0, 4)}}
  %s = graph.slice %a starts [1] steps [2] : (tensor<4xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}

// --- graph.pad ---

// -----

func.func @pad_mode(%a: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' mode 'mirror' is not one of constant, reflect, edge, wrap}}
  %p = graph.pad %a low [1] high [1] mode "mirror" : (tensor<4xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_value(%a: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' value is only allowed in constant mode}}
  %p = graph.pad %a low [1] high [1] mode "edge" value 1.0 : (tensor<4xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_rank(%a: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' needs low and high pads for each of the 1 dimensions, got 2 and 1}}
  %p = graph.pad %a low [1, 0] high [1] mode "constant" : (tensor<4xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_negative(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.pad' pads of dimension 0 must be >= 0, got -1 and 0}}
  %p = graph.pad %a low [-1] high [0] mode "constant" : (tensor<4xf32>) -> tensor<3xf32>
  func.return %p : tensor<3xf32>
}

// -----

func.func @pad_empty(%a: tensor<0xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.pad' cannot pad the empty dimension 0 in edge mode}}
  %p = graph.pad %a low [1] high [1] mode "edge" : (tensor<0xf32>) -> tensor<2xf32>
  func.return %p : tensor<2xf32>
}

// -----

func.func @pad_reflect(%a: tensor<3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' reflect pads of dimension 0 (3, 0) must be smaller than the dimension 3}}
  %p = graph.pad %a low [3] high [0] mode "reflect" : (tensor<3xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_result(%a: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.pad' result shape [4] does not match the inferred shape [5]}}
  %p = graph.pad %a low [1] high [1] mode "constant" : (tensor<3xf32>) -> tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// --- graph.gather ---

// -----

func.func @gather_axis(%a: tensor<4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.gather' axis 1 is out of range for rank 1 (expected 0 to 0)}}
  %g = graph.gather %a, %i axis 1 : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %g : tensor<2xf32>
}

// -----

func.func @gather_float_indices(%a: tensor<4xf32>, %i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.gather' indices must be an integer tensor, got tensor<2xf32>}}
  %g = graph.gather %a, %i axis 0 : (tensor<4xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %g : tensor<2xf32>
}

// -----

func.func @gather_element_type(%a: tensor<4xf32>, %i: tensor<2xi32>) -> tensor<2xf16> {
  // expected-error @+1 {{'graph.gather' result element type f16 differs from the data's f32}}
  %g = graph.gather %a, %i axis 0 : (tensor<4xf32>, tensor<2xi32>) -> tensor<2xf16>
  func.return %g : tensor<2xf16>
}

// -----

func.func @gather_result(%a: tensor<4x5xf32>, %i: tensor<2x3xi64>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.gather' result shape [2, 3] does not match the inferred shape [2, 3, 5]}}
  %g = graph.gather %a, %i axis 0 : (tensor<4x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}

// --- graph.broadcast_to, graph.identity, graph.dropout ---

// -----

func.func @broadcast_to(%a: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.broadcast_to' cannot broadcast [3, 2] to [3, 4]}}
  %b = graph.broadcast_to %a : (tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return %b : tensor<3x4xf32>
}

// -----

func.func @broadcast_to_lower_rank(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.broadcast_to' cannot broadcast [2, 3] to [3]}}
  %b = graph.broadcast_to %a : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %b : tensor<3xf32>
}

// -----

func.func @identity_type(%a: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{result 'result' at position 0 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>}}
  %r = "graph.identity"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.dropout' ratio 1.0 is not in [0, 1)}}
  %r = graph.dropout %a ratio 1.0 : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// --- graph.equal, graph.where, graph.cast ---

// -----

func.func @equal_types(%a: tensor<4xi32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.equal' compares tensors of one element type, got i32 and i64}}
  %r = graph.equal %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// -----

func.func @equal_result(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.equal' result must be a tensor of i1, got tensor<4xi32>}}
  %r = graph.equal %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @equal_broadcast(%a: tensor<4xi32>, %b: tensor<3xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.equal' operand shapes [4] and [3] do not broadcast}}
  %r = graph.equal %a, %b : (tensor<4xi32>, tensor<3xi32>) -> tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// -----

func.func @equal_unknown_type(%a: tensor<4xcomplex<f32>>, %b: tensor<4xcomplex<f32>>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.equal' does not support element type complex<f32>}}
  %r = graph.equal %a, %b : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// -----

func.func @where_condition(%c: tensor<4xi32>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.where' condition must be a tensor of i1, got tensor<4xi32>}}
  %r = graph.where %c, %a, %b : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @where_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.where' choices and result must have one element type, got f32, f16 and f32}}
  %r = graph.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @where_broadcast(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.where' operand shapes [3], [4], [4] do not broadcast}}
  %r = graph.where %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @where_unknown_type(%c: tensor<4xi1>, %a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  // expected-error @+1 {{'graph.where' does not support element type complex<f32>}}
  %r = graph.where %c, %a, %a : (tensor<4xi1>, tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  func.return %r : tensor<4xcomplex<f32>>
}

// -----

func.func @cast_unknown_type(%a: tensor<4xf32>) -> tensor<4xcomplex<f32>> {
  // expected-error @+1 {{'graph.cast' does not support element type complex<f32>}}
  %r = graph.cast %a : tensor<4xf32> to tensor<4xcomplex<f32>>
  func.return %r : tensor<4xcomplex<f32>>
}

// -----

func.func @cast_saturate(%a: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'graph.cast' saturate must be a bool, got 2 : i32}}
  %r = graph.cast %a {saturate = 2 : i32} : tensor<4xf32> to tensor<4xf8E4M3FN>
  func.return %r : tensor<4xf8E4M3FN>
}

// -----

func.func @cast_round_mode(%a: tensor<4xf32>) -> tensor<4xf8E8M0FNU> {
  // expected-error @+1 {{'graph.cast' round_mode 'sideways' is not one of up, down, nearest}}
  %r = graph.cast %a {round_mode = "sideways"} : tensor<4xf32> to tensor<4xf8E8M0FNU>
  func.return %r : tensor<4xf8E8M0FNU>
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) -> tensor<2xf16> {
  // expected-error @+1 {{'graph.cast' result shape [2] does not match the inferred shape [4]}}
  %r = graph.cast %a : tensor<4xf32> to tensor<2xf16>
  func.return %r : tensor<2xf16>
}

// --- graph.reduce_sum, graph.reduce_mean, graph.reduce_max ---

// -----

func.func @reduce_no_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.reduce_sum' needs at least one axis}}
  %r = graph.reduce_sum %a [] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @reduce_axes_order(%a: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.reduce_mean' axes [1, 0] must be increasing without repeats}}
  %r = graph.reduce_mean %a [1, 0] : (tensor<2x3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// -----

func.func @reduce_axes_range(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.reduce_max' axes [2] are out of range for rank 2}}
  %r = graph.reduce_max %a [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @reduce_result(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.reduce_sum' result shape [2] does not match the inferred shape [2, 1]}}
  %r = graph.reduce_sum %a [1] keepdims : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
