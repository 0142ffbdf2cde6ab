"""Packing whole examples into rows of a fixed length (prepare_sft.py).

pack_rows(examples, seq, pad_id): best-fit decreasing bin packing (Johnson 1973; the
"bfd" packing of TRL's pack_dataset): examples are placed longest first, each into the row
whose free space is the smallest that still holds it, or into a new row. Every row is then
filled up to `seq` tokens with `pad_id` (loss mask 0). Each example is one document: its
positions count 0, 1, ... from its first token; the padding of a row is one more document.
Rows are returned in the order they were opened (longest examples first); ties keep the input
order, so the result is deterministic.

split_long(examples, seq): an example longer than a row becomes pieces of `seq` tokens (the
last one shorter), each its own document (positions restart at 0, as TRL's packing does);
its loss mask is kept piece by piece.
"""
import bisect


def split_long(examples, seq):
    """(examples with every one longer than `seq` cut into pieces, number of examples cut)."""
    out, cut = [], 0
    for tokens, mask in examples:
        if len(tokens) <= seq:
            out.append((tokens, mask))
            continue
        cut += 1
        for start in range(0, len(tokens), seq):
            out.append((tokens[start:start + seq], mask[start:start + seq]))
    return out, cut


def pack_rows(examples, seq, pad_id):
    """Rows of `seq` tokens: a list of (tokens, mask, positions) triples, each of length seq.
    `examples` is a list of (tokens, mask); every one must hold 1..seq tokens."""
    order = sorted(range(len(examples)), key=lambda i: -len(examples[i][0]))
    rows = []   # per row, the examples placed in it
    free = []   # sorted (free tokens, row index) of the rows that still have room
    for i in order:
        n = len(examples[i][0])
        if not 1 <= n <= seq:
            raise ValueError(f"an example of {n} tokens does not fit a row of {seq}")
        at = bisect.bisect_left(free, (n, -1))
        if at < len(free):
            room, row = free.pop(at)
        else:
            room, row = seq, len(rows)
            rows.append([])
        rows[row].append(i)
        if room - n > 0:
            bisect.insort(free, (room - n, row))
    packed = []
    for members in rows:
        tokens, mask, positions = [], [], []
        for i in members:
            t, m = examples[i]
            tokens += t
            mask += m
            positions += range(len(t))
        pad = seq - len(tokens)
        tokens += [pad_id] * pad
        mask += [0] * pad
        positions += range(pad)
        packed.append((tokens, mask, positions))
    return packed
