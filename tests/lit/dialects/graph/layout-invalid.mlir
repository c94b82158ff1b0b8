// Every verifier error of the layout ops, one case a chunk.
// RUN: strato-opt %s --split-input-file --verify-diagnostics

// --- graph.reshape ---

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'graph.reshape' cannot reshape [2, 3] (6 elements) to [5] (5 elements)}}
  %r = graph.reshape %a : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}

// -----

func.func @reshape_element_type(%a: tensor<2x3xf32>) -> tensor<6xi32> {
  // expected-error @+1 {{'graph.reshape' operand element type f32 differs from result element type i32}}
  %r = graph.reshape %a : (tensor<2x3xf32>) -> tensor<6xi32>
  func.return %r : tensor<6xi32>
}

// -----

func.func @reshape_dynamic(%a: tensor<?x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.reshape' of run-time dimensions keeps them, in order, and reshapes each stretch of static dimensions around them to as many elements: [?, 3] to [6]}}
  %r = graph.reshape %a : (tensor<?x3xf32>) -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// -----

func.func @reshape_dynamic_moved(%a: tensor<2x?xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{'graph.reshape' of run-time dimensions keeps them, in order, and reshapes each stretch of static dimensions around them to as many elements: [2, ?] to [?, 2]}}
  %r = graph.reshape %a : (tensor<2x?xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

func.func @reshape_dynamic_rest(%a: tensor<?x1x6xf32>) -> tensor<1x?x4xf32> {
  // expected-error @+1 {{'graph.reshape' of run-time dimensions keeps them, in order, and reshapes each stretch of static dimensions around them to as many elements: [?, 1, 6] to [1, ?, 4]}}
  %r = graph.reshape %a : (tensor<?x1x6xf32>) -> tensor<1x?x4xf32>
  func.return %r : tensor<1x?x4xf32>
}

// --- graph.concat ---

// -----

func.func @concat_nothing() -> tensor<2xf32> {
  // expected-error @+1 {{'graph.concat' needs at least one input}}
  %c = "graph.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.concat' axis 2 is out of range for rank 2 (expected 0 to 1)}}
  %c = graph.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

func.func @concat_negative_axis(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.concat' axis -1 is out of range for rank 2 (expected 0 to 1)}}
  %c = graph.concat %a, %a axis -1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.concat' input shapes [2, 3] and [3, 3] differ outside axis 1}}
  %c = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.concat' input shapes [2, 3] and [2, 3, 1] differ outside axis 1}}
  %c = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.concat' operand element type f16 differs from result element type f32}}
  %c = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

func.func @concat_result(%a: tensor<2x3xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'graph.concat' result shape [2, 5] does not match the inferred shape [2, 6]}}
  %c = graph.concat %a, %a axis 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return %c : tensor<2x5xf32>
}

// -----

func.func @concat_run_time_axis(%a: tensor<2x?xf32>, %b: tensor<2x3xf32>) -> tensor<2x5xf32> {
  // a sum with a run-time size is one too
  // expected-error @+1 {{'graph.concat' result shape [2, 5] does not match the inferred shape [2, ?]}}
  %c = graph.concat %a, %b axis 1 : (tensor<2x?xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return %c : tensor<2x5xf32>
}

// --- graph.split ---

// -----

func.func @split_nothing(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.split' needs at least one result}}
  "graph.split"(%a) <{axis = 0 : i64}> : (tensor<4xf32>) -> ()
  func.return
}

// -----

func.func @split_axis(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.split' axis 1 is out of range for rank 1 (expected 0 to 0)}}
  %p = graph.split %a axis 1 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// -----

func.func @split_sizes(%a: tensor<4x2xf32>) -> tensor<1x2xf32> {
  // expected-error @+1 {{'graph.split' result sizes [1, 2] along axis 0 do not add up to the input's 4}}
  %p, %q = graph.split %a axis 0 : (tensor<4x2xf32>) -> (tensor<1x2xf32>, tensor<2x2xf32>)
  func.return %p : tensor<1x2xf32>
}

// -----

func.func @split_shape(%a: tensor<4x2xf32>) -> tensor<1x2xf32> {
  // expected-error @+1 {{'graph.split' result 1 shape [3, 3] differs from the input shape [4, 2] outside axis 0}}
  %p, %q = graph.split %a axis 0 : (tensor<4x2xf32>) -> (tensor<1x2xf32>, tensor<3x3xf32>)
  func.return %p : tensor<1x2xf32>
}

// -----

func.func @split_element_type(%a: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'graph.split' result 1 element type f16 differs from the input's f32}}
  %p, %q = graph.split %a axis 0 : (tensor<4xf32>) -> (tensor<1xf32>, tensor<3xf16>)
  func.return %p : tensor<1xf32>
}

// --- graph.slice ---

// -----

func.func @slice_lengths(%a: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.slice' needs one start and one step per dimension of the rank-2 input and a rank-2 result, got 1 starts, 2 steps and a rank-2 result}}
  %s = graph.slice %a starts [0] steps [1, 1] : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// -----

func.func @slice_rank(%a: tensor<4x4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.slice' needs one start and one step per dimension of the rank-2 input and a rank-2 result, got 2 starts, 2 steps and a rank-1 result}}
  %s = graph.slice %a starts [0, 0] steps [1, 1] : (tensor<4x4xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}

// -----

func.func @slice_zero_step(%a: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.slice' step of dimension 1 is 0}}
  %s = graph.slice %a starts [0, 0] steps [1, 0] : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// -----

func.func @slice_past_the_end(%a: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.slice' dimension 0 reads indices 1 to 5, outside [0, 4)}}
  %s = graph.slice %a starts [1, 0] steps [4, 1] : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// -----

func.func @slice_before_the_start(%a: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.slice' dimension 0 reads indices 0 to -1, outside [0, 4)}}
  %s = graph.slice %a starts [0, 0] steps [-1, 1] : (tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// -----

func.func @slice_a_run_time_dimension(%a: tensor<?x4xf32> {graph.sizes = ["n"]}) -> tensor<?x4xf32> {
  // expected-error @+1 {{'graph.slice' dimension 0 of run-time size must be taken by step 1 from a start, less the drops at its end (a result dimension of run-time size)}}
  %s = graph.slice %a starts [1, 0] steps [2, 1] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %s : tensor<?x4xf32>
}

// -----

func.func @slice_drops_a_static_dimension(%a: tensor<?x4xf32> {graph.sizes = ["n"]}) -> tensor<?x3xf32> {
  // expected-error @+1 {{'graph.slice' drops elements of dimension 1, of static size}}
  %s = graph.slice %a starts [0, 0] steps [1, 1] drops [0, 1] : (tensor<?x4xf32>) -> tensor<?x3xf32>
  func.return %s : tensor<?x3xf32>
}

// -----

func.func @slice_a_run_time_dimension_to_a_size(%a: tensor<?x4xf32> {graph.sizes = ["n"]}) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.slice' dimension 0 of run-time size must be taken by step 1 from a start}}
  %s = graph.slice %a starts [0, 0] steps [1, 1] : (tensor<?x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// --- graph.pad ---

// -----

func.func @pad_mode(%a: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' mode 'symmetric' is not one of constant, reflect, edge, wrap}}
  %p = graph.pad %a low [1] high [1] mode "symmetric" : (tensor<4xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_value(%a: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' value is only allowed in constant mode}}
  %p = graph.pad %a low [1] high [1] mode "edge" value 1.0 : (tensor<4xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_lengths(%a: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' needs low and high pads for each of the 1 dimensions, got 2 and 1}}
  %p = graph.pad %a low [1, 0] high [1] mode "constant" : (tensor<4xf32>) -> tensor<6xf32>
  func.return %p : tensor<6xf32>
}

// -----

func.func @pad_negative(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.pad' pads of dimension 0 must be >= 0, or sum to 0 in constant mode (a shift), got -1 and 0}}
  %p = graph.pad %a low [-1] high [0] mode "constant" : (tensor<4xf32>) -> tensor<3xf32>
  func.return %p : tensor<3xf32>
}

// -----

func.func @pad_shift_edge(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.pad' pads of dimension 0 must be >= 0, or sum to 0 in constant mode (a shift), got -1 and 1}}
  %p = graph.pad %a low [-1] high [1] mode "edge" : (tensor<4xf32>) -> tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// -----

func.func @pad_run_time(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'graph.pad' dimension 0 is of run-time size: it is padded in constant mode only, got 1 and 0 in edge mode}}
  %p = graph.pad %a low [1] high [0] mode "edge" : (tensor<?xf32>) -> tensor<?xf32>
  func.return %p : tensor<?xf32>
}

// -----

func.func @pad_empty(%a: tensor<0xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.pad' cannot pad the empty dimension 0 in edge mode}}
  %p = graph.pad %a low [1] high [1] mode "edge" : (tensor<0xf32>) -> tensor<2xf32>
  func.return %p : tensor<2xf32>
}

// -----

func.func @pad_reflect(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'graph.pad' reflect pads of dimension 0 (0, 4) must be smaller than the dimension 4}}
  %p = graph.pad %a low [0] high [4] mode "reflect" : (tensor<4xf32>) -> tensor<8xf32>
  func.return %p : tensor<8xf32>
}

// -----

func.func @pad_result(%a: tensor<4xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'graph.pad' result shape [7] does not match the inferred shape [6]}}
  %p = graph.pad %a low [1] high [1] mode "wrap" : (tensor<4xf32>) -> tensor<7xf32>
  func.return %p : tensor<7xf32>
}

// --- graph.gather ---

// -----

func.func @gather_axis(%a: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.gather' axis 2 is out of range for rank 2 (expected 0 to 1)}}
  %g = graph.gather %a, %i axis 2 : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %g : tensor<3x4xf32>
}

// -----

func.func @gather_float_indices(%a: tensor<5x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.gather' indices must be an integer tensor, got tensor<3xf32>}}
  %g = graph.gather %a, %i axis 0 : (tensor<5x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %g : tensor<3x4xf32>
}

// -----

func.func @gather_bool_indices(%a: tensor<5x4xf32>, %i: tensor<3xi1>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.gather' indices must be an integer tensor, got tensor<3xi1>}}
  %g = graph.gather %a, %i axis 0 : (tensor<5x4xf32>, tensor<3xi1>) -> tensor<3x4xf32>
  func.return %g : tensor<3x4xf32>
}

// -----

func.func @gather_element_type(%a: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf16> {
  // expected-error @+1 {{'graph.gather' result element type f16 differs from the data's f32}}
  %g = graph.gather %a, %i axis 0 : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf16>
  func.return %g : tensor<3x4xf16>
}

// -----

func.func @gather_result(%a: tensor<5x4xf32>, %i: tensor<2x3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.gather' result shape [3, 4] does not match the inferred shape [5, 2, 3]}}
  %g = graph.gather %a, %i axis 1 : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<3x4xf32>
  func.return %g : tensor<3x4xf32>
}

// --- graph.broadcast_to ---

// -----

func.func @broadcast_incompatible(%a: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.broadcast_to' cannot broadcast [3, 2] to [3, 4]}}
  %b = graph.broadcast_to %a : (tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return %b : tensor<3x4xf32>
}

// -----

func.func @broadcast_to_lower_rank(%a: tensor<1x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.broadcast_to' cannot broadcast [1, 4] to [4]}}
  %b = graph.broadcast_to %a : (tensor<1x4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// --- graph.identity and graph.dropout ---

// -----

func.func @identity_type(%a: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{result 'result' at position 0 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<2x2xf32>}}
  %r = "graph.identity"(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.dropout' ratio 1.0 is not in [0, 1)}}
  %r = graph.dropout %a ratio 1.0 : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @gather_elements_rank(%d: tensor<5x4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.gather_elements' indices shape [2] must have the rank of the data shape [5, 4] and no larger dimension outside the axis}}
  %r = graph.gather_elements %d, %i axis 0 : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @gather_elements_float_indices(%d: tensor<5x4xf32>, %i: tensor<5x2xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{'graph.gather_elements' indices must be an integer tensor, got tensor<5x2xf32>}}
  %r = graph.gather_elements %d, %i axis 1 : (tensor<5x4xf32>, tensor<5x2xf32>) -> tensor<5x2xf32>
  func.return %r : tensor<5x2xf32>
}

// -----

func.func @scatter_nd_reduction(%d: tensor<5x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'graph.scatter_nd' reduction 'or' is not one of none, add, mul, max, min}}
  %r = graph.scatter_nd %d, %i, %u reduction "or" : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
  func.return %r : tensor<5x4xf32>
}

// -----

func.func @scatter_nd_depth(%d: tensor<5x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'graph.scatter_nd' indices shape [2, 3] must end in a depth between 1 and the data rank 2}}
  %r = graph.scatter_nd %d, %i, %u reduction "none" : (tensor<5x4xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<5x4xf32>
  func.return %r : tensor<5x4xf32>
}

// -----

func.func @scatter_nd_updates(%d: tensor<5x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'graph.scatter_nd' updates shape [2, 3] differs from [2, 4]}}
  %r = graph.scatter_nd %d, %i, %u reduction "none" : (tensor<5x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<5x4xf32>
  func.return %r : tensor<5x4xf32>
}

// -----

func.func @tile_repeats(%d: tensor<5x4xf32>) -> tensor<10x4xf32> {
  // expected-error @+1 {{'graph.tile' needs one repeat count >= 0 per dimension of the rank-2 input, got [2]}}
  %r = graph.tile %d [2] : (tensor<5x4xf32>) -> tensor<10x4xf32>
  func.return %r : tensor<10x4xf32>
}

// -----

func.func @tile_shape(%d: tensor<5x4xf32>) -> tensor<10x4xf32> {
  // expected-error @+1 {{'graph.tile' result shape [10, 4] does not match the inferred shape [10, 8]}}
  %r = graph.tile %d [2, 2] : (tensor<5x4xf32>) -> tensor<10x4xf32>
  func.return %r : tensor<10x4xf32>
}

// -----

func.func @gather_nd_depth(%d: tensor<5x4xf32>, %i: tensor<2x3xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.gather_nd' index rows of length 3 do not fit the 2 non-batch dimensions of the data}}
  %r = graph.gather_nd %d, %i batch_dims 0 : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @gather_nd_batch(%d: tensor<5x4xf32>, %i: tensor<2x1xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.gather_nd' batch dimensions of data [5, 4] and indices [2, 1] differ}}
  %r = graph.gather_nd %d, %i batch_dims 1 : (tensor<5x4xf32>, tensor<2x1xi64>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// --- graph.gather of run-time dimensions ---

// -----

func.func @gather_run_time_axis(%a: tensor<?x4xf32>, %i: tensor<3xi64>) -> tensor<?x4xf32> {
  // the indices give the gathered dimension, not the data
  // expected-error @+1 {{'graph.gather' result dimension 0 is of run-time size, but no operand dimension gives it}}
  %g = graph.gather %a, %i axis 0 : (tensor<?x4xf32>, tensor<3xi64>) -> tensor<?x4xf32>
  func.return %g : tensor<?x4xf32>
}

// --- graph.size_of ---

// -----

func.func @size_of_dim(%a: tensor<?x4xf32>) -> tensor<i64> {
  // expected-error @+1 {{'graph.size_of' axis 2 is out of range for rank 2 (expected 0 to 1)}}
  %n = graph.size_of %a dim 2 : (tensor<?x4xf32>) -> tensor<i64>
  func.return %n : tensor<i64>
}

// -----

func.func @size_of_float(%a: tensor<?x4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.size_of' gives an integer tensor, got tensor<f32>}}
  %n = graph.size_of %a dim 0 : (tensor<?x4xf32>) -> tensor<f32>
  func.return %n : tensor<f32>
}

// --- graph.iota ---

// -----

func.func @iota_dim(%a: tensor<?x4xf32>) -> tensor<?xi64> {
  // expected-error @+1 {{'graph.iota' axis 2 is out of range for rank 2 (expected 0 to 1)}}
  %p = graph.iota %a dim 2 : (tensor<?x4xf32>) -> tensor<?xi64>
  func.return %p : tensor<?xi64>
}

// -----

func.func @iota_float(%a: tensor<?x4xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'graph.iota' gives an integer tensor, got tensor<?xf32>}}
  %p = graph.iota %a dim 0 : (tensor<?x4xf32>) -> tensor<?xf32>
  func.return %p : tensor<?xf32>
}

// -----

func.func @iota_length(%a: tensor<?x4xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{'graph.iota' result shape [4] does not match the inferred shape [?]}}
  %p = graph.iota %a dim 0 : (tensor<?x4xf32>) -> tensor<4xi64>
  func.return %p : tensor<4xi64>
}

// --- run-time dimensions of broadcast_to, split and gather_elements ---

// -----

func.func @broadcast_without_like(%t: tensor<1x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'graph.broadcast_to' result dimension 0 is of run-time size, but no operand dimension gives it}}
  %b = graph.broadcast_to %t : (tensor<1x?xf32>) -> tensor<?x?xf32>
  func.return %b : tensor<?x?xf32>
}

// -----

func.func @broadcast_run_time_to_static(%t: tensor<?x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.broadcast_to' cannot broadcast [?, 4] to [3, 4]}}
  %b = graph.broadcast_to %t : (tensor<?x4xf32>) -> tensor<3x4xf32>
  func.return %b : tensor<3x4xf32>
}

// -----

func.func @split_run_time_axis(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'graph.split' splits a dimension of static size, got tensor<?x4xf32>}}
  %p = graph.split %x axis 0 : (tensor<?x4xf32>) -> (tensor<?x4xf32>)
  func.return %p : tensor<?x4xf32>
}

// -----

func.func @gather_elements_outside_axis(%d: tensor<3x8xf32>, %i: tensor<?x2xi64>) -> tensor<?x2xf32> {
  // expected-error @+1 {{'graph.gather_elements' of run-time dimensions gathers along a static one, and outside it the indices' and the data's are both of run-time size or neither: [?, 2] from [3, 8]}}
  %g = graph.gather_elements %d, %i axis 1 : (tensor<3x8xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
  func.return %g : tensor<?x2xf32>
}
