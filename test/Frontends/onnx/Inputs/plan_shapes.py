"""Checks what a compiled plan's layer functions hold, in MLIR text (rpc-compile --emit=schedule).

Usage: plan_shapes.py NAME < schedule.mlir
Prints one line:
  "NAME: <L> layers, <a> with one graph.attention, <s> ops with [T, T] buffers, <v> ops with
   [tokens, vocab] buffers, <p> parameter transposes"
where, over every function the runtime executes (all but @forward, the imported graph):
  - layers are the forward layer functions @block_N, and a layer counts when it holds exactly
    one graph.attention;
  - an op (or function signature) counts once when it reads or makes a buffer of that kind;
  - a [T, T] buffer is any value (function argument or result of an op) of rank >= 2 whose last
    two dimensions are (T, T) or (T, T + 1) (scores with an attention-sink column), T the
    sequence length of input_ids [B, T], unless its leading dimensions multiply to B (a
    [B, T, C] activation whose channel count happens to equal T) -- parameters are not values
    of this kind and are skipped;
  - a [tokens, vocab] buffer is a value whose last dimension is the vocabulary V (the rows of
    the table @prefix gathers the embeddings from) and whose other dimensions multiply to
    B * T (logits or their gradient);
  - a parameter transpose is a graph.transpose of a graph.load_param result.
Exit status 1 when the input has no @block_N function or no input_ids argument, so that an
empty or failed compile cannot pass.
"""
import re
import sys

FUNC = re.compile(r"^\s*func\.func @([\w.$-]+)\(")
INPUT_IDS = re.compile(r"tensor<(\d+)x(\d+)xi64> \{graph\.name = \"input_ids\"\}")
LOAD = re.compile(r"^\s*(%[\w.$#-]+)\s*=\s*graph\.load_param @[\w.$-]+ : tensor<([0-9x]+)x\w+>")
GATHER = re.compile(r"graph\.gather (%[\w.$#-]+),")
TRANSPOSE = re.compile(r"=\s*graph\.transpose (%[\w.$#-]+)")
TYPE = re.compile(r"tensor<((?:\d+x)+)\w+>")


def dims_of(text: str) -> list[list[int]]:
    return [[int(d) for d in m.group(1).rstrip("x").split("x")] for m in TYPE.finditer(text)]


def product(values: list[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def main() -> int:
    name = sys.argv[1]
    lines = sys.stdin.read().splitlines()
    batch = seq = vocab = None
    for line in lines:
        m = INPUT_IDS.search(line)
        if m:
            batch, seq = int(m.group(1)), int(m.group(2))
            break
    # The vocabulary: the rows of the table @prefix gathers from.
    func, loads = None, {}
    for line in lines:
        f = FUNC.match(line)
        if f:
            func, loads = f.group(1), {}
            continue
        if func != "prefix":
            continue
        m = LOAD.match(line)
        if m:
            loads[m.group(1)] = [int(d) for d in m.group(2).split("x")]
        g = GATHER.search(line)
        if g and g.group(1) in loads:
            vocab = loads[g.group(1)][0]
            break
    if batch is None or vocab is None:
        print(f"{name}: no input_ids argument or no embedding gather in @prefix")
        return 1
    tokens = batch * seq
    layers = attention_layers = square = logits = param_transposes = 0
    func, params, attentions = None, set(), 0

    def close_layer():
        nonlocal layers, attention_layers
        if func is not None and re.fullmatch(r"block_\d+", func):
            layers += 1
            attention_layers += attentions == 1

    for line in lines:
        f = FUNC.match(line)
        if f:
            close_layer()
            func, params, attentions = f.group(1), set(), 0
        if func is None or func == "forward":
            continue
        m = LOAD.match(line)
        if m:
            params.add(m.group(1))
            continue
        if "graph.param @" in line:
            continue
        attentions += len(re.findall(r"graph\.attention ", line))
        t = TRANSPOSE.search(line)
        if t and t.group(1) in params:
            param_transposes += 1
        types = dims_of(line)
        square += any(len(d) >= 2 and d[-2] == seq and d[-1] in (seq, seq + 1) and
                      product(d[:-2]) != batch for d in types)
        logits += any(d[-1] == vocab and product(d[:-1]) == tokens for d in types)
    close_layer()
    print(f"{name}: {layers} layers, {attention_layers} with one graph.attention, {square} ops "
          f"with [T, T] buffers, {logits} ops with [tokens, vocab] buffers, {param_transposes} "
          f"parameter transposes")
    return 0 if layers else 1


if __name__ == "__main__":
    sys.exit(main())
