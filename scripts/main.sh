#!/usr/bin/env bash
# The main job: installs what is missing, builds rpc, and runs it on the bundled example.
# Until the committed example model and rp-run's training exist (issues 7-8), it writes the
# tests' small two-layer transformer (ONNX, via Debian's python3-onnx), prints its stage plan,
# compiles it into a plan file that rp-run --check validates, builds its training function,
# and computes its loss and gradients with rp-ref.
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
"$bin/rpc-compile" "$work/model.onnx" --dim batch=2 --dim seq=8 --gpus 2 --update sync \
  -o "$work/model.rpplan"
"$bin/rp-run" "$work/model.rpplan" --check

echo "main: rpc-compile --emit=train -> $work/train.mlir"
"$bin/rpc-compile" "$work/model.onnx" --dim batch=2 --dim seq=8 --emit=train -o "$work/train.mlir"
echo "main: gradients in @train_step: $(grep -o "graph.grad_of" "$work/train.mlir" | wc -l)"

echo "main: rp-ref --grads -> $work/grads"
"$bin/rp-ref" "$work/model.onnx" --dim batch=2 --dim seq=8 --inputs "$work/inputs" \
  --out "$work/grads" --grads
/usr/bin/python3 "$root/test/Frontends/onnx/Inputs/tiny_transformer.py" grads "$work" \
  "$work/grads" 1e-5
