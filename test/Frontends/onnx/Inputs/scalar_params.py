#!/usr/bin/env python3
"""Writes the scalar-parameter fixtures: a tiny causal LM whose learnable scalars are
nn.Parameters of shape [] and [1], exported by both exporters, with a PyTorch sidecar.

    scalar_params.py OUT_DIR       (needs torch and onnx: examples/export/requirements.txt)

writes OUT_DIR/dynamo and OUT_DIR/torchscript (the committed copies are
Inputs/scalar-params/), each with model.onnx (forward(input_ids [2, 8], labels [2, 8]) ->
loss) and reference.safetensors (export_model.py's sidecar layout; torch_fixture.py).

The model: an embedding, two blocks `layers.N` (x + gate * down(h * sigmoid(beta * h)),
h = up(x): a Swish with a learnable coefficient `beta` of shape [1] and a learnable residual
gate `gate` of shape []), and an LM head divided by a learnable temperature of shape [];
the loss is the mean cross-entropy. It also holds what must not train: a scalar buffer
`logit_bias` (added to the logits) and a plain tensor attribute `shift` ([1], added to the
embeddings; the dynamo exporter lifts it as a CONSTANT_TENSOR initializer, TorchScript inlines
it). As export_model.py does, the TorchScript model lists its buffers in the metadata
`rp.buffers`; the dynamo model does not, so that the importer must take the exporter's own
annotations (frontends/onnx/Initializers.h).
"""
import sys

import torch
import torch.nn.functional as F

from torch_fixture import export_both

V, D, FF, LAYERS, B, S = 48, 16, 32, 2, 2, 8


class Block(torch.nn.Module):
    def __init__(self, beta, gate):
        super().__init__()
        self.up = torch.nn.Linear(D, FF, bias=False)
        self.down = torch.nn.Linear(FF, D, bias=False)
        self.beta = torch.nn.Parameter(torch.tensor([beta]))
        self.gate = torch.nn.Parameter(torch.tensor(gate))

    def forward(self, x):
        h = self.up(x)
        return x + self.gate * self.down(h * torch.sigmoid(self.beta * h))


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.layers = torch.nn.ModuleList([Block(1.0 + 0.5 * i, 0.75 - 0.25 * i)
                                           for i in range(LAYERS)])
        self.lm_head = torch.nn.Linear(D, V, bias=False)
        self.temperature = torch.nn.Parameter(torch.tensor(1.5))
        self.register_buffer("logit_bias", torch.tensor(0.25))
        self.shift = torch.tensor([0.125])

    def forward(self, input_ids, labels):
        x = self.embed(input_ids) + self.shift
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(x) / self.temperature + self.logit_bias
        return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))


def main():
    torch.manual_seed(0)
    export_both(TinyLM().train(), V, B, S, sys.argv[1], list_buffers=["torchscript"])


if __name__ == "__main__":
    sys.exit(main())
