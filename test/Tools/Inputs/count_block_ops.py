#!/usr/bin/env python3
"""Counts the instructions of one transformer block in `rpc-compile --emit=schedule` output.

    count_block_ops.py SCHEDULE.mlir [--block block_0] [--max N]

For @<block>_fwd and @<block>_bwd: the ops other than GEMMs and attention (graph.matmul,
graph.attention, graph.attention_vjp) and other than what moves no data (graph.load_param,
graph.constant, and a graph.reshape that rp-plan-memory made an alias: its result at its
operand's workspace offset, so its kernel copies nothing), by kind. Prints one line per
function and a total; with --max, exits 1 when the total exceeds N.
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
        ops, offsets, aliased = collections.Counter(), {}, 0
        for results, op, operand, attrs in re.findall(
                r"^\s*(%[^=]+?) = graph\.(\w+) (%[\w#]+)?[^{\n]*(\{[^\n]*)?",
                body(text, f"{a.block}_{part}"), re.M):
            at = re.search(r"schedule\.offsets = array<i64: ([-\d, ]+)>", attrs or "")
            places = at.group(1).split(", ") if at else []
            # "%5:2" (results %5#0, %5#1) or "%a, %b" (named results), each at its offset.
            names = [n.strip() for n in results.split(",")]
            if len(names) == 1 and ":" in names[0]:
                base, count = names[0].split(":")
                names = [f"{base}#{i}" for i in range(int(count))]
            for i, name in enumerate(names):
                offsets[name] = places[i] if i < len(places) else None
            if op in FREE:
                continue
            if (op == "reshape" and places and places[0] != "-1"
                    and offsets.get(operand) == places[0]):
                aliased += 1
                continue
            ops[op] += 1
        n = sum(ops.values())
        total += n
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"{a.block}_{part}: {n} ({kinds}); {aliased} reshapes aliased")
    print(f"{a.block}: {total} instructions other than GEMMs and attention")
    if a.max is not None and total > a.max:
        print(f"count_block_ops: {total} > {a.max}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
