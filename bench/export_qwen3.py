#!/usr/bin/env python3
"""Export the training graph of a Qwen3-1.7B-shaped model to ONNX without materialising its
weights (the graph is all rpc-compile needs; the benchmark's weights are made on the GPU
machine by bench/make_inputs.py).

    python bench/export_qwen3.py --out DIR [--layers 28] [--seq 4096] [--batch 1]
        [--hidden 2048] [--intermediate 6144] [--heads 16] [--kv-heads 8] [--head-dim 128]
        [--vocab 151936] [--tie | --no-tie] [--rope-tables | --no-rope-tables]
        [--arch qwen3|qwen3_moe|gpt_oss] [--experts E] [--top-k K] [--moe-intermediate I]
        [--sliding-window W]

Defaults: the Hugging Face config of Qwen/Qwen3-1.7B (28 layers, hidden 2048, intermediate
6144, 16 heads, 8 KV heads, head_dim 128, vocabulary 151936, rope_theta 1e6, RMSNorm eps 1e-6,
no biases, the LM head tied to the embedding as in Qwen3-1.7B's own config:
tie_word_embeddings=true, 1.72 B parameters), one micro-batch of 1 x 4096 tokens. --no-tie
gives the LM head its own weight (2.03 B parameters, the shape measured before rpc took
shared params).

The graph is examples/export/export_model.py's (TrainingGraph: forward + mean cross-entropy
from pre-shifted labels; inputs input_ids, labels int64 [batch, seq]; output loss float32 []),
exported by torch.onnx's dynamo exporter with the same settings (optimize=False, sdpa
attention, the rotary inv_freq buffer listed in the "rp.buffers" metadata), except:

  - the model is built on PyTorch's meta device: no weight is allocated or initialised, and
    the export traces shapes only (seconds, a few hundred MB of memory for 2 B parameters);
  - the graph is saved without initializers (ONNXProgram.save(include_initializers=False));
    this script then adds one initializer per parameter as ONNX external data in
    DIR/model.weights, a *sparse* file of zeros (os.truncate: no disk blocks, no memory), and
    the buffers inline with their real values (constants that fold);
  - --rope-tables (the default when seq * head_dim > 65536): the rotary embedding returns
    precomputed cos/sin tables (RopeTables below), because rpc's importer folds the rotary
    Cos/Sin only up to 65536 elements and rejects them beyond;
  - no PyTorch reference sidecar is written (a forward + backward of 2 B parameters at 4096
    tokens would take hours on a CPU).

rpc-compile reads those zeros and writes them (as f32) into the .safetensors beside the plan;
that file is not needed by the benchmark (bench/export_qwen3_1p7b.sh deletes it) because
bench/make_inputs.py writes the real initial weights where the plan runs.

Writes DIR/model.onnx (the graph: 2.4 MB at 28 layers, 6.5 MB with the seq-4096 rotary tables)
and DIR/model.weights (sparse), and prints one JSON line: parameters, their count, the shape,
the sizes, the export time (36 s at full size on a 2-core machine, 1 GB of memory).
bench/check_export.py checks the result against transformers' loss.

Mixtures of experts (--arch qwen3_moe, gpt_oss; docs/PERFORMANCE.md "Mixtures of experts at
scale"): every layer routed, transformers' batched_mm experts (the form rpc's
rp-fuse-routed-experts turns into grouped GEMMs), the same meta-device export.
"""
import argparse
import json
import os
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "export"))
from export_model import TrainingGraph  # noqa: E402  the graph the committed exports use


class RopeTables(torch.nn.Module):
    """The rotary embedding as two precomputed tables (cos, sin: [batch, seq, head_dim], f32),
    the values Qwen3RotaryEmbedding.forward computes for positions 0..seq-1 (same formula, same
    f32 arithmetic). rpc's importer folds the rotary subgraph (Cos/Sin of position x inv_freq)
    only while a result has at most ImportOptions::foldLimit = 65536 elements
    (frontends/onnx/OnnxImporter.h), i.e. seq * head_dim <= 65536 (seq <= 512 at head_dim
    128); beyond that Cos is rejected ("supported only on compile-time constant inputs").
    Listed in rp.buffers, the tables are constants whatever their size."""

    def __init__(self, rotary, batch, seq):
        super().__init__()
        positions = torch.arange(seq, dtype=torch.int64)[None, :].expand(batch, seq)
        x = torch.zeros(1, dtype=torch.float32)
        cos, sin = rotary(x, positions)
        self.values = {"cos_table": cos.float().contiguous(), "sin_table": sin.float().contiguous()}
        # On the meta device like the rest of the model (the export traces shapes only); the
        # values above become the ONNX initializers.
        self.cos_table = torch.nn.Buffer(torch.empty(cos.shape, device="meta"), persistent=False)
        self.sin_table = torch.nn.Buffer(torch.empty(sin.shape, device="meta"), persistent=False)

    def forward(self, x, position_ids):
        return self.cos_table.to(dtype=x.dtype), self.sin_table.to(dtype=x.dtype)


