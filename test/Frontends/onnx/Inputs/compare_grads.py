#!/usr/bin/env python3
"""Compares two `rp-ref --grads` output directories (loss.pb, grad_<param>.pb).

    compare_grads.py A B PATTERN TOL   every grad_*.pb of A must exist in B with the same shape
                                       and max|a - b| <= TOL * max(max|b|, 1e-30); prints
                                       'N gradients agree (M matching PATTERN, all non-zero)'
                                       where the M gradients whose file names contain PATTERN
                                       must be non-zero in both; exit 1 naming the first
                                       offender otherwise
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper


def load(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).astype(np.float64)


def main():
    a_dir, b_dir, pattern, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    names = sorted(n for n in os.listdir(a_dir) if n.startswith("grad_"))
    matching = 0
    for name in names + ["loss.pb"]:
        a, b = load(os.path.join(a_dir, name)), load(os.path.join(b_dir, name))
        if a.shape != b.shape:
            print(f"{name}: shapes {a.shape} and {b.shape}")
            return 1
        scale = max(np.abs(b).max(initial=0.0), 1e-30)
        err = np.abs(a - b).max(initial=0.0) / scale
        if err > tol:
            print(f"{name}: normalised difference {err:.3g} > {tol}")
            return 1
        if pattern in name:
            if not (np.abs(a).max(initial=0.0) > 0 and np.abs(b).max(initial=0.0) > 0):
                print(f"{name}: zero gradient")
                return 1
            matching += 1
    print(f"{len(names)} gradients agree ({matching} matching {pattern}, all non-zero)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
