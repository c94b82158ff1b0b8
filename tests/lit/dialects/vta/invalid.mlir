// Every verifier error of the vta dialect, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

func.func @global_buffer() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.buffer' must be in scope vta.inp, vta.wgt or vta.acc, got global}}
  %b = vta.buffer offset 0 : memref<4x1x16xi8>
  func.return
}

// -----

func.func @acc_of_i8() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.buffer' in vta.acc cannot hold i8 elements}}
  %b = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.acc>>
  func.return
}

// -----

func.func @negative_offset() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.buffer' offset -1 is negative}}
  %b = vta.buffer offset -1 : memref<4x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @rank() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.buffer' buffer must be a rank-3 memref of elements, got memref<4x16xi8, #loop.scope<vta.inp>>}}
  %b = vta.buffer offset 0 : memref<4x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @float_elements() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.buffer' buffer must hold i8 or i32 elements, got f32}}
  %b = vta.buffer offset 0 : memref<4x1x16xf32, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @load_from_sram() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' source must be a DRAM (global) memref}}
  vta.load %inp[%c0], %inp[%c0] rows 1 cols 1 stride 1 : memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @load_to_dram(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' destination must be a vta.inp, vta.wgt or vta.acc buffer}}
  vta.load %x[%c0], %x[%c0] rows 1 cols 1 stride 1 : memref<32x1x16xi8>, memref<32x1x16xi8>
  func.return
}

// -----

func.func @load_elements(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' source and destination elements differ}}
  vta.load %x[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<32x1x16xi8>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @load_pad_range(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' pads [16, 0, 0, 0] must lie in 0..15}}
  vta.load %x[%c0], %inp[%c0] rows 1 cols 1 stride 1 pad [16, 0, 0, 0] : memref<32x1x16xi8>, memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @load_pad_count(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' pad must have 4 entries [top, bottom, left, right], got 2}}
  vta.load %x[%c0], %inp[%c0] rows 1 cols 1 stride 1 pad [1, 0] : memref<32x1x16xi8>, memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @weight_pad(%w: memref<9x16x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' weight loads cannot pad}}
  vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 pad [0, 0, 1, 0] : memref<9x16x16xi8>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @cols_over_stride(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' cols 4 exceed the stride 2}}
  vta.load %x[%c0], %inp[%c0] rows 2 cols 4 stride 2 : memref<32x1x16xi8>, memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @size_range(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.load' cols 70000 is outside 0..65535}}
  vta.load %x[%c0], %inp[%c0] rows 1 cols 70000 stride 70000 : memref<32x1x16xi8>, memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @store_from_inp(%x: memref<32x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.store' source must be a vta.acc buffer}}
  vta.store %inp[%c0], %x[%c0] rows 1 cols 1 stride 1 : memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<32x1x16xi8>
  func.return
}

// -----

func.func @store_to_i32(%x: memref<4x1x16xi32>) {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.store' destination must hold i8 elements}}
  vta.store %acc[%c0], %x[%c0] rows 1 cols 1 stride 1 : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi32>
  func.return
}

// -----

func.func @store_to_sram() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.store' destination must be a DRAM (global) memref}}
  vta.store %acc[%c0], %inp[%c0] rows 1 cols 1 stride 1 : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @gemm_operands() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' inp operand must be a vta.inp buffer}}
  vta.gemm %acc, %wgt, %wgt loops [] uops [[0, 0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_three_loops() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' has 3 loops, at most 2}}
  vta.gemm %acc, %inp, %wgt loops [[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]] uops [[0, 0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_extent() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' loop extents must be positive}}
  vta.gemm %acc, %inp, %wgt loops [[0, 0, 0, 0]] uops [[0, 0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_no_uops() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' has no micro-ops}}
  vta.gemm %acc, %inp, %wgt loops [] uops [] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_negative() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' micro-op indices must be non-negative}}
  vta.gemm %acc, %inp, %wgt loops [] uops [[0, -1, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_width() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' loops take 4 numbers each and micro-ops 3}}
  vta.gemm %acc, %inp, %wgt loops [] uops [[0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_hazard() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' micro-ops 0 and 1 write ACC element 2 back to back}}
  vta.gemm %acc, %inp, %wgt loops [] uops [[2, 0, 0], [2, 1, 1]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @alu_opcode() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.alu' unknown opcode 'sub', expected one of min, max, add, shr, mul}}
  vta.alu sub %acc imm 1 loops [] uops [[0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
  func.return
}

// -----

func.func @alu_imm() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.alu' immediate 40000 does not fit 16 bits}}
  vta.alu add %acc imm 40000 loops [] uops [[0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
  func.return
}

// -----

func.func @alu_scope() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.alu' operand must be a vta.acc buffer}}
  vta.alu add %inp imm 1 loops [] uops [[0, 0]] : memref<36x1x16xi8, #loop.scope<vta.inp>>
  func.return
}

// -----

func.func @token_module() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.dep_push' modules must be load, compute or store, got 'load' -> 'dram'}}
  vta.dep_push "load" -> "dram"
  func.return
}

// -----

func.func @token_queue() {
  %c0 = arith.constant 0 : index
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.dep_pop' there is no token queue from load to store}}
  vta.dep_pop "load" -> "store"
  func.return
}

// -----

func.func @gemm_inner_hazard() {
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' consecutive inner iterations write ACC element 3 back to back}}
  vta.gemm %acc, %inp, %wgt loops [[4, 0, 1, 0]] uops [[3, 0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @gemm_outer_hazard() {
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' consecutive outer iterations write ACC element 1 back to back}}
  vta.gemm %acc, %inp, %wgt loops [[2, 1, 0, 0], [2, 0, 0, 0]] uops [[0, 0, 0], [1, 1, 1]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<9x16x16xi8, #loop.scope<vta.wgt>>
  func.return
}

// -----

func.func @alu_outer_hazard() {
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.alu' consecutive outer iterations write ACC element 1 back to back}}
  vta.alu add %acc imm 1 loops [[2, 1, 0], [2, 1, 0]] uops [[0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>
  func.return
}

// -----

func.func @gemm_shapes() {
  %acc = vta.buffer offset 0 : memref<16x1x16xi32, #loop.scope<vta.acc>>
  %inp = vta.buffer offset 0 : memref<36x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<9x16x16xi8, #loop.scope<vta.wgt>>
  %w8 = vta.buffer offset 0 : memref<4x8x16xi8, #loop.scope<vta.wgt>>
  // expected-error @+1 {{'vta.gemm' elements do not multiply: acc 1x16, inp 1x16, wgt 8x16}}
  vta.gemm %acc, %inp, %w8 loops [] uops [[0, 0, 0]] : memref<16x1x16xi32, #loop.scope<vta.acc>>, memref<36x1x16xi8, #loop.scope<vta.inp>>, memref<4x8x16xi8, #loop.scope<vta.wgt>>
  func.return
}
