#!/usr/bin/env python3
"""Check an `rp-run --export-hf` directory with Hugging Face transformers (and PEFT).

    python examples/export/check_hf_export.py EXPORT --tokens FILE [--windows 16] [--seq 64]
        [--master CKPT.safetensors] [--base DIR] [--config DIR] [--before DIR]

EXPORT is a full-model export (config.json + model.safetensors or shards + index) or a LoRA
adapter export (adapter_config.json + adapter_model.safetensors; then --base names the base
model directory it adapts). The script

1. loads EXPORT with `transformers.AutoModelForCausalLM.from_pretrained` (adapters: the base
   with `peft.PeftModel.from_pretrained`) in float32, and checks that every tensor the
   export's files hold is, bit for bit after the same dtype conversion, the tensor the loaded
   model uses (so nothing was dropped, renamed, transposed or left at its initial value), and
   that the model has no parameter the export does not hold (tied weights aside);
2. with --master (rp-run's checkpoint model-stepK.safetensors: the fp32 master weights),
   checks that the export holds those values (but the weights a merged LoRA export changes): exactly for an f32 export, within the dtype's
   rounding (relative 2^-8 for bf16, 2^-11 for f16) otherwise;
3. evaluates the mean next-token cross-entropy on --windows windows of --seq + 1 tokens
   taken evenly from the llm.c token file --tokens (the last 10% of it: the windows rp-run
   holds out for --eval-every), and with --before DIR also the loss of the model in DIR on
   the same windows (e.g. the weights before fine-tuning).

--config DIR supplies config.json when EXPORT has none (a model exported without
--hf-config). Prints one JSON object; exit code 1 when a check fails. Needs torch,
transformers, safetensors (and peft for adapters): examples/export/requirements.txt. Not part
of ctest.
"""
import argparse
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors import safe_open

TOKEN_MAGIC = {20240520: np.uint16, 20240801: np.uint32}


def read_tokens(path):
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        dtype = TOKEN_MAGIC.get(header[0])
        if dtype is None:
            raise SystemExit(f"{path}: not an llm.c token file (magic {header[0]})")
        return np.frombuffer(f.read(), dtype=dtype)[: header[2]].astype(np.int64)


def export_tensors(directory):
    """Every tensor of the export's safetensors files, with the file's dtype."""
    names = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
    if not names:
        raise SystemExit(f"{directory}: no .safetensors files")
    tensors = {}
    for name in names:
        with safe_open(os.path.join(directory, name), "pt") as f:
            if (f.metadata() or {}).get("format") != "pt":
                raise SystemExit(f"{name}: metadata 'format' is not 'pt'")
            for key in f.keys():
                tensors[key] = f.get_tensor(key)
    return tensors


def with_config(directory, config_dir):
    """`directory`, or a temporary copy with config.json from `config_dir`."""
    if os.path.exists(os.path.join(directory, "config.json")) or not config_dir:
        return directory
    tmp = tempfile.mkdtemp(prefix="hf-export-")
    for name in os.listdir(directory):
        os.symlink(os.path.abspath(os.path.join(directory, name)), os.path.join(tmp, name))
    shutil.copy(os.path.join(config_dir, "config.json"), os.path.join(tmp, "config.json"))
    return tmp


def load(directory, config_dir):
    return transformers.AutoModelForCausalLM.from_pretrained(
        with_config(directory, config_dir), dtype=torch.float32).eval()


def check_full(directory, model, failures):
    stored = export_tensors(directory)
    state = model.state_dict()
    for name, tensor in stored.items():
        if name not in state:
            failures.append(f"export tensor {name} is not in the loaded model")
        elif not torch.equal(state[name], tensor.to(torch.float32)):
            failures.append(f"{name}: the loaded model's value differs from the export's")
    tied = {k for k, v in state.items() for s, w in state.items()
            if s != k and s in stored and v.data_ptr() == w.data_ptr()}
    params = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    for name in sorted(params - set(stored) - tied):
        failures.append(f"model parameter {name} is not in the export")
    return stored


