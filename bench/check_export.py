#!/usr/bin/env python3
"""Checks bench/export_qwen3.py's graph against PyTorch on a small Qwen3 shape.

    python bench/check_export.py [--rp-ref build/bin/rp-ref] [--work bench/out/check-export]

export_qwen3.py exports from PyTorch's meta device, adds the parameters as external data by
hand and can replace the rotary embedding by constant cos/sin tables; this script proves that
the result computes the Hugging Face model's loss. For each of --rope-tables and
--no-rope-tables it exports a 2-layer Qwen3 (hidden 64, 4 heads, 2 KV heads, head_dim 16,
vocabulary 300, batch 2 x seq 32), writes the weights of a seeded CPU model into the external
data file at the offsets the ONNX names, runs `rp-ref MODEL --inputs DIR --out DIR` on one
batch and compares rp-ref's loss with transformers' (TrainingGraph of
examples/export/export_model.py) within 1e-4 relative. Needs the export environment (torch,
transformers, onnx) and rp-ref. Exit status 1 on a mismatch.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import transformers

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, os.path.join(root, "examples", "export"))
sys.path.insert(0, here)
from export_model import TrainingGraph  # noqa: E402

SHAPE = dict(layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, head_dim=16,
             vocab=300, seq=32, batch=2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rp-ref", default=os.path.join(root, "build", "bin", "rp-ref"))
    p.add_argument("--work", default=os.path.join(here, "out", "check-export"))
    args = p.parse_args()
    import onnx
    from onnx import numpy_helper

    s = SHAPE
    config = transformers.Qwen3Config(
        vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["intermediate"],
        num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"], head_dim=s["head_dim"],
        max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6,
        attention_bias=False, tie_word_embeddings=False, use_cache=False)
    torch.manual_seed(0)
    lm = transformers.Qwen3ForCausalLM(config).float()
    lm.config._attn_implementation = "sdpa"
    graph = TrainingGraph(lm).train()
    gen = torch.Generator().manual_seed(1)
    window = torch.randint(0, s["vocab"], (s["batch"], s["seq"] + 1), generator=gen)
    input_ids, labels = window[:, :-1].contiguous(), window[:, 1:].contiguous()
    with torch.no_grad():
        ref = graph(input_ids, labels).item()
    state = {k: v.detach().numpy() for k, v in graph.state_dict().items()}

    failures = 0
    for rope in ("--rope-tables", "--no-rope-tables"):
        out = os.path.join(args.work, rope.strip("-"))
        cmd = [sys.executable, os.path.join(here, "export_qwen3.py"), "--out", out, rope]
        for k in ("layers", "hidden", "intermediate", "heads", "vocab", "seq", "batch"):
            cmd += ["--" + k, str(s[k])]
        cmd += ["--kv-heads", str(s["kv_heads"]), "--head-dim", str(s["head_dim"])]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        model = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False)
        written = 0
        with open(os.path.join(out, "model.weights"), "r+b") as f:
            for init in model.graph.initializer:
                if init.data_location != onnx.TensorProto.EXTERNAL:
                    continue
                info = {e.key: e.value for e in init.external_data}
                value = state[init.name].astype("<f4")
                assert list(value.shape) == list(init.dims), init.name
                assert value.nbytes == int(info["length"]), init.name
                f.seek(int(info["offset"]))
                f.write(value.tobytes())
                written += 1
        inputs = os.path.join(out, "inputs")
        outputs = os.path.join(out, "outputs")
        os.makedirs(inputs, exist_ok=True)
        for i, t in enumerate((input_ids, labels)):
            with open(os.path.join(inputs, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(t.numpy()).SerializeToString())
        subprocess.run([args.rp_ref, os.path.join(out, "model.onnx"), "--inputs", inputs,
                        "--out", outputs], check=True)
        loss = onnx.TensorProto()
        with open(os.path.join(outputs, "output_0.pb"), "rb") as f:
            loss.ParseFromString(f.read())
        got = float(numpy_helper.to_array(loss))
        rel = abs(got - ref) / abs(ref)
        ok = rel <= 1e-4
        failures += not ok
        print(f"check_export {rope}: {written} params, rp-ref loss {got:.6f}, "
              f"PyTorch {ref:.6f}, rel {rel:.2e}: {'ok' if ok else 'MISMATCH'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
