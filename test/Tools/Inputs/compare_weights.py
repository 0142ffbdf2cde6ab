"""Compares the tensors of two weight sources for rp-run's --export-hf tests. Standard library
only. A source is a safetensors file, a directory (every *.safetensors in it) or an index
(*.index.json: the shards it names). Values F32, BF16 and F16 are read as floats.

  compare_weights.py same GOT WANT [--rel R] [--abs A]
      every tensor of WANT is in GOT with the same shape and values (|got - want| <= R |want|
      + A; R = A = 0: bit-exact floats), and GOT holds no other tensor; prints "same: N
      tensors". --rel-max M adds M * max |want| of the tensor to the bound (relative to the
      tensor's scale: elements near zero after cancellation). --rel-norm N instead bounds the
      tensor as a whole: ||got - want||_2 <= N ||want||_2 (the usual relative error of a
      vector; no element bound)
  compare_weights.py peft ADAPTER CKPT
      ADAPTER/adapter_model.safetensors holds, for every "<W>.lora_A" [in, r] / "<W>.lora_B"
      [r, out] of CKPT (x @ W) and every "<M>.lora_A.weight" / "<M>.lora_B.weight" (x @ W^T),
      "base_model.model.<M or W without .weight>.lora_A.weight" = A^T and "...lora_B.weight"
      = B^T, exactly, and nothing else
  compare_weights.py merged GOT CKPT ALPHA
      GOT holds every non-adapter tensor of CKPT, each adapted W replaced by
      W + ALPHA / r * A @ B (x @ W) or W + ALPHA / r * (A @ B)^T (x @ W^T) (relative 1e-6 of
      max |W|), and no adapter tensor
Exit 1 with a message on the first difference.
"""
import array
import json
import os
import struct
import sys


def decode(dtype, raw):
    if dtype == "F32":
        return list(array.array("f", raw))
    if dtype == "BF16":
        bits = array.array("H", raw)
        return list(array.array("f", array.array("I", [b << 16 for b in bits]).tobytes()))
    if dtype == "F16":
        return [struct.unpack("<e", raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    sys.exit(f"unsupported dtype {dtype}")


def read_file(path, out):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = (e["shape"], decode(e["dtype"], data[8 + n + b:8 + n + end]))


def read(source):
    out = {}
    if os.path.isdir(source):
        files = [os.path.join(source, f) for f in sorted(os.listdir(source))
                 if f.endswith(".safetensors")]
    elif source.endswith(".json"):
        index = json.load(open(source))
        base = os.path.dirname(source)
        files = [os.path.join(base, f) for f in sorted(set(index["weight_map"].values()))]
    else:
        files = [source]
    for f in files:
        read_file(f, out)
    return out


def fail(message):
    print("compare_weights: " + message)
    sys.exit(1)


def expect_close(name, got, want, rel, tol=0.0):
    if got[0] != want[0]:
        fail(f"{name}: shape {got[0]} != {want[0]}")
    for i, (g, w) in enumerate(zip(got[1], want[1])):
        if (g != w) if rel == 0 and tol == 0 else abs(g - w) > rel * abs(w) + tol:
            fail(f"{name}[{i}]: {g!r} != {w!r}")


def expect_close_norm(name, got, want, bound):
    if got[0] != want[0]:
        fail(f"{name}: shape {got[0]} != {want[0]}")
    diff = sum((g - w) ** 2 for g, w in zip(got[1], want[1])) ** 0.5
    norm = sum(w * w for w in want[1]) ** 0.5
    if not diff <= bound * norm:
        fail(f"{name}: ||got - want|| = {diff!r} > {bound!r} ||want|| = {bound * norm!r}")


def transpose(shape, values):
    rows, cols = shape
    return [cols, rows], [values[r * cols + c] for c in range(cols) for r in range(rows)]


def main():
    mode = sys.argv[1]
    if mode == "same":
        rel = float(sys.argv[sys.argv.index("--rel") + 1]) if "--rel" in sys.argv else 0.0
        tol = float(sys.argv[sys.argv.index("--abs") + 1]) if "--abs" in sys.argv else 0.0
        got, want = read(sys.argv[2]), read(sys.argv[3])
        if set(got) != set(want):
            fail(f"names differ: only in got {sorted(set(got) - set(want))}, "
                 f"only in want {sorted(set(want) - set(got))}")
        rel_max = float(sys.argv[sys.argv.index("--rel-max") + 1]) if "--rel-max" in sys.argv else 0.0
        if "--rel-norm" in sys.argv:
            bound = float(sys.argv[sys.argv.index("--rel-norm") + 1])
            for name in sorted(want):
                expect_close_norm(name, got[name], want[name], bound)
            print(f"same: {len(want)} tensors")
            return
        for name in sorted(want):
            scale = max((abs(x) for x in want[name][1]), default=0.0)
            expect_close(name, got[name], want[name], rel, tol + rel_max * scale)
        print(f"same: {len(want)} tensors")
    elif mode == "peft":
        got = read(os.path.join(sys.argv[2], "adapter_model.safetensors"))
        ckpt = read(sys.argv[3])
        want = {}
        for name, value in ckpt.items():
            for part in ("lora_A", "lora_B"):
                if name.endswith(f".{part}.weight"):
                    module = name[:-len(part) - 8]
                elif name.endswith("." + part):
                    w = name[:-len(part) - 1]
                    module = w[:-len(".weight")] if w.endswith(".weight") else w
                else:
                    continue
                want[f"base_model.model.{module}.{part}.weight"] = transpose(*value)
        if set(got) != set(want):
            fail(f"adapter names {sorted(got)} != {sorted(want)}")
        for name in sorted(want):
            expect_close(name, got[name], want[name], 0)
        print(f"peft: {len(want)} tensors")
    elif mode == "merged":
        got, ckpt, alpha = read(sys.argv[2]), read(sys.argv[3]), float(sys.argv[4])
        plain = {n: v for n, v in ckpt.items() if ".lora_" not in n}
        if set(got) != set(plain):
            fail(f"merged names {sorted(got)} != {sorted(plain)}")
        for name, (shape, w) in plain.items():
            module = name[:-len(".weight")] if name.endswith(".weight") else name
            for prefix, transposed in ((name + ".lora_", False), (module + ".lora_", True)):
                suffix = ".weight" if transposed else ""
                if prefix + "A" + suffix not in ckpt:
                    continue
                (n_in, r), a = ckpt[prefix + "A" + suffix]
                (_, n_out), b = ckpt[prefix + "B" + suffix]
                delta = [[alpha / r * sum(a[i * r + k] * b[k * n_out + o] for k in range(r))
                          for o in range(n_out)] for i in range(n_in)]
                if transposed:  # W [out, in]
                    w = [w[o * n_in + i] + delta[i][o] for o in range(n_out) for i in range(n_in)]
                else:  # W [in, out]
                    w = [w[i * n_out + o] + delta[i][o] for i in range(n_in) for o in range(n_out)]
                break
            tol = 1e-6 * max(abs(x) for x in w)
            for i, (g, x) in enumerate(zip(got[name][1], w)):
                if abs(g - x) > tol:
                    fail(f"{name}[{i}]: {g!r} != {x!r}")
        print(f"merged: {len(plain)} tensors")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
