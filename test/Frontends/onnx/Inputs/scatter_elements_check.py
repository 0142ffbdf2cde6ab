#!/usr/bin/env python3
"""Inputs and expected outputs of scatter-elements.onnxtext.

    scatter_elements_check.py input DIR     writes DIR/input_{0..5}.pb: ids int64 [6] (expert
                                            ids with repeats), mask float32 [6], x float32
                                            [2, 3], u float32 [2, 2], top int64 [3, 2] (top-2
                                            experts of 3 tokens, one repeated, negative ones),
                                            w float32 [3, 2]
    scatter_elements_check.py compare DIR   compares DIR/output_{0..3}.pb with numpy's
                                            np.add.at (add) and in-order writes (none), exactly
                                            (small integers and halves), prints
                                            'ScatterElements (add, none) matches'
"""
import sys

import numpy as np

from pb_check import run

IDS = np.array([3, 1, 3, 0, 3, 1], dtype=np.int64)
MASK = np.array([1, 1, 0.5, 1, 1, 2], dtype=np.float32)
X = np.arange(6, dtype=np.float32).reshape(2, 3)
U = np.array([[10, 20], [30, 40]], dtype=np.float32)
COLS = np.array([[2, 0], [2, 2]])  # the graph's constant, -1 normalised
TOP = np.array([[4, 1], [0, -1], [2, 2]], dtype=np.int64)
W = np.array([[0.75, 0.25], [0.5, 0.5], [0.125, 0.875]], dtype=np.float32)


def expected():
    counts = np.zeros(4, dtype=np.float32)
    np.add.at(counts, IDS, MASK)
    rows = X.copy()
    for i in range(2):
        for j in range(2):
            rows[i, COLS[i, j]] += U[i, j]
    dense = np.zeros((3, 5), dtype=np.float32)
    chosen = np.zeros((3, 5), dtype=bool)
    for i in range(3):
        for j in range(2):  # in order: a repeated target keeps the later update
            dense[i, TOP[i, j]] = W[i, j]
            chosen[i, TOP[i, j]] = True
    return [counts, rows, dense, chosen]


if __name__ == "__main__":
    sys.exit(run(sys.argv, [("ids", IDS), ("mask", MASK), ("x", X), ("u", U), ("top", TOP),
                            ("w", W)], expected, "ScatterElements (add, none) matches"))
