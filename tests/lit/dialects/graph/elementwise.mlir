// Round trip of the element-wise operators: custom form, custom form reparsed, and the
// generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | strato-opt | filecheck %s
// RUN: strato-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %r = graph.relu %x : tensor<2x3xf32>
// CHECK-NEXT:    %s = graph.sigmoid %r : tensor<2x3xf32>
// CHECK-NEXT:    %t = graph.tanh %s : tensor<2x3xf32>
// CHECK-NEXT:    %e = graph.erf %t : tensor<2x3xf32>
// CHECK-NEXT:    %q = graph.sqrt %e : tensor<2x3xf32>
// CHECK-NEXT:    %x1 = graph.exp %q : tensor<2x3xf32>
// CHECK-NEXT:    %l = graph.log %x1 : tensor<2x3xf32>
// CHECK-NEXT:    %n = graph.neg %l : tensor<2x3xf32>
// CHECK-NEXT:    %a = graph.abs %n {tag} : tensor<2x3xf32>
// CHECK-NEXT:    %h = graph.tanh %h_in : tensor<4xf16>
// CHECK-NEXT:    func.return %a : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "unary"
// GENERIC:         "graph.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         "graph.abs"(%n) {tag} : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @unary(%x: tensor<2x3xf32>, %h_in: tensor<4xf16>) -> tensor<2x3xf32> {
  %r = graph.relu %x : tensor<2x3xf32>
  %s = graph.sigmoid %r : tensor<2x3xf32>
  %t = graph.tanh %s : tensor<2x3xf32>
  %e = graph.erf %t : tensor<2x3xf32>
  %q = graph.sqrt %e : tensor<2x3xf32>
  %x1 = graph.exp %q : tensor<2x3xf32>
  %l = graph.log %x1 : tensor<2x3xf32>
  %n = graph.neg %l : tensor<2x3xf32>
  %a = graph.abs %n {tag} : tensor<2x3xf32>
  %h = graph.tanh %h_in : tensor<4xf16>
  func.return %a : tensor<2x3xf32>
}

