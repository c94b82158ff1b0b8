// RUN: strato-opt %s -p convert-te-to-loops | filecheck %s

// An elementwise stage returned by the primitive writes the output buffer directly.
// CHECK-LABEL: func.func @relu(%a: memref<4x8xf32>, %r: memref<4x8xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:    loop.for %i = 0 to 4 axis "i" attributes {stage = "relu"} {
// CHECK-NEXT:      loop.for %j = 0 to 8 axis "j" attributes {stage = "relu"} {
// CHECK-NEXT:        %v = memref.load %a[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:        %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %m = arith.maximumf %v, %z : f32
// CHECK-NEXT:        memref.store %m, %r[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
te.primitive @relu {
  %a = te.placeholder "a" : tensor<4x8xf32>
  %r = te.compute "relu" (%i, %j) : tensor<4x8xf32> {
    %v = te.read %a[%i, %j] : tensor<4x8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4x8xf32>
}

// A reduction is an init nest (loops marked init) that stores init, then an update
// nest of the same stage that accumulates in its buffer with the reduction loop
// innermost (marked reduction). Every loop names its stage. An intermediate stage gets
// a local buffer, freed before the return.
// CHECK-LABEL: func.func @dense_relu(%x: memref<1x4xf32>, %w: memref<2x4xf32>, %r: memref<1x2xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:    %d = memref.alloc() : memref<1x2xf32, #loop.scope<local>>
// CHECK-NEXT:    loop.for %i = 0 to 1 axis "i" attributes {stage = "dense", init} {
// CHECK-NEXT:      loop.for %j = 0 to 2 axis "j" attributes {stage = "dense", init} {
// CHECK-NEXT:        %init = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        memref.store %init, %d[%i, %j] : memref<1x2xf32, #loop.scope<local>>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %i_1 = 0 to 1 axis "i" attributes {stage = "dense"} {
// CHECK-NEXT:      loop.for %j_1 = 0 to 2 axis "j" attributes {stage = "dense"} {
// CHECK-NEXT:        loop.for %k = 0 to 4 axis "k" attributes {stage = "dense", reduction} {
// CHECK-NEXT:          %a = memref.load %x[%i_1, %k] : memref<1x4xf32>
// CHECK-NEXT:          %b = memref.load %w[%j_1, %k] : memref<2x4xf32>
// CHECK-NEXT:          %p = arith.mulf %a, %b : f32
// CHECK-NEXT:          %acc = memref.load %d[%i_1, %j_1] : memref<1x2xf32, #loop.scope<local>>
// CHECK-NEXT:          %sum = arith.addf %acc, %p : f32
// CHECK-NEXT:          memref.store %sum, %d[%i_1, %j_1] : memref<1x2xf32, #loop.scope<local>>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %[[I:.*]] = 0 to 1 axis "i" attributes {stage = "relu"} {
// CHECK-NEXT:      loop.for %[[J:.*]] = 0 to 2 axis "j" attributes {stage = "relu"} {
// CHECK-NEXT:        %v = memref.load %d[%[[I]], %[[J]]] : memref<1x2xf32, #loop.scope<local>>
// CHECK:             memref.store %{{.*}}, %r[%[[I]], %[[J]]] : memref<1x2xf32>
// CHECK:         memref.dealloc %d : memref<1x2xf32, #loop.scope<local>>
// CHECK-NEXT:    func.return
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<1x4xf32>
  %w = te.placeholder "w" : tensor<2x4xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 4) init 0.0 : tensor<1x2xf32> {
    %a = te.read %x[%i, %k] : tensor<1x4xf32>
    %b = te.read %w[%j, %k] : tensor<2x4xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<1x2xf32> {
    %v = te.read %d[%i, %j] : tensor<1x2xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<1x2xf32>
}

// max and min reductions combine with maximumf/minimumf; two reduction axes give two
// innermost loops.
// CHECK-LABEL: func.func @row_max_min
// CHECK:         loop.for %i = 0 to 3 axis "i" attributes {stage = "rowmax", init} {
// CHECK-NEXT:      %init = arith.constant -1.000000e+30 : f32
// CHECK-NEXT:      memref.store %init, %mx[%i] : memref<3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %[[I:.*]] = 0 to 3 axis "i" attributes {stage = "rowmax"} {
// CHECK-NEXT:      loop.for %k = 0 to 5 axis "k" attributes {stage = "rowmax", reduction} {
// CHECK:             %max = arith.maximumf %acc, %v fastmath<nsz> : f32
// CHECK-NEXT:        memref.store %max, %mx[%[[I]]] : memref<3xf32>
// CHECK:         loop.for %{{.*}} = 0 to 1 axis "i0" attributes {stage = "allmin", init} {
// CHECK-NEXT:      %{{.*}} = arith.constant 1.000000e+30 : f32
// CHECK-NEXT:      memref.store %{{.*}}, %mn[] : memref<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for %{{.*}} = 0 to 1 axis "i0" attributes {stage = "allmin"} {
// CHECK-NEXT:      loop.for %{{.*}} = 0 to 3 axis "k0" attributes {stage = "allmin", reduction} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 5 axis "k1" attributes {stage = "allmin", reduction} {
// CHECK:               arith.minimumf
te.primitive @row_max_min {
  %a = te.placeholder "a" : tensor<3x5xf32>
  %mx = te.reduce "rowmax" max (%i) over (%k : 5) init -1.0e30 : tensor<3xf32> {
    %v = te.read %a[%i, %k] : tensor<3x5xf32>
    te.yield %v : f32
  }
  %mn = te.reduce "allmin" min () over (%0 : 3, %1 : 5) init 1.0e30 : tensor<f32> {
    %v = te.read %a[%0, %1] : tensor<3x5xf32>
    te.yield %v : f32
  }
  te.output %mx, %mn : tensor<3xf32>, tensor<f32>
}

// Index arithmetic stays arith on index; stages without name hints get axes i0, i1.
// CHECK-LABEL: func.func @reverse
// CHECK:         loop.for %[[I0:.*]] = 0 to 6 axis "i0" attributes {stage = "reverse"} {
// CHECK-NEXT:      %[[LAST:.*]] = arith.constant 5 : index
// CHECK-NEXT:      %[[R:.*]] = arith.subi %[[LAST]], %[[I0]] : index
// CHECK-NEXT:      memref.load %a[%[[R]]] : memref<6xf32>
te.primitive @reverse {
  %a = te.placeholder "a" : tensor<6xf32>
  %r = te.compute "reverse" (%0) : tensor<6xf32> {
    %last = arith.constant 5 : index
    %j = arith.subi %last, %0 : index
    %v = te.read %a[%j] : tensor<6xf32>
    te.yield %v : f32
  }
  te.output %r : tensor<6xf32>
}

// A placeholder returned as is, and a stage returned twice, are copied into their
// output buffers.
// CHECK-LABEL: func.func @passthrough(%a: memref<4xf32>, %s: memref<4xf32> {loop.output}, %out1: memref<4xf32> {loop.output}, %out2: memref<4xf32> {loop.output}) attributes {loop.kernel} {
// CHECK:         loop.for
// CHECK:         "memref.copy"(%s, %out1) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    "memref.copy"(%a, %out2) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    func.return
te.primitive @passthrough {
  %a = te.placeholder "a" : tensor<4xf32>
  %s = te.compute "double" (%i) : tensor<4xf32> {
    %v = te.read %a[%i] : tensor<4xf32>
    %d = arith.addf %v, %v : f32
    te.yield %d : f32
  }
  te.output %s, %s, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// A function over tensors: constants become private globals, calls pass output
// buffers, an intermediate is allocated before its call and freed after its last use,
// the returned call result is written in place and a returned argument is copied.
// CHECK:       "memref.global"() <{sym_name = "model_w", type = memref<2x4xf32>, initial_value = dense<5.000000e-01> : tensor<2x4xf32>, sym_visibility = "private", constant}> : () -> ()
// CHECK-LABEL: func.func @model(%x: memref<1x4xf32>, %y: memref<1x2xf32> {loop.output}, %out1: memref<1x4xf32> {loop.output}) {
// CHECK-NEXT:    %w = memref.get_global @model_w : memref<2x4xf32>
// CHECK-NEXT:    %h = memref.alloc() : memref<1x2xf32>
// CHECK-NEXT:    func.call @dense_relu(%x, %w, %h) : (memref<1x4xf32>, memref<2x4xf32>, memref<1x2xf32>) -> ()
// CHECK-NEXT:    func.call @relu2(%h, %y) : (memref<1x2xf32>, memref<1x2xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %h : memref<1x2xf32>
// CHECK-NEXT:    "memref.copy"(%x, %out1) : (memref<1x4xf32>, memref<1x4xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
te.primitive @relu2 {
  %a = te.placeholder "a" : tensor<1x2xf32>
  %r = te.compute "relu" (%i, %j) : tensor<1x2xf32> {
    %v = te.read %a[%i, %j] : tensor<1x2xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<1x2xf32>
}
func.func @model(%x: tensor<1x4xf32>) -> (tensor<1x2xf32>, tensor<1x4xf32>) {
  %w = arith.constant dense<0.5> : tensor<2x4xf32>
  %h = te.call @dense_relu(%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %y = te.call @relu2(%h) : (tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %y, %x : tensor<1x2xf32>, tensor<1x4xf32>
}

// A returned constant is copied from its global; an unused call result is freed right
// after the call; a value returned twice is written once and copied once.
// CHECK-LABEL: func.func @edges(%x: memref<4xf32>, %t: memref<4xf32> {loop.output}, %out1: memref<4xf32> {loop.output}, %out2: memref<4xf32> {loop.output}) {
// CHECK-NEXT:    %c = memref.get_global @edges_c : memref<4xf32>
// CHECK-NEXT:    %s = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %s_1 = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %s_2 = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @passthrough(%x, %s, %s_1, %s_2) : (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %s : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %s_1 : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %s_2 : memref<4xf32>
// CHECK-NEXT:    %t_1 = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %t_2 = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @passthrough(%c, %t, %t_1, %t_2) : (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %t_1 : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %t_2 : memref<4xf32>
// CHECK-NEXT:    "memref.copy"(%t, %out1) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    "memref.copy"(%c, %out2) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    func.return
func.func @edges(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s:3 = te.call @passthrough(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %t:3 = te.call @passthrough(%c) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  func.return %t#0, %t#0, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// The memory plan of graph-plan-memory runs: one arena of arena_bytes, allocated at the
// start and freed before the return; each planned intermediate is a view at its offset
// (%a and %c share bytes, their lifetimes do not overlap); the result is written in place.
// CHECK-LABEL: func.func @planned(%x: memref<4xf32>, %d: memref<4xf32> {loop.output}) attributes {arena_bytes = 128 : i64} {
// CHECK-NEXT:    %arena = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK-NEXT:    %offset = arith.constant 0 : index
// CHECK-NEXT:    %a = memref.view %arena[%offset][] : memref<128xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @relu4(%x, %a)
// CHECK-NEXT:    %offset_1 = arith.constant 64 : index
// CHECK-NEXT:    %b = memref.view %arena[%offset_1][] : memref<128xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @relu4(%a, %b)
// CHECK-NEXT:    %offset_2 = arith.constant 0 : index
// CHECK-NEXT:    %c = memref.view %arena[%offset_2][] : memref<128xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @relu4(%b, %c)
// CHECK-NEXT:    func.call @relu4(%c, %d)
// CHECK-NEXT:    memref.dealloc %arena : memref<128xi8>
// CHECK-NEXT:    func.return
te.primitive @relu4 {
  %a = te.placeholder "a" : tensor<4xf32>
  %r = te.compute "relu" (%i) : tensor<4xf32> {
    %v = te.read %a[%i] : tensor<4xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4xf32>
}
func.func @planned(%x: tensor<4xf32>) -> tensor<4xf32> attributes {arena_bytes = 128 : i64} {
  %a = te.call @relu4(%x) {arena_offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %b = te.call @relu4(%a) {arena_offsets = array<i64: 64>} : (tensor<4xf32>) -> tensor<4xf32>
  %c = te.call @relu4(%b) {arena_offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %d = te.call @relu4(%c) {arena_offsets = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// A call of one of two functions by a run-time condition: an scf.if on the condition's
// element, each branch calling its function with the buffer the plan gave the result.
// CHECK-LABEL: func.func @branching(%c: memref<1xi1>, %x: memref<4xf32>, %y: memref<4xf32> {loop.output}) attributes {arena_bytes = 64 : i64} {
// CHECK-NEXT:    %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK-NEXT:    %offset = arith.constant 0 : index
// CHECK-NEXT:    %r = memref.view %arena[%offset][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    %0 = arith.constant 0 : index
// CHECK-NEXT:    %1 = memref.load %c[%0] : memref<1xi1>
// CHECK-NEXT:    scf.if %1 {
// CHECK-NEXT:      func.call @twice_relu(%x, %r) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @same(%x, %r) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    }
// CHECK-NEXT:    func.call @relu4(%r, %y)
// CHECK:       func.func @twice_relu(%x: memref<4xf32>, %b: memref<4xf32> {loop.output}) {
// CHECK-NEXT:    %a = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @relu4(%x, %a)
// CHECK-NEXT:    func.call @relu4(%a, %b)
// CHECK-NEXT:    memref.dealloc %a : memref<4xf32>
// CHECK:       func.func @same(%x: memref<4xf32>, %out0: memref<4xf32> {loop.output}) {
// CHECK-NEXT:    "memref.copy"(%x, %out0) : (memref<4xf32>, memref<4xf32>) -> ()
func.func @branching(%c: tensor<1xi1>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {arena_bytes = 64 : i64} {
  %r = te.cond_call %c, @twice_relu, @same(%x) {arena_offsets = array<i64: 0>} : (tensor<1xi1>, tensor<4xf32>) -> tensor<4xf32>
  %y = te.call @relu4(%r) {arena_offsets = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
func.func @twice_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = te.call @relu4(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = te.call @relu4(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
func.func @same(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// A loop decided at run time: the carried values live in the result buffers (copied in
// from the initial ones); an scf.while tests the iteration number against the trip
// count and the condition, and each iteration calls the body into buffers of its own
// for the next condition and values, copied back.
// CHECK-LABEL: func.func @looping(%m: memref<i64>, %c: memref<i1>, %x: memref<4xf32>, %y: memref<4xf32> {loop.output}) {
// CHECK-NEXT:    "memref.copy"(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    %[[LIMIT:.*]] = memref.load %m[] : memref<i64>
// CHECK-NEXT:    %[[I:.*]] = memref.alloc() : memref<i64>
// CHECK-NEXT:    %[[GO:.*]] = memref.alloc() : memref<i1>
// CHECK-NEXT:    %[[NEXT_GO:.*]] = memref.alloc() : memref<i1>
// CHECK-NEXT:    %[[NEXT:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         scf.while () : () -> () {
// CHECK-NEXT:      %[[N:.*]] = memref.load %[[I]][] : memref<i64>
// CHECK-NEXT:      %[[G:.*]] = memref.load %[[GO]][] : memref<i1>
// CHECK-NEXT:      %[[BELOW:.*]] = arith.cmpi slt, %[[N]], %[[LIMIT]] : i64
// CHECK-NEXT:      %[[BOTH:.*]] = arith.andi %[[BELOW]], %[[G]] : i1
// CHECK-NEXT:      scf.condition(%[[BOTH]])
// CHECK-NEXT:    } do {
// CHECK-NEXT:      func.call @halve_body(%[[I]], %[[GO]], %y, %[[NEXT_GO]], %[[NEXT]]) : (memref<i64>, memref<i1>, memref<4xf32>, memref<i1>, memref<4xf32>) -> ()
// CHECK-NEXT:      "memref.copy"(%[[NEXT]], %y) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK:           scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %[[I]] : memref<i64>
func.func @looping(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %y = te.loop_call %m, %c, @halve_body inits(%x) captured() : tensor<i64>, tensor<i1>, (tensor<4xf32>), () -> (tensor<4xf32>)
  func.return %y : tensor<4xf32>
}
func.func @halve_body(%i: tensor<i64>, %go: tensor<i1>, %s: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  %h = te.call @relu4(%s) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %go, %h : tensor<i1>, tensor<4xf32>
}

// A scan: the carried values live in their result buffers (copied in from the initial
// ones); an scf.for over the positions copies each scanned tensor's position into a
// buffer, calls the body into buffers for the next carried values (copied back) and a
// row of each scan output (copied to that position of the stacked result).
// CHECK-LABEL: func.func @scanning(%h0: memref<4xf32>, %xs: memref<3x4xf32>, %w: memref<4xf32>, %h: memref<4xf32> {loop.output}, %ys: memref<3x4xf32> {loop.output}) {
// CHECK-NEXT:    "memref.copy"(%h0, %h) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    %[[X:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %[[NEXT:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %[[ROW:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[E:.*]] = memref.load %xs[%[[P]], %[[J]]] : memref<3x4xf32>
// CHECK-NEXT:        memref.store %[[E]], %[[X]][%[[J]]] : memref<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      func.call @scan_body(%h, %[[X]], %w, %[[NEXT]], %[[ROW]]) : (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      "memref.copy"(%[[NEXT]], %h) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK:           scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[R:.*]] = memref.load %[[ROW]][%[[K]]] : memref<4xf32>
// CHECK-NEXT:        memref.store %[[R]], %ys[%[[P]], %[[K]]] : memref<3x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %[[X]] : memref<4xf32>
func.func @scanning(%h0: tensor<4xf32>, %xs: tensor<3x4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %h, %ys = te.scan_call @scan_body inits(%h0) over(%xs) captured(%w) : (tensor<4xf32>), (tensor<3x4xf32>), (tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>)
  func.return %h, %ys : tensor<4xf32>, tensor<3x4xf32>
}
func.func @scan_body(%s: tensor<4xf32>, %x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = te.call @relu4(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %x : tensor<4xf32>, tensor<4xf32>
}

// A scan that stops: a position runs only while the condition (the first carried
// value, in its result buffer) holds; the rows of a position that does not run are
// zeros.
// CHECK-LABEL: func.func @stopping(%go0: memref<i1>, %h0: memref<4xf32>, %xs: memref<3x4xf32>, %go: memref<i1> {loop.output}, %h: memref<4xf32> {loop.output}, %ys: memref<3x4xf32> {loop.output}) {
// CHECK:         scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[GOING:.*]] = memref.load %go[] : memref<i1>
// CHECK-NEXT:      scf.if %[[GOING]] {
// CHECK:             func.call @stop_body(%go, %h, %{{.*}}) : (memref<i1>, memref<4xf32>, memref<4xf32>, memref<i1>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:        "memref.copy"(%{{.*}}, %go) : (memref<i1>, memref<i1>) -> ()
// CHECK-NEXT:        "memref.copy"(%{{.*}}, %h) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK:           } else {
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:             scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          memref.store %[[ZERO]], %ys[%[[P]], %[[K]]] : memref<3x4xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @stopping(%go0: tensor<i1>, %h0: tensor<4xf32>, %xs: tensor<3x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>) {
  %go, %h, %ys = te.scan_call @stop_body stops inits(%go0, %h0) over(%xs) captured() : (tensor<i1>, tensor<4xf32>), (tensor<3x4xf32>), () -> (tensor<i1>, tensor<4xf32>, tensor<3x4xf32>)
  func.return %go, %h, %ys : tensor<i1>, tensor<4xf32>, tensor<3x4xf32>
}
func.func @stop_body(%c: tensor<i1>, %s: tensor<4xf32>, %x: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<4xf32>) {
  %a = te.call @relu4(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c, %a, %x : tensor<i1>, tensor<4xf32>, tensor<4xf32>
}

// Run-time sizes: index arguments after the buffers. A tensor whose only run-time
// dimension is the first keeps its shape (static strides); one with a later run-time
// dimension is a flat buffer viewed with its sizes and row-major strides, as is the
// local buffer of a stage of run-time size; every loop over a run-time dimension runs
// to its size. The arguments name their sizes as the entry's do (te.sizes, loop.size;
// loop.shape for a flat buffer), so the kernel can be run on its own.
// CHECK-LABEL: func.func @run_time_sizes(%x: memref<?x4xf32> {te.sizes = ["n"]}, %b: memref<?xf32> {te.sizes = ["m"]}, %r: memref<?xf32> {loop.output, te.sizes = ["n", "m"], loop.shape = array<i64: -1, -1>}, %n: index {loop.size = "n"}, %m: index {loop.size = "m"}) attributes {loop.kernel} {
// CHECK-NEXT:    %r_view = memref.reinterpret_cast %r to offset: [0], sizes: [%n, %m], strides: [%m, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:    %t = memref.alloc(%n) : memref<?x4xf32, #loop.scope<local>>
// CHECK-NEXT:    loop.for %i = 0 to %n axis "i" attributes {stage = "t"} {
// CHECK-NEXT:      loop.for %j = 0 to 4 axis "j" attributes {stage = "t"} {
// CHECK:         loop.for %i_1 = 0 to %n axis "i" attributes {stage = "r"} {
// CHECK-NEXT:      loop.for %j_1 = 0 to %m axis "j" attributes {stage = "r"} {
// CHECK:             memref.store %{{.*}}, %r_view[%i_1, %j_1] : memref<?x?xf32, strided<[?, 1]>>
// CHECK:         memref.dealloc %t : memref<?x4xf32, #loop.scope<local>>
te.primitive @run_time_sizes {
  %n = te.size "n" : index
  %m = te.size "m" : index
  %x = te.placeholder "x" sizes(%n) : tensor<?x4xf32>
  %b = te.placeholder "b" sizes(%m) : tensor<?xf32>
  %t = te.compute "t" (%i, %j) sizes(%n) : tensor<?x4xf32> {
    %v = te.read %x[%i, %j] : tensor<?x4xf32>
    %w = arith.addf %v, %v : f32
    te.yield %w : f32
  }
  %r = te.compute "r" (%i, %j) sizes(%n, %m) : tensor<?x?xf32> {
    %c0 = arith.constant 0 : index
    %v = te.read %t[%i, %c0] : tensor<?x4xf32>
    %w = te.read %b[%j] : tensor<?xf32>
    %p = arith.mulf %v, %w : f32
    te.yield %p : f32
  }
  te.output %r : tensor<?x?xf32>
}

// A stage body may read its primitive's run-time sizes (a shift's bounds test): they
// become the kernel's size arguments there too.
// CHECK-LABEL: func.func @body_reads_a_size(
// CHECK:           loop.for %j = 0 to %n axis "j" attributes {stage = "next"} {
// CHECK-NEXT:        %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:        %[[AT:.*]] = arith.addi %j, %[[ONE]] : index
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi slt, %[[AT]], %n : index
te.primitive @body_reads_a_size {
  %n = te.size "n" : index
  %x = te.placeholder "x" sizes(%n) : tensor<?xf32>
  %r = te.compute "next" (%j) sizes(%n) : tensor<?xf32> {
    %one = arith.constant 1 : index
    %at = arith.addi %j, %one : index
    %in = arith.cmpi slt, %at, %n : index
    %last = arith.subi %n, %one : index
    %clamped = arith.minsi %at, %last : index
    %v = te.read %x[%clamped] : tensor<?xf32>
    %z = arith.constant 0.0 : f32
    %s = arith.select %in, %v, %z : f32
    te.yield %s : f32
  }
  te.output %r : tensor<?xf32>
}

// A function over tensors of run-time sizes takes each size, by the name its arguments
// give it (te.sizes), after its buffers (loop.size), and each call passes its
// primitive the sizes it takes. Its intermediates are views of one arena of run-time
// size: the sizes, the slots and the arena's bytes are computed at the start, a slot
// as large as its buffers (32 * n bytes rounded up to 64). %r and %s are alive at
// once, so take two slots; %t takes %r's, freed before it is made.
// CHECK-LABEL: func.func @rows(%x: memref<?x8xf32> {te.sizes = ["n"]}, %u: memref<?x8xf32> {loop.output, te.sizes = ["n"]}, %n: index {loop.size = "n"}) {
// CHECK-NEXT:    %[[ROW:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[BYTES:.*]] = arith.muli %n, %[[ROW]] : index
// CHECK-NEXT:    %[[UP:.*]] = arith.constant 63 : index
// CHECK-NEXT:    %[[PLUS:.*]] = arith.addi %[[BYTES]], %[[UP]] : index
// CHECK-NEXT:    %[[A:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[LINES:.*]] = arith.divui %[[PLUS]], %[[A]] : index
// CHECK-NEXT:    %[[A2:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[SLOT:.*]] = arith.muli %[[LINES]], %[[A2]] : index
// CHECK-NEXT:    %[[TOTAL:.*]] = arith.addi %[[SLOT]], %[[SLOT]] : index
// CHECK-NEXT:    %[[R_AT:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[T_AT:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %arena = memref.alloc(%[[TOTAL]]) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %r = memref.view %arena[%[[R_AT]]][%n] : memref<?xi8> to memref<?x8xf32>
// CHECK-NEXT:    func.call @rows_relu(%x, %r, %n) : (memref<?x8xf32>, memref<?x8xf32>, index) -> ()
// CHECK-NEXT:    %s = memref.view %arena[%[[SLOT]]][%n] : memref<?xi8> to memref<?x8xf32>
// CHECK-NEXT:    func.call @rows_relu(%r, %s, %n) : (memref<?x8xf32>, memref<?x8xf32>, index) -> ()
// CHECK-NEXT:    %t = memref.view %arena[%[[T_AT]]][%n] : memref<?xi8> to memref<?x8xf32>
// CHECK-NEXT:    func.call @rows_relu(%s, %t, %n) : (memref<?x8xf32>, memref<?x8xf32>, index) -> ()
// CHECK-NEXT:    func.call @rows_relu(%t, %u, %n) : (memref<?x8xf32>, memref<?x8xf32>, index) -> ()
// CHECK-NEXT:    memref.dealloc %arena : memref<?xi8>
// CHECK-NEXT:    func.return
te.primitive @rows_relu {
  %n = te.size "n" : index
  %x = te.placeholder "x" sizes(%n) : tensor<?x8xf32>
  %r = te.compute "relu" (%i, %j) sizes(%n) : tensor<?x8xf32> {
    %v = te.read %x[%i, %j] : tensor<?x8xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<?x8xf32>
}
func.func @rows(%x: tensor<?x8xf32> {te.sizes = ["n"]}) -> (tensor<?x8xf32> {te.sizes = ["n"]}) {
  %r = te.call @rows_relu(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %s = te.call @rows_relu(%r) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %t = te.call @rows_relu(%s) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %u = te.call @rows_relu(%t) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  func.return %u : tensor<?x8xf32>
}

// With a static arena too (graph-plan-memory's, for the intermediates of static
// shapes): it is the first slot of the one arena, a view of its bytes at 0 that the
// planned values view in turn; the buffers of run-time size follow it.
// CHECK-LABEL: func.func @rows_and_planned(
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[R_AT:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %arena = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %arena_1 = memref.view %arena[%[[ZERO]]][] : memref<?xi8> to memref<64xi8>
// CHECK:         %h = memref.view %arena_1[%{{.*}}][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @relu4(%x, %h)
// CHECK-NEXT:    func.call @relu4(%h, %d)
// CHECK-NEXT:    %r = memref.view %arena[%[[R_AT]]][%n] : memref<?xi8> to memref<?x8xf32>
// CHECK-NEXT:    func.call @rows_relu(%y, %r, %n)
// CHECK-NEXT:    func.call @rows_relu(%r, %s, %n)
// CHECK-NEXT:    memref.dealloc %arena : memref<?xi8>
// CHECK-NEXT:    func.return
func.func @rows_and_planned(%x: tensor<4xf32>, %y: tensor<?x8xf32> {te.sizes = ["n"]}) -> (tensor<4xf32>, tensor<?x8xf32> {te.sizes = ["n"]}) attributes {arena_bytes = 64 : i64} {
  %h = te.call @relu4(%x) {arena_offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %d = te.call @relu4(%h) {arena_offsets = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  %r = te.call @rows_relu(%y) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %s = te.call @rows_relu(%r) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  func.return %d, %s : tensor<4xf32>, tensor<?x8xf32>
}

// A size that is a sum of others (a concatenation along a run-time dimension: `p + s`
// names the class of its result's dimension) is computed before the call from the
// sizes the primitive's placeholders give: for the second call, from the first
// result's (p + s) and s.
// CHECK-LABEL: func.func @cache(%a: memref<?x4xf32> {te.sizes = ["p"]}, %b: memref<?x4xf32> {te.sizes = ["s"]}, %c: memref<?x4xf32> {loop.output, te.sizes = ["p + s"]}, %p: index {loop.size = "p"}, %s: index {loop.size = "s"}) {
// CHECK:         %arena = memref.alloc
// CHECK-NEXT:    %[[PS:.*]] = arith.addi %p, %s : index
// CHECK-NEXT:    func.call @joined(%a, %b, %c, %p, %s, %[[PS]])
// CHECK-NEXT:    %[[PSS:.*]] = arith.addi %[[PS]], %s : index
// CHECK-NEXT:    %d = memref.view %arena[%{{.*}}][%[[PSS]]] : memref<?xi8> to memref<?x4xf32>
// CHECK-NEXT:    func.call @joined(%c, %b, %d, %[[PS]], %s, %[[PSS]])
te.primitive @joined {
  %p = te.size "p" : index
  %s = te.size "s" : index
  %t = te.size "p + s" : index
  %a = te.placeholder "a" sizes(%p) : tensor<?x4xf32>
  %b = te.placeholder "b" sizes(%s) : tensor<?x4xf32>
  %c = te.compute "concat" (%i, %j) sizes(%t) : tensor<?x4xf32> {
    %one = arith.constant 1 : index
    %last = arith.subi %p, %one : index
    %x_at = arith.minsi %i, %last : index
    %x = te.read %a[%x_at, %j] : tensor<?x4xf32>
    %y_at = arith.subi %i, %p : index
    %zero = arith.constant 0 : index
    %y_in = arith.maxsi %y_at, %zero : index
    %y = te.read %b[%y_in, %j] : tensor<?x4xf32>
    %second = arith.cmpi sge, %i, %p : index
    %v = arith.select %second, %y, %x : f32
    te.yield %v : f32
  }
  te.output %c : tensor<?x4xf32>
}

func.func @cache(%a: tensor<?x4xf32> {te.sizes = ["p"]}, %b: tensor<?x4xf32> {te.sizes = ["s"]}) -> (tensor<?x4xf32> {te.sizes = ["p + s"]}) {
  %c = te.call @joined(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %d = te.call @joined(%c, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %c : tensor<?x4xf32>
}