def check_adapter(directory, model, failures):
    stored = export_tensors(directory)
    state = model.state_dict()
    for name, tensor in stored.items():
        # PEFT stores "base_model.model.X.lora_A.weight"; loaded as "...lora_A.default.weight".
        loaded = name.replace(".lora_A.weight", ".lora_A.default.weight").replace(
            ".lora_B.weight", ".lora_B.default.weight")
        if loaded not in state:
            failures.append(f"adapter tensor {name} is not in the loaded PEFT model")
        elif not torch.equal(state[loaded], tensor.to(torch.float32)):
            failures.append(f"{name}: the loaded adapter differs from the export's")
    return stored


def adapted_weights(names):
    """The weights a LoRA checkpoint adapts: <W> of "<W>.lora_A", <M>.weight of
    "<M>.lora_A.weight" (a merged export changes them)."""
    out = set()
    for name in names:
        if name.endswith(".lora_A.weight"):
            out.add(name[:-len(".lora_A.weight")] + ".weight")
        elif name.endswith(".lora_A"):
            out.add(name[:-len(".lora_A")])
    return out


def check_master(stored, master_path, failures):
    """The export against rp-run's fp32 master weights (names shared by both; the weights a
    merged LoRA export changes are left out)."""
    worst = 0.0
    with safe_open(master_path, "pt") as f:
        merged = adapted_weights(f.keys())
        for name in f.keys():
            if name not in stored or name in merged:
                continue
            master, out = f.get_tensor(name), stored[name]
            if out.dtype == torch.float32:
                if not torch.equal(master, out):
                    failures.append(f"{name}: the f32 export differs from the master weights")
                continue
            if not torch.equal(master.to(out.dtype), out):
                failures.append(f"{name}: not the master weights rounded to {out.dtype}")
            scale = master.abs().clamp_min(1e-30)
            worst = max(worst, ((out.float() - master).abs() / scale).max().item())
    return worst


@torch.no_grad()
def mean_loss(model, tokens, windows, seq):
    held_out = tokens[int(len(tokens) * 0.9):]
    starts = np.linspace(0, len(held_out) - seq - 2, windows).astype(np.int64)
    batch = torch.from_numpy(np.stack([held_out[s:s + seq + 1] for s in starts]))
    logits = model(input_ids=batch[:, :-1]).logits
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).double(), batch[:, 1:].reshape(-1)).item()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("export", help="the rp-run --export-hf directory")
    p.add_argument("--tokens", required=True, help="llm.c token file to evaluate on")
    p.add_argument("--windows", type=int, default=16)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--master", help="rp-run checkpoint model-stepK.safetensors to compare with")
    p.add_argument("--base", help="the base model directory of an adapter export")
    p.add_argument("--config", help="a directory whose config.json the export lacks")
    p.add_argument("--before", help="a model directory to compare the loss with")
    args = p.parse_args()

    failures = []
    adapter = os.path.exists(os.path.join(args.export, "adapter_config.json"))
    if adapter:
        import peft
        if not args.base:
            raise SystemExit("an adapter export needs --base DIR (the model it adapts)")
        model = peft.PeftModel.from_pretrained(load(args.base, args.config), args.export).eval()
        stored = check_adapter(args.export, model, failures)
    else:
        model = load(args.export, args.config)
        stored = check_full(args.export, model, failures)
    report = {"export": args.export, "kind": "peft-lora" if adapter else "full",
              "tensors": len(stored),
              "dtypes": sorted({str(t.dtype).replace("torch.", "") for t in stored.values()})}
    if args.master:
        report["max_rel_rounding"] = check_master(stored, args.master, failures)
    tokens = read_tokens(args.tokens)
    report["loss"] = mean_loss(model, tokens, args.windows, args.seq)
    if args.before:
        report["loss_before"] = mean_loss(load(args.before, args.config), tokens, args.windows,
                                          args.seq)
    report["failures"] = failures
    print(json.dumps(report, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
