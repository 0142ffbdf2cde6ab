#!/usr/bin/env python3
"""The PyTorch side of the CPU benchmark (bench/run_cpu.sh): transformers' Qwen3 of the shape of
examples/qwen3-tiny, trained on the CPU in eager mode with the main job's step.

    python3 bench/torch_cpu_baseline.py --config examples/qwen3-tiny/config.json \
        --data fortunes.bin [--threads 2] [--micro-batches 4] [--batch 4] [--seq 64] \
        [--steps 30] [--warmup 5] [--lr 2e-3] [--json-out FILE]

Model: Qwen3ForCausalLM from --config (random init, LM head tied to the embedding as in the
example; sdpa attention), fp32, torch.set_num_threads(--threads) (intra-op) and one inter-op
thread. Step: --micro-batches micro-batches of --batch x --seq tokens, each a window of
--seq + 1 consecutive tokens of --data (an llm.c token file: 256 x int32 header, magic
20240520, version 1 = uint16 ids) at a random offset; per micro-batch forward + mean
cross-entropy over every position / M + backward (gradients accumulate), then torch.optim.AdamW
(betas 0.9 / 0.999, eps 1e-8, weight decay 0: rpc-compile's defaults) and zero_grad -- the
plan's step (rp-run, sync update, no clipping).

Measured: --warmup untimed steps, then --steps steps each timed with time.perf_counter();
tokens/s = tokens per step / the median step time. Prints one JSON line (and writes it to
--json-out).
"""
import argparse
import json
import statistics
import struct
import sys
import time


def load_tokens(path):
    """The ids of an llm.c token file (version 1: uint16) as a 1-D int64 tensor."""
    import numpy as np
    import torch
    with open(path, "rb") as f:
        header = f.read(256 * 4)
        magic, version, count = struct.unpack("<3i", header[:12])
        if magic != 20240520 or version not in (1, 2):
            raise SystemExit(f"torch_cpu_baseline: {path}: not an llm.c token file "
                             f"(magic {magic}, version {version})")
        dtype = np.uint16 if version == 1 else np.uint32
        ids = np.frombuffer(f.read(), dtype=dtype, count=count)
    return torch.from_numpy(ids.astype(np.int64))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the model's config.json")
    p.add_argument("--data", required=True, help="llm.c token file")
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--batch", type=int, default=4, help="sequences per micro-batch")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json-out", help="also write the result line to this file")
    args = p.parse_args()
    if min(args.threads, args.micro_batches, args.batch, args.seq, args.steps) < 1 or \
            args.warmup < 0:
        raise SystemExit("torch_cpu_baseline: --threads, --micro-batches, --batch, --seq and "
                         "--steps must be positive, --warmup non-negative")

    import torch
    import torch.nn.functional as F
    import transformers

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    config = transformers.Qwen3Config.from_json_file(args.config)
    config.use_cache = False
    config._attn_implementation = "sdpa"
    model = transformers.Qwen3ForCausalLM(config).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    tokens = load_tokens(args.data)
    window = args.seq + 1
    if tokens.numel() < window:
        raise SystemExit(f"torch_cpu_baseline: {args.data} has fewer than {window} tokens")
    gen = torch.Generator().manual_seed(args.seed + 1)
    mb = args.micro_batches
    tokens_per_step = mb * args.batch * args.seq

    def step():
        total = 0.0
        for _ in range(mb):
            starts = torch.randint(0, tokens.numel() - window + 1, (args.batch,), generator=gen)
            rows = torch.stack([tokens[s:s + window] for s in starts.tolist()])
            x, y = rows[:, :-1], rows[:, 1:]
            logits = model(input_ids=x, use_cache=False).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            (loss / mb).backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total / mb

    first = None
    for _ in range(args.warmup):
        loss = step()
        first = loss if first is None else first
    times, loss = [], None
    for _ in range(args.steps):
        t = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t)
    median = statistics.median(times)
    result = {
        "system": "pytorch-eager-cpu", "threads": args.threads, "micro_batches": mb,
        "batch": args.batch, "seq": args.seq, "tokens_per_step": tokens_per_step,
        "warmup_steps": args.warmup, "timed_steps": args.steps,
        "step_s_median": median, "step_s_mean": sum(times) / len(times),
        "tokens_per_s": tokens_per_step / median, "loss_first": first, "loss_last": loss,
        "params": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__, "transformers": transformers.__version__,
    }
    line = json.dumps(result)
    print(line)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
