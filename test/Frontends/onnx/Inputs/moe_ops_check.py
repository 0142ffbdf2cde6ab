#!/usr/bin/env python3
"""Inputs and expected outputs of moe-ops.onnxtext.

    moe_ops_check.py input DIR     writes DIR/input_{0,1}.pb: x float32 [3, 5] (distinct
                                   values, ties none), w float32 [5, 2, 3]
    moe_ops_check.py compare DIR   compares DIR/output_{0..8}.pb with numpy (exactly: every op
                                   selects or copies), prints 'TopK, GatherND, Tile and Clip match'
"""
import sys

import numpy as np

from pb_check import run

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


if __name__ == "__main__":
    sys.exit(run(sys.argv, [("x", X), ("w", W)], expected,
                 "TopK, GatherND, Tile and Clip match"))
