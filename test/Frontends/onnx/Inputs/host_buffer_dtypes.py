#!/usr/bin/env python3
"""The element types of a plan's host buffers (what crosses a stage boundary through the host).

    host_buffer_dtypes.py PLAN.txt   reads `rpc-compile --emit=plan-text`; prints
                                     'host buffers: DTYPE NAME, ..., F32 only otherwise': every
                                     buffer that is not F32 by name, in plan order (exit 1 when
                                     the plan has no host buffer)
"""
import re
import sys


def main():
    text = open(sys.argv[1]).read()
    blocks = re.findall(r"^host_buffers \{\n(.*?)^\}", text, re.S | re.M)
    if not blocks:
        print("no host buffers")
        return 1
    other = []
    for block in blocks:
        name = re.search(r'^  name: "([^"]*)"', block, re.M).group(1)
        dtype = re.search(r"^    dtype: (\w+)", block, re.M).group(1)
        if dtype != "F32":
            other.append(f"{dtype} {name}")
    print("host buffers: " + ", ".join(other + ["F32 only otherwise"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
