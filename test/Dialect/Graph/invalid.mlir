// Every verifier and type-inference message of the graph dialect.
// RUN: rp-opt %s -split-input-file -verify-diagnostics

// A trainable param must be floating point.
// expected-error @+1 {{'graph.param' op expected a floating-point type for a trainable param, got 'tensor<4xi64>'}}
graph.param @ids trainable : tensor<4xi64>

// -----

// The initializer name may not be empty.
// expected-error @+1 {{'graph.param' op expected a non-empty initializer name}}
graph.param @w : tensor<4xf32> initializer ""

// -----

// Params live at module level.
func.func @param_in_function() {
  // expected-error @+1 {{'graph.param' op expects parent op 'builtin.module'}}
  "graph.param"() {sym_name = "w", type = tensor<4xf32>} : () -> ()
  return
}

// -----

// Params are statically shaped.
// expected-error @+1 {{'graph.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer or 8-bit unsigned integer values}}
graph.param @w : tensor<?xf32>

// -----

// load_param must name a graph.param.
func.func @load_unknown() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.load_param' op expected 'missing' to name a graph.param}}
  %0 = graph.load_param @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// load_param must name a graph.param, not another symbol.
func.func @load_function() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.load_param' op expected 'load_function' to name a graph.param}}
  %0 = graph.load_param @load_function : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// load_param yields the param's type.
graph.param @w : tensor<4xf32>
func.func @load_wrong_type() -> tensor<4xbf16> {
  // expected-error @+1 {{'graph.load_param' op expected result type 'tensor<4xf32>' of param 'w', got 'tensor<4xbf16>'}}
  %0 = graph.load_param @w : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Dynamic shapes are rejected: symbolic dimensions are bound before import.
func.func @dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'graph.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?xf32>'}}
  %0 = graph.exp %x : tensor<?xf32>
  return
}

// -----

// Transcendental ops are floating point only.
func.func @exp_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{'graph.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi64>'}}
  %0 = graph.exp %x : tensor<4xi64>
  return
}

// -----

// Broadcasting needs compatible trailing dimensions.
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'graph.add' op failed to infer returned types}}
  // expected-error @+1 {{'graph.add' op shapes [2, 3] and [4] are not broadcast-compatible: dimension 1 from the end is 3 in one and 4 in another}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Binary operands share an element type.
func.func @mul_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{'graph.mul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.mul' op expected operands to have the same element type, got 'f32' and 'i64'}}
  %0 = graph.mul %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// The declared result must be the broadcast shape.
func.func @sub_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'graph.sub' op failed to infer returned types}}
  // expected-error @+1 {{'graph.sub' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  %0 = graph.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

// Comparisons yield i1.
func.func @compare_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.compare' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = graph.compare lt, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Comparisons need broadcast-compatible operands.
func.func @compare_broadcast(%a: tensor<4xi64>, %b: tensor<5xi64>) {
  // expected-error @+2 {{'graph.compare' op failed to infer returned types}}
  // expected-error @+1 {{'graph.compare' op shapes [4] and [5] are not broadcast-compatible: dimension 1 from the end is 4 in one and 5 in another}}
  %0 = graph.compare eq, %a, %b : (tensor<4xi64>, tensor<5xi64>) -> tensor<4xi1>
  return
}

// -----

// The branches of a where share an element type.
func.func @where_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{'graph.where' op failed to infer returned types}}
  // expected-error @+1 {{'graph.where' op expected on_true and on_false to have the same element type, got 'f32' and 'bf16'}}
  %0 = graph.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

// The three operands of a where broadcast together.
func.func @where_broadcast(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'graph.where' op failed to infer returned types}}
  // expected-error @+1 {{'graph.where' op shapes [3] and [4] and [4] are not broadcast-compatible: dimension 1 from the end is 3 in one and 4 in another}}
  %0 = graph.where %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// A cast keeps the shape.
func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.cast' op expected the result shape to equal the input shape [4], got [2, 2]}}
  %0 = graph.cast %x : tensor<4xf32> to tensor<2x2xbf16>
  return
}

// -----

// MatMul contracts the last dimension of lhs with the second-to-last of rhs.
func.func @matmul_contraction(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+2 {{'graph.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.matmul' op contraction dimensions differ: lhs [2, 4] has 4, rhs [5, 3] has 5}}
  %0 = graph.matmul %a, %b : (tensor<2x4xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// MatMul batch dimensions broadcast.
func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<5x4x6xf32>) {
  // expected-error @+2 {{'graph.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.matmul' op batch dimensions: shapes [2] and [5] are not broadcast-compatible: dimension 1 from the end is 2 in one and 5 in another}}
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

// MatMul needs operands of rank >= 1.
func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'graph.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.matmul' op expected operands of rank >= 1, got lhs [] and rhs [4]}}
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

// A transposed matmul operand needs rank >= 2.
func.func @matmul_transposed_vector(%a: tensor<4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'graph.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.matmul' op expected a transposed operand of rank >= 2, got lhs [4] (transposed) and rhs [4, 3]}}
  %0 = graph.matmul %a, %b {transpose_a} : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  return
}

// -----

// With transpose_b the rhs is [N, K]: its last dimension is the contraction.
func.func @matmul_transposed_contraction(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'graph.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.matmul' op contraction dimensions differ: lhs [2, 4] has 4, rhs [4, 3] has 3}}
  %0 = graph.matmul %a, %b {transpose_b} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

// MatMul operands share an element type.
func.func @matmul_types(%a: tensor<2x4xf32>, %b: tensor<4x3xbf16>) {
  // expected-error @+2 {{'graph.matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.matmul' op expected operands to have the same element type, got 'f32' and 'bf16'}}
  %0 = graph.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xbf16>) -> tensor<2x3xf32>
  return
}

// -----

