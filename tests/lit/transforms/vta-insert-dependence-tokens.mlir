// RUN: strato-opt %s --split-input-file -p vta-insert-dependence-tokens | filecheck %s

// One loop of load -> gemm -> store: RAW tokens inside an iteration, the WAR tokens carried
// to the next iteration pushed before the loop and popped after it.
// CHECK-LABEL: func.func @tiles
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:   %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:   %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:   vta.dep_push "compute" -> "load"
// CHECK-NEXT:   vta.dep_push "store" -> "compute"
// CHECK-NEXT:   loop.for %i = 0 to 2 {
// CHECK-NEXT:     vta.dep_pop "compute" -> "load"
// CHECK-NEXT:     vta.load %x[%i], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:     vta.dep_push "load" -> "compute"
// CHECK-NEXT:     vta.dep_pop "load" -> "compute"
// CHECK-NEXT:     vta.dep_pop "store" -> "compute"
// CHECK-NEXT:     vta.gemm %acc, %inp, %wgt loops {{\[\[}}4, 1, 1, 0]] uops {{\[\[}}0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     vta.dep_push "compute" -> "store"
// CHECK-NEXT:     vta.dep_push "compute" -> "load"
// CHECK-NEXT:     vta.dep_pop "compute" -> "store"
// CHECK-NEXT:     vta.store %acc[%c0], %out[%i] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
// CHECK-NEXT:     vta.dep_push "store" -> "compute"
// CHECK-NEXT:   }
// CHECK-NEXT:   vta.dep_pop "store" -> "compute"
// CHECK-NEXT:   vta.dep_pop "compute" -> "load"
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
func.func @tiles(%x: memref<8x1x16xi8>, %w: memref<1x16x16xi8>, %out: memref<8x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
  %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
  loop.for %i = 0 to 2 {
    vta.load %x[%i], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
    vta.gemm %acc, %inp, %wgt loops [[4, 1, 1, 0]] uops [[0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.store %acc[%c0], %out[%i] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
  }
  func.return
}

// -----

// A virtual-thread loop is transparent; the reset and the ALU op do not take part in the
// load/compute pair; the chunk loop's carried tokens are pushed before it and popped after it.
// CHECK-LABEL: func.func @threads
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   loop.for %t = 0 to 2 virtual_thread {
// CHECK-NEXT:     %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:     %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:     vta.gemm %acc, %inp, %wgt loops {{\[\[}}4, 1, 0, 0]] uops {{\[\[}}0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     vta.dep_push "compute" -> "load"
// CHECK-NEXT:     loop.for %k = 0 to 2 {
// CHECK-NEXT:       %c4 = arith.constant 4 : index
// CHECK-NEXT:       %d = arith.muli %t, %c4 : index
// CHECK-NEXT:       vta.dep_pop "compute" -> "load"
// CHECK-NEXT:       vta.load %x[%d], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:       vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:       vta.dep_push "load" -> "compute"
// CHECK-NEXT:       vta.dep_pop "load" -> "compute"
// CHECK-NEXT:       vta.gemm %acc, %inp, %wgt loops {{\[\[}}4, 1, 1, 0]] uops {{\[\[}}0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:       vta.dep_push "compute" -> "load"
// CHECK-NEXT:     }
// CHECK-NEXT:     vta.dep_pop "compute" -> "load"
// CHECK-NEXT:     vta.alu shr %acc imm 3 loops {{\[\[}}4, 1, 1]] uops {{\[\[}}0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:     vta.dep_push "compute" -> "store"
// CHECK-NEXT:     %c4_1 = arith.constant 4 : index
// CHECK-NEXT:     %o = arith.muli %t, %c4_1 : index
// CHECK-NEXT:     vta.dep_pop "compute" -> "store"
// CHECK-NEXT:     vta.store %acc[%c0], %out[%o] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
func.func @threads(%x: memref<8x1x16xi8>, %w: memref<1x16x16xi8>, %out: memref<8x1x16xi8>) {
  %c0 = arith.constant 0 : index
  loop.for %t = 0 to 2 virtual_thread {
    %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
    %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
    %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
    vta.gemm %acc, %inp, %wgt loops [[4, 1, 0, 0]] uops [[0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    loop.for %k = 0 to 2 {
      %c4 = arith.constant 4 : index
      %d = arith.muli %t, %c4 : index
      vta.load %x[%d], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
      vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
      vta.gemm %acc, %inp, %wgt loops [[4, 1, 1, 0]] uops [[0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    }
    vta.alu shr %acc imm 3 loops [[4, 1, 1]] uops [[0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
    %c4 = arith.constant 4 : index
    %o = arith.muli %t, %c4 : index
    vta.store %acc[%c0], %out[%o] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
  }
  func.return
}
