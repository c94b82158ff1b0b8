// Every verifier error of the te dialect, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- te.placeholder ---

func.func @placeholder_outside() {
  // expected-error @+1 {{'te.placeholder' must be directly inside a te.primitive}}
  %x = te.placeholder "x" : tensor<4xf32>
  func.return
}

// -----

te.primitive @placeholder_in_stage {
  %r = te.compute "r" (%i) : tensor<4xf32> {
    // expected-error @+1 {{'te.placeholder' must be directly inside a te.primitive}}
    %x = te.placeholder "x" : tensor<4xf32>
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @placeholder_not_tensor {
  // expected-error @+1 {{result 'result' at position 0 does not verify: f32 should be of base attribute tensor}}
  %x = "te.placeholder"() <{name = "x"}> : () -> f32
  "te.output"(%x) : (f32) -> ()
}

// --- te.compute and te.reduce ---

// -----

te.primitive @dynamic_stage {
  // expected-error @+1 {{'te.compute' of tensor<?xf32> takes 1 run-time size(s), got 0}}
  %r = te.compute "r" (%i) : tensor<?xf32> {
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }
  te.output %r : tensor<?xf32>
}

// -----

te.primitive @index_count {
  // expected-error @+1 {{'te.compute' body must have 2 index arguments, got 1}}
  %r = te.compute "r" (%i) : tensor<2x4xf32> {
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }
  te.output %r : tensor<2x4xf32>
}

// -----

te.primitive @reduce_index_count {
  %x = te.placeholder "x" : tensor<4x8xf32>
  // expected-error @+1 {{'te.reduce' body must have 2 index arguments, got 1}}
  %r = "te.reduce"() <{stage = "s", kind = #te<reduce_kind sum>, extents = [#builtin.int<8>], init = 0.0 : f32}> ({
  ^bb0(%i: index):
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }) : () -> tensor<4xf32>
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @index_type {
  // expected-error @+1 {{'te.compute' body arguments must be index, got i32}}
  %r = "te.compute"() <{stage = "r"}> ({
  ^bb0(%i: i32):
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }) : () -> tensor<4xf32>
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @stage_terminator {
  // expected-error @+1 {{'te.compute' body must end with te.yield}}
  %r = te.compute "r" (%i) : tensor<4xf32> {
    llvm.unreachable
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @yield_type {
  // expected-error @+1 {{'te.compute' yields f64 but its tensor holds f32}}
  %r = te.compute "r" (%i) : tensor<4xf32> {
    %z = arith.constant 0.0 : f64
    te.yield %z : f64
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @yield_storage_type {
  %q = te.placeholder "q" : tensor<4xui8>
  // expected-error @+1 {{'te.compute' yields ui8 but its tensor holds ui8 (yielded as i8)}}
  %r = "te.compute"() <{stage = "r"}> ({
  ^bb0(%i: index):
    %v = "te.read"(%q, %i) : (tensor<4xui8>, index) -> i8
    %c = "builtin.unrealized_conversion_cast"(%v) : (i8) -> ui8
    "te.yield"(%c) : (ui8) -> ()
  }) : () -> tensor<4xui8>
  te.output %r : tensor<4xui8>
}

// -----

te.primitive @stage_not_tensor {
  // expected-error @+1 {{result 'result' at position 0 does not verify: f32 should be of base attribute tensor}}
  %r = "te.compute"() <{stage = "r"}> ({
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }) : () -> f32
  "te.output"(%r) : (f32) -> ()
}

// -----

te.primitive @no_reduction_axis {
  // expected-error @+1 {{'te.reduce' needs at least one reduction axis}}
  %r = "te.reduce"() <{stage = "s", kind = #te<reduce_kind sum>, extents = [], init = 0.0 : f32}> ({
  ^bb0(%i: index):
    %z = arith.constant 0.0 : f32
    te.yield %z : f32
  }) : () -> tensor<4xf32>
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @zero_extent {
  %x = te.placeholder "x" : tensor<4xf32>
  // expected-error @+1 {{'te.reduce' reduction extents must be positive, got 0}}
  %r = te.reduce "s" sum () over (%k : 0) init 0.0 : tensor<f32> {
    %v = te.read %x[%k] : tensor<4xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<f32>
}

// -----

te.primitive @init_type {
  %x = te.placeholder "x" : tensor<4xf32>
  // expected-error @+1 {{'te.reduce' init has type f64, the tensor holds f32}}
  %r = "te.reduce"() <{stage = "s", kind = #te<reduce_kind sum>, extents = [#builtin.int<4>], init = 0.0 : f64}> ({
  ^bb0(%k: index):
    %v = te.read %x[%k] : tensor<4xf32>
    te.yield %v : f32
  }) : () -> tensor<f32>
  te.output %r : tensor<f32>
}

// -----

te.primitive @init_does_not_fit {
  // expected-error @+1 {{init 1.5 does not fit element type i32}}
  %r = te.reduce "s" sum () over (%k : 4) init 1.5 : tensor<i32> {
    %one = arith.constant 1 : i32
    te.yield %one : i32
  }
  te.output %r : tensor<i32>
}

// -----

te.primitive @unknown_reduce_kind {
  // expected-error @+1 {{Expected `sum`, `max`, `min`, or `prod`}}
  %r = te.reduce "s" mean () over (%k : 4) init 1.0 : tensor<f32> {
    %one = arith.constant 1.0 : f32
    te.yield %one : f32
  }
  te.output %r : tensor<f32>
}

// --- te.read ---

// -----

te.primitive @read_indices {
  %x = te.placeholder "x" : tensor<4x8xf32>
  %r = te.compute "r" (%i) : tensor<4xf32> {
    // expected-error @+1 {{'te.read' of a rank-2 tensor needs 2 indices, got 1}}
    %v = te.read %x[%i] : tensor<4x8xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @read_result_type {
  %x = te.placeholder "x" : tensor<4xf32>
  %r = te.compute "r" (%i) : tensor<4xf32> {
    // expected-error @+1 {{'te.read' result type f64 differs from the element type f32}}
    %v = "te.read"(%x, %i) : (tensor<4xf32>, index) -> f64
    %w = arith.truncf %v : f64 to f32
    te.yield %w : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @read_scalar_type {
  %h = te.placeholder "h" : tensor<4xbf16>
  %r = te.compute "r" (%i) : tensor<4xf32> {
    // expected-error @+1 {{'te.read' result type bf16 differs from f32, the scalar type of element type bf16}}
    %v = "te.read"(%h, %i) : (tensor<4xbf16>, index) -> bf16
    %w = arith.extf %v : bf16 to f32
    te.yield %w : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @read_non_stage {
  %r = te.compute "r" (%i) : tensor<4xf32> {
    %c = arith.constant dense<1.0> : tensor<4xf32>
    // expected-error @+1 {{'te.read' must read a te.placeholder or a stage of the same primitive}}
    %v = te.read %c[%i] : tensor<4xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

te.primitive @read_index_type {
  %x = te.placeholder "x" : tensor<4xf32>
  %r = te.compute "r" (%i) : tensor<4xf32> {
    %c = arith.constant 1 : i64
    // expected-error @+1 {{operand 'indices' at position 1 does not verify: i64 should be of base attribute index}}
    %v = "te.read"(%x, %c) : (tensor<4xf32>, i64) -> f32
    te.yield %v : f32
  }
  te.output %r : tensor<4xf32>
}

// --- te.yield ---

// -----

func.func @yield_outside(%v: f32) {
  // expected-error @+1 {{'te.yield' expects parent op to be one of 'te.compute', 'te.reduce'}}
  te.yield %v : f32
}

// --- te.output ---

// -----

func.func @output_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'te.output' must end a te.primitive}}
  te.output %x : tensor<4xf32>
}

// -----

te.primitive @output_empty {
  %x = te.placeholder "x" : tensor<4xf32>
  // expected-error @+1 {{'te.output' needs at least one tensor}}
  "te.output"() : () -> ()
}

// --- te.primitive ---

// -----

// expected-error @+1 {{'te.primitive' body takes no arguments; use te.placeholder}}
te.primitive @block_arguments {
^bb0(%a: tensor<4xf32>):
  te.output %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'te.primitive' body must end with te.output}}
te.primitive @primitive_terminator {
  %x = te.placeholder "x" : tensor<4xf32>
  llvm.unreachable
}

// -----

// expected-error @+1 {{'te.primitive' body holds sizes, placeholders, stages and te.output, not 'arith.constant'}}
te.primitive @foreign_op {
  %x = te.placeholder "x" : tensor<4xf32>
  %c = arith.constant 1.0 : f32
  te.output %x : tensor<4xf32>
}

// -----

func.func @not_isolated(%y: tensor<4xf32>) {
  // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
  te.primitive @p {
    te.output %y : tensor<4xf32>
  }
  func.return
}

// -----

// expected-error @+1 {{property 'sym_name' expected in operation 'te.primitive'}}
"te.primitive"() ({
  %x = te.placeholder "x" : tensor<4xf32>
  te.output %x : tensor<4xf32>
}) : () -> ()

// --- te.call ---

// -----

func.func @callee_is_func(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'te.call' callee @callee_is_func is not a te.primitive}}
  %y = te.call @callee_is_func(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @callee_missing(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'te.call' callee @nowhere is not a te.primitive}}
  %y = te.call @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

te.primitive @id {
  %x = te.placeholder "x" : tensor<4xf32>
  te.output %x : tensor<4xf32>
}

func.func @call_operands(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'te.call' operand types (tensor<8xf32>) differ from the placeholders of @id: (tensor<4xf32>)}}
  %y = te.call @id(%x) : (tensor<8xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

te.primitive @id {
  %x = te.placeholder "x" : tensor<4xf32>
  te.output %x : tensor<4xf32>
}

func.func @call_results(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'te.call' result types (tensor<2x2xf32>) differ from the outputs of @id: (tensor<4xf32>)}}
  %y = te.call @id(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// -----

te.primitive @sizes_missing {
  %n = te.size "n" : index
  // expected-error @+1 {{'te.placeholder' of tensor<?x?xf32> takes 2 run-time size(s), got 1}}
  %x = te.placeholder "x" sizes(%n) : tensor<?x?xf32>
  te.output %x : tensor<?x?xf32>
}

// -----

func.func @size_outside_a_primitive() {
  // expected-error @+1 {{'te.size' must be directly inside a te.primitive}}
  %n = te.size "n" : index
  func.return
}

// -----

te.primitive @extent_size_missing {
  %n = te.size "n" : index
  %x = te.placeholder "x" sizes(%n) : tensor<4x?xf32>
  // expected-error @+1 {{'te.reduce' of tensor<4xf32> with 1 run-time extent(s) takes 1 run-time size(s), got 0}}
  %s = "te.reduce"() <{stage = "s", kind = #te<reduce_kind sum>, extents = [#builtin.int<-9223372036854775808>], init = 0.0 : f32}> ({
  ^bb0(%i: index, %k: index):
    %v = te.read %x[%i, %k] : tensor<4x?xf32>
    te.yield %v : f32
  }) : () -> tensor<4xf32>
  te.output %s : tensor<4xf32>
}