// Reductions need at least one axis.
func.func @reduce_no_axes(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reduce_sum' op failed to infer returned types}}
  // expected-error @+1 {{'graph.reduce_sum' op expected at least one axis}}
  %0 = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Reduction axes are within the rank.
func.func @reduce_axis_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reduce_mean' op failed to infer returned types}}
  // expected-error @+1 {{'graph.reduce_mean' op expected axis in [0, 2), got 2}}
  %0 = graph.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Reduction axes are strictly increasing.
func.func @reduce_axis_order(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reduce_max' op failed to infer returned types}}
  // expected-error @+1 {{'graph.reduce_max' op expected strictly increasing axes, got 0 after 1}}
  %0 = graph.reduce_max %x {axes = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<f32>
  return
}

// -----

// Softmax axes are non-negative (the importer normalises ONNX's negative axes).
func.func @softmax_negative(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.softmax' op attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = graph.softmax %x {axis = -1 : i64} : tensor<2x3xf32>
  return
}

// -----

// The softmax axis is within the rank.
func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.softmax' op expected axis in [0, 2), got 2}}
  %0 = graph.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

// The log-softmax axis is within the rank.
func.func @log_softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.log_softmax' op expected axis in [0, 2), got 5}}
  %0 = graph.log_softmax %x {axis = 5 : i64} : tensor<2x3xf32>
  return
}

// -----

// The layer-norm scale covers the normalised dimensions.
func.func @layer_norm_scale(%x: tensor<2x8x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op expected scale of shape [64] (input dimensions from axis 2), got [32]}}
  %0 = graph.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x64xf32>, tensor<32xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

// The layer-norm bias covers the normalised dimensions.
func.func @layer_norm_bias(%x: tensor<2x8x64xf32>, %g: tensor<8x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op expected bias of shape [8, 64] (input dimensions from axis 1), got [64]}}
  %0 = graph.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

// The layer-norm axis is within the rank.
func.func @layer_norm_axis(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op expected axis in [0, 2), got 2}}
  %0 = graph.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  return
}

// -----

// Normalisation parameters share the input's element type.
func.func @rms_norm_type(%x: tensor<2x64xbf16>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'graph.rms_norm' op expected scale element type 'bf16', got 'f32'}}
  %0 = graph.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x64xbf16>, tensor<64xf32>) -> tensor<2x64xbf16>
  return
}

// -----

// A normalisation yields the input's type.
func.func @rms_norm_result(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'graph.rms_norm' op expected result type 'tensor<2x64xf32>', got 'tensor<2x64xbf16>'}}
  %0 = graph.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xbf16>
  return
}

// -----

// Epsilon is positive.
func.func @rms_norm_epsilon(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'graph.rms_norm' op expected a positive finite epsilon, got 0.000000e+00}}
  %0 = graph.rms_norm %x, %g {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  return
}

// -----

// Cross-entropy logits are [N, C, ...].
func.func @cross_entropy_rank(%l: tensor<256xf32>, %y: tensor<i64>) {
  // expected-error @+2 {{'graph.cross_entropy' op failed to infer returned types}}
  // expected-error @+1 {{'graph.cross_entropy' op expected logits of rank >= 2 ([N, C, ...]), got [256]}}
  %0 = graph.cross_entropy mean %l, %y {ignore_index = -100 : i64} : (tensor<256xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Cross-entropy labels drop the class axis of the logits.
func.func @cross_entropy_labels(%l: tensor<16x256xf32>, %y: tensor<8xi64>) {
  // expected-error @+2 {{'graph.cross_entropy' op failed to infer returned types}}
  // expected-error @+1 {{'graph.cross_entropy' op expected labels of shape [16] for logits [16, 256], got [8]}}
  %0 = graph.cross_entropy mean %l, %y {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// Cross-entropy labels are integers.
func.func @cross_entropy_label_type(%l: tensor<16x256xf32>, %y: tensor<16xf32>) {
  // expected-error @+1 {{'graph.cross_entropy' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<16xf32>'}}
  %0 = graph.cross_entropy mean %l, %y {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<16xf32>) -> tensor<f32>
  return
}

// -----

// A reshape keeps the element count.
func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.reshape' op expected 6 elements in the result (input [2, 3]), got 8 (result [2, 4])}}
  %0 = graph.reshape %x : tensor<2x3xf32> to tensor<2x4xf32>
  return
}

// -----

// A reshape keeps the element type.
func.func @reshape_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.reshape' op expected result element type 'f32', got 'bf16'}}
  %0 = graph.reshape %x : tensor<2x3xf32> to tensor<6xbf16>
  return
}

// -----

// A transpose permutation has one entry per dimension.
func.func @transpose_arity(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.transpose' op failed to infer returned types}}
  // expected-error @+1 {{'graph.transpose' op expected a permutation of 2 dimensions, got 3 entries}}
  %0 = graph.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// A transpose permutation names each dimension once.
func.func @transpose_repeat(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.transpose' op failed to infer returned types}}
  // expected-error @+1 {{'graph.transpose' op expected a permutation of [0, 2), got [1, 1]}}
  %0 = graph.transpose %x {permutation = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// Expand follows the broadcasting rules.
func.func @expand_dims(%x: tensor<3x1xf32>) {
  // expected-error @+1 {{'graph.expand' op input shape [3, 1] does not broadcast to [2, 4, 4]: dimension 0 is 3, expected 1 or 4}}
  %0 = graph.expand %x : tensor<3x1xf32> to tensor<2x4x4xf32>
  return
}

// -----

// Expand never drops dimensions.
func.func @expand_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.expand' op expected the input rank (2) to be at most the result rank (1)}}
  %0 = graph.expand %x : tensor<2x3xf32> to tensor<6xf32>
  return
}

// -----

// Expand keeps the element type.
func.func @expand_type(%x: tensor<3xf32>) {
  // expected-error @+1 {{'graph.expand' op expected result element type 'f32', got 'f16'}}
  %0 = graph.expand %x : tensor<3xf32> to tensor<2x3xf16>
  return
}

// -----

// Concat needs at least one operand.
func.func @concat_empty() {
  // expected-error @+2 {{'graph.concat' op failed to infer returned types}}
  // expected-error @+1 {{'graph.concat' op expected at least one operand}}
  %0 = graph.concat {axis = 0 : i64} : () -> tensor<0xf32>
  return
}

// -----

// Concat operands share the rank.
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'graph.concat' op failed to infer returned types}}
  // expected-error @+1 {{'graph.concat' op expected operand 1 to have rank 2, got 1}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  return
}

// -----

// Concat operands agree outside the axis.
func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{'graph.concat' op failed to infer returned types}}
  // expected-error @+1 {{'graph.concat' op expected operand 1 to match operand 0 in dimension 1 (3), got 4}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// The concat axis is within the rank.
