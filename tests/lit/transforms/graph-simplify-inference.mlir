// RUN: strato-opt %s --split-input-file -p graph-simplify-inference | filecheck %s

// Batch normalization folds into the convolution before it, which keeps its name: with f = scale / sqrt(var + eps)
// = [2, 1], w' = w * f per output channel and b' = (0 - mean) * f + beta.
// CHECK-LABEL: func.func @conv_batch_norm
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}1.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %beta = graph.constant dense<-1.500000e+00> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.conv %x, %w, %beta strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW"
// CHECK-NEXT:    func.return %y
func.func @conv_batch_norm(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %scale = graph.constant dense<2.0> : tensor<2xf32>
  %beta = graph.constant dense<0.5> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %n = graph.batch_norm %y, %scale, %beta, %mean, %var epsilon 1.000000e+00 : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %n : tensor<1x2x4x4xf32>
}

// -----

// An existing bias is shifted too: b' = (b - mean) * f + beta.
// CHECK-LABEL: func.func @dense_bias_batch_norm
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[}}2.000000e+00, 2.000000e+00], [1.000000e+00, 1.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %b = graph.constant dense<[5.000000e-01, 2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.dense %x, %w, %b : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %y
func.func @dense_bias_batch_norm(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2xf32>
  %b = graph.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %y = graph.dense %x, %w, %b : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %scale = graph.constant dense<2.0> : tensor<2xf32>
  %beta = graph.constant dense<0.5> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %n = graph.batch_norm %y, %scale, %beta, %mean, %var epsilon 1.000000e+00 : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %n : tensor<3x2xf32>
}

// -----

// The convolution's result has another user: the batch normalization is lowered to a
// multiply and an add of per-channel vectors shaped [C, 1, 1].
// CHECK-LABEL: func.func @shared_conv_result
// CHECK:         %y = graph.conv
// CHECK-NEXT:    %scale = graph.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %beta = graph.constant dense<-1.500000e+00> : tensor<2x1x1xf32>
// CHECK-NEXT:    %n.scaled = graph.mul %y, %scale : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %n = graph.add %n.scaled, %beta : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %n, %y
func.func @shared_conv_result(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %scale = graph.constant dense<2.0> : tensor<2xf32>
  %beta = graph.constant dense<0.5> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %n = graph.batch_norm %y, %scale, %beta, %mean, %var epsilon 1.000000e+00 : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %n, %y : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// A batch normalization whose parameters are not constants is kept.
// CHECK-LABEL: func.func @batch_norm_of_arguments
// CHECK-NEXT:    %n = graph.batch_norm %x, %s, %s, %s, %s
func.func @batch_norm_of_arguments(%x: tensor<1x2x3xf32>, %s: tensor<2xf32>) -> tensor<1x2x3xf32> {
  %n = graph.batch_norm %x, %s, %s, %s, %s epsilon 1.000000e-05 : (tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf32>
  func.return %n : tensor<1x2x3xf32>
}

// -----

// Identity and dropout are their input.
// CHECK-LABEL: func.func @pass_through
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    func.return %r, %x
func.func @pass_through(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %i = graph.identity %x : tensor<4xf32>
  %d = graph.dropout %i ratio 5.000000e-01 : tensor<4xf32>
  %r = graph.relu %d : tensor<4xf32>
  %e = graph.identity %x : tensor<4xf32>
  func.return %r, %e : tensor<4xf32>, tensor<4xf32>
}

// -----

// Consecutive reshapes become one; a reshape back to the input's shape vanishes.
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %c = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %c, %x
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>, tensor<2x3x4xf32>) {
  %a = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %b = graph.reshape %a : (tensor<24xf32>) -> tensor<6x4xf32>
  %c = graph.reshape %b : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %d = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %e = graph.reshape %d : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  func.return %c, %e : tensor<4x6xf32>, tensor<2x3x4xf32>
}

// -----

// Consecutive transposes compose; inverse permutations cancel.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %b = graph.transpose %x [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    func.return %b, %x
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<3x4x2xf32>, tensor<2x3x4xf32>) {
  %a = graph.transpose %x [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = graph.transpose %a [0, 2, 1] : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  %c = graph.transpose %x [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %d = graph.transpose %c [1, 2, 0] : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %b, %d : tensor<3x4x2xf32>, tensor<2x3x4xf32>
}

// -----

// A matmul by a constant [K, N] plus a constant bias becomes a dense layer with the
// transposed weight [N, K]; a batched left operand is fine.
// CHECK-LABEL: func.func @matmul_bias
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %b = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.dense %x, %w, %b : (tensor<4x5x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x5x2xf32>
// CHECK-NEXT:    func.return %y
func.func @matmul_bias(%x: tensor<4x5x3xf32>) -> tensor<4x5x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %m = graph.matmul %x, %w : (tensor<4x5x3xf32>, tensor<3x2xf32>) -> tensor<4x5x2xf32>
  %b = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %y = graph.add %b, %m : (tensor<1x2xf32>, tensor<4x5x2xf32>) -> tensor<4x5x2xf32>
  func.return %y : tensor<4x5x2xf32>
}

// -----

// A matmul by a non-constant, or an addend that is not a vector along the last axis,
// stays as it is.
// CHECK-LABEL: func.func @matmul_kept
// CHECK-NEXT:    %m = graph.matmul %x, %v
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %y = graph.add %m, %b
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %n = graph.matmul %x, %w
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %z = graph.add %n, %c
func.func @matmul_kept(%x: tensor<5x3xf32>, %v: tensor<3x2xf32>) -> (tensor<5x2xf32>, tensor<5x2xf32>) {
  %m = graph.matmul %x, %v : (tensor<5x3xf32>, tensor<3x2xf32>) -> tensor<5x2xf32>
  %b = graph.constant dense<1.0> : tensor<2xf32>
  %y = graph.add %m, %b : (tensor<5x2xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  %w = graph.constant dense<1.0> : tensor<3x2xf32>
  %n = graph.matmul %x, %w : (tensor<5x3xf32>, tensor<3x2xf32>) -> tensor<5x2xf32>
  %c = graph.constant dense<1.0> : tensor<5x1xf32>
  %z = graph.add %n, %c : (tensor<5x2xf32>, tensor<5x1xf32>) -> tensor<5x2xf32>
  func.return %y, %z : tensor<5x2xf32>, tensor<5x2xf32>
}

// -----

// A dense layer without bias takes a constant [N] addend as its bias; one with a
// constant bias adds the two.
// CHECK-LABEL: func.func @dense_add
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %b = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.dense %x, %w, %b
// CHECK-NEXT:    %c = graph.constant dense<[4.000000e+00, 5.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %z = graph.dense %y, %w, %c
// CHECK-NEXT:    func.return %z
func.func @dense_add(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2xf32>
  %d = graph.dense %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = graph.add %d, %b : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %e = graph.constant dense<3.0> : tensor<2xf32>
  %f = graph.dense %y, %w, %e : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %z = graph.add %f, %c : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %z : tensor<3x2xf32>
}

// -----

// A stride-2 transposed convolution is a stride-1 convolution computing its four output
// phases as channels (tap r of each phase: weight (r_h, r_w) of the 2x2 kernel), then
// interleaved: y[2q + r_h, 2p + r_w] = x[q, p] * w[r_h, r_w].
// CHECK-LABEL: func.func @conv_transpose_stride_2
// CHECK-NEXT:    %w = graph.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]]], {{\[\[\[}}4.000000e+00]]]]> : tensor<4x1x1x1xf32>
// CHECK-NEXT:    graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] {{.*}} -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    graph.reshape {{.*}} -> tensor<1x1x2x2x2x2xf32>
// CHECK-NEXT:    graph.transpose {{.*}} [0, 1, 4, 2, 5, 3]
// CHECK-NEXT:    %y_3 = graph.reshape {{.*}} -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    func.return %y_3
// CHECK-NOT:     graph.conv_transpose
func.func @conv_transpose_stride_2(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %w = graph.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>
  %y = graph.conv_transpose %x, %w strides [2, 2] padding [0, 0, 0, 0] output_padding [0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "IOHW" : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
