#!/usr/bin/env python3
"""rpc-finetune: fine-tune a local Hugging Face causal LM with rpc, from its directory to a new
model directory, in one command.

    rpc-finetune [CONFIG.yaml] [--model-dir DIR] [--data FILE ...] [--out DIR] [options]

CONFIG.yaml holds the options as keys (the flags' names, with - or _; a few names of
LLaMA-Factory, axolotl and torchtune too, e.g. learning_rate, max_steps, lora_r); flags
override it; relative paths in it are relative to its directory. `rpc-finetune --help` lists
every option with its default.

What it does, each step checked before the next (bad input: one line "rpc-finetune: error:
...", exit 2, nothing written to OUT):

 1. checks: the model directory (config.json, the weights, tokenizer.json), the data (UTF-8
    text, an llm.c token file; size against the windows), --seq against the config's
    max_position_embeddings, OUT and WORK apart from the model directory and the data, the
    free disk, the tools (rpc-compile, rp-run) and the export's Python (torch, transformers);
 2. tokenizes text data with the model's tokenizer.json, exactly as written (every file one
    document, followed by the end-of-text token when the tokenizer has one) -> WORK/data;
 3. exports the training graph from config.json without weights (examples/export/
    export_model.py --weightless: the model on PyTorch's meta device, no f32 copy of the
    weights anywhere) -> WORK/graph;
 4. compiles the plan (rpc-compile; LoRA adapters, weight decay and clipping are compiled in)
    -> WORK/plan/model.rpplan, and checks it with the weights (rp-run check: names, shapes, the
    host memory);
 5. trains (rp-run train, its progress bar), streaming the initial weights from the model
    directory, checkpointing to WORK/checkpoint (every --save-every steps, at the end and on
    Ctrl-C), with the metrics in WORK/metrics.jsonl;
 6. writes OUT all or nothing: the weights (full: model.safetensors or shards; LoRA: PEFT's
    adapter files, or the merged model) in --output-dtype, with config.json,
    generation_config.json, the tokenizer files and the chat template of the model directory;
 7. prints a summary: tokens trained, time, losses, where the model is.

Steps 2-4 are kept in WORK and redone only when their inputs change. Ctrl-C stops training
at the next step boundary with a checkpoint (exit 130); the same command with --resume
continues it to the same result as an uninterrupted run. rpc-finetune never writes into or
over the model directory.

Needs Python 3 with PyYAML (a config file), `tokenizers` (text data) and, for the export,
torch and transformers (examples/export/requirements.txt; --python names another
interpreter for it).
"""
import argparse
import difflib
import hashlib
import json
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time

VERSION = "@PROJECT_VERSION@"  # CMake writes the built and installed copies with the version

HERE = os.path.dirname(os.path.abspath(__file__))
# The helper scripts (export_model.py, tokenfiles.py): installed beside the command in
# PREFIX/share/rpc/python, or this source tree's examples/export and examples/data.
HELPER_DIRS = [os.path.join(HERE, "..", "share", "rpc", "python"),
               os.path.join(HERE, "..", "export"), os.path.join(HERE, "..", "data")]
for _d in HELPER_DIRS:
    if os.path.isdir(_d):
        sys.path.insert(0, _d)

EXIT_BAD_INPUT, EXIT_FAILURE = 2, 1
TOKEN_MAGIC = {20240520: 2, 20240801: 4}  # llm.c token files: magic -> bytes per id
MASKED_MAGIC = 20251126
END_OF_TEXT = ["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"]
# Files of a model directory besides the weights that OUT gets too (with the patterns below).
MODEL_FILES = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt",
               "tokenizer.model", "chat_template.jinja", "chat_template.json"]
MODEL_FILE_PREFIXES = ("tokenizer", "chat_template")
DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}
DEFAULT_TARGETS = "q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj"


class Refusal(Exception):
    """Bad input: one line, exit 2."""


class Interrupted(Exception):
    """Ctrl-C or SIGTERM while no tool was running."""

    def __init__(self, sig):
        super().__init__(sig)
        self.sig = sig


class Failure(Exception):
    """A failure after the checks (a tool failed): one line, exit 1 (or the tool's code)."""

    def __init__(self, message, code=EXIT_FAILURE):
        super().__init__(message)
        self.code = code


def say(message):
    print(f"rpc-finetune: {message}", file=sys.stderr, flush=True)


# --- options ----------------------------------------------------------------------------------

class Opt:
    """One option: its flag, config key, type, default and help. kind: str, int, float, path,
    paths (a list), flag (bool), choice."""

    def __init__(self, name, kind, default, help, choices=None, metavar=None, group="run"):
        self.name, self.kind, self.default, self.help = name, kind, default, help
        self.choices, self.metavar, self.group = choices, metavar, group

    @property
    def key(self):
        return self.name.replace("-", "_")