func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.concat' op failed to infer returned types}}
  // expected-error @+1 {{'graph.concat' op expected axis in [0, 2), got 2}}
  %0 = graph.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Concat operands share an element type.
func.func @concat_types(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+2 {{'graph.concat' op failed to infer returned types}}
  // expected-error @+1 {{'graph.concat' op expected all operands to have the same element type, got 'f32' and 'f16'}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf16>) -> tensor<4xf32>
  return
}

// -----

// Slice bounds have one entry per axis.
func.func @slice_arity(%x: tensor<8xf32>) {
  // expected-error @+2 {{'graph.slice' op failed to infer returned types}}
  // expected-error @+1 {{'graph.slice' op expected starts, ends and steps with one entry per axis (1), got 2, 1 and 1}}
  %0 = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 0, 1>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// Slice steps are non-zero.
func.func @slice_step(%x: tensor<8xf32>) {
  // expected-error @+2 {{'graph.slice' op failed to infer returned types}}
  // expected-error @+1 {{'graph.slice' op expected a non-zero step on axis 0}}
  %0 = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 0>} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// Forward slices stay within the dimension.
func.func @slice_forward(%x: tensor<8xf32>) {
  // expected-error @+2 {{'graph.slice' op failed to infer returned types}}
  // expected-error @+1 {{'graph.slice' op expected 0 <= start <= end <= 8 on axis 0 (step 1), got start 2 and end 9}}
  %0 = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 2>, ends = array<i64: 9>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<7xf32>
  return
}

// -----

// Backward slices stay within the dimension.
func.func @slice_backward(%x: tensor<8xf32>) {
  // expected-error @+2 {{'graph.slice' op failed to infer returned types}}
  // expected-error @+1 {{'graph.slice' op expected -1 <= end <= start < 8 on axis 0 (step -1), got start 8 and end 0}}
  %0 = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 8>, ends = array<i64: 0>, steps = array<i64: -1>} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Slice axes are within the rank.
func.func @slice_axes(%x: tensor<8xf32>) {
  // expected-error @+2 {{'graph.slice' op failed to infer returned types}}
  // expected-error @+1 {{'graph.slice' op expected axis in [0, 1), got 1}}
  %0 = graph.slice %x {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// Split sizes sum to the dimension.
func.func @split_sum(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'graph.split' op failed to infer returned types}}
  // expected-error @+1 {{'graph.split' op expected sizes [3, 4] to sum to dimension 1 (8), got 7}}
  %0:2 = graph.split %x {axis = 1 : i64, sizes = array<i64: 3, 4>} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>)
  return
}

// -----

// Split sizes are positive.
func.func @split_positive(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'graph.split' op failed to infer returned types}}
  // expected-error @+1 {{'graph.split' op expected positive sizes, got [8, 0]}}
  %0:2 = graph.split %x {axis = 1 : i64, sizes = array<i64: 8, 0>} : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x0xf32>)
  return
}

// -----

// Split makes at least one piece.
func.func @split_empty(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'graph.split' op failed to infer returned types}}
  // expected-error @+1 {{'graph.split' op expected at least one size}}
  graph.split %x {axis = 1 : i64, sizes = array<i64>} : (tensor<2x8xf32>) -> ()
  return
}

// -----

// The split axis is within the rank.
func.func @split_axis(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'graph.split' op failed to infer returned types}}
  // expected-error @+1 {{'graph.split' op expected axis in [0, 2), got 2}}
  %0 = graph.split %x {axis = 2 : i64, sizes = array<i64: 8>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// The gather axis is within the data's rank.
func.func @gather_axis(%t: tensor<256x64xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{'graph.gather' op failed to infer returned types}}
  // expected-error @+1 {{'graph.gather' op expected axis in [0, 2), got 2}}
  %0 = graph.gather %t, %i {axis = 2 : i64} : (tensor<256x64xf32>, tensor<4xi64>) -> tensor<4x64xf32>
  return
}

// -----

