#!/usr/bin/env python3
"""Checks examples/export/export_model.py --weightless against PyTorch on small shapes.

    python bench/check_export.py [--rp-ref build/bin/rp-ref] [--work bench/out/check-export]
        [--case NAME ...]

The weightless export traces the model on PyTorch's meta device, adds the parameters as
external data by hand, computes the buffers apart and can replace the rotary embedding by
constant cos/sin tables; this script proves that the result computes the Hugging Face model's
loss. For each case (CASES: a 2-layer Qwen3 with hidden 64, 4 heads, 2 KV heads, head_dim 16,
vocabulary 300, with and without --rope-tables, the --size full presets of Qwen3-MoE and
GPT-OSS at that size, and Gemma, whose embedding scale is a buffer; batch 2 x seq 32) it
exports the graph, builds a seeded CPU model from the config.json the export wrote, writes its
weights into the external data file at the offsets the ONNX names, runs `rp-ref MODEL --inputs
DIR --out DIR` on one batch and compares rp-ref's loss with transformers' (TrainingGraph of
examples/export/export_model.py) within 1e-4 relative. Needs the export environment (torch,
transformers, onnx) and rp-ref. Exit status 1 on a mismatch.
"""
import argparse
import os
import subprocess
import sys

import torch
import transformers

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
exporter = os.path.join(root, "examples", "export", "export_model.py")
sys.path.insert(0, os.path.dirname(exporter))
from export_model import TrainingGraph, build_model  # noqa: E402

BATCH, SEQ = 2, 32
SMALL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--head-dim",
         "16", "--vocab", "300"]
CASES = {
    "qwen3-rope-tables": ["--arch", "qwen3", "--size", "full", "--intermediate", "128", *SMALL,
                          "--rope-tables"],
    "qwen3": ["--arch", "qwen3", "--size", "full", "--intermediate", "128", *SMALL,
              "--no-rope-tables"],
    "qwen3_moe": ["--arch", "qwen3_moe", "--size", "full", "--intermediate", "128", *SMALL,
                  "--experts", "4", "--top-k", "2", "--moe-intermediate", "32"],
    "gpt_oss": ["--arch", "gpt_oss", "--size", "full", "--intermediate", "64", *SMALL,
                "--experts", "4", "--top-k", "2", "--sliding-window", "8"],
    "gemma": ["--arch", "gemma", "--size", "test"],
}


def reference_loss(config_dir, input_ids, labels):
    """transformers' loss of a seeded CPU model of the exported config, and its state dict."""
    config = transformers.AutoConfig.from_pretrained(config_dir)
    torch.manual_seed(0)
    lm = build_model(config, None, perturb=False).float()
    lm.config._attn_implementation = "eager" if config.model_type == "gpt_oss" else "sdpa"
    graph = TrainingGraph(lm).train()
    with torch.no_grad():
        loss = graph(input_ids, labels).item()
    return loss, {k: v.detach().numpy() for k, v in graph.state_dict().items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rp-ref", default=os.path.join(root, "build", "bin", "rp-ref"),
                   help="the rp-ref binary (default build/bin/rp-ref)")
    p.add_argument("--work", default=os.path.join(here, "out", "check-export"),
                   help="scratch directory (default bench/out/check-export)")
    p.add_argument("--case", action="append", choices=sorted(CASES),
                   help="run only this case (repeatable; default: every case)")
    args = p.parse_args()
    import onnx
    from onnx import numpy_helper

    failures = 0
    for name in args.case or CASES:
        out = os.path.join(args.work, name)
        cmd = [sys.executable, exporter, "--weightless", "--exporter", "dynamo", "--out", out,
               "--batch", str(BATCH), "--seq", str(SEQ)] + CASES[name]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        model = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False)
        config = transformers.AutoConfig.from_pretrained(out)
        gen = torch.Generator().manual_seed(1)
        window = torch.randint(0, config.get_text_config().vocab_size, (BATCH, SEQ + 1),
                               generator=gen)
        input_ids, labels = window[:, :-1].contiguous(), window[:, 1:].contiguous()
        ref, state = reference_loss(out, input_ids, labels)
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
                        "--out", outputs], check=True, stdout=subprocess.DEVNULL)
        loss = onnx.TensorProto()
        with open(os.path.join(outputs, "output_0.pb"), "rb") as f:
            loss.ParseFromString(f.read())
        got = float(numpy_helper.to_array(loss))
        rel = abs(got - ref) / abs(ref)
        ok = rel <= 1e-4
        failures += not ok
        print(f"check_export {name}: {written} params, rp-ref loss {got:.6f}, "
              f"PyTorch {ref:.6f}, rel {rel:.2e}: {'ok' if ok else 'MISMATCH'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
