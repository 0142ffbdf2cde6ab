#!/usr/bin/env python3
"""Inputs and expected outputs of onnx-ops.onnxtext.

    onnx_ops_check.py input DIR     writes DIR/input_{0,1}.pb: x float32 [2, 5] (values on a
                                    grid of quarters, both signs), pos int64 [2, 6] (positions
                                    of both signs)
    onnx_ops_check.py compare DIR   compares DIR/output_<n>.pb with numpy (softplus within
                                    1e-6 relative; the rest exactly), prints 'Softplus, Floor,
                                    Mod and CumSum match'
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

from pb_check import run

X = np.array([[-3.25, -1.5, 0.0, 0.75, 2.5], [4.0, -0.25, 1.25, -2.75, 3.5]], dtype=np.float32)
POS = np.array([[0, 1, 5, 7, 12, 13], [-1, -5, 6, 9, -8, 2]], dtype=np.int64)
D = np.array([1.5, -1.5, 2, -2.5, 0.75], dtype=np.float32)
NEG = np.array([-4, 4, -4, 4, -3, 3], dtype=np.int64)
P = np.arange(6, dtype=np.int64)


def cumsum(x, axis, exclusive=False, reverse=False):
    x = np.flip(x, axis) if reverse else x
    s = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        s = s - x
    return np.flip(s, axis) if reverse else s


def expected():
    return [np.log1p(np.exp(X.astype(np.float64))).astype(np.float32), np.floor(X),
            np.mod(POS, 4), np.fmod(POS, NEG), np.mod(X, D), np.fmod(X, D),
            cumsum(X, 1), cumsum(X, 1, exclusive=True), cumsum(X, 0, True, True),
            cumsum(POS, 1, reverse=True), np.mod(P, 3),
            np.floor(np.array([0.5, 3.5, -1.25], dtype=np.float32)), np.cumsum(P)]


if __name__ == "__main__":
    if sys.argv[1] == "compare":
        # softplus goes through exp and log1p: compare it within 1e-6 relative first, then
        # the others exactly (pb_check.run), with the reference softplus replaced by the file's.
        t = TensorProto()
        with open(os.path.join(sys.argv[2], "output_0.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t)
        want = expected()[0]
        if not np.allclose(got, want, rtol=1e-6, atol=0):
            print(f"softplus: got {got.tolist()}, want {want.tolist()}")
            sys.exit(1)
        softplus = got
        sys.exit(run(sys.argv, [], lambda: [softplus] + expected()[1:],
                     "Softplus, Floor, Mod and CumSum match"))
    sys.exit(run(sys.argv, [("x", X), ("pos", POS)], expected,
                 "Softplus, Floor, Mod and CumSum match"))