// Gather indices are integers.
func.func @gather_index_type(%t: tensor<256x64xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{'graph.gather' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = graph.gather %t, %i {axis = 0 : i64} : (tensor<256x64xf32>, tensor<4xf32>) -> tensor<4x64xf32>
  return
}

// -----

// GatherElements indices have the data's rank.
func.func @gather_elements_rank(%d: tensor<16x256xf32>, %i: tensor<16xi64>) {
  // expected-error @+2 {{'graph.gather_elements' op failed to infer returned types}}
  // expected-error @+1 {{'graph.gather_elements' op expected indices of the data's rank (2), got rank 1}}
  %0 = graph.gather_elements %d, %i {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<16xf32>
  return
}

// -----

// GatherElements indices fit the data outside the axis.
func.func @gather_elements_dims(%d: tensor<16x256xf32>, %i: tensor<32x1xi64>) {
  // expected-error @+2 {{'graph.gather_elements' op failed to infer returned types}}
  // expected-error @+1 {{'graph.gather_elements' op expected indices dimension 0 to be at most the data's (16), got 32}}
  %0 = graph.gather_elements %d, %i {axis = 1 : i64} : (tensor<16x256xf32>, tensor<32x1xi64>) -> tensor<32x1xf32>
  return
}

// -----

// The gather_elements axis is within the rank.
func.func @gather_elements_axis(%d: tensor<16x256xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+2 {{'graph.gather_elements' op failed to infer returned types}}
  // expected-error @+1 {{'graph.gather_elements' op expected axis in [0, 2), got 3}}
  %0 = graph.gather_elements %d, %i {axis = 3 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  return
}

// -----

// top_k's k lies in [1, the axis' size].
func.func @top_k_k(%x: tensor<32x4xf32>) {
  // expected-error @+2 {{'graph.top_k' op failed to infer returned types}}
  // expected-error @+1 {{'graph.top_k' op expected k in [1, 4] (the input's dimension 1), got 5}}
  %0 = graph.top_k %x {axis = 1 : i64, k = 5 : i64} : (tensor<32x4xf32>) -> tensor<32x5xi64>
  return
}

// -----

func.func @top_k_zero(%x: tensor<32x4xf32>) {
  // expected-error @+2 {{'graph.top_k' op failed to infer returned types}}
  // expected-error @+1 {{'graph.top_k' op expected k in [1, 4] (the input's dimension 1), got 0}}
  %0 = graph.top_k %x {axis = 1 : i64, k = 0 : i64} : (tensor<32x4xf32>) -> tensor<32x0xi64>
  return
}

// -----

// The top_k axis is within the rank.
func.func @top_k_axis(%x: tensor<32x4xf32>) {
  // expected-error @+2 {{'graph.top_k' op failed to infer returned types}}
  // expected-error @+1 {{'graph.top_k' op expected axis in [0, 2), got 2}}
  %0 = graph.top_k %x {axis = 2 : i64, k = 1 : i64} : (tensor<32x4xf32>) -> tensor<32x1xi64>
  return
}

// -----

// top_k ranks floats only.
func.func @top_k_int(%x: tensor<32x4xi64>) {
  // expected-error @+1 {{'graph.top_k' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<32x4xi64>'}}
  %0 = graph.top_k %x {axis = 1 : i64, k = 1 : i64} : (tensor<32x4xi64>) -> tensor<32x1xi64>
  return
}

// -----

// Its result is i64 indices of the input's shape with k along the axis.
func.func @top_k_result(%x: tensor<32x4xf32>) {
  // expected-error @+1 {{'graph.top_k' op result #0 must be statically shaped tensor of 64-bit signless integer values, but got 'tensor<32x2xi32>'}}
  %0 = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<32x4xf32>) -> tensor<32x2xi32>
  return
}

// -----

func.func @top_k_shape(%x: tensor<32x4xf32>) {
  // expected-error @+2 {{'graph.top_k' op failed to infer returned types}}
  // expected-error @+1 {{'graph.top_k' op inferred type(s) 'tensor<32x2xi64>' are incompatible with return type(s) of operation 'tensor<32x3xi64>'}}
  %0 = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<32x4xf32>) -> tensor<32x3xi64>
  return
}

// -----

// A range is 1-D.
func.func @range_rank() {
  // expected-error @+1 {{'graph.range' op expected a 1-D result, got rank 2}}
  %0 = graph.range {start = 0 : i64, limit = 8 : i64, delta = 1 : i64} : tensor<2x4xi64>
  return
}

// -----

// An integer range has integer bounds.
func.func @range_int_bounds() {
  // expected-error @+1 {{'graph.range' op expected integer start, limit and delta for a result of 'i64'}}
  %0 = graph.range {start = 0.5 : f64, limit = 8 : i64, delta = 1 : i64} : tensor<8xi64>
  return
}

// -----

// An integer range has a non-zero delta.
func.func @range_int_delta() {
  // expected-error @+1 {{'graph.range' op expected a non-zero delta}}
  %0 = graph.range {start = 0 : i64, limit = 8 : i64, delta = 0 : i64} : tensor<8xi64>
  return
}

// -----

// A float range has a non-zero delta.
func.func @range_float_delta() {
  // expected-error @+1 {{'graph.range' op expected a non-zero finite delta}}
  %0 = graph.range {start = 0.0 : f64, limit = 1.0 : f64, delta = 0.0 : f64} : tensor<8xf32>
  return
}

// -----

// The range length is ceil((limit - start) / delta).
func.func @range_count() {
  // expected-error @+1 {{'graph.range' op expected 3 elements from start, limit and delta, got 4}}
  %0 = graph.range {start = 0 : i64, limit = 8 : i64, delta = 3 : i64} : tensor<4xi64>
  return
}

// -----

// Trilu works on matrices.
func.func @trilu_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'graph.trilu' op expected an input of rank >= 2, got rank 1}}
  %0 = graph.trilu %x {k = 0 : i64} : tensor<8xf32>
  return
}

// -----

// scatter_add's updates have the shape gather would produce from the result.
func.func @scatter_add_shape(%u: tensor<2x8x32xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'graph.scatter_add' op expected an update of shape [2, 8, 64] for the result 'tensor<256x64xf32>', got [2, 8, 32]}}
  %0 = graph.scatter_add %u, %i {axis = 0 : i64} : (tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<256x64xf32>
  return
}

// -----

// scatter_add keeps the element type.
func.func @scatter_add_type(%u: tensor<2x64xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'graph.scatter_add' op expected result element type 'f32', got 'bf16'}}
  %0 = graph.scatter_add %u, %i {axis = 0 : i64} : (tensor<2x64xf32>, tensor<2xi64>) -> tensor<256x64xbf16>
  return
}

// -----

// scatter_add's axis is within the result's rank.
func.func @scatter_add_axis(%u: tensor<2x64xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'graph.scatter_add' op expected axis in [0, 2), got 2}}
  %0 = graph.scatter_add %u, %i {axis = 2 : i64} : (tensor<2x64xf32>, tensor<2xi64>) -> tensor<256x64xf32>
  return
}

// -----

