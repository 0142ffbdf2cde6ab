"""Writes token files in the llm.c layout for rp-run's tests (runtime/data/TokenFile.h).

  make_tokens.py words OUT N VOCAB   N tokens of short random "words" over ids < VOCAB (learnable)
  make_tokens.py count OUT N         the ids 0, 1, ..., N-1 (uint16)
  make_tokens.py bad OUT N VOCAB     like `words`, with the id VOCAB at position N // 2
  make_tokens.py masked OUT N VOCAB  like `words`, as a masked token file (magic 20251126):
                                     alternating runs of 1-40 untrained ("prompt") and 1-12
                                     trained ("response") tokens, so micro-batches differ in
                                     trained-label counts and some have none

Header: 256 little-endian int32 (magic 20240520, version 1 = uint16 tokens, token count).
"""
import random
import struct
import sys


def write(path, tokens):
    header = [20240520, 1, len(tokens)] + [0] * 253
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % len(tokens), *tokens))


def write_masked(path, tokens, mask):
    header = [20251126, 1, len(tokens), len(mask)] + [0] * 252
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % len(tokens), *tokens))
        f.write(bytes(mask))


def runs(n):
    rng = random.Random(1)
    mask = []
    while len(mask) < n:
        mask += [0] * rng.randrange(1, 41) + [1] * rng.randrange(1, 13)
    return mask[:n]


def words(n, vocab):
    rng = random.Random(0)
    lexicon = [[rng.randrange(vocab) for _ in range(rng.randrange(2, 6))] for _ in range(20)]
    tokens = []
    while len(tokens) < n:
        tokens += rng.choice(lexicon)
    return tokens[:n]


def main():
    mode, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "words":
        write(out, words(n, int(sys.argv[4])))
    elif mode == "count":
        write(out, list(range(n)))
    elif mode == "bad":
        tokens = words(n, int(sys.argv[4]))
        tokens[n // 2] = int(sys.argv[4])
        write(out, tokens)
    elif mode == "masked":
        write_masked(out, words(n, int(sys.argv[4])), runs(n))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
