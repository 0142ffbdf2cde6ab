#!/usr/bin/env python3
"""Summarise benchmark runs: rp-run's metrics log and Chrome trace, and the PyTorch baseline.

    python3 bench/summarize.py --model-json PLANS/model.json [--peak-tflops 989] [--skip 2]
        --run NAME:METRICS.jsonl[:TRACE.json[:SMI]] [--run ...]
        [--baseline BASELINE.json[:SMI]] [--json-out FILE]

Inputs (the formats of runtime/train/MetricsLog.cpp and Trace.cpp):
  - rp-run --log: one JSON object per step, {"step", "loss", "lr", "tokens", "step_s",
    "tokens_per_s", ["eval_loss"]}; any other numeric field whose name holds "peak" and
    "bytes" (e.g. "gpu_mem_peak_bytes") is read as peak GPU memory (the largest value wins);
  - rp-run --trace: {"traceEvents": [...]}: metadata events name each track (tid) with
    "thread_name" ("cpu0 compute", "cuda1 h2d weights", "host optimizer"); complete events
    ("ph": "X") carry "name" (the executor's label: "F0 s3 mb1 block_2", "B1 s3 weights chunk
    0", "s3 adamw block_5"; " sK " is the step, counted from 0), "cat" (the queue: "compute",
    "h2d activations", "h2d weights", "d2h", or "optimizer"), "ts" and "dur" in microseconds,
    and optionally "args": {"bytes": "N"} on copies;
  - bench/torch_baseline.py's JSON line;
  - SMI: nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits samples (MiB, one
    per line; bench/run_gpu.sh samples every 200 ms): the device-wide peak, CUDA context and
    allocator slack included, for every run alike.

Per run, over the steady state (steps after the first --skip; trace events of steps >= skip):
  tokens/s      sum(tokens) / sum(step_s) of the log's steady steps
  MFU           tokens/s x flops_per_token / peak (bench/flops.py: PaLM's 6 N + 12 L H Q T)
  window        the trace's steady span: first start to last end of the steady steps' events
  bubble %      per device (the "<name><index>" prefix of a track): 1 - (union of its compute
                spans inside the window) / window, then the mean over devices
  PCIe GB/s     per direction (h2d = both upload queues, d2h): bytes of the copy spans /
                their busy time (the union of the spans over every device: logical workers
                on one GPU share its link) and bytes / window; "n/a" when the trace gives no
                "bytes" arg
  copy busy %   that union / window
  optimizer %   union of the host optimizer's spans / window (host AdamW bound when ~100)
  host threads  ms per steady step of each kind of host-thread span (adamw, norm, reduce,
                copy, skipped; "(writer)" on the async weights writer's track)
  peak GPU mem  from the log (see above; torch_baseline: max_memory_allocated), else "n/a"
  smi peak      the largest SMI sample, else "n/a"
Prints a table and writes every number as JSON (--json-out).
"""
import argparse
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops  # noqa: E402

STEP_RE = re.compile(r"(?:^| )s(\d+)(?: |$)")
TRACK_RE = re.compile(r"^(.*?\d+) (compute|h2d activations|h2d weights|d2h)$")
H2D = ("h2d activations", "h2d weights")


def read_metrics(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"summarize: {path}:{n}: not JSON: {e}")
    return rows


def peak_memory(rows):
    best = None
    for r in rows:
        for k, v in r.items():
            if "peak" in k and "bytes" in k and isinstance(v, (int, float)):
                best = v if best is None else max(best, v)
    return best


def smi_peak_bytes(path):
    """The largest nvidia-smi memory.used sample (MiB) of a file, in bytes; None if none."""
    if not path or not os.path.exists(path):
        return None
    best = None
    with open(path) as f:
        for line in f:
            try:
                v = float(line.strip().split(",")[0])
            except ValueError:
                continue
            best = v if best is None else max(best, v)
    return None if best is None else int(best * 2**20)


def union_length(intervals, lo, hi):
    """Total length of the union of [a, b) intervals clipped to [lo, hi)."""
    spans = sorted((max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo))
    total, cur_a, cur_b = 0.0, None, None
    for a, b in spans:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


