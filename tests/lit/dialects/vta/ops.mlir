// Round trip of every vta op.
// RUN: strato-opt %s | strato-opt | filecheck %s

// CHECK-LABEL: func.func @conv_tile
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:    %wgt = vta.buffer offset 512 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:    %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:    loop.for %t = 0 to 2 {
// CHECK-NEXT:      vta.dep_pop "compute" -> "load"
// CHECK-NEXT:      vta.load %x[%t], %inp[%c0] rows 4 cols 4 stride 4 pad [1, 1, 1, 1] : memref<32x1x16xi8>, memref<36x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:      vta.load %w[%c0], %wgt[%c0] rows 1 cols 9 stride 9 : memref<9x16x16xi8>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:      vta.dep_push "load" -> "compute"
// CHECK-NEXT:      vta.dep_pop "load" -> "compute"
// CHECK-NEXT:      vta.gemm %acc, %inp, %wgt loops [[16, 1, 0, 0]] uops [[0, 0, 0]] {reset} : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:      vta.gemm %acc, %inp, %wgt loops [[4, 4, 6, 0], [4, 1, 1, 0]] uops [[0, 0, 0], [2, 1, 1]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:      vta.alu shr %acc imm 8 loops [[16, 1, 1]] uops [[0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:      vta.alu add %acc loops [[8, 1, 1]] uops [[0, 8]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:      vta.dep_push "compute" -> "store"
// CHECK-NEXT:      vta.dep_pop "compute" -> "store"
// CHECK-NEXT:      vta.store %acc[%c0], %out[%t] rows 1 cols 16 stride 16 : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<32x1x16xi8>
// CHECK-NEXT:      vta.dep_push "store" -> "compute"
// CHECK-NEXT:    }
func.func @conv_tile(%x: memref<32x1x16xi8>, %w: memref<9x16x16xi8>, %out: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 512 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  loop.for %t = 0 to 2 {
    vta.dep_pop "compute" -> "load"
    vta.load %x[%t], %inp[%c0] rows 4 cols 4 stride 4 pad [1, 1, 1, 1] : memref<32x1x16xi8>, memref<36x1x16xi8, #loop.scope<vta.inp>>
    vta.load %w[%c0], %wgt[%c0] rows 1 cols 9 stride 9 : memref<9x16x16xi8>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
    vta.dep_push "load" -> "compute"
    vta.dep_pop "load" -> "compute"
    vta.gemm %acc, %inp, %wgt loops [[16, 1, 0, 0]] uops [[0, 0, 0]] {reset} : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
    vta.gemm %acc, %inp, %wgt loops [[4, 4, 6, 0], [4, 1, 1, 0]] uops [[0, 0, 0], [2, 1, 1]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
    vta.alu shr %acc imm 8 loops [[16, 1, 1]] uops [[0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
    vta.alu add %acc loops [[8, 1, 1]] uops [[0, 8]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
    vta.dep_push "compute" -> "store"
    vta.dep_pop "compute" -> "store"
    vta.store %acc[%c0], %out[%t] rows 1 cols 16 stride 16 : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<32x1x16xi8>
    vta.dep_push "store" -> "compute"
  }
  func.return
}
