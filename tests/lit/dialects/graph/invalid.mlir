// Every verifier error of the graph ops round-tripped in ops.mlir, and of the rules every
// graph op shares, one case a chunk (the operator families with files of their own have
// their own *-invalid.mlir).
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- shared by every operator ---

func.func @int_operand(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.relu' expects float tensors, got tensor<4xi32>}}
  %r = graph.relu %a : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

func.func @dynamic_operand(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.add' result shape [2, 4] does not match the inferred shape [?, 4]}}
  %r = graph.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

func.func @dynamic_result(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'graph.add' result dimension 0 is of run-time size, but no operand dimension gives it}}
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
  // expected-error @+1 {{'graph.yield' expects parent op to be one of 'graph.fused', 'graph.if'}}
  graph.yield %x : tensor<4xf32>
}

// -----

// A run-time (?) dimension never broadcasts against a static one.
func.func @run_time_against_static(%a: tensor<?x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.add' operand shapes}}
  %r = graph.add %a, %b : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

func.func @run_time_weight(%a: tensor<?x3xf32>, %w: tensor<?x3xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'graph.dense' weight and bias take static shapes, got tensor<?x3xf32>}}
  %r = graph.dense %a, %w : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}

// -----

// An op whose strategy needs static shapes says so.
func.func @run_time_tile(%a: tensor<?x3xf32>) -> tensor<?x6xf32> {
  // expected-error @+1 {{'graph.tile' requires static shapes, got tensor<?x3xf32>}}
  %r = graph.tile %a [1, 2] : (tensor<?x3xf32>) -> tensor<?x6xf32>
  func.return %r : tensor<?x6xf32>
}

// -----

// A reshape keeps the run-time dimensions, and those before them, where they are.
func.func @run_time_flatten(%a: tensor<?x3xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'graph.reshape' of run-time dimensions keeps them, in order, and reshapes each stretch of static dimensions around them to as many elements: [?, 3] to [?]}}
  %r = graph.reshape %a : (tensor<?x3xf32>) -> tensor<?xf32>
  func.return %r : tensor<?xf32>
}

// -----

func.func @run_time_moved(%a: tensor<?x4xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'graph.reshape' of run-time dimensions keeps them, in order, and reshapes each stretch of static dimensions around them to as many elements: [?, 4] to [4, ?]}}
  %r = graph.reshape %a : (tensor<?x4xf32>) -> tensor<4x?xf32>
  func.return %r : tensor<4x?xf32>
}

// -----

// A run-time number of features meets the weight's static one.
func.func @run_time_features(%a: tensor<2x?xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.dense' input features ? differ from weight features 3}}
  %r = graph.dense %a, %w : (tensor<2x?xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
