#!/usr/bin/env bash
# Exports the Qwen3-1.7B-shaped training graph and compiles the benchmark's RoundPipe plans
# (pools of 1, 2 and 4 workers, bf16), on a machine with rpc-compile (MLIR) and PyTorch; the
# GPU machine has neither compiler nor network, so it gets only the small plan files.
#
#   bench/export_qwen3_1p7b.sh [--layers 28] [--seq 4096] [--micro-batches 5] [--update async]
#       [--pools "1 2 4"] [--gpu-memory-gib 78] [--min-worker-gib 24] [--dtype bf16]
#       [--export-args "--hidden 256 ..."] [--out bench/out/qwen3-1p7b]
#
# --layers and --seq scale the model (the full benchmark is the default); --export-args passes
# any other examples/export/export_model.py shape flag (a small shape for tests: --hidden,
# --heads, ...); --dtype fp32 makes plans the CPU backend runs (the harness's own test:
# bench/README.md).
#
# Environment: RP_PYTHON (default python3 on PATH; it needs torch, transformers, onnx, as
# examples/export/requirements.txt pins them), RP_COMPILE (default build/bin/rpc-compile),
# RP_RUN (default build/bin/rp-run). PYTHON and RPC, the names before the RP_ prefix, are still
# read for one release, with a warning.
#
# Writes into OUT:
#   onnx/model.onnx, onnx/model.weights   the graph (~6.5 MB at seq 4096: the rotary cos/sin
#                                          tables are inline) and its external weights, a
#                                          sparse file of zeros (examples/export/export_model.py
#                                          --arch qwen3 --size full --weightless)
#   onnx/config.json                       the model's transformers config
#   onnx/export.json                       the export's summary line
#   plans/pN/model.rpplan                  the plan for a pool of N (~2.9 MB: no weights)
#   plans/pN/stages.txt, plans/pN/check.txt   rpc-compile --emit=stages, rp-run --check
#   plans/params.json                      the plan's params as a safetensors header (f32)
#                                          (names, dtypes F32, shapes, offsets): what
#                                          bench/make_inputs.py fills on the GPU machine
#   plans/model.json                       the model's shape for the FLOP formula (bench/flops.py)
#   plans/compile.log                      commands and times
# rpc-compile copies no weights: the plans read the sparse model.weights in place (on the GPU
# machine rp-run takes bench/make_inputs.py's random weights with --weights instead).
#
# Plan memory: a pool of N logical workers shares one GPU, so each plan is partitioned for
# GPU_MEM/N per worker, except that the partitioner's per-stage budget (0.6 x memory / 2,
# runtime/partition/Partitioner.h) must hold the fused tail (LM head + loss at 4096 tokens x
# M micro-batches: 7.0 GiB for M = 5), so a worker gets at least MIN_WORKER_GIB (24). check.txt
# lists the device arena each worker allocates; N x that must fit the GPU (checked below).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
layers=28 seq=4096 mb=5 update=async pools="1 2 4" gpu_mem_gib=78 min_worker_gib=24
dtype=bf16 export_args=""
out="$root/bench/out/qwen3-1p7b"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --layers) layers="$2"; shift 2 ;;
    --seq) seq="$2"; shift 2 ;;
    --micro-batches) mb="$2"; shift 2 ;;
    --update) update="$2"; shift 2 ;;
    --pools) pools="$2"; shift 2 ;;
    --gpu-memory-gib) gpu_mem_gib="$2"; shift 2 ;;
    --min-worker-gib) min_worker_gib="$2"; shift 2 ;;
    --dtype) dtype="$2"; shift 2 ;;
    --export-args) export_args="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "export_qwen3_1p7b: unknown argument $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
py="$(rp_env RP_PYTHON PYTHON python3)"
rpc="$(rp_env RP_COMPILE RPC "$root/build/bin/rpc-compile")"
rprun="$(rp_env RP_RUN "" "$root/build/bin/rp-run")"
mkdir -p "$out/onnx" "$out/plans"
log="$out/plans/compile.log"
: >"$log"
say() { echo "export_qwen3_1p7b: $*" | tee -a "$log"; }

t0=$(date +%s.%N)
say "export: $layers layers, seq $seq ($py)"
# shellcheck disable=SC2086
"$py" "$root/examples/export/export_model.py" --arch qwen3 --size full --weightless \
  --exporter dynamo --out "$out/onnx" --layers "$layers" --seq "$seq" --batch 1 $export_args \
  2> >(grep -v -e '^W[0-9]' -e '^\[torch.onnx\]' -e 'UserWarning' -e 'program = torch' >&2) \
  | tail -n 1 >"$out/onnx/export.json"
