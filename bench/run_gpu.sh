#!/usr/bin/env bash
# The CUDA benchmark, one command on the GPU machine: inputs, rp-run on pools of 1, 2 and 4
# logical workers of the one GPU, its kernel profile, the PyTorch baselines, summary table.
#
#   bench/run_gpu.sh RP_RUN PLANS_DIR [WORK_DIR]
#
#   RP_RUN     the rp-run binary built with the CUDA backend (RP_ENABLE_CUDA=ON)
#   PLANS_DIR  bench/export_qwen3_1p7b.sh's plans/ folder (pN/model.rpplan, params.json,
#              model.json), compiled where MLIR is; carried to the GPU machine
#   WORK_DIR   scratch for the 8.1 GB of weights and the logs (default: a new directory made
#              by mktemp in $TMPDIR)
#
# Environment (defaults): RP_POOLS ("1 2 4"), RP_STEPS (6: rp-run steps per pool),
# RP_SKIP_STEPS (2: warmup steps left out of the numbers), RP_PROFILE_STEPS (2: steps of the
# kernel profile of the first pool's plan; 0: none), RP_BASELINE_STEPS (8), RP_BASELINE_WARMUP
# (2 steps), RP_BASELINES ("eager:": the PyTorch baselines to run, in order, separated by ';',
# each NAME:FLAGS of torch_baseline.py, e.g. "eager:;compiled:--compile --liger"),
# RP_BASELINE_ARGS (torch_baseline.py flags given to every baseline, e.g. "--checkpointing on"),
# RP_TIMEOUT_COMPILED_BASELINE_S (a baseline with --compile: its own time limit, default
# RP_TIMEOUT_BASELINE_S),
# RP_NUM_TOKENS (16777216), RP_PEAK_TFLOPS (989: H100 SXM / H200 dense bf16), RP_PYTHON
# (python3), RP_LD_LIBRARY_PATH (prepended to LD_LIBRARY_PATH for rp-run; PyTorch's
# nvidia/cudnn/lib is added to it when present, for cuDNN attention), RP_BACKEND (cuda; cpu
# runs the harness itself on fp32 plans without a GPU: bench/README.md), RP_OUT_DIR (where
# results go; default WORK_DIR/out).
# Time limits in seconds, 0 = none (the default for each): RP_TIMEOUT_BASELINE_S,
# RP_TIMEOUT_INPUTS_S, RP_TIMEOUT_RUN_S (per pool), RP_TIMEOUT_PROFILE_S, and RP_DEADLINE_S (no
# phase starts, or runs, past this many seconds from the start; what is left is reported as
# skipped). Where a command may run only so long, set RP_DEADLINE_S some 40 s under that
# limit, so that the summary is still written (560 for 10 minutes).
# The names before the RP_ prefix (POOLS, STEPS, SKIP, PROFILE_STEPS, BASELINE_STEPS,
# BASELINE_WARMUP, BASELINE_ARGS, NUM_TOKENS, PEAK_TFLOPS, PYTHON, BACKEND, OUT, T_BASELINE,
# T_INPUTS, T_RUN, T_PROFILE, DEADLINE) are still read for one release, with a warning.
#
# A phase that fails or times out is reported and the next one runs. nvidia-smi samples the
# GPU's used memory every 200 ms during each phase (the device-wide peak, CUDA context
# included). Results in RP_OUT_DIR: summary.txt (the table, the phase status, the machine),
# summary.json (every number), bench-logs.tar.gz (metrics, traces, logs, nvidia-smi samples,
# the kernel profile). Exit status 0 when every phase succeeded, 1 otherwise.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,35p' "$0"; exit 2; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bench/env.sh
source "$here/env.sh"
rprun="$(realpath "$1")"
plans="$(realpath "$2")"
work="${3:-$(mktemp -d -t rpbench.XXXXXX)}"
mkdir -p "$work"
work="$(realpath "$work")"
out="$(rp_env RP_OUT_DIR OUT "$work/out")"
mkdir -p "$out"
py="$(rp_env RP_PYTHON PYTHON python3)"
# rp-run's cuDNN attention (--attention-kernel auto, docs/CUDA.md) dlopens libcudnn.so.9:
# PyTorch's nvidia/cudnn/lib holds one; without it attention runs on rpc's kernels.
cudnn_lib="$(rp_torch_cudnn_lib "$py")"
if [[ -n "$cudnn_lib" ]]; then
  RP_LD_LIBRARY_PATH="${RP_LD_LIBRARY_PATH:+$RP_LD_LIBRARY_PATH:}$cudnn_lib"