// scatter_elements_add's indices have the updates' shape.
func.func @scatter_elements_indices(%u: tensor<16x1xf32>, %i: tensor<16x2xi64>) {
  // expected-error @+1 {{'graph.scatter_elements_add' op expected indices of the updates' shape [16, 1], got [16, 2]}}
  %0 = graph.scatter_elements_add %u, %i {axis = 1 : i64} : (tensor<16x1xf32>, tensor<16x2xi64>) -> tensor<16x256xf32>
  return
}

// -----

// scatter's updates have the shape a gather of the data by the indices has.
func.func @scatter_updates(%d: tensor<64x128xf32>, %i: tensor<16xi64>, %u: tensor<8x128xf32>) {
  // expected-error @+1 {{'graph.scatter' op expected an update of shape [16, 128] for the result 'tensor<64x128xf32>', got [8, 128]}}
  %0 = graph.scatter %d, %i, %u {axis = 0 : i64} : (tensor<64x128xf32>, tensor<16xi64>, tensor<8x128xf32>) -> tensor<64x128xf32>
  return
}

// -----

// scatter's updates have the data's element type.
func.func @scatter_element_type(%d: tensor<64x128xf32>, %i: tensor<16xi64>, %u: tensor<16x128xbf16>) {
  // expected-error @+1 {{'graph.scatter' op expected result element type 'bf16', got 'f32'}}
  %0 = graph.scatter %d, %i, %u {axis = 0 : i64} : (tensor<64x128xf32>, tensor<16xi64>, tensor<16x128xbf16>) -> tensor<64x128xf32>
  return
}

// -----

// scatter's result has the data's type.
func.func @scatter_result(%d: tensor<64x128xf32>, %i: tensor<16xi64>, %u: tensor<16x128xf32>) {
  // expected-error @+1 {{'graph.scatter' op failed to verify that all of {data, result} have same type}}
  %0 = graph.scatter %d, %i, %u {axis = 0 : i64} : (tensor<64x128xf32>, tensor<16xi64>, tensor<16x128xf32>) -> tensor<64x64xf32>
  return
}

// -----

// scatter_elements' indices have the updates' shape.
func.func @scatter_elements_indices(%d: tensor<32x8xf32>, %i: tensor<32x3xi64>, %u: tensor<32x2xf32>) {
  // expected-error @+1 {{'graph.scatter_elements' op expected indices of the updates' shape [32, 2], got [32, 3]}}
  %0 = graph.scatter_elements %d, %i, %u {axis = 1 : i64} : (tensor<32x8xf32>, tensor<32x3xi64>, tensor<32x2xf32>) -> tensor<32x8xf32>
  return
}

// -----

// scatter_elements' updates fit the data but along the axis.
func.func @scatter_elements_fit(%d: tensor<32x8xf32>, %i: tensor<33x2xi64>, %u: tensor<33x2xf32>) {
  // expected-error @+1 {{'graph.scatter_elements' op}}
  %0 = graph.scatter_elements %d, %i, %u {axis = 1 : i64} : (tensor<32x8xf32>, tensor<33x2xi64>, tensor<33x2xf32>) -> tensor<32x8xf32>
  return
}

// -----

// cumsum's axis is within the rank.
func.func @cumsum_axis(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'graph.cumsum' op expected axis in [0, 2), got 2}}
  %0 = graph.cumsum %x {axis = 2 : i64} : tensor<2x8xf32>
  return
}

// -----

// cumsum takes numbers, not booleans.
func.func @cumsum_bool(%x: tensor<2x8xi1>) {
  // expected-error @+1 {{'graph.cumsum' op operand #0 must be}}
  %0 = graph.cumsum %x {axis = 1 : i64} : tensor<2x8xi1>
  return
}

// -----

// mod's operands have one element type.
func.func @mod_types(%a: tensor<8xi64>, %b: tensor<8xi32>) {
  // expected-error @+2 {{'graph.mod' op failed to infer returned types}}
  // expected-error @+1 {{'graph.mod' op expected operands to have the same element type, got 'i64' and 'i32'}}
  %0 = graph.mod %a, %b : (tensor<8xi64>, tensor<8xi32>) -> tensor<8xi64>
  return
}

// -----

// softplus and floor take floating-point tensors.
func.func @floor_int(%x: tensor<8xi64>) {
  // expected-error @+1 {{'graph.floor' op operand #0 must be}}
  %0 = graph.floor %x : tensor<8xi64>
  return
}

// -----

