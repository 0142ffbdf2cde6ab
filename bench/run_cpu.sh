#!/usr/bin/env bash
# The CPU benchmark: rp-run's CPU backend on the main job's plan (examples/qwen3-tiny, a pool of
# 2 workers, 4 micro-batches of 4 x 64 tokens, sync AdamW) against transformers' Qwen3 of the
# same shape in PyTorch eager mode on the same data, micro-batches, optimizer and thread count,
# timed side by side in one run.
#
#   bench/run_cpu.sh [BIN_DIR] [WORK_DIR]
#
#   BIN_DIR   where rpc-compile and rp-run are (default: build/bin)
#   WORK_DIR  scratch for the corpus, the plan and the logs (default: a new mktemp directory)
#
# Environment (defaults): RP_PYTHON (python3; needs torch and transformers: bench/README.md),
# RP_THREADS (nproc: PyTorch's intra-op threads, and the OpenMP threads rp-run's workers share),
# RP_POOL (2: rp-run workers), RP_STEPS (30 timed steps), RP_WARMUP (5 steps left out),
# RP_ROUNDS (3: rp-run and PyTorch run alternately RP_ROUNDS times; each system's number is the
# median of its rounds' medians), RP_PROFILE (1: one more rp-run with --profile-kernels; 0:
# none). The names before the RP_ prefix (PYTHON, THREADS, POOL, STEPS, WARMUP, ROUNDS,
# PROFILE) are still read for one release, with a warning.
#
# rp-run: tokens/s = 1024 / the median of metrics.jsonl's step_s over steps RP_WARMUP+1..;
# PyTorch: bench/torch_cpu_baseline.py, tokens/s = 1024 / its median step time. Prints both,
# the ratio rp-run / PyTorch, the machine, and (RP_PROFILE=1) rp-run's kernel profile; writes
# summary.txt and the logs to WORK_DIR. Exit status 0 when every run succeeded.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="$(realpath "${1:-$root/build/bin}")"
work="${2:-$(mktemp -d -t rpcpubench.XXXXXX)}"
mkdir -p "$work"
work="$(realpath "$work")"
# shellcheck source=bench/env.sh
source "$here/env.sh"
py="$(rp_env RP_PYTHON PYTHON python3)"
threads="$(rp_env RP_THREADS THREADS "$(nproc)")"
pool="$(rp_env RP_POOL POOL 2)" steps="$(rp_env RP_STEPS STEPS 30)"
warmup="$(rp_env RP_WARMUP WARMUP 5)" rounds="$(rp_env RP_ROUNDS ROUNDS 3)"
profile="$(rp_env RP_PROFILE PROFILE 1)"
for tool in rpc-compile rp-run; do
  [[ -x "$bin/$tool" ]] || { echo "run_cpu: $bin/$tool not found (build first)" >&2; exit 2; }
done
"$py" -c 'import torch, transformers' 2>/dev/null ||
  { echo "run_cpu: $py cannot import torch and transformers (set RP_PYTHON)" >&2; exit 2; }

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
model="$root/examples/qwen3-tiny/model.onnx"
echo "run_cpu: corpus, plan (pool $pool, 4 micro-batches, sync) in $work"
/usr/bin/python3 "$root/examples/data/prepare_corpus.py" "$work/fortunes.bin" >/dev/null
"$bin/rpc-compile" "$model" --gpus "$pool" --micro-batches 4 --update sync \
  -o "$work/model.rpplan" >/dev/null 2>&1

# median_tps METRICS: tokens/s from the median step_s of the steps after the warmup.
median_tps() {
  "$py" - "$1" "$warmup" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "step_s" in r][int(sys.argv[2]):]
print(f"{rows[0]['tokens'] / statistics.median(r['step_s'] for r in rows):.0f}")
EOF
}

rp_tps=() pt_tps=()
for ((r = 1; r <= rounds; r++)); do
  rm -f "$work/rp-$r.jsonl"
  OMP_NUM_THREADS="$threads" "$bin/rp-run" "$work/model.rpplan" --data "$work/fortunes.bin" \
    --steps $((steps + warmup)) --lr 2e-3 --backend cpu --gpus "$pool" --no-progress \
    --log "$work/rp-$r.jsonl" >"$work/rp-$r.log" 2>&1
  rp_tps+=("$(median_tps "$work/rp-$r.jsonl")")
  "$py" "$here/torch_cpu_baseline.py" --config "$root/examples/qwen3-tiny/config.json" \
    --data "$work/fortunes.bin" --threads "$threads" --steps "$steps" --warmup "$warmup" \
    --lr 2e-3 --json-out "$work/torch-$r.json" >"$work/torch-$r.log" 2>&1
  pt_tps+=("$("$py" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["tokens_per_s"]))' "$work/torch-$r.json")")
  echo "run_cpu: round $r: rp-run ${rp_tps[-1]} tokens/s, PyTorch ${pt_tps[-1]} tokens/s"
done

if [[ "$profile" != 0 ]]; then
  OMP_NUM_THREADS="$threads" "$bin/rp-run" "$work/model.rpplan" --data "$work/fortunes.bin" \
    --steps "$steps" --lr 2e-3 --backend cpu --gpus "$pool" --no-progress \
    --profile-kernels "$work/profile.json" >"$work/profile.log" 2>&1
fi

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
rp="$(median "${rp_tps[@]}")" pt="$(median "${pt_tps[@]}")"
{
  echo "== CPU benchmark (bench/run_cpu.sh), $(date -u +%FT%TZ)"
  echo "machine: $(uname -srm), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  awk -v l="${load_start%% *}" -v c="$(nproc)" 'BEGIN { if (l > 0.5 * c) printf "warning: load average %s on %d cores at the start: other processes compete for the cores, and the numbers are not those of an idle machine\n", l, c }'
  "$py" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
  echo "plan: examples/qwen3-tiny, pool $pool, 4 micro-batches of 4 x 64 tokens, sync; threads $threads; $steps timed steps after $warmup, $rounds rounds"
  echo "rp-run (cpu backend):  ${rp} tokens/s   (rounds: ${rp_tps[*]})"
  echo "PyTorch eager:         ${pt} tokens/s   (rounds: ${pt_tps[*]})"
  awk -v a="$rp" -v b="$pt" 'BEGIN {printf "ratio rp-run / PyTorch: %.2f\n", a / b}'
  if [[ -s "$work/profile.json" ]]; then
    echo
    sed -n '/^kernel profile:/,/^  by kernel and types:/p' "$work/profile.log" | sed '$d'
  fi
} | tee "$work/summary.txt"
