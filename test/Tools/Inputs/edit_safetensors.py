"""Writes a damaged copy of a safetensors file for rp-run's bad-input tests.

  edit_safetensors.py drop IN OUT NAME      without tensor NAME
  edit_safetensors.py reshape IN OUT NAME   tensor NAME flattened to one dimension
"""
import json
import struct
import sys


def main():
    mode, src, dst, name = sys.argv[1:5]
    data = open(src, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    if mode == "drop":
        del header[name]
    elif mode == "reshape":
        count = 1
        for d in header[name]["shape"]:
            count *= d
        header[name]["shape"] = [count]
    else:
        sys.exit("unknown mode " + mode)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + body)


if __name__ == "__main__":
    main()
