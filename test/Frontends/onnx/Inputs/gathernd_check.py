#!/usr/bin/env python3
"""Input and expected outputs of gathernd-computed.onnxtext.

    gathernd_check.py input DIR     writes DIR/input_0.pb: x, float32 [2, 3, 4], 0..23
    gathernd_check.py compare DIR   compares DIR/output_{0,1,2}.pb with numpy's GatherND of x
                                    (exactly: a gather copies), prints 'GatherND matches'
"""
import sys

import numpy as np

from pb_check import run

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


if __name__ == "__main__":
    sys.exit(run(sys.argv, [("x", X)],
                 lambda: [gather_nd(X, i, b) for i, b in CASES], "GatherND matches"))
