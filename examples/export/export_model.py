#!/usr/bin/env python3
"""Export a Hugging Face causal LM's training graph to ONNX, with random weights and a PyTorch
reference sidecar, or without weights from PyTorch's meta device.

    python examples/export/export_model.py --arch ARCH [--size test|tiny|small|full]
        --exporter dynamo|torchscript --out DIR [--weightless | --no-reference]
        [--batch 4] [--seq 64] [--dynamic] [--seed 0] [--opset N] [--tied | --untied]
        [--layers L] [--hidden H] [--heads N] [--kv-heads K] [--head-dim D]
        [--intermediate I] [--vocab V] [--experts E] [--top-k K] [--moe-intermediate I]
        [--sliding-window W] [--rope-tables | --no-rope-tables]
        [--router-aux-loss [--router-aux-loss-coef C]] [--packed] [--no-final-logit-softcap]
    python examples/export/export_model.py --model-dir HF_DIR --exporter dynamo --out DIR ...

Two modes:

  (default)     the model is built on the CPU with random f32 weights (torch.manual_seed(seed));
                model.onnx holds them inline, and reference.safetensors holds PyTorch's loss
                and gradients on one seeded batch (--no-reference leaves it out). The committed
                test exports (export_all.sh) and examples/qwen3-tiny are made this way.
  --weightless  the model is built on PyTorch's meta device: no weight is allocated or
                initialised and the export traces shapes only (36 s and 1 GB of memory for
                Qwen3-1.7B on 2 cores). The parameters become ONNX external data in
                DIR/model.weights, a *sparse* file of zeros (no disk blocks, no memory); the
                buffers are inline with their real values (constants that fold). No reference
                (the meta device computes nothing), no --router-aux-loss (transformers' loss
                counts tokens with an int32 histc off the CPU, which the exporter cannot
                convert), --exporter dynamo only. For graphs that are compiled rather than
                trained from these weights, at any size: the benchmarks (bench/), whose weights
                are made where the plan runs (bench/make_inputs.py); rpc-compile reads the
                sparse weights in place.

The model: --arch ARCH --size SIZE builds a family's config here (nothing is downloaded):

    test, tiny, small  shrunk shapes with a byte-level vocabulary of 264 tokens: hidden,
                       layers, heads, KV heads, intermediate = 32, 2, 4, 2, 64 (test: the
                       committed test exports); 128, 4, 4, 2, 384 (tiny: examples/qwen3-tiny);
                       256, 6, 8, 4, 768 (small); head_dim hidden / heads
    full               the published model's Hugging Face config: qwen3 Qwen3-1.7B (28 layers,
                       hidden 2048, intermediate 6144, 16 heads, 8 KV heads, head_dim 128,
                       vocabulary 151936, rope_theta 1e6, tied: 1.72 B parameters); qwen3_moe
                       Qwen3-30B-A3B (48 layers, 32 heads, 4 KV heads, 128 experts of 768, top
                       8, every layer routed, untied); gpt_oss gpt-oss-20b (24 layers, hidden
                       2880, 64 heads, 8 KV heads, head_dim 64, 32 experts of 2880, top 4,
                       sliding window 128, YaRN rotary, vocabulary 201088, untied)

or --model-dir HF_DIR reads HF_DIR/config.json (a local Hugging Face model directory: any causal
LM transformers builds with AutoModelForCausalLM.from_config); its weights are not read or
copied, since the graph does not depend on them: train from them with `rp-run --weights
HF_DIR`. The shape flags (--layers ... --sliding-window) then set single fields of that config,
e.g. Qwen3-8B: --arch qwen3 --size full --layers 36 --hidden 4096 --intermediate 12288 --heads
32 --untied; Qwen3-235B-A22B: --arch qwen3_moe --size full --layers 94 --hidden 4096 --heads 64
--moe-intermediate 1536.

Mixtures of experts (--arch qwen3_moe, gpt_oss, mixtral, qwen2_moe, olmoe, or a --model-dir
whose config has experts) use transformers' batched_mm experts
(`config._experts_implementation = "batched_mm"`: each token repeated k times, the chosen
experts' weights gathered per token, bmm, sum: the form rpc's rp-fuse-routed-experts turns
into grouped GEMMs), which exports with static shapes; GPT-OSS uses eager attention, since its
attention sinks exist only there.

The exported graph is the training graph rpc compiles:

    inputs   input_ids  int64 [batch, seq]   token ids
             labels     int64 [batch, seq]   the next token of each position (pre-shifted:
                                             labels[b, t] = token t + 1 of the window), the
                                             contract of rp-run's data loader
             position_ids int64 [batch, seq] with --packed only: each token's position in its
                                             own document, restarting at 0 where a document
                                             begins (transformers' padding-free packing)
    output   loss       float32 []           mean cross-entropy over batch * seq positions;
                                             with --router-aux-loss (mixtures of experts) plus
                                             router_aux_loss_coef x the family's
                                             load_balancing_loss_func of the router logits
                                             (what <Family>ForCausalLM adds to its loss with
                                             output_router_logits=True)

Hugging Face's own loss (`labels=` argument) shifts inside the model and ignores index -100;
we compute the same mean cross-entropy on the base model's logits from pre-shifted labels, so
that the graph needs no slicing of the sequence and every position counts.

--packed: several documents per row (sequence packing). The graph takes `position_ids` and no
attention mask; transformers' masking code then builds the block-diagonal causal mask from the
positions (find_packed_sequence_indices: the document index is the cumulative sum of the
position steps that are not +1), and the rotary embedding reads the same positions. In the
reference batch each row is cut into seeded random documents (at least two per row, lengths
1 to seq / 2), and the label of each document's last token (the next document's first token)
is -100, ignored by the loss, as a packer writes it. Dynamo exporter only: the TorchScript
exporter cannot export torch.diff (aten::diff), which find_packed_sequence_indices calls
(PyTorch's limitation). Not with --rope-tables (the tables hold positions 0..seq-1).

Parameter names are Hugging Face's state-dict names (model.layers.0.self_attn.q_proj.weight,
lm_head.weight, ...), so checkpoints load back into transformers. Buffers (rotary inv_freq,
Gemma's embedding scale) are not parameters: their names are written into the ONNX model's
metadata under "rp.buffers" (comma-separated): the importer makes them constants.

--rope-tables (the default when seq x the rotary dimension > 65536): the rotary embedding
returns precomputed cos/sin tables (RopeTables below), because rpc's importer folds the rotary
Cos/Sin only up to 65536 elements and rejects them beyond.

Placeholder weights: the weights of a --weightless export (zeros) and of a --model-dir export
(a random init from config.json) are not the model's. The ONNX metadata says so
("rp.placeholder_weights": "zeros" or "random"; "rp.checkpoint": the --model-dir directory), and
rpc-compile copies it into the plan, so that rp-run trains such a plan only with --weights
(random placeholders also with --from-scratch). A --seq longer than a --model-dir config's
max_position_embeddings is refused.

Writes into DIR:
    model.onnx                  the graph; weights inline (default) or as external data
    model.weights               --weightless: the parameters' external data, sparse zeros
    config.json                 the model's transformers config (for rp-run --export-hf
                                --hf-config: the exported weights then load with
                                from_pretrained)
    reference.safetensors       the PyTorch reference on one seeded batch (not with
                                --weightless or --no-reference):
                                  input.input_ids, input.labels  (int64, the batch)
                                  input.position_ids             (int64, --packed only)
                                  loss                           (float32, shape [])
                                  grad.<param>                   (float32, every parameter)
                                metadata: arch, exporter, torch, transformers, onnx opset,
                                router_aux_loss_coef ("0" without the aux loss)
and prints one JSON line: the files, their sizes, the parameters and their count, the shape,
the export time.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import transformers

# Byte-level vocabulary: 256 byte tokens, then specials (examples/data/prepare_corpus.py).
BYTE_VOCAB = 256
SPECIALS = ["<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>",
            "<|reserved_0|>", "<|reserved_1|>", "<|reserved_2|>", "<|reserved_3|>"]
VOCAB = BYTE_VOCAB + len(SPECIALS)

SIZES = {
    # hidden, layers, heads, kv heads, intermediate
    "test": (32, 2, 4, 2, 64),     # the committed test exports (test/Frontends/onnx/Inputs/exports)
    "tiny": (128, 4, 4, 2, 384),   # examples/qwen3-tiny
    "small": (256, 6, 8, 4, 768),
}

# rpc's importer folds a constant subgraph while each result has at most this many elements
# (ImportOptions::foldLimit, frontends/onnx/OnnxImporter.h): the rotary Cos/Sin of seq x the
# rotary dimension beyond it are rejected ("supported only on compile-time constant inputs").
FOLD_LIMIT = 65536

# Gemma-2's soft-caps (gemma2), tanh(x / c) * c: at the test size the scores reach about 0.04
# and the logits 0.4, which the published caps (50 and 30) would leave linear to 1e-6; these
# bend them (tanh(0.8) = 0.66), so that a cap dropped or misapplied shows in the gradients.
ATTN_SOFTCAP = 0.05
FINAL_SOFTCAP = 0.5


def preset(arch, size):
    """The config and model class of a shrunk family preset (test, tiny, small)."""
    hidden, layers, heads, kv_heads, inter = SIZES[size]
    common = dict(vocab_size=VOCAB, tie_word_embeddings=False, bos_token_id=BYTE_VOCAB,
                  eos_token_id=BYTE_VOCAB, pad_token_id=BYTE_VOCAB + 1)
    if arch == "qwen3":
        config = transformers.Qwen3Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            max_position_embeddings=1024, rope_theta=10000.0, **common)
        return config, transformers.Qwen3ForCausalLM
    if arch == "llama":
        config = transformers.LlamaConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, rope_theta=10000.0, **common)
        return config, transformers.LlamaForCausalLM
    if arch == "gpt2":
        config = transformers.GPT2Config(
            n_embd=hidden, n_layer=layers, n_head=heads, n_inner=4 * hidden, n_positions=1024,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common)
        return config, transformers.GPT2LMHeadModel
    if arch == "mistral":
        # Sliding window: the family default (4096, wider than any test sequence, so the mask is
        # the causal one) unless --sliding-window narrows it below the sequence (a band mask).
        config = transformers.MistralConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            max_position_embeddings=1024, **common)
        return config, transformers.MistralForCausalLM
    if arch == "phi3":
        # Fused projections: self_attn.qkv_proj and mlp.gate_up_proj, sliced in the graph.
        config = transformers.Phi3Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, original_max_position_embeddings=1024, **common)
        return config, transformers.Phi3ForCausalLM
    if arch == "gemma":
        # Tied embeddings (the family default), GELU-tanh MLP, RMSNorm scaled by (1 + w), the
        # embedding scaled by sqrt(hidden).
        config = transformers.GemmaConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            max_position_embeddings=1024, **dict(common, tie_word_embeddings=True))
        return config, transformers.GemmaForCausalLM
    if arch == "gpt_neox":
        # Parallel residual, rotary on a quarter of each head, LayerNorm with bias, exact GELU,
        # biased projections; the head is embed_out.
        config = transformers.GPTNeoXConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            intermediate_size=inter, max_position_embeddings=1024, **common)
        return config, transformers.GPTNeoXForCausalLM
    if arch == "olmo2":
        # Post-norms (after attention and after the MLP) and RMSNorm on q and k.
        config = transformers.Olmo2Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, **common)
        return config, transformers.Olmo2ForCausalLM
    if arch == "phi":
        # Attention and MLP in parallel off one LayerNorm, rotary on half of each head,
        # GELU-tanh ("gelu_new"), biases everywhere including the head.
        config = transformers.PhiConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, resid_pdrop=0.0, embd_pdrop=0.0, **common)
        return config, transformers.PhiForCausalLM
    if arch == "stablelm":
        # LayerNorm with bias, SwiGLU, rotary on a quarter of each head.
        config = transformers.StableLmConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, **common)
        return config, transformers.StableLmForCausalLM
    if arch == "falcon":
        # Tied embeddings (the family default), multi-query attention (one kv head), attention
        # and MLP in parallel off one LayerNorm, exact GELU, no biases.
        config = transformers.FalconConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            max_position_embeddings=1024, **dict(common, tie_word_embeddings=True))
        return config, transformers.FalconForCausalLM
    if arch == "gptj":
        # The interleaved rotary form (rotate_every_two) on half of each head (rotary_dim),
        # attention and MLP in parallel off one LayerNorm, GELU-tanh, a biased head; its
        # attention exports as eager attention (matmul, / sqrt(D), mask, softmax).
        config = transformers.GPTJConfig(
            n_embd=hidden, n_layer=layers, n_head=heads, rotary_dim=hidden // heads // 2,
            n_inner=inter, n_positions=1024, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            **common)
        return config, transformers.GPTJForCausalLM
    if arch == "cohere":
        # Tied embeddings (the family default), LayerNorm written by hand without bias (mean,
        # variance, rsqrt, in f32), the interleaved rotary form, attention and MLP in parallel
        # off one norm, SwiGLU, the logits times logit_scale.
        config = transformers.CohereConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter, max_position_embeddings=1024,
            logit_scale=0.5, **dict(common, tie_word_embeddings=True))
        return config, transformers.CohereForCausalLM
    if arch == "granite":
        # Llama with multipliers: the embedding times embedding_multiplier, each residual branch
        # times residual_multiplier, attention scores times attention_multiplier (SDPA's
        # scale, not 1/sqrt(D)), the logits divided by logits_scaling.
        config = transformers.GraniteConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter, max_position_embeddings=1024,
            embedding_multiplier=2.0, residual_multiplier=0.5, attention_multiplier=0.25,
            logits_scaling=4.0, **common)
        return config, transformers.GraniteForCausalLM
    if arch == "gemma2":
        # Gemma with soft-capping: attention scores tanh(s / c) * c before the mask
        # (attn_logit_softcapping), the logits likewise (final_logit_softcapping), scores
        # scaled by query_pre_attn_scalar^-0.5 (16: 0.25, not 1/sqrt(8)), sliding and full
        # attention alternating (the family default window 4096, wider than any test sequence:
        # the causal mask), norms before and after each sublayer; tied embeddings (the family
        # default); eager attention (transformers' SDPA path has no soft-cap).
        config = transformers.Gemma2Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            query_pre_attn_scalar=16, attn_logit_softcapping=ATTN_SOFTCAP,
            final_logit_softcapping=FINAL_SOFTCAP, max_position_embeddings=1024,
            **dict(common, tie_word_embeddings=True))
        return config, transformers.Gemma2ForCausalLM
    if arch == "deepseek_v3":
        # Multi-head latent attention: queries through a rank-24 bottleneck (q_lora_rank),
        # keys and values expanded from a rank-12 latent (kv_lora_rank), query/key heads of
        # 8 + 4 (qk_nope_head_dim + the rotary qk_rope_head_dim, rotated in DeepSeek's
        # interleaved layout) against value heads of 6 (no dimension equals the test sequence,
        # 16, so that the tests' search for [S, S] values finds only scores); layer 0 dense
        # (first_k_dense_replace), then routed: sigmoid router scores plus
        # e_score_correction_bias (a seeded perturbation, below) choose the best 2 of 4 groups
        # of 2 experts (a group's score: its two best), then the top-2 experts of those,
        # renormalised and scaled by routed_scaling_factor, one shared expert.
        config = transformers.DeepseekV3Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=heads, intermediate_size=inter, q_lora_rank=hidden * 3 // 4,
            kv_lora_rank=hidden * 3 // 8, qk_nope_head_dim=hidden // heads,
            qk_rope_head_dim=hidden // heads // 2, v_head_dim=hidden * 3 // heads // 4,
            moe_intermediate_size=hidden // 2, n_routed_experts=8, num_experts_per_tok=2,
            n_group=4, topk_group=2, n_shared_experts=1, first_k_dense_replace=1,
            routed_scaling_factor=2.5, norm_topk_prob=True, max_position_embeddings=1024,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **common)
        return config, transformers.DeepseekV3ForCausalLM
    if arch == "qwen3_moe":
        # Mixture of experts: layer 0 dense (mlp_only_layers), then every second layer sparse
        # (decoder_sparse_step 2: layers 1 and 3 route, layer 2 is dense), 4 experts of
        # moe_intermediate_size hidden // 2 (the dense MLP's is `inter`), top-2 with the chosen
        # probabilities renormalised (norm_topk_prob).
        config = transformers.Qwen3MoeConfig(
            hidden_size=hidden, num_hidden_layers=max(layers, 4), num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            moe_intermediate_size=hidden // 2, num_experts=4, num_experts_per_tok=2,
            norm_topk_prob=True, decoder_sparse_step=2, mlp_only_layers=[0],
            max_position_embeddings=1024, rope_theta=10000.0, **common)
        return config, transformers.Qwen3MoeForCausalLM
    if arch == "gpt_oss":
        # Every layer routed (4 experts, top-2, router bias, softmax over the chosen logits),
        # clamped SwiGLU (swiglu_limit), attention sinks, biased attention, sliding and full
        # attention alternating (sliding window 8: narrower than the test sequence).
        config = transformers.GptOssConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=hidden,
            num_local_experts=4, num_experts_per_tok=2, sliding_window=8,
            layer_types=["sliding_attention", "full_attention"] * (layers // 2),
            max_position_embeddings=1024,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **common)
        return config, transformers.GptOssForCausalLM
    if arch == "mixtral":
        # Every layer routed: 8-way softmax router, top-2 renormalised, SwiGLU experts of the
        # dense size, no biases, no shared expert.
        config = transformers.MixtralConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
            router_jitter_noise=0.0, max_position_embeddings=1024, rope_theta=10000.0, **common)
        return config, transformers.MixtralForCausalLM
    if arch == "qwen2_moe":
        # Routed experts (top-2, probabilities not renormalised) plus a shared expert scaled by
        # its own sigmoid gate; biased q/k/v projections.
        config = transformers.Qwen2MoeConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter, moe_intermediate_size=hidden // 2,
            shared_expert_intermediate_size=hidden, num_experts=4, num_experts_per_tok=2,
            norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
            use_sliding_window=False, max_position_embeddings=1024, rope_theta=10000.0, **common)
        return config, transformers.Qwen2MoeForCausalLM
    if arch == "olmoe":
        # Every layer routed (top-2 of 4, not renormalised), RMSNorm on the whole q and k
        # projections (not per head).
        config = transformers.OlmoeConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=heads, intermediate_size=hidden // 2, num_experts=4,
            num_experts_per_tok=2, norm_topk_prob=False, max_position_embeddings=1024,
            rope_theta=10000.0, **common)
        return config, transformers.OlmoeForCausalLM
    raise SystemExit(f"export: unknown --arch {arch}")


def preset_full(arch, seq):
    """The config and model class of a published model (--size full); max_position_embeddings
    grows to --seq beyond the published one."""
    if arch == "qwen3":
        # Qwen/Qwen3-1.7B's config.json.
        config = transformers.Qwen3Config(
            vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
            num_attention_heads=16, num_key_value_heads=8, head_dim=128,
            max_position_embeddings=max(40960, seq), rope_theta=1000000.0, rms_norm_eps=1e-6,
            attention_bias=False, tie_word_embeddings=True, bos_token_id=151643,
            eos_token_id=151645, use_cache=False)
        return config, transformers.Qwen3ForCausalLM
    if arch == "qwen3_moe":
        # Qwen/Qwen3-30B-A3B's config.json: every layer routed, top-k renormalised.
        config = transformers.Qwen3MoeConfig(
            vocab_size=151936, hidden_size=2048, intermediate_size=6144,
            moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
            num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
            max_position_embeddings=max(40960, seq), rope_theta=1000000.0, rms_norm_eps=1e-6,
            attention_bias=False, tie_word_embeddings=False, use_cache=False)
        return config, transformers.Qwen3MoeForCausalLM
    if arch == "gpt_oss":
        # openai/gpt-oss-20b's config.json: every layer routed (router bias, softmax over the
        # chosen logits, clamped SwiGLU, expert biases; the experts' size is intermediate_size),
        # attention sinks, biased attention, sliding (window 128) and full attention
        # alternating, YaRN rotary.
        config = transformers.GptOssConfig(
            vocab_size=201088, hidden_size=2880, intermediate_size=2880, num_local_experts=32,
            num_experts_per_tok=4, num_hidden_layers=24, num_attention_heads=64,
            num_key_value_heads=8, head_dim=64, sliding_window=128,
            max_position_embeddings=max(131072, seq), rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0,
                             "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                             "original_max_position_embeddings": 4096},
            tie_word_embeddings=False, use_cache=False)
        return config, transformers.GptOssForCausalLM
    raise SystemExit(f"export: --size full: no published config here for --arch {arch} "
                     f"(there are for {', '.join(FULL_ARCHS)}); use --model-dir with the "
                     "model's config.json, or --size test|tiny|small")


ARCHS = ["qwen3", "llama", "gpt2", "mistral", "phi3", "gemma", "gpt_neox", "olmo2", "phi",
         "stablelm", "falcon", "gptj", "cohere", "granite", "gemma2", "deepseek_v3", "qwen3_moe", "gpt_oss", "mixtral", "qwen2_moe", "olmoe"]
FULL_ARCHS = ["qwen3", "qwen3_moe", "gpt_oss"]

# The shape flags and the config fields they set (the first the family's config has; GPT-2's
# and Falcon's own names included). --intermediate is the dense MLP's size, or the experts'
# where a family's experts use intermediate_size (Mixtral, OLMoE, GPT-OSS); --moe-intermediate
# is the experts' size where it is a field of its own (Qwen3-MoE, Qwen2-MoE).
SHAPE_FIELDS = {
    "layers": ("num_hidden_layers", "n_layer"),
    "hidden": ("hidden_size", "n_embd"),
    "heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "head_dim": ("head_dim",),
    "intermediate": ("intermediate_size", "n_inner", "ffn_hidden_size"),
    "vocab": ("vocab_size",),
    "experts": ("num_experts", "num_local_experts", "n_routed_experts"),
    "top_k": ("num_experts_per_tok",),
    "moe_intermediate": ("moe_intermediate_size",),
    "sliding_window": ("sliding_window",),
}


def config_field(config, flag):
    """The name of the config field a shape flag sets, or None."""
    fields = config.to_dict()
    for name in SHAPE_FIELDS[flag]:
        name = config.attribute_map.get(name, name)
        if name in fields:
            return name
    return None


def is_moe(config):
    return any(getattr(config, k, None)
               for k in ("num_experts", "num_local_experts", "n_routed_experts"))


def apply_shape(config, args, derive_head_dim):
    """The config with the shape flags given applied (each sets one field; the config is
    rebuilt, so that fields derived from them are derived again). derive_head_dim: the shrunk
    presets, whose head_dim is hidden / heads, keep it so when --hidden or --heads change."""
    given = {flag: getattr(args, flag) for flag in SHAPE_FIELDS
             if getattr(args, flag) is not None}
    if args.sliding_window is not None and (
            config_field(config, "sliding_window") is None
            or getattr(config, "use_sliding_window", True) is False):
        raise SystemExit(f"export: --sliding-window: a {config.model_type} config has no sliding "
                         "window (mistral, mixtral, gpt_oss have)")
    if not given:
        return config
    if derive_head_dim and "head_dim" not in given and ("hidden" in given or "heads" in given) \
            and config_field(config, "head_dim"):
        given["head_dim"] = (given.get("hidden") or config.hidden_size) \
            // (given.get("heads") or config.num_attention_heads)
    fields = config.to_dict()
    for flag, value in given.items():
        name = config_field(config, flag)
        if name is None:
            raise SystemExit(f"export: --{flag.replace('_', '-')}: a {config.model_type} config "
                             f"has no {' or '.join(SHAPE_FIELDS[flag])}")
        fields[name] = value
    if "layers" in given and "layer_types" in fields:
        # One attention type per layer: derived again from the new layer count.
        del fields["layer_types"]
    config = type(config).from_dict(fields)
    text = config.get_text_config()
    if not getattr(text, "head_dim", None) and text.hidden_size % text.num_attention_heads:
        raise SystemExit(f"export: a {config.model_type} config needs --hidden a multiple of "
                         "--heads")
    return config


def build_config(args):
    """The model's config and class (None: AutoModelForCausalLM) from --arch/--size or
    --model-dir, with the shape flags applied."""
    if args.model_dir:
        config, cls = transformers.AutoConfig.from_pretrained(args.model_dir), None
    elif args.size == "full":
        config, cls = preset_full(args.arch, args.seq)
    else:
        config, cls = preset(args.arch, args.size)
    config = apply_shape(config, args, derive_head_dim=args.size in SIZES)
    limit = getattr(config.get_text_config(), "max_position_embeddings", None)
    if args.model_dir and limit and args.seq > limit:
        raise SystemExit(f"export: --seq {args.seq} is longer than the model's "
                         f"max_position_embeddings {limit} ({args.model_dir}/config.json): "
                         "positions beyond it were never trained")
    if args.untied:
        config.get_text_config().tie_word_embeddings = False
    if args.no_final_logit_softcap:
        if getattr(config.get_text_config(), "final_logit_softcapping", None) is None:
            raise SystemExit(f"export: --no-final-logit-softcap: a {config.model_type} config "
                             "has no final_logit_softcapping (gemma2 has)")
        config.get_text_config().final_logit_softcapping = None
    return config, cls


def build_model(config, cls, perturb):
    """The causal LM of config (class cls; None: AutoModelForCausalLM), on the current default
    device. perturb (the --arch presets' random weights): Qwen3-MoE's and GPT-OSS's weights and
    DeepSeek-V3's router bias get a seeded perturbation (below)."""
    if is_moe(config):
        # transformers' static batched_mm experts (module docstring).
        config._experts_implementation = "batched_mm"
    lm = cls(config) if cls else transformers.AutoModelForCausalLM.from_config(config)
    if perturb and config.model_type in ("qwen3_moe", "gpt_oss"):
        # Random init leaves some MoE tensors (GPT-OSS's sinks, biases, router) at zero or tied
        # values; a small seeded perturbation makes every routing decision and gradient distinct.
        with torch.no_grad():
            for name, param in lm.named_parameters():
                if any(k in name for k in ("sinks", "bias", "router", "mlp.gate.")):
                    param.add_(0.5 * torch.randn_like(param))
    if perturb and config.model_type == "deepseek_v3":
        # DeepSeek-V3's e_score_correction_bias (a buffer, zero at init) shifts which experts
        # are chosen but not their weights: seeded values of the sigmoid scores' size.
        with torch.no_grad():
            for name, buf in lm.named_buffers():
                if name.endswith("e_score_correction_bias"):
                    buf.copy_(0.02 * torch.randn_like(buf))
    return lm


def build(arch, size):
    """The model of a shrunk family preset with seeded random weights (the committed test
    exports' models: export_sft_reference.py, test/Tools/Inputs/make_hf_qwen3.py)."""
    config, cls = preset(arch, size)
    return build_model(config, cls, perturb=True)


def hand_layer_norm(module, x):
    """torch.nn.LayerNorm's forward written out (--hand-layer-norm): x - mean is computed twice,
    as PyTorch code that writes the norm by hand does."""
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    out = (x - mean) / torch.sqrt(var + module.eps)
    if module.weight is not None:
        out = out * module.weight
    if module.bias is not None:
        out = out + module.bias
    return out


class TrainingGraph(torch.nn.Module):
    """forward(input_ids, labels[, position_ids]) -> mean cross-entropy over the labels that
    are not -100 of the logits, scaled and soft-capped as the family's causal LM does it
    (Granite's logits_scaling, Cohere's logit_scale, Gemma-2's final_logit_softcapping) (+ router_aux_loss_coef x the router load-balancing
    loss with router_aux_loss); the causal LM's children are adopted so that parameter names
    stay Hugging Face's."""

    def __init__(self, lm, explicit_mask=False, router_aux_loss=False):
        super().__init__()
        self.base_name = lm.base_model_prefix  # "model", "transformer" (GPT-2), "gpt_neox"
        self.explicit_mask = explicit_mask
        self.aux = None
        if router_aux_loss:
            # The mixture's own load_balancing_loss_func (transformers' Switch-Transformer
            # form, as <Family>ForCausalLM.forward adds it when output_router_logits is set),
            # with the family's expert count, top-k and coefficient.
            module = sys.modules[type(lm).__module__]
            if not hasattr(module, "load_balancing_loss_func") or not hasattr(lm, "num_experts"):
                raise SystemExit(f"export: --router-aux-loss: {type(lm).__name__} is not a "
                                 "mixture of experts with a router load-balancing loss")
            self.aux = (module.load_balancing_loss_func, lm.num_experts,
                        lm.num_experts_per_tok, float(lm.config.router_aux_loss_coef))
        # The family's logit scale, as <Family>ForCausalLM.forward applies it to the head's
        # output: Granite divides by logits_scaling, Cohere multiplies by logit_scale.
        self.logit_divisor = float(getattr(lm.config, "logits_scaling", 1.0) or 1.0)
        self.logit_factor = float(getattr(lm.config, "logit_scale", 1.0) or 1.0)
        # Gemma-2's final_logit_softcapping: tanh(logits / c) * c, after the scales.
        self.logit_softcap = getattr(lm.config, "final_logit_softcapping", None)
        head = lm.get_output_embeddings()
        # "lm_head", or "embed_out" (GPT-NeoX); a tied head shares the embedding's weight.
        self.head_name = next(name for name, child in lm.named_children() if child is head)
        for name, child in lm.named_children():
            self.add_module(name, child)

    def forward(self, input_ids, labels, position_ids=None):
        # The TorchScript exporter cannot trace transformers' packed-sequence detection
        # (aten::diff), which runs when no attention mask is given: give it all ones.
        mask = torch.ones_like(input_ids) if self.explicit_mask else None
        extra = {"output_router_logits": True} if self.aux else {}
        if position_ids is not None:
            # Packed rows: no attention mask, so that transformers builds the block-diagonal
            # causal mask from the positions (find_packed_sequence_indices).
            extra["position_ids"] = position_ids
        hidden = getattr(self, self.base_name)(input_ids=input_ids, attention_mask=mask,
                                               use_cache=False, **extra)
        logits = getattr(self, self.head_name)(hidden.last_hidden_state)
        if self.logit_divisor != 1.0:
            logits = logits / self.logit_divisor
        if self.logit_factor != 1.0:
            logits = logits * self.logit_factor
        if self.logit_softcap is not None:
            logits = torch.tanh(logits / self.logit_softcap) * self.logit_softcap
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
        if self.aux:
            balance, experts, top_k, coef = self.aux
            loss = loss + coef * balance(hidden.router_logits, experts, top_k, mask)
        return loss


class RopeTables(torch.nn.Module):
    """The rotary embedding as two precomputed tables (cos, sin: [batch, seq, dim], f32), the
    values the family's rotary embedding computes for positions 0..seq-1 (its own forward, on
    the CPU). rpc's importer folds the rotary subgraph (Cos/Sin of position x inv_freq) only
    while a result has at most FOLD_LIMIT elements, i.e. seq x dim <= 65536 (seq <= 512 at
    dim 128); listed in rp.buffers, the tables are constants whatever their size. With
    meta=True the buffers are meta placeholders (the export traces shapes only) and `values`
    holds what the ONNX initializers get."""

    def __init__(self, rotary, batch, seq, meta):
        super().__init__()
        positions = torch.arange(seq, dtype=torch.int64)[None, :].expand(batch, seq)
        x = torch.zeros(1, dtype=torch.float32)
        cos, sin = rotary(x, positions)
        self.values = {"cos_table": cos.float().contiguous(), "sin_table": sin.float().contiguous()}
        for name, value in self.values.items():
            self.register_buffer(name, torch.empty(value.shape, device="meta") if meta else value,
                                 persistent=False)

    def forward(self, x, position_ids):
        return self.cos_table.to(dtype=x.dtype), self.sin_table.to(dtype=x.dtype)


def materialize_buffers(lm):
    """--weightless: real values of the meta model's buffers (rotary inv_freq, Gemma's
    embedding scale), {qualified name: CPU tensor}. Each module that owns buffers gets them on
    the CPU, recomputed by the family's own _init_weights (as from_pretrained does for the
    non-persistent buffers of a model loaded on the meta device); its parameters stay on the
    meta device. The buffers stay on the CPU until meta_buffers()."""
    values = {}
    for prefix, module in lm.named_modules():
        own = [(n, b) for n, b in module._buffers.items() if b is not None]
        if not own:
            continue
        for name, buf in own:
            module._buffers[name] = torch.empty_like(buf, device="cpu")
        lm._init_weights(module)
        for name, _ in own:
            values[f"{prefix}.{name}" if prefix else name] = module._buffers[name]
    return values


def meta_buffers(module):
    """Every buffer of module back on the meta device (the export traces meta tensors only)."""
    for sub in module.modules():
        for name, buf in list(sub._buffers.items()):
            if buf is not None and buf.device.type != "meta":
                sub._buffers[name] = torch.empty_like(buf, device="meta")


def rotary_of(graph):
    """The base model's rotary embedding module, or None (GPT-2: learned positions)."""
    rotary = getattr(getattr(graph, graph.base_name), "rotary_emb", None)
    return rotary if rotary is not None and hasattr(rotary, "inv_freq") else None


def initializer_names(graph):
    """Each parameter's names (a tied parameter has several: named_parameters(remove_duplicate=
    False)); the exporters name its initializer by one of them. The dynamo exporter names a
    tied embedding after the LM head (lm_head.weight), TorchScript after the embedding; rpc's
    importer names both after the embedding, as Hugging Face checkpoints do."""
    names = {}
    for name, param in graph.named_parameters(remove_duplicate=False):
        first = next(n for n, p in graph.named_parameters() if p is param)
        names.setdefault(first, set()).add(name)
    return names


def strip_node_metadata(model):
    """The dynamo exporter annotates every node with its Python stack trace and FX node (about
    half of a small model's file): drop those; node names and the namespace stay."""
    for node in model.graph.node:
        keep = [(p.key, p.value) for p in node.metadata_props if p.key == "namespace"]
        del node.metadata_props[:]
        for key, value in keep:
            node.metadata_props.add(key=key, value=value)


def set_metadata(model, key, value):
    entry = next((p for p in model.metadata_props if p.key == key), None) \
        or model.metadata_props.add()
    entry.key, entry.value = key, value


def set_placeholder_metadata(model, args):
    """The weights are placeholders, not the model's, when they are zeros (--weightless) or a
    random init from a checkpoint's config (--model-dir): rp.placeholder_weights says which
    and rp.checkpoint names the checkpoint, so that rp-run refuses to train such a plan
    without --weights (rpc-compile copies both into the plan)."""
    if args.weightless:
        set_metadata(model, "rp.placeholder_weights", "zeros")
    elif args.model_dir:
        set_metadata(model, "rp.placeholder_weights", "random")
    if args.model_dir:
        set_metadata(model, "rp.checkpoint", os.path.abspath(args.model_dir))


def set_buffers_metadata(model, names):
    if names:
        entry = next((p for p in model.metadata_props if p.key == "rp.buffers"), None) \
            or model.metadata_props.add()
        entry.key, entry.value = "rp.buffers", ",".join(names)


def positive_dim_repeat_interleave(repeat_interleave):
    """torch.repeat_interleave with a negative dim made positive first (the same result). The
    TorchScript exporter's repeat_interleave rewrites its dim constant in place to the positive
    axis, and TorchScript pools equal constants: every other -1 of the graph (Cohere's
    view(..., -1, head_dim) after its rotary table's repeat_interleave(freqs, 2, dim=-1)) then
    exports as that axis, and PyTorch's ONNX shape inference fails on an internal assertion."""
    def wrapped(input, repeats, dim=None, **kwargs):
        if dim is not None and dim < 0:
            dim += input.dim()
        return repeat_interleave(input, repeats, dim, **kwargs)
    return wrapped


def export_onnx(graph, inputs, path, args):
    """Traces graph on inputs (input_ids, labels[, position_ids]) into path: weights inline,
    or (--weightless) no initializers."""
    names = ["input_ids", "labels", "position_ids"][:len(inputs)]
    kwargs = dict(input_names=names, output_names=["loss"])
    if args.opset is not None:
        kwargs["opset_version"] = args.opset
    if args.exporter == "dynamo":
        if args.dynamic:
            b, s = torch.export.Dim("batch"), torch.export.Dim("seq", max=1024)
            kwargs["dynamic_shapes"] = {name: {0: b, 1: s} for name in names}
        # optimize=False: the optimizer folds Transpose(weight) into new initializers
        # ("val_107"), which would hide the parameters' names.
        program = torch.onnx.export(graph, inputs, dynamo=True, optimize=False,
                                    external_data=args.weightless, **kwargs)
        if args.weightless:
            program.save(path, include_initializers=False, keep_initializers_as_inputs=False)
        else:
            program.save(path, external_data=False)
    else:
        if args.dynamic:
            axes = {0: "batch", 1: "seq"}
            kwargs["dynamic_axes"] = {"input_ids": axes, "labels": axes}
        original = torch.repeat_interleave
        torch.repeat_interleave = positive_dim_repeat_interleave(original)
        try:
            torch.onnx.export(graph, inputs, path, dynamo=False,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, **kwargs)
        finally:
            torch.repeat_interleave = original


def add_external_weights(model, graph, buffer_values, out):
    """--weightless: one initializer per parameter as external data in OUT/model.weights (a
    sparse file of zeros), under the name the graph uses (a tied LM head and embedding are one
    tensor: the exporter names it by one of its two names), and the buffers the graph uses
    inline with their values. Returns (params {name: meta tensor}, buffer names, weights path,
    its size)."""
    import onnx  # after the export: the exporter imports its own pinned onnx
    from onnx import numpy_helper

    used = set()
    for node in model.graph.node:
        used.update(node.input)
    names_of = {}
    for name, param in graph.named_parameters(remove_duplicate=False):
        names_of.setdefault(id(param), (param, []))[1].append(name)
    params = {}
    for param, names in names_of.values():
        params[next((n for n in names if n in used), names[0])] = param
    missing = sorted(n for n in params if n not in used)
    if missing:
        raise SystemExit(f"export: parameters the graph does not use by name: {missing[:5]}")
    del model.graph.initializer[:]
    weights_name = "model.weights"
    offset = 0
    for name, param in params.items():
        t = model.graph.initializer.add()
        t.name = name
        t.dims.extend(param.shape)
        t.data_type = onnx.TensorProto.FLOAT
        t.data_location = onnx.TensorProto.EXTERNAL
        nbytes = param.numel() * 4
        for key, value in (("location", weights_name), ("offset", str(offset)),
                           ("length", str(nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        offset += (nbytes + 63) // 64 * 64  # 64-byte aligned, as onnx's external data writer
    buffer_names = []
    for name, _ in graph.named_buffers():
        if name not in used:
            continue
        if name not in buffer_values:
            raise SystemExit(f"export: --weightless: buffer {name} has no value (its module's "
                             "_init_weights does not compute it); export it with weights")
        model.graph.initializer.append(numpy_helper.from_array(buffer_values[name].numpy(), name))
        buffer_names.append(name)
    weights_path = os.path.join(out, weights_name)
    with open(weights_path, "wb") as f:
        f.truncate(offset)  # sparse: zeros without disk blocks
    return params, buffer_names, weights_path, offset


def check_inline_weights(model, graph):
    """Default mode: every parameter has an initializer of one of its names; returns
    (params {name: tensor}, the buffer initializers)."""
    params = dict(graph.named_parameters())
    buffers = [n for n, _ in graph.named_buffers()]
    inits = {i.name for i in model.graph.initializer}
    names = initializer_names(graph)
    missing = sorted(n for n in params if not names[n] & inits)
    if missing:
        raise SystemExit(f"export: parameters without an initializer of the same name: {missing}")
    return params, sorted(n for n in inits if n in buffers)


def write_reference(graph, lm, batch, params, buffer_inits, opset, args):
    """reference.safetensors: the batch (input_ids, labels[, position_ids]), PyTorch's loss
    and every parameter's gradient."""
    from safetensors.torch import save_file

    loss = graph(*batch)
    loss.backward()
    sidecar = {"input." + name: value
               for name, value in zip(("input_ids", "labels", "position_ids"), batch)}
    sidecar["loss"] = loss.detach().reshape(())
    for name, param in params.items():
        sidecar["grad." + name] = param.grad.detach().contiguous()
    metadata = {"arch": args.arch or lm.config.model_type, "exporter": args.exporter,
                "torch": torch.__version__,
                "transformers": transformers.__version__, "opset": str(opset),
                "size": "config.json" if args.model_dir else args.size,
                "batch": str(args.batch), "seq": str(args.seq),
                "dynamic": str(args.dynamic).lower(), "seed": str(args.seed),
                "packed": str(args.packed).lower(),
                "buffers": ",".join(buffer_inits),
                "router_aux_loss_coef": (str(graph.aux[3]) if graph.aux else "0")}
    path = os.path.join(args.out, "reference.safetensors")
    save_file(sidecar, path, metadata=metadata)
    return path, loss.item()


def packed_positions(batch, seq, seed, meta):
    """--packed: position_ids [batch, seq] int64 of rows cut into documents, each position
    restarting at 0 where a document begins. Each row holds at least two documents of seeded
    random lengths 1 .. max(1, seq // 2) (the last one takes the rest). meta: shapes only."""
    if meta:
        return torch.zeros((batch, seq), dtype=torch.int64, device="meta")
    gen = torch.Generator().manual_seed(seed + 2)
    rows = []
    for _ in range(batch):
        lengths, left = [], seq
        while left > 0:
            n = min(left, int(torch.randint(1, max(1, seq // 2) + 1, (1,), generator=gen)))
            lengths.append(n)
            left -= n
        rows.append(torch.cat([torch.arange(n, dtype=torch.int64) for n in lengths]))
    return torch.stack(rows)


def shape_summary(config):
    """The shape fields of the summary line (bench/export_qwen3_1p7b.sh's model.json)."""
    text = config.get_text_config()
    shape = {flag: getattr(text, config_field(text, flag)) if config_field(text, flag) else None
             for flag in ("layers", "hidden", "intermediate", "heads", "kv_heads", "head_dim",
                          "vocab", "experts", "top_k", "moe_intermediate")}
    if not shape["head_dim"] and shape["hidden"] and shape["heads"]:
        shape["head_dim"] = shape["hidden"] // shape["heads"]
    return shape


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Modes, sizes, outputs: the module docstring (examples/export/export_model.py).")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--arch", choices=ARCHS, help="a family preset, shaped by --size")
    source.add_argument("--model-dir", metavar="HF_DIR",
                        help="a local Hugging Face model directory: its config.json")
    p.add_argument("--size", choices=list(SIZES) + ["full"], default=None,
                   help="with --arch: test, tiny, small (shrunk, 264-token vocabulary) or full "
                        f"(the published model: {', '.join(FULL_ARCHS)}); default tiny")
    p.add_argument("--exporter", required=True, choices=["dynamo", "torchscript"],
                   help="torch.onnx's exporter (required)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory, created (required)")
    mode = p.add_argument_group("mode")
    mode.add_argument("--weightless", action="store_true",
                      help="build on PyTorch's meta device: no weights are made; parameters as "
                           "sparse external data (model.weights), no reference; needs "
                           "--exporter dynamo (default: random f32 weights, inline)")
    mode.add_argument("--reference", action=argparse.BooleanOptionalAction, default=None,
                      help="write reference.safetensors, PyTorch's loss and gradients on one "
                           "seeded batch (default: on, off with --weightless, which cannot "
                           "write one)")
    p.add_argument("--batch", type=int, default=4, metavar="N",
                   help="micro-batch size, sequences (default 4)")
    p.add_argument("--seq", type=int, default=64, metavar="N",
                   help="sequence length, tokens (default 64)")
    p.add_argument("--dynamic", action="store_true",
                   help="symbolic batch and seq dims (bind them with rpc-compile --dim; seq at "
                        "most 1024); default static")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="random weights and the reference's batch (default 0; not with "
                        "--weightless)")
    p.add_argument("--opset", type=int, default=None, metavar="N",
                   help="ONNX opset (default: the exporter's, 20 for torch 2.15)")
    tie = p.add_mutually_exclusive_group()
    tie.add_argument("--tied", action="store_true",
                     help="tie the LM head to the input embedding (tie_word_embeddings=True), as "
                          "the small Qwen3 and Llama 3.2 models are (default: the config's own)")
    tie.add_argument("--untied", action="store_true",
                     help="give the LM head its own weight (tie_word_embeddings=False; default: "
                          "the config's own)")
    shape = p.add_argument_group(
        "shape", "each sets one field of the --arch/--size preset's or --model-dir's config "
                 "(default: the config's value)")
    for flag, what in (("layers", "decoder layers"), ("hidden", "hidden size"),
                       ("heads", "attention (query) heads"), ("kv-heads", "key/value heads"),
                       ("head-dim", "dimension of a head (test/tiny/small: hidden / heads)"),
                       ("intermediate", "MLP intermediate size (Mixtral, OLMoE, GPT-OSS: the "
                                        "experts')"),
                       ("vocab", "vocabulary size, tokens"),
                       ("experts", "routed experts per layer (mixtures of experts)"),
                       ("top-k", "experts per token (mixtures of experts)"),
                       ("moe-intermediate", "an expert's intermediate size (Qwen3-MoE, "
                                            "Qwen2-MoE)"),
                       ("sliding-window", "the sliding-window layers' window, tokens (Mistral, "
                                          "Mixtral, GPT-OSS); below --seq the mask is a band")):
        fields = "/".join(SHAPE_FIELDS[flag.replace("-", "_")][:2])
        shape.add_argument("--" + flag, type=int, default=None, metavar="N",
                           help=f"{what} ({fields})")
    p.add_argument("--rope-tables", action=argparse.BooleanOptionalAction, default=None,
                   help="export the rotary cos/sin as precomputed constant tables (default: on "
                        f"when seq x the rotary dimension > {FOLD_LIMIT}, the importer's fold "
                        "limit, without --dynamic)")
    p.add_argument("--hand-layer-norm", action="store_true",
                   help="every torch.nn.LayerNorm runs a hand-written chain (mean, subtract, "
                        "pow 2, mean, + eps, sqrt, divide, * weight, + bias), as custom modules "
                        "write it: no LayerNormalization node is exported (default off)")
    p.add_argument("--no-final-logit-softcap", action="store_true",
                   help="Gemma-2: drop the soft-cap of the logits (final_logit_softcapping="
                        "None), keeping the attention's; default: the config's")
    p.add_argument("--router-aux-loss", action="store_true",
                   help="mixtures of experts: add router_aux_loss_coef x the router "
                        "load-balancing loss to the exported loss (output_router_logits=True); "
                        "default off; not with --weightless")
    p.add_argument("--router-aux-loss-coef", type=float, default=None, metavar="C",
                   help="with --router-aux-loss: the coefficient (default: the config's "
                        "router_aux_loss_coef, 0.001 for Qwen3-MoE and GPT-OSS)")
    p.add_argument("--packed", action="store_true",
                   help="several documents per row: a position_ids input restarting at 0 at "
                        "each document and no attention mask (the block-diagonal causal mask); "
                        "--exporter dynamo only (TorchScript cannot export torch.diff)")
    args = p.parse_args(argv)

    def bad(message):
        p.error(message)

    if args.model_dir and args.size is not None:
        bad("--size shapes an --arch preset; --model-dir takes its config.json's shape (change "
            "it with --layers, --hidden, ...)")
    if args.arch and args.size is None:
        args.size = "tiny"
    if args.weightless:
        if args.reference:
            bad("--reference needs real weights: the reference is PyTorch's forward and backward "
                "pass of the seeded model, and --weightless builds it on the meta device, which "
                "computes nothing; drop --weightless to get one")
        if args.seed is not None:
            bad("--seed seeds the random weights and the reference's batch; --weightless has "
                "neither")
        if args.router_aux_loss:
            bad("--router-aux-loss needs real weights: transformers' load_balancing_loss_func "
                "counts tokens per expert with an int32 histc off the CPU (the meta device "
                "included), which the ONNX exporter cannot convert; drop --weightless")
        if args.exporter != "dynamo":
            bad("--weightless needs --exporter dynamo: the TorchScript exporter copies tensor "
                "data into the graph, and meta-device tensors have none")
    args.reference = not args.weightless if args.reference is None else args.reference
    args.seed = 0 if args.seed is None else args.seed
    if args.router_aux_loss_coef is not None and not args.router_aux_loss:
        bad("--router-aux-loss-coef needs --router-aux-loss")
    if args.packed:
        if args.exporter != "dynamo":
            bad("--packed needs --exporter dynamo: transformers finds the documents with "
                "torch.diff, which the TorchScript exporter cannot export (aten::diff)")
        if args.rope_tables:
            bad("--packed: the rotary embedding reads the run-time positions; --rope-tables "
                "holds positions 0..seq-1")
        if args.seq < 2:
            bad("--packed needs --seq of at least 2 (two documents per row)")
        args.rope_tables = False
    if args.rope_tables and args.dynamic:
        bad("--rope-tables are [batch, seq] constants: not with --dynamic")
    if args.dynamic and args.seq > 1024:
        bad("--dynamic: the symbolic seq is at most 1024 (--seq is the traced example)")
    for flag in ("batch", "seq"):
        if getattr(args, flag) < 1:
            bad(f"--{flag} must be at least 1")
    for flag in SHAPE_FIELDS:
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            bad(f"--{flag.replace('_', '-')} must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    t0 = time.time()
    config, cls = build_config(args)
    if args.weightless:
        with torch.device("meta"):
            lm = build_model(config, cls, perturb=False).float()
        buffer_values = materialize_buffers(lm)
    else:
        torch.manual_seed(args.seed)
        lm = build_model(config, cls, perturb=args.arch is not None).float()
        buffer_values = None
    if args.router_aux_loss:
        lm.config.output_router_logits = True
        if args.router_aux_loss_coef is not None:
            lm.config.router_aux_loss_coef = args.router_aux_loss_coef
    if args.tied:
        lm.config.get_text_config().tie_word_embeddings = True
        lm.tie_weights()
        if lm.get_output_embeddings().weight is not lm.get_input_embeddings().weight:
            raise SystemExit("export: --tied: the LM head could not be tied to the embedding")
    tied = lm.get_output_embeddings().weight is lm.get_input_embeddings().weight
    if args.hand_layer_norm:
        norms = [m for m in lm.modules() if isinstance(m, torch.nn.LayerNorm)]
        if not norms:
            raise SystemExit(f"export: --hand-layer-norm: {type(lm).__name__} has no "
                             "torch.nn.LayerNorm")
        for module in norms:
            module.forward = hand_layer_norm.__get__(module)
    # GPT-OSS's attention sinks exist only in its eager attention (no SDPA support: transformers'
    # SDPA path would drop the sinks). GPT-J's attention is eager whatever is asked, and under
    # "sdpa" it would receive SDPA's boolean mask and add it to the scores as 1.0 and 0.0 (no
    # causal masking at all).
    # Gemma-2's soft-capping of the attention scores exists only in its eager attention.
    eager = lm.config.model_type in ("gpt_oss", "gptj", "gemma2")
    lm.config._attn_implementation = "eager" if eager else "sdpa"
    graph = TrainingGraph(lm, explicit_mask=args.exporter == "torchscript",
                          router_aux_loss=args.router_aux_loss).train()

    rotary = rotary_of(graph)
    if args.rope_tables and rotary is None:
        raise SystemExit(f"export: --rope-tables: {type(lm).__name__} has no rotary embedding "
                         f"({graph.base_name}.rotary_emb)")
    if args.rope_tables is None:
        dim = 2 * rotary.inv_freq.numel() if rotary is not None else 0
        args.rope_tables = not args.dynamic and args.seq * dim > FOLD_LIMIT
    if args.rope_tables:
        # The tables from the rotary embedding's own forward, on the CPU (--weightless: with
        # the buffers materialize_buffers computed).
        tables = RopeTables(rotary, args.batch, args.seq, meta=args.weightless)
        setattr(getattr(graph, graph.base_name), "rotary_emb", tables)
        if args.weightless:
            prefix = graph.base_name + ".rotary_emb."
            buffer_values = {k: v for k, v in buffer_values.items() if not k.startswith(prefix)}
            buffer_values.update({prefix + k: v for k, v in tables.values.items()})
    if args.weightless:
        meta_buffers(graph)
        input_ids = torch.zeros((args.batch, args.seq), dtype=torch.int64, device="meta")
        labels = torch.zeros((args.batch, args.seq), dtype=torch.int64, device="meta")
    else:
        gen = torch.Generator().manual_seed(args.seed + 1)
        vocab = min(BYTE_VOCAB, lm.config.get_text_config().vocab_size)
        window = torch.randint(0, vocab, (args.batch, args.seq + 1), generator=gen)
        # clone(): at batch 1 a slice is already contiguous, and two views of one tensor
        # cannot both go into reference.safetensors ("tensors share memory").
        input_ids, labels = window[:, :-1].clone(), window[:, 1:].clone()
    batch = (input_ids, labels)
    if args.packed:
        position_ids = packed_positions(args.batch, args.seq, args.seed, args.weightless)
        if not args.weightless:
            # A document's last token would predict the next document's first: ignored.
            ends = torch.zeros_like(labels, dtype=torch.bool)
            ends[:, :-1] = position_ids[:, 1:] == 0
            labels = labels.masked_fill(ends, -100)
        batch = (input_ids, labels, position_ids)

    os.makedirs(args.out, exist_ok=True)
    lm.config.save_pretrained(args.out)
    onnx_path = os.path.join(args.out, "model.onnx")
    export_onnx(graph, batch, onnx_path, args)
    t_export = time.time() - t0

    import onnx  # after the export: the exporter imports its own pinned onnx

    model = onnx.load(onnx_path, load_external_data=False)
    strip_node_metadata(model)
    if args.weightless:
        params, buffer_inits, weights_path, weights_bytes = add_external_weights(
            model, graph, buffer_values, args.out)
    else:
        params, buffer_inits = check_inline_weights(model, graph)
        weights_path, weights_bytes = None, 0
    set_buffers_metadata(model, buffer_inits)
    set_placeholder_metadata(model, args)
    onnx.save(model, onnx_path)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))

    reference, loss = None, None
    if args.reference:
        reference, loss = write_reference(graph, lm, batch, params, buffer_inits, opset, args)
    shape = shape_summary(lm.config)
    print(json.dumps({
        "onnx": onnx_path, "onnx_bytes": os.path.getsize(onnx_path), "weights": weights_path,
        "weights_bytes": weights_bytes, "reference": reference, "loss": loss, "opset": opset,
        "params": len(params), "param_count": sum(p.numel() for p in params.values()),
        "embedding_params": 0 if tied else lm.get_input_embeddings().weight.numel(),
        "arch": args.arch or lm.config.model_type, "seq": args.seq, "batch": args.batch,
        **shape, "tie": tied, "rope_tables": args.rope_tables, "buffers": buffer_inits,
        "weightless": args.weightless, "packed": args.packed, "export_s": round(t_export, 1),
        "torch": torch.__version__, "transformers": transformers.__version__}))


if __name__ == "__main__":
    sys.exit(main())
