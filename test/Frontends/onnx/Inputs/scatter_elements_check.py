#!/usr/bin/env python3
"""Inputs and expected outputs of scatter-elements.onnxtext.

    scatter_elements_check.py input DIR     writes DIR/input_{0..3}.pb: ids int64 [6] (expert
                                            ids with repeats), mask float32 [6], x float32
                                            [2, 3], u float32 [2, 2]
    scatter_elements_check.py compare DIR   compares DIR/output_{0,1}.pb with numpy's
                                            np.add.at (exactly: small integers and halves),
                                            prints 'ScatterElements (add) matches'
"""
import sys

import numpy as np

from pb_check import run

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


if __name__ == "__main__":
    sys.exit(run(sys.argv, [("ids", IDS), ("mask", MASK), ("x", X), ("u", U)], expected,
                 "ScatterElements (add) matches"))
