"""The export of the small torch fixtures (scalar_params.py, onnx_ops_model.py): a module
forward(input_ids, labels) -> loss exported by both exporters as
examples/export/export_model.py exports (dynamo: optimize=False; TorchScript: TRAINING mode,
do_constant_folding=False), with its PyTorch sidecar. Needs torch and onnx
(examples/export/requirements.txt).
"""
import os

import torch
from safetensors.torch import save_file


def export_both(model, vocab, batch, seq, out, list_buffers):
    """Writes OUT/dynamo and OUT/torchscript, each with model.onnx and reference.safetensors
    (input.input_ids, input.labels, loss, grad.<param> for every parameter) of one seeded batch.
    Of the dynamo exporter's node metadata only the module scopes (`namespace`) stay. The
    exporters in `list_buffers` get the module's buffers listed in the metadata `rp.buffers`."""
    gen = torch.Generator().manual_seed(1)
    window = torch.randint(0, vocab, (batch, seq + 1), generator=gen)
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
        for node in onnx_model.graph.node:
            keep = [(p.key, p.value) for p in node.metadata_props if p.key == "namespace"]
            del node.metadata_props[:]
            for key, value in keep:
                node.metadata_props.add(key=key, value=value)
        buffers = {n for n, _ in model.named_buffers()}
        listed = sorted(i.name for i in onnx_model.graph.initializer if i.name in buffers)
        if exporter in list_buffers and listed:
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
        print(exporter, f"loss {loss.item():.6f}", "ops", sorted({n.op_type for n in
                                                                  onnx_model.graph.node}))
