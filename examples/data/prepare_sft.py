#!/usr/bin/env python3
"""Prepare supervised fine-tuning data: chat examples as a packed (or masked) token file.

    python3 examples/data/prepare_sft.py DATA.jsonl OUT.bin [--format auto|messages|alpaca|
        sharegpt|pairs] [--model DIR | --template plain|chatml] [--tokenizer tokenizer.json]
        [--seq S [--split-long] [--eval-fraction F] [--seed N] [--pad-id ID]] [--eos TOKEN]

Reads one chat example per JSONL line in OpenAI's `messages`, Alpaca's
`instruction`/`input`/`output`, ShareGPT's `conversations` (from/value) or rpc's earlier
`prompt`/`response` format (chat_formats.py; detected from the first line unless --format),
renders each with the chat template of the model directory --model (its chat_template.jinja or
tokenizer_config.json, applied as transformers applies it: chat_template.py) or a built-in
--template, and tokenizes it with --tokenizer, else DIR/tokenizer.json, else byte tokens
(examples/qwen3-tiny's vocabulary: UTF-8 bytes 0-255, <|endoftext|> = 256). The loss is on
assistant turns only (their content and end marker); --eos appends a trained end token after
each example (default: <|endoftext|> with a built-in template, none with a model's).

With --seq S the examples are packed whole into rows of exactly S tokens, best-fit decreasing
(packing.py), and written as a packed token file (runtime/data/TokenFile.h): tokens, the loss
mask, and each token's position in its example (restarting at 0 at each example), so a model
with a `position_ids` input trains each example on itself alone; rp-run reads one row per
window (the plan's sequence must be S). Padding (--pad-id, default the end token or 0) fills
each row; its share of all tokens is reported. An example longer than S is refused unless
--split-long cuts it into pieces of S tokens (each its own document). --eval-fraction (default
0.05) of the examples, drawn with --seed, are held out: packed into rows of their own at the
end of the file, which rp-run evaluates on (--eval-every).
Without --seq the examples are written back to back as a masked token file (rp-run draws
windows anywhere in it, across examples, as for a model without `position_ids`).

Exit 2 with a message and nothing written on bad input: a line that is not JSON or breaks its
format (an unknown role, a missing field, no assistant turn), naming FILE:LINE; a model
directory without a chat template; a conversation the template refuses or cannot split at its
assistant turns (FILE:LINE); an example longer than S without --split-long (FILE:LINE); an
empty input; a bad tokenizer.
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_formats import FORMATS, read_conversations  # noqa: E402
from chat_template import (BuiltinRenderer, TemplateError, encode_conversation,  # noqa: E402
                           model_renderer)
from packing import pack_rows, split_long  # noqa: E402
from tokenfiles import (load_tokenizer, write_masked_token_file,  # noqa: E402
                        write_packed_token_file)

END_OF_TEXT = "<|endoftext|>"


class InputError(Exception):
    """Bad input: the message is printed and the exit status is 2."""


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="JSONL file of chat examples")
    ap.add_argument("out", help="token file to write")
    ap.add_argument("--format", choices=("auto",) + FORMATS, default="auto")
    ap.add_argument("--model", help="model directory whose chat template (and tokenizer.json) "
                                    "to use")
    ap.add_argument("--template", choices=sorted(BuiltinRenderer.TURNS),
                    help="built-in template (default plain; not with --model)")
    ap.add_argument("--tokenizer", help="Hugging Face tokenizer.json (default: the model's, "
                                        "else byte tokens)")
    ap.add_argument("--eos", help="token appended and trained after each example ('': none)")
    ap.add_argument("--seq", type=int, help="pack whole examples into rows of this many tokens")
    ap.add_argument("--split-long", action="store_true",
                    help="cut an example longer than --seq into pieces instead of refusing it")
    ap.add_argument("--eval-fraction", type=float, default=0.05,
                    help="share of examples held out for evaluation (with --seq)")
    ap.add_argument("--seed", type=int, default=0, help="draw of the held-out examples")
    ap.add_argument("--pad-id", type=int, help="padding token id (default: the end token or 0)")
    args = ap.parse_args(argv)
    if args.model and args.template:
        ap.error("--model and --template both name a template; pass one")
    if args.seq is not None and args.seq < 2:
        ap.error("--seq must be at least 2")
    if not 0 <= args.eval_fraction < 1:
        ap.error("--eval-fraction must be in [0, 1)")
    if args.seq is None and args.split_long:
        ap.error("--split-long needs --seq")
    return args


def tokenizer_for(path, eos):
    """The tokenizer of `path` (None: byte tokens) whose eos_id is the id of `eos` ('' : None).
    Byte tokens know one end token, <|endoftext|> (256)."""
    tokenizer = load_tokenizer(path, eos)
    if path is None:
        if eos not in ("", END_OF_TEXT):
            raise InputError(f"--eos {eos!r}: byte tokens have only {END_OF_TEXT} (256); pass "
                             "--tokenizer")
        tokenizer.eos_id = 256 if eos else None
    return tokenizer


def renderer_and_tokenizer(args):
    """(renderer, template description, tokenizer whose eos_id is the end token or None)."""
    if args.model:
        if not os.path.isdir(args.model):
            raise InputError(f"--model {args.model} is not a directory")
        try:
            renderer, where = model_renderer(args.model)
        except TemplateError as e:
            raise InputError(str(e))
        eos = args.eos if args.eos is not None else ""
        path = args.tokenizer or os.path.join(args.model, "tokenizer.json")
        tokenizer = tokenizer_for(path if os.path.isfile(path) or args.tokenizer else None, eos)
        return renderer, f"{where} ({renderer.name})", tokenizer
    renderer = BuiltinRenderer(args.template or "plain")
    eos = args.eos if args.eos is not None else END_OF_TEXT
    return renderer, renderer.name, tokenizer_for(args.tokenizer, eos)


def encode_all(conversations, renderer, tokenizer, path):
    """(tokens, mask) per conversation; TemplateError becomes InputError naming the line."""
    examples = []
    for number, conversation in conversations:
        try:
            examples.append(encode_conversation(conversation, renderer, tokenizer,
                                                tokenizer.eos_id))
        except TemplateError as e:
            raise InputError(f"{path}:{number}: {e}")
    return examples


def pack(args, numbers, examples, pad_id):
    """(train rows, eval rows, report words): the held-out draw, splitting, packing."""
    too_long = [n for n, (t, _) in zip(numbers, examples) if len(t) > args.seq]
    if too_long and not args.split_long:
        longest = max(len(t) for t, _ in examples)
        raise InputError(f"{args.data}:{too_long[0]}: an example of "
                         f"{len(examples[numbers.index(too_long[0])][0])} tokens is longer than "
                         f"a row of --seq {args.seq} ({len(too_long)} such examples, the longest "
                         f"{longest}); pass --split-long to cut them into pieces, or a larger "
                         "--seq")
    held = set(random.Random(args.seed).sample(range(len(examples)),
                                               int(len(examples) * args.eval_fraction)))
    train = [e for i, e in enumerate(examples) if i not in held]
    evals = [e for i, e in enumerate(examples) if i in held]
    if not train:
        raise InputError(f"{args.data}: every example is held out; lower --eval-fraction")
    train, cut_train = split_long(train, args.seq)
    evals, cut_eval = split_long(evals, args.seq)
    note = (f", {cut_train + cut_eval} examples longer than {args.seq} tokens split"
            if cut_train + cut_eval else "")
    return pack_rows(train, args.seq, pad_id), pack_rows(evals, args.seq, pad_id), \
        f"{len(held)} held out{note}"


def run(args):
    renderer, template, tokenizer = renderer_and_tokenizer(args)
    try:
        fmt, conversations = read_conversations(args.data, args.format)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(str(e))
    if not conversations:
        raise InputError(f"{args.data} holds no chat example")
    examples = encode_all(conversations, renderer, tokenizer, args.data)
    numbers = [n for n, _ in conversations]
    head = f"prepare_sft: {args.out}: {len(examples)} examples ({fmt}, template {template})"
    if args.seq is None:
        tokens = [t for ex, _ in examples for t in ex]
        mask = [m for _, ex in examples for m in ex]
        write_masked_token_file(args.out, tokens, mask)
        print(f"{head}, {len(tokens)} tokens, {sum(mask)} trained")
        return
    pad_id = args.pad_id if args.pad_id is not None else (
        tokenizer.eos_id if tokenizer.eos_id is not None else 0)
    train, evals, words = pack(args, numbers, examples, pad_id)
    rows = train + evals
    tokens = [t for r in rows for t in r[0]]
    mask = [m for r in rows for m in r[1]]
    positions = [p for r in rows for p in r[2]]
    real = sum(len(t) for t, _ in examples)
    padding = 1 - real / len(tokens)
    write_packed_token_file(args.out, tokens, mask, positions, args.seq, len(evals))
    print(f"{head}, {words}: {len(rows)} rows of {args.seq} tokens ({len(evals)} eval), "
          f"{real} tokens, {sum(mask)} trained, padding {100 * padding:.2f} %")


def main(argv=None):
    args = parse_args(argv)
    try:
        run(args)
    except InputError as e:
        print(f"prepare_sft: error: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:  # writing the output, or a token id it cannot store
        print(f"prepare_sft: error: {args.out}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
