"""Model FLOPs of a decoder-only transformer, the numerator of model FLOP utilisation (MFU).

PaLM (Chowdhery et al. 2022, arXiv 2204.02311), Appendix B: the model FLOPs per token of a
training step (forward + backward) are

    6 N + 12 L H Q T

  N  parameters that take part in matrix products (the attention and MLP projections, the LM
     head, the norms; the input embedding is a lookup, not a product, so it is excluded; a
     tied embedding counts once, as the LM head) -- nanoGPT's estimate_mfu counts the same way;
  L  layers, H  query heads, Q  head dimension, T  sequence length: the attention score and
     value products, 2 x 2 T Q FLOPs per head per token forward, x 3 for forward + backward,
     counted over the full T x T square (no halving for the causal mask, as PaLM counts).

Recomputation is not counted (model FLOPs, not hardware FLOPs), so the same number serves
RoundPipe (which recomputes every backward stage's forward) and PyTorch without activation
checkpointing. MFU = tokens/s x flops_per_token / peak, the peak being the GPU's dense bf16
tensor-core rate (H100 SXM and H200: 989 TFLOP/s, NVIDIA's data sheets, without sparsity).
"""

# Dense bf16 tensor-core peaks without sparsity, TFLOP/s (NVIDIA data sheets).
PEAK_BF16_TFLOPS = {"h100": 989.0, "h100-sxm": 989.0, "h200": 989.0, "h100-pcie": 756.0,
                    "a100": 312.0, "rtx4090": 165.2}


def matmul_params(model):
    """N of the formula: every parameter but the (untied) input embedding."""
    return int(model["param_count"]) - int(model.get("embedding_params", 0))


def flops_per_token(model):
    """6 N + 12 L H Q T for a model dict (bench/out/.../plans/model.json: layers, heads,
    head_dim, seq, param_count, embedding_params)."""
    n = matmul_params(model)
    attention = 12 * int(model["layers"]) * int(model["heads"]) * int(model["head_dim"]) \
        * int(model["seq"])
    return 6 * n + attention


def mfu(tokens_per_s, model, peak_tflops):
    """Model FLOP utilisation in [0, 1]."""
    return tokens_per_s * flops_per_token(model) / (peak_tflops * 1e12)


def qwen3_model_dict(config, seq, param_count):
    """The model dict of a transformers Qwen3Config (bench/torch_baseline.py)."""
    tie = bool(getattr(config, "tie_word_embeddings", False))
    return dict(arch="qwen3", layers=config.num_hidden_layers, heads=config.num_attention_heads,
                kv_heads=config.num_key_value_heads, head_dim=config.head_dim,
                hidden=config.hidden_size, intermediate=config.intermediate_size,
                vocab=config.vocab_size, seq=seq, tie=tie, param_count=int(param_count),
                embedding_params=0 if tie else config.vocab_size * config.hidden_size)
