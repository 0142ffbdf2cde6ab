"""Copies safetensors file SRC to DST with the first element of F32 tensor NAME set to NaN (a
weight rp-run cannot quantize). Standard library only.

  poison.py SRC DST NAME
"""
import json
import struct
import sys

src, dst, name = sys.argv[1:4]
with open(src, "rb") as f:
    data = bytearray(f.read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
entry = header[name]
if entry["dtype"] != "F32":
    sys.exit(f"{name} is {entry['dtype']}, expected F32")
at = 8 + n + entry["data_offsets"][0]
data[at:at + 4] = struct.pack("<f", float("nan"))
with open(dst, "wb") as f:
    f.write(data)
