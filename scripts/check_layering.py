#!/usr/bin/env python3
"""Checks that the source folders follow rpc's dependency graph (docs/ARCHITECTURE.md).

Every source file (.h .cpp .cu .cuh .td .inc) under the checked top-level folders belongs to one
component (a folder: `runtime/exec`, `runtime/backends/cuda`, `dialects/Graph/IR`, ...). Each
`#include "a/b/C.h"` (and `include "a/b/C.td"`) names the component of its target; the include
is allowed when that component is the file's own or is listed in ALLOWED for the file's
component. Includes of MLIR, LLVM and ONNX headers (`mlir/`, `llvm/`, `onnx/`, in quotes or
angle brackets) count as the components `mlir`, `llvm` and `onnx`, which only the compiler
world may use. Three rules follow from the table and are what this check exists for:

  1. the top-level folders are layered, bottom up, as LEVELS lists them (base, kernels,
     runtime, dialects, frontends, passes, compiler, tools): no include runs back up, so
     kernels/ includes only base/ and kernels/, never runtime/;
  2. the runtime world (base/, kernels/, runtime/, tools/rp-run) never includes compiler/,
     passes/, dialects/, frontends/, MLIR or LLVM: it builds and ships without them;
  3. nothing below the trainer includes runtime/train/ (only rp-run's driver and the tools use
     the trainer), and the trainer does not include the simulator: runtime/driver/ is the one
     component above both.

The table itself must follow LEVELS and be acyclic, and a source folder that is in no component
fails the check (add the new folder to ALLOWED with the components it may use).

Usage: check_layering.py [--root DIR]   (default: the repository this script is in)
Exit status: 0 when every include is allowed, 1 on a violation (each printed as
`FILE:LINE: ...`), 2 on a usage error.
"""

import argparse
import os
import re
import sys

# The top-level folders bottom up: a component may include only components of its own
# top-level folder or of one listed before it, so no arrow between top-level folders runs back
# up (check_table enforces it on the table below).
LEVELS = ["base", "kernels", "runtime", "dialects", "frontends", "passes", "compiler", "tools"]

# The components of the runtime world, bottom up, and what each may include.
RUNTIME = {
    "base": [],
    "kernels": ["base"],
    "kernels/cpu": ["base", "kernels"],
    "kernels/cuda": ["base", "kernels"],
    "runtime/io": ["base"],
    "runtime/trace": ["base"],
    "runtime/partition": ["base"],
    "runtime/plan": ["base", "kernels", "runtime/io"],
    "runtime/data": ["base"],
    "runtime/optim": ["base", "kernels/cpu"],
    "runtime/exec": ["base", "kernels", "kernels/cpu", "runtime/io", "runtime/optim",
                     "runtime/plan", "runtime/trace"],
    "runtime/dist": ["base", "runtime/exec"],
    "runtime/backends/cpu": ["base", "kernels", "kernels/cpu", "runtime/exec", "runtime/io",
                             "runtime/optim", "runtime/plan", "runtime/trace"],
    "runtime/backends/cuda": ["base", "kernels", "kernels/cpu", "kernels/cuda",
                              "runtime/backends/cpu", "runtime/exec", "runtime/io",
                              "runtime/plan", "runtime/trace"],
    "runtime/sim": ["base", "kernels", "runtime/exec", "runtime/io", "runtime/partition",
                    "runtime/plan", "runtime/trace"],
    "runtime/train": ["base", "kernels", "kernels/cpu", "runtime/backends/cpu",
                      "runtime/backends/cuda", "runtime/data", "runtime/dist", "runtime/exec",
                      "runtime/io", "runtime/optim", "runtime/plan", "runtime/trace"],
    "runtime/driver": ["base", "runtime/dist", "runtime/plan", "runtime/sim", "runtime/train"],
    "tools/rp-bench-attention": ["base", "kernels", "kernels/cuda"],
    "tools/rp-run": ["base", "runtime/data", "runtime/driver", "runtime/io", "runtime/sim",
                     "runtime/train"],
}

_MLIR = ["mlir", "llvm"]

