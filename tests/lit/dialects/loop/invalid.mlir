// Every verifier error of the loop dialect, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- loop.for ---

func.func @zero_step() {
  // expected-error @+1 {{'loop.for' step must be positive, got 0}}
  loop.for %i = 0 to 8 step 0 {
  }
  func.return
}

// -----

func.func @negative_step() {
  // expected-error @+1 {{'loop.for' step must be positive, got -2}}
  loop.for %i = 8 to 0 step -2 {
  }
  func.return
}

// -----

func.func @bounds() {
  // expected-error @+1 {{'loop.for' upper bound 2 is below lower bound 8}}
  loop.for %i = 8 to 2 {
  }
  func.return
}

// -----

func.func @no_induction_variable() {
  // expected-error @+1 {{'loop.for' body must take one index argument}}
  "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<8>, step = #builtin.int<1>, kind = #loop<kind serial>}> ({
    "loop.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

func.func @two_induction_variables() {
  // expected-error @+1 {{'loop.for' body must take one index argument}}
  "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<8>, step = #builtin.int<1>, kind = #loop<kind serial>}> ({
  ^bb0(%i: index, %j: index):
    "loop.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

func.func @induction_variable_type() {
  // expected-error @+1 {{'loop.for' body must take one index argument}}
  "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<8>, step = #builtin.int<1>, kind = #loop<kind serial>}> ({
  ^bb0(%i: i64):
    "loop.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

func.func @missing_kind() {
  // expected-error @+1 {{property 'kind' expected in operation 'loop.for'}}
  "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<8>, step = #builtin.int<1>}> ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

func.func @terminator() {
  // expected-error @+1 {{'loop.for' terminates with operation llvm.unreachable instead of loop.yield}}
  "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<8>, step = #builtin.int<1>, kind = #loop<kind serial>}> ({
  ^bb0(%i: index):
    llvm.unreachable
  }) : () -> ()
  func.return
}

// -----

func.func @unknown_kind() {
  // expected-error @+1 {{unknown loop kind 'threaded', expected one of serial, parallel, vectorized, unrolled, virtual_thread}}
  loop.for %i = 0 to 8 threaded {
  }
  func.return
}

// -----

func.func @bound_not_an_index(%n: i64) {
  // expected-error @+1 {{operand is used with type index, but has been previously used or defined with type i64}}
  loop.for %i = 0 to %n {
  }
  func.return
}

// -----

func.func @negative_start_before_a_run_time_bound(%n: index) {
  // expected-error @+1 {{'loop.for' with a run-time upper bound starts at 0 or above, got -1}}
  loop.for %i = -1 to %n {
  }
  func.return
}

// -----

func.func @both_bounds(%n: index) {
  // expected-error @+1 {{'loop.for' takes its upper bound either as a static `ub` or as an index operand, exactly one of them}}
  "loop.for"(%n) <{lb = #builtin.int<0>, ub = #builtin.int<4>, step = #builtin.int<1>, kind = #loop<kind serial>}> ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : (index) -> ()
  func.return
}

// -----

func.func @no_bound() {
  // expected-error @+1 {{'loop.for' takes its upper bound either as a static `ub` or as an index operand, exactly one of them}}
  "loop.for"() <{lb = #builtin.int<0>, step = #builtin.int<1>, kind = #loop<kind serial>}> ({
  ^bb0(%i: index):
    "loop.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// --- loop.yield ---

// -----

func.func @yield_outside() {
  // expected-error @+1 {{'loop.yield' expects parent op 'loop.for'}}
  loop.yield
}

// --- loop.view ---

// -----

func.func @view_of_run_time_size(%a: memref<?x8xf32>, %n: index) {
  // expected-error @+1 {{loop.view: the view's type memref<?x8xf32> must be static}}
  %v = loop.view %a[%n] : memref<?x8xf32> to memref<?x8xf32>
  func.return
}

// -----

func.func @view_as_other_elements(%a: memref<?x8xf32>, %n: index) {
  // expected-error @+1 {{loop.view: a view of f32 elements as i32}}
  %v = loop.view %a[%n] : memref<?x8xf32> to memref<4x8xi32>
  func.return
}

// -----

func.func @view_in_other_scope(%a: memref<?x8xf32>, %n: index) {
  // expected-error @+1 {{loop.view: the view of a buffer in scope 'global' must be in it too, not 'local'}}
  %v = loop.view %a[%n] : memref<?x8xf32> to memref<4x8xf32, #loop.scope<local>>
  func.return
}

// -----

func.func @view_of_strided(%a: memref<4x8xf32, strided<[16, 1]>>, %n: index) {
  // expected-error @+1 {{loop.view: memref<4x8xf32, strided<[16, 1]>> must have the identity layout}}
  %v = loop.view %a[%n] : memref<4x8xf32, strided<[16, 1]>> to memref<2x8xf32>
  func.return
}

// --- #loop.scope ---

// -----

// expected-error @+1 {{unknown memory scope 'shared', expected one of global, local, vta.inp, vta.wgt, vta.acc, vta.uop}}
func.func @unknown_scope(%a: memref<4xf32, #loop.scope<shared>>) {
  func.return
}
