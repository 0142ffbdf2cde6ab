#!/usr/bin/env python3
"""Write a tiny local Hugging Face model directory to try rpc-finetune on.

    python examples/finetune/make_tiny_model.py OUT_DIR --text FILE [--arch qwen3|llama]
        [--vocab 512] [--tied] [--dtype bfloat16|float32] [--max-shard-size 200KB] [--seed 0]

OUT_DIR gets what a published model directory holds, made without any download:
    tokenizer.json            a byte-level BPE tokenizer (tokenizers' ByteLevel pre-tokenizer
                              and decoder) trained on FILE with --vocab tokens, "<|endoftext|>"
                              the first (id 0)
    tokenizer_config.json, chat_template.jinja
                              the tokenizer's settings (eos_token "<|endoftext|>") and a
                              ChatML chat template, as transformers saves them (AutoTokenizer
                              loads the directory; apply_chat_template works)
    config.json, generation_config.json, model.safetensors or model-0000k-of-0000n.safetensors
    + model.safetensors.index.json
                              a 2-layer causal LM (hidden 64, 4 heads, 2 KV heads, MLP 192)
                              with random weights (torch.manual_seed(seed)), written by
                              save_pretrained in --dtype, sharded at --max-shard-size; --tied
                              ties the LM head to the input embedding (the checkpoint then has
                              no lm_head.weight)
Needs the export environment (examples/export/requirements.txt).
"""
import argparse
import os
import sys

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

END_OF_TEXT = "<|endoftext|>"
# ChatML, as Qwen's templates write it (without tools).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def train_tokenizer(text_path, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[END_OF_TEXT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([text_path], trainer)
    return tok


def build(arch, vocab, tied):
    common = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=192, max_position_embeddings=512,
                  tie_word_embeddings=tied, bos_token_id=0, eos_token_id=0)
    if arch == "qwen3":
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=16, **common))
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--text", required=True, help="text to train the tokenizer on")
    p.add_argument("--arch", default="qwen3", choices=["qwen3", "llama"])
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--tied", action="store_true")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    p.add_argument("--max-shard-size", default="200KB")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    tok = train_tokenizer(args.text, args.vocab)
    torch.manual_seed(args.seed)
    lm = build(args.arch, tok.get_vocab_size(), args.tied).to(getattr(torch, args.dtype))
    lm.save_pretrained(args.out, max_shard_size=args.max_shard_size)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=END_OF_TEXT,
                                                pad_token=END_OF_TEXT)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(args.out)
    print(f"{args.out}: {sorted(os.listdir(args.out))}")


if __name__ == "__main__":
    sys.exit(main())
