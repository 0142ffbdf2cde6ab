"""Loads a directory rpc-finetune wrote with transformers (and PEFT for LoRA adapters), the way a
user would, and prints what the test checks: the weights load, generation runs, the chat
template applies, and the weights moved from the base model's.

usage: check_finetuned.py full OUT BASE     a full (or merged) model directory
       check_finetuned.py lora OUT BASE     PEFT adapters over the base model directory
       check_finetuned.py tokens WORK BASE TEXT...
                                            WORK/data/tokens.bin is each text file's tokens as
                                            the base tokenizer encodes the file whole, then the
                                            end-of-text token

Prints one line per check ("generate: N new tokens", "chat: ...", "moved: ...", "tokens: same").
"""
import struct
import sys

import torch
import transformers


def weights_moved(model, base):
    a, b = model.state_dict(), base.state_dict()
    moved = sum(1 for k in b if k in a and not torch.equal(a[k].float(), b[k].float()))
    return moved, len(b)


def check_model(kind, out, base_dir):
    base = transformers.AutoModelForCausalLM.from_pretrained(base_dir)
    if kind == "lora":
        import peft
        model = peft.PeftModel.from_pretrained(
            transformers.AutoModelForCausalLM.from_pretrained(base_dir), out)
        model = model.merge_and_unload()
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(out)
    tok = transformers.AutoTokenizer.from_pretrained(out)
    moved, total = weights_moved(model, base)
    print(f"moved: {moved} of {total} tensors", "(some)" if moved else "(none)")
    ids = tok("the cat", return_tensors="pt").input_ids
    gen = model.generate(ids, max_new_tokens=5, min_new_tokens=5, do_sample=False,
                         pad_token_id=tok.eos_token_id)
    print(f"generate: {gen.shape[1] - ids.shape[1]} new tokens")
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                   add_generation_prompt=True)
    print("chat: " + chat.replace("\n", "|"))


def check_tokens(work, base_dir, texts):
    tok = transformers.AutoTokenizer.from_pretrained(base_dir)
    want = []
    for path in texts:
        with open(path, encoding="utf-8") as f:
            want += tok(f.read(), add_special_tokens=False).input_ids + [tok.eos_token_id]
    with open(f"{work}/data/tokens.bin", "rb") as f:
        magic, version, count = struct.unpack("<3i", f.read(12))
        f.seek(1024)
        width = 2 if version == 1 else 4
        got = list(struct.unpack(f"<{count}{'H' if width == 2 else 'I'}", f.read(count * width)))
    print("tokens: same" if got == want else f"tokens: differ ({len(got)} vs {len(want)})")


if __name__ == "__main__":
    if sys.argv[1] == "tokens":
        check_tokens(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        check_model(sys.argv[1], sys.argv[2], sys.argv[3])
