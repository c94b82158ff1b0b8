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
