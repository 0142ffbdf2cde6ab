#!/usr/bin/env python3
"""Input and expected outputs of gathernd-computed.onnxtext.

    gathernd_check.py input DIR     writes DIR/input_0.pb: x, float32 [2, 3, 4], 0..23
    gathernd_check.py compare DIR   compares DIR/output_{0,1,2}.pb with numpy's GatherND of x
                                    (exactly: a gather copies), prints 'GatherND matches'
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
# The graph's three GatherNDs: (indices, batch_dims).
CASES = [(np.array([[1, -1], [0, 0]]), 0),
         (np.array([[[2], [0]], [[-1], [1]]]), 1),
         (np.array([[1], [0], [-2]]), 0)]


def gather_nd(data, indices, batch_dims):
    """ONNX GatherND-13 on numpy arrays (negative indices from the end)."""
    if batch_dims:
        return np.stack([gather_nd(d, i, batch_dims - 1) for d, i in zip(data, indices)])
    out = [data[tuple(t)] for t in indices.reshape(-1, indices.shape[-1])]
    return np.stack(out).reshape(indices.shape[:-1] + data.shape[indices.shape[-1]:])


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "input":
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(X, "x").SerializeToString())
        return 0
    for n, (indices, batch_dims) in enumerate(CASES):
        t = TensorProto()
        with open(os.path.join(directory, f"output_{n}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got, want = numpy_helper.to_array(t), gather_nd(X, indices, batch_dims)
        if got.shape != want.shape or not np.array_equal(got, want):
            print(f"output {n}: got {got.tolist()}, want {want.tolist()}")
            return 1
    print("GatherND matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
