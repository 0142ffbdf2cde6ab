#!/usr/bin/env python3
"""Inputs and expected outputs of scatter-elements.onnxtext.

    scatter_elements_check.py input DIR     writes DIR/input_{0..3}.pb: ids int64 [6] (expert
                                            ids with repeats), mask float32 [6], x float32
                                            [2, 3], u float32 [2, 2]
    scatter_elements_check.py compare DIR   compares DIR/output_{0,1}.pb with numpy's
                                            np.add.at (exactly: small integers and halves),
                                            prints 'ScatterElements (add) matches'
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

IDS = np.array([3, 1, 3, 0, 3, 1], dtype=np.int64)
MASK = np.array([1, 1, 0.5, 1, 1, 2], dtype=np.float32)
X = np.arange(6, dtype=np.float32).reshape(2, 3)
U = np.array([[10, 20], [30, 40]], dtype=np.float32)
COLS = np.array([[2, 0], [2, 2]])  # the graph's constant, -1 normalised


def expected():
    counts = np.zeros(4, dtype=np.float32)
    np.add.at(counts, IDS, MASK)
    rows = X.copy()
    for i in range(2):
        for j in range(2):
            rows[i, COLS[i, j]] += U[i, j]
    return [counts, rows]


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "input":
        os.makedirs(directory, exist_ok=True)
        for n, (name, value) in enumerate([("ids", IDS), ("mask", MASK), ("x", X), ("u", U)]):
            with open(os.path.join(directory, f"input_{n}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())
        return 0
    for n, want in enumerate(expected()):
        t = TensorProto()
        with open(os.path.join(directory, f"output_{n}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t)
        if got.shape != want.shape or not np.array_equal(got, want):
            print(f"output {n}: got {got.tolist()}, want {want.tolist()}")
            return 1
    print("ScatterElements (add) matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