// slice_scatter's update has the slice's shape.
func.func @slice_scatter_shape(%u: tensor<2x4xf32>) {
  // expected-error @+1 {{'graph.slice_scatter' op expected an update of shape [2, 8] for the result 'tensor<2x16xf32>', got [2, 4]}}
  %0 = graph.slice_scatter %u {axes = array<i64: 1>, starts = array<i64: 8>, ends = array<i64: 16>, steps = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x16xf32>
  return
}

// -----

// swiglu's gate and up have the result's type.
func.func @swiglu_types(%g: tensor<2x8xf32>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{'graph.swiglu' op requires the same type for all operands and results}}
  %0 = "graph.swiglu"(%g, %u) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// swiglu is defined on floating-point tensors only.
func.func @swiglu_integer(%g: tensor<2x8xi64>) {
  // expected-error @+1 {{'graph.swiglu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<2x8xi64>'}}
  %0 = "graph.swiglu"(%g, %g) : (tensor<2x8xi64>, tensor<2x8xi64>) -> tensor<2x8xi64>
  return
}

// -----

// rope rotates halves of the last dimension: it must be even.
func.func @rope_odd(%x: tensor<2x4x8x15xf32>, %c: tensor<8x15xf32>) {
  // expected-error @+1 {{'graph.rope' op expected an even last dimension of the input, got 15}}
  %0 = graph.rope %x, %c, %c : (tensor<2x4x8x15xf32>, tensor<8x15xf32>, tensor<8x15xf32>) -> tensor<2x4x8x15xf32>
  return
}

// -----

// rope's cos and sin have the same type.
func.func @rope_cos_sin(%x: tensor<2x4x8x16xf32>, %c: tensor<8x16xf32>, %s: tensor<1x8x16xf32>) {
  // expected-error @+1 {{'graph.rope' op expected cos and sin of the same type, got 'tensor<8x16xf32>' and 'tensor<1x8x16xf32>'}}
  %0 = graph.rope %x, %c, %s : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<1x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// rope's cos and sin have the input's element type.
func.func @rope_element(%x: tensor<2x4x8x16xf32>, %c: tensor<8x16xbf16>) {
  // expected-error @+1 {{'graph.rope' op expected cos element type 'f32', got 'bf16'}}
  %0 = graph.rope %x, %c, %c : (tensor<2x4x8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// rope's cos and sin cover the whole last dimension (no broadcast along it).
func.func @rope_last_dim(%x: tensor<2x4x8x16xf32>, %c: tensor<8x1xf32>) {
  // expected-error @+1 {{'graph.rope' op expected cos and sin with a last dimension of 16, got [8, 1]}}
  %0 = graph.rope %x, %c, %c : (tensor<2x4x8x16xf32>, tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// rope's cos and sin broadcast to the input's shape.
func.func @rope_broadcast(%x: tensor<2x4x8x16xf32>, %c: tensor<3x1x8x16xf32>) {
  // expected-error @+1 {{'graph.rope' op expected cos and sin to broadcast to the shape of the input [2, 4, 8, 16], got [3, 1, 8, 16]}}
  %0 = graph.rope %x, %c, %c : (tensor<2x4x8x16xf32>, tensor<3x1x8x16xf32>, tensor<3x1x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// rope's result has the input's type.
func.func @rope_result(%x: tensor<2x4x8x16xf32>, %c: tensor<8x16xf32>) {
  // expected-error @+1 {{'graph.rope' op expected result type 'tensor<2x4x8x16xf32>', got 'tensor<2x4x8x8xf32>'}}
  %0 = graph.rope %x, %c, %c : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

// attention's query is [B, Hq, S, D].
func.func @attention_rank(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected a query of rank 4 [B, Hq, S, D], got rank 2}}
  %0 = graph.attention %q, %q, %q {scale = 0.25 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

// attention's value has the key's batch, heads and positions (its head size may differ).
func.func @attention_kv(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x1x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected a value of shape [1, 2, 8, Dv] (the key's batch, heads and positions), got [1, 1, 8, 16]}}
  %0 = graph.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// attention's key shares the query's batch, sequence and head size.
func.func @attention_kv_shape(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected a key of shape [1, Hkv, 8, 16], got [1, 2, 4, 16]}}
  %0 = graph.attention %q, %k, %k {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// Grouped-query attention: the key/value heads divide the query heads.
func.func @attention_groups(%q: tensor<1x4x8x16xf32>, %k: tensor<1x3x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected the query heads (4) to be a multiple of the key/value heads (3)}}
  %0 = graph.attention %q, %k, %k {scale = 0.25 : f64} : (tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>) -> tensor<1x4x8x16xf32>
  return
}

// -----

// attention's scale is positive.
func.func @attention_scale(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected a positive finite scale, got 0}}
  %0 = graph.attention %q, %q, %q {scale = 0.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// attention's key and value have the query's element type.
func.func @attention_element(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xbf16>) {
  // expected-error @+1 {{'graph.attention' op expected key and value element type 'f32', got 'bf16' and 'bf16'}}
  %0 = graph.attention %q, %k, %k {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// attention_vjp shares attention's operand checks: the key/value heads divide the query heads.
func.func @attention_vjp_groups(%q: tensor<1x4x8x16xf32>, %k: tensor<1x3x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected the query heads (4) to be a multiple of the key/value heads (3)}}
  %0:3 = graph.attention_vjp %q, %k, %k, %q, %q {scale = 0.25 : f64} : (tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>)
  return
}

// -----

// attention's sinks are one per query head.
func.func @attention_sinks_shape(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'graph.attention' op expected sinks of type 'tensor<4xf32>' (one per query head), got 'tensor<2xf32>'}}
  %0 = graph.attention %q, %kv, %kv sinks %s {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// attention's sinks have the query's element type.
func.func @attention_sinks_dtype(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %s: tensor<4xbf16>) {
  // expected-error @+1 {{'graph.attention' op expected sinks of type 'tensor<4xf32>' (one per query head), got 'tensor<4xbf16>'}}
  %0 = graph.attention %q, %kv, %kv sinks %s {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xbf16>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// attention_vjp with sinks returns dsinks.
func.func @attention_vjp_no_dsinks(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected a dsinks result exactly when there are sinks}}
  %0:3 = graph.attention_vjp %q, %kv, %kv, %q, %q sinks %s {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<4xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return
}

// -----

// attention_vjp without sinks has no dsinks.
func.func @attention_vjp_stray_dsinks(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected a dsinks result exactly when there are sinks}}
  %0:4 = graph.attention_vjp %q, %kv, %kv, %q, %q {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>)
  return
}

// -----

// dsinks has the sinks' type.
func.func @attention_vjp_dsinks_type(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected dsinks of the sinks' type 'tensor<4xf32>', got 'tensor<4xbf16>'}}
  %0:4 = graph.attention_vjp %q, %kv, %kv, %q, %q sinks %s {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<4xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xbf16>)
  return
}

// -----

// attention's sliding window is at least 1.
func.func @attention_window_zero(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected a window of at least 1, got 0}}
  %0 = graph.attention %q, %kv, %kv {causal, scale = 0.25 : f64, window = 0 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// attention's soft-cap is positive.
func.func @attention_softcap_zero(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected a positive finite softcap, got 0}}
  %0 = graph.attention %q, %kv, %kv {causal, scale = 0.25 : f64, softcap = 0.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// attention_vjp's soft-cap is finite.
func.func @attention_vjp_softcap_inf(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected a positive finite softcap, got INF}}
  %0:3 = graph.attention_vjp %q, %kv, %kv, %q, %q {scale = 0.25 : f64, softcap = 0x7FF0000000000000 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return
}

// -----

// attention's sliding window comes with causal.
func.func @attention_window_not_causal(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op expected `causal` with a sliding window}}
  %0 = graph.attention %q, %kv, %kv {scale = 0.25 : f64, window = 4 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// attention_vjp's window is the forward's: at least 1, with causal.
func.func @attention_vjp_window_negative(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected a window of at least 1, got -2}}
  %0:3 = graph.attention_vjp %q, %kv, %kv, %q, %q {causal, scale = 0.25 : f64, window = -2 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return
}

// -----

func.func @attention_vjp_window_not_causal(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected `causal` with a sliding window}}
  %0:3 = graph.attention_vjp %q, %kv, %kv, %q, %q {scale = 0.25 : f64, window = 2 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return
}

// -----

// attention's window is an integer.
func.func @attention_window_type(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = graph.attention %q, %kv, %kv {causal, scale = 0.25 : f64, window = 2.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

// attention_vjp's scale is the forward's: positive and finite.
func.func @attention_vjp_scale(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected a positive finite scale, got -1}}
  %0:3 = graph.attention_vjp %q, %q, %q, %q, %q {scale = -1.0 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

// attention_vjp's forward output has the forward result's type.
func.func @attention_vjp_out(%q: tensor<1x2x8x16xf32>, %o: tensor<1x2x4x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected out of the forward result's type 'tensor<1x2x8x16xf32>', got 'tensor<1x2x4x16xf32>'}}
  %0:3 = graph.attention_vjp %q, %q, %q, %o, %q {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

// attention_vjp's output cotangent has the forward result's type.
func.func @attention_vjp_dout(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xbf16>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected dout of the forward result's type 'tensor<1x2x8x16xf32>', got 'tensor<1x2x8x16xbf16>'}}
  %0:3 = graph.attention_vjp %q, %q, %q, %q, %g {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xbf16>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

// attention_vjp's dquery has the query's type.
func.func @attention_vjp_dq(%q: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected dquery of the query's type 'tensor<1x2x8x16xf32>', got 'tensor<1x1x8x16xf32>'}}
  %0:3 = graph.attention_vjp %q, %q, %q, %q, %q {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x1x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

// attention_vjp's dkey and dvalue have the key's type (GQA: the key/value heads).
func.func @attention_vjp_dk(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected dkey of the key's type 'tensor<1x2x8x16xf32>' and dvalue of the value's type 'tensor<1x2x8x16xf32>', got 'tensor<1x4x8x16xf32>' and 'tensor<1x2x8x16xf32>'}}
  %0:3 = graph.attention_vjp %q, %k, %k, %q, %q {scale = 0.25 : f64} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

// A value head size other than the query's: the result's last dimension is the value's.
func.func @attention_value_dim_result(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'graph.attention' op expected result type 'tensor<1x2x8x8xf32>', got 'tensor<1x2x8x16xf32>'}}
  %0 = graph.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// attention_vjp's dvalue has the value's type, with its own head size.
func.func @attention_vjp_value_dim(%q: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'graph.attention_vjp' op expected dkey of the key's type 'tensor<1x2x8x16xf32>' and dvalue of the value's type 'tensor<1x2x8x8xf32>', got 'tensor<1x2x8x16xf32>' and 'tensor<1x2x8x16xf32>'}}
  %0:3 = graph.attention_vjp %q, %q, %v, %v, %v {scale = 0.25 : f64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @linear_cross_entropy_rank(%h: tensor<2x4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected hidden of rank 2 [N, H], got 'tensor<2x4x8xf32>'}}
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<2x4x8xf32>, tensor<10x8xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_width(%h: tensor<4x8xf32>, %w: tensor<10x7xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected weight of shape [V, 8], got [10, 7]}}
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x7xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_labels(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<5xi64>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected labels of shape [4], got [5]}}
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_dtype(%h: tensor<4x8xf32>, %w: tensor<10x8xbf16>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected weight element type 'f32', got 'bf16'}}
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xbf16>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_loss(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected a 0-D loss of 'f32', got 'tensor<1xf32>'}}
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<1xf32>
  return
}

// -----

func.func @linear_cross_entropy_chunk(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected chunk_rows >= 0, got -2}}
  %l = graph.linear_cross_entropy mean %h, %w, %y {chunk_rows = -2 : i64, ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_vjp_seed(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'graph.linear_cross_entropy_vjp' op expected a seed of the loss's type 'tensor<f32>', got 'tensor<1xf32>'}}
  %l, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<1xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  return
}

// -----

func.func @linear_cross_entropy_vjp_grads(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %s: tensor<f32>) {
  // expected-error @+1 {{'graph.linear_cross_entropy_vjp' op expected dhidden of type 'tensor<4x8xf32>' and dweight of type 'tensor<10x8xf32>', got 'tensor<4x8xf32>' and 'tensor<8x10xf32>'}}
  %l, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<8x10xf32>)
  return
}

// -----

func.func @linear_cross_entropy_bias_shape(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %b: tensor<9xf32>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected bias of shape [10] and element type 'f32', got 'tensor<9xf32>'}}
  %l = graph.linear_cross_entropy mean %h, %w, %y bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<9xf32>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_bias_type(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %b: tensor<10xbf16>) {
  // expected-error @+1 {{'graph.linear_cross_entropy' op expected bias of shape [10] and element type 'f32', got 'tensor<10xbf16>'}}
  %l = graph.linear_cross_entropy mean %h, %w, %y bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<10xbf16>) -> tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_vjp_no_dbias(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %s: tensor<f32>, %b: tensor<10xf32>) {
  // expected-error @+1 {{'graph.linear_cross_entropy_vjp' op expected a dbias result exactly when there is a bias}}
  %l, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>, tensor<10xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  return
}

// -----

func.func @linear_cross_entropy_vjp_dbias_type(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %s: tensor<f32>, %b: tensor<10xf32>) {
  // expected-error @+1 {{'graph.linear_cross_entropy_vjp' op expected dbias of type 'tensor<10xf32>', got 'tensor<1x10xf32>'}}
  %l, %dh, %dw, %db = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>, tensor<10xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>, tensor<1x10xf32>)
  return
}

// -----

// A quantized param's storage has the format's byte count for its stored type.
// expected-error @+1 {{'graph.param' op expected type 'tensor<4232xui8>' (nf4 of 'tensor<64x128xf32>'), got 'tensor<100xui8>'}}
graph.param @q : tensor<100xui8> {quant = 0 : i32, stored_type = tensor<64x128xf32>}

// -----

// Only frozen params are held quantized (storage is not floating point).
// expected-error @+1 {{'graph.param' op expected a floating-point type for a trainable param, got 'tensor<4232xui8>'}}
graph.param @q trainable : tensor<4232xui8> {quant = 0 : i32, stored_type = tensor<64x128xf32>}

// -----

// Quantized storage needs its format.
// expected-error @+1 {{'graph.param' op expected 'quant' on a param of quantized storage 'tensor<100xui8>'}}
graph.param @q : tensor<100xui8>

// -----

// int8 and fp8 name their input axis.
func.func @f(%q: tensor<8448xui8>) -> tensor<64x128xf32> {
  // expected-error @+1 {{'graph.dequantize' op expected 'axis' (the input axis) with int8 and fp8}}
  %w = graph.dequantize int8 %q : (tensor<8448xui8>) -> tensor<64x128xf32>
  return %w : tensor<64x128xf32>
}

// -----

// The storage's length is the format's byte count for the result (the shape rule).
func.func @f(%q: tensor<4000xui8>) -> tensor<64x128xf32> {
  // expected-error @+1 {{'graph.dequantize' op expected 4232 bytes of nf4 storage for 'tensor<64x128xf32>', got 4000}}
  %w = graph.dequantize nf4 %q : (tensor<4000xui8>) -> tensor<64x128xf32>
  return %w : tensor<64x128xf32>
}

// -----

func.func @f(%q: tensor<4232xui8>) -> tensor<64x100xf32> {
  // expected-error @+1 {{'graph.dequantize' op a weight [64, 100] cannot be held as nf4: its last dimension 100 is not a multiple of the nf4 block size 64}}
  %w = graph.dequantize nf4 %q : (tensor<4232xui8>) -> tensor<64x100xf32>
  return %w : tensor<64x100xf32>
}

// -----

// rms_norm_vjp's cotangent has the input's type.
func.func @rms_norm_vjp_grad(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>, %g: tensor<2x8x32xf32>) {
  // expected-error @+1 {{'graph.rms_norm_vjp' op expected grad of the input's type 'tensor<2x8x64xf32>', got 'tensor<2x8x32xf32>'}}
  %0:2 = graph.rms_norm_vjp %x, %w, %g {axis = 2 : i64, epsilon = 1.0E-6 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  return
}

// -----

// rms_norm_vjp's scale has shape x.shape[axis:].
func.func @rms_norm_vjp_scale(%x: tensor<2x8x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{'graph.rms_norm_vjp' op expected scale of shape [64] (input dimensions from axis 2), got [32]}}
  %0:2 = graph.rms_norm_vjp %x, %w, %x {axis = 2 : i64, epsilon = 1.0E-6 : f64} : (tensor<2x8x64xf32>, tensor<32xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  return
}

// -----

// rms_norm_vjp's per-row scale products have the input's shape.
func.func @rms_norm_vjp_rows(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'graph.rms_norm_vjp' op expected dscale_rows of the input's type 'tensor<2x8x64xf32>', got 'tensor<64xf32>'}}
  %0:2 = graph.rms_norm_vjp %x, %w, %x {axis = 2 : i64, epsilon = 1.0E-6 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<64xf32>)
  return
}

// -----

// rms_norm_vjp's epsilon is positive.
func.func @rms_norm_vjp_eps(%x: tensor<2x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'graph.rms_norm_vjp' op expected a positive finite epsilon, got 0}}
  %0:2 = graph.rms_norm_vjp %x, %w, %x {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x64xf32>, tensor<64xf32>, tensor<2x64xf32>) -> (tensor<2x64xf32>, tensor<2x64xf32>)
  return
}

// -----

// swiglu_vjp's operands and results share one type.
func.func @swiglu_vjp_types(%a: tensor<2x8xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'graph.swiglu_vjp' op requires the same type for all operands and results}}
  %0:2 = "graph.swiglu_vjp"(%a, %a, %g) : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

// rope_vjp's cotangent has an even last dimension, like rope's input.
func.func @rope_vjp_odd(%g: tensor<2x4x8x15xf32>, %c: tensor<8x15xf32>) {
  // expected-error @+1 {{'graph.rope_vjp' op expected an even last dimension of grad, got 15}}
  %0 = graph.rope_vjp %g, %c, %c : (tensor<2x4x8x15xf32>, tensor<8x15xf32>, tensor<8x15xf32>) -> tensor<2x4x8x15xf32>
  return
}

// -----

// rope_vjp's cos and sin broadcast to the cotangent's shape.
func.func @rope_vjp_broadcast(%g: tensor<2x4x8x16xf32>, %c: tensor<3x16xf32>) {
  // expected-error @+1 {{'graph.rope_vjp' op expected cos and sin to broadcast to the shape of grad [2, 4, 8, 16], got [3, 16]}}
  %0 = graph.rope_vjp %g, %c, %c : (tensor<2x4x8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<2x4x8x16xf32>
  return
}
