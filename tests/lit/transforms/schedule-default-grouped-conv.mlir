// RUN: strato-opt %s -p "schedule-default{lanes=8 threads=1}" | filecheck %s

// A grouped convolution in NCHW8c whose groups are one channel block each (16 channels,
// groups 2, stride 2, padding 1): each output block reads an input block of its own, so
// the padded input is computed per output row inside the accumulator tile (the three
// padded rows of one input block that row reads: 1x1x3x7x8), as a depthwise
// convolution's is, instead of as a padded copy of the whole input (1x2x8x8x8) ahead of
// the convolution.
// CHECK-LABEL: func.func @blocked_conv_1(
// CHECK-SAME:    blocked_conv = "conv2d_nchwc"
// CHECK-NOT:     memref<1x2x8x8x8xf32
// CHECK:         memref.alloc() : memref<1x1x3x7x8xf32, #loop.scope<local>>
// CHECK:         loop.for %{{.*}} = 0 to 3 axis "l" attributes {stage = "blocked_conv"} {
// CHECK:           attributes {stage = "blocked_conv.local"} {
// CHECK:             loop.for %{{.*}} = 0 to 3 axis "l" attributes {stage = "pad"} {
// CHECK-NEXT:          loop.for %{{.*}} = 0 to 7 axis "m" attributes {stage = "pad"} {
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 8 vectorized axis "n" attributes {stage = "pad"} {
// CHECK:             loop.for %{{.*}} = 0 to 3 axis "k0" attributes {stage = "blocked_conv.local", reduction} {
// CHECK-NOT:     memref<1x2x8x8x8xf32
func.func @blocked_conv_1(%x_blocked: memref<1x2x6x6x8xf32>, %w: memref<2x1x3x3x8x8xf32>, %y: memref<1x2x3x3x8xf32> {loop.output}) attributes {loop.kernel} {
  %0 = memref.alloc() : memref<1x2x8x8x8xf32, #loop.scope<local>>
  loop.for %i = 0 to 1 axis "i" attributes {stage = "pad"} {
    loop.for %j = 0 to 2 axis "j" attributes {stage = "pad"} {
      loop.for %l = 0 to 8 axis "l" attributes {stage = "pad"} {
        loop.for %m = 0 to 8 axis "m" attributes {stage = "pad"} {
          loop.for %n = 0 to 8 axis "n" attributes {stage = "pad"} {
            %1 = arith.constant 1 : index
            %2 = arith.subi %l, %1 : index
            %3 = arith.constant 6 : index
            %4 = arith.cmpi ult, %2, %3 : index
            %5 = arith.constant 0 : index
            %6 = arith.select %4, %2, %5 : index
            %7 = arith.constant 1 : index
            %8 = arith.subi %m, %7 : index
            %9 = arith.constant 6 : index
            %10 = arith.cmpi ult, %8, %9 : index
            %11 = arith.andi %4, %10 : i1
            %12 = arith.constant 0 : index
            %13 = arith.select %10, %8, %12 : index
            %14 = memref.load %x_blocked[%i, %j, %6, %13, %n] : memref<1x2x6x6x8xf32>
            %15 = arith.constant 0.000000e+00 : f32
            %16 = arith.select %11, %14, %15 : f32
            memref.store %16, %0[%i, %j, %l, %m, %n] : memref<1x2x8x8x8xf32, #loop.scope<local>>
          }
        }
      }
    }
  }
  loop.for %i_1 = 0 to 1 axis "i" attributes {stage = "blocked_conv", init} {
    loop.for %j_1 = 0 to 2 axis "j" attributes {stage = "blocked_conv", init} {
      loop.for %l_1 = 0 to 3 axis "l" attributes {stage = "blocked_conv", init} {
        loop.for %m_1 = 0 to 3 axis "m" attributes {stage = "blocked_conv", init} {
          loop.for %n_1 = 0 to 8 axis "n" attributes {stage = "blocked_conv", init} {
            %init = arith.constant 0.000000e+00 : f32
            memref.store %init, %y[%i_1, %j_1, %l_1, %m_1, %n_1] : memref<1x2x3x3x8xf32>
          }
        }
      }
    }
  }
  loop.for %i_2 = 0 to 1 axis "i" attributes {stage = "blocked_conv"} {
    loop.for %j_2 = 0 to 2 axis "j" attributes {stage = "blocked_conv"} {
      loop.for %l_2 = 0 to 3 axis "l" attributes {stage = "blocked_conv"} {
        loop.for %m_2 = 0 to 3 axis "m" attributes {stage = "blocked_conv"} {
          loop.for %n_2 = 0 to 8 axis "n" attributes {stage = "blocked_conv"} {
            loop.for %k0 = 0 to 3 axis "k0" attributes {stage = "blocked_conv", reduction} {
              loop.for %k1 = 0 to 3 axis "k1" attributes {stage = "blocked_conv", reduction} {
                loop.for %k2 = 0 to 8 axis "k2" attributes {stage = "blocked_conv", reduction} {
                  %17 = arith.constant 2 : index
                  %18 = arith.muli %l_2, %17 : index
                  %19 = arith.addi %18, %k0 : index
                  %20 = arith.constant 2 : index
                  %21 = arith.muli %m_2, %20 : index
                  %22 = arith.addi %21, %k1 : index
                  %23 = arith.constant 0 : index
                  %24 = memref.load %0[%i_2, %j_2, %19, %22, %k2] : memref<1x2x8x8x8xf32, #loop.scope<local>>
                  %25 = arith.constant 0 : index
                  %26 = memref.load %w[%j_2, %25, %k0, %k1, %k2, %n_2] : memref<2x1x3x3x8x8xf32>
                  %27 = arith.mulf %24, %26 : f32
                  %acc = memref.load %y[%i_2, %j_2, %l_2, %m_2, %n_2] : memref<1x2x3x3x8xf32>
                  %sum = arith.addf %acc, %27 : f32
                  memref.store %sum, %y[%i_2, %j_2, %l_2, %m_2, %n_2] : memref<1x2x3x3x8xf32>
                }
              }
            }
          }
        }
      }
    }
  }
  memref.dealloc %0 : memref<1x2x8x8x8xf32, #loop.scope<local>>
  func.return
}

// A depthwise convolution in NCHW16c (16 channels, 3x3, padding 1) followed by its ReLU:
// its input moves with the output channel's lanes, so it takes the depthwise defaults of
// the blocked template: a tile of 7 output columns of one channel block (the regular
// defaults' 14 columns x 2 blocks leave too few registers for the window's inputs).
// CHECK-LABEL: func.func @depthwise_relu(
// CHECK-SAME:    blocked_conv = "depthwise_conv2d_nchwc"
// CHECK-SAME:    blocked_conv = {rows = 7 : i64, accumulators = 8 : i64, copy_out = true}
// CHECK:         memref.alloc() : memref<1x1x1x7x16xf32, #loop.scope<local>>
// CHECK:         loop.for %{{.*}} = 0 to 2 axis "m.outer" attributes {stage = "blocked_conv"} {
// CHECK:           loop.for %{{.*}} = 0 to 7 unrolled axis "m" attributes {stage = "blocked_conv.local"} {
func.func @depthwise_relu(%X_blocked: memref<1x1x14x14x16xf32>, %W: memref<1x1x3x3x1x16xf32>, %U: memref<1x1x14x14x16xf32> {loop.output}) attributes {loop.kernel} {
  %0 = memref.alloc() : memref<1x1x16x16x16xf32, #loop.scope<local>>
  loop.for %i = 0 to 1 axis "i" attributes {stage = "pad"} {
    loop.for %j = 0 to 1 axis "j" attributes {stage = "pad"} {
      loop.for %l = 0 to 16 axis "l" attributes {stage = "pad"} {
        loop.for %m = 0 to 16 axis "m" attributes {stage = "pad"} {
          loop.for %n = 0 to 16 axis "n" attributes {stage = "pad"} {
            %1 = arith.constant 1 : index
            %2 = arith.subi %l, %1 : index
            %3 = arith.constant 14 : index
            %4 = arith.cmpi ult, %2, %3 : index
            %5 = arith.constant 0 : index
            %6 = arith.select %4, %2, %5 : index
            %7 = arith.constant 1 : index
            %8 = arith.subi %m, %7 : index
            %9 = arith.constant 14 : index
            %10 = arith.cmpi ult, %8, %9 : index
            %11 = arith.andi %4, %10 : i1
            %12 = arith.constant 0 : index
            %13 = arith.select %10, %8, %12 : index
            %14 = memref.load %X_blocked[%i, %j, %6, %13, %n] : memref<1x1x14x14x16xf32>
            %15 = arith.constant 0.000000e+00 : f32
            %16 = arith.select %11, %14, %15 : f32
            memref.store %16, %0[%i, %j, %l, %m, %n] : memref<1x1x16x16x16xf32, #loop.scope<local>>
          }
        }
      }
    }
  }
  %T = memref.alloc() : memref<1x1x14x14x16xf32, #loop.scope<local>>
  loop.for %i_1 = 0 to 1 axis "i" attributes {stage = "blocked_conv", init} {
    loop.for %j_1 = 0 to 1 axis "j" attributes {stage = "blocked_conv", init} {
      loop.for %l_1 = 0 to 14 axis "l" attributes {stage = "blocked_conv", init} {
        loop.for %m_1 = 0 to 14 axis "m" attributes {stage = "blocked_conv", init} {
          loop.for %n_1 = 0 to 16 axis "n" attributes {stage = "blocked_conv", init} {
            %init = arith.constant 0.000000e+00 : f32
            memref.store %init, %T[%i_1, %j_1, %l_1, %m_1, %n_1] : memref<1x1x14x14x16xf32, #loop.scope<local>>
          }
        }
      }
    }
  }
  loop.for %i_2 = 0 to 1 axis "i" attributes {stage = "blocked_conv"} {
    loop.for %j_2 = 0 to 1 axis "j" attributes {stage = "blocked_conv"} {
      loop.for %l_2 = 0 to 14 axis "l" attributes {stage = "blocked_conv"} {
        loop.for %m_2 = 0 to 14 axis "m" attributes {stage = "blocked_conv"} {
          loop.for %n_2 = 0 to 16 axis "n" attributes {stage = "blocked_conv"} {
            loop.for %k = 0 to 1 axis "k" attributes {stage = "blocked_conv", reduction} {
              %17 = arith.constant 0 : index
              %18 = arith.constant 0 : index
              %19 = arith.constant 0 : index
              %20 = arith.constant 1 : index
              %21 = arith.constant 0 : index
              %22 = arith.constant 2 : index
              %23 = arith.constant 1 : index
              %24 = arith.constant 0 : index
              %25 = arith.constant 1 : index
              %26 = arith.constant 1 : index
              %27 = arith.constant 1 : index
              %28 = arith.constant 2 : index
              %29 = arith.constant 2 : index
              %30 = arith.constant 0 : index
              %31 = arith.constant 2 : index
              %32 = arith.constant 1 : index
              %33 = arith.constant 2 : index
              %34 = arith.constant 2 : index
              %35 = arith.constant 0 : index
              %36 = arith.addi %l_2, %17 : index
              %37 = arith.addi %m_2, %18 : index
              %38 = memref.load %0[%i_2, %j_2, %36, %37, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %39 = memref.load %W[%j_2, %35, %17, %18, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %40 = arith.mulf %38, %39 : f32
              %41 = arith.addi %l_2, %19 : index
              %42 = arith.addi %m_2, %20 : index
              %43 = memref.load %0[%i_2, %j_2, %41, %42, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %44 = memref.load %W[%j_2, %35, %19, %20, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %45 = arith.mulf %43, %44 : f32
              %46 = arith.addi %l_2, %21 : index
              %47 = arith.addi %m_2, %22 : index
              %48 = memref.load %0[%i_2, %j_2, %46, %47, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %49 = memref.load %W[%j_2, %35, %21, %22, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %50 = arith.mulf %48, %49 : f32
              %51 = arith.addi %l_2, %23 : index
              %52 = arith.addi %m_2, %24 : index
              %53 = memref.load %0[%i_2, %j_2, %51, %52, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %54 = memref.load %W[%j_2, %35, %23, %24, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %55 = arith.mulf %53, %54 : f32
              %56 = arith.addi %l_2, %25 : index
              %57 = arith.addi %m_2, %26 : index
              %58 = memref.load %0[%i_2, %j_2, %56, %57, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %59 = memref.load %W[%j_2, %35, %25, %26, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %60 = arith.mulf %58, %59 : f32
              %61 = arith.addi %l_2, %27 : index
              %62 = arith.addi %m_2, %28 : index
              %63 = memref.load %0[%i_2, %j_2, %61, %62, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %64 = memref.load %W[%j_2, %35, %27, %28, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %65 = arith.mulf %63, %64 : f32
              %66 = arith.addi %l_2, %29 : index
              %67 = arith.addi %m_2, %30 : index
              %68 = memref.load %0[%i_2, %j_2, %66, %67, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %69 = memref.load %W[%j_2, %35, %29, %30, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %70 = arith.mulf %68, %69 : f32
              %71 = arith.addi %l_2, %31 : index
              %72 = arith.addi %m_2, %32 : index
              %73 = memref.load %0[%i_2, %j_2, %71, %72, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %74 = memref.load %W[%j_2, %35, %31, %32, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %75 = arith.mulf %73, %74 : f32
              %76 = arith.addi %l_2, %33 : index
              %77 = arith.addi %m_2, %34 : index
              %78 = memref.load %0[%i_2, %j_2, %76, %77, %n_2] : memref<1x1x16x16x16xf32, #loop.scope<local>>
              %79 = memref.load %W[%j_2, %35, %33, %34, %35, %n_2] : memref<1x1x3x3x1x16xf32>
              %80 = arith.mulf %78, %79 : f32
              %81 = arith.addf %40, %45 : f32
              %82 = arith.addf %50, %55 : f32
              %83 = arith.addf %60, %65 : f32
              %84 = arith.addf %70, %75 : f32
              %85 = arith.addf %81, %82 : f32
              %86 = arith.addf %83, %84 : f32
              %87 = arith.addf %85, %86 : f32
              %88 = arith.addf %87, %80 : f32
              %acc = memref.load %T[%i_2, %j_2, %l_2, %m_2, %n_2] : memref<1x1x14x14x16xf32, #loop.scope<local>>
              %sum = arith.addf %acc, %88 : f32
              memref.store %sum, %T[%i_2, %j_2, %l_2, %m_2, %n_2] : memref<1x1x14x14x16xf32, #loop.scope<local>>
            }
          }
        }
      }
    }
  }
  loop.for %i_3 = 0 to 1 axis "i" attributes {stage = "relu"} {
    loop.for %j_3 = 0 to 1 axis "j" attributes {stage = "relu"} {
      loop.for %l_3 = 0 to 14 axis "l" attributes {stage = "relu"} {
        loop.for %m_3 = 0 to 14 axis "m" attributes {stage = "relu"} {
          loop.for %n_3 = 0 to 16 axis "n" attributes {stage = "relu"} {
            %89 = memref.load %T[%i_3, %j_3, %l_3, %m_3, %n_3] : memref<1x1x14x14x16xf32, #loop.scope<local>>
            %90 = arith.constant 0.000000e+00 : f32
            %91 = arith.maximumf %89, %90 fastmath<nsz> : f32
            memref.store %91, %U[%i_3, %j_3, %l_3, %m_3, %n_3] : memref<1x1x14x14x16xf32>
          }
        }
      }
    }
  }
  memref.dealloc %0 : memref<1x1x16x16x16xf32, #loop.scope<local>>
  memref.dealloc %T : memref<1x1x14x14x16xf32, #loop.scope<local>>
  func.return
}
