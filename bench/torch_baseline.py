#!/usr/bin/env python3
"""The PyTorch baseline of the CUDA benchmark: the same Hugging Face Qwen3 model trained with
every weight resident in GPU memory, on the same GPU, with the same tokens per step.

    python3 bench/torch_baseline.py [--model-json PLANS/model.json] [--micro-batches 5]
        [--steps 10] [--warmup 3] [--precision amp|bf16] [--checkpointing auto|on|off]
        [--compile] [--liger] [--peak-tflops 989] [--json-out FILE]

Model: transformers' Qwen3ForCausalLM from a config (random init, nothing downloaded), the
shape of --model-json (bench/export_qwen3_1p7b.sh writes plans/model.json; without it the
Qwen3-1.7B config: 28 layers, hidden 2048, intermediate 6144, 16 heads, 8 KV heads, head_dim
128, vocabulary 151936, rope_theta 1e6, seq 4096; untied LM head like the exported graph),
built directly on the GPU, sdpa attention (FlashAttention kernels for bf16 on Hopper).

Step: --micro-batches micro-batches of batch x seq random tokens (1 x 4096 by default, as the
plan's), each forward + mean cross-entropy over every position from pre-shifted labels (the
exported graph's loss) / M + backward (gradients accumulate), then AdamW (torch.optim.AdamW,
fused=True) and zero_grad. Tokens per step = M x batch x seq, the plan's.

--compile: torch.compile(model) (the default inductor backend; compilation happens in the
warmup steps); with --liger the decoder stack alone (model.model), since Liger's fused linear
cross-entropy does not trace under dynamo.
--liger: Liger-Kernel's Qwen3 patch (liger_kernel.transformers.apply_liger_kernel_to_qwen3):
fused RMSNorm, SwiGLU, RoPE, and the fused linear cross-entropy, which computes the loss from
the last hidden state chunk by chunk without the [tokens, vocabulary] logits; the labels go in
as shift_labels, already shifted, so the loss is the same mean over every position.

Precision: amp (default): fp32 weights, gradients and AdamW state, forward and backward under
torch.autocast(bfloat16) -- the numerics of RoundPipe's plan (bf16 compute, fp32 master
weights and AdamW); bf16: every weight, gradient and AdamW moment in bf16 (less memory, not
the same numerics). --checkpointing auto: without activation checkpointing, and again with it
(transformers' activation_checkpointing_enable, non-reentrant) if the step runs out of memory.

Measured (after --warmup steps): each of --steps steps between two CUDA events (the
optimizer step included), torch.cuda.synchronize() at the end; tokens/s = timed tokens / the
sum of the step times; MFU with bench/flops.py (PaLM appendix B: 6 N + 12 L H Q T model FLOPs
per token, recomputation not counted) over --peak-tflops (H100 SXM / H200 dense bf16: 989);
peak GPU memory = torch.cuda.max_memory_allocated() (and max_memory_reserved()) since the
model was built. Prints one JSON line (and writes it to --json-out).
"""
import argparse
import gc
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops  # noqa: E402

QWEN3_1P7B = dict(layers=28, hidden=2048, intermediate=6144, heads=16, kv_heads=8,
                  head_dim=128, vocab=151936, seq=4096, batch=1, tie=False)


