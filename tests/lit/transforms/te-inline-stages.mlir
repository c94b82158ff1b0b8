// RUN: strato-opt %s --split-input-file -p te-inline-stages | filecheck %s

// A chain of element-wise stages collapses into the last one.
// CHECK-LABEL: te.primitive @chain
// CHECK:         %d = te.reduce "dense"
// CHECK-NOT:     te.compute "bias_add"
// CHECK:         %r = te.compute "relu" (%j) : tensor<4xf32> {
// CHECK-NEXT:      %[[A:.*]] = te.read %d[%j] : tensor<4xf32>
// CHECK-NEXT:      %[[B:.*]] = te.read %bias[%j] : tensor<4xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[S]], %[[Z]] : f32
// CHECK-NEXT:      te.yield %[[M]] : f32
te.primitive @chain {
  %x = te.placeholder "x" : tensor<4x8xf32>
  %bias = te.placeholder "bias" : tensor<4xf32>
  %d = te.reduce "dense" sum (%i) over (%k : 8) init 0.0 : tensor<4xf32> {
    %v = te.read %x[%i, %k] : tensor<4x8xf32>
    te.yield %v : f32
  }
  %y = te.compute "bias_add" (%i) : tensor<4xf32> {
    %a = te.read %d[%i] : tensor<4xf32>
    %b = te.read %bias[%i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    te.yield %s : f32
  }
  %r = te.compute "relu" (%j) : tensor<4xf32> {
    %v = te.read %y[%j] : tensor<4xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4xf32>
}

// -----

// A stage read by a reduction stays; so does an output stage.
// CHECK-LABEL: te.primitive @into_reduction
// CHECK:         %p = te.compute "pad"
// CHECK:         %s = te.reduce "sum"
// CHECK:         te.read %p
// CHECK:         %o = te.compute "kept"
te.primitive @into_reduction {
  %x = te.placeholder "x" : tensor<4xf32>
  %p = te.compute "pad" (%i) : tensor<4xf32> {
    %v = te.read %x[%i] : tensor<4xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  %s = te.reduce "sum" sum (%i) over (%k : 4) init 0.0 : tensor<1xf32> {
    %v = te.read %p[%k] : tensor<4xf32>
    te.yield %v : f32
  }
  %o = te.compute "kept" (%i) : tensor<4xf32> {
    %v = te.read %x[%i] : tensor<4xf32>
    te.yield %v : f32
  }
  te.output %s, %o : tensor<1xf32>, tensor<4xf32>
}

// -----

// A prefix view (a read at the stage's own indices: the columns a wide convolution
// keeps) is read through, by a reduction too: the pool reads the wider tensor.
// CHECK-LABEL: te.primitive @view_into_reduction
// CHECK-NOT:     te.compute "slice"
// CHECK:         %m = te.reduce "pool" max
// CHECK:           te.read %x[%{{.*}}] : tensor<2x12xf32>
te.primitive @view_into_reduction {
  %x = te.placeholder "x" : tensor<2x12xf32>
  %v = te.compute "slice" (%i, %j) : tensor<2x9xf32> {
    %a = te.read %x[%i, %j] : tensor<2x12xf32>
    te.yield %a : f32
  }
  %m = te.reduce "pool" max (%i, %j) over (%k : 3) init 0xff800000 : tensor<2x3xf32> {
    %c = arith.constant 3 : index
    %s = arith.muli %j, %c : index
    %w = arith.addi %s, %k : index
    %a = te.read %v[%i, %w] : tensor<2x9xf32>
    te.yield %a : f32
  }
  te.output %m : tensor<2x3xf32>
}

// -----

// A per-row stage is not copied into a per-element reader.
// CHECK-LABEL: te.primitive @per_row
// CHECK:         %inv = te.compute "inv"
// CHECK:         %n = te.compute "normalize"
// CHECK:           te.read %inv[%{{[a-z0-9_]+}}]
te.primitive @per_row {
  %x = te.placeholder "x" : tensor<4x8xf32>
  %s = te.placeholder "s" : tensor<4xf32>
  %inv = te.compute "inv" (%i) : tensor<4xf32> {
    %v = te.read %s[%i] : tensor<4xf32>
    %r = math.sqrt %v : f32
    te.yield %r : f32
  }
  %n = te.compute "normalize" (%i, %j) : tensor<4x8xf32> {
    %a = te.read %x[%i, %j] : tensor<4x8xf32>
    %b = te.read %inv[%i] : tensor<4xf32>
    %m = arith.divf %a, %b : f32
    te.yield %m : f32
  }
  te.output %n : tensor<4x8xf32>
}
