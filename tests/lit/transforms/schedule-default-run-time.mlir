// RUN: strato-opt %s -p "schedule-default{lanes=16 registers=32 threads=2}" | filecheck %s

// A kernel of run-time sizes: attention's scores q k^T over a run-time batch and
// sequence (4 heads of 16), plus a mask. The update nest runs as register tiles of 12
// rows by 32 columns (then 16, then single columns): each tile starts at the init
// value (the init nest is gone), runs k around its unrolled rows and vectorized
// columns, and stores the mask's sum straight to the output (the add nest is gone,
// and the scores, which only it read, are not stored from the tile). The batch, the
// heads and the blocks of rows run as one parallel loop. The rows of a last partial
// block run as tiles of 4 rows while they last, then of single rows, each as wide as
// the whole blocks' tiles.
// CHECK-LABEL: func.func @scores(
// CHECK-SAME:    schedule.run_time_tiles = {s = "12x32"}
// CHECK-SAME:    schedule.parallel = {s = "i.h.l.blocks.fused"}
// CHECK-NOT:     init}
// CHECK:         loop.for %[[FUSED:.*]] = 0 to %{{.*}} parallel axis "i.h.l.blocks.fused" attributes {stage = "s"} {
// CHECK:           %[[COUNT:.*]] = arith.minui
// CHECK-NEXT:      %[[WHOLE:.*]] = arith.divui %[[COUNT]]
// CHECK-NEXT:      %[[PARTIAL:.*]] = arith.remui %[[COUNT]]
// CHECK-NEXT:      loop.for %{{.*}} = 0 to %[[WHOLE]] axis "l.whole" attributes {stage = "s"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to %{{.*}} axis "m.tiles32" attributes {stage = "s"} {
// CHECK:               %[[TILE:.*]] = memref.alloc() : memref<12x32xf32, #loop.scope<local>>
// CHECK-NEXT:          loop.for %[[R:.*]] = 0 to 12 unrolled axis "l.load"
// CHECK-NEXT:            loop.for %[[C:.*]] = 0 to 32 vectorized axis "m.load" attributes {stage = "s", vector_lanes = 16 : i64} {
// CHECK:                   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:              memref.store %[[ZERO]], %[[TILE]][%[[R]], %[[C]]]
// CHECK:               loop.for %{{.*}} = 0 to 16 axis "k" attributes {stage = "s", reduction} {
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 12 unrolled axis "l.update"
// CHECK-NEXT:              loop.for %{{.*}} = 0 to 32 vectorized axis "m.update"
// CHECK:               loop.for %{{.*}} = 0 to 12 unrolled axis "l.store"
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 32 vectorized axis "m.store"
// CHECK-NOT:               memref.store
// CHECK:                   %[[SUM:.*]] = memref.load %[[TILE]]
// CHECK-NEXT:              %[[MASK:.*]] = memref.load %mask_view
// CHECK-NEXT:              %[[Z:.*]] = arith.addf %[[SUM]], %[[MASK]] : f32
// CHECK-NEXT:              memref.store %[[Z]], %out_view
// CHECK:               memref.dealloc %[[TILE]]
// CHECK:             loop.for %{{.*}} axis "m.tiles16"
// CHECK:             loop.for %{{.*}} = 0 to 12 axis "l.left"
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          loop.for %{{.*}} axis "m.left"
// CHECK:           %[[FOURS:.*]] = arith.divui %[[PARTIAL]]
// CHECK-NEXT:      loop.for %{{.*}} = 0 to %[[FOURS]] axis "l.rows4"
// CHECK:             memref.alloc() : memref<4x32xf32, #loop.scope<local>>
// CHECK:             memref.alloc() : memref<4x16xf32, #loop.scope<local>>
// CHECK:             loop.for %{{.*}} = 0 to 4 axis "l.left"
// CHECK:           %[[ONES:.*]] = arith.subi %[[PARTIAL]]
// CHECK-NEXT:      loop.for %{{.*}} = 0 to %[[ONES]] axis "l.rows1"
// CHECK:             memref.alloc() : memref<1x32xf32, #loop.scope<local>>
// CHECK:             memref.alloc() : memref<1x16xf32, #loop.scope<local>>
// CHECK:             loop.for %{{.*}} = 0 to 1 axis "l.left"
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          loop.for %{{.*}} axis "m.left"
// CHECK:                 loop.for %{{.*}} = 0 to 16 axis "k" attributes {stage = "s", reduction}
// CHECK-NOT:     loop.for
// CHECK:         memref.dealloc %s
func.func @scores(%q: memref<?xf32>, %kt: memref<?xf32>, %mask: memref<?xf32>, %out: memref<?xf32> {loop.output}, %b: index, %n: index) attributes {loop.kernel} {
  %c16 = arith.constant 16 : index
  %c4 = arith.constant 4 : index
  %sq = arith.muli %n, %n : index
  %hsq = arith.muli %sq, %c4 : index
  %n16 = arith.muli %n, %c16 : index
  %hn16 = arith.muli %n16, %c4 : index
  %q_view = memref.reinterpret_cast %q to offset: [0], sizes: [%b, 4, %n, 16], strides: [%hn16, %n16, 16, 1] : memref<?xf32> to memref<?x4x?x16xf32, strided<[?, ?, 16, 1]>>
  %kt_view = memref.reinterpret_cast %kt to offset: [0], sizes: [%b, 4, 16, %n], strides: [%hn16, %n16, %n, 1] : memref<?xf32> to memref<?x4x16x?xf32, strided<[?, ?, ?, 1]>>
  %mask_view = memref.reinterpret_cast %mask to offset: [0], sizes: [%b, %n], strides: [%n, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
  %out_view = memref.reinterpret_cast %out to offset: [0], sizes: [%b, 4, %n, %n], strides: [%hsq, %sq, %n, 1] : memref<?xf32> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
  %bh = arith.muli %b, %hsq : index
  %s = memref.alloc(%bh) : memref<?xf32, #loop.scope<local>>
  %s_view = memref.reinterpret_cast %s to offset: [0], sizes: [%b, 4, %n, %n], strides: [%hsq, %sq, %n, 1] : memref<?xf32, #loop.scope<local>> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>, #loop.scope<local>>
  loop.for %i = 0 to %b axis "i" attributes {stage = "s", init} {
    loop.for %h = 0 to 4 axis "h" attributes {stage = "s", init} {
      loop.for %l = 0 to %n axis "l" attributes {stage = "s", init} {
        loop.for %m = 0 to %n axis "m" attributes {stage = "s", init} {
          %zero = arith.constant 0.000000e+00 : f32
          memref.store %zero, %s_view[%i, %h, %l, %m] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>, #loop.scope<local>>
        }
      }
    }
  }
  loop.for %i_1 = 0 to %b axis "i" attributes {stage = "s"} {
    loop.for %h_1 = 0 to 4 axis "h" attributes {stage = "s"} {
      loop.for %l_1 = 0 to %n axis "l" attributes {stage = "s"} {
        loop.for %m_1 = 0 to %n axis "m" attributes {stage = "s"} {
          loop.for %k = 0 to 16 axis "k" attributes {stage = "s", reduction} {
            %x = memref.load %q_view[%i_1, %h_1, %l_1, %k] : memref<?x4x?x16xf32, strided<[?, ?, 16, 1]>>
            %y = memref.load %kt_view[%i_1, %h_1, %k, %m_1] : memref<?x4x16x?xf32, strided<[?, ?, ?, 1]>>
            %p = arith.mulf %x, %y : f32
            %acc = memref.load %s_view[%i_1, %h_1, %l_1, %m_1] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>, #loop.scope<local>>
            %sum = arith.addf %acc, %p : f32
            memref.store %sum, %s_view[%i_1, %h_1, %l_1, %m_1] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>, #loop.scope<local>>
          }
        }
      }
    }
  }
  loop.for %i_2 = 0 to %b axis "i" attributes {stage = "add"} {
    loop.for %h_2 = 0 to 4 axis "h" attributes {stage = "add"} {
      loop.for %l_2 = 0 to %n axis "l" attributes {stage = "add"} {
        loop.for %m_2 = 0 to %n axis "m" attributes {stage = "add"} {
          %v = memref.load %s_view[%i_2, %h_2, %l_2, %m_2] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>, #loop.scope<local>>
          %w = memref.load %mask_view[%i_2, %m_2] : memref<?x?xf32, strided<[?, 1]>>
          %z = arith.addf %v, %w : f32
          memref.store %z, %out_view[%i_2, %h_2, %l_2, %m_2] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
        }
      }
    }
  }
  memref.dealloc %s : memref<?xf32, #loop.scope<local>>
  func.return
}

// The stage after the product writes a buffer the product reads (hand-written; a
// lowering gives each stage its own): it must run after the whole product, so it stays
// a nest of its own, and the tiles store the product.
// CHECK-LABEL: func.func @epilogue_writes_an_input(
// CHECK-SAME:    schedule.run_time_tiles = {p = "12x32"}
// CHECK:         loop.for %{{.*}} axis "l.store"
// CHECK-NEXT:      loop.for %{{.*}} axis "m.store"
// CHECK:             memref.store %{{.*}}, %p_view
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK:         loop.for %{{.*}} axis "l" attributes {stage = "neg"}
func.func @epilogue_writes_an_input(%a: memref<?xf32>, %b: memref<?xf32>, %out: memref<?xf32> {loop.output}, %n: index) attributes {loop.kernel} {
  %c8 = arith.constant 8 : index
  %n8 = arith.muli %n, %c8 : index
  %nn = arith.muli %n, %n : index
  %a_view = memref.reinterpret_cast %a to offset: [0], sizes: [%n, 8], strides: [8, 1] : memref<?xf32> to memref<?x8xf32, strided<[8, 1]>>
  %b_view = memref.reinterpret_cast %b to offset: [0], sizes: [8, %n], strides: [%n, 1] : memref<?xf32> to memref<8x?xf32, strided<[?, 1]>>
  %p = memref.alloc(%nn) : memref<?xf32, #loop.scope<local>>
  %p_view = memref.reinterpret_cast %p to offset: [0], sizes: [%n, %n], strides: [%n, 1] : memref<?xf32, #loop.scope<local>> to memref<?x?xf32, strided<[?, 1]>, #loop.scope<local>>
  loop.for %l = 0 to %n axis "l" attributes {stage = "p"} {
    loop.for %m = 0 to %n axis "m" attributes {stage = "p"} {
      loop.for %k = 0 to 8 axis "k" attributes {stage = "p", reduction} {
        %x = memref.load %a_view[%l, %k] : memref<?x8xf32, strided<[8, 1]>>
        %y = memref.load %b_view[%k, %m] : memref<8x?xf32, strided<[?, 1]>>
        %xy = arith.mulf %x, %y : f32
        %acc = memref.load %p_view[%l, %m] : memref<?x?xf32, strided<[?, 1]>, #loop.scope<local>>
        %sum = arith.addf %acc, %xy : f32
        memref.store %sum, %p_view[%l, %m] : memref<?x?xf32, strided<[?, 1]>, #loop.scope<local>>
      }
    }
  }
  loop.for %l_1 = 0 to %n axis "l" attributes {stage = "neg"} {
    loop.for %m_1 = 0 to %n axis "m" attributes {stage = "neg"} {
      %v = memref.load %p_view[%l_1, %m_1] : memref<?x?xf32, strided<[?, 1]>, #loop.scope<local>>
      %w = arith.negf %v : f32
      memref.store %w, %b_view[%m_1, %l_1] : memref<8x?xf32, strided<[?, 1]>>
    }
  }
  memref.dealloc %p : memref<?xf32, #loop.scope<local>>
  func.return
}

// A row maximum kept as a dimension of 1 (a softmax's first stage) over a run-time
// batch and row count: the parallel loop fuses the batch, the heads and the rows, and
// the loop of one iteration takes no part (its index is 0): the fused index is divided
// by the rows and the heads only, so the loop over a task's iterations can run it as
// rows inside heads (convert-loops-to-llvm's row nest).
// CHECK-LABEL: func.func @row_max(
// CHECK:         loop.for %[[F:.*]] = 0 to %{{.*}} parallel axis "i.j.l.m.fused" attributes {stage = "row_max"} {
// CHECK-NEXT:      %[[L:.*]] = arith.remui %[[F]], %s : index
// CHECK-NEXT:      %[[JI:.*]] = arith.divui %[[F]], %s : index
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[JI]], %{{.*}} : index
// CHECK-NEXT:      %[[I:.*]] = arith.divui %[[JI]], %{{.*}} : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      loop.for %[[K:.*]] = 0 to %s axis "k" attributes {stage = "row_max", reduction} {
// CHECK:             memref.load %max_view[%[[I]], %[[J]], %[[L]], %[[ZERO]]]
func.func @row_max(%x: memref<?xf32>, %max: memref<?xf32> {loop.output}, %b: index, %s: index) attributes {loop.kernel} {
  %0 = arith.muli %s, %s : index
  %1 = arith.constant 4 : index
  %2 = arith.muli %0, %1 : index
  %x_view = memref.reinterpret_cast %x to offset: [0], sizes: [%b, 4, %s, %s], strides: [%2, %0, %s, 1] : memref<?xf32> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
  %3 = arith.muli %s, %1 : index
  %max_view = memref.reinterpret_cast %max to offset: [0], sizes: [%b, 4, %s, 1], strides: [%3, %s, 1, 1] : memref<?xf32> to memref<?x4x?x1xf32, strided<[?, ?, 1, 1]>>
  loop.for %i = 0 to %b axis "i" attributes {stage = "row_max"} {
    loop.for %j = 0 to 4 axis "j" attributes {stage = "row_max"} {
      loop.for %l = 0 to %s axis "l" attributes {stage = "row_max"} {
        loop.for %m = 0 to 1 axis "m" attributes {stage = "row_max"} {
          loop.for %k = 0 to %s axis "k" attributes {stage = "row_max", reduction} {
            %v = memref.load %x_view[%i, %j, %l, %k] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
            %acc = memref.load %max_view[%i, %j, %l, %m] : memref<?x4x?x1xf32, strided<[?, ?, 1, 1]>>
            %larger = arith.maximumf %acc, %v : f32
            memref.store %larger, %max_view[%i, %j, %l, %m] : memref<?x4x?x1xf32, strided<[?, ?, 1, 1]>>
          }
        }
      }
    }
  }
  func.return
}