# The compiler world: links MLIR; may use the plain C++ libraries of the runtime world that
# describe plans, kernels and costs, never the executor, backends or trainer.
COMPILER = {
    "dialects/Graph/IR": ["base", "kernels"] + _MLIR,  # kernels/Quantization.h
    "dialects/Graph/Eval": ["base", "dialects/Graph/IR", "kernels", "kernels/cpu"] + _MLIR,
    "dialects/Schedule/IR": ["dialects/Graph/IR"] + _MLIR,
    "frontends/onnx": ["base", "dialects/Graph/Eval", "dialects/Graph/IR", "kernels/cpu",
                       "onnx"] + _MLIR,
    # passes/ by kind, bottom up: the analyses of graph IR, the passes that rewrite graph IR,
    # the passes from a grouped graph module to a plan; `passes` is the registration entry
    # (passes/Passes.h) above both kinds.
    # passes/Analysis may evaluate graph ops on the reference interpreter, as the importer folds
    # with it (PackedMask evaluates a mask of a run-time input on probe positions).
    "passes/Analysis": ["base", "dialects/Graph/Eval", "dialects/Graph/IR"] + _MLIR,
    "passes/Graph": ["base", "dialects/Graph/IR", "kernels", "passes/Analysis"] + _MLIR,
    "passes/Schedule": ["base", "dialects/Graph/IR", "dialects/Schedule/IR", "kernels",
                        "passes/Graph", "runtime/partition"] + _MLIR,
    "passes": ["passes/Graph", "passes/Schedule"],
    "compiler": ["base", "dialects/Graph/IR", "dialects/Schedule/IR", "frontends/onnx",
                 "kernels", "passes", "passes/Schedule", "runtime/io", "runtime/partition",
                 "runtime/plan"] + _MLIR,
    "tools/rp-opt": ["compiler"] + _MLIR,
    "tools/rpc-compile": ["base", "compiler", "dialects/Graph/IR", "dialects/Schedule/IR",
                          "frontends/onnx", "passes", "runtime/plan"] + _MLIR,
    "tools/rp-ref": ["base", "compiler", "dialects/Graph/Eval", "dialects/Graph/IR",
                     "frontends/onnx", "kernels/cpu", "runtime/data", "runtime/io",
                     "runtime/optim", "runtime/train"] + _MLIR,
}

ALLOWED = {**RUNTIME, **COMPILER}

# Top-level folders whose sources are checked (tests, fuzz targets, examples, benchmarks and
# scripts may include anything).
CHECKED_ROOTS = LEVELS
EXTERNAL = {"mlir", "llvm", "onnx"}
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".td", ".inc")
INCLUDE_RE = re.compile(r'^\s*(?:#\s*include|include)\s*([<"])([^>"]+)[>"]')


def component_of(path):
    """The component of a repository-relative path: its longest prefix in ALLOWED, or None."""
    parts = path.split("/")
    for n in range(len(parts) - 1, 0, -1):
        prefix = "/".join(parts[:n])
        if prefix in ALLOWED:
            return prefix
    return None


def target_component(include):
    """The component an include names; None for a header of another library (<vector>, gtest)."""
    first = include.split("/", 1)[0]
    if first in EXTERNAL and "/" in include:
        return first
    if first not in CHECKED_ROOTS:
        return None
    return component_of(include) or include.rsplit("/", 1)[0]


def level_of(component):
    """The position of a component's top-level folder in LEVELS."""
    return LEVELS.index(component.split("/", 1)[0])


def check_table():
    """Errors in ALLOWED itself: unknown names, arrows back up between top-level folders
    (LEVELS) and cycles."""
    errors = []
    for comp, deps in ALLOWED.items():
        for dep in deps:
            if dep not in ALLOWED and dep not in EXTERNAL:
                errors.append(f"layering table: {comp} lists unknown component {dep}")
            elif dep in ALLOWED and level_of(dep) > level_of(comp):
                errors.append(f"layering table: {comp} lists {dep}, whose top-level folder "
                              f"comes after its own in LEVELS ({', '.join(LEVELS)})")
    state = {}

    def visit(comp, path):
        state[comp] = "open"
        for dep in ALLOWED.get(comp, []):
            if state.get(dep) == "open":
                errors.append("layering table: cycle " + " -> ".join(path + [comp, dep]))
            elif dep in ALLOWED and dep not in state:
                visit(dep, path + [comp])
        state[comp] = "done"

    for comp in ALLOWED:
        if comp not in state:
            visit(comp, [])
    return errors


def check_tree(root):
    """Every violation under `root`, as `path:line: message` strings, sorted."""
    errors = []
    for top in CHECKED_ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                comp = component_of(rel)
                if comp is None:
                    errors.append(f"{rel}:1: {os.path.dirname(rel)}/ is in no component of the "
                                  "layering table (scripts/check_layering.py: add it to ALLOWED)")
                    continue
                errors.extend(check_file(full, rel, comp))
    return errors


def check_file(full, rel, comp):
    errors = []
    with open(full, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            include = m.group(2)
            target = target_component(include)
            if target is None or target == comp or target in ALLOWED[comp]:
                continue
            world = "the runtime world" if comp in RUNTIME else "the compiler world"
            allowed = ", ".join(ALLOWED[comp]) or "nothing else"
            errors.append(f'{rel}:{lineno}: includes "{include}": {comp} ({world}) may not '
                          f"depend on {target} (it may use: {allowed})")
    return errors


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="the repository root to check")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.root):
        print(f"check_layering: no such directory: {args.root}", file=sys.stderr)
        return 2
    errors = check_table() + check_tree(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layering: {len(errors)} violation(s) of the layering "
              "(docs/ARCHITECTURE.md, \"Layering\")", file=sys.stderr)
        return 1
    print(f"check_layering: {len(ALLOWED)} components, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
