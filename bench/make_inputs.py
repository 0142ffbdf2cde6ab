#!/usr/bin/env python3
"""Make the benchmark's inputs where the plan runs: the initial weights and a token file.

    python3 bench/make_inputs.py --params PLANS/params.json --weights W.safetensors \
        --tokens T.bin [--num-tokens 16777216] [--vocab 151936] [--seed 0] [--threads 16]

The weights of a 2 B-parameter model (8.1 GB as f32) cannot travel to the GPU machine, so this
script writes them there, in seconds, with numpy alone:

  --params   the safetensors header of the weights rpc-compile wrote beside the plan
             (bench/export_qwen3_1p7b.sh saves it as plans/params.json): every param's name,
             dtype and shape, in the plan's order. rp-run checks the weights against the plan
             (runtime/plan/Weights.h: one tensor per param, named as the param, F32 for
             floating-point params, the exact shape); extra tensors are ignored.
  --weights  the safetensors file written: the same header (offsets recomputed), data filled
             like Hugging Face's Qwen3 init: 1-D tensors (RMSNorm weights) ones, every other
             float tensor with std 0.02 (initializer_range): --init uniform (default:
             U(-0.02 sqrt 3, 0.02 sqrt 3), 12x faster to draw than numpy's normal) or normal
             (N(0, 0.02), HF's exact distribution), from numpy Generators seeded per chunk
             (SeedSequence(seed).spawn), one chunk per thread at a time. Integer tensors (none
             in Qwen3) are zeros. 8.1 GB (Qwen3-1.7B's 2.03 B f32 params): 47 s with --init
             normal on this project's 2-core machine.
  --tokens   an llm.c token file (runtime/data/TokenFile.h: a header of 256 little-endian
             int32, [0] magic, [1] version: 20240520 / 1 = uint16 tokens, 20240801 / 7 = uint32
             tokens as llm.c's Llama-3 files, [2] the token count; then the tokens), uniform
             random ids in [0, vocab): uint32
             when vocab > 65536 (Qwen3's 151936).

Prints one JSON line: sizes and seconds. Needs Python 3.8+ and numpy only.
"""
import argparse
import concurrent.futures
import json
import os
import struct
import sys
import time

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
          "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
TOKEN_MAGIC_U16, TOKEN_MAGIC_U32 = 20240520, 20240801
CHUNK = 1 << 24  # elements per fill task


def read_header(path):
    with open(path, "rb") as f:
        head = f.read(8)
    if head[:1] == b"{":  # a JSON file (plans/params.json)
        with open(path) as f:
            return json.load(f)
    (n,) = struct.unpack("<Q", head)  # a safetensors file: use its header
    with open(path, "rb") as f:
        f.seek(8)
        return json.loads(f.read(n))


def write_weights(header, path, seed, threads, std, init):
    tensors = [(k, v) for k, v in header.items() if k != "__metadata__"]
    tensors.sort(key=lambda kv: kv[1]["data_offsets"][0])  # the plan's (rpc-compile's) order
    out_header, offset = {}, 0
    for name, t in tensors:
        if t["dtype"] not in DTYPES:
            raise SystemExit(f"make_inputs: tensor {name}: dtype {t['dtype']} not handled")
        nbytes = int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(DTYPES[t["dtype"]]).itemsize
        out_header[name] = {"dtype": t["dtype"], "shape": t["shape"],
                            "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    out_header["__metadata__"] = {"format": "pt", "producer": "bench/make_inputs.py",
                                  "init": f"{init}, std {std}; norms ones", "seed": str(seed)}
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    base = 8 + len(text)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(base + offset)
    data = np.memmap(tmp, dtype=np.uint8, mode="r+", offset=base, shape=(offset,)) \
        if offset else None
    # Fill tasks: (view, kind, chunk index) over every tensor; normal chunks get their own seed.
    tasks = []
    for name, _ in tensors:
        t = out_header[name]
        dtype = np.dtype(DTYPES[t["dtype"]])
        begin, end = t["data_offsets"]
        flat = data[begin:end].view(dtype)
        if len(t["shape"]) <= 1 and dtype.kind == "f":
            tasks.append((flat, "ones"))
        elif dtype.kind == "f":
            for i in range(0, flat.size, CHUNK):
                tasks.append((flat[i:i + CHUNK], "normal"))
        # integer / bool tensors stay zero (the file is created zero-filled)
    seeds = np.random.SeedSequence(seed).spawn(max(1, len(tasks)))

    def fill(i):
        view, kind = tasks[i]
        if kind == "ones":
            view[:] = 1
        else:
            rng = np.random.Generator(np.random.PCG64(seeds[i]))
            native = view.dtype in (np.float32, np.float64)
            if init == "normal":  # the Generator methods release the GIL
                if native:
                    rng.standard_normal(out=view, dtype=view.dtype)
                else:
                    view[:] = rng.standard_normal(view.size, dtype=np.float32)
                view *= std
            else:  # uniform on [-a, a), a = std * sqrt(3): the same standard deviation
                if native:
                    rng.random(out=view, dtype=view.dtype)
                else:
                    view[:] = rng.random(view.size, dtype=np.float32)
                view -= 0.5
                view *= 2 * std * 3 ** 0.5

    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(fill, range(len(tasks))))
    if data is not None:
        data.flush()  # msync: the data is in the file (no fsync: a scratch file for a benchmark)
        del data
    os.replace(tmp, path)
    return len(tensors), base + offset


def write_tokens(path, count, vocab, seed):
    magic, version, dtype = ((TOKEN_MAGIC_U16, 1, np.uint16) if vocab <= 65536
                             else (TOKEN_MAGIC_U32, 7, np.uint32))
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed + 1)))
    tokens = rng.integers(0, vocab, size=count, dtype=dtype)
    header = np.zeros(256, dtype="<i4")
    header[0], header[1], header[2] = magic, version, count
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.astype(np.dtype(dtype).newbyteorder("<"), copy=False).tobytes())
    os.replace(tmp, path)
    return 1024 + count * np.dtype(dtype).itemsize


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", required=True,
                   help="plans/params.json (or any safetensors file with the plan's params)")
    p.add_argument("--weights", help="the safetensors file to write")
    p.add_argument("--tokens", help="the llm.c token file to write")
    p.add_argument("--num-tokens", type=int, default=1 << 24)
    p.add_argument("--vocab", type=int, default=None,
                   help="token ids in [0, vocab) (default: rows of model.embed_tokens.weight)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--std", type=float, default=0.02, help="std of the init")
    p.add_argument("--init", choices=["uniform", "normal"], default="uniform")
    p.add_argument("--threads", type=int, default=min(16, os.cpu_count() or 1))
    args = p.parse_args()

    header = read_header(args.params)
    result = {}
    if args.weights:
        t0 = time.time()
        n, size = write_weights(header, args.weights, args.seed, args.threads, args.std,
                                args.init)
        result.update(weights=args.weights, tensors=n, weights_bytes=size,
                      weights_s=round(time.time() - t0, 2))
    if args.tokens:
        vocab = args.vocab
        if vocab is None:
            emb = header.get("model.embed_tokens.weight")
            if not emb:
                raise SystemExit("make_inputs: no model.embed_tokens.weight in --params; pass --vocab")
            vocab = emb["shape"][0]
        t0 = time.time()
        size = write_tokens(args.tokens, args.num_tokens, vocab, args.seed)
        result.update(tokens=args.tokens, num_tokens=args.num_tokens, vocab=vocab,
                      tokens_bytes=size, tokens_s=round(time.time() - t0, 2))
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