// An element-wise nest over a run-time batch and sequence whose accesses are all the
// element the indices name in a row-major view of a flat buffer (or a scalar): one
// loop over every element, at the flat index of the buffers themselves, strip-mined
// into vectors of 16 (then 8, 4 and the rest) for the whole tensor, not per row of
// %s elements, and made parallel.
// CHECK-LABEL: func.func @flat_where(
// CHECK-SAME:    schedule.parallel = {where = "i.j.l.m.flat.outer"}
// CHECK:         %yv = memref.reinterpret_cast
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[BH:.*]] = arith.muli %b, %[[C4]] : index
// CHECK-NEXT:    %[[BHS:.*]] = arith.muli %[[BH]], %s : index
// CHECK-NEXT:    %[[ALL:.*]] = arith.muli %[[BHS]], %s : index
// CHECK-NEXT:    %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[VECTORS:.*]] = arith.divui %[[ALL]], %[[SIXTEEN]] : index
// CHECK:         loop.for %[[O:.*]] = 0 to %[[VECTORS]] parallel axis "i.j.l.m.flat.outer" attributes {stage = "where"} {
// CHECK:           loop.for %{{.*}} = 0 to 16 vectorized axis "i.j.l.m.flat.inner"
// CHECK-NEXT:        %[[F:.*]] = arith.addi
// CHECK-NEXT:        %{{.*}} = memref.load %fx[%[[F]]] : memref<?xf32>
// CHECK:             memref.load %fc[%{{.*}}] : memref<1xf32>
// CHECK:             memref.store %{{.*}}, %fy[%[[F]]] : memref<?xf32>
// CHECK:         loop.for %{{.*}} axis "i.j.l.m.flat.tail"
// A mask broadcast over the heads ([b, 1, s, s] read at [i, 0, l, m]) is not the
// element the indices name: that nest keeps its loops.
// CHECK-LABEL: func.func @broadcast_mask(
// CHECK-NOT:     flat
// CHECK:         loop.for %{{.*}} parallel axis "i.j.l.fused"
func.func @flat_where(%fx: memref<?xf32>, %fc: memref<1xf32>, %fy: memref<?xf32> {loop.output}, %b: index, %s: index) attributes {loop.kernel} {
  %0 = arith.muli %s, %s : index
  %1 = arith.constant 4 : index
  %2 = arith.muli %0, %1 : index
  %xv = memref.reinterpret_cast %fx to offset: [0], sizes: [%b, 4, %s, %s], strides: [%2, %0, %s, 1] : memref<?xf32> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
  %yv = memref.reinterpret_cast %fy to offset: [0], sizes: [%b, 4, %s, %s], strides: [%2, %0, %s, 1] : memref<?xf32> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
  loop.for %i = 0 to %b axis "i" attributes {stage = "where"} {
    loop.for %j = 0 to 4 axis "j" attributes {stage = "where"} {
      loop.for %l = 0 to %s axis "l" attributes {stage = "where"} {
        loop.for %m = 0 to %s axis "m" attributes {stage = "where"} {
          %v = memref.load %xv[%i, %j, %l, %m] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
          %nan = arith.cmpf uno, %v, %v : f32
          %z = arith.constant 0 : index
          %k = memref.load %fc[%z] : memref<1xf32>
          %r = arith.select %nan, %k, %v : f32
          memref.store %r, %yv[%i, %j, %l, %m] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
        }
      }
    }
  }
  func.return
}
func.func @broadcast_mask(%mx: memref<?xf32>, %mask: memref<?xf32>, %my: memref<?xf32> {loop.output}, %b: index, %s: index) attributes {loop.kernel} {
  %0 = arith.muli %s, %s : index
  %1 = arith.constant 4 : index
  %2 = arith.muli %0, %1 : index
  %xv = memref.reinterpret_cast %mx to offset: [0], sizes: [%b, 4, %s, %s], strides: [%2, %0, %s, 1] : memref<?xf32> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
  %kv = memref.reinterpret_cast %mask to offset: [0], sizes: [%b, 1, %s, %s], strides: [%0, %0, %s, 1] : memref<?xf32> to memref<?x1x?x?xf32, strided<[?, ?, ?, 1]>>
  %yv = memref.reinterpret_cast %my to offset: [0], sizes: [%b, 4, %s, %s], strides: [%2, %0, %s, 1] : memref<?xf32> to memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
  loop.for %i = 0 to %b axis "i" attributes {stage = "masked"} {
    loop.for %j = 0 to 4 axis "j" attributes {stage = "masked"} {
      loop.for %l = 0 to %s axis "l" attributes {stage = "masked"} {
        loop.for %m = 0 to %s axis "m" attributes {stage = "masked"} {
          %v = memref.load %xv[%i, %j, %l, %m] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
          %z = arith.constant 0 : index
          %k = memref.load %kv[%i, %z, %l, %m] : memref<?x1x?x?xf32, strided<[?, ?, ?, 1]>>
          %r = arith.addf %v, %k : f32
          memref.store %r, %yv[%i, %j, %l, %m] : memref<?x4x?x?xf32, strided<[?, ?, ?, 1]>>
        }
      }
    }
  }
  func.return
}

