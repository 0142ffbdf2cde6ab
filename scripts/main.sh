#!/usr/bin/env bash
# The main job: installs what is missing, builds rpc, and runs it on the bundled example.
# Until the committed example model exists (issue 8), it writes the tests' small two-layer
# transformer (ONNX, via Debian's python3-onnx) and a token file for it, prints its stage
# plan, compiles it into a plan file, trains it with rp-run on the CPU backend (a pool of 2
# workers, sync updates) with a checkpoint, metrics and a trace, checks the first steps
# against the non-pipelined reference (rp-ref --train), and computes its loss and gradients
# with rp-ref --grads against a float64 numpy reference.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-deps.sh
RP_BUILD_DIR="$root/build" bash scripts/build.sh

bin="$root/build/bin"
work="$root/build/example"
rm -rf "$work"
mkdir -p "$work"
echo "main: writing a two-layer transformer to $work/model.onnx"
/usr/bin/python3 "$root/test/Frontends/onnx/Inputs/tiny_transformer.py" write "$work"

echo "main: rpc-compile --emit=stages (8 GPUs, FLOP-estimated costs)"
"$bin/rpc-compile" "$work/model.onnx" --dim batch=2 --dim seq=8 --emit=stages --gpus 8

echo "main: rpc-compile -> $work/model.rpplan + model.safetensors (2 GPUs, sync updates)"
"$bin/rpc-compile" "$work/model.onnx" --dim batch=2 --dim seq=8 --gpus 2 --micro-batches 4 \
  --update sync -o "$work/model.rpplan"
"$bin/rp-run" "$work/model.rpplan" --check

echo "main: rp-run: 200 steps on the CPU backend (2 workers)"
/usr/bin/python3 "$root/test/Tools/Inputs/make_tokens.py" words "$work/tokens.bin" 50000 48
"$bin/rp-run" "$work/model.rpplan" --data "$work/tokens.bin" --steps 200 --lr 3e-3 --warmup 20 \
  --eval-every 100 --save "$work/checkpoint" --log "$work/metrics.jsonl" \
  --trace "$work/trace.json"

echo "main: rp-ref --train: the first 3 steps without the pipeline, bit for bit"
"$bin/rp-run" "$work/model.rpplan" --data "$work/tokens.bin" --steps 3 --lr 3e-3 --warmup 20 \
  --save "$work/pipelined" --no-progress > /dev/null
"$bin/rp-ref" "$work/model.onnx" --dim batch=2 --dim seq=8 --train --data "$work/tokens.bin" \
  --steps 3 --lr 3e-3 --warmup 20 --micro-batches 4 --update sync --save "$work/reference"
cmp "$work/pipelined/model-step3.safetensors" "$work/reference/model-step3.safetensors"
cmp "$work/pipelined/optimizer-step3.safetensors" "$work/reference/optimizer-step3.safetensors"
echo "main: pipelined and reference weights and AdamW moments are identical after 3 steps"

echo "main: rpc-compile --emit=train -> $work/train.mlir"
"$bin/rpc-compile" "$work/model.onnx" --dim batch=2 --dim seq=8 --emit=train -o "$work/train.mlir"
echo "main: gradients in @train_step: $(grep -o "graph.grad_of" "$work/train.mlir" | wc -l)"

echo "main: rp-ref --grads -> $work/grads"
"$bin/rp-ref" "$work/model.onnx" --dim batch=2 --dim seq=8 --inputs "$work/inputs" \
  --out "$work/grads" --grads
/usr/bin/python3 "$root/test/Frontends/onnx/Inputs/tiny_transformer.py" grads "$work" \
  "$work/grads" 1e-5
