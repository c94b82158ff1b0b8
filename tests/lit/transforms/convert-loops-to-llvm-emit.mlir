// RUN: strato-opt %s -p 'convert-loops-to-llvm{threads=1}' -t llvm | filecheck %s

// In LLVM IR, the back edge of an unrolled loop names a loop id of its own asking LLVM
// to unroll it fully; a serial loop's back edge names none.
// CHECK-LABEL: define void @"unrolled"(
// CHECK:         br label %"i_header", !llvm.loop ![[LOOP:[0-9]+]]
// CHECK-LABEL: define void @"serial"(
// CHECK-NOT:     !llvm.loop
// CHECK:         ret void
// CHECK:       ![[UNROLL:[0-9]+]] = !{ !"llvm.loop.unroll.full" }
// CHECK:       ![[LOOP]] = !{ ![[LOOP]], ![[UNROLL]] }
func.func @unrolled(%a: memref<3xf32>, %o: memref<3xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 3 unrolled axis "i" {
    %v = memref.load %a[%i] : memref<3xf32>
    %n = arith.negf %v : f32
    memref.store %n, %o[%i] : memref<3xf32>
  }
  func.return
}

func.func @serial(%a: memref<3xf32>, %o: memref<3xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 3 axis "i" {
    %v = memref.load %a[%i] : memref<3xf32>
    %n = arith.negf %v : f32
    memref.store %n, %o[%i] : memref<3xf32>
  }
  func.return
}