// Attention's product with v of heads of 8 (MobileBERT's): 8 columns, fewer than a
// vector of 16 holds, are tiled by vectors of 8; the sequence is contracted.
// CHECK-LABEL: func.func @narrow_heads(
// CHECK-SAME:    schedule.run_time_tiles = {c = "12x8"}
// CHECK:         loop.for %{{.*}} = 0 to 1 axis "m.tiles8" attributes {stage = "c"} {
// CHECK:           memref.alloc() : memref<12x8xf32, #loop.scope<local>>
// CHECK:           loop.for %{{.*}} = 0 to %n axis "k" attributes {stage = "c", reduction} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 12 unrolled axis "l.update"
// CHECK-NEXT:          loop.for %{{.*}} = 0 to 8 vectorized axis "m.update"
func.func @narrow_heads(%w: memref<?xf32>, %v: memref<?xf32>, %out: memref<?xf32> {loop.output}, %n: index) attributes {loop.kernel} {
  %c8 = arith.constant 8 : index
  %w_view = memref.reinterpret_cast %w to offset: [0], sizes: [%n, %n], strides: [%n, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
  %v_view = memref.reinterpret_cast %v to offset: [0], sizes: [%n, 8], strides: [8, 1] : memref<?xf32> to memref<?x8xf32, strided<[8, 1]>>
  %out_view = memref.reinterpret_cast %out to offset: [0], sizes: [%n, 8], strides: [8, 1] : memref<?xf32> to memref<?x8xf32, strided<[8, 1]>>
  loop.for %l = 0 to %n axis "l" attributes {stage = "c", init} {
    loop.for %m = 0 to 8 axis "m" attributes {stage = "c", init} {
      %zero = arith.constant 0.000000e+00 : f32
      memref.store %zero, %out_view[%l, %m] : memref<?x8xf32, strided<[8, 1]>>
    }
  }
  loop.for %l_1 = 0 to %n axis "l" attributes {stage = "c"} {
    loop.for %m_1 = 0 to 8 axis "m" attributes {stage = "c"} {
      loop.for %k = 0 to %n axis "k" attributes {stage = "c", reduction} {
        %x = memref.load %w_view[%l_1, %k] : memref<?x?xf32, strided<[?, 1]>>
        %y = memref.load %v_view[%k, %m_1] : memref<?x8xf32, strided<[8, 1]>>
        %p = arith.mulf %x, %y : f32
        %acc = memref.load %out_view[%l_1, %m_1] : memref<?x8xf32, strided<[8, 1]>>
        %sum = arith.addf %acc, %p : f32
        memref.store %sum, %out_view[%l_1, %m_1] : memref<?x8xf32, strided<[8, 1]>>
      }
    }
  }
  func.return
}
