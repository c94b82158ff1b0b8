// tensorize: i (4) split by 2 and j (16) by 8, reordered so the innermost nest is
// k x i.inner x j.inner, a 2 x 8 x 3 tile that cpu.fma_tile.2x8x3 replaces: the C tile
// is loaded into a local accumulator, updated over k with an unrolled i and a
// vectorized j, and stored back. The same nest with cpu.fma_tile.2x4x3 is refused.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/tensorize.json"}' | filecheck %s
// RUN: not strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/tensorize-refused.json"}' 2>&1 | filecheck %s --check-prefix=REFUSED

// CHECK-LABEL: func.func @matmul(%a: memref<4x3xf32>, %b: memref<3x16xf32>, %c: memref<4x16xf32> {loop.output}) attributes {loop.kernel} {
// CHECK-NEXT:   loop.for %i = 0 to 4 axis "i" attributes {stage = "matmul", init} {
// CHECK-NEXT:     loop.for %j = 0 to 16 axis "j" attributes {stage = "matmul", init} {
// CHECK-NEXT:       %init = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       memref.store %init, %c[%i, %j] : memref<4x16xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_outer = 0 to 2 axis "i.outer" attributes {stage = "matmul"} {
// CHECK-NEXT:     loop.for %j_outer = 0 to 2 axis "j.outer" attributes {stage = "matmul"} {
// CHECK-NEXT:       %0 = memref.alloc() : memref<2x8xf32, #loop.scope<local>>
// CHECK-NEXT:       loop.for %i_inner_load = 0 to 2 unrolled axis "i.inner.load" attributes {stage = "matmul", tensorized = "cpu.fma_tile.2x8x3"} {
// CHECK-NEXT:         loop.for %j_inner_load = 0 to 8 vectorized axis "j.inner.load" attributes {stage = "matmul"} {
// CHECK-NEXT:           %1 = arith.constant 8 : index
// CHECK-NEXT:           %2 = arith.muli %j_outer, %1 : index
// CHECK-NEXT:           %j_1 = arith.addi %2, %j_inner_load : index
// CHECK-NEXT:           %3 = arith.constant 2 : index
// CHECK-NEXT:           %4 = arith.muli %i_outer, %3 : index
// CHECK-NEXT:           %i_1 = arith.addi %4, %i_inner_load : index
// CHECK-NEXT:           %5 = memref.load %c[%i_1, %j_1] : memref<4x16xf32>
// CHECK-NEXT:           memref.store %5, %0[%i_inner_load, %j_inner_load] : memref<2x8xf32, #loop.scope<local>>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       loop.for %k = 0 to 3 axis "k" attributes {stage = "matmul", reduction, tensorized = "cpu.fma_tile.2x8x3"} {
// CHECK-NEXT:         loop.for %i_inner_update = 0 to 2 unrolled axis "i.inner.update" attributes {stage = "matmul"} {
// CHECK-NEXT:           loop.for %j_inner_update = 0 to 8 vectorized axis "j.inner.update" attributes {stage = "matmul"} {
// CHECK-NEXT:             %6 = arith.constant 8 : index
// CHECK-NEXT:             %7 = arith.muli %j_outer, %6 : index
// CHECK-NEXT:             %j_2 = arith.addi %7, %j_inner_update : index
// CHECK-NEXT:             %8 = arith.constant 2 : index
// CHECK-NEXT:             %9 = arith.muli %i_outer, %8 : index
// CHECK-NEXT:             %i_2 = arith.addi %9, %i_inner_update : index
// CHECK-NEXT:             %x = memref.load %a[%i_2, %k] : memref<4x3xf32>
// CHECK-NEXT:             %y = memref.load %b[%k, %j_2] : memref<3x16xf32>
// CHECK-NEXT:             %p = arith.mulf %x, %y : f32
// CHECK-NEXT:             %acc = memref.load %0[%i_inner_update, %j_inner_update] : memref<2x8xf32, #loop.scope<local>>
// CHECK-NEXT:             %sum = arith.addf %acc, %p : f32
// CHECK-NEXT:             memref.store %sum, %0[%i_inner_update, %j_inner_update] : memref<2x8xf32, #loop.scope<local>>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       loop.for %i_inner_store = 0 to 2 unrolled axis "i.inner.store" attributes {stage = "matmul", tensorized = "cpu.fma_tile.2x8x3"} {
// CHECK-NEXT:         loop.for %j_inner_store = 0 to 8 vectorized axis "j.inner.store" attributes {stage = "matmul"} {
// CHECK-NEXT:           %10 = arith.constant 8 : index
// CHECK-NEXT:           %11 = arith.muli %j_outer, %10 : index
// CHECK-NEXT:           %j_3 = arith.addi %11, %j_inner_store : index
// CHECK-NEXT:           %12 = arith.constant 2 : index
// CHECK-NEXT:           %13 = arith.muli %i_outer, %12 : index
// CHECK-NEXT:           %i_3 = arith.addi %13, %i_inner_store : index
// CHECK-NEXT:           %14 = memref.load %0[%i_inner_store, %j_inner_store] : memref<2x8xf32, #loop.scope<local>>
// CHECK-NEXT:           memref.store %14, %c[%i_3, %j_3] : memref<4x16xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       memref.dealloc %0 : memref<2x8xf32, #loop.scope<local>>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }

// REFUSED: error: apply-schedule: step 3 (tensorize) of the trace of @matmul: cannot tensorize loop 'k' of stage 'matmul' with cpu.fma_tile.2x4x3: trip counts differ: loop 'j.inner' has 8 iterations, axis j of the intrinsic 4
// REFUSED-NOT: Traceback
te.primitive @matmul {
  %a = te.placeholder "a" : tensor<4x3xf32>
  %b = te.placeholder "b" : tensor<3x16xf32>
  %c = te.reduce "matmul" sum (%i, %j) over (%k : 3) init 0.0 : tensor<4x16xf32> {
    %x = te.read %a[%i, %k] : tensor<4x3xf32>
    %y = te.read %b[%k, %j] : tensor<3x16xf32>
    %p = arith.mulf %x, %y : f32
    te.yield %p : f32
  }
  te.output %c : tensor<4x16xf32>
}
