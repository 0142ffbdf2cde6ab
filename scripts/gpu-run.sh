#!/usr/bin/env bash
# The whole GPU run in one command on the GPU machine, over what scripts/gpu-prepare.sh staged
# in gpu-stage/ (carry that folder there):
#   1. scripts/gpu-check.sh: every CUDA unit test and the numerics checks (fp32 against the
#      CPU backend, logical pools, bf16, CUDA graphs, cuDNN against flash attention, fp16 with
#      loss scaling, the GPT-OSS-shaped tiny plan);
#   2. rp-bench-attention at the benchmark's attention shape (q [1, 16, 4096, 128], k/v
#      [1, 8, 4096, 128], bf16, causal), cuDNN's fused SDPA and rpc's flash kernels;
#   3. bench/run_gpu.sh on the staged Qwen3-1.7B plans (pools RP_POOLS, default "1 2"): rp-run,
#      its kernel profile and host-thread spans, and the PyTorch baselines (eager with SDPA and
#      fused AdamW; with Liger-Kernel's fused kernels; torch.compile with Liger-Kernel's; and
#      torch.compile alone), when the
#      stage holds the plans (gpu-prepare.sh stages them when bench/export_qwen3_1p7b.sh made
#      them).
#
#   bash scripts/gpu-run.sh [OUTDIR]      (default $OUT, else gpu-out/)
#
# Environment: RP_DEADLINE_S (default 520): seconds from the start after which no benchmark
# phase starts or runs (the benchmark gets what the checks left); bench/run_gpu.sh's variables,
# with defaults that fit the run into about 8 minutes: RP_POOLS "1 2", RP_STEPS 5 (the first 2
# left out), RP_PROFILE_STEPS 1, RP_BASELINE_STEPS 6 after RP_BASELINE_WARMUP 2, RP_BASELINES
# "eager:;liger:--liger;compiled:--compile --liger;compiled-plain:--compile",
# RP_TIMEOUT_COMPILED_BASELINE_S 240. Writes into OUTDIR at most
# seven files: gpu-run.log (this script's log and every summary), check/gpu-check.log,
# check/metrics.tar.gz, attention.txt, bench/summary.txt, bench/summary.json,
# bench/bench-logs.tar.gz. Exit status 1 when a check or a benchmark phase failed.
set -uo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then sed -n '2,27p' "$0"; exit 0; fi
if [[ "${1:-}" == -* ]]; then
  echo "gpu-run: unknown option $1 (usage: bash scripts/gpu-run.sh [OUTDIR])" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${OUT:-$root/gpu-out}}"
mkdir -p "$out"
stage_dir="$root/gpu-stage"
[[ -f "$stage_dir/stage.tar.xz" ]] ||
  { echo "gpu-run: $stage_dir/stage.tar.xz not found; run scripts/gpu-prepare.sh first" >&2; exit 1; }
deadline="${RP_DEADLINE_S:-520}"
start=$SECONDS
log="$out/gpu-run.log"
: >"$log"
say() { echo "gpu-run: [$((SECONDS - start))s] $*" | tee -a "$log"; }
failed=0

say "$(date -u +%FT%TZ) on $(hostname), $(nproc) cores"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv,noheader 2>&1 | tee -a "$log"
grep -m1 -o 'commit [0-9a-f]*' "$stage_dir/STAMP" 2>/dev/null | tee -a "$log"

# Python wheels the machine lacks (Liger-Kernel), installed for this run only.
if compgen -G "$stage_dir/wheels/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/rp-site "$stage_dir"/wheels/*.whl >>"$log" 2>&1 &&
    export PYTHONPATH="/tmp/rp-site${PYTHONPATH:+:$PYTHONPATH}"
  say "wheels: $(cd "$stage_dir/wheels" && ls ./*.whl | tr '\n' ' ')"
fi

work="$(mktemp -d -t rp-gpu-run.XXXXXX)"
tar -C "$work" -xJf "$stage_dir/stage.tar.xz" || { say "cannot unpack the stage"; exit 1; }
S="$work/stage"
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
cudnn_lib="$(rp_torch_cudnn_lib python3)"
libs="$S/lib${cudnn_lib:+:$cudnn_lib}"

# 1. The checks.
say "checks: scripts/gpu-check.sh"
RP_COMMAND_TIMEOUT_S=120 bash "$root/scripts/gpu-check.sh" "$S" "$out/check" >>"$log" 2>&1 || failed=1
grep -E '^(PASS|FAIL) |worst relative|skipped steps|^gpu-check: ' "$out/check/gpu-check.log" | tee -a "$log"
say "checks done"

# 2. Attention at the benchmark's shape.
{
  for kernel in cudnn flash; do
    echo "== rp-bench-attention --kernel $kernel"
    LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}" timeout 60 "$S/bin/rp-bench-attention" \
      --seq 4096 --heads 16 --kv-heads 8 --dim 128 --dtype bf16 --kernel "$kernel" 2>&1 ||
      echo "rp-bench-attention --kernel $kernel: exit $?"
  done
} >"$out/attention.txt"
tee -a "$log" <"$out/attention.txt"
say "attention done"

# 3. The benchmark.
if [[ -f "$S/bench-plans/model.json" ]]; then
  left=$((deadline - (SECONDS - start)))
  say "benchmark: bench/run_gpu.sh, ${left}s left"
  RP_POOLS="${RP_POOLS:-1 2}" RP_DEADLINE_S="$left" RP_LD_LIBRARY_PATH="$S/lib" \
    RP_STEPS="${RP_STEPS:-5}" RP_SKIP_STEPS="${RP_SKIP_STEPS:-2}" \
    RP_PROFILE_STEPS="${RP_PROFILE_STEPS:-1}" RP_BASELINE_STEPS="${RP_BASELINE_STEPS:-6}" \
    RP_BASELINE_WARMUP="${RP_BASELINE_WARMUP:-2}" \
    RP_BASELINES="${RP_BASELINES:-eager:;liger:--liger;compiled:--compile --liger;compiled-plain:--compile}" \
    RP_TIMEOUT_COMPILED_BASELINE_S="${RP_TIMEOUT_COMPILED_BASELINE_S:-240}" \
    RP_OUT_DIR="$out/bench" bash "$root/bench/run_gpu.sh" "$S/bin/rp-run" "$S/bench-plans" \
    "$work/bench" >>"$log" 2>&1 || failed=1
  cat "$out/bench/summary.txt" >>"$log" 2>/dev/null
  sed -n '/^run /,/^total:/p' "$out/bench/summary.txt" 2>/dev/null
else
  say "benchmark: no plans staged (run bench/export_qwen3_1p7b.sh before gpu-prepare.sh)"
  failed=1
fi
grep -E '^(PASS|FAIL) ' "$out/check/gpu-check.log" 2>/dev/null
say "done, exit $failed"
exit "$failed"