t1=$(date +%s.%N)
say "export: $(cat "$out/onnx/export.json")"
say "export: $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s wall"

# The model's shape for MFU (bench/flops.py reads it), from the export's summary line.
"$py" - "$out/onnx/export.json" "$out/plans/model.json" "$mb" "$update" "$dtype" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
m = dict(arch="qwen3", layers=e["layers"], seq=e["seq"], batch=e["batch"],
         hidden=e["hidden"], heads=e["heads"], kv_heads=e["kv_heads"], head_dim=e["head_dim"],
         intermediate=e["intermediate"], vocab=e["vocab"], tie=e["tie"],
         param_count=e["param_count"], embedding_params=e["embedding_params"],
         micro_batches=int(sys.argv[3]), update=sys.argv[4], dtype=sys.argv[5])
json.dump(m, open(sys.argv[2], "w"), indent=1)
EOF

gib=$((1024 * 1024 * 1024))
for n in $pools; do
  worker_gib=$(( gpu_mem_gib / n ))
  (( worker_gib < min_worker_gib )) && worker_gib=$min_worker_gib
  dir="$out/plans/p$n"
  mkdir -p "$dir"
  target="name=h100,peak_tflops=989,pcie_gbps=50,memory_bytes=$((worker_gib * gib))"
  args=(--gpus "$n" --micro-batches "$mb" --dtype "$dtype" --update "$update" --target "$target")
  say "compile p$n: rpc-compile model.onnx ${args[*]}"
  "$rpc" "$out/onnx/model.onnx" "${args[@]}" --emit=stages >"$dir/stages.txt"
  tee -a "$log" <"$dir/stages.txt"
  s0=$(date +%s.%N)
  "$rpc" "$out/onnx/model.onnx" "${args[@]}" -o "$dir/model.rpplan" | tee -a "$log"
  s1=$(date +%s.%N)
  say "compile p$n: $(printf '%.1f' "$(echo "$s1 - $s0" | bc)") s wall, plan $(stat -c %s "$dir/model.rpplan") bytes (the weights stay in the sparse model.weights)"
  # --check describes the plan; it also refuses it here when this machine lacks the host
  # memory to train it (the GPU machine has it), so its status is not this script's.
  "$rprun" "$dir/model.rpplan" --check --backend cuda >"$dir/check.txt" 2>&1 || true
  tee -a "$log" <"$dir/check.txt"
  if [[ ! -f "$out/plans/params.json" ]]; then
    # Every stored param once, in plan order, as a safetensors header (f32, made-up offsets
    # in that order): what bench/make_inputs.py fills with random weights on the GPU machine.
    # (The plan text goes through a file: the script itself is Python's stdin.)
    "$rpc" "$out/onnx/model.onnx" "${args[@]}" --emit=plan-text >"$out/plans/plan.txt"
    "$py" - "$out/plans/plan.txt" "$out/plans/params.json" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
header, offset = {"__metadata__": {"format": "pt", "producer": "rpc-compile --emit=plan-text"}}, 0
for name, dtype, dims in re.findall(
        r'^params \{\n  name: "([^"]*)"\n  type \{\n    dtype: (\w+)\n((?:    shape: \d+\n)*)',
        text, re.M):
    if name in header:
        continue
    shape = [int(d) for d in re.findall(r"\d+", dims)]
    size = {"F32": 4, "I64": 8, "I32": 4}[dtype]
    for d in shape:
        size *= d
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
    offset += size
json.dump(header, open(sys.argv[2], "w"))
EOF
    rm -f "$out/plans/plan.txt"
  fi
  # N workers share the GPU: N device arenas must fit in it.
  arena=$(sed -n 's/^  device arena: \([0-9.]*\) \([KMG]\)iB.*/\1 \2/p' "$dir/check.txt" |
          awk '{ f = ($2 == "G") ? 1 : ($2 == "M") ? 1 / 1024 : 1 / 1048576; printf "%.3f", $1 * f }')
  if [[ -n "$arena" ]]; then
    total=$(echo "$arena * $n" | bc)
    say "p$n: $n x device arena $arena GiB = $total GiB of the GPU's $gpu_mem_gib GiB"
    if (( $(echo "$total > $gpu_mem_gib" | bc) )); then
      say "p$n: WARNING: the arenas exceed the GPU memory; lower --micro-batches or --min-worker-gib"
    fi
  fi
done
say "plans: $out/plans ($(du -sh "$out/plans" | cut -f1)); carry it to the GPU machine"
