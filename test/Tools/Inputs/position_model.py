"""A tiny causal LM with a `position_ids` input, to test how rp-run and rp-ref feed positions.

usage: position_model.py OUT.onnx POSITIONS [--no-positions]

The model (GPT-2's learned absolute positions, no attention): h = embed[input_ids] +
positions[position_ids]; two layers h = h + tanh(h @ layers.N.proj); logits = h @ lm_head; SoftmaxCrossEntropyLoss (ignore_index -100,
mean) against labels. Inputs input_ids, position_ids, labels: int64 [batch, seq]; vocabulary
257 (byte tokens and <|endoftext|>), width 16, a table of POSITIONS positions.
--no-positions leaves out position_ids and the position table (a model that cannot tell
packed documents apart).
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

V, D = 257, 16


def main():
    out, table = sys.argv[1], int(sys.argv[2])
    with_positions = "--no-positions" not in sys.argv[3:]
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (V, D)).astype(np.float32), "embed"),
             numpy_helper.from_array(rng.normal(0, 0.3, (D, V)).astype(np.float32), "lm_head")]
    nodes = [helper.make_node("Constant", [], ["flat_logits"], name="/Constant_0",
                              value=numpy_helper.from_array(np.array([-1, V], np.int64))),
             helper.make_node("Constant", [], ["flat_labels"], name="/Constant_1",
                              value=numpy_helper.from_array(np.array([-1], np.int64))),
             helper.make_node("Gather", ["embed", "input_ids"], ["tok"], name="/Gather_0")]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])]
    h = "tok"
    if with_positions:
        inits.append(numpy_helper.from_array(rng.normal(0, 0.3, (table, D)).astype(np.float32),
                                             "positions"))
        inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64,
                                                    ["batch", "seq"]))
        nodes += [helper.make_node("Gather", ["positions", "position_ids"], ["pos"],
                                   name="/Gather_1"),
                  helper.make_node("Add", ["tok", "pos"], ["h"], name="/Add_0")]
        h = "h"
    for layer in range(2):
        proj = f"layers.{layer}.proj"
        inits.append(numpy_helper.from_array(rng.normal(0, 0.3, (D, D)).astype(np.float32), proj))
        nodes += [helper.make_node("MatMul", [h, proj], [f"m{layer}"], name=f"/MatMul_{layer + 1}"),
                  helper.make_node("Tanh", [f"m{layer}"], [f"t{layer}"], name=f"/Tanh_{layer}"),
                  helper.make_node("Add", [h, f"t{layer}"], [f"r{layer}"],
                                   name=f"/Add_{layer + 1}")]
        h = f"r{layer}"
    inputs.append(helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch", "seq"]))
    nodes += [helper.make_node("MatMul", [h, "lm_head"], ["logits3"], name="/MatMul_0"),
              helper.make_node("Reshape", ["logits3", "flat_logits"], ["logits"],
                               name="/Reshape_0"),
              helper.make_node("Reshape", ["labels", "flat_labels"], ["flat"], name="/Reshape_1"),
              helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "flat"], ["loss"],
                               name="/SoftmaxCrossEntropyLoss_0", reduction="mean",
                               ignore_index=-100)]
    graph = helper.make_graph(nodes, "position_model", inputs,
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                              initializer=inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), out)


if __name__ == "__main__":
    main()
