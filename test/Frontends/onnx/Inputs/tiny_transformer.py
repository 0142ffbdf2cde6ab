"""A small decoder-only transformer written the way PyTorch's exporter writes one, with a
float64 numpy reference of its forward pass and loss.

usage: tiny_transformer.py write OUT_DIR [IDS LABELS]
                                              model.onnx, inputs/input_{0,1}.pb, reference.npz;
                                              IDS, LABELS: the inputs' dtypes, int64 (default)
                                              or int32
       tiny_transformer.py grads OUT_DIR RESULT_DIR RTOL
                                              checks rp-ref --grads output (loss.pb, grad_*.pb)
       tiny_transformer.py check OUT_DIR RESULT_DIR RTOL
                                              compares RESULT_DIR/output_{0,1}.pb (loss, logits)
                                              with the reference by ||got - want|| / ||want||
       tiny_transformer.py sparse OUT_DIR LAYERS D F V
                                              the same graph with LAYERS layers, width D, MLP
                                              width F and vocabulary V, its weights as ONNX
                                              external data in a *sparse* file of zeros
                                              (OUT_DIR/model.data: no disk blocks, no memory),
                                              as an export without weights is; no inputs

The model: token embedding (Gather), per layer an RMSNorm written as
Pow/ReduceMean/Add/Sqrt/Div/Mul, causal multi-head attention (MatMul, Reshape, Transpose,
a Trilu/Where mask, Softmax), a SwiGLU MLP (Sigmoid * x, Mul), residual Adds, a final norm, the
LM head and SoftmaxCrossEntropyLoss with ignore_index -100 over [batch*seq, vocab].
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, S, D, H, F, V, L = 2, 8, 32, 4, 64, 48, 2
HD = D // H
EPS = 1e-6
# The dtypes of input_ids and labels (write's optional arguments).
ID_TYPES = [TensorProto.INT64, TensorProto.INT64]


def weight_shapes():
    shapes = {"embed": (V, D), "final_norm": (D,), "lm_head": (D, V)}
    for l in range(L):
        p = f"layers.{l}."
        shapes[p + "norm1"] = shapes[p + "norm2"] = (D,)
        for n, shape in [("q", (D, D)), ("k", (D, D)), ("v", (D, D)), ("o", (D, D)),
                         ("gate", (D, F)), ("up", (D, F)), ("down", (F, D))]:
            shapes[p + n] = shape
    return shapes


def weights(rng):
    w = {"embed": rng.normal(0, 0.5, (V, D)), "final_norm": 1 + 0.1 * rng.normal(size=D),
         "lm_head": rng.normal(0, 0.2, (D, V))}
    for l in range(L):
        p = f"layers.{l}."
        w[p + "norm1"] = 1 + 0.1 * rng.normal(size=D)
        w[p + "norm2"] = 1 + 0.1 * rng.normal(size=D)
        for n, shape in [("q", (D, D)), ("k", (D, D)), ("v", (D, D)), ("o", (D, D)),
                         ("gate", (D, F)), ("up", (D, F)), ("down", (F, D))]:
            w[p + n] = rng.normal(0, 0.2, shape)
    return w


def write_sparse(out, layers, d, f, v):
    """The graph at another size with its weights as external data in a sparse file."""
    global L, D, F, V, HD
    L, D, F, V, HD = layers, d, f, v, d // H
    shapes = weight_shapes()
    # One element per weight while building; the real shapes go into the external data.
    model = build({name: np.zeros((1,) * len(shape)) for name, shape in shapes.items()})
    os.makedirs(out, exist_ok=True)
    offset = 0
    for init in model.graph.initializer:
        if init.name not in shapes:
            continue
        shape = shapes[init.name]
        length = 4 * int(np.prod(shape))
        del init.dims[:]
        init.dims.extend(shape)
        init.ClearField("raw_data")
        init.data_location = TensorProto.EXTERNAL
        for key, value in [("location", "model.data"), ("offset", str(offset)),
                           ("length", str(length))]:
            entry = init.external_data.add()
            entry.key, entry.value = key, value
        offset += length
    with open(os.path.join(out, "model.data"), "wb") as data:
        data.truncate(offset)
    onnx.save(model, os.path.join(out, "model.onnx"))
    print(f"{sum(int(np.prod(s)) for s in shapes.values())} parameters, {offset} bytes of "
          f"external data (sparse)")


def reference(w, ids, labels):
    def rms(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g

    h = w["embed"][ids]
    mask = np.triu(np.full((S, S), -np.inf), 1)
    for l in range(L):
        p = f"layers.{l}."
        x = rms(h, w[p + "norm1"])
        q, k, v = (x @ w[p + n] for n in "qkv")
        q, k, v = (t.reshape(B, S, H, HD).transpose(0, 2, 1, 3) for t in (q, k, v))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(HD) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        h = h + a.transpose(0, 2, 1, 3).reshape(B, S, D) @ w[p + "o"]
        x = rms(h, w[p + "norm2"])
        g = x @ w[p + "gate"]
        h = h + ((g / (1 + np.exp(-g))) * (x @ w[p + "up"])) @ w[p + "down"]
    final = rms(h, w["final_norm"]).reshape(B * S, D)
    logits = final @ w["lm_head"]
    flat = labels.reshape(-1)
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    keep = flat != -100
    loss = -logp[np.arange(B * S)[keep], flat[keep]].mean()
    # The LM head's gradient, analytically: final^T @ (softmax - onehot) * keep / count.
    dlogits = np.exp(logp)
    dlogits[np.arange(B * S)[keep], flat[keep]] -= 1
    dlogits *= keep[:, None] / keep.sum()
    return np.array(loss), logits, final.T @ dlogits


def build(w):
    nodes, inits, consts = [], [], []

    def const(name, value, dtype=np.int64):
        # A Constant node at the top of the graph, as PyTorch's exporters write constants (a
        # float initializer would be a trainable param).
        consts.append(helper.make_node("Constant", [], [name], name=f"/Constant_{len(consts)}",
                                       value=numpy_helper.from_array(np.array(value, dtype=dtype))))
        return name

    def node(op, inputs, outputs=None, **attrs):
        out = outputs or [f"{op.lower()}_{len(nodes)}"]
        nodes.append(helper.make_node(op, inputs, out, name=f"/{op}_{len(nodes)}", **attrs))
        return out[0]

    for name, value in w.items():
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
    const("two", 2.0, np.float32)
    const("eps", EPS, np.float32)
    const("scale", 1 / np.sqrt(HD), np.float32)
    const("neg_inf", -np.inf, np.float32)
    const("axis_m1", [-1])
    const("heads_shape", [B, S, H, HD])
    const("merged_shape", [B, S, D])
    const("flat_logits", [B * S, V])
    const("flat_labels", [B * S])

    def rms(x, g):
        sq = node("Pow", [x, "two"])
        mean = node("ReduceMean", [sq], axes=[-1], keepdims=1)
        std = node("Sqrt", [node("Add", [mean, "eps"])])
        return node("Mul", [node("Div", [x, std]), g])

    # Causal mask from a Shape subgraph: ones[S, S] -> Trilu(lower) -> Where.
    shape = node("Shape", ["input_ids"])
    seq = node("Slice", [shape, const("one", [1]), const("two_i", [2])])
    square = node("Concat", [seq, seq], axis=0)
    ones = node("ConstantOfShape", [square], value=numpy_helper.from_array(np.array([1], np.bool_)))
    lower = node("Trilu", [ones], upper=0)
    mask = node("Where", [lower, const("zero_f", 0.0, np.float32), "neg_inf"])

    h = node("Gather", ["embed", "input_ids"], axis=0)
    for l in range(L):
        p = f"layers.{l}."
        x = rms(h, p + "norm1")
        heads = []
        for n in "qkv":
            t = node("Reshape", [node("MatMul", [x, p + n]), "heads_shape"])
            heads.append(node("Transpose", [t], perm=[0, 2, 1, 3]))
        q, k, v = heads
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        s = node("Add", [node("Mul", [node("MatMul", [q, kt]), "scale"]), mask])
        a = node("MatMul", [node("Softmax", [s], axis=-1), v])
        merged = node("Reshape", [node("Transpose", [a], perm=[0, 2, 1, 3]), "merged_shape"])
        h = node("Add", [h, node("MatMul", [merged, p + "o"])])
        x = rms(h, p + "norm2")
        g = node("MatMul", [x, p + "gate"])
        act = node("Mul", [g, node("Sigmoid", [g])])
        up = node("MatMul", [x, p + "up"])
        h = node("Add", [h, node("MatMul", [node("Mul", [act, up]), p + "down"])])
    logits = node("MatMul", [rms(h, "final_norm"), "lm_head"])
    flat = node("Reshape", [logits, "flat_logits"], ["logits"])
    labels = node("Reshape", ["labels", "flat_labels"])
    node("SoftmaxCrossEntropyLoss", [flat, labels], ["loss"], reduction="mean", ignore_index=-100)
    graph = helper.make_graph(
        consts + nodes, "tiny_transformer",
        [helper.make_tensor_value_info("input_ids", ID_TYPES[0], ["batch", "seq"]),
         helper.make_tensor_value_info("labels", ID_TYPES[1], ["batch", "seq"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B * S, V])],
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def write(out):
    rng = np.random.default_rng(7)
    w = weights(rng)
    ids = rng.integers(0, V, (B, S)).astype(np.int64)
    labels = np.roll(ids, -1, axis=1)
    labels[:, -1] = -100
    labels[0, :2] = -100
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    model = build(w)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    for i, (name, t) in enumerate([("input_ids", ids), ("labels", labels)]):
        t = t.astype({TensorProto.INT64: np.int64, TensorProto.INT32: np.int32}[ID_TYPES[i]])
        with open(os.path.join(out, "inputs", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t, name).SerializeToString())
    # The reference uses the float32-rounded weights the model stores.
    w32 = {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}
    loss, logits, dhead = reference(w32, ids, labels)
    np.savez(os.path.join(out, "reference.npz"), loss=loss, logits=logits, dhead=dhead, ids=ids)


def check(out, result, rtol):
    ref = np.load(os.path.join(out, "reference.npz"))
    worst = 0.0
    for i, name in enumerate(["loss", "logits"]):
        t = onnx.TensorProto()
        with open(os.path.join(result, f"output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t).astype(np.float64)
        want = ref[name]
        assert got.shape == want.shape, (name, got.shape, want.shape)
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        worst = max(worst, err)
        if not err <= rtol:
            print(f"FAIL {name}: relative error {err:.3e} > {rtol:.1e}")
            sys.exit(1)
    print(f"OK loss={float(ref['loss']):.6f} worst relative error {worst:.3e} <= {rtol:.1e}")


def read(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).astype(np.float64)


def check_grads(out, result, rtol):
    """rp-ref --grads output: the loss, one gradient per weight, the LM head's gradient equal
    to the analytic one, and zero embedding rows for tokens absent from the batch."""
    ref = np.load(os.path.join(out, "reference.npz"))
    names = sorted(f for f in os.listdir(result) if f.startswith("grad_"))
    expected = sorted(f"grad_{k}.pb" for k in weights(np.random.default_rng(0)))
    assert names == expected, (names, expected)
    loss = read(os.path.join(result, "loss.pb"))
    assert abs(loss - ref["loss"]) <= rtol * abs(ref["loss"]), (loss, ref["loss"])
    dhead = read(os.path.join(result, "grad_lm_head.pb"))
    err = np.linalg.norm(dhead - ref["dhead"]) / np.linalg.norm(ref["dhead"])
    assert err <= rtol, f"lm_head gradient relative error {err:.3e} > {rtol:.1e}"
    dembed = read(os.path.join(result, "grad_embed.pb"))
    absent = sorted(set(range(V)) - set(ref["ids"].ravel().tolist()))
    assert absent and not dembed[absent].any(), "rows of absent tokens must be zero"
    assert dembed[sorted(set(ref["ids"].ravel().tolist()))].any()
    print(f"OK {len(names)} gradients; lm_head relative error {err:.3e} <= {rtol:.1e}")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        if len(sys.argv) == 5:
            types = {"int64": TensorProto.INT64, "int32": TensorProto.INT32}
            ID_TYPES[:] = [types[sys.argv[3]], types[sys.argv[4]]]
        write(sys.argv[2])
    elif sys.argv[1] == "sparse":
        write_sparse(sys.argv[2], *(int(a) for a in sys.argv[3:7]))
    elif sys.argv[1] == "grads":
        check_grads(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        check(sys.argv[2], sys.argv[3], float(sys.argv[4]))
