"""Synthetic chat data for examples/data/prepare_sft.py, and an independent check of the packed
token file it writes.

usage: make_chat.py model DIR
           DIR/tokenizer_config.json with a ChatML chat template (Qwen2's: each message
           "<|im_start|>ROLE\\nCONTENT<|im_end|>\\n", generation prompt "<|im_start|>assistant\\n")
           and no tokenizer.json (prepare_sft uses byte tokens)
       make_chat.py data FORMAT N OUT.jsonl
           N examples of varied length (about 60 to 1,000 byte tokens rendered) in FORMAT:
           messages (1-3 user/assistant exchanges, some with a system message), alpaca
           (instruction, sometimes an input) or sharegpt (1-3 human/gpt exchanges)
       make_chat.py check DATA.jsonl PACKED.bin SEQ HELD MAX_PADDING
           reads the packed token file by its format (runtime/data/TokenFile.h: version 3, rows
           of SEQ, positions restarting at 0 per document, every row starting one) and checks
           that its documents are exactly DATA's examples rendered with the ChatML template,
           each once, with loss mask 1 exactly on the assistant turns' "CONTENT<|im_end|>\\n";
           that the last HELD examples' worth of eval rows hold HELD documents; and that padding
           (token 0, mask 0) is at most MAX_PADDING of the tokens. Prints "packed ok: ...".
       make_chat.py runs MASKED.bin
           prints the byte tokens of a masked token file (version 1) as runs of one loss-mask
           value, one "MASK: TEXT" line each (TEXT as a Python repr)
"""
import collections
import json
import random
import struct
import sys

WORDS = ("the model reads a token and writes the next one while every layer keeps its "
         "weights in host memory so that many small examples train together in one row of "
         "packed documents each attending only to itself").split()
TEMPLATE = ("{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
            "message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}"
            "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}")


def text(rng, lo, hi):
    words = []
    while sum(len(w) + 1 for w in words) < rng.randint(lo, hi):
        words.append(rng.choice(WORDS))
    return " ".join(words).capitalize() + "."


def example(rng, fmt):
    turns = rng.randint(1, 3)
    if fmt == "alpaca":
        obj = {"instruction": text(rng, 10, 120), "input": "", "output": text(rng, 10, 400)}
        if rng.random() < 0.5:
            obj["input"] = text(rng, 10, 200)
        return obj
    if fmt == "sharegpt":
        conv = []
        for _ in range(turns):
            conv += [{"from": "human", "value": text(rng, 5, 120)},
                     {"from": "gpt", "value": text(rng, 10, 200)}]
        return {"conversations": conv}
    messages = [{"role": "system", "content": text(rng, 10, 60)}] if rng.random() < 0.3 else []
    for _ in range(turns):
        messages += [{"role": "user", "content": text(rng, 5, 120)},
                     {"role": "assistant", "content": text(rng, 10, 200)}]
    return {"messages": messages}


def messages_of(obj):
    """The conversation of one line, by an independent reading of the three formats."""
    if "messages" in obj:
        return [(m["role"], m["content"]) for m in obj["messages"]]
    if "conversations" in obj:
        roles = {"human": "user", "gpt": "assistant"}
        return [(roles[t["from"]], t["value"]) for t in obj["conversations"]]
    user = obj["instruction"] + ("\n\n" + obj["input"] if obj["input"] else "")
    return [("user", user), ("assistant", obj["output"])]


def rendered(obj):
    """(byte tokens, mask) of one example under the ChatML template."""
    tokens, mask = b"", []
    for role, content in messages_of(obj):
        head = f"<|im_start|>{role}\n".encode()
        body = f"{content}<|im_end|>\n".encode()
        tokens += head + body
        mask += [0] * len(head) + [1 if role == "assistant" else 0] * len(body)
    return tokens, tuple(mask)


def check(data, packed, seq, held, max_padding):
    raw = open(packed, "rb").read()
    magic, version, n, n_mask, n_pos, row, eval_rows = struct.unpack("<7i", raw[:28])
    assert (magic, version, row) == (20251126, 3, seq), (magic, version, row)
    assert n == n_mask == n_pos and n % seq == 0, (n, n_mask, n_pos)
    assert len(raw) == 1024 + 5 * n, len(raw)
    tokens = struct.unpack(f"<{n}H", raw[1024:1024 + 2 * n])
    mask = raw[1024 + 2 * n:1024 + 3 * n]
    positions = struct.unpack(f"<{n}H", raw[1024 + 3 * n:])
    docs, eval_docs, padding = collections.Counter(), 0, 0
    rows = n // seq
    for r in range(rows):
        starts = [i for i in range(r * seq, (r + 1) * seq) if positions[i] == 0]
        assert starts[0] == r * seq, f"row {r} does not start a document"
        for a, b in zip(starts, starts[1:] + [(r + 1) * seq]):
            assert list(positions[a:b]) == list(range(b - a)), f"positions of [{a}, {b})"
            if set(tokens[a:b]) == {0}:
                assert not any(mask[a:b]), "trained padding"
                padding += b - a
                continue
            docs[(bytes(tokens[a:b]), tuple(mask[a:b]))] += 1
            eval_docs += r >= rows - eval_rows
    want = collections.Counter(rendered(json.loads(line)) for line in open(data) if line.strip())
    assert docs == want, (f"{sum(docs.values())} documents in the file, {sum(want.values())} "
                          f"examples; {sum((docs - want).values())} unexpected")
    assert eval_docs == held, (eval_docs, held)
    fraction = padding / n
    assert fraction <= max_padding, f"padding {fraction:.4f} > {max_padding}"
    print(f"packed ok: {sum(docs.values())} documents in {rows} rows of {seq} ({eval_rows} eval, "
          f"{eval_docs} held-out documents), padding {100 * fraction:.2f} % <= "
          f"{100 * max_padding:g} %")


def main():
    cmd = sys.argv[1]
    if cmd == "model":
        import os
        os.makedirs(sys.argv[2], exist_ok=True)
        with open(os.path.join(sys.argv[2], "tokenizer_config.json"), "w") as f:
            json.dump({"chat_template": TEMPLATE, "eos_token": "<|im_end|>"}, f)
    elif cmd == "data":
        fmt, count, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        rng = random.Random(f"{fmt}-{count}")
        with open(out, "w") as f:
            for _ in range(count):
                f.write(json.dumps(example(rng, fmt)) + "\n")
    elif cmd == "runs":
        raw = open(sys.argv[2], "rb").read()
        n = struct.unpack("<i", raw[8:12])[0]
        tokens, mask = struct.unpack(f"<{n}H", raw[1024:1024 + 2 * n]), raw[1024 + 2 * n:]
        start = 0
        for i in range(1, n + 1):
            if i == n or mask[i] != mask[start]:
                print(f"{mask[start]}: {bytes(tokens[start:i])!r}")
                start = i
    else:
        check(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))


if __name__ == "__main__":
    main()