def read_trace(path, skip):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e.get("tid")] = e.get("args", {}).get("name", "")
    spans = []  # (device, queue, start, end, bytes or None, step or None)
    for e in events:
        if e.get("ph") != "X":
            continue
        track = names.get(e.get("tid"), "")
        m = TRACK_RE.match(track)
        queue = e.get("cat") or (m.group(2) if m else "")
        if queue not in ("compute", "d2h") + H2D and m:
            queue = m.group(2)
        device = m.group(1) if m else track
        s = STEP_RE.search(e.get("name", ""))
        nbytes = None
        args = e.get("args") or {}
        if "bytes" in args:
            try:
                nbytes = int(float(args["bytes"]))
            except (TypeError, ValueError):
                nbytes = None
        ts, dur = float(e["ts"]), float(e.get("dur", 0))
        spans.append((device, queue, ts, ts + dur, nbytes, int(s.group(1)) if s else None))
    steps = sorted({sp[5] for sp in spans if sp[5] is not None})
    result = {"trace_events": len(spans), "trace_steps": len(steps)}
    if not spans:
        return result
    steady = [sp for sp in spans if sp[5] is not None and sp[5] >= skip] if steps else spans
    if not steady:  # fewer steps than --skip: use them all
        steady = spans
        result["trace_note"] = "fewer steps than --skip; whole trace used"
    lo, hi = min(sp[2] for sp in steady), max(sp[3] for sp in steady)
    window = hi - lo
    result["window_s"] = window / 1e6
    # Every span that falls in the window counts (optimizer spans of earlier steps too).
    devices = sorted({sp[0] for sp in spans if sp[1] == "compute"})
    bubbles = {}
    for d in devices:
        busy = union_length([(sp[2], sp[3]) for sp in spans if sp[0] == d and sp[1] == "compute"],
                            lo, hi)
        bubbles[d] = 1.0 - busy / window if window > 0 else float("nan")
    result["devices"] = devices
    result["bubble_per_device"] = bubbles
    result["bubble"] = sum(bubbles.values()) / len(bubbles) if bubbles else None
    for direction, queues in (("h2d", H2D), ("d2h", ("d2h",))):
        copies = [sp for sp in spans if sp[1] in queues and sp[2] < hi and sp[3] > lo]
        busy = union_length([(sp[2], sp[3]) for sp in copies], lo, hi)
        steady_copies = [sp for sp in steady if sp[1] in queues]
        have_bytes = steady_copies and all(sp[4] is not None for sp in steady_copies)
        nbytes = sum(sp[4] for sp in steady_copies) if have_bytes else None
        # GB/s over the copies' own busy time: the steady steps' copies only.
        own_busy = union_length([(sp[2], sp[3]) for sp in steady_copies], lo, hi)
        result[direction] = {
            "copies": len(steady_copies), "bytes": nbytes,
            "busy_frac": busy / window if window > 0 else None,
            # bytes per microsecond / 1e3 = GB/s
            "gbytes_per_s_busy": (nbytes / own_busy / 1e3
                                  if nbytes is not None and own_busy > 0 else None),
            "gbytes_per_s_wall": (nbytes / window / 1e3
                                  if nbytes is not None and window > 0 else None),
        }
    opt = [(sp[2], sp[3]) for sp in spans if sp[1] == "optimizer"]
    result["optimizer_busy_frac"] = union_length(opt, lo, hi) / window if opt and window > 0 \
        else None
    result["host_spans_ms_per_step"] = host_span_kinds(events, names, skip)
    return result


HOST_SPAN_RE = re.compile(r"^s(\d+) (\w+)")


def host_span_kinds(events, names, skip):
    """Milliseconds per steady step of each kind of host-thread span ("s3 adamw block_5" ->
    adamw; norm, reduce (shared or rank gradient sums), copy (the weight writer), skipped), on
    the host tracks (the optimizer, the weights writer, rank comm): the summed durations of
    the spans of steps >= skip over the number of those steps."""
    per_kind, steps = {}, set()
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("optimizer", "comm"):
            continue
        m = HOST_SPAN_RE.match(e.get("name", ""))
        if not m or int(m.group(1)) < skip:
            continue
        steps.add(int(m.group(1)))
        track = names.get(e.get("tid"), "")
        key = m.group(2) + (" (writer)" if "writer" in track else "")
        per_kind[key] = per_kind.get(key, 0.0) + float(e.get("dur", 0)) / 1e3
    return {k: v / len(steps) for k, v in sorted(per_kind.items())} if steps else {}


def summarize_run(name, metrics_path, trace_path, smi_path, model, peak, skip):
    rows = read_metrics(metrics_path)
    steps = [r for r in rows if "step" in r and "tokens" in r]
    steady = steps[skip:] if len(steps) > skip else steps
    tokens = sum(r["tokens"] for r in steady)
    secs = sum(r["step_s"] or 0 for r in steady)
    tps = tokens / secs if secs > 0 else None
    out = {"name": name, "metrics": metrics_path, "steps": len(steps),
           "steady_steps": len(steady), "tokens_per_step": steady[0]["tokens"] if steady else None,
           "tokens_per_s": tps, "step_s_mean": secs / len(steady) if steady else None,
           "loss_first": steps[0]["loss"] if steps else None,
           "loss_last": steps[-1]["loss"] if steps else None,
           "peak_gpu_mem_bytes": peak_memory(rows), "smi_peak_bytes": smi_peak_bytes(smi_path)}
    if model and tps:
        out["flops_per_token"] = flops.flops_per_token(model)
        out["mfu"] = flops.mfu(tps, model, peak)
    if trace_path:
        out["trace"] = trace_path
        out.update(read_trace(trace_path, skip))
    return out


