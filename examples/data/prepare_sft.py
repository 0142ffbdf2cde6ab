#!/usr/bin/env python3
"""Prepare supervised fine-tuning data: prompt/response pairs as a masked token file.

    python3 examples/data/prepare_sft.py PAIRS.jsonl OUT.bin [--tokenizer tokenizer.json]
        [--template plain|chatml] [--eos TOKEN]

Reads one JSON object per line with string fields "prompt" and "response" (blank lines are
skipped), formats each pair with the template, tokenizes the prompt part and the response part
separately and writes the concatenation of all pairs as a masked token file
(runtime/data/TokenFile.h: magic 20251126): prompt tokens get loss mask 0 (never trained),
response tokens and the end-of-sequence token after each pair get mask 1. rp-run and rp-ref
--train turn the labels of masked tokens into the loss's ignore_index, and the loss of a step
is the mean over its trained labels.

Templates (the text around the pair; the assistant's part is the response):
  plain   prompt part "User: {prompt}\\nAssistant: ", response part "{response}"
  chatml  prompt part "<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n",
          response part "{response}<|im_end|>\\n" (Qwen's chat format; with a Qwen
          tokenizer.json the markers are single special tokens)
then the end-of-sequence token (--eos, default <|endoftext|>; its id must exist in the
tokenizer). Without --tokenizer the text is byte tokens (examples/qwen3-tiny's vocabulary:
UTF-8 bytes 0-255, <|endoftext|> = 256). Pairs are packed back to back: rp-run draws windows
of seq + 1 tokens anywhere in the file, as for pre-training text.

Exit 2 with a message on a bad line (not JSON, not an object, a missing or non-string field,
naming the line number), an empty input, or a bad tokenizer.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenfiles import load_tokenizer, write_masked_token_file  # noqa: E402

TEMPLATES = {
    "plain": ("User: {prompt}\nAssistant: ", "{response}"),
    "chatml": ("<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n",
               "{response}<|im_end|>\n"),
}


def read_pairs(path):
    """Yields (line number, prompt, response); raises ValueError naming the bad line."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not JSON ({e.msg})")
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object")
            for key in ("prompt", "response"):
                if not isinstance(obj.get(key), str):
                    raise ValueError(f"{path}:{number}: field {key!r} is missing or not a string")
            yield number, obj["prompt"], obj["response"]


def encode_pairs(pairs, tokenizer, template):
    """Tokens and loss mask of every pair, packed back to back."""
    prompt_fmt, response_fmt = TEMPLATES[template]
    tokens, mask = [], []
    for _, prompt, response in pairs:
        p = tokenizer.encode(prompt_fmt.format(prompt=prompt))
        r = tokenizer.encode(response_fmt.format(response=response))
        if tokenizer.eos_id is not None:
            r.append(tokenizer.eos_id)
        tokens += p + r
        mask += [0] * len(p) + [1] * len(r)
    return tokens, mask


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", help="JSONL file of {\"prompt\": ..., \"response\": ...}")
    ap.add_argument("out", help="masked token file to write")
    ap.add_argument("--tokenizer", help="Hugging Face tokenizer.json (default: byte tokens)")
    ap.add_argument("--template", choices=sorted(TEMPLATES), default="plain")
    ap.add_argument("--eos", default="<|endoftext|>",
                    help="end-of-sequence token after each response ('' : none)")
    args = ap.parse_args()
    tokenizer = load_tokenizer(args.tokenizer, args.eos)
    try:
        pairs = list(read_pairs(args.pairs))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"prepare_sft: error: {e}", file=sys.stderr)
        return 2
    if not pairs:
        print(f"prepare_sft: error: {args.pairs} holds no prompt/response pair", file=sys.stderr)
        return 2
    tokens, mask = encode_pairs(pairs, tokenizer, args.template)
    write_masked_token_file(args.out, tokens, mask)
    print(f"prepare_sft: {args.out}: {len(pairs)} pairs, {len(tokens)} tokens, "
          f"{sum(mask)} trained")
    return 0


if __name__ == "__main__":
    sys.exit(main())
