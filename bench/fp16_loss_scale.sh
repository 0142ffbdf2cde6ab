#!/usr/bin/env bash
# fp16 with dynamic loss scaling against fp32 on the bundled example (examples/qwen3-tiny, the
# fortunes corpus): RP_STEPS (default 100) sync steps of one micro-batch of 4 x 64 tokens, the
# fp32 plan on the CPU reference kernels, the fp16 plan on the CUDA backend's kernels replayed
# on the host (--kernels cuda-host, about 2.5 s a step on 2 cores: too slow for ctest), or on a
# GPU with RP_BACKEND=cuda. Prints the per-step relative loss difference and the means over
# windows of 10 steps.
#
#   bench/fp16_loss_scale.sh [OUT_DIR]     (default build/bench-fp16)
#
# Environment: RP_COMPILE (default build/bin/rpc-compile), RP_RUN (default build/bin/rp-run),
# RP_STEPS (default 100), RP_BACKEND (cpu: the host replay, default; cuda: a GPU). RPC and
# STEPS, the names before the RP_ prefix, are still read for one release, with a warning.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/bench-fp16}"
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
rpc="$(rp_env RP_COMPILE RPC "$root/build/bin/rpc-compile")"
run="$(rp_env RP_RUN "" "$root/build/bin/rp-run")"
steps="$(rp_env RP_STEPS STEPS 100)"
mkdir -p "$out"
python3 "$root/examples/data/prepare_corpus.py" "$out/corpus.bin" > /dev/null
for dtype in fp32 fp16; do
  "$rpc" "$root/examples/qwen3-tiny/model.onnx" --gpus 1 --micro-batches 1 --update sync \
    --dtype "$dtype" -o "$out/$dtype.rpplan" > /dev/null
done
"$run" "$out/fp32.rpplan" --data "$out/corpus.bin" --steps "$steps" --log "$out/fp32.jsonl" \
  --no-progress > /dev/null
if [ "$(rp_env RP_BACKEND "" cpu)" = cuda ]; then
  fp16=(--backend cuda)
else
  fp16=(--kernels cuda-host)
fi
"$run" "$out/fp16.rpplan" --data "$out/corpus.bin" --steps "$steps" "${fp16[@]}" \
  --log "$out/fp16.jsonl" --no-progress > /dev/null
python3 - "$out/fp32.jsonl" "$out/fp16.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
rel = [abs(x["loss"] - y["loss"]) / x["loss"] for x, y in zip(a, b)]
print("steps %d: per-step relative loss difference mean %.2f %%, max %.2f %% (step %d)"
      % (len(rel), 100 * sum(rel) / len(rel), 100 * max(rel), rel.index(max(rel)) + 1))
print("steps over 2 %%: %s" % [i + 1 for i, r in enumerate(rel) if r > 0.02])
for lo in range(0, len(rel), 10):
    fa = sum(x["loss"] for x in a[lo:lo + 10]) / len(a[lo:lo + 10])
    fb = sum(x["loss"] for x in b[lo:lo + 10]) / len(b[lo:lo + 10])
    print("steps %3d-%3d: fp32 %.4f fp16 %.4f (%.2f %%)" % (lo + 1, lo + len(a[lo:lo + 10]), fa, fb,
                                                           100 * abs(fa - fb) / fa))
print("skipped steps %s, final loss scale %s"
      % ([x["step"] for x in b if x.get("skipped")], b[-1].get("loss_scale")))
PY
