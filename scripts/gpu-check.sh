#!/usr/bin/env bash
# The GPU checks of the CUDA backend, run on a machine with a GPU over the stage that
# scripts/gpu-prepare.sh packed (no build there: the GPU machine has no LLVM, protobuf or
# OpenBLAS development files):
#   1. every CUDA unit test binary (kernels against the CPU references; the executor on the
#      CUDA backend against the CPU backend; logical pools);
#   2. 100 fp32 training steps of the example on the CUDA backend vs the CPU backend: losses
#      within 1e-5 relative at every step;
#   3. logical pools of 1, 2 and 4 workers on one GPU: identical losses (fp32, 5 steps);
#   4. 100 bf16 steps vs 100 fp32 steps on the GPU: the bf16 loss within 2% of the fp32 loss at
#      every step;
#   5. --cuda-graphs (every call replayed as a CUDA graph): the bf16 losses of check 4, bit for
#      bit, and the wall time of both runs;
#   6. attention kernels: --attention-kernel cudnn gives check 4's bf16 losses bit for bit (auto
#      chose cuDNN), flash within 2 % of fp32 and of cudnn, cudnn pools 1 and 4 identical;
#   7. fp16 with dynamic loss scaling (one worker, one micro-batch of the example): 100 steps
#      within 2 % of the same plan in fp32 at every step; the skipped steps and the last loss
#      scale are logged;
#   8. the GPT-OSS-shaped tiny export (attention sinks, sliding windows, top-k experts): 20
#      fp32 steps on the CUDA backend within 1e-5 of the CPU backend, 20 bf16 steps within 2 %
#      of fp32.
# The learning rate is 1e-3 (warmup 10). At 2e-3 this run is chaotic: two correct fp32 runs
# whose GEMMs only round differently (the CPU and the GPU backend) drift apart by up to 2.3%
# per step within 100 steps (measured on an H200 machine), so a 2% bound on bf16 would test the
# chaos, not the arithmetic. At 1e-3 the two fp32 runs agree within 1e-6 for the 100 steps
# (docs/CUDA.md, "What has run where").
# Usage: bash gpu-check.sh STAGE.tar.xz|STAGE_DIR OUTDIR (STAGE_DIR: the tarball's stage/
# folder, unpacked). Prints one PASS/FAIL line per check, writes
# the logs to OUTDIR, exits 1 if any check failed. RP_COMMAND_TIMEOUT_S (default 0: none): a
# time limit in seconds for each unit test binary and each rp-run; one that runs past it
# fails its check.
set -uo pipefail
tarball="$1"
out="${2:-$(mktemp -d -t rp-gpu-out.XXXXXX)}"
mkdir -p "$out"
work="$(mktemp -d -t rp-gpu.XXXXXX)"
if [[ -d "$tarball" ]]; then
  S="$(cd "$tarball" && pwd)"
else
  tar -C "$work" -xJf "$tarball" || exit 1
  S="$work/stage"
