"""Writes the binary ONNX models of the frontend's error tests into a directory.

usage: make_models.py OUT_DIR

  good.onnx            a Relu model whose weight lives in external data (weights.bin)
  truncated.onnx       good.onnx cut in the middle
  garbage.onnx         bytes that are no protobuf
  missing-data.onnx    external data pointing at a file that does not exist
  escape.onnx          external data location '../outside.bin'
  absolute.onnx        external data location '/etc/hostname' (an absolute path)
  symlink.onnx         external data 'link.bin', a symbolic link to a file outside the directory
  inner-link.onnx      external data 'sub/inner.bin', a symbolic link to ../weights.bin (inside:
                       accepted)
  short-data.onnx      external data whose length does not match the shape
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model_with_external(location, length=None):
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([2, 3])
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", location
    if length is not None:
        e = w.external_data.add()
        e.key, e.value = "length", str(length)
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add_w")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    np.arange(6, dtype=np.float32).tofile(os.path.join(out, "weights.bin"))
    good = model_with_external("weights.bin").SerializeToString()
    with open(os.path.join(out, "good.onnx"), "wb") as f:
        f.write(good)
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(good[: len(good) // 2])
    with open(os.path.join(out, "garbage.onnx"), "wb") as f:
        f.write(b"\xff\xff\xff\xff this is not a protobuf \x00\x01")
    for name, loc, length in [("missing-data", "nowhere.bin", None),
                              ("escape", "../outside.bin", None),
                              ("absolute", "/etc/hostname", None),
                              ("symlink", "link.bin", None),
                              ("short-data", "weights.bin", 8)]:
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(model_with_external(loc, length).SerializeToString())
    # link.bin -> a 24-byte file outside the model's directory (the shape's size, so that only
    # the location check can refuse it).
    outside = os.path.join(os.path.dirname(os.path.abspath(out)), os.path.basename(out) + "-outside.bin")
    with open(outside, "wb") as f:
        f.write(b"\0" * 24)
    link = os.path.join(out, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(outside, link)
    os.makedirs(os.path.join(out, "sub"), exist_ok=True)
    inner = os.path.join(out, "sub", "inner.bin")
    if os.path.lexists(inner):
        os.remove(inner)
    os.symlink("../weights.bin", inner)
    with open(os.path.join(out, "inner-link.onnx"), "wb") as f:
        f.write(model_with_external("sub/inner.bin").SerializeToString())
    # Inputs for rp-ref: x = ones.
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    x = numpy_helper.from_array(np.ones((2, 3), dtype=np.float32), "x")
    with open(os.path.join(out, "inputs", "input_0.pb"), "wb") as f:
        f.write(x.SerializeToString())


if __name__ == "__main__":
    main()