fi
pools="$(rp_env RP_POOLS POOLS "1 2 4")"
steps="$(rp_env RP_STEPS STEPS 6)" skip="$(rp_env RP_SKIP_STEPS SKIP 2)"
profile_steps="$(rp_env RP_PROFILE_STEPS PROFILE_STEPS 2)"
peak="$(rp_env RP_PEAK_TFLOPS PEAK_TFLOPS 989)"
backend="$(rp_env RP_BACKEND BACKEND cuda)"
deadline="$(rp_env RP_DEADLINE_S DEADLINE 0)"
start=$SECONDS
status_lines=()
failed=0

log() { echo "run_gpu: [$((SECONDS - start))s] $*" | tee -a "$work/run_gpu.log"; }

# phase NAME LIMIT_S CMD...: runs CMD, under timeout when LIMIT_S (0: none) or the deadline
# bounds it, with nvidia-smi sampling the GPU memory into $work/NAME.smi; records ok / failed
# (rc) / timeout / skipped.
phase() {
  local name="$1" limit="$2"
  shift 2
  if ((deadline > 0)); then
    local left=$((deadline - (SECONDS - start)))
    if ((left < 15)); then
      status_lines+=("$name: skipped (deadline ${deadline}s reached)")
      log "$name: skipped (deadline)"
      failed=1
      return 0
    fi
    ((limit == 0 || limit > left)) && limit=$left
  fi
  log "$name: start (limit $( ((limit > 0)) && echo "${limit}s" || echo none)): $*"
  local smi_pid=""
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 \
      >"$work/$name.smi" 2>/dev/null &
    smi_pid=$!
  fi
  local t0=$SECONDS rc=0
  if ((limit > 0)); then
    timeout -k 10 "$limit" "$@" >"$work/$name.log" 2>&1 || rc=$?
  else
    "$@" >"$work/$name.log" 2>&1 || rc=$?
  fi
  [[ -n "$smi_pid" ]] && { kill "$smi_pid" 2>/dev/null || true; wait "$smi_pid" 2>/dev/null || true; }
  local took=$((SECONDS - t0)) peak_mib=""
  [[ -s "$work/$name.smi" ]] && peak_mib=$(sort -n "$work/$name.smi" | tail -n 1 | tr -d ' ')
  local what="ok"
  if ((rc == 124 || rc == 137)); then what="timeout after ${limit}s"; failed=1
  elif ((rc != 0)); then what="failed (exit $rc)"; failed=1; fi
  status_lines+=("$name: $what, ${took}s${peak_mib:+, nvidia-smi peak ${peak_mib} MiB}")
  log "$name: $what in ${took}s${peak_mib:+ (nvidia-smi peak ${peak_mib} MiB)}; last lines:"
  tail -n 5 "$work/$name.log" | sed 's/^/    /' | tee -a "$work/run_gpu.log"
  return 0
}

# The machine, for the record.
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(free -g | awk '/^Mem:/{print $2}') GiB"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
  "$py" -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)' 2>&1 || true
  echo "rp-run: $rprun ($(LD_LIBRARY_PATH="${RP_LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$rprun" --version 2>&1 | head -n 1))"
  echo "plans: $plans; pools: $pools; steps: $steps (skip $skip)"
  tr -d '\n ' <"$plans/model.json" 2>/dev/null; echo
} >"$work/machine.txt" 2>&1 || true
cat "$work/machine.txt"

# 1. Inputs: weights for the plan's params, tokens; then rp-run --check on the first plan.
first_pool="${pools%% *}"
# shellcheck disable=SC2016  # the script's own $0..$7, expanded by the inner bash
phase inputs "$(rp_env RP_TIMEOUT_INPUTS_S T_INPUTS 0)" bash -c '
  set -euo pipefail
  "$0" "$1/make_inputs.py" --params "$2/params.json" --weights "$3/weights.safetensors" \
    --tokens "$3/tokens.bin" --num-tokens "$4"
  LD_LIBRARY_PATH="$6" "$5" "$2/p$7/model.rpplan" --check --backend cuda --weights "$3/weights.safetensors"
' "$py" "$here" "$plans" "$work" "$(rp_env RP_NUM_TOKENS NUM_TOKENS 16777216)" "$rprun" \
  "${RP_LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$first_pool"

# 2. rp-run on the CUDA backend, one pool after the other.
runs=()
t_run="$(rp_env RP_TIMEOUT_RUN_S T_RUN 0)"
for n in $pools; do
  if [[ ! -s "$work/weights.safetensors" ]]; then
    status_lines+=("rp-p$n: skipped (no weights: the inputs phase failed)"); failed=1; continue
  fi
  rm -f "$work/p$n.metrics.jsonl" "$work/p$n.trace.json"
  phase "rp-p$n" "$t_run" env \
    LD_LIBRARY_PATH="${RP_LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$rprun" "$plans/p$n/model.rpplan" --weights "$work/weights.safetensors" \
    --data "$work/tokens.bin" --steps "$steps" --backend "$backend" --gpus "$n" --no-progress \
    --log "$work/p$n.metrics.jsonl" --trace "$work/p$n.trace.json"
  if [[ -s "$work/p$n.metrics.jsonl" ]]; then
    trace=""; [[ -s "$work/p$n.trace.json" ]] && trace="$work/p$n.trace.json"
    runs+=(--run "rp-$backend p$n:$work/p$n.metrics.jsonl:$trace:$work/rp-p$n.smi")
  fi