def qwen3_config(args):
    return transformers.Qwen3Config(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads, head_dim=args.head_dim,
        max_position_embeddings=max(40960, args.seq), rope_theta=1000000.0, rms_norm_eps=1e-6,
        attention_bias=False, tie_word_embeddings=args.tie, bos_token_id=151643,
        eos_token_id=151645, use_cache=False)


def qwen3_moe_config(args):
    # Qwen3-MoE (Qwen3-30B-A3B's config with the sizes given): every layer routed, top-k
    # renormalised, transformers' batched_mm experts (the form rp-fuse-routed-experts fuses).
    config = transformers.Qwen3MoeConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        moe_intermediate_size=args.moe_intermediate, num_experts=args.experts,
        num_experts_per_tok=args.top_k, norm_topk_prob=True, decoder_sparse_step=1,
        mlp_only_layers=[], num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads, head_dim=args.head_dim,
        max_position_embeddings=max(40960, args.seq), rope_theta=1000000.0, rms_norm_eps=1e-6,
        attention_bias=False, tie_word_embeddings=args.tie, use_cache=False)
    config._experts_implementation = "batched_mm"
    return config


def gpt_oss_config(args):
    # GPT-OSS (gpt-oss-20b's config with the sizes given): every layer routed (router bias,
    # softmax over the chosen logits, clamped SwiGLU, expert biases), attention sinks, biased
    # attention, sliding (window --sliding-window) and full attention alternating, YaRN rotary;
    # transformers' batched_mm experts. The expert intermediate size is --moe-intermediate.
    config = transformers.GptOssConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.moe_intermediate,
        num_local_experts=args.experts, num_experts_per_tok=args.top_k,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads, head_dim=args.head_dim,
        sliding_window=args.sliding_window,
        layer_types=["sliding_attention", "full_attention"] * (args.layers // 2),
        max_position_embeddings=max(131072, args.seq), rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0,
                         "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                         "original_max_position_embeddings": 4096},
        tie_word_embeddings=args.tie, use_cache=False)
    config._experts_implementation = "batched_mm"
    return config


