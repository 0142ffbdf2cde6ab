"""The harness of the numpy checks of small .onnxtext graphs run by rp-ref (gathernd_check.py,
moe_ops_check.py, scatter_elements_check.py): `input DIR` writes the graph's inputs as
DIR/input_<n>.pb; `compare DIR` reads DIR/output_<n>.pb and requires each to equal the
expected array exactly (shape and values), then prints `matched`.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper


def run(argv, inputs, expected, matched):
    """inputs: [(name, array)] in graph order; expected: a function returning the outputs'
    arrays in order; matched: the line printed when all match. Returns the exit status."""
    mode, directory = argv[1], argv[2]
    if mode == "input":
        os.makedirs(directory, exist_ok=True)
        for n, (name, value) in enumerate(inputs):
            with open(os.path.join(directory, f"input_{n}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())
        return 0
    for n, want in enumerate(expected()):
        t = TensorProto()
        with open(os.path.join(directory, f"output_{n}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t)
        if got.shape != want.shape or not np.array_equal(got, want.astype(got.dtype)):
            print(f"output {n}: got {got.tolist()}, want {want.tolist()}")
            return 1
    print(matched)
    return 0
