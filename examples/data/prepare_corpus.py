#!/usr/bin/env python3
"""Prepare the example corpus: English text from Debian's `fortunes` package as byte tokens.

    python3 examples/data/prepare_corpus.py OUT.bin [--source DIR] [--min-bytes N]
        [--tokenizer tokenizer.json [--eos TOKEN]]

Reads every fortune database in DIR (default /usr/share/games/fortunes, installed by
scripts/install-deps.sh: the `fortunes` and `fortunes-min` packages, about 2.5 MB of text; the
`.dat` index files and symlinks are skipped), splits it into fortunes at the `%` separator
lines, and writes the llm.c token-file format rp-run reads (runtime/data/TokenFile.h): a
256 x int32 header (magic 20240520, version 1 = uint16 tokens, token count) followed by the
tokens. The vocabulary is examples/qwen3-tiny's: one token per UTF-8 byte (0-255) and
<|endoftext|> = 256 after each fortune. With --tokenizer, each fortune is tokenized with that
Hugging Face tokenizer.json instead (the `tokenizers` package; no special tokens added) and
followed by --eos (default <|endoftext|>, '' for none); ids above 65535 make an llm.c uint32
file (magic 20240801, version 7). Deterministic: files in sorted order. Fails (exit 2)
when the corpus has fewer than --min-bytes bytes (default 1,000,000).
"""
import argparse
import array
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenfiles import HfTokenizer, write_token_file  # noqa: E402

MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256
END_OF_TEXT = 256


def fortunes(path):
    with open(path, "rb") as f:
        text = f.read()
    for chunk in text.replace(b"\r\n", b"\n").split(b"\n%\n"):
        chunk = chunk.strip(b"\n%")
        if chunk.strip():
            yield chunk


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="token file to write")
    p.add_argument("--source", default="/usr/share/games/fortunes")
    p.add_argument("--min-bytes", type=int, default=1_000_000)
    p.add_argument("--tokenizer", help="Hugging Face tokenizer.json (default: byte tokens)")
    p.add_argument("--eos", default="<|endoftext|>",
                   help="--tokenizer: the token after each fortune ('' : none)")
    args = p.parse_args()
    tokenizer = HfTokenizer(args.tokenizer, args.eos) if args.tokenizer else None
    if not os.path.isdir(args.source):
        print(f"prepare_corpus: error: {args.source} is not a directory (install the Debian "
              "package 'fortunes': scripts/install-deps.sh does)", file=sys.stderr)
        return 2
    tokens = array.array("H") if tokenizer is None else []  # uint16 bytes, or any ids
    files = count = text_bytes = 0
    for name in sorted(os.listdir(args.source)):
        path = os.path.join(args.source, name)
        if name.endswith((".dat", ".u8")) or os.path.islink(path) or not os.path.isfile(path):
            continue
        files += 1
        for fortune in fortunes(path):
            text_bytes += len(fortune)
            count += 1
            if tokenizer is not None:
                tokens += tokenizer.encode(fortune.decode("utf-8", errors="replace"))
                if tokenizer.eos_id is not None:
                    tokens.append(tokenizer.eos_id)
                continue
            tokens.extend(fortune)
            tokens.append(END_OF_TEXT)
    ntokens = len(tokens)
    if text_bytes < args.min_bytes:
        print(f"prepare_corpus: error: only {text_bytes} bytes of text in {args.source} "
              f"(need {args.min_bytes})", file=sys.stderr)
        return 2
    if tokenizer is not None:
        write_token_file(args.out, tokens)
        print(f"prepare_corpus: {args.out}: {ntokens} tokens ({count} fortunes from {files} "
              f"files, {args.tokenizer})")
        return 0
    if sys.byteorder == "big":
        tokens.byteswap()  # the file is little-endian
    header = struct.pack("<3i", MAGIC, VERSION, ntokens) + bytes(4 * (HEADER_INTS - 3))
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(tokens.tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, args.out)
    print(f"prepare_corpus: {args.out}: {ntokens} tokens ({count} fortunes from {files} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
