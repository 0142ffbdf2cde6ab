#!/usr/bin/env python3
"""Fine-tune a local Hugging Face causal LM with rpc, from its directory to its directory.

    python examples/finetune/finetune.py --model-dir HF_DIR --text FILE --out OUT_DIR
        [--work DIR] [--steps 100] [--lr 1e-3] [--warmup 10] [--batch 4] [--seq 64]
        [--micro-batches 4] [--gpus 2] [--update sync|async] [--backend cpu|cuda]
        [--export-dtype auto|f32|bf16|f16] [--shard-size SIZE] [--bin DIR] [--no-check]
        [--force] [--lora-rank R [--lora-alpha A] [--lora-targets REGEX] [--merged]]

HF_DIR is a model directory as published (config.json, model.safetensors or shards with
model.safetensors.index.json, tokenizer.json); nothing is downloaded. The steps, each a
command printed before it runs:

1. export the training graph: examples/export/export_model.py --model-dir HF_DIR (the graph
   is built from config.json; the weights are not copied) -> WORK/export/model.onnx;
2. tokenize FILE with HF_DIR/tokenizer.json (`tokenizers`; blank-line separated documents,
   each followed by the end-of-text token when the tokenizer has one) -> WORK/tokens.bin, an
   llm.c token file (uint16 ids; uint32, llm.c's version 7, beyond 65,535);
3. rpc-compile WORK/export/model.onnx -> WORK/model.rpplan;
4. rp-run WORK/model.rpplan --weights HF_DIR --data WORK/tokens.bin --steps N ...
   --export-hf OUT_DIR --hf-config HF_DIR/config.json: trains from the published weights and
   writes the fine-tuned model in the Hugging Face layout (--export-dtype auto: the dtype of
   config.json, e.g. bf16 for a bf16 model; f32 otherwise); the tokenizer and generation
   files of HF_DIR are copied beside it, so OUT_DIR is a model directory like HF_DIR;
5. unless --no-check: examples/export/check_hf_export.py OUT_DIR --tokens WORK/tokens.bin
   --before HF_DIR: loads OUT_DIR with transformers, checks its tensors, and prints the loss
   on held-out windows of the text before and after fine-tuning.

With --lora-rank R, rpc-compile adds LoRA adapters (--lora-alpha, default 16; --lora-targets,
default q_proj|v_proj) and trains only them; OUT_DIR then holds PEFT adapters
(adapter_model.safetensors + adapter_config.json with base_model_name_or_path HF_DIR, loaded
with peft.PeftModel.from_pretrained on HF_DIR), or with --merged the full model with the
adapters merged in.

Models with tied embeddings work as published (the shared weight is one param; the export
writes it once, under the input embedding's name). Runs with the export environment's Python
(examples/export/requirements.txt); rpc-compile and rp-run come from --bin (default: build/bin
of this repository).
"""
import argparse
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Files of a model directory besides the weights that make OUT_DIR a model directory too.
EXTRA_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "generation_config.json", "vocab.json", "merges.txt"]
END_OF_TEXT = ["<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>"]


def run(cmd):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


