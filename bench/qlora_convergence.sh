#!/usr/bin/env bash
# QLoRA against LoRA on the bundled example (examples/qwen3-tiny, the fortunes corpus): LoRA of
# rank 8 (alpha 16) on every projection (`_proj`), one plan with the frozen base in full
# precision and one with it in NF4 (`rpc-compile --base-weights nf4`, bitsandbytes' NF4 with
# double quantization); the same data, seed and learning rate, RP_STEPS (default 150) sync
# steps with a held-out evaluation every 50 steps. fp32 compute on the CPU backend (its
# reference kernels run fp32 plans); RP_DTYPE=bf16 RP_BACKEND=cuda compares bf16 plans on a
# GPU. Prints both runs' held-out losses and their relative difference (docs/PERFORMANCE.md,
# "QLoRA").
#
#   bench/qlora_convergence.sh [OUT_DIR]     (default build/bench-qlora)
#
# Environment: RP_COMPILE (default build/bin/rpc-compile), RP_RUN (default build/bin/rp-run),
# RP_STEPS (default 150), RP_DTYPE (default fp32), RP_BACKEND (default cpu).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/bench-qlora}"
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
rpc="$(rp_env RP_COMPILE "" "$root/build/bin/rpc-compile")"
run="$(rp_env RP_RUN "" "$root/build/bin/rp-run")"
steps="$(rp_env RP_STEPS "" 150)"
dtype="$(rp_env RP_DTYPE "" fp32)"
backend="$(rp_env RP_BACKEND "" cpu)"
mkdir -p "$out"
python3 "$root/examples/data/prepare_corpus.py" "$out/corpus.bin" > /dev/null
lora=(--lora-rank 8 --lora-alpha 16 --lora-targets '_proj')
for base in full nf4; do
  quant=()
  [ "$base" = nf4 ] && quant=(--base-weights nf4)
  "$rpc" "$root/examples/qwen3-tiny/model.onnx" --gpus 2 --micro-batches 4 --update sync \
    --dtype "$dtype" "${lora[@]}" "${quant[@]}" -o "$out/$base.rpplan" > /dev/null
  "$run" train "$out/$base.rpplan" --data "$out/corpus.bin" --steps "$steps" --lr 2e-3 \
    --warmup 15 --eval-every 50 --backend "$backend" --log "$out/$base.jsonl" --no-progress > /dev/null
done
python3 - "$out/full.jsonl" "$out/nf4.jsonl" <<'PY'
import json, sys
def evals(path):
    return {r["step"]: r["eval_loss"] for r in map(json.loads, open(path)) if "eval_loss" in r}
a, b = evals(sys.argv[1]), evals(sys.argv[2])
if not a or a.keys() != b.keys():
    sys.exit("qlora_convergence: the runs' held-out evaluations differ in steps: %s %s"
             % (sorted(a), sorted(b)))
for step in sorted(a):
    print("step %4d: held-out loss full base %.4f, nf4 base %.4f (%+.2f %%)"
          % (step, a[step], b[step], 100 * (b[step] - a[step]) / a[step]))
PY
