"""Counts the matmul operands that are transposes of their last two dimensions, in MLIR text
(rpc-compile --emit=schedule or --emit=train).

Usage: matmul_transposes.py NAME < module.mlir
Prints "NAME: <m> matmuls, <t> read a last-two-dims graph.transpose, <a> last-two-dims
transposes in all" (what rp-fold-transpose-into-matmul turns into flags, and every transpose
of the last two dimensions, whatever reads it: the weight gradients the VJPs wrote as
(x^T g)^T; SSA names are tracked per function, a func.func line starts a new scope). Other permutations (attention's head split [B, S, H, D] ->
[B, H, S, D]) are layout changes no GEMM flag expresses and are not counted. Exit status 1 when
the input has no matmul at all, so that an empty or failed compile cannot pass as zero.
"""
import re
import sys

DEF = re.compile(r"^\s*(%[\w.$#-]+)(?::\d+)?\s*=\s*graph\.transpose\b.*"
                 r"permutation = array<i64: ([0-9, ]+)>")


def swaps_last_two(perm: list[int]) -> bool:
    n = len(perm)
    return n >= 2 and perm == list(range(n - 2)) + [n - 1, n - 2]


MATMUL = re.compile(r"graph\.matmul\s+(%[\w.$#-]+)\s*,\s*(%[\w.$#-]+)")


def main() -> int:
    name = sys.argv[1]
    transposes: set[str] = set()
    matmuls = fed = swapped = 0
    for line in sys.stdin:
        if "func.func" in line:
            transposes.clear()
        m = DEF.match(line)
        if m and swaps_last_two([int(x) for x in m.group(2).split(",")]):
            transposes.add(m.group(1))
            swapped += 1
        for a, b in MATMUL.findall(line):
            matmuls += 1
            fed += (a in transposes) + (b in transposes)
    print(f"{name}: {matmuls} matmuls, {fed} read a last-two-dims graph.transpose, "
          f"{swapped} last-two-dims transposes in all")
    return 0 if matmuls else 1


if __name__ == "__main__":
    sys.exit(main())
