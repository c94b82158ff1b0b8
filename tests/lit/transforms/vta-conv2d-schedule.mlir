// The VTA compiler path from the tensor-expression level with strato-opt: a 16 -> 32
// channel 3x3 conv2d with bias on a 2x4 image over the VTA layouts, lowered to loops,
// scheduled by the VTA conv2d template's trace (cache_write/cache_read into the vta
// scopes, compute_at, the row-tile loop unrolled, a virtual-thread loop, tensorize with
// vta.gemm.1x16x16), converted to the vta dialect, given dependence tokens and two
// interleaved virtual threads, and run on the simulator: 32 x 16 x 9 x 8 MACs are 144
// GEMM micro-ops of 16 x 16; the ALU adds the bias, shifts, clips (4 ops on 16 elements).
// RUN: strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/vta-conv2d-schedule.json"},convert-loops-to-vta,vta-insert-dependence-tokens,vta-inject-virtual-threads' -t vta | filecheck %s

// CHECK:      // @conv2d on the VTA simulator, inputs from seed 0
// CHECK:      inp_load_nbytes 512
// CHECK-NEXT: wgt_load_nbytes 9216
// CHECK-NEXT: acc_load_nbytes 256
// CHECK:      out_store_nbytes 256
// CHECK-NEXT: gemm_counter 144
// CHECK-NEXT: alu_counter 64
// CHECK:      output 3: 16 elements

te.primitive @conv2d {
  %x = te.placeholder "x" : tensor<1x2x4x1x16xi8>
  %w = te.placeholder "w" : tensor<2x1x3x3x16x16xi8>
  %b = te.placeholder "b" : tensor<2x1x16xi32>
  %pad = te.compute "pad" (%c, %h, %v, %n, %l) : tensor<1x4x6x1x16xi8> {
    %p = arith.constant 1 : index
    %hn = arith.constant 2 : index
    %wn = arith.constant 4 : index
    %zero = arith.constant 0 : index
    %hs = arith.subi %h, %p : index
    %vs = arith.subi %v, %p : index
    %h0 = arith.cmpi sge, %hs, %zero : index
    %h1 = arith.cmpi slt, %hs, %hn : index
    %v0 = arith.cmpi sge, %vs, %zero : index
    %v1 = arith.cmpi slt, %vs, %wn : index
    %hin = arith.andi %h0, %h1 : i1
    %vin = arith.andi %v0, %v1 : i1
    %in = arith.andi %hin, %vin : i1
    %hc = arith.select %hin, %hs, %zero : index
    %vc = arith.select %vin, %vs, %zero : index
    %e = te.read %x[%c, %hc, %vc, %n, %l] : tensor<1x2x4x1x16xi8>
    %z = arith.constant 0 : i8
    %r = arith.select %in, %e, %z : i8
    te.yield %r : i8
  }
  %acc = te.reduce "conv" sum (%o, %y, %q, %n, %m) over (%c : 1, %kh : 3, %kw : 3, %l : 16) init 0 : tensor<2x2x4x1x16xi32> {
    %s = arith.constant 1 : index
    %ys = arith.muli %y, %s : index
    %qs = arith.muli %q, %s : index
    %yy = arith.addi %ys, %kh : index
    %qq = arith.addi %qs, %kw : index
    %a = te.read %pad[%c, %yy, %qq, %n, %l] : tensor<1x4x6x1x16xi8>
    %k = te.read %w[%o, %c, %kh, %kw, %m, %l] : tensor<2x1x3x3x16x16xi8>
    %a32 = arith.extsi %a : i8 to i32
    %k32 = arith.extsi %k : i8 to i32
    %prod = arith.muli %a32, %k32 : i32
    te.yield %prod : i32
  }
  %out = te.compute "out" (%o, %y, %q, %n, %m) : tensor<2x2x4x1x16xi8> {
    %v = te.read %acc[%o, %y, %q, %n, %m] : tensor<2x2x4x1x16xi32>
    %bv = te.read %b[%o, %n, %m] : tensor<2x1x16xi32>
    %vb = arith.addi %v, %bv : i32
    %shift = arith.constant 8 : i32
    %sh = arith.shrsi %vb, %shift : i32
    %lo = arith.constant 0 : i32
    %hi = arith.constant 127 : i32
    %mx = arith.maxsi %sh, %lo : i32
    %mn = arith.minsi %mx, %hi : i32
    %t = arith.trunci %mn : i32 to i8
    te.yield %t : i8
  }
  te.output %out : tensor<2x2x4x1x16xi8>
}
