#!/usr/bin/env python3
"""Export a Hugging Face causal LM's training graph to ONNX, with a PyTorch reference sidecar.

    python examples/export/export_model.py --arch qwen3 --exporter dynamo --out DIR
        [--size test|tiny|small] [--batch 4] [--seq 64] [--dynamic] [--seed 0] [--opset N] [--tied]
        [--router-aux-loss [--router-aux-loss-coef C]]
    python examples/export/export_model.py --model-dir HF_DIR --exporter dynamo --out DIR ...

Mixtures of experts (--arch qwen3_moe, gpt_oss, mixtral, qwen2_moe, olmoe, or a --model-dir
whose config has experts) use transformers' batched_mm experts
(`config._experts_implementation = "batched_mm"`: each token repeated k times, the chosen
experts' weights gathered per token, bmm, sum), which exports with static shapes; GPT-OSS uses
eager attention, since its attention sinks exist only there.

The model is built from a config with random weights (torch.manual_seed(seed)); nothing is
downloaded. With --model-dir, the config is HF_DIR/config.json (a local Hugging Face model
directory: any causal LM transformers builds with AutoModelForCausalLM.from_config); its
weights are not read or copied, since the graph does not depend on them: train from them with
`rp-run --weights HF_DIR`. The exported graph is the training graph rpc compiles:

    inputs   input_ids  int64 [batch, seq]   token ids
             labels     int64 [batch, seq]   the next token of each position (pre-shifted:
                                             labels[b, t] = token t + 1 of the window), the
                                             contract of rp-run's data loader
    output   loss       float32 []           mean cross-entropy over batch * seq positions;
                                             with --router-aux-loss (mixtures of experts) plus
                                             router_aux_loss_coef x the family's
                                             load_balancing_loss_func of the router logits
                                             (what <Family>ForCausalLM adds to its loss with
                                             output_router_logits=True)

Hugging Face's own loss (`labels=` argument) shifts inside the model and ignores index -100;
we compute the same mean cross-entropy on the base model's logits from pre-shifted labels, so
that the graph needs no slicing of the sequence and every position counts.

Parameter names are Hugging Face's state-dict names (model.layers.0.self_attn.q_proj.weight,
lm_head.weight, ...), so checkpoints load back into transformers. Buffers (rotary inv_freq,
GPT-2's causal mask) are not parameters: their names are written into the ONNX model's
metadata under "rp.buffers" (comma-separated): the importer makes them constants.

Writes into DIR:
    model.onnx                  one file (no external data)
    config.json                 the model's transformers config (for rp-run --export-hf
                                --hf-config: the exported weights then load with
                                from_pretrained)
    reference.safetensors       the PyTorch reference on one seeded batch:
                                  input.input_ids, input.labels  (int64, the batch)
                                  loss                           (float32, shape [])
                                  grad.<param>                   (float32, every parameter)
                                metadata: arch, exporter, torch, transformers, onnx opset,
                                router_aux_loss_coef ("0" without the aux loss)
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import save_file

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


def build(arch, size, sliding_window=None):
    hidden, layers, heads, kv_heads, inter = SIZES[size]
    common = dict(vocab_size=VOCAB, tie_word_embeddings=False, bos_token_id=BYTE_VOCAB,
                  eos_token_id=BYTE_VOCAB, pad_token_id=BYTE_VOCAB + 1)
    if arch == "qwen3":
        config = transformers.Qwen3Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            max_position_embeddings=1024, rope_theta=10000.0, **common)
        model = transformers.Qwen3ForCausalLM(config)
    elif arch == "llama":
        config = transformers.LlamaConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, rope_theta=10000.0, **common)
        model = transformers.LlamaForCausalLM(config)
    elif arch == "gpt2":
        config = transformers.GPT2Config(
            n_embd=hidden, n_layer=layers, n_head=heads, n_inner=4 * hidden, n_positions=1024,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common)
        model = transformers.GPT2LMHeadModel(config)
    elif arch == "mistral":
        # Sliding window: the family default (4096, wider than any test sequence, so the mask is
        # the causal one) unless --sliding-window narrows it below the sequence (a band mask).
        window = dict(sliding_window=sliding_window) if sliding_window else {}
        config = transformers.MistralConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            max_position_embeddings=1024, **window, **common)
        model = transformers.MistralForCausalLM(config)
    elif arch == "phi3":
        # Fused projections: self_attn.qkv_proj and mlp.gate_up_proj, sliced in the graph.
        config = transformers.Phi3Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, original_max_position_embeddings=1024, **common)
        model = transformers.Phi3ForCausalLM(config)
    elif arch == "gemma":
        # Tied embeddings (the family default), GELU-tanh MLP, RMSNorm scaled by (1 + w), the
        # embedding scaled by sqrt(hidden).
        config = transformers.GemmaConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            max_position_embeddings=1024, **dict(common, tie_word_embeddings=True))
        model = transformers.GemmaForCausalLM(config)
    elif arch == "gpt_neox":
        # Parallel residual, rotary on a quarter of each head, LayerNorm with bias, exact GELU,
        # biased projections; the head is embed_out.
        config = transformers.GPTNeoXConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            intermediate_size=inter, max_position_embeddings=1024, **common)
        model = transformers.GPTNeoXForCausalLM(config)
    elif arch == "olmo2":
        # Post-norms (after attention and after the MLP) and RMSNorm on q and k.
        config = transformers.Olmo2Config(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, **common)
        model = transformers.Olmo2ForCausalLM(config)
    elif arch == "phi":
        # Attention and MLP in parallel off one LayerNorm, rotary on half of each head,
        # GELU-tanh ("gelu_new"), biases everywhere including the head.
        config = transformers.PhiConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, resid_pdrop=0.0, embd_pdrop=0.0, **common)
        model = transformers.PhiForCausalLM(config)
    elif arch == "stablelm":
        # LayerNorm with bias, SwiGLU, rotary on a quarter of each head.
        config = transformers.StableLmConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter,
            max_position_embeddings=1024, **common)
        model = transformers.StableLmForCausalLM(config)
    elif arch == "falcon":
        # Tied embeddings (the family default), multi-query attention (one kv head), attention
        # and MLP in parallel off one LayerNorm, exact GELU, no biases.
        config = transformers.FalconConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            max_position_embeddings=1024, **dict(common, tie_word_embeddings=True))
        model = transformers.FalconForCausalLM(config)
    elif arch == "qwen3_moe":
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
        config._experts_implementation = "batched_mm"
        model = transformers.Qwen3MoeForCausalLM(config)
    elif arch == "gpt_oss":
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
        config._experts_implementation = "batched_mm"
        model = transformers.GptOssForCausalLM(config)
    elif arch == "mixtral":
        # Every layer routed: 8-way softmax router, top-2 renormalised, SwiGLU experts of the
        # dense size, no biases, no shared expert.
        config = transformers.MixtralConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=inter,
            num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
            router_jitter_noise=0.0, max_position_embeddings=1024, rope_theta=10000.0, **common)
        config._experts_implementation = "batched_mm"
        model = transformers.MixtralForCausalLM(config)
    elif arch == "qwen2_moe":
        # Routed experts (top-2, probabilities not renormalised) plus a shared expert scaled by
        # its own sigmoid gate; biased q/k/v projections.
        config = transformers.Qwen2MoeConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, intermediate_size=inter, moe_intermediate_size=hidden // 2,
            shared_expert_intermediate_size=hidden, num_experts=4, num_experts_per_tok=2,
            norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
            use_sliding_window=False, max_position_embeddings=1024, rope_theta=10000.0, **common)
        config._experts_implementation = "batched_mm"
        model = transformers.Qwen2MoeForCausalLM(config)
    elif arch == "olmoe":
        # Every layer routed (top-2 of 4, not renormalised), RMSNorm on the whole q and k
        # projections (not per head).
        config = transformers.OlmoeConfig(
            hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
            num_key_value_heads=heads, intermediate_size=hidden // 2, num_experts=4,
            num_experts_per_tok=2, norm_topk_prob=False, max_position_embeddings=1024,
            rope_theta=10000.0, **common)
        config._experts_implementation = "batched_mm"
        model = transformers.OlmoeForCausalLM(config)
    else:
        raise SystemExit(f"unknown --arch {arch}")
    if arch in ("qwen3_moe", "gpt_oss"):
        # Random init leaves some MoE tensors (GPT-OSS's sinks, biases, router) at zero or tied
        # values; a small seeded perturbation makes every routing decision and gradient distinct.
        with torch.no_grad():
            for name, param in model.named_parameters():
                if any(k in name for k in ("sinks", "bias", "router", "mlp.gate.")):
                    param.add_(0.5 * torch.randn_like(param))
    return model


ARCHS = ["qwen3", "llama", "gpt2", "mistral", "phi3", "gemma", "gpt_neox", "olmo2", "phi",
         "stablelm", "falcon", "qwen3_moe", "gpt_oss", "mixtral", "qwen2_moe", "olmoe"]
def build_from_dir(model_dir):
    """The causal LM of a local Hugging Face model directory's config.json, random weights."""
    config = transformers.AutoConfig.from_pretrained(model_dir)
    if any(getattr(config, k, None)
           for k in ("num_experts", "num_local_experts", "n_routed_experts")):
        # A mixture of experts: the static batched_mm experts, as for --arch qwen3_moe/gpt_oss.
        config._experts_implementation = "batched_mm"
    return transformers.AutoModelForCausalLM.from_config(config)


