// convert-loops-to-vta on the VTA template's schedule of a 16 -> 32 channel 3x3 conv2d
// with bias on a 2x4 image (tile_h 1, oc_tile 1, ic_tile 1, two virtual threads): the
// unrolled row-tile loop is expanded (its two copies differ in their DMA row pads), the
// vta.acc, vta.inp and vta.wgt buffers are placed in each virtual-thread loop (the bias
// after the 4-element accumulator tile), the init of the reduction is a GEMM reset, the
// zero-padded input copy a padded 2-D load, the weight copy one 2-D load, the tensorized
// GEMM nest one kernel (hardware loops kh and kw, a micro-op per output column), the
// epilogue ALU add (bias, tensor-tensor), shr, max, min and a store.
// The same kernel before scheduling (its buffers in local memory) is refused.
// RUN: strato-opt %s --split-input-file -p convert-loops-to-vta | filecheck %s
// RUN: not strato-opt %S/Inputs/convert-loops-to-vta-unscheduled.mlir -p convert-loops-to-vta 2>&1 | filecheck %s --check-prefix=REFUSED

// CHECK-LABEL: func.func @conv2d(%x: memref<8x1x16xi8>, %w: memref<18x16x16xi8>, %b: memref<2x1x16xi32>, %out: memref<16x1x16xi8>) {
// CHECK-NEXT:  loop.for %o_outer_outer = 0 to 1 axis "o.outer.outer" {
// CHECK-NEXT:  loop.for %o_outer_inner = 0 to 2 virtual_thread axis "o.outer.inner" {
// CHECK-NEXT:  %acc = vta.buffer offset 0 : memref<5x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:  %inp = vta.buffer offset 0 : memref<18x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:  vta.gemm %acc, %inp, %wgt loops {{\[\[}}4, 1, 0, 0]] uops {{\[\[}}0, 0, 0]] {reset} : memref<5x1x16xi32, #loop.scope<vta.acc>>, memref<18x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:  loop.for %c_outer = 0 to 1 axis "c.outer" {
// CHECK-NEXT:  %0 = arith.constant 0 : index
// CHECK-NEXT:  %1 = arith.constant 8 : index
// CHECK-NEXT:  %2 = arith.muli %c_outer, %1 : index
// CHECK-NEXT:  %3 = arith.addi %0, %2 : index
// CHECK-NEXT:  %4 = arith.constant 0 : index
// CHECK-NEXT:  vta.load %x[%3], %inp[%4] rows 2 cols 4 stride 4 pad [1, 0, 1, 1] : memref<8x1x16xi8>, memref<18x1x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT:  %5 = arith.constant 0 : index
// CHECK-NEXT:  %6 = arith.constant 9 : index
// CHECK-NEXT:  %7 = arith.muli %c_outer, %6 : index
// CHECK-NEXT:  %8 = arith.addi %5, %7 : index
// CHECK-NEXT:  %9 = arith.constant 18 : index
// CHECK-NEXT:  %10 = arith.muli %o_outer_outer, %9 : index
// CHECK-NEXT:  %11 = arith.addi %8, %10 : index
// CHECK-NEXT:  %12 = arith.constant 9 : index
// CHECK-NEXT:  %13 = arith.muli %o_outer_inner, %12 : index
// CHECK-NEXT:  %14 = arith.addi %11, %13 : index
// CHECK-NEXT:  %15 = arith.constant 0 : index
// CHECK-NEXT:  vta.load %w[%14], %wgt[%15] rows 1 cols 9 stride 9 : memref<18x16x16xi8>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:  vta.gemm %acc, %inp, %wgt loops {{\[\[}}3, 0, 6, 3], [3, 0, 1, 1]] uops {{\[\[}}0, 0, 0], [1, 1, 0], [2, 2, 0], [3, 3, 0]] : memref<5x1x16xi32, #loop.scope<vta.acc>>, memref<18x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:  }
// CHECK-NEXT:  %16 = arith.constant 0 : index
// CHECK-NEXT:  %17 = arith.constant 2 : index
// CHECK-NEXT:  %18 = arith.muli %o_outer_outer, %17 : index
// CHECK-NEXT:  %19 = arith.addi %16, %18 : index
// CHECK-NEXT:  %20 = arith.addi %19, %o_outer_inner : index
// CHECK-NEXT:  %21 = arith.constant 4 : index
// CHECK-NEXT:  vta.load %b[%20], %acc[%21] rows 1 cols 1 stride 1 : memref<2x1x16xi32>, memref<5x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:  vta.alu add %acc loops {{\[\[}}4, 1, 0]] uops {{\[\[}}0, 4]] : memref<5x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:  vta.alu shr %acc imm 8 loops {{\[\[}}4, 1, 1]] uops {{\[\[}}0, 0]] : memref<5x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:  vta.alu max %acc imm 0 loops {{\[\[}}4, 1, 1]] uops {{\[\[}}0, 0]] : memref<5x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:  vta.alu min %acc imm 127 loops {{\[\[}}4, 1, 1]] uops {{\[\[}}0, 0]] : memref<5x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NEXT:  %22 = arith.constant 0 : index
// CHECK-NEXT:  %23 = arith.constant 16 : index
// CHECK-NEXT:  %24 = arith.muli %o_outer_outer, %23 : index
// CHECK-NEXT:  %25 = arith.addi %22, %24 : index
// CHECK-NEXT:  %26 = arith.constant 8 : index
// CHECK-NEXT:  %27 = arith.muli %o_outer_inner, %26 : index
// CHECK-NEXT:  %28 = arith.addi %25, %27 : index
// CHECK-NEXT:  %29 = arith.constant 0 : index
// CHECK-NEXT:  vta.store %acc[%29], %out[%28] rows 1 cols 4 stride 4 : memref<5x1x16xi32, #loop.scope<vta.acc>>, memref<16x1x16xi8>
// CHECK-NEXT:  }
// CHECK-NEXT:  }
// CHECK:         loop.for %o_outer_inner_1 = 0 to 2 virtual_thread axis "o.outer.inner" {
// CHECK:           vta.load %x[%{{.*}}], %inp_1[%{{.*}}] rows 2 cols 4 stride 4 pad [0, 1, 1, 1]

