#!/usr/bin/env python3
"""The batch of a PyTorch sidecar (examples/export reference.safetensors) as rp-ref inputs.

    sidecar_inputs.py SIDECAR DIR   writes DIR/input_0.pb (input.input_ids) and DIR/input_1.pb
                                    (input.labels), int64, as ONNX TensorProtos
Standard library, numpy and onnx only (reads the safetensors header and raw bytes).
"""
import json
import os
import struct
import sys

import numpy as np
from onnx import numpy_helper


def main():
    src, directory = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        body = f.read()
    os.makedirs(directory, exist_ok=True)
    for i, name in enumerate(["input.input_ids", "input.labels"]):
        entry = header[name]
        if entry["dtype"] != "I64":
            sys.exit(f"{src}: {name} is {entry['dtype']}, expected I64")
        begin, end = entry["data_offsets"]
        value = np.frombuffer(body[begin:end], dtype="<i8").reshape(entry["shape"])
        with open(os.path.join(directory, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, name.split(".")[1]).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
