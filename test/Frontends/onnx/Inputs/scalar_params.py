#!/usr/bin/env python3
"""Writes the scalar-parameter fixtures: a tiny causal LM whose learnable scalars are
nn.Parameters of shape [] and [1], exported by both exporters, with a PyTorch sidecar.

    scalar_params.py OUT_DIR       (needs torch and onnx: examples/export/requirements.txt)

writes OUT_DIR/dynamo and OUT_DIR/torchscript (the committed copies are
Inputs/scalar-params/), each with
    model.onnx              forward(input_ids [2, 8], labels [2, 8]) -> loss, as
                            examples/export/export_model.py exports (dynamo: optimize=False;
                            TorchScript: TRAINING mode, do_constant_folding=False)
    reference.safetensors   input.input_ids, input.labels, loss, grad.<param> for every
                            parameter (export_model.py's sidecar layout)

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
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

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
    out = sys.argv[1]
    torch.manual_seed(0)
    model = TinyLM().train()
    gen = torch.Generator().manual_seed(1)
    window = torch.randint(0, V, (B, S + 1), generator=gen)
    input_ids, labels = window[:, :-1].contiguous(), window[:, 1:].contiguous()
    kwargs = dict(input_names=["input_ids", "labels"], output_names=["loss"])
    import onnx  # after torch: the exporter imports its own onnx

    for exporter in ["dynamo", "torchscript"]:
        directory = os.path.join(out, exporter)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "model.onnx")
        if exporter == "dynamo":
            program = torch.onnx.export(model, (input_ids, labels), dynamo=True, optimize=False,
                                        external_data=False, **kwargs)
            program.save(path, external_data=False)
        else:
            torch.onnx.export(model, (input_ids, labels), path, dynamo=False,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, **kwargs)
        onnx_model = onnx.load(path)
        # The dynamo exporter's node metadata (stack traces, FX nodes, scopes) is not needed.
        for node in onnx_model.graph.node:
            del node.metadata_props[:]
        buffers = {n for n, _ in model.named_buffers()}
        listed = sorted(i.name for i in onnx_model.graph.initializer if i.name in buffers)
        if exporter == "torchscript" and listed:
            entry = onnx_model.metadata_props.add()
            entry.key, entry.value = "rp.buffers", ",".join(listed)
        onnx.save(onnx_model, path)

        model.zero_grad()
        loss = model(input_ids, labels)
        loss.backward()
        sidecar = {"input.input_ids": input_ids, "input.labels": labels,
                   "loss": loss.detach().reshape(())}
        for name, param in model.named_parameters():
            sidecar["grad." + name] = param.grad.detach().contiguous()
        save_file(sidecar, os.path.join(directory, "reference.safetensors"),
                  metadata={"exporter": exporter, "torch": torch.__version__})
        print(exporter, f"loss {loss.item():.6f}", "buffers listed:", listed)


if __name__ == "__main__":
    sys.exit(main())
