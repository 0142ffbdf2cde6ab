#!/usr/bin/env python3
"""Checks a compiled model's trainable params against PyTorch's. Standard library only.

    param_names.py plan NAME SIDECAR < module.mlir
        the trainable `graph.param`s of the module (rpc-compile --emit=graph, train, layers,
        stages or schedule) are, one for one, the parameters of the PyTorch sidecar
        (reference.safetensors: `grad.<param>` for every parameter of the exported module; a
        tied embedding is one); prints "NAME: N params, as PyTorch's", or the names only one
        side has and exit 1
    param_names.py changed BEFORE AFTER NAME...
        each named tensor holds different values in the two safetensors files (initial
        weights, a checkpoint); prints "changed: NAME..." or exit 1 naming one that did not
"""
import re
import sys

from compare_lora_frozen import read  # a safetensors file: name -> raw bytes

PARAM = re.compile(r'^\s*graph\.param @("(?:[^"\\]|\\.)*"|[\w.$-]+) trainable ')


def plan(name, sidecar):
    params = set()
    for line in sys.stdin:
        m = PARAM.match(line)
        if m:
            params.add(m.group(1).strip('"'))
    reference = {k[len("grad."):] for k in read(sidecar) if k.startswith("grad.")}
    if not params or params != reference:
        print(f"{name}: params differ from PyTorch's: only in the plan {sorted(params - reference)}, "
              f"only in PyTorch {sorted(reference - params)}")
        return 1
    print(f"{name}: {len(params)} params, as PyTorch's")
    return 0


def changed(before, after, names):
    b, a = read(before), read(after)
    for name in names:
        if b[name] == a[name]:
            print(f"changed: {name} did not change")
            return 1
    print("changed: " + " ".join(names))
    return 0


def main():
    if sys.argv[1:2] == ["plan"] and len(sys.argv) == 4:
        return plan(sys.argv[2], sys.argv[3])
    if sys.argv[1:2] == ["changed"] and len(sys.argv) >= 5:
        return changed(sys.argv[2], sys.argv[3], sys.argv[4:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
