#!/usr/bin/env bash
# The main job: installs what is missing, builds rpc, and runs it on the bundled example.
# Until the example model and rp-run exist (issues 3-8), it shows rp-opt, the compiler driver
# that every later step is reproducible with, and round-trips a graph-dialect example.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-deps.sh
RP_BUILD_DIR="$root/build" bash scripts/build.sh

"$root/build/bin/rp-opt" --help | head -n 20
echo "..."
echo "main: canonicalizing examples/graph/attention-scores.mlir"
"$root/build/bin/rp-opt" --canonicalize "$root/examples/graph/attention-scores.mlir"