OPTIONS = [
    # what
    Opt("model-dir", "path", None, "the Hugging Face model directory to fine-tune (config.json, "
        "model.safetensors or shards with their index, tokenizer.json); required", metavar="DIR",
        group="what"),
    Opt("data", "paths", None, "training data, one or more files: UTF-8 text (tokenized with the "
        "model's tokenizer, each file one document), or llm.c token files; required",
        metavar="FILE", group="what"),
    Opt("data-format", "choice", "auto", "auto (by content: an llm.c header is a token file, "
        "a .jsonl name SFT data, anything else text), text, tokens, or sft (JSONL prompt/response "
        "pairs: not supported yet)", choices=["auto", "text", "tokens", "sft"], group="what"),
    Opt("out", "path", None, "the fine-tuned model directory to write (all or nothing; never the "
        "model directory or inside it); required", metavar="DIR", group="what"),
    Opt("work", "path", None, "intermediate files: tokens, graph, plan, checkpoint, metrics, "
        "logs (default: OUT.work)", metavar="DIR", group="what"),
    # method
    Opt("method", "choice", "full", "full (every weight) or lora (adapters only)",
        choices=["full", "lora"], group="method"),
    Opt("lora-rank", "int", 16, "LoRA rank", metavar="R", group="method"),
    Opt("lora-alpha", "float", 32.0, "LoRA alpha (updates scaled by alpha / rank)", metavar="A",
        group="method"),
    Opt("lora-targets", "str", DEFAULT_TARGETS, "regex of the weights that get adapters (a "
        "config may give a list of module names)", metavar="REGEX", group="method"),
    Opt("merged", "flag", False, "LoRA: write the merged full model instead of PEFT adapters",
        group="method"),
    # optimizer
    Opt("steps", "int", 100, "the run's total optimizer steps (a resumed run trains up to it)",
        metavar="N", group="optimizer"),
    Opt("lr", "float", None, "peak learning rate (default 1e-5 full, 1e-4 lora)", metavar="X",
        group="optimizer"),
    Opt("warmup", "int", 0, "linear warmup steps", metavar="N", group="optimizer"),
    Opt("lr-schedule", "choice", "cosine", "decay after the warmup down to --min-lr at --steps",
        choices=["constant", "cosine", "linear"], group="optimizer"),
    Opt("min-lr", "float", 0.0, "the decay's floor", metavar="X", group="optimizer"),
    Opt("weight-decay", "float", 0.0, "AdamW's decoupled weight decay", metavar="X",
        group="optimizer"),
    Opt("grad-clip", "float", 1.0, "clip gradients to this global L2 norm (0: off)", metavar="X",
        group="optimizer"),
    Opt("seed", "int", 0, "data sampling seed", metavar="N", group="optimizer"),
    # batch
    Opt("batch", "int", 4, "sequences per micro-batch", metavar="N", group="batch"),
    Opt("seq", "int", None, "tokens per sequence (default: 512, or the config's "
        "max_position_embeddings when smaller; never more than it)", metavar="N", group="batch"),
    Opt("micro-batches", "int", 4, "micro-batches per step (a step trains micro-batches x batch "
        "x seq tokens)", metavar="M", group="batch"),
    # hardware
    Opt("gpus", "int", 1, "GPUs (workers of the pool)", metavar="N", group="hardware"),
    Opt("backend", "choice", None, "cpu or cuda (default: cuda when an NVIDIA GPU is visible)",
        choices=["cpu", "cuda"], group="hardware"),
    Opt("dtype", "choice", None, "compute dtype (default: bf16 on cuda, fp32 on cpu, whose "
        "backend runs fp32 plans only)", choices=["fp32", "bf16", "fp16"], group="hardware"),
    Opt("update", "choice", "sync", "optimizer update: sync (exact) or async (staleness 1)",
        choices=["sync", "async"], group="hardware"),
    # checkpoints and evaluation
    Opt("save-every", "int", 0, "also checkpoint every K steps (always at the end and on "
        "Ctrl-C)", metavar="K", group="checkpoints"),
    Opt("resume", "flag", False, "continue the checkpoint in WORK", group="checkpoints"),
    Opt("restart", "flag", False, "discard the checkpoint in WORK and start over",
        group="checkpoints"),
    Opt("resume-override", "str", None, "with --resume: the settings the resumed run may change, "
        "comma-separated: lr, schedule, seed, data, batch (rp-run train --resume-override)",
        metavar="LIST", group="checkpoints"),
    Opt("eval-every", "int", 0, "evaluate on the held-out split every K steps (0: never)",
        metavar="K", group="checkpoints"),
    Opt("eval-split", "float", 0.1, "the fraction of the data held out for evaluation (its "
        "last tokens)", metavar="F", group="checkpoints"),
    # output
    Opt("output-dtype", "choice", "auto", "dtype of the written weights (auto: the config's)",
        choices=["auto", "f32", "bf16", "f16"], group="output"),
    Opt("shard-size", "str", None, "shard the weights above this size, e.g. 5GB (default: "
        "rp-run's, 50GB)", metavar="SIZE", group="output"),
    Opt("force", "flag", False, "replace a non-empty OUT", group="output"),
    # tools
    Opt("python", "path", None, "the Python interpreter of the export (torch, transformers; "
        "default: this one)", metavar="PY", group="tools"),
    Opt("bin", "path", None, "where rpc-compile and rp-run are (default: beside this command, "
        "then this source tree's build/bin, then PATH)", metavar="DIR", group="tools"),
    Opt("graph", "path", None, "use this exported training graph (model.onnx) instead of "
        "exporting one (no torch needed)", metavar="ONNX", group="tools"),
    Opt("no-train", "flag", False, "stop after the checks, the export, the plan and its check",
        group="tools"),
]
OPTION_BY_KEY = {o.key: o for o in OPTIONS}
GROUPS = {"what": "model and data", "method": "full or LoRA", "optimizer": "optimizer and "
          "schedule", "batch": "batch", "hardware": "hardware", "checkpoints": "checkpoints, "
          "resuming and evaluation", "output": "output", "tools": "tools"}

# Other tools' names for the same settings, accepted in a config file.
ALIASES = {
    "model_name_or_path": "model_dir", "base_model": "model_dir", "model": "model_dir",
    "dataset": "data", "datasets": "data", "train_file": "data",
    "output_dir": "out", "work_dir": "work",
    "finetuning_type": "method", "adapter": "method",
    "lora_r": "lora_rank", "lora_target": "lora_targets", "lora_target_modules": "lora_targets",
    "max_steps": "steps", "learning_rate": "lr", "warmup_steps": "warmup",
    "lr_scheduler_type": "lr_schedule", "lr_scheduler": "lr_schedule",
    "max_grad_norm": "grad_clip", "clip_grad_norm": "grad_clip",
    "micro_batch_size": "batch", "per_device_train_batch_size": "batch", "batch_size": "batch",
    "cutoff_len": "seq", "sequence_len": "seq", "max_seq_len": "seq", "max_seq_length": "seq",
    "gradient_accumulation_steps": "micro_batches",
    "save_steps": "save_every", "eval_steps": "eval_every", "val_set_size": "eval_split",
    "bf16": None, "fp16": None,  # handled by dtype
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse with its errors as one line (no usage block), exit 2."""

    def error(self, message):
        say(f"error: {message} (rpc-finetune --help lists the options)")
        sys.exit(EXIT_BAD_INPUT)


def parse_flags(argv):
    p = ArgumentParser(
        prog="rpc-finetune", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fine-tune a local Hugging Face causal LM with rpc (export, compile, train, "
                    "write the model directory).",
        epilog="A config file holds the same options as keys (flags override it). Exit codes: "
               "0 done, 2 bad input (one line; nothing written), 1 a failure during training, "
               "130/143 stopped by Ctrl-C/SIGTERM with a checkpoint (--resume continues it).")
    p.add_argument("config", nargs="?", metavar="CONFIG.yaml",
                   help="a YAML file of options (default: none)")
    p.add_argument("--version", action="version", version=f"rpc-finetune {VERSION}")
    groups = {g: p.add_argument_group(title) for g, title in GROUPS.items()}
    for o in OPTIONS:
        g = groups[o.group]
        default = "" if o.default in (None, False) and "(default" in o.help else \
            f" (default: {o.default})" if o.default not in (None, False) else ""
        if o.kind == "flag":
            g.add_argument("--" + o.name, dest=o.key, action="store_true", default=None,
                           help=o.help + " (default: off)")
            continue
        kwargs = dict(dest=o.key, default=None, metavar=o.metavar, help=o.help + default)
        if o.kind == "paths":
            kwargs["nargs"] = "+"
        if o.choices:
            kwargs["choices"] = o.choices
            kwargs.pop("metavar")
        g.add_argument("--" + o.name, **kwargs)
    return p.parse_args(argv)


def convert(o, value, where):
    """`value` (from a config file or a flag) as option `o`'s type; Refusal naming `where`."""
    what = f"{where}: {o.key} {value!r}"
    if o.kind == "flag":
        if not isinstance(value, bool):
            raise Refusal(f"{what} is not true or false")
        return value
    if o.kind == "paths":
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v for v in values):
            raise Refusal(f"{what}: expected a file or a list of files")
        return values
    if o.key == "lora_targets" and isinstance(value, list):
        return "|".join(str(v) for v in value)
    if isinstance(value, (list, dict)) or value is None:
        raise Refusal(f"{what}: expected a single value")
    if o.kind == "int":
        try:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        except (TypeError, ValueError):
            raise Refusal(f"{what} is not a whole number") from None
    if o.kind == "float":
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise Refusal(f"{what} is not a number") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise Refusal(f"{what} is not a finite number")
        return v
    value = str(value)
    if o.key == "method" and value.lower() in ("lora", "qlora"):
        value = "lora"
    if o.key == "lr_schedule":
        value = {"cosine_with_min_lr": "cosine", "constant_with_warmup": "constant"}.get(value,
                                                                                        value)
    if o.choices and value not in o.choices:
        raise Refusal(f"{what}: expected one of {', '.join(o.choices)}")
    return value


