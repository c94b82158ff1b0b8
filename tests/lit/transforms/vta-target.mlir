// RUN: strato-opt %s -p vta-insert-dependence-tokens -t vta -o %t | filecheck %s
// RUN: cat %t/manifest.json | filecheck --check-prefix=MANIFEST %s

// `-t vta` runs the stream on the simulator, prints its report and writes the bundle.
// CHECK:      // @gemm on the VTA simulator, inputs from seed 0
// CHECK-NEXT: config 1x16_i8w8a32_15_15_18_17
// CHECK-NEXT: instructions load=5 compute=13 store=4
// CHECK:      gemm_counter 8
// CHECK-NEXT: alu_counter 8
// CHECK-NEXT: cycles
// CHECK:      output 2: 8 elements, checksum
// CHECK-NEXT: bundle written to

// MANIFEST:      "tensors": {
// MANIFEST-NEXT:   "x": {
// MANIFEST-NEXT:     "region": "inp",
// MANIFEST-NEXT:     "first_element": 0,
// MANIFEST-NEXT:     "shape": [
// MANIFEST-NEXT:       1,
// MANIFEST-NEXT:       16,
// MANIFEST-NEXT:       8,
// MANIFEST-NEXT:       1
// MANIFEST-NEXT:     ],
// MANIFEST-NEXT:     "layout": "NCHW1n16c"
func.func @gemm(%x: memref<8x1x16xi8> {vta.shape = array<i64: 1, 16, 8, 1>}, %w: memref<1x16x16xi8>, %out: memref<8x1x16xi8>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %inp = vta.buffer offset 0 : memref<4x1x16xi8, #loop.scope<vta.inp>>
  %wgt = vta.buffer offset 0 : memref<1x16x16xi8, #loop.scope<vta.wgt>>
  %acc = vta.buffer offset 0 : memref<4x1x16xi32, #loop.scope<vta.acc>>
  loop.for %t = 0 to 2 {
    %d = arith.muli %t, %c4 : index
    vta.load %x[%d], %inp[%c0] rows 1 cols 4 stride 4 : memref<8x1x16xi8>, memref<4x1x16xi8, #loop.scope<vta.inp>>
    vta.load %w[%c0], %wgt[%c0] rows 1 cols 1 stride 1 : memref<1x16x16xi8>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.gemm %acc, %inp, %wgt loops [[4, 1, 0, 0]] uops [[0, 0, 0]] {reset} : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.gemm %acc, %inp, %wgt loops [[4, 1, 1, 0]] uops [[0, 0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<4x1x16xi8, #loop.scope<vta.inp>>, memref<1x16x16xi8, #loop.scope<vta.wgt>>
    vta.alu shr %acc imm 6 loops [[4, 1, 1]] uops [[0, 0]] : memref<4x1x16xi32, #loop.scope<vta.acc>>
    vta.store %acc[%c0], %out[%d] rows 1 cols 4 stride 4 : memref<4x1x16xi32, #loop.scope<vta.acc>>, memref<8x1x16xi8>
  }
  func.return
}
