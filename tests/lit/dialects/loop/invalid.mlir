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

// --- loop.yield ---

// -----

func.func @yield_outside() {
  // expected-error @+1 {{'loop.yield' expects parent op 'loop.for'}}
  loop.yield
}

// --- #loop.scope ---

// -----

// expected-error @+1 {{unknown memory scope 'shared', expected one of global, local, vta.inp, vta.wgt, vta.acc, vta.uop}}
func.func @unknown_scope(%a: memref<4xf32, #loop.scope<shared>>) {
  func.return
}
