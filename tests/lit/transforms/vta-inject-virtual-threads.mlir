// RUN: strato-opt %s -p vta-inject-virtual-threads | filecheck %s

// Buffers get a slice per thread, tasks (a run of one module's ops with their tokens) are
// copied for thread 0 then thread 1, the chunk loop is shared, %t becomes each thread's number.
// CHECK-LABEL: func.func @threads
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %thread0 = arith.constant 0 : index
// CHECK-NEXT:   %thread1 = arith.constant 1 : index
// CHECK-NEXT:   %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:   %inp_1 = vta.buffer offset 4 : memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:   %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:   %wgt_1 = vta.buffer offset 1 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:   %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:   %acc_1 = vta.buffer offset 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:   vta.gemm %acc, %inp, %wgt loops {{\[\[}}4, 1, 0, 0]] uops {{\[\[}}0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:   vta.dep_push "compute" -> "load"
// CHECK-NEXT:   vta.gemm %acc_1, %inp_1, %wgt_1 loops {{\[\[}}4, 1, 0, 0]] uops {{\[\[}}0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:   vta.dep_push "compute" -> "load"
// CHECK-NEXT:   loop.for %0 = 0 to 2 {
// CHECK-NEXT:     %c4 = arith.constant 4 : index
// CHECK-NEXT:     %c4_1 = arith.constant 4 : index
// CHECK-NEXT:     %d = arith.muli %thread0, %c4 : index
// CHECK-NEXT:     %d_1 = arith.muli %thread1, %c4_1 : index
// CHECK-NEXT:     vta.dep_pop "compute" -> "load"
// CHECK-NEXT:     vta.load %x[%d], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:     vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     vta.dep_push "load" -> "compute"
// CHECK-NEXT:     vta.dep_pop "compute" -> "load"
// CHECK-NEXT:     vta.load %x[%d_1], %inp_1[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:     vta.load %w[%c0], %wgt_1[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     vta.dep_push "load" -> "compute"
// CHECK-NEXT:     vta.dep_pop "load" -> "compute"
// CHECK-NEXT:     vta.gemm %acc, %inp, %wgt loops {{\[\[}}4, 1, 1, 0]] uops {{\[\[}}0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     vta.dep_push "compute" -> "load"
// CHECK-NEXT:     vta.dep_pop "load" -> "compute"
// CHECK-NEXT:     vta.gemm %acc_1, %inp_1, %wgt_1 loops {{\[\[}}4, 1, 1, 0]] uops {{\[\[}}0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:     vta.dep_push "compute" -> "load"
// CHECK-NEXT:   }
// CHECK-NEXT:   vta.dep_pop "compute" -> "load"
// CHECK-NEXT:   vta.alu shr %acc imm 3 loops {{\[\[}}4, 1, 1]] uops {{\[\[}}0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:   vta.dep_push "compute" -> "store"
// CHECK-NEXT:   vta.dep_pop "compute" -> "load"
// CHECK-NEXT:   vta.alu shr %acc_1 imm 3 loops {{\[\[}}4, 1, 1]] uops {{\[\[}}0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:   vta.dep_push "compute" -> "store"
// CHECK-NEXT:   %c4_2 = arith.constant 4 : index
// CHECK-NEXT:   %c4_3 = arith.constant 4 : index
// CHECK-NEXT:   %o = arith.muli %thread0, %c4_2 : index
// CHECK-NEXT:   %o_1 = arith.muli %thread1, %c4_3 : index
// CHECK-NEXT:   vta.dep_pop "compute" -> "store"
// CHECK-NEXT:   vta.store %acc[%c0], %out[%o] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
// CHECK-NEXT:   vta.dep_pop "compute" -> "store"
// CHECK-NEXT:   vta.store %acc_1[%c0], %out[%o_1] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
builtin.module {
  func.func @threads(%x: memref<8x1x16xi8>, %w: memref<1x16x16xi8>, %out: memref<8x1x16xi8>) {
    %c0 = arith.constant 0 : index
    loop.for %t = 0 to 2 virtual_thread {
      %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
      %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
      %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
      vta.gemm %acc, %inp, %wgt loops [[4, 1, 0, 0]] uops [[0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
      vta.dep_push "compute" -> "load"
      loop.for %k = 0 to 2 {
        %c4 = arith.constant 4 : index
        %d = arith.muli %t, %c4 : index
        vta.dep_pop "compute" -> "load"
        vta.load %x[%d], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
        vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
        vta.dep_push "load" -> "compute"
        vta.dep_pop "load" -> "compute"
        vta.gemm %acc, %inp, %wgt loops [[4, 1, 1, 0]] uops [[0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
        vta.dep_push "compute" -> "load"
      }
      vta.dep_pop "compute" -> "load"
      vta.alu shr %acc imm 3 loops [[4, 1, 1]] uops [[0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
      vta.dep_push "compute" -> "store"
      %c4_1 = arith.constant 4 : index
      %o = arith.muli %t, %c4_1 : index
      vta.dep_pop "compute" -> "store"
      vta.store %acc[%c0], %out[%o] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
    }
    func.return
  }
}