done

# 3. Where the GPU time goes: the first pool's plan with --profile-kernels (RP_PROFILE_STEPS
# steps; the profile serialises each worker's calls, so it is timed apart from the runs above).
if ((profile_steps > 0)) && [[ -s "$work/weights.safetensors" ]]; then
  phase profile "$(rp_env RP_TIMEOUT_PROFILE_S T_PROFILE 0)" env \
    LD_LIBRARY_PATH="${RP_LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$rprun" "$plans/p$first_pool/model.rpplan" --weights "$work/weights.safetensors" \
    --data "$work/tokens.bin" --steps "$profile_steps" --backend "$backend" \
    --gpus "$first_pool" --no-progress --profile-kernels "$work/profile.json"
fi

# 4. The PyTorch baselines, last: a compiled one spends its first steps compiling, and under a
# deadline it is the one left out.
baseline_args="$(rp_env RP_BASELINE_ARGS BASELINE_ARGS "")"
baselines=()
IFS=';' read -r -a baseline_specs <<<"${RP_BASELINES:-eager:}"
for spec in "${baseline_specs[@]}"; do
  bname="${spec%%:*}" bflags="${spec#*:}"
  [[ -z "$bname" ]] && continue
  limit="$(rp_env RP_TIMEOUT_BASELINE_S T_BASELINE 0)"
  [[ " $bflags " == *" --compile "* ]] && limit="${RP_TIMEOUT_COMPILED_BASELINE_S:-$limit}"
  rm -f "$work/baseline-$bname.json"
  # shellcheck disable=SC2086  # the flags, split at spaces
  phase "baseline-$bname" "$limit" env PYTHONUNBUFFERED=1 "$py" \
    "$here/torch_baseline.py" --model-json "$plans/model.json" \
    --steps "$(rp_env RP_BASELINE_STEPS BASELINE_STEPS 8)" \
    --warmup "$(rp_env RP_BASELINE_WARMUP BASELINE_WARMUP 2)" --peak-tflops "$peak" \
    --json-out "$work/baseline-$bname.json" $baseline_args $bflags
  [[ -s "$work/baseline-$bname.json" ]] &&
    baselines+=(--baseline "$work/baseline-$bname.json:$work/baseline-$bname.smi")
done

# 5. The table.
sum_args=(--model-json "$plans/model.json" --peak-tflops "$peak" --skip "$skip"
          --json-out "$work/summary.json")
"$py" "$here/summarize.py" "${sum_args[@]}" "${runs[@]}" "${baselines[@]}" \
  >"$work/table.txt" 2>&1 || failed=1
{
  echo "== CUDA benchmark (bench/run_gpu.sh), $(date -u +%FT%TZ)"
  cat "$work/machine.txt"
  echo
  cat "$work/table.txt"
  echo
  # Whether cuDNN's fused attention built its graphs at this shape or declined (and why).
  echo "attention (rp-run --attention-kernel auto):"
  { cat "$work"/rp-p*.log 2>/dev/null | grep -E '^cudnn-sdpa: ' | sort | uniq -c | sed 's/^/ /'; } ||
    echo "  no cudnn-sdpa line in the rp-run logs"
  echo
  if [[ -s "$work/profile.json" ]]; then
    echo "kernel profile (p$first_pool, $profile_steps steps, rp-run --profile-kernels):"
    sed -n '/^kernel profile:/,/^rp-run: kernel profile:/p' "$work/profile.log" | sed '$d'
    echo
  fi
  echo "phases:"
  printf '  %s\n' "${status_lines[@]}"
  echo "total: $((SECONDS - start)) s"
} >"$work/summary.txt"
cat "$work/summary.txt"

# 6. The results: a few small files in RP_OUT_DIR.
cp "$work/summary.txt" "$out/summary.txt"
[[ -f "$work/summary.json" ]] && cp "$work/summary.json" "$out/summary.json"
logs=()
for f in "$work"/*.log "$work"/*.jsonl "$work"/*.json "$work"/*.smi "$work"/machine.txt \
         "$work"/table.txt; do
  [[ -f "$f" && "$f" != "$work/summary.json" ]] && logs+=("$(basename "$f")")
done
if ((${#logs[@]})); then
  (cd "$work" && tar czf "$out/bench-logs.tar.gz" -- "${logs[@]}") || true
fi
ls -la "$out"
exit "$failed"
