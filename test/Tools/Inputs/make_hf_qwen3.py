"""Writes the committed fixture hf-qwen3-bf16/: a Hugging Face checkpoint as transformers
publishes one, for the Qwen3 test export (test/Frontends/onnx/Inputs/exports/qwen3-dynamo:
hidden 32, 2 layers, vocabulary 264). The model is examples/export/export_model.py's
`build("qwen3", "test")` with other random weights (seed 1), cast to bfloat16 and written by
`save_pretrained(max_shard_size="40KB")`: config.json, generation_config.json, two
model-0000k-of-00002.safetensors shards (safetensors package, metadata {"format": "pt"}) and
model.safetensors.index.json. With --tied, the LM head tied to the embedding
(tie_word_embeddings, for the export qwen3-tied-dynamo): transformers then stores no
lm_head.weight. Not run by ctest: it needs the export environment
(examples/export/requirements.txt):

    python test/Tools/Inputs/make_hf_qwen3.py test/Tools/Inputs/hf-qwen3-bf16
    python test/Tools/Inputs/make_hf_qwen3.py test/Tools/Inputs/hf-qwen3-tied-bf16 --tied
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "export"))
import export_model  # noqa: E402


def main():
    out = sys.argv[1]
    tied = "--tied" in sys.argv[2:]
    torch.manual_seed(1)
    lm = export_model.build("qwen3", "test")
    if tied:
        lm.config.tie_word_embeddings = True
        lm.tie_weights()
    lm = lm.to(torch.bfloat16)
    lm.save_pretrained(out, max_shard_size="40KB")
    print(sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
