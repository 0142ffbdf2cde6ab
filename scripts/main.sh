#!/usr/bin/env bash
# The main job: installs what is missing, builds rpc, and trains the bundled example.
#
#   examples/qwen3-tiny/model.onnx   a 4-layer Qwen3 (Hugging Face transformers, random init,
#                                    byte-level vocabulary) exported by torch.onnx (dynamo)
#   examples/data/prepare_corpus.py  Debian's `fortunes` databases (~2.5 MB of English text)
#                                    as byte tokens in the llm.c token-file format
#
# Steps: check the import against PyTorch (rp-ref --reference: the sidecar's loss and every
# gradient), print the stage plan, compile a plan for a pool of 2 workers (4 micro-batches of
# 4 x 64 tokens per step, sync updates), train RP_STEPS (default 300) steps with rp-run on the
# CPU backend with evaluation, a
# checkpoint, metrics and a Chrome trace under build/example, and print the summary.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-deps.sh
RP_BUILD_DIR="$root/build" bash scripts/build.sh

bin="$root/build/bin"
work="$root/build/example"
model="$root/examples/qwen3-tiny/model.onnx"
steps="${RP_STEPS:-300}"
rm -rf "$work"
mkdir -p "$work"

echo "main: rp-ref --reference: the imported Qwen3 against PyTorch's loss and gradients"
"$bin/rp-ref" "$model" --reference "$root/examples/qwen3-tiny/reference.safetensors"

echo "main: corpus -> $work/fortunes.bin"
/usr/bin/python3 "$root/examples/data/prepare_corpus.py" "$work/fortunes.bin"

echo "main: rpc-compile --emit=stages (2 workers, 4 micro-batches)"
"$bin/rpc-compile" "$model" --gpus 2 --micro-batches 4 --update sync --emit=stages
"$bin/rpc-compile" "$model" --gpus 2 --micro-batches 4 --update sync -o "$work/model.rpplan"

# The CPU backend by default; RP_BACKEND=cuda trains on the GPU(s) (docs/CUDA.md).
backend="${RP_BACKEND:-cpu}"
echo "main: rp-run: $steps steps on the $backend backend (2 workers)"
"$bin/rp-run" "$work/model.rpplan" --data "$work/fortunes.bin" --steps "$steps" --lr 2e-3 \
  --warmup 30 --backend "$backend" --eval-every 100 --save "$work/checkpoint" \
  --log "$work/metrics.jsonl" --trace "$work/trace.json"
echo "main: metrics: $work/metrics.jsonl"