def read_config(path):
    """The options of YAML file `path` ({key: value}), paths made relative to its directory."""
    try:
        import yaml
    except ImportError:
        raise Refusal(f"{path}: reading a config file needs PyYAML (pip install pyyaml, or "
                      "apt install python3-yaml)") from None
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except FileNotFoundError:
        raise Refusal(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise Refusal(f"cannot read config file {path}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise Refusal(f"{path}{where}: not valid YAML: {problem}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise Refusal(f"{path}: expected a mapping of options (key: value), not a "
                      f"{type(raw).__name__}")
    base = os.path.dirname(os.path.abspath(path))
    values = {}
    for key, value in raw.items():
        k = str(key).replace("-", "_")
        if k in ("bf16", "fp16"):
            if value is True:
                values["dtype"] = k
            continue
        k = ALIASES.get(k, k)
        if k not in OPTION_BY_KEY:
            near = difflib.get_close_matches(k, list(OPTION_BY_KEY) + list(ALIASES), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise Refusal(f"{path}: unknown option '{key}'{hint}; rpc-finetune --help lists them")
        o = OPTION_BY_KEY[k]
        v = convert(o, value, path)
        if o.kind == "path" and v is not None:
            v = os.path.join(base, os.path.expanduser(v))
        elif o.kind == "paths":
            v = [os.path.join(base, os.path.expanduser(x)) for x in v]
        values[k] = v
    return values


class Settings:
    """The run's options: defaults < the config file < flags, then derived defaults."""

    def __init__(self, args):
        values = read_config(args.config) if args.config else {}
        for o in OPTIONS:
            flag = getattr(args, o.key)
            if flag is not None:
                values[o.key] = convert(o, flag, "--" + o.name)
        self.given = set(values)  # the options the config file or a flag set
        for o in OPTIONS:
            setattr(self, o.key, values.get(o.key, o.default))
        for key in ("model_dir", "data", "out"):
            if not getattr(self, key):
                raise Refusal(f"--{key.replace('_', '-')} is required (or `{key}:` in the "
                              "config file); rpc-finetune --help lists the options")
        self.model_dir = os.path.abspath(self.model_dir)
        self.out = os.path.abspath(self.out)
        self.data = [os.path.abspath(d) for d in self.data]
        self.work = os.path.abspath(self.work or self.out.rstrip(os.sep) + ".work")
        self.lora = self.method == "lora"
        if self.lr is None:
            self.lr = 1e-4 if self.lora else 1e-5
        if self.backend is None:
            self.backend = "cuda" if os.path.exists("/dev/nvidiactl") else "cpu"
        if self.dtype is None:
            self.dtype = "bf16" if self.backend == "cuda" else "fp32"
        self.validate()

    def validate(self):
        positive = ["steps", "batch", "micro_batches", "gpus", "lora_rank"]
        for key in positive:
            if getattr(self, key) < 1:
                raise Refusal(f"--{key.replace('_', '-')} must be at least 1 (got "
                              f"{getattr(self, key)})")
        for key in ["warmup", "save_every", "eval_every", "seed"]:
            if getattr(self, key) < 0:
                raise Refusal(f"--{key.replace('_', '-')} must be at least 0 (got "
                              f"{getattr(self, key)})")
        if self.seq is not None and self.seq < 1:
            raise Refusal(f"--seq must be at least 1 (got {self.seq})")
        if not self.lr > 0:
            raise Refusal(f"--lr must be positive (got {self.lr})")
        for key in ["min_lr", "weight_decay", "grad_clip"]:
            if getattr(self, key) < 0:
                raise Refusal(f"--{key.replace('_', '-')} must be at least 0 (got "
                              f"{getattr(self, key)})")
        if self.min_lr > self.lr:
            raise Refusal(f"--min-lr {self.min_lr} is above the peak --lr {self.lr}")
        if self.lr_schedule != "constant" and self.warmup >= self.steps:
            raise Refusal(f"--lr-schedule {self.lr_schedule} decays after the warmup, but "
                          f"--warmup {self.warmup} leaves none of the {self.steps} --steps")
        if not 0 <= self.eval_split < 1:
            raise Refusal(f"--eval-split must be at least 0 and below 1 (got {self.eval_split})")
        if self.lora_alpha <= 0:
            raise Refusal(f"--lora-alpha must be positive (got {self.lora_alpha})")
        if self.resume and self.restart:
            raise Refusal("--resume and --restart contradict each other")
        if self.resume_override and not self.resume:
            raise Refusal("--resume-override applies to a resumed run: add --resume")
        if self.backend == "cpu" and self.dtype != "fp32":
            raise Refusal(f"--dtype {self.dtype}: the CPU backend runs fp32 plans only (use "
                          "--backend cuda, or --dtype fp32)")
        if self.merged and not self.lora:
            raise Refusal("--merged is for --method lora")


# --- files ------------------------------------------------------------------------------------

def within(inner, outer):
    """Whether path `inner` is `outer` or lies inside it (both absolute)."""
    inner, outer = os.path.realpath(inner), os.path.realpath(outer)
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_identity(path):
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise Refusal(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Refusal(f"{what} {path} is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise Refusal(f"{what} {path} is not a JSON object")
    return value


def write_json_atomic(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def safetensors_header(path):
    """The JSON header of a safetensors file (no tensor data is read)."""
    try:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > 100 << 20:
                raise ValueError(f"a header of {n} bytes")
            return json.loads(f.read(n))
    except (OSError, ValueError, struct.error) as e:
        raise Refusal(f"{path} is not a safetensors file: {e}") from None


class Model:
    """What the checks need of the model directory: config, weights (files, element count,
    bytes), tokenizer."""

    def __init__(self, directory):
        if not os.path.isdir(directory):
            raise Refusal(f"--model-dir {directory} is not a directory")
        self.dir = directory
        self.config_path = os.path.join(directory, "config.json")
        self.config = read_json(self.config_path, "the model's config")
        text = self.config.get("text_config") or self.config
        self.vocab = text.get("vocab_size")
        self.max_positions = text.get("max_position_embeddings") or \
            text.get("n_positions") or text.get("max_sequence_length")
        self.dtype = self.config.get("dtype") or self.config.get("torch_dtype") or "float32"
        index = os.path.join(directory, "model.safetensors.index.json")
        single = os.path.join(directory, "model.safetensors")
        if os.path.isfile(index):
            weight_map = read_json(index, "the weights index").get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise Refusal(f"{index} has no weight_map")
            self.weight_files = sorted({os.path.join(directory, f) for f in weight_map.values()})
        elif os.path.isfile(single):
            self.weight_files = [single]
        else:
            raise Refusal(f"--model-dir {directory} holds no weights (model.safetensors, or "
                          "model.safetensors.index.json with its shards); rpc-finetune reads "
                          "safetensors checkpoints only")
        self.elements = 0
        self.weight_bytes = 0
        for path in self.weight_files:
            if not os.path.isfile(path):
                raise Refusal(f"the weights index names {os.path.basename(path)}, which "
                              f"{directory} does not hold")
            for name, t in safetensors_header(path).items():
                if name == "__metadata__":
                    continue
                count = 1
                for d in t.get("shape", []):
                    count *= d
                self.elements += count
            self.weight_bytes += os.path.getsize(path)
        self.tokenizer_path = os.path.join(directory, "tokenizer.json")

    def tokenizer(self):
        """The tokenizers.Tokenizer of tokenizer.json and its end-of-text id (or None)."""
        if not os.path.isfile(self.tokenizer_path):
            raise Refusal(f"--model-dir {self.dir} has no tokenizer.json to tokenize the text "
                          "with (give an llm.c token file as --data instead)")
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise Refusal("tokenizing text needs the `tokenizers` package (pip install "
                          "tokenizers), or give an llm.c token file as --data") from None
        try:
            tok = Tokenizer.from_file(self.tokenizer_path)
        except Exception as e:  # the package raises plain Exceptions on a bad file
            raise Refusal(f"cannot read {self.tokenizer_path}: {e}") from None
        names = list(END_OF_TEXT)
        tc = os.path.join(self.dir, "tokenizer_config.json")
        if os.path.isfile(tc):
            eos = read_json(tc, "the tokenizer config").get("eos_token")
            eos = eos.get("content") if isinstance(eos, dict) else eos
            if isinstance(eos, str):
                names.append(eos)
        eot = next((tok.token_to_id(t) for t in names if tok.token_to_id(t) is not None), None)
        return tok, eot


# --- data -------------------------------------------------------------------------------------

def data_kind(path, declared):
    """text, tokens or sft for data file `path` under --data-format `declared`."""
    if not os.path.isfile(path):
        raise Refusal(f"--data {path} does not exist" if not os.path.exists(path)
                      else f"--data {path} is not a file")
    with open(path, "rb") as f:
        head = f.read(4)
    magic = struct.unpack("<i", head)[0] if len(head) == 4 else None
    if declared == "auto":
        if magic in TOKEN_MAGIC or magic == MASKED_MAGIC:
            return "tokens"
        return "sft" if path.endswith(".jsonl") else "text"
    return declared


def check_text(path):
    """Refusal unless `path` is non-blank UTF-8 text without NUL bytes (read in chunks)."""
    import codecs
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, blank = 0, True
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 24)
            pending = len(decoder.getstate()[0])
            nul = chunk.find(b"\0")
            if nul >= 0:
                raise Refusal(f"--data {path} is not text (a NUL byte at byte {offset + nul}): a "
                              "binary file? Text must be UTF-8; token files need an llm.c header")
            try:
                text = decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                raise Refusal(f"--data {path} is not UTF-8 text (an invalid byte at byte "
                              f"{offset - pending + e.start}): convert it to UTF-8 first (e.g. "
                              "iconv)") from None
            blank = blank and not text.strip()
            if not chunk:
                break
            offset += len(chunk)
    if blank:
        raise Refusal(f"--data {path} is empty")


def read_text(path):
    """The UTF-8 text of `path`; Refusal for a file that is not text."""
    check_text(path)
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def read_token_file(path, vocab):
    """The token count of llm.c token file `path`, its ids checked against `vocab`."""
    with open(path, "rb") as f:
        header = f.read(1024)
        if len(header) < 1024:
            raise Refusal(f"--data {path}: shorter than an llm.c header (1024 bytes)")
        magic, _version, count = struct.unpack("<3i", header[:12])
        if magic == MASKED_MAGIC:
            raise Refusal(f"--data {path} is a masked (SFT) token file: SFT data is not "
                          "supported by rpc-finetune yet")
        width = TOKEN_MAGIC[magic]
        body = f.read()
    if count < 0 or len(body) != count * width:
        raise Refusal(f"--data {path}: the header says {count} tokens, the file holds "
                      f"{len(body) // width}")
    import array
    ids = array.array("H" if width == 2 else "I")
    ids.frombytes(body)
    if sys.byteorder == "big":
        ids.byteswap()
    if vocab and ids and max(ids) >= vocab:
        i = next(i for i, t in enumerate(ids) if t >= vocab)
        raise Refusal(f"--data {path}: token {ids[i]} at position {i} is beyond the model's "
                      f"vocabulary of {vocab} (tokenized with another tokenizer?)")
    return ids


def prepare_sft(path, model, settings):
    """The hook of supervised fine-tuning data (JSONL prompt/response pairs -> a masked token
    file, examples/data/prepare_sft.py): not supported yet."""
    raise Refusal(f"--data {path}: SFT data (JSONL) is not supported by rpc-finetune yet; give "
                  "text or an llm.c token file")


def tokenize(settings, model, stamp_inputs):
    """WORK/data/tokens.bin from the --data files (each text file tokenized as written, one
    document followed by the end-of-text token), reused while its inputs are unchanged.
    Returns (path, token count)."""
    from tokenfiles import write_token_file

    out_dir = os.path.join(settings.work, "data")
    path = os.path.join(out_dir, "tokens.bin")
    stamp = {"inputs": stamp_inputs}
    if read_stamp(out_dir) == stamp and os.path.isfile(path):
        with open(path, "rb") as f:
            count = struct.unpack("<3i", f.read(12))[2]
        say(f"[data] {count} tokens, unchanged ({path})")
        return path, count
    ids = []
    tok = eot = None
    for data in settings.data:
        kind = data_kind(data, settings.data_format)
        if kind == "tokens":
            ids.extend(read_token_file(data, model.vocab))
            continue
        if kind == "sft":
            prepare_sft(data, model, settings)
        text = read_text(data)
        if tok is None:
            tok, eot = model.tokenizer()
            if model.vocab and tok.get_vocab_size() > model.vocab:
                raise Refusal(f"{model.tokenizer_path} has {tok.get_vocab_size()} tokens, more "
                              f"than the model's vocab_size {model.vocab}")
        t0 = time.time()
        ids.extend(tok.encode(text, add_special_tokens=False).ids)
        if eot is not None:
            ids.append(eot)
        say(f"[data] {data}: {len(text.encode('utf-8'))} bytes -> tokens in "
            f"{time.time() - t0:.1f} s")
    if not ids:
        raise Refusal("--data holds no tokens")
    os.makedirs(out_dir, exist_ok=True)
    write_token_file(path, ids)
    write_stamp(out_dir, stamp)
    say(f"[data] {len(ids)} tokens -> {path}")
    return path, len(ids)


# --- stages -----------------------------------------------------------------------------------

def read_stamp(directory):
    try:
        with open(os.path.join(directory, "stamp.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_stamp(directory, stamp):
    write_json_atomic(os.path.join(directory, "stamp.json"), stamp)


class Runner:
    """Runs the tools as child processes: one at a time, Ctrl-C forwarded once per press."""

    def __init__(self):
        self.child = None
        self.running = False  # a tool is (being) started: signals are forwarded, not raised
        self.signal = 0
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.on_signal)

    def on_signal(self, sig, _frame):
        self.signal = sig
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(sig)
        elif not self.running:
            raise Interrupted(sig)

    def run(self, cmd, log=None, env=None):
        """Runs `cmd` (its output to `log` when given, else inherited); returns its exit code.
        The child is in a process group of its own, so that a terminal's Ctrl-C reaches it
        once, through this process."""
        say("+ " + " ".join(shlex.quote(c) for c in cmd))
        out = open(log, "w") if log else None
        self.running = True
        try:
            self.child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT if out else
                                          None, start_new_session=True, env=env)
            if self.signal:  # a signal arrived before the child existed
                self.child.send_signal(self.signal)
            while True:
                try:
                    return self.child.wait()
                except InterruptedError:
                    continue
        finally:
            self.child = None
            self.running = False
            if out:
                out.close()

    def interrupted(self):
        return self.signal != 0


def last_error(log):
    """The line of `log` that says what went wrong: the last one naming an error."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "(no log)"
    for line in reversed(lines):
        if "error" in line.lower() or line.startswith(("export:", "SystemExit")):
            return line
    return lines[-1] if lines else "(no output)"


def find_tools(settings):
    """rpc-compile and rp-run: --bin, beside this command, this source tree's build/bin, PATH."""
    dirs = [settings.bin] if settings.bin else [HERE, os.path.join(HERE, "..", "..", "build",
                                                                   "bin")]
    tools = {}
    for name in ("rpc-compile", "rp-run"):
        for d in dirs:
            if os.access(os.path.join(d, name), os.X_OK):
                tools[name] = os.path.abspath(os.path.join(d, name))
                break
        else:
            found = None if settings.bin else shutil.which(name)
            if not found:
                raise Refusal(f"cannot find {name}" + (f" in --bin {settings.bin}" if settings.bin
                              else " (beside rpc-finetune, in build/bin or on PATH; pass --bin "
                                   "DIR)"))
            tools[name] = found
    return tools


def check_export_python(python):
    """The export's interpreter must import torch and transformers (checked before anything)."""
    probe = subprocess.run([python, "-c", "import torch, transformers, onnx, onnxscript"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        missing = (probe.stderr.strip().splitlines() or ["?"])[-1]
        raise Refusal(f"the export needs torch, transformers, onnx and onnxscript in {python} "
                      f"({missing}): pip install -r examples/export/requirements.txt there, or "
                      "pass --python PY")


def free_bytes(path):
    while not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def gib(n):
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def check_disk(settings, model, trainable):
    """The work folder needs about two checkpoints (fp32 master + AdamW moments of the trained
    params, the frozen ones in the compute dtype: the newest is written before the previous is
    removed); OUT needs the weights in the output dtype (LoRA adapters: their size)."""
    compute = 2 if settings.dtype != "fp32" else 4
    frozen = model.elements - trainable
    checkpoint = trainable * 12 + frozen * compute
    out_bytes = trainable * 4 if settings.lora and not settings.merged else \
        model.elements * {"f32": 4, "bf16": 2, "f16": 2}[output_dtype(settings, model)]
    need = {settings.work: 2 * checkpoint + (64 << 20), settings.out: out_bytes + (16 << 20)}
    same = os.stat(nearest(settings.work)).st_dev == os.stat(nearest(settings.out)).st_dev
    if same:
        need = {settings.work: sum(need.values())}
    for path, n in need.items():
        free = free_bytes(path)
        if free < n:
            raise Refusal(f"{nearest(path)} has {gib(free)} free, and the run needs about {gib(n)} "
                          f"there (checkpoints of {gib(checkpoint)} in WORK, the model of "
                          f"{gib(out_bytes)} in OUT): free some space or choose --work/--out "
                          "elsewhere")


def nearest(path):
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def output_dtype(settings, model):
    if settings.output_dtype != "auto":
        return settings.output_dtype
    return {"bfloat16": "bf16", "float16": "f16"}.get(model.dtype, "f32")


def lora_trainable(model, settings):
    """LoRA adapters' element count, from the checkpoint's 2-D weights the targets match."""
    import re
    try:
        pattern = re.compile(settings.lora_targets)
    except re.error as e:
        raise Refusal(f"--lora-targets {settings.lora_targets!r} is not a regex: {e}") from None
    total = 0
    for path in model.weight_files:
        for name, t in safetensors_header(path).items():
            shape = t.get("shape", []) if name != "__metadata__" else []
            if len(shape) == 2 and pattern.search(name):
                total += settings.lora_rank * (shape[0] + shape[1])
    if total == 0:
        raise Refusal(f"--lora-targets {settings.lora_targets!r} matches no 2-D weight of the "
                      "model")
    return total


def check_paths(settings, model):
    """OUT and WORK apart from the model directory and the data (OUT empty unless --force:
    run() checks it once the checkpoint is known)."""
    for flag, path in (("--out", settings.out), ("--work", settings.work)):
        if within(path, model.dir) or within(model.dir, path):
            how = "is" if within(model.dir, path) and within(path, model.dir) else \
                "lies inside" if within(path, model.dir) else "contains"
            raise Refusal(f"{flag} {path} {how} the model directory {model.dir}: rpc-finetune "
                          "never writes into or over it (not even with --force); choose another "
                          "directory")
        for data in settings.data:
            if within(data, path):
                raise Refusal(f"{flag} {path} holds the data file {data}; choose another "
                              "directory")
        if os.path.exists(path) and not os.path.isdir(path):
            raise Refusal(f"{flag} {path} is a file, not a directory")
    if within(settings.work, settings.out) or within(settings.out, settings.work):
        raise Refusal(f"--out {settings.out} and --work {settings.work} must be apart (OUT is "
                      "replaced whole)")
    if settings.graph and within(settings.graph, settings.out):
        raise Refusal(f"--out {settings.out} holds --graph {settings.graph}")
    for path in (settings.out, settings.work):
        parent = nearest(os.path.dirname(path))
        if not os.access(parent, os.W_OK | os.X_OK):
            raise Refusal(f"cannot write {path}: {parent} is not writable")


def graph_shape(path):
    """--graph's input_ids shape [batch, seq] (the `onnx` package; None without it)."""
    try:
        import onnx
    except ImportError:
        return None
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # onnx raises DecodeError and others on a bad file
        raise Refusal(f"--graph {path} is not an ONNX model: {e}") from None
    for value in model.graph.input:
        if value.name == "input_ids":
            dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
            if len(dims) == 2 and all(d > 0 for d in dims):
                return dims
    raise Refusal(f"--graph {path} has no static [batch, seq] input_ids (export it with "
                  "examples/export/export_model.py)")


def choose_seq(settings, model):
    """--batch and --seq: an exported --graph's when it is given; --seq within the model's
    max_position_embeddings."""
    if settings.graph:
        if not os.path.isfile(settings.graph):
            raise Refusal(f"--graph {settings.graph} does not exist")
        shape = graph_shape(settings.graph)
        for key, value in zip(("batch", "seq"), shape or []):
            if key in settings.given and getattr(settings, key) != value:
                raise Refusal(f"--graph {settings.graph} was exported at --{key} {value}, not "
                              f"{getattr(settings, key)}")
            setattr(settings, key, value)
    limit = model.max_positions
    if settings.seq is None:
        settings.seq = min(512, limit) if limit else 512
    elif limit and settings.seq > limit:
        raise Refusal(f"--seq {settings.seq} is longer than the model's max_position_embeddings "
                      f"{limit} ({model.config_path}): positions beyond it were never trained")


def check_data_size(settings, count):
    """rp-run's windows: the training part holds at least one window of seq + 1 tokens, and with
    --eval-every the held-out part at least one batch of windows."""
    held = int(settings.eval_split * count) if settings.eval_every else 0
    need_eval = settings.batch * settings.seq + 1
    if settings.eval_every and held < need_eval:
        raise Refusal(f"--data holds {count} tokens: a {settings.eval_split:g} evaluation split is "
                      f"{held} tokens, fewer than one batch of windows ({need_eval}); give more "
                      "data, a larger --eval-split, or --eval-every 0")
    if count - held < settings.seq + 1:
        raise Refusal(f"--data holds {count} tokens, fewer than one window of --seq + 1 = "
                      f"{settings.seq + 1} tokens")
    per_step = settings.batch * settings.seq * settings.micro_batches
    epochs = settings.steps * per_step / max(1, count - held)
    if epochs > 100:
        say(f"note: {settings.steps} steps of {per_step} tokens pass over the {count - held} "
            f"training tokens about {epochs:.0f} times: expect overfitting")


def export_graph(settings, model, runner):
    """WORK/graph/model.onnx: the weightless training graph of config.json (reused while the
    config and the shape are unchanged)."""
    if settings.graph:
        return os.path.abspath(settings.graph)
    out = os.path.join(settings.work, "graph")
    exporter = find_helper("export_model.py")
    stamp = {"config": sha256_file(model.config_path), "batch": settings.batch,
             "seq": settings.seq, "exporter": sha256_file(exporter)}
    onnx_path = os.path.join(out, "model.onnx")
    if read_stamp(out) == stamp and os.path.isfile(onnx_path):
        say(f"[graph] unchanged ({onnx_path})")
        return onnx_path
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(settings.work, "logs"), exist_ok=True)
    log = os.path.join(settings.work, "logs", "export.log")
    say(f"[graph] exporting the training graph without weights (log: {log})")
    t0 = time.time()
    code = runner.run([settings.python or sys.executable, exporter, "--model-dir", model.dir,
                       "--exporter", "dynamo", "--weightless", "--batch", str(settings.batch),
                       "--seq", str(settings.seq), "--out", tmp], log=log)
    if runner.interrupted():
        raise Failure("interrupted during the export", 128 + runner.signal)
    if code != 0:
        raise Failure(f"the export failed: {last_error(log)} (log: {log})")
    write_stamp(tmp, stamp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    say(f"[graph] exported in {time.time() - t0:.1f} s -> {onnx_path}")
    return onnx_path


def compile_plan(settings, graph, tools, runner):
    """WORK/plan/model.rpplan (reused while the graph and the compile options are unchanged;
    the learning rate is rp-run's flag, not compiled in)."""
    plan = os.path.join(settings.work, "plan", "model.rpplan")
    args = ["--gpus", str(settings.gpus), "--micro-batches", str(settings.micro_batches),
            "--update", settings.update, "--dtype", settings.dtype,
            "--weight-decay", repr(settings.weight_decay),
            "--grad-clip", repr(settings.grad_clip)]
    if settings.lora:
        args += ["--lora-rank", str(settings.lora_rank), "--lora-alpha",
                 repr(settings.lora_alpha), "--lora-targets", settings.lora_targets]
    stamp = {"graph": file_identity(graph), "args": args}
    out = os.path.dirname(plan)
    if read_stamp(out) == stamp and os.path.isfile(plan):
        say(f"[plan] unchanged ({plan})")
        return plan
    os.makedirs(out, exist_ok=True)
    log = os.path.join(settings.work, "logs", "compile.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    say(f"[plan] compiling (log: {log})")
    t0 = time.time()
    code = runner.run([tools["rpc-compile"], graph] + args + ["-o", plan], log=log)
    if runner.interrupted():
        raise Failure("interrupted during the compilation", 128 + runner.signal)
    if code != 0:
        raise Failure(f"rpc-compile failed: {last_error(log)} (log: {log})",
                      EXIT_BAD_INPUT if code == EXIT_BAD_INPUT else EXIT_FAILURE)
    write_stamp(out, stamp)
    say(f"[plan] compiled in {time.time() - t0:.1f} s -> {plan}")
    return plan


def check_plan(settings, model, plan, tools, runner):
    """rp-run check with the model's weights: every param's name and shape, the host memory."""
    log = os.path.join(settings.work, "logs", "check.log")
    code = runner.run([tools["rp-run"], "check", plan, "--weights", model.dir, "--backend",
                       settings.backend, "--gpus", str(settings.gpus)], log=log)
    if runner.interrupted():
        raise Failure("interrupted during the plan check", 128 + runner.signal)
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "arena" in line or "memory" in line:
                say(f"[plan] {line.strip()}")
    if code != 0:
        line = last_error(log)
        line = line[len("rp-run: error: "):] if line.startswith("rp-run: error: ") else line
        raise Failure(f"rp-run check: {line} (log: {log})", EXIT_BAD_INPUT)


def find_helper(name):
    for d in HELPER_DIRS:
        path = os.path.join(d, name)
        if os.path.isfile(path):
            return os.path.abspath(path)
    raise Refusal(f"cannot find {name} (installed in share/rpc/python beside rpc-finetune's "
                  "prefix, or examples/ of the source tree)")


# --- training and the output ------------------------------------------------------------------

def checkpoint_step(directory):
    """The step of the checkpoint in `directory`, or None."""
    path = os.path.join(directory, "checkpoint.json")
    if not os.path.isfile(path):
        return None
    step = read_json(path, "the checkpoint").get("step")
    if not isinstance(step, int):
        raise Refusal(f"{path} has no step: a damaged checkpoint (--restart discards it)")
    return step


def check_resume(settings):
    """The checkpoint in WORK against --resume / --restart; returns its step (or None)."""
    ckpt = os.path.join(settings.work, "checkpoint")
    step = checkpoint_step(ckpt)
    if step is not None and not settings.resume and not settings.restart:
        raise Refusal(f"{ckpt} holds a checkpoint of step {step}: pass --resume to continue it, "
                      "or --restart to discard it")
    if settings.resume and step is None:
        raise Refusal(f"--resume: {settings.work} holds no checkpoint to continue")
    if settings.restart and os.path.isdir(ckpt):
        say(f"--restart: discarding the checkpoint of step {step} in {ckpt}")
        shutil.rmtree(ckpt)
        metrics = os.path.join(settings.work, "metrics.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        return None
    if step is not None and step > settings.steps:
        raise Refusal(f"{ckpt} is at step {step}, past --steps {settings.steps} (the run's total "
                      f"step count): pass --steps {step} or more")
    return step


def check_plan_settings(settings, resumed):
    """Settings compiled into the plan cannot change on a resume: WORK/run.json records the
    run's, compared here (rp-run compares lr, schedule, seed, data and batch itself)."""
    path = os.path.join(settings.work, "run.json")
    fixed = {"model_dir": settings.model_dir, "method": settings.method,
             "lora_rank": settings.lora_rank if settings.lora else None,
             "lora_alpha": settings.lora_alpha if settings.lora else None,
             "lora_targets": settings.lora_targets if settings.lora else None,
             "weight_decay": settings.weight_decay, "grad_clip": settings.grad_clip,
             "update": settings.update, "dtype": settings.dtype}
    if resumed is not None and os.path.isfile(path):
        was = read_json(path, "the run's settings")
        changed = [f"--{k.replace('_', '-')} {fixed[k]} (the run's {was.get(k)})"
                   for k in fixed if k in was and was[k] != fixed[k]]
        if changed:
            raise Refusal(f"--resume: {'; '.join(changed)}: these are compiled into the plan and "
                          "cannot change in a resumed run (--restart starts over)")
    os.makedirs(settings.work, exist_ok=True)
    write_json_atomic(path, fixed)


def train(settings, model, plan, tokens, staging, tools, runner):
    """rp-run train, its progress bar on this terminal; returns its exit code."""
    cmd = [tools["rp-run"], "train", plan, "--weights", model.dir, "--data", tokens,
           "--steps", str(settings.steps), "--lr", repr(settings.lr),
           "--warmup", str(settings.warmup), "--lr-schedule", settings.lr_schedule,
           "--min-lr", repr(settings.min_lr), "--seed", str(settings.seed),
           "--backend", settings.backend, "--gpus", str(settings.gpus),
           "--save", os.path.join(settings.work, "checkpoint"),
           "--log", os.path.join(settings.work, "metrics.jsonl"),
           "--eval-split", repr(settings.eval_split),
           "--export-hf", staging, "--export-dtype", output_dtype(settings, model)]
    if settings.save_every:
        cmd += ["--save-every", str(settings.save_every)]
    if settings.eval_every:
        cmd += ["--eval-every", str(settings.eval_every)]
    if settings.resume:
        cmd += ["--resume", os.path.join(settings.work, "checkpoint")]
    if settings.resume_override:
        cmd += ["--resume-override", settings.resume_override]
    if settings.shard_size:
        cmd += ["--export-shard-size", settings.shard_size]
    if settings.lora:
        cmd += ["--lora-alpha", repr(settings.lora_alpha)]
        cmd += ["--export-merged"] if settings.merged else ["--base-model", model.dir]
    return runner.run(cmd)


def model_files(directory):
    """The files of a model directory OUT gets too: config, generation config, tokenizer files,
    chat template."""
    names = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and (name in MODEL_FILES or name.startswith(MODEL_FILE_PREFIXES)):
            names.append(name)
    return names


def finish_output(settings, model, staging):
    """Completes the export in `staging` (the model directory's files; config.json's dtype set
    to the written one) and puts it in place as OUT, replacing OUT whole."""
    for name in model_files(model.dir):
        if os.path.exists(os.path.join(staging, name)):
            continue
        shutil.copy2(os.path.join(model.dir, name), os.path.join(staging, name))
    written = output_dtype(settings, model)
    config_path = os.path.join(staging, "config.json")
    full = not settings.lora or settings.merged
    if full and os.path.isfile(config_path):
        config = read_json(config_path, "config")
        key = "torch_dtype" if "torch_dtype" in config and "dtype" not in config else "dtype"
        config[key] = DTYPES[written]
        write_json_atomic(config_path, config)
    old = None
    if os.path.exists(settings.out):
        old = settings.out + ".old"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(settings.out, old)
    os.replace(staging, settings.out)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def summary(settings, model, t_start, first_step):
    """The run's numbers from WORK/metrics.jsonl."""
    rows = []
    try:
        with open(os.path.join(settings.work, "metrics.jsonl"), encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        pass
    rows = [r for r in rows if isinstance(r, dict) and "step" in r]
    this = [r for r in rows if r["step"] > (first_step or 0)]
    tokens = sum(r.get("tokens", 0) for r in rows)
    lines = [f"done in {time.time() - t_start:.0f} s: {settings.out}"]
    if rows:
        evals = [r["eval_loss"] for r in rows if r.get("eval_loss") is not None]
        loss = f"loss {rows[0]['loss']:.4f} (step {rows[0]['step']}) -> {rows[-1]['loss']:.4f} " \
               f"(step {rows[-1]['step']})"
        if evals:
            loss += f", eval loss {evals[-1]:.4f}"
        train_s = sum(r.get("step_s", 0) for r in this)
        lines.append(f"  trained {rows[-1]['step']} steps, {tokens} tokens "
                     f"({len(this)} steps in {train_s:.0f} s this time); {loss}")
    kind = ("LoRA adapters (PEFT)" if settings.lora and not settings.merged else
            "the merged model" if settings.merged else "the full model")
    lines.append(f"  {settings.out}: {kind} in {output_dtype(settings, model)}, with the "
                 "tokenizer and chat template")
    if settings.lora and not settings.merged:
        lines.append(f"  load it: PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained("
                     f"'{model.dir}'), '{settings.out}')")
    else:
        lines.append(f"  load it: AutoModelForCausalLM.from_pretrained('{settings.out}')")
    for line in lines:
        print(f"rpc-finetune: {line}", flush=True)


def run(argv):
    t_start = time.time()
    args = parse_flags(argv)
    settings = Settings(args)
    runner = Runner()
    # 1. checks, before anything is written
    model = Model(settings.model_dir)
    choose_seq(settings, model)
    check_paths(settings, model)
    tools = find_tools(settings)
    kinds = {data_kind(d, settings.data_format) for d in settings.data}
    for d in settings.data:
        if data_kind(d, settings.data_format) == "text":
            check_text(d)
    if "text" in kinds:
        model.tokenizer()
    if "sft" in kinds:
        prepare_sft(next(d for d in settings.data if data_kind(d, settings.data_format) == "sft"),
                    model, settings)
    if not settings.graph:
        check_export_python(settings.python or sys.executable)
    trainable = lora_trainable(model, settings) if settings.lora else model.elements
    check_disk(settings, model, trainable)
    first_step = check_resume(settings)
    if os.path.isdir(settings.out) and os.listdir(settings.out) and not settings.force:
        if first_step is not None and first_step == settings.steps:
            say(f"nothing to do: the run finished at step {first_step} and {settings.out} holds "
                "its model")
            return 0
        raise Refusal(f"--out {settings.out} exists and is not empty: --force replaces it")
    check_plan_settings(settings, first_step)
    # 2.-4. data, graph, plan
    stamp_inputs = [file_identity(d) for d in settings.data] + [
        sha256_file(model.tokenizer_path) if os.path.isfile(model.tokenizer_path) else None,
        settings.data_format]
    tokens, count = tokenize(settings, model, stamp_inputs)
    check_data_size(settings, count)
    graph = export_graph(settings, model, runner)
    plan = compile_plan(settings, graph, tools, runner)
    check_plan(settings, model, plan, tools, runner)
    if settings.no_train:
        say(f"--no-train: {plan} is ready and checked with {model.dir}")
        return 0
    # 5.-6. train and write OUT
    staging = os.path.join(os.path.dirname(settings.out),
                           "." + os.path.basename(settings.out) + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    code = train(settings, model, plan, tokens, staging, tools, runner)
    if code < 0:  # rp-run was killed by a signal: it printed nothing, so say what happened
        shutil.rmtree(staging, ignore_errors=True)
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        hint = (" (SIGKILL comes most often from the out-of-memory killer: see `dmesg`; "
                "the plan's host and device needs are in its check, "
                f"{settings.work}/logs/check.log)" if -code == signal.SIGKILL else "")
        raise Failure(f"rp-run was killed by signal {name}{hint}; the last checkpoint, if any, "
                      f"is in {settings.work}/checkpoint", 128 - code)
    if code != 0:
        shutil.rmtree(staging, ignore_errors=True)
        if code in (130, 143):
            step = checkpoint_step(os.path.join(settings.work, "checkpoint"))
            say(f"stopped at step {step}; the checkpoint is in {settings.work}/checkpoint: run "
                "the same command with --resume to continue")
        return code  # rp-run printed its one-line error
    if not os.path.isdir(staging):
        raise Failure(f"rp-run wrote no model to {staging}")
    finish_output(settings, model, staging)
    summary(settings, model, t_start, first_step)
    return 0


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except Refusal as e:
        say(f"error: {e}")
        return EXIT_BAD_INPUT
    except Failure as e:
        say(f"error: {e}")
        return e.code
    except Interrupted as e:
        say("interrupted; nothing was trained (run the same command again)")
        return 128 + e.sig
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except OSError as e:
        say(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "))
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
