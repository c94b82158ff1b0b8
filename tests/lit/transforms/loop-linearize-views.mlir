// RUN: strato-opt %s -p loop-linearize-views | filecheck %s

// A flat buffer viewed with run-time sizes and strides: each access goes to the flat
// buffer at offset + sum(index * stride), and the views go.
// CHECK-LABEL: func.func @rows(%x: memref<?xf32>, %y: memref<?xf32> {loop.output}, %n: index, %m: index) {
// CHECK-NOT:     memref.reinterpret_cast
// CHECK:         loop.for %i = 0 to %n axis "i" {
// CHECK-NEXT:      loop.for %j = 0 to %m axis "j" {
// CHECK-NEXT:        %[[ROW:.*]] = arith.muli %i, %m : index
// CHECK-NEXT:        %[[AT:.*]] = arith.addi %[[ROW]], %j : index
// CHECK-NEXT:        %v = memref.load %x[%[[AT]]] : memref<?xf32>
// CHECK-NEXT:        %d = arith.addf %v, %v : f32
// CHECK-NEXT:        %[[ROW2:.*]] = arith.muli %i, %m : index
// CHECK-NEXT:        %[[AT2:.*]] = arith.addi %[[ROW2]], %j : index
// CHECK-NEXT:        memref.store %d, %y[%[[AT2]]] : memref<?xf32>
func.func @rows(%x: memref<?xf32>, %y: memref<?xf32> {loop.output}, %n: index, %m: index) {
  %xv = memref.reinterpret_cast %x to offset: [0], sizes: [%n, %m], strides: [%m, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
  %yv = memref.reinterpret_cast %y to offset: [0], sizes: [%n, %m], strides: [%m, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
  loop.for %i = 0 to %n axis "i" {
    loop.for %j = 0 to %m axis "j" {
      %v = memref.load %xv[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      %d = arith.addf %v, %v : f32
      memref.store %d, %yv[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
    }
  }
  func.return
}

// A run-time offset and a static stride (a column of a transposed view): the offset is
// added, a stride of 1 multiplies nothing.
// CHECK-LABEL: func.func @column(%x: memref<?xf32>, %o: index, %n: index) {
// CHECK:         %[[S:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[R:.*]] = arith.muli %k, %[[S]] : index
// CHECK-NEXT:    %[[A:.*]] = arith.addi %[[R]], %o : index
// CHECK-NEXT:    %v = memref.load %x[%[[A]]] : memref<?xf32>
func.func @column(%x: memref<?xf32>, %o: index, %n: index) {
  %c = memref.reinterpret_cast %x to offset: [%o], sizes: [%n], strides: [8] : memref<?xf32> to memref<?xf32, strided<[8], offset: ?>>
  loop.for %k = 0 to %n axis "k" {
    %v = memref.load %c[%k] : memref<?xf32, strided<[8], offset: ?>>
  }
  func.return
}

// A view whose only run-time size is the first, with the identity layout, is addressed
// as it is: left alone.
// CHECK-LABEL: func.func @static_rows(%x: memref<?xf32>, %n: index) {
// CHECK-NEXT:    %v = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 4], strides: [4, 1] : memref<?xf32> to memref<?x4xf32>
// CHECK:         memref.load %v[%i, %i] : memref<?x4xf32>
func.func @static_rows(%x: memref<?xf32>, %n: index) {
  %v = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 4], strides: [4, 1] : memref<?xf32> to memref<?x4xf32>
  loop.for %i = 0 to 4 axis "i" {
    %a = memref.load %v[%i, %i] : memref<?x4xf32>
  }
  func.return
}
