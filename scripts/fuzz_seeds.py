#!/usr/bin/env python3
"""Writes the seed corpus of one fuzz target (docs/FUZZING.md) into a directory.

    fuzz_seeds.py TARGET OUTDIR

Seeds come from the repository's own test inputs and examples (models, profiles, weights),
Debian's ONNX backend test models (libonnx-testdata), the plans the lit tests compiled (under
build*/test/), and a few small files synthesized here where the repository has none (token
files, checkpoint manifests, target flags). Targets whose first input byte selects a mode
(plan, tokens, target) get every seed once per mode. Standard library only.
"""
import glob
import hashlib
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_SEED_BYTES = 1 << 20  # larger files slow every mutation down; the small ones cover the format


def files(*patterns):
    out = []
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            if os.path.isfile(path) and os.path.getsize(path) <= MAX_SEED_BYTES:
                out.append(path)
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read()


def safetensors(tensors, metadata=None):
    """A safetensors file from {name: (dtype, shape, bytes)}."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def llmc_tokens(tokens, version):
    header = struct.pack("<3i", 20240520, version, len(tokens)) + b"\0" * (1024 - 12)
    fmt = "<%d%s" % (len(tokens), "H" if version == 1 else "I")
    return header + struct.pack(fmt, *tokens)


def masked_tokens(tokens, mask):
    """A masked token file (magic 20251126, version 1: uint16 tokens, then one mask byte each)."""
    header = struct.pack("<4i", 20251126, 1, len(tokens), len(mask)) + b"\0" * (1024 - 16)
    return header + struct.pack("<%dH" % len(tokens), *tokens) + bytes(mask)


def plan_inner(envelope):
    """The serialized Plan inside a PlanFile envelope (fields 1 fixed32, 2 varint, 3 fixed64,
    4 bytes), or None when the file is not an envelope."""
    i, n = 0, len(envelope)
    while i < n:
        tag = envelope[i]
        i += 1
        if tag == 0x0D:
            i += 4
        elif tag == 0x10 or tag == 0x22:
            value, shift = 0, 0
            while i < n:
                b = envelope[i]
                i += 1
                value |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            if tag == 0x22:
                return envelope[i:i + value]
        elif tag == 0x19:
            i += 8
        else:
            return None
    return None


def seeds(target):
    if target == "onnx":
        paths = files("test/**/*.onnx", "examples/**/*.onnx")
        paths += sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*/model.onnx"))
        return [read(p) for p in paths]
    if target == "onnxtext":
        return [read(p) for p in files("test/**/*.onnxtext")]
    if target == "plan":
        out = []
        for p in files("build*/test/**/*.rpplan"):
            whole = read(p)
            out.append(b"\x00" + whole)
            inner = plan_inner(whole)
            if inner is not None:
                out.append(b"\x01" + inner)
        return out
    if target == "safetensors":
        out = [read(p) for p in files("test/**/*.safetensors", "examples/**/*.safetensors")]
        f32 = struct.pack("<4f", 1, 2, 3, 4)
        out.append(safetensors({"w": ("F32", [2, 2], f32)}, {"format": "pt"}))
        out.append(safetensors({"a": ("BF16", [2], b"\x80\x3f\x00\x40"), "s": ("I64", [], b"\x07" + b"\0" * 7),
                                "e": ("F16", [0, 3], b"")}))
        out.append(safetensors({}))
        return out
    if target == "tokens":
        bodies = [llmc_tokens(list(range(40)), 1), llmc_tokens([263, 5, 9, 256] * 10, 2),
                  b"Hello, fuzzer. A few words of byte-level text for the sampler.\n" * 2,
                  masked_tokens([7, 3, 9, 256] * 10, [0, 0, 1, 1] * 10)]
        return [bytes([mode]) + body for body in bodies for mode in range(4)]
    if target == "checkpoint":
        base = {"format": "rpc-checkpoint", "version": 1, "step": 1, "model": "model-step1.safetensors",
                "optimizer": "optimizer-step1.safetensors", "metadata": {"seed": "7"}}
        variants = [base, dict(base, metadata={}), dict(base, model="../x.safetensors"), dict(base, version=2)]
        return [json.dumps(v, indent=1).encode() for v in variants]
    if target == "profile":
        return [read(p) for p in files("examples/profiles/*.json", "test/**/*profile*.json")]
    if target == "target":
        docs = [{"name": "rtx4090", "peak_tflops": 330, "hbm_gbps": 1008, "pcie_gbps": 32,
                 "memory_bytes": 25757220864}, {"name": "h100", "pcie_gbps": 55.5, "memory_bytes": 8e10}]
        flags = ["name=rtx4090,pcie_gbps=32,memory_bytes=24e9",
                 "name=a100,peak_tflops=312,pcie_gbps=25,memory_bytes=80e9,hbm_gbps=2039"]
        return [b"\x00" + json.dumps(d).encode() for d in docs] + [b"\x01" + f.encode() for f in flags]
    raise SystemExit("fuzz_seeds.py: unknown target '%s'" % target)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    target, outdir = sys.argv[1], sys.argv[2]
    data = seeds(target)
    os.makedirs(outdir, exist_ok=True)
    for blob in data:
        # libFuzzer's own naming: the SHA-1 of the content.
        with open(os.path.join(outdir, hashlib.sha1(blob).hexdigest()), "wb") as f:
            f.write(blob)
    print("fuzz_seeds: %d seeds for %s in %s" % (len(data), target, outdir))


if __name__ == "__main__":
    main()