def fmt(v, spec, scale=1.0, na="n/a"):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return na
    return format(v * scale if scale != 1.0 else v, spec)


def gib(v):
    return "n/a" if v is None else f"{v / 2**30:.1f} GiB"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="append", default=[],
                   help="NAME:METRICS.jsonl[:TRACE.json[:SMI]] (repeatable)")
    p.add_argument("--baseline", action="append", default=[],
                   help="bench/torch_baseline.py's JSON line file[:SMI] (repeatable)")
    p.add_argument("--model-json", help="plans/model.json (for MFU)")
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="dense bf16 peak of the GPU, TFLOP/s (H100 SXM, H200: 989)")
    p.add_argument("--skip", type=int, default=2, help="warmup steps left out")
    p.add_argument("--json-out", help="write every number as JSON here")
    args = p.parse_args()

    model = None
    if args.model_json:
        with open(args.model_json) as f:
            model = json.load(f)
    results = []
    for spec in args.run:
        parts = spec.split(":")
        if len(parts) not in (2, 3, 4):
            raise SystemExit(f"summarize: --run {spec}: expected NAME:METRICS[:TRACE[:SMI]]")
        name, metrics_path = parts[0], parts[1]
        trace_path = parts[2] if len(parts) >= 3 and parts[2] else None
        smi_path = parts[3] if len(parts) == 4 and parts[3] else None
        try:
            results.append(summarize_run(name, metrics_path, trace_path, smi_path, model,
                                         args.peak_tflops, args.skip))
        except (OSError, ValueError, KeyError, SystemExit) as e:
            results.append({"name": name, "error": str(e)})
    for spec in args.baseline:
        path, _, smi_path = spec.partition(":")
        try:
            with open(path) as f:
                line = [l for l in f.read().splitlines() if l.strip()][-1]
            b = json.loads(line)
            b["name"] = "pytorch " + b.get("precision", "") + \
                (" +compile" if b.get("compile") else "") + \
                (" +liger" if b.get("liger") else "") + \
                (" +ckpt" if b.get("checkpointing") else "")
            b["smi_peak_bytes"] = smi_peak_bytes(smi_path)
            results.append(b)
        except (OSError, ValueError, IndexError) as e:
            results.append({"name": "pytorch", "error": f"{path}: {e}"})

    header = ["run", "tok/step", "tokens/s", "MFU", "step s", "bubble", "h2d GB/s busy|wall",
              "d2h GB/s busy|wall", "h2d busy", "optim busy", "peak GPU mem", "smi peak",
              "loss first->last"]
    table = [header]
    for r in results:
        if "error" in r:
            table.append([r["name"], "FAILED (below)"] + [""] * (len(header) - 2))
            continue
        h2d, d2h = r.get("h2d") or {}, r.get("d2h") or {}
        table.append([
            r["name"], fmt(r.get("tokens_per_step"), "d"), fmt(r.get("tokens_per_s"), ",.0f"),
            fmt(r.get("mfu"), ".1f", 100) + ("%" if r.get("mfu") is not None else ""),
            fmt(r.get("step_s_mean"), ".3f"),
            fmt(r.get("bubble"), ".1f", 100) + ("%" if r.get("bubble") is not None else ""),
            fmt(h2d.get("gbytes_per_s_busy"), ".1f") + " | " + fmt(h2d.get("gbytes_per_s_wall"), ".1f")
            if h2d else "n/a",
            fmt(d2h.get("gbytes_per_s_busy"), ".1f") + " | " + fmt(d2h.get("gbytes_per_s_wall"), ".1f")
            if d2h else "n/a",
            fmt(h2d.get("busy_frac"), ".0f", 100) + ("%" if h2d.get("busy_frac") is not None else ""),
            fmt(r.get("optimizer_busy_frac"), ".0f", 100)
            + ("%" if r.get("optimizer_busy_frac") is not None else ""),
            gib(r.get("peak_gpu_mem_bytes")), gib(r.get("smi_peak_bytes")),
            fmt(r.get("loss_first"), ".3f") + " -> " + fmt(r.get("loss_last"), ".3f"),
        ])
    widths = [max(len(str(row[i])) for row in table if i < len(row)) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for r in results:
        if "error" in r:
            print(f"{r['name']}: FAILED: {r['error']}")
    for r in results:
        kinds = r.get("host_spans_ms_per_step")
        if kinds:
            print(f"{r['name']} host threads, ms per step: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in kinds.items()))
    if model:
        print(f"model FLOPs/token {flops.flops_per_token(model) / 1e9:.2f} G "
              f"(6 N + 12 L H Q T, N = {flops.matmul_params(model) / 1e9:.3f} B matmul params, "
              f"seq {model['seq']}); peak {args.peak_tflops:g} TFLOP/s; first {args.skip} "
              f"steps skipped")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"peak_tflops": args.peak_tflops, "skip": args.skip, "model": model,
                       "runs": results}, f, indent=1)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
