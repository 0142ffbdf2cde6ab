"""Compares the per-step losses of two rp-run metrics logs (JSON lines).

  compare_losses.py A.jsonl B.jsonl RTOL

Prints one line per step and exits 1 unless both logs have the same steps and every loss of A
is within RTOL (relative) of B's.
"""
import json
import sys


def losses(path):
    with open(path) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f) if "loss" in r]


a, b, rtol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
ok = len(a) == len(b) and len(a) > 0
for (step, x), (_, y) in zip(a, b):
    rel = abs(x - y) / abs(y)
    ok = ok and rel <= rtol
    print(f"step {step}: {x:.9g} vs {y:.9g}: relative {rel:.2e} ({'ok' if rel <= rtol else 'FAIL'})")
print("losses agree" if ok else "losses differ")
sys.exit(0 if ok else 1)
