#!/usr/bin/env python3
"""Inputs and expected outputs of moe-ops.onnxtext.

    moe_ops_check.py input DIR     writes DIR/input_{0,1}.pb: x float32 [3, 5] (distinct
                                   values, ties none), w float32 [5, 2, 3]
    moe_ops_check.py compare DIR   compares DIR/output_{0..8}.pb with numpy (exactly: every op
                                   selects or copies), prints 'TopK, GatherND, Tile and Clip match'
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

RNG = np.random.default_rng(7)
X = RNG.permutation(15).astype(np.float32).reshape(3, 5) / 8 - 0.9
W = np.arange(30, dtype=np.float32).reshape(5, 2, 3)


def expected():
    ids = np.argsort(-X, axis=1, kind="stable")[:, :2]
    low_ids = np.argsort(X, axis=0, kind="stable")[:2, :]
    return [np.take_along_axis(X, ids, 1), ids,
            np.take_along_axis(X, low_ids, 0), low_ids,
            W[ids], np.tile(X, (2, 1)),
            np.clip(X, -0.5, 0.5), np.maximum(X, -0.5), np.minimum(X, 0.5)]


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "input":
        os.makedirs(directory, exist_ok=True)
        for n, (name, value) in enumerate([("x", X), ("w", W)]):
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
    print("TopK, GatherND, Tile and Clip match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
