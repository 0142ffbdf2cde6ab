#!/usr/bin/env bash
# Regenerates every committed export: the test exports (Qwen3, Llama, GPT-2, Mistral, Phi-3,
# Gemma, GPT-NeoX, OLMo-2, Phi, StableLM, Falcon, GPT-J, Cohere, Granite, Gemma-2, DeepSeek-V3 and
# the mixtures of experts Qwen3-MoE and GPT-OSS by the dynamo and the TorchScript exporter, those two again with the router
# load-balancing loss (--router-aux-loss), Mistral again with a sliding window of 6 positions
# (mistral-window-*), Qwen3, Llama and GPT-2 again with tied embeddings (--tied), Qwen3, Llama
# and the windowed Mistral with packed rows (*-packed-dynamo, under Inputs/packed-exports), and
# one with symbolic dims) under test/Frontends/onnx/Inputs/exports, and examples/qwen3-tiny (tied, as the small Qwen3s are). Needs the export environment (requirements.txt):
#   RP_PYTHON=.venv-export/bin/python bash examples/export/export_all.sh
# (PYTHON, the name before the RP_ prefix, is still read for one release, with a warning.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
py="$(rp_env RP_PYTHON PYTHON python3)"
export_model() { "$py" "$root/examples/export/export_model.py" "$@"; }
tests="$root/test/Frontends/onnx/Inputs/exports"
for arch in qwen3 llama gpt2 mistral phi3 gemma gpt_neox olmo2 phi stablelm falcon gptj cohere granite; do
  for exporter in dynamo torchscript; do
    export_model --arch "$arch" --exporter "$exporter" --size test --batch 2 --seq 16 \
      --out "$tests/$arch-$exporter"
  done
done
# Mixtures of experts (transformers' batched_mm experts: static shapes): Qwen3-MoE, GPT-OSS, and
# Mixtral, Qwen2-MoE, OLMoE, which rpc handles with nothing specific to them.
for arch in qwen3_moe gpt_oss mixtral qwen2_moe olmoe; do
  for exporter in dynamo torchscript; do
    export_model --arch "$arch" --exporter "$exporter" --size test --batch 2 --seq 16 \
      --out "$tests/$arch-$exporter"
  done
done
# The same with the router load-balancing loss in the exported loss (coefficient 0.5, so that
# its gradients weigh in the comparisons; seed 2: GPT-OSS's seed-0 routing is balanced over the
# layers, which leaves the aux loss constant and its gradient zero).
for arch in qwen3_moe gpt_oss; do
  for exporter in dynamo torchscript; do
    export_model --arch "$arch" --exporter "$exporter" --size test --batch 2 --seq 16 --seed 2 \
      --router-aux-loss --router-aux-loss-coef 0.5 --out "$tests/$arch-aux-$exporter"
  done
done
for arch in qwen3 llama gpt2; do
  for exporter in dynamo torchscript; do
    export_model --arch "$arch" --exporter "$exporter" --size test --batch 2 --seq 16 --tied \
      --out "$tests/$arch-tied-$exporter"
  done
done
# GPT-NeoX with every LayerNorm written by hand (no LayerNormalization node).
for exporter in dynamo torchscript; do
  export_model --arch gpt_neox --exporter "$exporter" --size test --batch 2 --seq 16 \
    --hand-layer-norm --out "$tests/gpt_neox-handln-$exporter"
done
# Gemma-2 (attention and logit soft-caps, eager attention) and DeepSeek-V3 (multi-head latent
# attention, group-limited sigmoid routing with a shared expert). Gemma-2 twice: without the
# logits' soft-cap (gemma2-nofinalcap-*, whose LM head and loss fuse), and as published, in a
# folder of its own (capped-head-exports): its capped logits are not fused with the loss yet,
# and the tests over every export expect no [tokens, vocab] value.
for exporter in dynamo torchscript; do
  export_model --arch gemma2 --exporter "$exporter" --size test --batch 2 --seq 16 \
    --no-final-logit-softcap --out "$tests/gemma2-nofinalcap-$exporter"
  export_model --arch deepseek_v3 --exporter "$exporter" --size test --batch 2 --seq 16 \
    --out "$tests/deepseek_v3-$exporter"
  export_model --arch gemma2 --exporter "$exporter" --size test --batch 2 --seq 16 \
    --out "$root/test/Frontends/onnx/Inputs/capped-head-exports/gemma2-$exporter"
done
# Mistral with a sliding window of 6 positions over 16: a band mask (graph.attention's window).
for exporter in dynamo torchscript; do
  export_model --arch mistral --exporter "$exporter" --size test --batch 2 --seq 16 \
    --sliding-window 6 --out "$tests/mistral-window-$exporter"
done
# Packed rows (--packed: position_ids restarting at each document, the block-diagonal causal
# mask; dynamo only, TorchScript cannot export torch.diff): Qwen3, Llama, and Mistral with a
# sliding window of 6 positions; in a folder of their own (packed-exports), since their attention
# is not fused yet and the tests over every export expect one graph.attention per layer.
packed="$root/test/Frontends/onnx/Inputs/packed-exports"
for arch in qwen3 llama; do
  export_model --arch "$arch" --exporter dynamo --size test --batch 2 --seq 16 --packed \
    --out "$packed/$arch-packed-dynamo"
done
export_model --arch mistral --exporter dynamo --size test --batch 2 --seq 16 --packed \
  --sliding-window 6 --out "$packed/mistral-packed-window-dynamo"
export_model --arch qwen3 --exporter dynamo --size test --batch 2 --seq 16 --dynamic \
  --out "$tests/qwen3-dynamo-dynamic"
export_model --arch qwen3 --exporter dynamo --size tiny --batch 4 --seq 64 --tied \
  --out "$root/examples/qwen3-tiny"
