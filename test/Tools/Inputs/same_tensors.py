"""same_tensors.py A B: exit 0 when two safetensors files hold the same tensors byte for byte
(the same header entries and data), ignoring the "__metadata__" entry (a checkpoint's step)."""
import json
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    return header, blob[8 + n:]


a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    sys.exit("%s and %s hold different tensors" % (sys.argv[1], sys.argv[2]))
