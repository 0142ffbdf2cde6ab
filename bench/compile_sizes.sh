#!/usr/bin/env bash
# Compile time and peak memory of `rpc-compile -o` for Qwen3-shaped graphs of the paper's
# sizes, exported without weights (examples/export/export_model.py --weightless: the graph on
# PyTorch's meta device, the parameters as a sparse external-data file). rpc-compile reads no weight: the plan lists
# the external data ranges (docs/DECISIONS.md, "Weights are data, not plan"), so time and
# memory follow the layer count, not the parameter bytes.
#
# Usage: RP_PYTHON=/path/to/python-with-torch bash bench/compile_sizes.sh [OUT]
#   OUT (default bench/out/sizes): one directory per shape (model.onnx, sparse model.weights,
#   model.rpplan) and sizes.md, the table. Shapes: Hugging Face configs of Qwen3-1.7B (tied),
#   8B, 14B and 32B (untied), seq 4096, batch 1; plans for 8 workers, 16 micro-batches, bf16,
#   an 80 GiB target (so that every size partitions). RP_COMPILE (default
#   build/bin/rpc-compile). PYTHON and RPC, the names before the RP_ prefix, are still read for
#   one release, with a warning.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/bench/out/sizes}"
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
py="$(rp_env RP_PYTHON PYTHON python3)"
rpc="$(rp_env RP_COMPILE RPC "$root/build/bin/rpc-compile")"
target="name=h100,peak_tflops=989,pcie_gbps=50,memory_bytes=$((80 * 1024 * 1024 * 1024))"
mkdir -p "$out"
table="$out/sizes.md"
echo "| shape | layers | params | rpc-compile -o: wall | peak RSS | plan |" >"$table"
echo "|---|---|---|---|---|---|" >>"$table"
#     name  layers hidden intermediate heads tie
for spec in "1.7B 28 2048 6144 16 --tied" "8B 36 4096 12288 32 --untied" \
            "14B 40 5120 17408 40 --untied" "32B 64 5120 25600 64 --untied"; do
  read -r name layers hidden inter heads tie <<<"$spec"
  dir="$out/qwen3-$name"
  if [[ ! -f "$dir/model.onnx" ]]; then
    echo "export $name ..." >&2
    "$py" "$root/examples/export/export_model.py" --arch qwen3 --size full --weightless \
      --exporter dynamo --seq 4096 --batch 1 --out "$dir" --layers "$layers" --hidden "$hidden" \
      --intermediate "$inter" --heads "$heads" --kv-heads 8 "$tie" >"$dir.export.json"
  fi
  params=$("$py" -c "import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['param_count'])" "$dir.export.json" 2>/dev/null || echo "?")
  /usr/bin/time -f "%e %M" -o "$dir.time" "$rpc" "$dir/model.onnx" --gpus 8 --micro-batches 16 \
    --dtype bf16 --target "$target" -o "$dir/model.rpplan"
  read -r wall kb <"$dir.time"
  echo "| Qwen3-$name | $layers | $params | ${wall} s | $((kb / 1024)) MiB | $(stat -c %s "$dir/model.rpplan") B |" >>"$table"
done
cat "$table"
