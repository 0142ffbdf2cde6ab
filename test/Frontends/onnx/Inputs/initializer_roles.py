#!/usr/bin/env python3
"""Writes models whose initializers are named or annotated as the exporters write them, for
the importer's parameter rules (frontends/onnx/Initializers.h).

usage: initializer_roles.py OUT_DIR

  torchscript.onnx  state-dict names, including a scalar `scale` and a [1] `alpha` (params);
                    `onnx::MatMul_9` [4, 3] (a folded weight: a param), `onnx::Mul_7` [] and
                    `/blk/Constant_output_0` [] (folded and lifted constants); `eps` [] listed
                    in the metadata `rp.buffers` (a constant)
  dynamo.onnx       every initializer of the PyTorch program annotated as the dynamo exporter
                    does (value info metadata `pkg.torch.export.graph_signature.InputSpec.kind`):
                    `w` and `scale` [] PARAMETER, `buf` [] BUFFER, `lifted` [1] CONSTANT_TENSOR;
                    and two values the ONNX optimizer folded, unannotated: `val_3` [] (a
                    constant) and `val_4` [4, 3] (a param)

Each computes y = the sum over its initializers of x @ (a [4, 3] one) or z * (a scalar or
[1] one), x [2, 4] and z [2, 3] its inputs.
ONNX 1.12's Python package predates ValueInfoProto.metadata_props (field 4): the entries are
written as raw protobuf fields, which it keeps as unknown fields.
"""
import os
import sys

import numpy as np
from onnx import StringStringEntryProto, TensorProto, helper, numpy_helper

KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def annotate(info, key, value):
    entry = StringStringEntryProto(key=key, value=value).SerializeToString()
    info.MergeFromString(varint(4 << 3 | 2) + varint(len(entry)) + entry)


def model(inits, annotations=None, buffers=None):
    nodes, terms = [], []
    for k, (name, value) in enumerate(inits):
        matrix = value.ndim == 2
        nodes.append(helper.make_node("MatMul" if matrix else "Mul", ["x" if matrix else "z", name],
                                      [f"t{k}"]))
        terms.append(f"t{k}")
    acc = terms[0]
    for k, t in enumerate(terms[1:]):
        nodes.append(helper.make_node("Add", [acc, t], [f"s{k}"]))
        acc = f"s{k}"
    nodes.append(helper.make_node("Identity", [acc], ["y"]))
    value_info = []
    for name, kind in (annotations or {}).items():
        info = helper.make_empty_tensor_value_info(name)
        annotate(info, KIND, kind)
        value_info.append(info)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                     helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(v.astype(np.float32), n) for n, v in inits],
        value_info=value_info)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if buffers:
        helper.set_model_props(m, {"rp.buffers": ",".join(buffers)})
    return m


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    w, s = np.ones((4, 3)), np.array(0.5)
    torchscript = model([("w", w), ("scale", s), ("alpha", np.array([2.0])),
                         ("onnx::MatMul_9", w), ("onnx::Mul_7", s),
                         ("/blk/Constant_output_0", s), ("eps", s)], buffers=["eps"])
    dynamo = model([("w", w), ("scale", s), ("buf", s), ("lifted", np.array([3.0])),
                    ("val_3", s), ("val_4", w)],
                   annotations={"x": "USER_INPUT", "w": "PARAMETER", "scale": "PARAMETER",
                                "buf": "BUFFER", "lifted": "CONSTANT_TENSOR"})
    for name, m in [("torchscript", torchscript), ("dynamo", dynamo)]:
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
