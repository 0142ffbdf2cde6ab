#!/usr/bin/env python3
"""Writes the published layer profiles with the models' parameter bytes (stdlib only).

The artifact's profiles (examples/profiles/*-4090.json) carry measured times but no weight
bytes. For data parallelism across nodes the gradient bytes matter, so this adds them, from
the models' configurations (bf16 weights and gradients: 2 bytes per parameter):

  Qwen3-1.7B   (hidden 2048, MLP 6144, 16 heads, 8 KV heads of 128, vocab 151936, tied
               embeddings): block = 2 x 2048^2 (q, o) + 2 x 2048 x 1024 (k, v)
               + 3 x 2048 x 6144 (MLP) + 2 x 2048 + 2 x 128 (norms) = 50,336,000;
               tail = 2048 (norm) + 151936 x 2048 (LM head = the tied embedding) = 311,166,976.
  Llama-3.1-8B (hidden 4096, MLP 14336, 32 heads, 8 KV heads of 128, vocab 128256, untied):
               block = 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096 = 218,112,000;
               tail = 4096 + 128256 x 4096 = 525,340,672; the input embedding
               (128256 x 4096 = 525,336,576) is counted with block_0, the first layer.

Usage: make_node_profiles.py EXAMPLES_PROFILES_DIR OUT_DIR
"""
import json
import os
import sys

MODELS = {
    "qwen3-1.7b-4090": {"block": 50_336_000, "tail": 311_166_976, "first_extra": 0},
    "llama3.1-8b-4090": {"block": 218_112_000, "tail": 525_340_672, "first_extra": 525_336_576},
}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for name, m in MODELS.items():
        with open(os.path.join(src, name + ".json")) as f:
            profile = json.load(f)
        layers = profile["layers"]
        for i, layer in enumerate(layers):
            params = m["tail"] if i == len(layers) - 1 else m["block"]
            if i == 0:
                params += m["first_extra"]
            layer["param_bytes"] = 2 * params
            layer["trainable_bytes"] = 2 * params
        out = os.path.join(dst, name + "-params.json")
        with open(out, "w") as f:
            f.write('{\n  "comm_ms": %s,\n  "layers": [\n' % json.dumps(profile["comm_ms"]))
            f.write(",\n".join("    " + json.dumps(l) for l in layers))
            f.write("\n  ]\n}\n")
        print(out)


if __name__ == "__main__":
    main()
