// A kernel of run-time sizes on its own, as convert-te-to-loops writes it (check-equivalence.mlir
// checks it): its arguments name their sizes (te.sizes, loop.size; loop.shape for
// the flat buffer %r), so the checker draws them.
builtin.module {
  func.func @run_time_sizes(%x: memref<?x4xf32> {te.sizes = ["n"]}, %b: memref<?xf32> {te.sizes = ["m"]}, %r: memref<?xf32> {loop.output, te.sizes = ["n", "m"], loop.shape = array<i64: -1, -1>}, %n: index {loop.size = "n"}, %m: index {loop.size = "m"}) attributes {loop.kernel} {
    %r_view = memref.reinterpret_cast %r to offset: [0], sizes: [%n, %m], strides: [%m, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
    %t = memref.alloc(%n) : memref<?x4xf32, #loop.scope<local>>
    loop.for %i = 0 to %n axis "i" attributes {stage = "t"} {
      loop.for %j = 0 to 4 axis "j" attributes {stage = "t"} {
        %v = memref.load %x[%i, %j] : memref<?x4xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %t[%i, %j] : memref<?x4xf32, #loop.scope<local>>
      }
    }
    loop.for %i_1 = 0 to %n axis "i" attributes {stage = "r"} {
      loop.for %j_1 = 0 to %m axis "j" attributes {stage = "r"} {
        %c0 = arith.constant 0 : index
        %v_1 = memref.load %t[%i_1, %c0] : memref<?x4xf32, #loop.scope<local>>
        %w_1 = memref.load %b[%j_1] : memref<?xf32>
        %p = arith.mulf %v_1, %w_1 : f32
        memref.store %p, %r_view[%i_1, %j_1] : memref<?x?xf32, strided<[?, 1]>>
      }
    }
    memref.dealloc %t : memref<?x4xf32, #loop.scope<local>>
    func.return
  }
}

