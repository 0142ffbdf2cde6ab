#!/usr/bin/env python3
"""Writes the fixture of a tiny causal LM that uses the ONNX ops rpc added for decoder
families: Softplus, Floor, Mod, CumSum on run-time values, ScatterElements without a reduction
and ScatterND (in-place slice assignment), exported by both exporters, with a PyTorch sidecar.

    onnx_ops_model.py OUT_DIR       (needs torch and onnx: examples/export/requirements.txt)

writes OUT_DIR/dynamo and OUT_DIR/torchscript (the committed copies are
Inputs/onnx-ops-model/), each with model.onnx (forward(input_ids [2, 8], labels [2, 8]) ->
loss) and reference.safetensors (export_model.py's sidecar layout; torch_fixture.py).

The model: a token embedding plus a hashed one (`input_ids % 7`: Mod on run-time integers),
two blocks `layers.N`, each
    h      = softplus(up(x));  h + floor(4 h) / 16        (Softplus; Floor, no gradient)
    dense  = zeros.scatter(-1, top2(router(x)), weights)  (ScatterElements, a router's mask)
    key    = zeros; key[..., :4] = k_rot(x); key[..., 4:] = k_pass(x)   (ScatterND)
    mix    = cumsum(key, dim=1) / (1 + position)          (CumSum over the sequence)
    x     += down(h) * (1 + dense.sum(-1)) + mix
and an LM head; the loss is the mean cross-entropy.
"""
import sys

import torch
import torch.nn.functional as F

from torch_fixture import export_both

V, D, FF, E, R, LAYERS, B, S = 48, 16, 32, 4, 4, 2, 2, 8


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(D, FF, bias=False)
        self.down = torch.nn.Linear(FF, D, bias=False)
        self.router = torch.nn.Linear(D, E, bias=False)
        self.k_rot = torch.nn.Linear(D, R, bias=False)
        self.k_pass = torch.nn.Linear(D, D - R, bias=False)

    def forward(self, x):
        h = F.softplus(self.up(x))
        h = h + torch.floor(4 * h) / 16
        weights, top = self.router(x).softmax(-1).topk(2, dim=-1)
        dense = torch.zeros(x.shape[0], x.shape[1], E).scatter(-1, top, weights)
        key = torch.zeros_like(x)
        key[..., :R] = self.k_rot(x)
        key[..., R:] = self.k_pass(x)
        position = torch.arange(x.shape[1], dtype=x.dtype).reshape(1, -1, 1)
        mix = torch.cumsum(key, dim=1) / (1 + position)
        return x + self.down(h) * (1 + dense.sum(-1, keepdim=True)) + mix


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.hashed = torch.nn.Embedding(7, D)
        self.layers = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.lm_head = torch.nn.Linear(D, V, bias=False)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids) + self.hashed(torch.remainder(input_ids, 7))
        for layer in self.layers:
            x = layer(x)
        return F.cross_entropy(self.lm_head(x).reshape(-1, V), labels.reshape(-1))


def main():
    torch.manual_seed(0)
    export_both(TinyLM().train(), V, B, S, sys.argv[1], list_buffers=[])


if __name__ == "__main__":
    sys.exit(main())
