// Causal self-attention probabilities of four heads (keys = queries, to keep it short), written
// the way the ONNX importer emits them.
// `rp-opt --canonicalize` removes the identity ops an exporter leaves behind
// (the transpose pair, the multiplication by 1, the reshape round trip).
graph.param @"model.layers.0.self_attn.q_proj.weight" trainable : tensor<64x64xf32> initializer "model.layers.0.self_attn.q_proj.weight"

func.func @scores(%h: tensor<2x8x64xf32>) -> tensor<2x4x8x8xf32> {
  %wq = graph.load_param @"model.layers.0.self_attn.q_proj.weight" : tensor<64x64xf32>
  %q = graph.matmul %h, %wq : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  %flat = graph.reshape %q : tensor<2x8x64xf32> to tensor<16x64xf32>
  %back = graph.reshape %flat : tensor<16x64xf32> to tensor<2x8x64xf32>
  %heads = graph.reshape %back : tensor<2x8x64xf32> to tensor<2x8x4x16xf32>
  %qt = graph.transpose %heads {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = graph.transpose %qt {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
  %raw = graph.matmul %qt, %kt : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %s = graph.mul %raw, %one : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %scale = graph.constant dense<0.25> : tensor<f32>
  %scaled = graph.mul %s, %scale : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %ones = graph.constant dense<true> : tensor<8x8xi1>
  %causal = graph.trilu %ones {k = 0 : i64} : tensor<8x8xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %masked = graph.where %causal, %scaled, %ninf : (tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p = graph.softmax %masked {axis = 3 : i64} : tensor<2x4x8x8xf32>
  return %p : tensor<2x4x8x8xf32>
}
