// Round trip of the loop dialect: loops of every kind, steps, axis names, attributes,
// nesting, memory scopes on memrefs; custom form, custom form reparsed (stable text),
// and the generic form.
// RUN: strato-opt %s | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @relu(%a: memref<8xf32>, %out: memref<8xf32>) {
// CHECK-NEXT:    loop.for %i = 0 to 8 vectorized {
// CHECK-NEXT:      %v = memref.load %a[%i] : memref<8xf32>
// CHECK-NEXT:      %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:      memref.store %m, %out[%i] : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// GENERIC-LABEL: sym_name = "relu"
// GENERIC:         "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<8>, step = #builtin.int<1>, kind = #loop<kind vectorized>}> ({
// GENERIC-NEXT:    ^bb0(%i: index):
// GENERIC:           "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
func.func @relu(%a: memref<8xf32>, %out: memref<8xf32>) {
  loop.for %i = 0 to 8 vectorized {
    %v = memref.load %a[%i] : memref<8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %out[%i] : memref<8xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @kinds
// CHECK-NEXT:    loop.for %i = 0 to 16 step 4 parallel axis "i.outer" {
// CHECK-NEXT:      loop.for %j = 2 to 6 axis "j" {
// CHECK-NEXT:        loop.for %k = 0 to 4 unrolled attributes {pragma = "x"} {
// CHECK-NEXT:          loop.for %t = 0 to 2 virtual_thread {
// CHECK-NEXT:            loop.for %s = 0 to 0 {
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %e = -4 to -1 step 3 {
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// GENERIC-LABEL: sym_name = "kinds"
// GENERIC:         "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<16>, step = #builtin.int<4>, kind = #loop<kind parallel>, axis = "i.outer"}> ({
// GENERIC:           "loop.for"() <{lb = #builtin.int<2>, ub = #builtin.int<6>, step = #builtin.int<1>, kind = #loop<kind serial>, axis = "j"}> ({
// GENERIC:             "loop.for"() <{lb = #builtin.int<0>, ub = #builtin.int<4>, step = #builtin.int<1>, kind = #loop<kind unrolled>}> ({
// GENERIC:             }) {pragma = "x"} : () -> ()
func.func @kinds() {
  loop.for %i = 0 to 16 step 4 parallel axis "i.outer" {
    loop.for %j = 2 to 6 serial axis "j" {
      loop.for %k = 0 to 4 unrolled attributes {pragma = "x"} {
        loop.for %t = 0 to 2 virtual_thread {
          loop.for %s = 0 to 0 {
          }
        }
      }
    }
  }
  loop.for %e = -4 to -1 step 3 {
  }
  func.return
}

// CHECK-LABEL: func.func @scopes
// CHECK-SAME:    (%g: memref<16xf32>, %gg: memref<16xf32, #loop.scope<global>>, %inp: memref<1x16xi8, #loop.scope<vta.inp>>, %wgt: memref<16x16xi8, #loop.scope<vta.wgt>>, %acc: memref<1x16xi32, #loop.scope<vta.acc>>, %uop: memref<4xi32, #loop.scope<vta.uop>>)
// CHECK-NEXT:    %l = memref.alloc() : memref<4x4xf32, #loop.scope<local>>
// CHECK-NEXT:    loop.for %i = 0 to 4 {
// CHECK-NEXT:      loop.for %j = 0 to 4 {
// CHECK-NEXT:        %v = memref.load %l[%i, %j] : memref<4x4xf32, #loop.scope<local>>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %l : memref<4x4xf32, #loop.scope<local>>
// GENERIC-LABEL: sym_name = "scopes"
// GENERIC:         "memref.alloc"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<4x4xf32, #loop.scope<local>>
func.func @scopes(%g: memref<16xf32>, %gg: memref<16xf32, #loop.scope<global>>, %inp: memref<1x16xi8, #loop.scope<vta.inp>>, %wgt: memref<16x16xi8, #loop.scope<vta.wgt>>, %acc: memref<1x16xi32, #loop.scope<vta.acc>>, %uop: memref<4xi32, #loop.scope<"vta.uop">>) {
  %l = memref.alloc() : memref<4x4xf32, #loop.scope<local>>
  loop.for %i = 0 to 4 {
    loop.for %j = 0 to 4 {
      %v = memref.load %l[%i, %j] : memref<4x4xf32, #loop.scope<local>>
    }
  }
  memref.dealloc %l : memref<4x4xf32, #loop.scope<local>>
  func.return
}

// Stage ownership on every loop, the init nest and the reduction loops of a stage.
// CHECK-LABEL: func.func @stages
// CHECK-NEXT:    loop.for %i = 0 to 4 axis "i" attributes {stage = "sum", init} {
// CHECK:         loop.for %i_1 = 0 to 4 axis "i" attributes {stage = "sum"} {
// CHECK-NEXT:      loop.for %k = 0 to 8 axis "k" attributes {stage = "sum", reduction} {
// GENERIC-LABEL: sym_name = "stages"
// GENERIC:         }) {stage = "sum", init} : () -> ()
// GENERIC:         }) {stage = "sum", reduction} : () -> ()
func.func @stages(%a: memref<4x8xf32>, %s: memref<4xf32>) {
  loop.for %i = 0 to 4 axis "i" attributes {stage = "sum", init} {
    %z = arith.constant 0.0 : f32
    memref.store %z, %s[%i] : memref<4xf32>
  }
  loop.for %i = 0 to 4 axis "i" attributes {stage = "sum"} {
    loop.for %k = 0 to 8 axis "k" attributes {stage = "sum", reduction} {
      %v = memref.load %a[%i, %k] : memref<4x8xf32>
      %acc = memref.load %s[%i] : memref<4xf32>
      %n = arith.addf %acc, %v : f32
      memref.store %n, %s[%i] : memref<4xf32>
    }
  }
  func.return
}

// A run-time upper bound: an index value, after `to`; the generic form takes it as the
// loop's operand and has no `ub` property.
// CHECK-LABEL: func.func @run_time_bound(%a: memref<?xf32>, %n: index)
// CHECK-NEXT:    loop.for %i = 2 to %n step 3 parallel axis "i" {
// CHECK-NEXT:      %v = memref.load %a[%i] : memref<?xf32>
// GENERIC-LABEL: sym_name = "run_time_bound"
// GENERIC:         "loop.for"(%n) <{lb = #builtin.int<2>, step = #builtin.int<3>, kind = #loop<kind parallel>, axis = "i"}> ({
func.func @run_time_bound(%a: memref<?xf32>, %n: index) {
  loop.for %i = 2 to %n step 3 parallel axis "i" {
    %v = memref.load %a[%i] : memref<?xf32>
  }
  func.return
}

// A view of a block of rows: a buffer of static shape over the source's elements from
// an offset (a block of rows of a buffer of run-time size).
// CHECK-LABEL: func.func @rows(%a: memref<?x8xf32>, %n: index)
// CHECK-NEXT:    %v = loop.view %a[%n] : memref<?x8xf32> to memref<4x8xf32>
// CHECK-NEXT:    %l = loop.view %v[%n] : memref<4x8xf32> to memref<2xf32>
// GENERIC-LABEL: sym_name = "rows"
// GENERIC:         %v = "loop.view"(%a, %n) : (memref<?x8xf32>, index) -> memref<4x8xf32>
func.func @rows(%a: memref<?x8xf32>, %n: index) {
  %v = loop.view %a[%n] : memref<?x8xf32> to memref<4x8xf32>
  %l = loop.view %v[%n] : memref<4x8xf32> to memref<2xf32>
  func.return
}