// REFUSED: error: convert-loops-to-vta: @conv2d: buffer pad in scope local cannot live on VTA
// REFUSED-NOT: Traceback

func.func @conv2d(%x: memref<1x2x4x1x16xi8>, %w: memref<2x1x3x3x16x16xi8>, %b: memref<2x1x16xi32>, %out: memref<2x2x4x1x16xi8> {loop.output}) attributes {loop.kernel} {
  %pad = memref.alloc() : memref<1x4x6x1x16xi8, #loop.scope<local>>
  %acc = memref.alloc() : memref<2x2x4x1x16xi32, #loop.scope<local>>
  %acc_vta_acc = memref.alloc() : memref<1x1x4x1x16xi32, #loop.scope<vta.acc>>
  %b_vta_acc = memref.alloc() : memref<1x1x16xi32, #loop.scope<vta.acc>>
  %pad_vta_inp = memref.alloc() : memref<1x3x6x1x16xi8, #loop.scope<vta.inp>>
  %w_vta_wgt = memref.alloc() : memref<1x1x3x3x16x16xi8, #loop.scope<vta.wgt>>
  loop.for %y_outer = 0 to 2 unrolled axis "y.outer" attributes {stage = "out"} {
    loop.for %o_outer_outer = 0 to 1 axis "o.outer.outer" attributes {stage = "out"} {
      loop.for %o_outer_inner = 0 to 2 virtual_thread axis "o.outer.inner" attributes {stage = "out"} {
        loop.for %o = 0 to 1 axis "o" attributes {stage = "conv.vta.acc", init} {
          loop.for %y = 0 to 1 axis "y" attributes {stage = "conv.vta.acc", init} {
            loop.for %q = 0 to 4 axis "q" attributes {stage = "conv.vta.acc", init} {
              loop.for %n = 0 to 1 axis "n" attributes {stage = "conv.vta.acc", init} {
                loop.for %m = 0 to 16 axis "m" attributes {stage = "conv.vta.acc", init} {
                  %0 = arith.constant 2 : index
                  %1 = arith.muli %o_outer_outer, %0 : index
                  %2 = arith.addi %1, %o_outer_inner : index
                  %o_1 = arith.addi %2, %o : index
                  %y_1 = arith.addi %y_outer, %y : index
                  %init = arith.constant 0 : i32
                  memref.store %init, %acc_vta_acc[%o, %y, %q, %n, %m] : memref<1x1x4x1x16xi32, #loop.scope<vta.acc>>
                }
              }
            }
          }
        }
        loop.for %c_outer = 0 to 1 axis "c.outer" attributes {stage = "conv.vta.acc", reduction} {
          loop.for %ax0 = 0 to 1 axis "ax0" attributes {stage = "conv.vta.acc.pad.vta.inp"} {
            loop.for %ax1 = 0 to 3 axis "ax1" attributes {stage = "conv.vta.acc.pad.vta.inp"} {
              loop.for %ax2 = 0 to 6 axis "ax2" attributes {stage = "conv.vta.acc.pad.vta.inp"} {
                loop.for %ax3 = 0 to 1 axis "ax3" attributes {stage = "conv.vta.acc.pad.vta.inp"} {
                  loop.for %ax4 = 0 to 16 axis "ax4" attributes {stage = "conv.vta.acc.pad.vta.inp"} {
                    %ax0_1 = arith.addi %c_outer, %ax0 : index
                    %ax1_1 = arith.addi %y_outer, %ax1 : index
                    %p = arith.constant 1 : index
                    %hn = arith.constant 2 : index
                    %wn = arith.constant 4 : index
                    %zero = arith.constant 0 : index
                    %hs = arith.subi %ax1_1, %p : index
                    %vs = arith.subi %ax2, %p : index
                    %h0 = arith.cmpi sge, %hs, %zero : index
                    %h1 = arith.cmpi slt, %hs, %hn : index
                    %v0 = arith.cmpi sge, %vs, %zero : index
                    %v1 = arith.cmpi slt, %vs, %wn : index
                    %hin = arith.andi %h0, %h1 : i1
                    %vin = arith.andi %v0, %v1 : i1
                    %in = arith.andi %hin, %vin : i1
                    %hc = arith.select %hin, %hs, %zero : index
                    %vc = arith.select %vin, %vs, %zero : index
                    %e = memref.load %x[%ax0_1, %hc, %vc, %ax3, %ax4] : memref<1x2x4x1x16xi8>
                    %z = arith.constant 0 : i8
                    %r = arith.select %in, %e, %z : i8
                    memref.store %r, %pad_vta_inp[%ax0, %ax1, %ax2, %ax3, %ax4] : memref<1x3x6x1x16xi8, #loop.scope<vta.inp>>
                  }
                }
              }
            }
          }
          loop.for %ax0_2 = 0 to 1 axis "ax0" attributes {stage = "conv.vta.acc.w.vta.wgt"} {
            loop.for %ax1_2 = 0 to 1 axis "ax1" attributes {stage = "conv.vta.acc.w.vta.wgt"} {
              loop.for %ax2_1 = 0 to 3 axis "ax2" attributes {stage = "conv.vta.acc.w.vta.wgt"} {
                loop.for %ax3_1 = 0 to 3 axis "ax3" attributes {stage = "conv.vta.acc.w.vta.wgt"} {
                  loop.for %ax4_1 = 0 to 16 axis "ax4" attributes {stage = "conv.vta.acc.w.vta.wgt"} {
                    loop.for %ax5 = 0 to 16 axis "ax5" attributes {stage = "conv.vta.acc.w.vta.wgt"} {
                      %3 = arith.constant 2 : index
                      %4 = arith.muli %o_outer_outer, %3 : index
                      %5 = arith.addi %4, %o_outer_inner : index
                      %ax0_3 = arith.addi %5, %ax0_2 : index
                      %ax1_3 = arith.addi %c_outer, %ax1_2 : index
                      %6 = memref.load %w[%ax0_3, %ax1_3, %ax2_1, %ax3_1, %ax4_1, %ax5] : memref<2x1x3x3x16x16xi8>
                      memref.store %6, %w_vta_wgt[%ax0_2, %ax1_2, %ax2_1, %ax3_1, %ax4_1, %ax5] : memref<1x1x3x3x16x16xi8, #loop.scope<vta.wgt>>
                    }
                  }
                }
              }
            }
          }
          loop.for %o_2 = 0 to 1 axis "o" attributes {stage = "conv.vta.acc"} {
            loop.for %y_2 = 0 to 1 axis "y" attributes {stage = "conv.vta.acc"} {
              loop.for %c_inner = 0 to 1 axis "c.inner" attributes {stage = "conv.vta.acc", reduction} {
                loop.for %kh = 0 to 3 axis "kh" attributes {stage = "conv.vta.acc", reduction} {
                  loop.for %kw = 0 to 3 axis "kw" attributes {stage = "conv.vta.acc", reduction} {
                    loop.for %q_1 = 0 to 4 axis "q" attributes {stage = "conv.vta.acc"} {
                      loop.for %n_1 = 0 to 1 axis "n" attributes {stage = "conv.vta.acc", tensorized = "vta.gemm.1x16x16"} {
                        loop.for %m_1 = 0 to 16 axis "m" attributes {stage = "conv.vta.acc", tensorized = "vta.gemm.1x16x16"} {
                          loop.for %l = 0 to 16 axis "l" attributes {stage = "conv.vta.acc", reduction, tensorized = "vta.gemm.1x16x16"} {
                            %c = arith.addi %c_outer, %c_inner : index
                            %7 = arith.constant 2 : index
                            %8 = arith.muli %o_outer_outer, %7 : index
                            %9 = arith.addi %8, %o_outer_inner : index
                            %o_3 = arith.addi %9, %o_2 : index
                            %y_3 = arith.addi %y_outer, %y_2 : index
                            %s = arith.constant 1 : index
                            %ys = arith.muli %y_3, %s : index
                            %qs = arith.muli %q_1, %s : index
                            %yy = arith.addi %ys, %kh : index
                            %qq = arith.addi %qs, %kw : index
                            %10 = arith.addi %y_2, %kh : index
                            %a = memref.load %pad_vta_inp[%c_inner, %10, %qq, %n_1, %l] : memref<1x3x6x1x16xi8, #loop.scope<vta.inp>>
                            %k = memref.load %w_vta_wgt[%o_2, %c_inner, %kh, %kw, %m_1, %l] : memref<1x1x3x3x16x16xi8, #loop.scope<vta.wgt>>
                            %a32 = arith.extsi %a : i8 to i32
                            %k32 = arith.extsi %k : i8 to i32
                            %prod = arith.muli %a32, %k32 : i32
                            %acc_1 = memref.load %acc_vta_acc[%o_2, %y_2, %q_1, %n_1, %m_1] : memref<1x1x4x1x16xi32, #loop.scope<vta.acc>>
                            %sum = arith.addi %acc_1, %prod : i32
                            memref.store %sum, %acc_vta_acc[%o_2, %y_2, %q_1, %n_1, %m_1] : memref<1x1x4x1x16xi32, #loop.scope<vta.acc>>
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
        loop.for %ax0_4 = 0 to 1 axis "ax0" attributes {stage = "out.b.vta.acc"} {
          loop.for %ax1_4 = 0 to 1 axis "ax1" attributes {stage = "out.b.vta.acc"} {
            loop.for %ax2_2 = 0 to 16 axis "ax2" attributes {stage = "out.b.vta.acc"} {
              %11 = arith.constant 2 : index
              %12 = arith.muli %o_outer_outer, %11 : index
              %13 = arith.addi %12, %o_outer_inner : index
              %ax0_5 = arith.addi %13, %ax0_4 : index
              %14 = memref.load %b[%ax0_5, %ax1_4, %ax2_2] : memref<2x1x16xi32>
              memref.store %14, %b_vta_acc[%ax0_4, %ax1_4, %ax2_2] : memref<1x1x16xi32, #loop.scope<vta.acc>>
            }
          }
        }
        loop.for %o_inner = 0 to 1 axis "o.inner" attributes {stage = "out"} {
          loop.for %y_inner = 0 to 1 axis "y.inner" attributes {stage = "out"} {
            loop.for %q_2 = 0 to 4 axis "q" attributes {stage = "out"} {
              loop.for %n_2 = 0 to 1 axis "n" attributes {stage = "out"} {
                loop.for %m_2 = 0 to 16 axis "m" attributes {stage = "out"} {
                  %y_4 = arith.addi %y_outer, %y_inner : index
                  %15 = arith.constant 2 : index
                  %16 = arith.muli %o_outer_outer, %15 : index
                  %o_outer = arith.addi %16, %o_outer_inner : index
                  %o_4 = arith.addi %o_outer, %o_inner : index
                  %17 = memref.load %acc_vta_acc[%o_inner, %y_inner, %q_2, %n_2, %m_2] : memref<1x1x4x1x16xi32, #loop.scope<vta.acc>>
                  %bv = memref.load %b_vta_acc[%o_inner, %n_2, %m_2] : memref<1x1x16xi32, #loop.scope<vta.acc>>
                  %vb = arith.addi %17, %bv : i32
                  %shift = arith.constant 8 : i32
                  %sh = arith.shrsi %vb, %shift : i32
                  %lo = arith.constant 0 : i32
                  %hi = arith.constant 127 : i32
                  %mx = arith.maxsi %sh, %lo : i32
                  %mn = arith.minsi %mx, %hi : i32
                  %t = arith.trunci %mn : i32 to i8
                  memref.store %t, %out[%o_4, %y_4, %q_2, %n_2, %m_2] : memref<2x2x4x1x16xi8>
                }
              }
            }
          }
        }
      }
    }
  }
  memref.dealloc %pad : memref<1x4x6x1x16xi8, #loop.scope<local>>
  memref.dealloc %acc : memref<2x2x4x1x16xi32, #loop.scope<local>>
  memref.dealloc %acc_vta_acc : memref<1x1x4x1x16xi32, #loop.scope<vta.acc>>
  memref.dealloc %b_vta_acc : memref<1x1x16xi32, #loop.scope<vta.acc>>
  memref.dealloc %pad_vta_inp : memref<1x3x6x1x16xi8, #loop.scope<vta.inp>>
  memref.dealloc %w_vta_wgt : memref<1x1x3x3x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}
