#!/usr/bin/env python3
"""Checks plan reports (rpc-compile --emit=report-json): every stage's executed_over_paper
lies within TOL of 1 (a stage of no FLOPs, executed or paper, has ratio 1). Usage: check_paper_ratio.py TOL FILE...
Prints one line per file; exits 1 naming the first stage outside the tolerance."""
import json
import os
import sys


def main():
    tol = float(sys.argv[1])
    for path in sys.argv[2:]:
        report = json.load(open(path))
        worst = 1.0
        for stage in report["stages"]:
            ratio = stage["executed_over_paper"]
            if abs(ratio - 1) > tol:
                print(f"{os.path.basename(path)}: stage {stage['name']} executed / paper "
                      f"{ratio:.4f} (paper {stage['paper_flops_per_micro_batch']})",
                      file=sys.stderr)
                sys.exit(1)
            worst = max(worst, ratio, 2 - ratio)
        print(f"{os.path.basename(path)}: {len(report['stages'])} stages, executed / paper "
              f"within {tol:g} of 1 (worst {worst:.4f})")


if __name__ == "__main__":
    main()