fi
cudalibs=$(python3 -c 'import nvidia, os; p = os.path.dirname(nvidia.__path__[0]); print(":".join(os.path.join(p, "nvidia", d, "lib") for d in ("cublas", "cuda_runtime", "cudnn")))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$S/lib:/usr/local/cuda/lib64:${cudalibs}:${LD_LIBRARY_PATH:-}"
log="$out/gpu-check.log"
: >"$log"
failed=0
result() { # name rc
  if [[ "$2" == 0 ]]; then echo "PASS $1" | tee -a "$log"; else echo "FAIL $1 (rc=$2)" | tee -a "$log"; failed=1; fi
}
command_timeout="${RP_COMMAND_TIMEOUT_S:-0}"
limited() { # CMD...: CMD under the RP_COMMAND_TIMEOUT_S limit, if any
  if ((command_timeout > 0)); then timeout "$command_timeout" "$@"; else "$@"; fi
}
gpu=0
if nvidia-smi -L 2>&1 | tee -a "$log" | grep -q '^GPU '; then gpu=1; fi

# 1. Unit tests.
for t in "$S"/bin/rp-cuda-*; do
  name=$(basename "$t")
  limited "$t" --gtest_brief=1 >"$work/$name.log" 2>&1
  rc=$?
  { echo "== $name (rc=$rc)"; tail -n 40 "$work/$name.log"; } >>"$log"
  grep -E "^\[  (FAILED|SKIPPED|PASSED)" "$work/$name.log" | tail -n 6
  # On a GPU machine a skipped device test means the GPU was not usable: a failure.
  if [[ $rc == 0 && $gpu == 1 ]] && grep -q '^\[  SKIPPED \]' "$work/$name.log"; then rc=skipped; fi
  result "$name" "$rc"
done

run() { # label plan backend workers steps extra...  (RP_DATA: the tokens, default fortunes)
  local label=$1 plan=$2 backend=$3 workers=$4 steps=$5
  shift 5
  limited "$S/bin/rp-run" "$S/plans/$plan" --data "${RP_DATA:-$S/fortunes.bin}" --steps "$steps" \
    --lr 1e-3 --warmup 10 --backend "$backend" --gpus "$workers" --no-progress \
    --log "$work/$label.jsonl" "$@" >>"$log" 2>&1
}
compare() { # a.jsonl b.jsonl rtol  -> rc 0 when every step's loss agrees
  python3 - "$1" "$2" "$3" <<'PY' | tee -a "$log"
import json, sys
def losses(p):
    return [json.loads(l)["loss"] for l in open(p) if '"loss"' in l]
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
worst = max(abs(x - y) / abs(y) for x, y in zip(a, b)) if a and len(a) == len(b) else float("inf")
print(f"  {sys.argv[1].split('/')[-1]} vs {sys.argv[2].split('/')[-1]}: {len(a)} steps, "
      f"worst relative difference {worst:.3g} (tolerance {tol:g})")
sys.exit(0 if worst <= tol else 1)
PY
}

# 2. fp32: CUDA vs CPU.
run cpu-fp32-100 qwen3-tiny-fp32.rpplan cpu 2 100
run cuda-fp32-100 qwen3-tiny-fp32.rpplan cuda 2 100
rc=$?
if [[ $rc == 0 ]]; then compare "$work/cuda-fp32-100.jsonl" "$work/cpu-fp32-100.jsonl" 1e-5; rc=$?; fi
result "fp32 100 steps, CUDA vs CPU backend" "$rc"
run cuda-fp32-2 qwen3-tiny-fp32.rpplan cuda 2 5 --trace "$work/trace-cuda-fp32.json"

# 3. Logical pools.
rc=0
for n in 1 4; do
  run "cuda-fp32-$n" qwen3-tiny-fp32.rpplan cuda "$n" 5 || rc=1
  [[ $rc == 0 ]] && { compare "$work/cuda-fp32-$n.jsonl" "$work/cuda-fp32-2.jsonl" 0 || rc=1; }
done
result "logical pools 1, 2, 4 on one GPU give identical losses" "$rc"

# 4. bf16 vs fp32 over 100 steps.
t0=$(date +%s.%N)
run cuda-bf16-100 qwen3-tiny-bf16.rpplan cuda 2 100
rc=$?
t1=$(date +%s.%N)
echo "  bf16 100 steps: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall" | tee -a "$log"
if [[ $rc == 0 ]]; then compare "$work/cuda-bf16-100.jsonl" "$work/cuda-fp32-100.jsonl" 0.02; rc=$?; fi
result "bf16 loss within 2% of fp32 over 100 steps" "$rc"

# 5. CUDA graphs: the same kernels replayed, so the same losses bit for bit.
t0=$(date +%s.%N)
run cuda-bf16-100-graphs qwen3-tiny-bf16.rpplan cuda 2 100 --cuda-graphs
rc=$?
t1=$(date +%s.%N)
if [[ $rc == 0 ]]; then compare "$work/cuda-bf16-100-graphs.jsonl" "$work/cuda-bf16-100.jsonl" 0; rc=$?; fi
echo "  bf16 100 steps with --cuda-graphs: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall" | tee -a "$log"
result "--cuda-graphs: bf16 losses identical to plain launches" "$rc"

# 6. Attention kernels: checks 4 and 5 ran --attention-kernel auto (cuDNN's fused SDPA where it
# takes the case); the same run forced onto cuDNN and onto rpc's flash kernels, and a pool of 4
# with cuDNN (its deterministic backward: the same bits at every pool size).
grep -E "^cudnn-sdpa: " "$log" | sort -u | head -n 8
run cuda-bf16-100-cudnn qwen3-tiny-bf16.rpplan cuda 2 100 --attention-kernel cudnn
rc=$?
if [[ $rc == 0 ]]; then compare "$work/cuda-bf16-100-cudnn.jsonl" "$work/cuda-bf16-100.jsonl" 0; rc=$?; fi
result "--attention-kernel cudnn: bf16 losses identical to auto" "$rc"
run cuda-bf16-100-flash qwen3-tiny-bf16.rpplan cuda 2 100 --attention-kernel flash
rc=$?
if [[ $rc == 0 ]]; then compare "$work/cuda-bf16-100-flash.jsonl" "$work/cuda-fp32-100.jsonl" 0.02; rc=$?; fi
if [[ $rc == 0 ]]; then compare "$work/cuda-bf16-100-cudnn.jsonl" "$work/cuda-bf16-100-flash.jsonl" 0.02; rc=$?; fi
result "--attention-kernel flash vs cudnn: bf16 losses within 2%" "$rc"
run cuda-bf16-5-cudnn-4 qwen3-tiny-bf16.rpplan cuda 4 5 --attention-kernel cudnn
rc=$?
run cuda-bf16-5-cudnn-1 qwen3-tiny-bf16.rpplan cuda 1 5 --attention-kernel cudnn || rc=1
if [[ $rc == 0 ]]; then compare "$work/cuda-bf16-5-cudnn-4.jsonl" "$work/cuda-bf16-5-cudnn-1.jsonl" 0; rc=$?; fi
result "--attention-kernel cudnn: pools 1 and 4 give identical bf16 losses" "$rc"

# 7. fp16 with dynamic loss scaling against fp32, one worker, one micro-batch.
run cuda-m1-fp32-100 qwen3-tiny-m1-fp32.rpplan cuda 1 100
rc=$?
run cuda-m1-fp16-100 qwen3-tiny-m1-fp16.rpplan cuda 1 100 || rc=1
if [[ $rc == 0 ]]; then compare "$work/cuda-m1-fp16-100.jsonl" "$work/cuda-m1-fp32-100.jsonl" 0.02; rc=$?; fi
python3 - "$work/cuda-m1-fp16-100.jsonl" <<'PY' 2>/dev/null | tee -a "$log"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
print("  fp16: skipped steps %s, last loss scale %s"
      % ([r["step"] for r in rows if r.get("skipped")], rows[-1].get("loss_scale")))
PY
result "fp16 with loss scaling: loss within 2% of fp32 over 100 steps" "$rc"

# 8. The GPT-OSS-shaped tiny plan (sinks, sliding windows, experts) on its own tokens.
RP_DATA="$S/gptoss-tokens.bin" run cpu-gptoss-fp32-20 gpt-oss-tiny-fp32.rpplan cpu 2 20
RP_DATA="$S/gptoss-tokens.bin" run cuda-gptoss-fp32-20 gpt-oss-tiny-fp32.rpplan cuda 2 20
rc=$?
if [[ $rc == 0 ]]; then compare "$work/cuda-gptoss-fp32-20.jsonl" "$work/cpu-gptoss-fp32-20.jsonl" 1e-5; rc=$?; fi
result "GPT-OSS-shaped tiny plan: fp32 20 steps, CUDA vs CPU backend" "$rc"
RP_DATA="$S/gptoss-tokens.bin" run cuda-gptoss-bf16-20 gpt-oss-tiny-bf16.rpplan cuda 2 20
rc=$?
if [[ $rc == 0 ]]; then compare "$work/cuda-gptoss-bf16-20.jsonl" "$work/cuda-gptoss-fp32-20.jsonl" 0.02; rc=$?; fi
result "GPT-OSS-shaped tiny plan: bf16 loss within 2% of fp32 over 20 steps" "$rc"

(cd "$work" && tar -czf "$out/metrics.tar.gz" ./*.jsonl ./*.log ./trace-*.json 2>/dev/null)
grep -c '^PASS' "$log" | sed 's/^/gpu-check: passed /' | tee -a "$log"
grep -c '^FAIL' "$log" | sed 's/^/gpu-check: failed /' | tee -a "$log"
exit "$failed"
