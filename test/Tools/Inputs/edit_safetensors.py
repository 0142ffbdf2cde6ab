"""Writes an edited copy of a safetensors file (rp-run's bad-input tests, rp-ref's sidecars).

  edit_safetensors.py drop IN OUT NAME      without tensor NAME
  edit_safetensors.py reshape IN OUT NAME   tensor NAME flattened to one dimension
  edit_safetensors.py perturb IN OUT NAME   float32 tensor NAME with 1% of its largest
                                            magnitude added to its first element
  edit_safetensors.py rename IN OUT NAME NEW
                                            tensor NAME called NEW
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
    elif mode == "perturb":
        begin, end = header[name]["data_offsets"]
        values = struct.unpack("<%df" % ((end - begin) // 4), body[begin:end])
        delta = 0.01 * max(abs(v) for v in values) or 1.0
        body = body[:begin] + struct.pack("<f", values[0] + delta) + body[begin + 4 :]
    elif mode == "rename":
        header[sys.argv[5]] = header.pop(name)
    else:
        sys.exit("unknown mode " + mode)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + body)


if __name__ == "__main__":
    main()