class TrainingGraph(torch.nn.Module):
    """forward(input_ids, labels) -> mean cross-entropy (+ router_aux_loss_coef x the router
    load-balancing loss with router_aux_loss); the causal LM's children are adopted so that
    parameter names stay Hugging Face's."""

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
        head = lm.get_output_embeddings()
        # "lm_head", or "embed_out" (GPT-NeoX); a tied head shares the embedding's weight.
        self.head_name = next(name for name, child in lm.named_children() if child is head)
        for name, child in lm.named_children():
            self.add_module(name, child)

    def forward(self, input_ids, labels):
        # The TorchScript exporter cannot trace transformers' packed-sequence detection
        # (aten::diff), which runs when no attention mask is given: give it all ones.
        mask = torch.ones_like(input_ids) if self.explicit_mask else None
        extra = {"output_router_logits": True} if self.aux else {}
        hidden = getattr(self, self.base_name)(input_ids=input_ids, attention_mask=mask,
                                               use_cache=False, **extra)
        logits = getattr(self, self.head_name)(hidden.last_hidden_state)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
        if self.aux:
            balance, experts, top_k, coef = self.aux
            loss = loss + coef * balance(hidden.router_logits, experts, top_k, mask)
        return loss


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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--arch", choices=ARCHS)
    source.add_argument("--model-dir", help="a local Hugging Face model directory (config.json)")
    p.add_argument("--exporter", required=True, choices=["dynamo", "torchscript"])
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--size", default="tiny", choices=sorted(SIZES))
    p.add_argument("--batch", type=int, default=4, help="micro-batch size")
    p.add_argument("--seq", type=int, default=64, help="sequence length")
    p.add_argument("--dynamic", action="store_true",
                   help="symbolic batch and seq dims (bind them with rpc-compile --dim)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--opset", type=int, default=None, help="ONNX opset (exporter default)")
    p.add_argument("--tied", action="store_true",
                   help="tie the LM head to the input embedding (tie_word_embeddings=True), as "
                        "the small Qwen3 and Llama 3.2 models are; default: the config's own")
    p.add_argument("--router-aux-loss", action="store_true",
                   help="mixtures of experts: add router_aux_loss_coef x the router "
                        "load-balancing loss to the exported loss (output_router_logits=True)")
    p.add_argument("--router-aux-loss-coef", type=float, default=None,
                   help="with --router-aux-loss: the coefficient (default: the config's "
                        "router_aux_loss_coef, 0.001 for Qwen3-MoE and GPT-OSS)")
    p.add_argument("--sliding-window", type=int, default=None,
                   help="Mistral: the config's sliding_window (default: the family's 4096); "
                        "below --seq the attention mask is a sliding-window band")
    args = p.parse_args()
    if args.router_aux_loss_coef is not None and not args.router_aux_loss:
        raise SystemExit("export: --router-aux-loss-coef needs --router-aux-loss")
    if args.sliding_window is not None and args.arch != "mistral":
        raise SystemExit("export: --sliding-window applies to --arch mistral")

    torch.manual_seed(args.seed)
    lm = build_from_dir(args.model_dir) if args.model_dir else build(args.arch, args.size, args.sliding_window)
    lm = lm.float()
    if args.router_aux_loss:
        lm.config.output_router_logits = True
        if args.router_aux_loss_coef is not None:
            lm.config.router_aux_loss_coef = args.router_aux_loss_coef
    if args.tied:
        lm.config.get_text_config().tie_word_embeddings = True
        lm.tie_weights()
        if lm.get_output_embeddings().weight is not lm.get_input_embeddings().weight:
            raise SystemExit("export: --tied: the LM head could not be tied to the embedding")
    # GPT-OSS's attention sinks exist only in its eager attention (no SDPA support: transformers'
    # SDPA path would drop the sinks).
    lm.config._attn_implementation = "eager" if lm.config.model_type == "gpt_oss" else "sdpa"
    graph = TrainingGraph(lm, explicit_mask=args.exporter == "torchscript",
                          router_aux_loss=args.router_aux_loss).train()

    gen = torch.Generator().manual_seed(args.seed + 1)
    vocab = min(BYTE_VOCAB, lm.config.get_text_config().vocab_size)
    window = torch.randint(0, vocab, (args.batch, args.seq + 1), generator=gen)
    input_ids, labels = window[:, :-1].contiguous(), window[:, 1:].contiguous()

    os.makedirs(args.out, exist_ok=True)
    lm.config.save_pretrained(args.out)
    onnx_path = os.path.join(args.out, "model.onnx")
    kwargs = dict(input_names=["input_ids", "labels"], output_names=["loss"])
    if args.opset is not None:
        kwargs["opset_version"] = args.opset
    if args.exporter == "dynamo":
        if args.dynamic:
            b, s = torch.export.Dim("batch"), torch.export.Dim("seq", max=1024)
            kwargs["dynamic_shapes"] = {"input_ids": {0: b, 1: s}, "labels": {0: b, 1: s}}
        # optimize=False: the optimizer folds Transpose(weight) into new initializers
        # ("val_107"), which would hide the parameters' names.
        program = torch.onnx.export(graph, (input_ids, labels), dynamo=True, optimize=False,
                                    external_data=False, **kwargs)
        program.save(onnx_path, external_data=False)
    else:
        if args.dynamic:
            axes = {0: "batch", 1: "seq"}
            kwargs["dynamic_axes"] = {"input_ids": axes, "labels": axes}
        torch.onnx.export(graph, (input_ids, labels), onnx_path, dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, **kwargs)

    import onnx  # after the export: the exporter imports its own pinned onnx

    model = onnx.load(onnx_path)
    params = dict(graph.named_parameters())
    buffers = [n for n, _ in graph.named_buffers()]
    inits = {i.name for i in model.graph.initializer}
    names = initializer_names(graph)
    missing = sorted(n for n in params if not names[n] & inits)
    if missing:
        raise SystemExit(f"export: parameters without an initializer of the same name: {missing}")
    buffer_inits = sorted(n for n in inits if n in buffers)
    # The dynamo exporter annotates every node with its Python stack trace and FX node (about
    # half of a small model's file): drop those; node names and the namespace stay.
    for node in model.graph.node:
        keep = [(p.key, p.value) for p in node.metadata_props if p.key == "namespace"]
        del node.metadata_props[:]
        for key, value in keep:
            node.metadata_props.add(key=key, value=value)
    meta = {p.key: p for p in model.metadata_props}
    if buffer_inits:
        entry = meta.get("rp.buffers") or model.metadata_props.add()
        entry.key, entry.value = "rp.buffers", ",".join(buffer_inits)
    onnx.save(model, onnx_path)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))

    loss = graph(input_ids, labels)
    loss.backward()
    sidecar = {"input.input_ids": input_ids, "input.labels": labels,
               "loss": loss.detach().reshape(())}
    for name, param in params.items():
        sidecar["grad." + name] = param.grad.detach().contiguous()
    metadata = {"arch": args.arch or lm.config.model_type, "exporter": args.exporter,
                "torch": torch.__version__,
                "transformers": transformers.__version__, "opset": str(opset),
                "size": "config.json" if args.model_dir else args.size,
                "batch": str(args.batch), "seq": str(args.seq),
                "dynamic": str(args.dynamic).lower(), "seed": str(args.seed),
                "buffers": ",".join(buffer_inits),
                "router_aux_loss_coef": (str(graph.aux[3]) if graph.aux else "0")}
    save_file(sidecar, os.path.join(args.out, "reference.safetensors"), metadata=metadata)
    size = os.path.getsize(onnx_path)
    print(json.dumps({"onnx": onnx_path, "bytes": size, "opset": opset, "loss": loss.item(),
                      "params": len(params), "buffers": buffer_inits}))


if __name__ == "__main__":
    sys.exit(main())