def tokenize(tokenizer_path, text_path, out_path):
    """Writes the llm.c token file of `text_path`; returns (tokens, vocabulary size)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_path)
    eot = next((tok.token_to_id(t) for t in END_OF_TEXT if tok.token_to_id(t) is not None), None)
    with open(text_path, encoding="utf-8", errors="replace") as f:
        docs = [d for d in f.read().split("\n\n") if d.strip()]
    ids = []
    for enc in tok.encode_batch(docs, add_special_tokens=False):
        ids.extend(enc.ids)
        if eot is not None:
            ids.append(eot)
    vocab = tok.get_vocab_size()
    wide = vocab > 65535
    header = [20240801 if wide else 20240520, 7 if wide else 1, len(ids)] + [0] * 253
    with open(out_path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%d%s" % (len(ids), "I" if wide else "H"), *ids))
    return len(ids), vocab


def export_dtype(choice, config_path):
    if choice != "auto":
        return choice
    config = json.load(open(config_path))
    dtype = config.get("dtype") or config.get("torch_dtype") or "float32"
    return {"bfloat16": "bf16", "float16": "f16"}.get(dtype, "f32")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-dir", required=True)
    p.add_argument("--text", required=True, help="UTF-8 text to fine-tune on")
    p.add_argument("--out", required=True, help="the fine-tuned model directory to write")
    p.add_argument("--work", help="intermediate files (default: OUT.work)")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--lr", default="1e-3")
    p.add_argument("--warmup", default="10")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--micro-batches", default="4")
    p.add_argument("--gpus", default="2")
    p.add_argument("--update", default="sync", choices=["sync", "async"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--export-dtype", default="auto", choices=["auto", "f32", "bf16", "f16"])
    p.add_argument("--shard-size", help="rp-run --export-shard-size (default 50GB)")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--force", action="store_true", help="replace a non-empty OUT")
    p.add_argument("--lora-rank", type=int, help="train LoRA adapters of this rank only")
    p.add_argument("--lora-alpha", default="16")
    p.add_argument("--lora-targets", default="q_proj|v_proj")
    p.add_argument("--merged", action="store_true", help="LoRA: write the merged model")
    args = p.parse_args()

    model_dir = os.path.abspath(args.model_dir)
    config = os.path.join(model_dir, "config.json")
    tokenizer = os.path.join(model_dir, "tokenizer.json")
    for path in (config, tokenizer):
        if not os.path.isfile(path):
            sys.exit(f"finetune: {model_dir} has no {os.path.basename(path)}")
    work = os.path.abspath(args.work or args.out.rstrip("/") + ".work")
    os.makedirs(work, exist_ok=True)
    py = sys.executable

    run([py, os.path.join(ROOT, "examples", "export", "export_model.py"), "--model-dir",
         model_dir, "--exporter", "dynamo", "--batch", str(args.batch), "--seq", str(args.seq),
         "--out", os.path.join(work, "export")])
    tokens = os.path.join(work, "tokens.bin")
    count, vocab = tokenize(tokenizer, args.text, tokens)
    print(f"finetune: {args.text}: {count} tokens (vocabulary {vocab}) -> {tokens}", flush=True)
    plan = os.path.join(work, "model.rpplan")
    lora = ["--lora-rank", str(args.lora_rank), "--lora-alpha", args.lora_alpha,
            "--lora-targets", args.lora_targets] if args.lora_rank else []
    run([os.path.join(args.bin, "rpc-compile"), os.path.join(work, "export", "model.onnx"),
         "--gpus", args.gpus, "--micro-batches", args.micro_batches, "--update", args.update,
         "-o", plan] + lora)
    train = [os.path.join(args.bin, "rp-run"), plan, "--weights", model_dir, "--data", tokens,
             "--steps", str(args.steps), "--lr", args.lr, "--warmup", args.warmup,
             "--backend", args.backend, "--no-progress", "--export-hf", args.out,
             "--export-dtype", export_dtype(args.export_dtype, config),
             "--log", os.path.join(work, "metrics.jsonl")]
    adapters = args.lora_rank and not args.merged
    if args.lora_rank:
        train += ["--lora-alpha", args.lora_alpha]
        train += ["--export-merged"] if args.merged else ["--base-model", model_dir]
    if not adapters:
        train += ["--hf-config", config]
    if args.shard_size:
        train += ["--export-shard-size", args.shard_size]
    run(train + (["--export-force"] if args.force else []))
    for name in EXTRA_FILES if not adapters else []:
        if os.path.isfile(os.path.join(model_dir, name)):
            shutil.copy(os.path.join(model_dir, name), os.path.join(args.out, name))
    if not args.no_check:
        run([py, os.path.join(ROOT, "examples", "export", "check_hf_export.py"), args.out,
             "--tokens", tokens, "--seq", str(args.seq), "--before", model_dir]
            + (["--base", model_dir] if adapters else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
