#!/usr/bin/env python3
"""Counts the instructions of one transformer block in `rpc-compile --emit=schedule` output.

    count_block_ops.py SCHEDULE.mlir [--block block_0] [--max N]

For @<block>_fwd and @<block>_bwd: the ops other than GEMMs and attention (graph.matmul,
graph.attention, graph.attention_vjp) and other than what moves no data (graph.load_param,
graph.constant), by kind. Prints one line per function and a total; with --max, exits 1 when the
total exceeds N.
"""
import argparse
import collections
import re
import sys

FREE = {"matmul", "attention", "attention_vjp", "load_param", "constant"}


def body(text, name):
    m = re.search(r"func\.func @" + re.escape(name) + r"\(.*?\{\n(.*?)\n\s*return", text, re.S)
    if not m:
        sys.exit(f"count_block_ops: no function @{name}")
    return m.group(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("schedule")
    p.add_argument("--block", default="block_0")
    p.add_argument("--max", type=int)
    a = p.parse_args()
    text = open(a.schedule).read()
    total = 0
    for part in ("fwd", "bwd"):
        ops = collections.Counter(
            op for op in re.findall(r"=\s*graph\.(\w+)", body(text, f"{a.block}_{part}"))
            if op not in FREE)
        n = sum(ops.values())
        total += n
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"{a.block}_{part}: {n} ({kinds})")
    print(f"{a.block}: {total} instructions other than GEMMs and attention")
    if a.max is not None and total > a.max:
        print(f"count_block_ops: {total} > {a.max}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
