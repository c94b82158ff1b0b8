// Round trip of graph.einsum: custom form, custom form reparsed (stable text), and the
// generic form.
// RUN: strato-opt %s | strato-opt | filecheck %s
// RUN: strato-opt %s > %t.custom && strato-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: strato-opt %s --print-op-generic > %t.generic && strato-opt %t.generic > %t.from-generic && diff %t.custom %t.from-generic
// RUN: strato-opt %t.generic --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @attention_scores
// CHECK-NEXT:    %s = graph.einsum "bhqd,bhkd->bhqk" %q, %k : (tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x6xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "attention_scores"
// GENERIC:         "graph.einsum"(%q, %k) <{equation = "bhqd,bhkd->bhqk"}> : (tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x6xf32>
func.func @attention_scores(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x6x4xf32>) -> tensor<1x2x8x6xf32> {
  %s = graph.einsum "bhqd,bhkd->bhqk" %q, %k : (tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x6xf32>
  func.return %s : tensor<1x2x8x6xf32>
}

// A trace (diagonal, everything summed), a transpose, and three integer operands
// with a size-1 dimension that broadcasts.
// CHECK-LABEL: func.func @forms
// CHECK-NEXT:    %t = graph.einsum "ii->" %m : (tensor<3x3xf32>) -> tensor<f32>
// CHECK-NEXT:    %p = graph.einsum "ijk->kij" %x : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %c = graph.einsum "ij,jk,kl->il" %a, %b, %d : (tensor<2x3xi32>, tensor<1x4xi32>, tensor<4x5xi32>) -> tensor<2x5xi32>
func.func @forms(%m: tensor<3x3xf32>, %x: tensor<2x3x4xf32>, %a: tensor<2x3xi32>, %b: tensor<1x4xi32>, %d: tensor<4x5xi32>) -> tensor<f32> {
  %t = graph.einsum "ii->" %m : (tensor<3x3xf32>) -> tensor<f32>
  %p = graph.einsum "ijk->kij" %x : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %c = graph.einsum "ij,jk,kl->il" %a, %b, %d : (tensor<2x3xi32>, tensor<1x4xi32>, tensor<4x5xi32>) -> tensor<2x5xi32>
  func.return %t : tensor<f32>
}
