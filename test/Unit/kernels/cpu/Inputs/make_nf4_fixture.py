#!/usr/bin/env python3
"""Reference outputs of bitsandbytes' NF4 quantization, for the tests of rpc's own (which need
no bitsandbytes).

    python make_nf4_fixture.py kernels OUT.safetensors
        random weights and bitsandbytes' quantization of each (CpuQuantizeTest):
          w.<case>                       f32, the weight
          nf4.<case>.codes|qabsmax       u8, quantize_4bit(w, blocksize=64, quant_type="nf4",
                                         compress_statistics=True): packed codes, the 8-bit absmax
          nf4.<case>.absmax2|offset      f32, its second-level absmax and the mean offset
          nf4.<case>.dequantized         f32, dequantize_4bit of the above
          nf4-fp32-absmax.<case>.codes|absmax|dequantized   the same with compress_statistics=False
    python make_nf4_fixture.py weights IN.safetensors OUT.safetensors
        IN's tensors but LoRA adapters (`.lora_`), every `*_proj.weight` (the frozen projections rpc-compile --base-weights
        quantizes) replaced by dequantize_4bit(quantize_4bit(w, ... compress_statistics=True)):
        the reference weights of test/Tools/rp-run-qlora.test.

Made with bitsandbytes 0.50.2 on the CPU (torch 2.15, one thread: torch.mean's float sum,
which gives the double quantization's offset, depends on the thread count for more than 32768
blocks and on the CPU's vector width; this ran on an AVX-512 CPU, whose float sums use 8
lanes).
"""
import sys

import torch
import bitsandbytes.functional as F
from safetensors.torch import load_file, save_file

torch.set_num_threads(1)


def nf4(w, double):
    q, state = F.quantize_4bit(w, blocksize=64, quant_type="nf4", compress_statistics=double)
    return q, state, F.dequantize_4bit(q, state)


def kernels(out):
    g = torch.Generator().manual_seed(0)
    cases = {
        "small": torch.randn(4, 64, generator=g),
        "proj": torch.randn(64, 128, generator=g) * 0.02,
        # 768 blocks: three 256-blocks of the double quantization, a sum over 8 lanes
        "wide": torch.randn(256, 192, generator=g) * 0.05,
        # a stacked expert weight [E, out, in], outliers, a block of zeros
        "experts": torch.randn(3, 64, 128, generator=g) * torch.linspace(0.01, 3.0, 128),
    }
    cases["experts"][1, 5, :64] = 0.0
    t = {}
    for name, w in cases.items():
        w = w.float().contiguous()
        t[f"w.{name}"] = w
        q, s, y = nf4(w, True)
        t[f"nf4.{name}.codes"] = q.reshape(-1).contiguous()
        t[f"nf4.{name}.qabsmax"] = s.absmax.contiguous()
        t[f"nf4.{name}.absmax2"] = s.state2.absmax.float().contiguous()
        t[f"nf4.{name}.offset"] = s.offset.reshape(1).float()
        t[f"nf4.{name}.dequantized"] = y.contiguous()
        q, s, y = nf4(w, False)
        t[f"nf4-fp32-absmax.{name}.codes"] = q.reshape(-1).contiguous()
        t[f"nf4-fp32-absmax.{name}.absmax"] = s.absmax.float().contiguous()
        t[f"nf4-fp32-absmax.{name}.dequantized"] = y.contiguous()
    save_file(t, out)


def weights(src, out):
    t = {k: v for k, v in load_file(src).items() if ".lora_" not in k}
    for name, w in t.items():
        if name.endswith("_proj.weight"):
            t[name] = nf4(w.float().contiguous(), True)[2].contiguous()
    save_file(t, out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["kernels"] and len(sys.argv) == 3:
        kernels(sys.argv[2])
    elif sys.argv[1:2] == ["weights"] and len(sys.argv) == 4:
        weights(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
