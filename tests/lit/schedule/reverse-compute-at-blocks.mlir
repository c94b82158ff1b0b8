// reverse_compute_at through blocked reads: unblock reads blocked at [c // 8, w, c % 8]
// (a copy out of a blocked layout). Computed after loop j of blocked, it copies the
// channels of the block that iteration wrote (c from 8 * i, guarded at the 12 real
// ones), and blocked's buffer, read nowhere else, holds one block's row.
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/reverse-compute-at-blocks.json"}' | filecheck %s

// CHECK-LABEL: func.func @unblock(
// CHECK-NEXT:    %y = memref.alloc() : memref<1x1x8xf32, #loop.scope<local>>
// CHECK-NEXT:    loop.for %i = 0 to 2 axis "i" attributes {stage = "blocked"} {
// CHECK-NEXT:      loop.for %j = 0 to 3 axis "j" attributes {stage = "blocked"} {
// CHECK-NEXT:        loop.for %l = 0 to 8 axis "l" attributes {stage = "blocked"} {
// CHECK:               memref.store %v, %y[%{{.*}}, %{{.*}}, %l] : memref<1x1x8xf32, #loop.scope<local>>
// CHECK-NEXT:        }
// CHECK-NEXT:        loop.for %i_1 = 0 to 8 axis "i" attributes {stage = "unblock"} {
// CHECK-NEXT:          loop.for %j_1 = 0 to 1 axis "j" attributes {stage = "unblock"} {
// CHECK-NEXT:            %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK-NEXT:            %[[BASE:.*]] = arith.muli %i, %[[EIGHT]] : index
// CHECK-NEXT:            %i_2 = arith.addi %[[BASE]], %i_1 : index
// CHECK-NEXT:            %[[TWELVE:.*]] = arith.constant 12 : index
// CHECK-NEXT:            %[[IN:.*]] = arith.cmpi slt, %i_2, %[[TWELVE]] : index
// CHECK-NEXT:            %j_2 = arith.addi %j, %j_1 : index
// CHECK-NEXT:            scf.if %[[IN]] {
// CHECK:                   %b_1 = arith.divui %i_2, %{{.*}} : index
// CHECK-NEXT:              %l_1 = arith.remui %i_2, %{{.*}} : index
// CHECK:                   %[[BLOCK:.*]] = arith.addi %b_1, %{{.*}} : index
// CHECK-NEXT:              %v_1 = memref.load %y[%[[BLOCK]], %j_1, %l_1] : memref<1x1x8xf32, #loop.scope<local>>
// CHECK-NEXT:              memref.store %v_1, %o[%i_2, %j_2] : memref<12x3xf32>
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %y : memref<1x1x8xf32, #loop.scope<local>>
te.primitive @unblock {
  %x = te.placeholder "x" : tensor<12x3xf32>
  %y = te.compute "blocked" (%i, %j, %l) : tensor<2x3x8xf32> {
    %c8 = arith.constant 8 : index
    %b = arith.muli %i, %c8 : index
    %c = arith.addi %b, %l : index
    %c11 = arith.constant 11 : index
    %over = arith.cmpi ugt, %c, %c11 : index
    %cc = arith.select %over, %c11, %c : index
    %v = te.read %x[%cc, %j] : tensor<12x3xf32>
    te.yield %v : f32
  }
  %o = te.compute "unblock" (%i, %j) : tensor<12x3xf32> {
    %c8 = arith.constant 8 : index
    %b = arith.divui %i, %c8 : index
    %l = arith.remui %i, %c8 : index
    %v = te.read %y[%b, %j, %l] : tensor<2x3x8xf32>
    te.yield %v : f32
  }
  te.output %o : tensor<12x3xf32>
}
