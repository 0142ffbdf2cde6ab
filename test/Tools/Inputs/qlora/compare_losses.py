"""Compares the step losses of two rp-run --log files: every step of GOT is in WANT, each loss
within a relative tolerance. Standard library only.

  compare_losses.py GOT.jsonl WANT.jsonl RTOL     prints "losses: N steps within RTOL"
"""
import json
import sys

got, want, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
read = lambda path: {r["step"]: r["loss"] for r in map(json.loads, open(path)) if r}
a, b = read(got), read(want)
for step, loss in sorted(a.items()):
    if step not in b:
        sys.exit(f"step {step} is not in {want}")
    if abs(loss - b[step]) > rtol * abs(b[step]):
        sys.exit(f"step {step}: loss {loss!r} vs {b[step]!r}")
print(f"losses: {len(a)} steps within {rtol:g}")
