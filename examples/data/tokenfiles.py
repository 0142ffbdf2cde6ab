"""Token files rp-run reads (runtime/data/TokenFile.h), and tokenizers for the data scripts.

write_token_file: llm.c's format (256 x int32 header: magic 20240520 version 1 with uint16
tokens, or magic 20240801 version 7 with uint32 tokens when an id exceeds 65535; then the
tokens, little-endian). write_masked_token_file: rpc's masked format (magic 20251126; version
1 uint16 / 2 uint32; header words [2] token count and [3] mask count; then the tokens, then
one loss-mask byte per token: 1 = trained as a label, 0 = not). write_packed_token_file:
the packed variant (versions 3 uint16 / 4 uint32; header words [4] position count, [5] row
length, [6] eval rows; after the mask one position per token in the token width). All write
atomically (temporary file, fsync, rename).

Tokenizers: ByteTokenizer is the byte-level vocabulary of examples/qwen3-tiny (one token per
UTF-8 byte, <|endoftext|> = 256); HfTokenizer wraps a Hugging Face `tokenizer.json` through the
`tokenizers` package (imported only when used).
"""
import array
import os
import struct
import sys

HEADER_INTS = 256
LLMC_U16 = (20240520, 1)
LLMC_U32 = (20240801, 7)
MASKED_MAGIC = 20251126


def _pack_ids(tokens, wide):
    ids = array.array("I" if wide else "H", tokens)
    if sys.byteorder == "big":
        ids.byteswap()  # the files are little-endian
    return ids.tobytes()


def _write_atomic(path, chunks):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_token_file(path, tokens):
    """Writes `tokens` (ints >= 0) as an llm.c token file; uint32 when an id exceeds 65535."""
    wide = bool(tokens) and max(tokens) > 0xFFFF
    magic, version = LLMC_U32 if wide else LLMC_U16
    header = struct.pack("<3i", magic, version, len(tokens)) + bytes(4 * (HEADER_INTS - 3))
    _write_atomic(path, [header, _pack_ids(tokens, wide)])


def write_masked_token_file(path, tokens, mask):
    """Writes `tokens` and their 0/1 loss mask (same length) as a masked token file."""
    if len(mask) != len(tokens):
        raise ValueError(f"{len(mask)} mask bytes for {len(tokens)} tokens")
    if any(m not in (0, 1) for m in mask):
        raise ValueError("the loss mask holds a value other than 0 or 1")
    wide = bool(tokens) and max(tokens) > 0xFFFF
    header = struct.pack("<4i", MASKED_MAGIC, 2 if wide else 1, len(tokens), len(mask))
    header += bytes(4 * (HEADER_INTS - 4))
    _write_atomic(path, [header, _pack_ids(tokens, wide), bytes(mask)])


def write_packed_token_file(path, tokens, mask, positions, row_length, eval_rows):
    """Writes rows of `row_length` tokens with their 0/1 loss mask and per-token positions
    (each position 0 where a document starts, else the previous one + 1; every row starts at
    0) as a packed token file; the last `eval_rows` rows are the held-out ones. uint32 ids when
    a token or position exceeds 65535. Raises ValueError on inconsistent arguments."""
    n = len(tokens)
    if len(mask) != n or len(positions) != n:
        raise ValueError(f"{len(mask)} mask bytes and {len(positions)} positions for {n} tokens")
    if row_length < 1 or n % row_length or not 0 <= eval_rows <= n // row_length:
        raise ValueError(f"{n} tokens, rows of {row_length}, {eval_rows} eval rows")
    if any(m not in (0, 1) for m in mask):
        raise ValueError("the loss mask holds a value other than 0 or 1")
    for i, p in enumerate(positions):
        if p != 0 and (i % row_length == 0 or p != positions[i - 1] + 1):
            raise ValueError(f"position {p} at index {i} breaks the packed rows' rule")
    wide = n > 0 and max(max(tokens), max(positions)) > 0xFFFF
    header = struct.pack("<7i", MASKED_MAGIC, 4 if wide else 3, n, n, n, row_length, eval_rows)
    header += bytes(4 * (HEADER_INTS - 7))
    _write_atomic(path, [header, _pack_ids(tokens, wide), bytes(mask),
                         _pack_ids(positions, wide)])


def _fail(message):
    """Exit 2 with `message` on stderr, named after the running script."""
    print(f"{os.path.basename(sys.argv[0]).removesuffix('.py')}: error: {message}",
          file=sys.stderr)
    sys.exit(2)


class ByteTokenizer:
    """examples/qwen3-tiny's vocabulary: UTF-8 bytes 0-255, <|endoftext|> = 256."""

    eos_id = 256

    def encode(self, text):
        return list(text.encode("utf-8"))


class HfTokenizer:
    """A Hugging Face tokenizer.json (the `tokenizers` package); no special tokens are added
    by encode(). eos_id: the id of `eos` (default <|endoftext|>), or None without one."""

    def __init__(self, path, eos="<|endoftext|>"):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            _fail("--tokenizer needs the `tokenizers` package (pip install tokenizers)")
        try:
            self._tok = Tokenizer.from_file(path)
        except Exception as e:  # the package raises a plain Exception on a bad file
            _fail(f"cannot read tokenizer {path}: {e}")
        self.eos_id = self._tok.token_to_id(eos) if eos else None
        if eos and self.eos_id is None:
            _fail(f"tokenizer {path} has no token {eos!r} (pass --eos)")

    def encode(self, text):
        return self._tok.encode(text, add_special_tokens=False).ids


def load_tokenizer(path, eos):
    """HfTokenizer(path, eos) when `path` is given, else ByteTokenizer()."""
    return HfTokenizer(path, eos) if path else ByteTokenizer()