def build_config(transformers, shape):
    return transformers.Qwen3Config(
        vocab_size=shape["vocab"], hidden_size=shape["hidden"],
        intermediate_size=shape["intermediate"], num_hidden_layers=shape["layers"],
        num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"],
        head_dim=shape["head_dim"], max_position_embeddings=max(40960, shape["seq"]),
        rope_theta=1000000.0, rms_norm_eps=1e-6, attention_bias=False,
        tie_word_embeddings=bool(shape.get("tie", False)), use_cache=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-json", help="plans/model.json (the exported model's shape)")
    p.add_argument("--layers", type=int, help="override the number of layers")
    p.add_argument("--seq", type=int, help="override the sequence length")
    p.add_argument("--batch", type=int, help="override sequences per micro-batch")
    p.add_argument("--micro-batches", type=int, default=None,
                   help="micro-batches per step (default: model.json's, else 5)")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--precision", choices=["amp", "bf16"], default="amp")
    p.add_argument("--checkpointing", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--liger", action="store_true",
                   help="Liger-Kernel's fused RMSNorm, SwiGLU, RoPE and linear cross-entropy")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="dense bf16 peak of the GPU, TFLOP/s (H100 SXM, H200: 989)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json-out", help="also write the result line to this file")
    p.add_argument("--device", default="cuda",
                   help="cuda (the benchmark); cpu only smoke-tests this script (wall-clock "
                        "timers, no memory numbers)")
    args = p.parse_args()

    import torch
    import torch.nn.functional as F
    import transformers

    shape = dict(QWEN3_1P7B)
    if args.model_json:
        with open(args.model_json) as f:
            shape.update(json.load(f))
    for key in ("layers", "seq", "batch"):
        if getattr(args, key) is not None:
            shape[key] = getattr(args, key)
    mb = args.micro_batches or int(shape.get("micro_batches", 5))
    batch, seq = int(shape.get("batch", 1)), int(shape["seq"])
    tokens_per_step = mb * batch * seq

    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("torch_baseline: no CUDA device")
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    if args.liger:
        # Patches transformers' Qwen3 classes: done before the model is built.
        from liger_kernel.transformers import apply_liger_kernel_to_qwen3
        apply_liger_kernel_to_qwen3(rope=True, rms_norm=True, swiglu=True,
                                    fused_linear_cross_entropy=True)
    config = build_config(transformers, shape)
    config._attn_implementation = "sdpa"
    t_build = time.time()
    with dev:
        model = transformers.Qwen3ForCausalLM(config)
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    model_dict = flops.qwen3_model_dict(config, seq, n_params)
    fpt = flops.flops_per_token(model_dict)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.0, fused=cuda)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    build_s = time.time() - t_build
    step_model = model
    if args.compile and args.liger:
        # Liger's fused linear cross-entropy does not trace under dynamo (torch 2.11: the fake
        # tensor of its addmm(out_dtype=...) raises), so the decoder stack is compiled (Liger's
        # RMSNorm, SwiGLU and RoPE inside it) and the LM head with the loss runs eagerly.
        model.model = torch.compile(model.model)
    elif args.compile:
        step_model = torch.compile(model)
    gen = torch.Generator(device=dev).manual_seed(args.seed + 1)

    def step():
        losses = []
        for _ in range(mb):
            window = torch.randint(0, config.vocab_size, (batch, seq + 1), device=dev,
                                   generator=gen)
            x, y = window[:, :-1], window[:, 1:]
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.precision == "amp"):
                if args.liger:  # the fused linear cross-entropy: no logits
                    loss = step_model(input_ids=x, shift_labels=y, use_cache=False).loss
                else:
                    logits = step_model(input_ids=x, use_cache=False).logits
            if not args.liger:
                loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                       y.reshape(-1))
                del logits
            (loss / mb).backward()
            losses.append(loss.detach())
            del loss
        opt.step()
        opt.zero_grad(set_to_none=True)
        return torch.stack(losses).mean()

    def enable_checkpointing():
        # transformers >= 5.2x: activation_checkpointing_enable; before: gradient_checkpointing_*
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)

    checkpointing = args.checkpointing == "on"
    if checkpointing:
        enable_checkpointing()
    def run_steps():
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        first_loss = None
        for _ in range(args.warmup):
            loss = step()
            first_loss = first_loss if first_loss is not None else loss.item()
        sync()
        times, losses = [], []
        for _ in range(args.steps):
            if cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                loss = step()
                end.record()
                times.append((start, end))
            else:
                t = time.perf_counter()
                loss = step()
                times.append(time.perf_counter() - t)
            losses.append(loss)
        sync()
        return first_loss, times, losses

    oom_retry = False
    try:
        first_loss, times, losses = run_steps()
    except torch.cuda.OutOfMemoryError:
        if args.checkpointing != "auto" or checkpointing:
            raise
        oom_retry = True
    if oom_retry:  # outside the except block: the failed step's tensors are gone by now
        opt.zero_grad(set_to_none=True)
        gc.collect()
        torch.cuda.empty_cache()
        checkpointing = True
        enable_checkpointing()
        print("torch_baseline: out of memory without activation checkpointing; retrying with "
              "it", file=sys.stderr)
        first_loss, times, losses = run_steps()

    step_s = [s.elapsed_time(e) / 1e3 for s, e in times] if cuda else times
    total = sum(step_s)
    tps = tokens_per_step * len(step_s) / total if total > 0 else float("nan")
    result = {
        "system": "pytorch", "model": "qwen3", "layers": config.num_hidden_layers,
        "seq": seq, "batch": batch, "micro_batches": mb, "tokens_per_step": tokens_per_step,
        "params": n_params, "precision": args.precision, "checkpointing": checkpointing,
        "checkpointing_after_oom": oom_retry, "compile": args.compile, "liger": args.liger,
        "warmup_steps": args.warmup, "timed_steps": len(step_s),
        "step_s_mean": total / len(step_s), "step_s_median": statistics.median(step_s),
        "tokens_per_s": tps, "flops_per_token": fpt,
        "mfu": flops.mfu(tps, model_dict, args.peak_tflops), "peak_tflops": args.peak_tflops,
        "peak_gpu_mem_bytes": torch.cuda.max_memory_allocated(dev) if cuda else None,
        "peak_gpu_reserved_bytes": torch.cuda.max_memory_reserved(dev) if cuda else None,
        "loss_first": first_loss, "loss_last": losses[-1].item() if losses else None,
        "build_s": round(build_s, 2),
        "gpu": torch.cuda.get_device_properties(dev).name if cuda else "cpu",
        "gpu_memory_bytes": torch.cuda.get_device_properties(dev).total_memory if cuda else None,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    line = json.dumps({k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                       for k, v in result.items()})
    print(line)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    sys.exit(main())
