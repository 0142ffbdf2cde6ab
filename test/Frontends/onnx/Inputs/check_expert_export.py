#!/usr/bin/env python3
"""Checks rp-run --export-hf of stacked expert LoRA adapters against the trained checkpoint.

    check_expert_export.py CKPT.safetensors PEFT_DIR MERGED_DIR ALPHA ORDER
CKPT: rp-run's model checkpoint (master weights: W, <W>.lora_A[.weight] [E, r, in],
<W>.lora_B[.weight] [E, out, r]). PEFT_DIR (adapter export) must hold, per expert module, peft
0.21's target_parameters layout: lora_A.weight [E r, in] (row e r + j = A[e, j]) and
lora_B.weight [out, r E] (column j E + e = B[e, :, j]), the module's k-th of n adapted
parameters (ORDER: the module's parameter names in its order, comma-separated, as
transformers declares them) nested n - 1 - k times under ".base_layer"; adapter_config.json
lists them in
target_parameters. MERGED_DIR (--export-merged) must hold W_e + alpha / r B_e A_e (W [E, out,
in], names ending ".weight") or its transpose (W [E, in, out]) within 1e-6 of the largest
element. Prints 'N expert adapters exported as PEFT's and merged' or exits 1 naming the
first difference. numpy and the standard library only.
"""
import json
import os
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        body = f.read()
    header.pop("__metadata__", None)
    out = {}
    for k, v in header.items():
        assert v["dtype"] == "F32", (k, v["dtype"])
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(body[b:e], dtype="<f4").reshape(v["shape"]).astype(np.float64)
    return out


def main():
    ckpt, peft_dir, merged_dir, alpha = load(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    rank_of = {name: i for i, name in enumerate(sys.argv[5].split(","))}
    peft = load(os.path.join(peft_dir, "adapter_model.safetensors"))
    config = json.load(open(os.path.join(peft_dir, "adapter_config.json")))
    merged = load(os.path.join(merged_dir, "model.safetensors"))
    adapted = [w for w in ckpt if w + ".lora_A" in ckpt or w + ".lora_A.weight" in ckpt]
    adapted.sort(key=lambda w: (w.rsplit(".", 1)[0], rank_of[w.rsplit(".", 1)[1]]))
    modules = {}
    for w in adapted:
        modules.setdefault(w.rsplit(".", 1)[0], []).append(w)
    want_params = sorted({m.rsplit(".", 1)[1] + "." + w.rsplit(".", 1)[1]
                          for m, ws in modules.items() for w in ws})
    if config.get("target_parameters") != want_params:
        print(f"target_parameters {config.get('target_parameters')}, want {want_params}")
        return 1
    for module, ws in modules.items():
        for k, w in enumerate(ws):
            suffix = ".weight" if w + ".lora_A.weight" in ckpt else ""
            a, b = ckpt[w + ".lora_A" + suffix], ckpt[w + ".lora_B" + suffix]
            e, r, n_in = a.shape
            key = "base_model.model." + module + ".base_layer" * (len(ws) - 1 - k)
            pa, pb = peft.get(key + ".lora_A.weight"), peft.get(key + ".lora_B.weight")
            if pa is None or pb is None:
                print(f"{key}.lora_A/B.weight missing; have {sorted(peft)}")
                return 1
            if not (np.array_equal(pa, a.reshape(e * r, n_in)) and
                    np.array_equal(pb, b.transpose(1, 2, 0).reshape(b.shape[1], r * e))):
                print(f"{key}: values are not A [E r, in] and B [out, r E] of {w}")
                return 1
            delta = alpha / r * np.einsum("eor,eri->eoi", b, a)
            if not suffix:
                delta = delta.transpose(0, 2, 1)
            want = ckpt[w] + delta
            err = np.abs(merged[w] - want).max() / np.abs(want).max()
            if err > 1e-6 or not np.abs(delta).max() > 0:
                print(f"merged {w}: normalised difference {err:.3g} (update {np.abs(delta).max():.3g})")
                return 1
    print(f"{len(adapted)} expert adapters exported as PEFT's and merged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
