#!/usr/bin/env python3
"""PyTorch's token-weighted loss and gradients on a masked SFT batch of M micro-batches.

    python examples/export/export_sft_reference.py DIR [--micro-batches 3] [--batch 2]
        [--seq 16] [--out DIR/sft-reference.safetensors]

DIR holds an export of export_model.py with a symbolic batch dimension (--dynamic), whose
reference.safetensors metadata names its arch and size. The model is rebuilt from that config
and loaded with the ONNX file's initializers (by parameter name, so the weights are exactly the
exported ones). The batch is M * batch rows of seq tokens (seeded), labels pre-shifted as the
export's contract, with PyTorch's ignore_index -100 on masked positions; micro-batch m is rows
[m * batch, (m + 1) * batch). The masks make the micro-batches' trained-label counts differ:
micro-batch 0 trains every label, micro-batch 1 only the last quarter of each row (a response
after a prompt), micro-batch 2 none (a micro-batch of prompt tokens only), later ones
alternate. The reference loss is F.cross_entropy over the whole batch, the mean over every
trained label: the token-weighted step loss rp-run computes from its micro-batches
(runtime/train/TokenWeights.h); `rp-ref MODEL --dim batch=B --dim seq=S --reference FILE
--micro-batches M` checks it.

Writes: input.input_ids, input.labels (int64 [M * batch, seq]), loss (float32 []),
grad.<param> (float32), metadata micro_batches, batch, seq, trained (per micro-batch).
"""
import argparse
import os
import sys

import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_model import BYTE_VOCAB, TrainingGraph, build  # noqa: E402


def masked_labels(labels, micro_batches, batch):
    """labels with -100 where micro-batch m's mask leaves a position out (docstring)."""
    seq = labels.shape[1]
    out = labels.clone()
    for m in range(micro_batches):
        rows = slice(m * batch, (m + 1) * batch)
        kind = m % 3
        if kind == 1:
            out[rows, : seq - seq // 4] = -100
        elif kind == 2:
            out[rows, :] = -100
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="an export directory (model.onnx, reference.safetensors)")
    p.add_argument("--micro-batches", type=int, default=3)
    p.add_argument("--batch", type=int, default=2, help="rows per micro-batch")
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--out", help="default: DIR/sft-reference.safetensors")
    args = p.parse_args()

    with safe_open(os.path.join(args.dir, "reference.safetensors"), "pt") as f:
        meta = f.metadata()
    if meta.get("dynamic") != "true":
        raise SystemExit(f"{args.dir}: the export has a fixed batch (export with --dynamic)")
    lm = build(meta["arch"], meta["size"]).float()
    lm.config._attn_implementation = "sdpa"
    graph = TrainingGraph(lm, explicit_mask=meta["exporter"] == "torchscript").train()
    inits = {i.name: numpy_helper.to_array(i)
             for i in onnx.load(os.path.join(args.dir, "model.onnx")).graph.initializer}
    params = dict(graph.named_parameters())
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(torch.from_numpy(inits[name].copy()))

    rows = args.micro_batches * args.batch
    gen = torch.Generator().manual_seed(args.seed)
    window = torch.randint(0, BYTE_VOCAB, (rows, args.seq + 1), generator=gen)
    input_ids = window[:, :-1].contiguous()
    labels = masked_labels(window[:, 1:].contiguous(), args.micro_batches, args.batch)
    loss = graph(input_ids, labels)
    loss.backward()

    trained = [int((labels[m * args.batch:(m + 1) * args.batch] != -100).sum())
               for m in range(args.micro_batches)]
    sidecar = {"input.input_ids": input_ids, "input.labels": labels,
               "loss": loss.detach().reshape(())}
    for name, param in params.items():
        sidecar["grad." + name] = param.grad.detach().contiguous()
    out = args.out or os.path.join(args.dir, "sft-reference.safetensors")
    save_file(sidecar, out, metadata={
        "micro_batches": str(args.micro_batches), "batch": str(args.batch),
        "seq": str(args.seq), "seed": str(args.seed), "trained": ",".join(map(str, trained)),
        "torch": torch.__version__})
    print(f"{out}: loss {loss.item():.6f}, trained labels per micro-batch {trained}")


if __name__ == "__main__":
    sys.exit(main())
