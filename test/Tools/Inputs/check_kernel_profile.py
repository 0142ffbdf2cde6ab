"""Checks rp-run --profile-kernels' JSON against itself: the three lists sum to
the total, and every instruction of every function the run called appears, with the same count
as the other instructions of its function (each call runs the whole body once).
Usage: check_kernel_profile.py PROFILE.json"""
import json
import sys

doc = json.load(open(sys.argv[1]))
total = doc["total_s"]
sums = [sum(e["seconds"] for e in doc[k]) for k in ("by_kernel", "by_signature", "by_instruction")]
ok = total > 0 and all(abs(s - total) <= 1e-9 * max(1.0, total) + 1e-12 for s in sums)
print("sums " + ("ok" if ok else f"differ: {sums} vs {total}") +
      ": by_kernel = by_signature = by_instruction = total_s")
per_function = {}
for e in doc["by_instruction"]:
    per_function.setdefault(e["function"], {})[e["index"]] = e["count"]
complete = all(sorted(idx) == list(range(len(idx))) for idx in per_function.values())
print("every instruction of the plan's functions seen:", "yes" if complete and per_function else "no")
same = all(len(set(idx.values())) == 1 for idx in per_function.values())
print("counts:", "each instruction ran once per call of its function" if same else "differ")
