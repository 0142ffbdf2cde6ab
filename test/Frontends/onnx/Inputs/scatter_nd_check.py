#!/usr/bin/env python3
"""Inputs and expected outputs of scatter-nd.onnxtext.

    scatter_nd_check.py input DIR     writes DIR/input_{0..3}.pb: k float32 [4, 3, 2], rot
                                      float32 [2, 2, 2], r int64 [2, 1] (a repeated row, one
                                      negative), u float32 [2, 3, 2]
    scatter_nd_check.py compare DIR   compares DIR/output_{0,1,2}.pb with numpy's in-order
                                      writes (none) and np.add.at (add), exactly, prints
                                      'ScatterND (none, add) matches'
"""
import sys

import numpy as np

from pb_check import run

K = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
ROT = -np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
R = np.array([[-1], [3]], dtype=np.int64)
U = 100 + np.arange(12, dtype=np.float32).reshape(2, 3, 2)
IDX = np.array([[[0, 0], [1, 1]], [[2, 2], [-1, 0]]])  # the graph's constant


def expected():
    y0 = K.copy()
    for t in np.ndindex(IDX.shape[:-1]):
        y0[tuple(IDX[t])] = ROT[t]
    y1 = K.copy()
    for t in np.ndindex(R.shape[:-1]):  # in order: the repeated row keeps the last
        y1[tuple(R[t])] = U[t]
    y2 = K.copy()
    np.add.at(y2, R[:, 0], U)
    return [y0, y1, y2]


if __name__ == "__main__":
    sys.exit(run(sys.argv, [("k", K), ("rot", ROT), ("r", R), ("u", U)], expected,
                 "ScatterND (none, add) matches"))
