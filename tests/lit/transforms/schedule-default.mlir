// RUN: strato-opt %s -p "schedule-default{lanes=16 registers=32}" | filecheck %s

// An elementwise stage: its innermost loop split by the vector width and vectorized;
// the kernel records the template and its knobs.
// CHECK-LABEL: func.func @relu(
// CHECK-SAME:    schedule.template = {relu = "injective"}, schedule.knobs = {relu = {vector_width = 16 : i64}}
// CHECK:         loop.for %{{.*}} = 0 to 4 axis "i.outer" attributes {stage = "relu"} {
// CHECK-NEXT:      loop.for %{{.*}} = 0 to 16 vectorized axis "i.inner" attributes {stage = "relu"} {
func.func @relu(%a: memref<64xf32>, %o: memref<64xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 64 axis "i" attributes {stage = "relu"} {
    %v = memref.load %a[%i] : memref<64xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    memref.store %m, %o[%i] : memref<64xf32>
  }
  func.return
}

// A blocked layout back to a plain one: each lane of the vector reads another row of
// the blocked input. The channel loop is split by the block (16) and its inner part
// unrolled at the loop level (`unroll.explicit`) right outside the vectorized loop, so
// that the lowering moves a 16 x 14 block at a time as a transpose.
// CHECK-LABEL: func.func @to_plain(
// CHECK-SAME:    schedule.template = {layout_transform = "injective"}
// CHECK:         loop.for %{{.*}} = 0 to 2 axis "c.outer" attributes {stage = "layout_transform"} {
// CHECK-NEXT:      loop.for %{{.*}} = 0 to 2 axis "h" attributes {stage = "layout_transform"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 2 axis "w.outer" attributes {stage = "layout_transform"} {
// CHECK-NEXT:          loop.for %{{.*}} = 0 to 16 unrolled axis "c.inner" attributes {stage = "layout_transform", unroll.explicit} {
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 14 vectorized axis "w.inner" attributes {stage = "layout_transform"} {
func.func @to_plain(%a: memref<2x2x28x16xf32>, %o: memref<32x2x28xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %c = 0 to 32 axis "c" attributes {stage = "layout_transform"} {
    loop.for %h = 0 to 2 axis "h" attributes {stage = "layout_transform"} {
      loop.for %w = 0 to 28 axis "w" attributes {stage = "layout_transform"} {
        %b = arith.constant 16 : index
        %q = arith.divui %c, %b : index
        %r = arith.remui %c, %b : index
        %v = memref.load %a[%q, %h, %w, %r] : memref<2x2x28x16xf32>
        memref.store %v, %o[%c, %h, %w] : memref<32x2x28xf32>
      }
    }
  }
  func.return
}

// A matmul: the B panel packed per column block, each tile zeroed right before the
// CPU micro-kernel (rows unrolled, columns vectorized, k outside in unrolled steps of 4).
// CHECK-LABEL: func.func @mm(
// CHECK-SAME:    schedule.template = {matmul = "dense"}
// CHECK:         loop.for %{{.*}} = 0 to 2 axis "j.outer" attributes {stage = "matmul"} {
// CHECK:           attributes {stage = "matmul.B.local"}
// CHECK:           loop.for %{{.*}} = 0 to 8 axis "i.inner" attributes {stage = "matmul", init} {
// CHECK:           loop.for %{{.*}} = 0 to 8 unrolled axis "i.inner.load" attributes {stage = "matmul", tensorized = "cpu.fma_tile.8x32x16"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 32 vectorized axis "j.inner.load"
// CHECK:           loop.for %{{.*}} = 0 to 4 axis "k" attributes {stage = "matmul", reduction, tensorized = "cpu.fma_tile.8x32x16"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 4 unrolled axis "k.unrolled"
// CHECK:               loop.for %{{.*}} = 0 to 8 unrolled axis "i.inner.update"
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 32 vectorized axis "j.inner.update"
func.func @mm(%A: memref<16x16xf32>, %B: memref<16x64xf32>, %Y: memref<16x64xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 16 axis "i" attributes {stage = "matmul", init} {
    loop.for %j = 0 to 64 axis "j" attributes {stage = "matmul", init} {
      %init = arith.constant 0.000000e+00 : f32
      memref.store %init, %Y[%i, %j] : memref<16x64xf32>
    }
  }
  loop.for %i_1 = 0 to 16 axis "i" attributes {stage = "matmul"} {
    loop.for %j_1 = 0 to 64 axis "j" attributes {stage = "matmul"} {
      loop.for %k = 0 to 16 axis "k" attributes {stage = "matmul", reduction} {
        %0 = memref.load %A[%i_1, %k] : memref<16x16xf32>
        %1 = memref.load %B[%k, %j_1] : memref<16x64xf32>
        %2 = arith.mulf %0, %1 : f32
        %acc = memref.load %Y[%i_1, %j_1] : memref<16x64xf32>
        %sum = arith.addf %acc, %2 : f32
        memref.store %sum, %Y[%i_1, %j_1] : memref<16x64xf32>
      }
    }
  }
  func.return
}

// An integer depthwise convolution (stride 2, padding 1) and its requantization: the
// padded rows laid out in their two phases, an i32 tile of the output's three rows
// (unrolled) x four columns (vectorized) per channel, accumulated over the taps from
// widened bytes, the requantization folded into its copy-out.
// CHECK-LABEL: func.func @depthwise_int8(
// CHECK-SAME:    qconv = "depthwise_conv2d_int8"
// CHECK:         memref.alloc() : memref<1x4x8x2x5xi8, #loop.scope<local>>
// CHECK:         memref.alloc() : memref<1x1x3x4xi32, #loop.scope<local>>
// CHECK:         loop.for %{{.*}} = 0 to 4 axis "j" attributes {stage = "qconv"} {
// CHECK:           loop.for %{{.*}} = 0 to 3 axis "k0" attributes {stage = "qconv.local", reduction} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 3 axis "k1" attributes {stage = "qconv.local", reduction} {
// CHECK-NEXT:          loop.for %{{.*}} = 0 to 3 unrolled axis "l" attributes {stage = "qconv.local"} {
// CHECK-NEXT:            loop.for %{{.*}} = 0 to 4 vectorized axis "m" attributes {stage = "qconv.local"} {
// CHECK:                   arith.extui %{{.*}} : i8 to i32
// CHECK-NEXT:              arith.extsi %{{.*}} : i8 to i32
// CHECK-NEXT:              arith.muli %{{.*}}, %{{.*}} : i32
// CHECK:           loop.for %{{.*}} = 0 to 3 unrolled axis "l" attributes {stage = "qconv"} {
// CHECK-NEXT:        loop.for %{{.*}} = 0 to 4 vectorized axis "m" attributes {stage = "qconv"} {
// CHECK:               math.roundeven
// CHECK:               memref.store %{{.*}}, %r[
func.func @depthwise_int8(%q: memref<1x4x6x8xi8>, %w: memref<4x1x3x3xi8>, %b: memref<4xi32>, %m: memref<4xf32>, %z: memref<i8>, %r: memref<1x4x3x4xi8> {loop.output}) attributes {loop.kernel} {
  %0 = memref.alloc() : memref<1x4x8x10xi8, #loop.scope<local>>
  loop.for %i = 0 to 1 axis "i" attributes {stage = "pad"} {
    loop.for %j = 0 to 4 axis "j" attributes {stage = "pad"} {
      loop.for %l = 0 to 8 axis "l" attributes {stage = "pad"} {
        loop.for %m_1 = 0 to 10 axis "m" attributes {stage = "pad"} {
          %1 = arith.constant 1 : index
          %2 = arith.subi %l, %1 : index
          %3 = arith.constant 6 : index
          %4 = arith.cmpi ult, %2, %3 : index
          %5 = arith.constant 0 : index
          %6 = arith.select %4, %2, %5 : index
          %7 = arith.constant 1 : index
          %8 = arith.subi %m_1, %7 : index
          %9 = arith.constant 8 : index
          %10 = arith.cmpi ult, %8, %9 : index
          %11 = arith.andi %4, %10 : i1
          %12 = arith.constant 0 : index
          %13 = arith.select %10, %8, %12 : index
          %14 = memref.load %q[%i, %j, %6, %13] : memref<1x4x6x8xi8>
          %15 = arith.constant 5 : i8
          %16 = arith.select %11, %14, %15 : i8
          memref.store %16, %0[%i, %j, %l, %m_1] : memref<1x4x8x10xi8, #loop.scope<local>>
        }
      }
    }
  }
  %17 = memref.alloc() : memref<1x4x3x4xi32, #loop.scope<local>>
  loop.for %i_1 = 0 to 1 axis "i" attributes {stage = "qconv", init} {
    loop.for %j_1 = 0 to 4 axis "j" attributes {stage = "qconv", init} {
      loop.for %l_1 = 0 to 3 axis "l" attributes {stage = "qconv", init} {
        loop.for %m_2 = 0 to 4 axis "m" attributes {stage = "qconv", init} {
          %init = arith.constant 0 : i32
          memref.store %init, %17[%i_1, %j_1, %l_1, %m_2] : memref<1x4x3x4xi32, #loop.scope<local>>
        }
      }
    }
  }
  loop.for %i_2 = 0 to 1 axis "i" attributes {stage = "qconv"} {
    loop.for %j_2 = 0 to 4 axis "j" attributes {stage = "qconv"} {
      loop.for %l_2 = 0 to 3 axis "l" attributes {stage = "qconv"} {
        loop.for %m_3 = 0 to 4 axis "m" attributes {stage = "qconv"} {
          loop.for %k0 = 0 to 3 axis "k0" attributes {stage = "qconv", reduction} {
            loop.for %k1 = 0 to 3 axis "k1" attributes {stage = "qconv", reduction} {
              %18 = arith.constant 2 : index
              %19 = arith.muli %l_2, %18 : index
              %20 = arith.addi %19, %k0 : index
              %21 = arith.constant 2 : index
              %22 = arith.muli %m_3, %21 : index
              %23 = arith.addi %22, %k1 : index
              %24 = memref.load %0[%i_2, %j_2, %20, %23] : memref<1x4x8x10xi8, #loop.scope<local>>
              %25 = arith.constant 0 : index
              %26 = memref.load %w[%j_2, %25, %k0, %k1] : memref<4x1x3x3xi8>
              %27 = arith.extui %24 : i8 to i32
              %28 = arith.extsi %26 : i8 to i32
              %29 = arith.muli %27, %28 : i32
              %acc = memref.load %17[%i_2, %j_2, %l_2, %m_3] : memref<1x4x3x4xi32, #loop.scope<local>>
              %sum = arith.addi %acc, %29 : i32
              memref.store %sum, %17[%i_2, %j_2, %l_2, %m_3] : memref<1x4x3x4xi32, #loop.scope<local>>
            }
          }
        }
      }
    }
  }
  loop.for %i_3 = 0 to 1 axis "i" attributes {stage = "requantize"} {
    loop.for %j_3 = 0 to 4 axis "j" attributes {stage = "requantize"} {
      loop.for %l_3 = 0 to 3 axis "l" attributes {stage = "requantize"} {
        loop.for %m_4 = 0 to 4 axis "m" attributes {stage = "requantize"} {
          %30 = memref.load %17[%i_3, %j_3, %l_3, %m_4] : memref<1x4x3x4xi32, #loop.scope<local>>
          %31 = memref.load %b[%j_3] : memref<4xi32>
          %32 = arith.addi %30, %31 : i32
          %33 = arith.sitofp %32 : i32 to f32
          %34 = memref.load %m[%j_3] : memref<4xf32>
          %35 = memref.load %z[] : memref<i8>
          %36 = arith.uitofp %35 : i8 to f32
          %37 = arith.mulf %33, %34 : f32
          %38 = math.roundeven %37 : f32
          %39 = arith.addf %38, %36 : f32
          %40 = arith.constant 0.000000e+00 : f32
          %41 = arith.maximumf %39, %40 : f32
          %42 = arith.constant 2.550000e+02 : f32
          %43 = arith.minimumf %41, %42 : f32
          %44 = arith.constant 0x4B400000 : f32
          %45 = arith.addf %43, %44 : f32
          %46 = arith.bitcast %45 : f32 to i32
          %47 = arith.trunci %46 : i32 to i8
          memref.store %47, %r[%i_3, %j_3, %l_3, %m_4] : memref<1x4x3x4xi8>
        }
      }
    }
  }
  memref.dealloc %0 : memref<1x4x8x10xi8, #loop.scope<local>>
  memref.dealloc %17 : memref<1x4x3x4xi32, #loop.scope<local>>
  func.return
}