// Parameters print as keywords; f32 values that the short form would round print in
// full, and a gelu without `approximate` is the exact one.
// CHECK-LABEL: func.func @parameters
// CHECK-NEXT:    %a = graph.leaky_relu %x alpha 1.000000e-02 : tensor<2x3xf32>
// CHECK-NEXT:    %b = graph.leaky_relu %a alpha 0.333333343 : tensor<2x3xf32>
// CHECK-NEXT:    %c = graph.clip %b min 0.000000e+00 max 6.000000e+00 : tensor<2x3xf32>
// CHECK-NEXT:    %d = graph.clip %c min -1.500000e+00 : tensor<2x3xf32>
// CHECK-NEXT:    %e = graph.clip %d max 2.500000e-01 {tag} : tensor<2x3xf32>
// CHECK-NEXT:    %f = graph.gelu %e : tensor<2x3xf32>
// CHECK-NEXT:    %g = graph.gelu %f approximate tanh : tensor<2x3xf32>
// CHECK-NEXT:    %i = graph.clip %i_in min -3.000000e+00 max 3.000000e+00 : tensor<4xi8>
// GENERIC-LABEL: sym_name = "parameters"
// GENERIC:         "graph.leaky_relu"(%x) <{alpha = 1.000000e-02 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         "graph.clip"(%b) <{min = 0.000000e+00 : f32, max = 6.000000e+00 : f32}>
// GENERIC:         "graph.clip"(%c) <{min = -1.500000e+00 : f32}>
// GENERIC:         "graph.gelu"(%e) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         "graph.gelu"(%f) <{approximate = "tanh"}>
func.func @parameters(%x: tensor<2x3xf32>, %i_in: tensor<4xi8>) -> tensor<2x3xf32> {
  %a = graph.leaky_relu %x alpha 0.01 : tensor<2x3xf32>
  %b = graph.leaky_relu %a alpha 0.333333343 : tensor<2x3xf32>
  %c = graph.clip %b min 0.0 max 6 : tensor<2x3xf32>
  %d = graph.clip %c min -1.5 : tensor<2x3xf32>
  %e = graph.clip %d max 0.25 {tag} : tensor<2x3xf32>
  %f = graph.gelu %e : tensor<2x3xf32>
  %g = graph.gelu %f approximate tanh : tensor<2x3xf32>
  %i = graph.clip %i_in min -3.0 max 3.0 : tensor<4xi8>
  func.return %g : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %s = graph.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %d = graph.div %s, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %p = graph.pow %d, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %p2 = graph.pow %p, %e : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32>
// CHECK-NEXT:    %m = graph.maximum %p2, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %n = graph.minimum %m, %c {tag} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %i = graph.div %ia, %ib : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
// GENERIC-LABEL: sym_name = "binary"
// GENERIC:         "graph.sub"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// GENERIC:         "graph.maximum"(%p2, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>, %k: tensor<f32>, %e: tensor<8xi64>, %ia: tensor<3xi32>, %ib: tensor<3xi32>) -> tensor<4x8xf32> {
  %s = graph.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %d = graph.div %s, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = graph.pow %d, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %p2 = graph.pow %p, %e : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32>
  %m = graph.maximum %p2, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %n = graph.minimum %m, %c {tag} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %i = graph.div %ia, %ib : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %n : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @rounding_and_trigonometry
// CHECK-NEXT:    %f = graph.floor %x : tensor<2x3xf32>
// CHECK-NEXT:    %c = graph.ceil %f : tensor<2x3xf32>
// CHECK-NEXT:    %r = graph.round %c : tensor<2x3xf32>
// CHECK-NEXT:    %s = graph.sign %r : tensor<2x3xf32>
// CHECK-NEXT:    %si = graph.sign %i : tensor<4xi64>
// CHECK-NEXT:    %sn = graph.sin %s : tensor<2x3xf32>
// CHECK-NEXT:    %cs = graph.cos %sn : tensor<2x3xf32>
// CHECK-NEXT:    %tn = graph.tan %cs : tensor<2x3xf32>
// CHECK-NEXT:    %rc = graph.reciprocal %tn : tensor<2x3xf32>
// CHECK-NEXT:    %as = graph.asin %rc : tensor<2x3xf32>
// CHECK-NEXT:    %ac = graph.acos %as : tensor<2x3xf32>
// CHECK-NEXT:    %at = graph.atan %ac : tensor<2x3xf32>
// CHECK-NEXT:    %sh = graph.sinh %at : tensor<2x3xf32>
// CHECK-NEXT:    %ch = graph.cosh %sh : tensor<2x3xf32>
// CHECK-NEXT:    %ash = graph.asinh %ch : tensor<2x3xf32>
// CHECK-NEXT:    %ach = graph.acosh %ash : tensor<2x3xf32>
// CHECK-NEXT:    %ath = graph.atanh %ach : tensor<2x3xf32>
// CHECK-NEXT:    func.return %ath : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "rounding_and_trigonometry"
// GENERIC:         "graph.round"(%c) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @rounding_and_trigonometry(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> tensor<2x3xf32> {
  %f = graph.floor %x : tensor<2x3xf32>
  %c = graph.ceil %f : tensor<2x3xf32>
  %r = graph.round %c : tensor<2x3xf32>
  %s = graph.sign %r : tensor<2x3xf32>
  %si = graph.sign %i : tensor<4xi64>
  %sn = graph.sin %s : tensor<2x3xf32>
  %cs = graph.cos %sn : tensor<2x3xf32>
  %tn = graph.tan %cs : tensor<2x3xf32>
  %rc = graph.reciprocal %tn : tensor<2x3xf32>
  %as = graph.asin %rc : tensor<2x3xf32>
  %ac = graph.acos %as : tensor<2x3xf32>
  %at = graph.atan %ac : tensor<2x3xf32>
  %sh = graph.sinh %at : tensor<2x3xf32>
  %ch = graph.cosh %sh : tensor<2x3xf32>
  %ash = graph.asinh %ch : tensor<2x3xf32>
  %ach = graph.acosh %ash : tensor<2x3xf32>
  %ath = graph.atanh %ach : tensor<2x3xf32>
  func.return %ath : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @activations
// CHECK-NEXT:    %a = graph.softplus %x : tensor<2x3xf32>
// CHECK-NEXT:    %b = graph.softsign %a : tensor<2x3xf32>
// CHECK-NEXT:    %c = graph.mish %b : tensor<2x3xf32>
// CHECK-NEXT:    %d = graph.hard_swish %c : tensor<2x3xf32>
// CHECK-NEXT:    %e = graph.elu %d alpha 5.000000e-01 : tensor<2x3xf32>
// CHECK-NEXT:    %f = graph.selu %e alpha 1.67326319 gamma 1.05070102 : tensor<2x3xf32>
// CHECK-NEXT:    %g = graph.celu %f alpha 2.000000e+00 : tensor<2x3xf32>
// CHECK-NEXT:    %h = graph.hard_sigmoid %g alpha 2.000000e-01 beta 5.000000e-01 : tensor<2x3xf32>
// CHECK-NEXT:    %t = graph.thresholded_relu %h alpha 1.000000e+00 {tag} : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "activations"
// GENERIC:         "graph.elu"(%d) <{alpha = 5.000000e-01 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         "graph.hard_sigmoid"(%g) <{alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32}>
func.func @activations(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.softplus %x : tensor<2x3xf32>
  %b = graph.softsign %a : tensor<2x3xf32>
  %c = graph.mish %b : tensor<2x3xf32>
  %d = graph.hard_swish %c : tensor<2x3xf32>
  %e = graph.elu %d alpha 0.5 : tensor<2x3xf32>
  %f = graph.selu %e alpha 1.67326319 gamma 1.05070102 : tensor<2x3xf32>
  %g = graph.celu %f alpha 2.0 : tensor<2x3xf32>
  %h = graph.hard_sigmoid %g alpha 0.2 beta 0.5 : tensor<2x3xf32>
  %t = graph.thresholded_relu %h alpha 1.0 {tag} : tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @prelu_and_mod
// CHECK-NEXT:    %p = graph.prelu %x, %s : (tensor<2x4x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %m = graph.mod %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
// CHECK-NEXT:    %t = graph.mod %a, %b {fmod} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
// CHECK-NEXT:    %f = graph.mod %x, %s {fmod} : (tensor<2x4x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
// GENERIC-LABEL: sym_name = "prelu_and_mod"
// GENERIC:         "graph.mod"(%a, %b) <{fmod}> : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
func.func @prelu_and_mod(%x: tensor<2x4x3xf32>, %s: tensor<4x1xf32>, %a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<2x4x3xf32> {
  %p = graph.prelu %x, %s : (tensor<2x4x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  %m = graph.mod %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %t = graph.mod %a, %b {fmod} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %f = graph.mod %x, %s {fmod} : (tensor<2x4x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  func.return %f : tensor<2x4x3xf32>
}