ARCHS = {
    "qwen3": (qwen3_config, "Qwen3ForCausalLM"),
    "qwen3_moe": (qwen3_moe_config, "Qwen3MoeForCausalLM"),
    "gpt_oss": (gpt_oss_config, "GptOssForCausalLM"),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--layers", type=int, default=28)
    p.add_argument("--seq", type=int, default=4096, help="sequence length of a micro-batch")
    p.add_argument("--batch", type=int, default=1, help="sequences per micro-batch")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=6144)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--tie", action=argparse.BooleanOptionalAction, default=True,
                   help="tie the LM head to the embedding (Qwen3-1.7B's own config)")
    p.add_argument("--rope-tables", action=argparse.BooleanOptionalAction, default=None,
                   help="export the rotary cos/sin as precomputed constant tables (default: "
                        "when seq * head_dim > 65536, the importer's fold limit)")
    p.add_argument("--arch", choices=sorted(ARCHS), default="qwen3",
                   help="qwen3 (dense), qwen3_moe (e.g. Qwen3-30B-A3B: --layers 48 --experts "
                        "128 --top-k 8 --moe-intermediate 768 --heads 32 --kv-heads 4 --no-tie; "
                        "Qwen3-235B-A22B: --layers 94 --hidden 4096 --heads 64 --kv-heads 4 "
                        "--experts 128 --top-k 8 --moe-intermediate 1536 --no-tie) "
                        "or gpt_oss (gpt-oss-20b: --layers 24 --hidden 2880 --experts 32 "
                        "--top-k 4 --moe-intermediate 2880 --heads 64 --kv-heads 8 --head-dim "
                        "64 --vocab 201088 --no-tie)")
    p.add_argument("--experts", type=int, default=128, help="routed experts per layer (MoE)")
    p.add_argument("--top-k", type=int, default=8, help="experts per token (MoE)")
    p.add_argument("--moe-intermediate", type=int, default=768,
                   help="an expert's intermediate size (MoE)")
    p.add_argument("--sliding-window", type=int, default=128,
                   help="the sliding-attention layers' window (gpt_oss)")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset (exporter default)")
    args = p.parse_args()

    if args.rope_tables is None:
        args.rope_tables = args.seq * args.head_dim > 65536
    t0 = time.time()
    make_config, model_class = ARCHS[args.arch]
    config = make_config(args)
    with torch.device("meta"):
        lm = getattr(transformers, model_class)(config).float()
    # GPT-OSS's attention sinks exist only in transformers' eager attention (its SDPA path drops
    # them), as in examples/export/export_model.py.
    lm.config._attn_implementation = "eager" if args.arch == "gpt_oss" else "sdpa"
    graph = TrainingGraph(lm).train()

    # Buffers need real values (the importer makes them constants that fold): built again on
    # the CPU. With --rope-tables the rotary embedding returns precomputed cos/sin tables.
    with torch.device("cpu"):
        rotary_cpu = type(graph.model.rotary_emb)(config)
    buffer_values = {"model.rotary_emb.inv_freq": rotary_cpu.inv_freq.float()}
    if args.rope_tables:
        graph.model.rotary_emb = RopeTables(rotary_cpu, args.batch, args.seq)
        buffer_values = {"model.rotary_emb." + k: v
                         for k, v in graph.model.rotary_emb.values.items()}

    input_ids = torch.zeros((args.batch, args.seq), dtype=torch.int64, device="meta")
    labels = torch.zeros((args.batch, args.seq), dtype=torch.int64, device="meta")

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    kwargs = dict(input_names=["input_ids", "labels"], output_names=["loss"])
    if args.opset is not None:
        kwargs["opset_version"] = args.opset
    program = torch.onnx.export(graph, (input_ids, labels), dynamo=True, optimize=False,
                                external_data=True, **kwargs)
    program.save(onnx_path, include_initializers=False, keep_initializers_as_inputs=False)
    t_export = time.time() - t0

    import onnx  # after the export: the exporter imports its own pinned onnx
    from onnx import numpy_helper

    model = onnx.load(onnx_path, load_external_data=False)
    # Strip the per-node stack traces (as export_model.py does); keep the namespace.
    for node in model.graph.node:
        keep = [(q.key, q.value) for q in node.metadata_props if q.key == "namespace"]
        del node.metadata_props[:]
        for key, value in keep:
            node.metadata_props.add(key=key, value=value)

    used = set()
    for node in model.graph.node:
        used.update(node.input)
    # One entry per parameter tensor, under the name the graph uses (a tied LM head and
    # embedding are one tensor: the exporter names it by one of its two names).
    names_of = {}
    for name, param in graph.named_parameters(remove_duplicate=False):
        names_of.setdefault(id(param), (param, []))[1].append(name)
    params = {}
    for param, names in names_of.values():
        params[next((n for n in names if n in used), names[0])] = param
    buffers = dict(graph.named_buffers())
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
    for name in buffers:
        if name not in used:
            continue
        if name not in buffer_values:
            raise SystemExit(f"export: buffer {name} has no value here; add it to export_qwen3.py")
        model.graph.initializer.append(numpy_helper.from_array(buffer_values[name].numpy(), name))
        buffer_names.append(name)
    if buffer_names:
        entry = next((q for q in model.metadata_props if q.key == "rp.buffers"), None) \
            or model.metadata_props.add()
        entry.key, entry.value = "rp.buffers", ",".join(buffer_names)
    weights_path = os.path.join(args.out, weights_name)
    with open(weights_path, "wb") as f:
        f.truncate(offset)  # sparse: zeros without disk blocks
    onnx.save(model, onnx_path)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    n_params = sum(p.numel() for p in params.values())
    print(json.dumps({"onnx": onnx_path, "onnx_bytes": os.path.getsize(onnx_path),
                      "weights": weights_path, "weights_bytes": offset, "opset": opset,
                      "params": len(params), "param_count": n_params,
                      "embedding_params": 0 if args.tie else args.vocab * args.hidden,
                      "arch": args.arch, "layers": args.layers, "seq": args.seq,
                      "batch": args.batch,
                      "hidden": args.hidden, "intermediate": args.intermediate,
                      "heads": args.heads, "kv_heads": args.kv_heads, "head_dim": args.head_dim,
                      "vocab": args.vocab,
                      "tie": args.tie, "rope_tables": args.rope_tables, "buffers": buffer_names,
                      "export_s": round(t_export, 1),
                      "torch": torch.__version__, "transformers": transformers.__version__}))


if __name__ == "__main__":
    sys.exit(main())
