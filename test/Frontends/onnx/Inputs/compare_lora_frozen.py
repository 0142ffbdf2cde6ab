"""Checks a LoRA run's checkpoint against its start weights.

Usage: compare_lora_frozen.py START.safetensors TRAINED.safetensors

Every adapter (a name containing ".lora_") must have changed and every other param must be
bit-identical; prints "<n> adapters changed, <m> frozen params unchanged" or exits 1 naming
the first offender. Standard library only (reads the safetensors header and raw bytes).
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}


def main():
    start, trained = read(sys.argv[1]), read(sys.argv[2])
    if set(start) != set(trained):
        print("tensor names differ:", sorted(set(start) ^ set(trained)))
        return 1
    adapters = frozen = 0
    for name in sorted(start):
        changed = start[name] != trained[name]
        if ".lora_" in name:
            if not changed:
                print("adapter unchanged:", name)
                return 1
            adapters += 1
        else:
            if changed:
                print("frozen param changed:", name)
                return 1
            frozen += 1
    print(f"{adapters} adapters changed, {frozen} frozen params unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
