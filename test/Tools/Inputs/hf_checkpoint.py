"""Writes Hugging Face style copies of an f32 safetensors file for rp-run's --weights tests.
Standard library only; the format: an 8-byte little-endian header length, a JSON header, then
the raw little-endian bytes of the tensors.

  hf_checkpoint.py round IN OUT
      OUT: IN with every F32 value rounded to bfloat16 (nearest, ties to even), still F32
  hf_checkpoint.py shard IN DIR N [--dtype BF16|F64] [--extra] [--drop NAME]
      DIR/model-0000k-of-0000N.safetensors: IN's tensors (sorted by name, split into N runs)
      converted to DTYPE (default BF16; BF16 rounds to nearest even, exact after `round`),
      and DIR/model.safetensors.index.json mapping each tensor to its shard; --extra adds a
      tensor "extra.rotary_emb.inv_freq" to the last shard, --drop leaves NAME out of both
"""
import argparse
import array
import json
import os
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n :]
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {entry['dtype']}, not F32")
        begin, end = entry["data_offsets"]
        values = array.array("f")
        values.frombytes(body[begin:end])
        if sys.byteorder != "little":
            values.byteswap()
        tensors[name] = (entry["shape"], values)
    return tensors


def to_bf16(values):
    """The bfloat16 bit patterns of `values` (round to nearest even; the inputs are finite)."""
    bits = array.array("I")
    bits.frombytes(values.tobytes())
    return array.array("H", [((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF for b in bits])


def encode(values, dtype):
    if dtype == "F32":
        out = values
    elif dtype == "BF16":
        out = to_bf16(values)
    elif dtype == "F64":
        out = array.array("d", values)
    if sys.byteorder != "little":
        out = array.array(out.typecode, out)
        out.byteswap()
    return out.tobytes()


def write(path, tensors, dtype):
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (shape, values) in tensors:
        raw = encode(values, dtype)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["round", "shard"])
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("shards", type=int, nargs="?", default=1)
    p.add_argument("--dtype", default="BF16", choices=["BF16", "F64"])
    p.add_argument("--extra", action="store_true")
    p.add_argument("--drop")
    args = p.parse_args()
    tensors = read(args.src)
    if args.mode == "round":
        rounded = {}
        for name, (shape, values) in tensors.items():
            bits = array.array("I", [b << 16 for b in to_bf16(values)])
            exact = array.array("f")
            exact.frombytes(bits.tobytes())
            rounded[name] = (shape, exact)
        write(args.dst, sorted(rounded.items()), "F32")
        return
    names = sorted(n for n in tensors if n != args.drop)
    items = [(n, tensors[n]) for n in names]
    os.makedirs(args.dst, exist_ok=True)
    count = args.shards
    per = -(-len(items) // count)
    weight_map = {}
    for k in range(count):
        shard = f"model-{k + 1:05d}-of-{count:05d}.safetensors"
        part = items[k * per : (k + 1) * per]
        if args.extra and k == count - 1:
            part = part + [("extra.rotary_emb.inv_freq", ([4], array.array("f", [1, 2, 3, 4])))]
        write(os.path.join(args.dst, shard), part, args.dtype)
        weight_map.update({name: shard for name, _ in part})
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    with open(os.path.join(args.dst, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)


if __name__ == "__main__":
    main()
