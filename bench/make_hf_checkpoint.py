#!/usr/bin/env python3
"""Write a Hugging Face model directory of a published shape with random bf16 weights, sharded
as transformers saves it, without an f32 copy of the model in memory: the scale inputs of
rpc-finetune (its export, compile and check at 1.7 B and 8 B parameters).

    python bench/make_hf_checkpoint.py OUT --size 1.7b|8b [--max-shard-size-gb 2] [--seed 0]

OUT gets config.json and generation_config.json (transformers' Qwen3Config of Qwen3-1.7B:
28 layers, hidden 2048, intermediate 6144, 16 heads, 8 KV heads, head_dim 128, vocabulary
151936, tied, max_position_embeddings 40960; or of Qwen3-8B: 36 layers, hidden 4096,
intermediate 12288, 32 heads, untied), model-0000k-of-0000n.safetensors and
model.safetensors.index.json. The model is built on PyTorch's meta device for its parameter
names and shapes; each tensor is drawn alone, N(0, 0.02) in bf16 (RMSNorm weights ones), and a
shard is written once it reaches --max-shard-size-gb, so the peak memory is about one shard.
No tokenizer: train it on a token file (bench/make_inputs.py --tokens). Needs the export
environment (examples/export/requirements.txt).
"""
import argparse
import json
import os
import sys
import time

import torch
import transformers
from safetensors.torch import save_file

SHAPES = {
    "1.7b": dict(num_hidden_layers=28, hidden_size=2048, intermediate_size=6144,
                 num_attention_heads=16, num_key_value_heads=8, tie_word_embeddings=True),
    "8b": dict(num_hidden_layers=36, hidden_size=4096, intermediate_size=12288,
               num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--size", choices=list(SHAPES), default="1.7b")
    p.add_argument("--max-shard-size-gb", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    t0 = time.time()
    config = transformers.Qwen3Config(
        vocab_size=151936, head_dim=128, max_position_embeddings=40960, rope_theta=1e6,
        rms_norm_eps=1e-6, bos_token_id=151643, eos_token_id=151645, **SHAPES[args.size])
    config.dtype = torch.bfloat16
    with torch.device("meta"):
        lm = transformers.Qwen3ForCausalLM(config)
    names = [(n, tuple(t.shape)) for n, t in lm.state_dict().items()
             if not (config.tie_word_embeddings and n == "lm_head.weight")]
    os.makedirs(args.out, exist_ok=True)
    config.save_pretrained(args.out)
    transformers.GenerationConfig(bos_token_id=151643, eos_token_id=151645).save_pretrained(args.out)
    # The shards' contents from the shapes alone (the file names need their count), then each
    # shard drawn and written in turn.
    limit = int(args.max_shard_size_gb * 2**30)
    groups, size = [[]], 0
    for name, shape in names:
        n = 2 * int(torch.Size(shape).numel())
        if groups[-1] and size + n > limit:
            groups.append([])
            size = 0
        groups[-1].append((name, shape))
        size += n
    gen = torch.Generator().manual_seed(args.seed)
    weight_map, total = {}, 0
    for k, group in enumerate(groups):
        file = f"model-{k + 1:05d}-of-{len(groups):05d}.safetensors"
        shard = {}
        for name, shape in group:
            shard[name] = torch.ones(shape, dtype=torch.bfloat16) if len(shape) == 1 else \
                torch.randn(shape, generator=gen, dtype=torch.bfloat16).mul_(0.02)
            weight_map[name] = file
            total += shard[name].numel() * 2
        save_file(shard, os.path.join(args.out, file), metadata={"format": "pt"})
        del shard
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(json.dumps({"out": args.out, "params": total // 2, "bytes": total,
                      "shards": len(groups), "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    sys.exit(main())
