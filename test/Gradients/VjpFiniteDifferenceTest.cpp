//===- VjpFiniteDifferenceTest.cpp - every op's VJP against finite differences ===//
//
// For every differentiable graph op, one or more cases (each its own test,
// `OpVjp/VjpFiniteDifference.Check/<case>`): a function
//
//   func.func @forward(%x..., %w...) -> tensor<f32> {
//     %y... = <op>(%x...)                            // the op under test
//     loss = sum_k reduce_sum(%y_k * %w_k)           // fixed random projections %w_k
//   }
//
// is parsed from MLIR text, `buildGradientFunction` builds @train_step with wrtArgs = the
// differentiated %x (the projections make the cotangent a random tensor, not all ones, so the
// whole VJP is checked), @train_step runs on the float64 reference interpreter, and every
// element of each gradient is compared with the central finite difference of @forward
// (GradientCheck.h: h = 1e-6 * max(1, |x|)), also in float64.
//
// Criterion, per differentiated operand: ||g - fd||_2 / max(||fd||_2, 1e-12) < 1e-6.
//
// Shapes are random (seeded by the case name, so a case does not change when others are
// added), with broadcasting for the binary ops, where and matmul. Inputs avoid the points
// where an op is not differentiable: relu and reciprocal/div denominators stay >= 0.2 away from
// 0, sqrt/log/pow bases are in [0.5, 2], and reduce_max inputs are distinct with gaps >> h.
// Integer and boolean operands (indices, labels, masks) are constants in the IR.
//
// Not covered: a float -> f16/bf16 cast is a rounding step (piecewise constant in f64, so no
// finite difference matches its straight-through VJP); the cast case is f32 -> f32.
//
//===----------------------------------------------------------------------===//

#include "test/Gradients/GradientCheck.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

using namespace rp::gradtest;
using ::rp::base::DType;

namespace {

constexpr double kTolerance = 1e-6;

using Shape = std::vector<int64_t>;
using Rng = std::mt19937_64;

/// How an input's elements are drawn.
enum class Dist {
  Uniform,      // U(-2, 2)
  Positive,     // U(0.5, 2)
  AwayFromZero, // +-U(0.2, 2)
  Spread,       // a shuffled grid over [-2, 2] with gaps >= 1.6 / n (no ties for max)
};

struct Input {
  std::string name; // SSA name without '%'
  Shape shape;
  Dist dist = Dist::Uniform;
  bool wrt = true; // differentiated (in wrtArgs)
};

struct Output {
  std::string value; // SSA name without '%'
  Shape shape;
};

struct Case {
  std::vector<Input> inputs;
  std::vector<std::string> body; // MLIR ops using %<input> and defining the outputs
  std::vector<Output> outputs;   // each projected with its own random weight
};

struct CaseDef {
  std::string name;
  std::function<Case(Rng &)> make;
};

void PrintTo(const CaseDef &c, std::ostream *os) { *os << c.name; }

//===----------------------------------------------------------------------===//
// MLIR text helpers
//===----------------------------------------------------------------------===//

std::string dims(const Shape &s) {
  std::string out;
  for (int64_t d : s)
    out += std::to_string(d) + "x";
  return out;
}

std::string T(const Shape &s, const char *elt = "f32") { return "tensor<" + dims(s) + elt + ">"; }

std::string arr(const std::vector<int64_t> &v) {
  std::string out = "array<i64";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : ": ") + std::to_string(v[i]);
  return out + ">";
}

template <typename Fmt> std::string nested(const Shape &shape, size_t dim, int64_t &next, Fmt fmt) {
  if (dim == shape.size())
    return fmt(next++);
  std::string out = "[";
  for (int64_t i = 0; i < shape[dim]; ++i)
    out += (i ? ", " : "") + nested(shape, dim + 1, next, fmt);
  return out + "]";
}

/// `%name = graph.constant dense<...> : tensor<...xi64>`
std::string intConstant(const std::string &name, const Shape &shape,
                        const std::vector<int64_t> &values) {
  int64_t next = 0;
  return "%" + name + " = graph.constant dense<" +
         nested(shape, 0, next, [&](int64_t i) { return std::to_string(values[i]); }) +
         "> : " + T(shape, "i64");
}

std::string boolConstant(const std::string &name, const Shape &shape,
                         const std::vector<bool> &values) {
  int64_t next = 0;
  return "%" + name + " = graph.constant dense<" +
         nested(shape, 0, next, [&](int64_t i) { return values[i] ? "true" : "false"; }) +
         "> : " + T(shape, "i1");
}

int64_t count(const Shape &s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>());
}

int64_t randInt(Rng &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

Shape randShape(Rng &rng, int rank, int64_t lo = 2, int64_t hi = 4) {
  Shape s(rank);
  for (int64_t &d : s)
    d = randInt(rng, lo, hi);
  return s;
}

Shape broadcast(Shape a, Shape b) {
  if (a.size() < b.size())
    std::swap(a, b);
  Shape out = a;
  size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i)
    out[off + i] = a[off + i] == 1 ? b[i] : a[off + i];
  return out;
}

std::string sig(const std::vector<Shape> &ins, const Shape &out) {
  std::string s = "(";
  for (size_t i = 0; i < ins.size(); ++i)
    s += (i ? ", " : "") + T(ins[i]);
  return s + ") -> " + T(out);
}

//===----------------------------------------------------------------------===//
// Case generators
//===----------------------------------------------------------------------===//

Case unary(Rng &rng, const std::string &op, Dist dist) {
  Shape s = randShape(rng, static_cast<int>(randInt(rng, 1, 3)));
  return {{{"x", s, dist}}, {"%y = graph." + op + " %x : " + T(s)}, {{"y", s}}};
}

/// `%y = graph.<op> %a, %b` with operand shapes from `shapes(rng)`.
Case binary(Rng &rng, const std::string &op, Dist da, Dist db,
            const std::function<std::pair<Shape, Shape>(Rng &)> &shapes) {
  auto [a, b] = shapes(rng);
  Shape y = broadcast(a, b);
  return {{{"a", a, da}, {"b", b, db}},
          {"%y = graph." + op + " %a, %b : " + sig({a, b}, y)},
          {{"y", y}}};
}

using ShapePair = std::function<std::pair<Shape, Shape>(Rng &)>;

const std::vector<std::pair<std::string, ShapePair>> &broadcastPatterns() {
  static const std::vector<std::pair<std::string, ShapePair>> patterns = {
      {"same",
       [](Rng &r) {
         Shape s = randShape(r, 2);
         return std::make_pair(s, s);
       }},
      {"trailing",
       [](Rng &r) {
         Shape s = randShape(r, 3);
         return std::make_pair(s, Shape{s[2]});
       }},
      {"leading",
       [](Rng &r) {
         Shape s = randShape(r, 3);
         return std::make_pair(Shape{s[1], s[2]}, s);
       }},
      {"both",
       [](Rng &r) {
         Shape s = randShape(r, 3);
         return std::make_pair(Shape{s[0], 1, s[2]}, Shape{s[1], 1});
       }},
      {"scalar", [](Rng &r) { return std::make_pair(randShape(r, 2), Shape{}); }},
  };
  return patterns;
}

Case matmul(const Shape &a, const Shape &b, const Shape &y) {
  return {{{"a", a}, {"b", b}}, {"%y = graph.matmul %a, %b : " + sig({a, b}, y)}, {{"y", y}}};
}

/// graph.matmul with its operand flags; `a` and `b` are the stored (maybe transposed) shapes.
Case matmulFlags(const Shape &a, const Shape &b, const Shape &y, const std::string &flags) {
  return {{{"a", a}, {"b", b}},
          {"%y = graph.matmul %a, %b {" + flags + "} : " + sig({a, b}, y)},
          {{"y", y}}};
}

Shape reduced(const Shape &in, const std::vector<int64_t> &axes, bool keepdims) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    bool r = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!r)
      out.push_back(in[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

Case reduce(Rng &rng, const std::string &op, int rank, const std::vector<int64_t> &axes,
            bool keepdims) {
  Shape s = randShape(rng, rank);
  Shape y = reduced(s, axes, keepdims);
  Dist d = op == "reduce_max" ? Dist::Spread : Dist::Uniform;
  std::string attrs = "{axes = " + arr(axes) + (keepdims ? ", keepdims}" : "}");
  return {{{"x", s, d}}, {"%y = graph." + op + " %x " + attrs + " : " + sig({s}, y)}, {{"y", y}}};
}

Case softmaxLike(Rng &rng, const std::string &op, int rank, int64_t axis) {
  Shape s = randShape(rng, rank, 2, 5);
  return {{{"x", s}},
          {"%y = graph." + op + " %x {axis = " + std::to_string(axis) + " : i64} : " + T(s)},
          {{"y", s}}};
}

Case layerNorm(Rng &rng, int rank, int64_t axis, bool bias) {
  // At least 3 normalised elements: over 2, xhat = +-1 whatever x is, and dx is ~0 (only
  // epsilon makes it non-zero), which would check noise against noise.
  Shape s = randShape(rng, rank, 3, 5);
  Shape n(s.begin() + axis, s.end());
  Case c{{{"x", s}, {"g", n}}, {}, {{"y", s}}};
  std::vector<Shape> ins{s, n};
  std::string operands = "%x, %g";
  if (bias) {
    c.inputs.push_back({"b", n});
    ins.push_back(n);
    operands += ", %b";
  }
  c.body.push_back("%y = graph.layer_norm " + operands + " {axis = " + std::to_string(axis) +
                   " : i64, epsilon = 1.0e-05 : f64} : " + sig(ins, s));
  return c;
}

Case rmsNorm(Rng &rng, int rank, int64_t axis) {
  Shape s = randShape(rng, rank, 2, 5);
  Shape n(s.begin() + axis, s.end());
  return {{{"x", s}, {"g", n}},
          {"%y = graph.rms_norm %x, %g {axis = " + std::to_string(axis) +
           " : i64, epsilon = 1.0e-06 : f64} : " + sig({s, n}, s)},
          {{"y", s}}};
}

/// Logits [N, C, d...] and labels [N, d...] with about a quarter ignored (never all).
Case crossEntropy(Rng &rng, const std::string &reduction, const Shape &spatial,
                  int64_t ignoreIndex) {
  int64_t n = randInt(rng, 3, 6), classes = randInt(rng, 3, 7);
  Shape logits{n, classes}, labels{n};
  logits.insert(logits.end(), spatial.begin(), spatial.end());
  labels.insert(labels.end(), spatial.begin(), spatial.end());
  std::vector<int64_t> values(count(labels));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (i % 4 == 1) ? ignoreIndex : randInt(rng, 0, classes - 1);
  if (values[0] == ignoreIndex)
    values[0] = 0;
  // With ignore_index inside [0, C), labels equal to it are ignored too; keep one class
  // different from it so the kept labels exercise the one-hot.
  return {{{"x", logits}},
          {intConstant("labels", labels, values),
           "%y = graph.cross_entropy " + reduction +
               " %x, %labels {ignore_index = " + std::to_string(ignoreIndex) + " : i64} : (" +
               T(logits) + ", " + T(labels, "i64") + ") -> tensor<f32>"},
          {{"y", {}}}};
}

/// The fused LM-head loss: hidden [N, H], weight [V, H] (and with `bias`, a head bias [V]),
/// labels [N] with about a quarter ignored (never all); chunks of 2 rows.
Case linearCrossEntropy(Rng &rng, const std::string &reduction, bool bias) {
  int64_t n = randInt(rng, 3, 5), width = randInt(rng, 2, 4), vocab = randInt(rng, 3, 6);
  Shape h{n, width}, w{vocab, width}, b{vocab}, labels{n};
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i % 4 == 1 ? -100 : randInt(rng, 0, vocab - 1);
  std::vector<Input> args{{"h", h}, {"w", w}};
  if (bias)
    args.push_back({"b", b});
  std::string types = "(" + T(h) + ", " + T(w) + ", " + T(labels, "i64") +
                      (bias ? ", " + T(b) : std::string()) + ") -> tensor<f32>";
  return {args,
          {intConstant("labels", labels, values),
           "%y = graph.linear_cross_entropy " + reduction + " %h, %w, %labels" +
               (bias ? " bias %b" : "") + " {chunk_rows = 2 : i64, ignore_index = -100 : i64} : " +
               types},
          {{"y", {}}}};
}

int64_t sliceCount(int64_t start, int64_t end, int64_t step) {
  if (step > 0)
    return std::max<int64_t>(0, (end - start + step - 1) / step);
  return std::max<int64_t>(0, (start - end + (-step) - 1) / (-step));
}

Case slice(const Shape &s, const std::vector<int64_t> &axes, const std::vector<int64_t> &starts,
           const std::vector<int64_t> &ends, const std::vector<int64_t> &steps) {
  Shape y = s;
  for (size_t i = 0; i < axes.size(); ++i)
    y[axes[i]] = sliceCount(starts[i], ends[i], steps[i]);
  return {{{"x", s}},
          {"%y = graph.slice %x {axes = " + arr(axes) + ", starts = " + arr(starts) +
           ", ends = " + arr(ends) + ", steps = " + arr(steps) + "} : " + sig({s}, y)},
          {{"y", y}}};
}

Case gather(Rng &rng, const Shape &data, int64_t axis, const Shape &indices, bool negative) {
  std::vector<int64_t> idx(count(indices));
  int64_t size = data[axis];
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = randInt(rng, 0, size - 1);
  idx[idx.size() - 1] = idx[0]; // a repeated index: its cotangents accumulate
  if (negative)
    for (size_t i = 0; i < idx.size(); i += 2)
      idx[i] -= size;
  Shape y(data.begin(), data.begin() + axis);
  y.insert(y.end(), indices.begin(), indices.end());
  y.insert(y.end(), data.begin() + axis + 1, data.end());
  return {{{"x", data}},
          {intConstant("idx", indices, idx),
           "%y = graph.gather %x, %idx {axis = " + std::to_string(axis) + " : i64} : (" + T(data) +
               ", " + T(indices, "i64") + ") -> " + T(y)},
          {{"y", y}}};
}

Case gatherElements(Rng &rng, const Shape &data, int64_t axis, const Shape &indices) {
  std::vector<int64_t> idx(count(indices));
  for (int64_t &i : idx)
    i = randInt(rng, 0, data[axis] - 1);
  idx[1] = idx[0]; // along the axis too when indices.shape[last] > 1
  return {{{"x", data}},
          {intConstant("idx", indices, idx),
           "%y = graph.gather_elements %x, %idx {axis = " + std::to_string(axis) + " : i64} : (" +
               T(data) + ", " + T(indices, "i64") + ") -> " + T(indices)},
          {{"y", indices}}};
}

// The updates of a scatter-add into zeros (ONNX ScatterElements, reduction add), with a
// repeated index so that two updates land in one element.
Case scatterElementsAdd(Rng &rng, const Shape &result, int64_t axis, const Shape &updates) {
  std::vector<int64_t> idx(count(updates));
  for (int64_t &i : idx)
    i = randInt(rng, 0, result[axis] - 1);
  int64_t next = 1; // the next position along the axis: same element, when the index repeats
  for (size_t d = axis + 1; d < updates.size(); ++d)
    next *= updates[d];
  idx[next] = idx[0];
  return {{{"u", updates}},
          {intConstant("idx", updates, idx),
           "%y = graph.scatter_elements_add %u, %idx {axis = " + std::to_string(axis) +
               " : i64} : (" + T(updates) + ", " + T(updates, "i64") + ") -> " + T(result)},
          {{"y", result}}};
}

// The scatter-add of updates into zeros along `axis` (the embedding gradient, ONNX ScatterND
// with reduction add), with a repeated index.
Case scatterAdd(Rng &rng, const Shape &result, int64_t axis, const Shape &indices) {
  std::vector<int64_t> idx(count(indices));
  for (int64_t &i : idx)
    i = randInt(rng, 0, result[axis] - 1);
  idx.back() = idx[0];
  Shape u(result.begin(), result.begin() + axis);
  u.insert(u.end(), indices.begin(), indices.end());
  u.insert(u.end(), result.begin() + axis + 1, result.end());
  return {{{"u", u}},
          {intConstant("idx", indices, idx),
           "%y = graph.scatter_add %u, %idx {axis = " + std::to_string(axis) + " : i64} : (" +
               T(u) + ", " + T(indices, "i64") + ") -> " + T(result)},
          {{"y", result}}};
}

// graph.scatter (ONNX ScatterND: data rows overwritten by updates): gradients to the data (the
// kept elements) and to the updates (those that land). With `repeat`, one target is written
// twice and only the later update lands (the VJP's mask); without, the constant indices are
// distinct (no mask). Negative indices count from the end.
Case scatter(Rng &rng, const Shape &data, int64_t axis, const Shape &indices, bool repeat) {
  const int64_t size = data[axis], n = count(indices);
  std::vector<int64_t> pool(size);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<int64_t> idx(pool.begin(), pool.begin() + n);
  if (repeat)
    idx.back() = idx[0];
  idx[1] -= size;
  Shape u(data.begin(), data.begin() + axis);
  u.insert(u.end(), indices.begin(), indices.end());
  u.insert(u.end(), data.begin() + axis + 1, data.end());
  return {{{"d", data}, {"u", u}},
          {intConstant("idx", indices, idx),
           "%y = graph.scatter %d, %idx, %u {axis = " + std::to_string(axis) + " : i64} : (" +
               T(data) + ", " + T(indices, "i64") + ", " + T(u) + ") -> " + T(data)},
          {{"y", data}}};
}

// graph.scatter_elements (ONNX ScatterElements without a reduction; a router's top-k weights
// scattered into a dense mask): as scatter, with `repeat` writing one element twice.
Case scatterElements(Rng &rng, const Shape &data, int64_t axis, const Shape &updates,
                     bool repeat) {
  // Distinct targets within each line along the axis: a shuffled prefix per line.
  std::vector<int64_t> idx(count(updates));
  int64_t inner = 1;
  for (size_t d = axis + 1; d < updates.size(); ++d)
    inner *= updates[d];
  const int64_t length = updates[axis], lines = count(updates) / length;
  for (int64_t line = 0; line < lines; ++line) {
    std::vector<int64_t> pool(data[axis]);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    const int64_t base = (line / inner) * length * inner + line % inner;
    for (int64_t j = 0; j < length; ++j)
      idx[base + j * inner] = pool[j];
  }
  if (repeat)
    idx[inner] = idx[0]; // the next position along the axis of the first line
  return {{{"d", data}, {"u", updates}},
          {intConstant("idx", updates, idx),
           "%y = graph.scatter_elements %d, %idx, %u {axis = " + std::to_string(axis) +
               " : i64} : (" + T(data) + ", " + T(updates, "i64") + ", " + T(updates) + ") -> " +
               T(data)},
          {{"y", data}}};
}

Case cumsum(Rng &rng, int rank, int64_t axis, bool exclusive, bool reverse) {
  Shape s = randShape(rng, rank, 2, 5);
  std::string attrs = "{axis = " + std::to_string(axis) + " : i64" +
                      (exclusive ? ", exclusive" : "") + (reverse ? ", reverse" : "") + "}";
  return {{{"x", s}}, {"%y = graph.cumsum %x " + attrs + " : " + T(s)}, {{"y", s}}};
}

Case trilu(Rng &rng, int rank, int64_t k, bool upper) {
  Shape s = randShape(rng, rank, 2, 5);
  return {{{"x", s}},
          {"%y = graph.trilu %x {k = " + std::to_string(k) + " : i64" + (upper ? ", upper}" : "}") +
           " : " + T(s)},
          {{"y", s}}};
}

Case where(Rng &rng, const Shape &cond, const Shape &t, const Shape &f) {
  std::vector<bool> mask(count(cond));
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = randInt(rng, 0, 1);
  if (mask.size() > 1) {
    mask[0] = true;
    mask[1] = false;
  }
  Shape y = broadcast(broadcast(cond, t), f);
  return {{{"t", t}, {"f", f}},
          {boolConstant("c", cond, mask), "%y = graph.where %c, %t, %f : (" + T(cond, "i1") + ", " +
                                              T(t) + ", " + T(f) + ") -> " + T(y)},
          {{"y", y}}};
}

/// graph.rope on x [B, H, S, D] with cos/sin [S, D] or [B, 1, S, D] (differentiated too);
/// `interleaved`: GPT-J's rotation of adjacent pairs.
Case rope(Rng &rng, bool batched, bool interleaved = false) {
  int64_t b = randInt(rng, 1, 2), h = randInt(rng, 2, 3), s = randInt(rng, 2, 4),
          d = 2 * randInt(rng, 2, 3);
  Shape x{b, h, s, d};
  Shape c = batched ? Shape{b, 1, s, d} : Shape{s, d};
  return {{{"x", x}, {"c", c}, {"s", c}},
          {"%y = graph.rope %x, %c, %s " + std::string(interleaved ? "{interleaved} " : "") +
           ": " + sig({x, c, c}, x)},
          {{"y", x}}};
}

/// graph.attention with Hkv key/value heads, each shared by `groups` query heads.
/// graph.attention over [B, Hkv * groups, S, D]; S random in [3, 4] when `seq` is 0.
/// With `sinks`, also attention sinks [Hq] (GPT-OSS), differentiated too; with `window`
/// (>= 1, causal), a sliding window; with `softcap` (> 0), a logit soft-cap (Gemma-2; 1.5, so
/// that the U(-2, 2) inputs' scores reach its bend); with `valueDim` (> 0), a value head size
/// other than the query's (multi-head latent attention).
Case attention(Rng &rng, int64_t kvHeads, int64_t groups, bool causal, int64_t seq = 0,
               bool sinks = false, int64_t window = 0, double softcap = 0, int64_t valueDim = 0) {
  int64_t b = randInt(rng, 1, 2), s = seq ? seq : randInt(rng, 3, 4), d = randInt(rng, 2, 4);
  Shape q{b, kvHeads * groups, s, d}, k{b, kvHeads, s, d}, hs{kvHeads * groups};
  Shape v{b, kvHeads, s, valueDim ? valueDim : d}, y{b, kvHeads * groups, s, v[3]};
  std::string attrs = " {" + std::string(causal ? "causal, " : "") + "scale = 0.5 : f64" +
                      (softcap ? ", softcap = " + std::to_string(softcap) + " : f64" : "") +
                      (window ? ", window = " + std::to_string(window) + " : i64" : "") + "} : ";
  if (sinks)
    return {{{"q", q}, {"k", k}, {"v", v}, {"s", hs}},
            {"%y = graph.attention %q, %k, %v sinks %s" + attrs + sig({q, k, v, hs}, y)},
            {{"y", y}}};
  return {{{"q", q}, {"k", k}, {"v", v}},
          {"%y = graph.attention %q, %k, %v" + attrs + sig({q, k, v}, y)},
          {{"y", y}}};
}

std::vector<CaseDef> allCases() {
  std::vector<CaseDef> cases;
  auto add = [&](std::string name, std::function<Case(Rng &)> make) {
    cases.push_back({std::move(name), std::move(make)});
  };

  // Unary elementwise.
  struct U {
    const char *name, *op;
    Dist dist;
  };
  for (U u :
       {U{"sqrt", "sqrt", Dist::Positive}, U{"reciprocal", "reciprocal", Dist::AwayFromZero},
        U{"exp", "exp", Dist::Uniform}, U{"log", "log", Dist::Positive},
        U{"tanh", "tanh", Dist::Uniform}, U{"sigmoid", "sigmoid", Dist::Uniform},
        U{"erf", "erf", Dist::Uniform}, U{"silu", "silu", Dist::Uniform},
        U{"neg", "neg", Dist::Uniform}, U{"relu", "relu", Dist::AwayFromZero},
        U{"gelu_exact", "gelu exact", Dist::Uniform}, U{"gelu_tanh", "gelu tanh", Dist::Uniform},
        U{"softplus", "softplus", Dist::Uniform}, U{"floor", "floor", Dist::Uniform},
        U{"cos", "cos", Dist::Uniform}, U{"sin", "sin", Dist::Uniform}}) {
    std::string op = u.op;
    Dist d = u.dist;
    add(u.name, [op, d](Rng &r) { return unary(r, op, d); });
  }
  add("cast_f32_to_f32", [](Rng &r) {
    Shape s = randShape(r, 2);
    return Case{{{"x", s}}, {"%y = graph.cast %x : " + T(s) + " to " + T(s)}, {{"y", s}}};
  });

  // Binary elementwise with broadcasting.
  struct B {
    const char *op;
    Dist a, b;
  };
  for (B bin : {B{"add", Dist::Uniform, Dist::Uniform}, B{"sub", Dist::Uniform, Dist::Uniform},
                B{"mul", Dist::Uniform, Dist::Uniform}, B{"div", Dist::Uniform, Dist::AwayFromZero},
                B{"pow", Dist::Positive, Dist::Uniform}})
    for (const auto &[pattern, shapes] : broadcastPatterns()) {
      std::string op = bin.op;
      B b = bin;
      ShapePair sp = shapes;
      add(op + "_" + pattern, [op, b, sp](Rng &r) { return binary(r, op, b.a, b.b, sp); });
    }
  // mod (floored and truncated remainders): piecewise, the inputs almost surely away from the
  // jumps at integer quotients.
  for (const char *flags : {"", " {fmod}"})
    for (const auto &[pattern, shapes] : broadcastPatterns()) {
      std::string f = flags;
      ShapePair sp = shapes;
      add(std::string(*flags ? "fmod_" : "mod_") + pattern, [f, sp](Rng &r) {
        auto [a, b] = sp(r);
        Shape y = broadcast(a, b);
        return Case{{{"a", a}, {"b", b, Dist::AwayFromZero}},
                    {"%y = graph.mod %a, %b" + f + " : " + sig({a, b}, y)},
                    {{"y", y}}};
      });
    }
  // Fan-out: both operands are the same value (the two cotangents accumulate).
  add("mul_same_operand", [](Rng &r) {
    Shape s = randShape(r, 2);
    return Case{{{"x", s}}, {"%y = graph.mul %x, %x : " + sig({s, s}, s)}, {{"y", s}}};
  });
  add("pow_constant_exponent", [](Rng &r) {
    Shape s = randShape(r, 2);
    return Case{{{"x", s, Dist::Positive}, {"e", {}, Dist::Uniform, /*wrt=*/false}},
                {"%y = graph.pow %x, %e : " + sig({s, {}}, s)},
                {{"y", s}}};
  });

  // where: gradients to both branches, with broadcasting of condition and branches.
  add("where_same", [](Rng &r) {
    Shape s = randShape(r, 2);
    return where(r, s, s, s);
  });
  add("where_broadcast_branches", [](Rng &r) {
    Shape s = randShape(r, 3);
    return where(r, s, {s[1], 1}, {s[2]});
  });
  add("where_broadcast_condition", [](Rng &r) {
    Shape s = randShape(r, 3);
    return where(r, {s[2]}, s, {});
  });

  // matmul: 2-D, batched with broadcasting, 1-D operands.
  add("matmul_2d", [](Rng &r) {
    int64_t m = randInt(r, 2, 5), k = randInt(r, 2, 5), n = randInt(r, 2, 5);
    return matmul({m, k}, {k, n}, {m, n});
  });
  add("matmul_batched_weight", [](Rng &r) {
    int64_t b = randInt(r, 2, 3), m = randInt(r, 2, 4), k = randInt(r, 2, 4), n = randInt(r, 2, 4);
    return matmul({b, m, k}, {k, n}, {b, m, n});
  });
  add("matmul_batched_broadcast", [](Rng &r) {
    int64_t b0 = randInt(r, 2, 3), b1 = randInt(r, 2, 3), m = randInt(r, 2, 4),
            k = randInt(r, 2, 4), n = randInt(r, 2, 4);
    return matmul({b0, 1, m, k}, {b1, k, n}, {b0, b1, m, n});
  });
  add("matmul_1d_lhs", [](Rng &r) {
    int64_t b = randInt(r, 2, 3), k = randInt(r, 2, 5), n = randInt(r, 2, 5);
    return matmul({k}, {b, k, n}, {b, n});
  });
  add("matmul_1d_rhs", [](Rng &r) {
    int64_t b = randInt(r, 2, 3), m = randInt(r, 2, 5), k = randInt(r, 2, 5);
    return matmul({b, m, k}, {k}, {b, m});
  });
  // Transposed operands (the flags the transpose folding sets), whose VJPs use flags too.
  add("matmul_transpose_b", [](Rng &r) {
    int64_t b = randInt(r, 2, 3), m = randInt(r, 2, 4), k = randInt(r, 2, 4), n = randInt(r, 2, 4);
    return matmulFlags({b, m, k}, {n, k}, {b, m, n}, "transpose_b");
  });
  add("matmul_transpose_a", [](Rng &r) {
    int64_t b = randInt(r, 2, 3), m = randInt(r, 2, 4), k = randInt(r, 2, 4), n = randInt(r, 2, 4);
    return matmulFlags({b, k, m}, {b, k, n}, {b, m, n}, "transpose_a");
  });
  add("matmul_transpose_both_broadcast", [](Rng &r) {
    int64_t b0 = randInt(r, 2, 3), b1 = randInt(r, 2, 3), m = randInt(r, 2, 4),
            k = randInt(r, 2, 4), n = randInt(r, 2, 4);
    return matmulFlags({b0, 1, k, m}, {b1, n, k}, {b0, b1, m, n}, "transpose_a, transpose_b");
  });
  add("matmul_1d_both", [](Rng &r) {
    int64_t k = randInt(r, 2, 6);
    return matmul({k}, {k}, {});
  });

  // Reductions: keepdims on and off, one middle axis, two non-adjacent axes, all axes.
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
    for (bool keep : {false, true}) {
      std::string o = op, k = keep ? "_keepdims" : "";
      add(o + "_axis1" + k, [o, keep](Rng &r) { return reduce(r, o, 3, {1}, keep); });
      add(o + "_axes02" + k, [o, keep](Rng &r) { return reduce(r, o, 3, {0, 2}, keep); });
      add(o + "_all" + k, [o, keep](Rng &r) { return reduce(r, o, 3, {0, 1, 2}, keep); });
    }

  // Softmax family on the last, first and a middle axis.
  for (const char *op : {"softmax", "log_softmax"}) {
    std::string o = op;
    add(o + "_last", [o](Rng &r) { return softmaxLike(r, o, 3, 2); });
    add(o + "_first", [o](Rng &r) { return softmaxLike(r, o, 3, 0); });
    add(o + "_middle", [o](Rng &r) { return softmaxLike(r, o, 4, 1); });
  }

  // Norms: gradients to input, scale and bias; normalising the last axis or the last two.
  add("layer_norm_bias_last", [](Rng &r) { return layerNorm(r, 3, 2, true); });
  add("layer_norm_nobias_last", [](Rng &r) { return layerNorm(r, 3, 2, false); });
  add("layer_norm_bias_last2", [](Rng &r) { return layerNorm(r, 3, 1, true); });
  add("layer_norm_nobias_last2", [](Rng &r) { return layerNorm(r, 4, 2, false); });
  add("rms_norm_last", [](Rng &r) { return rmsNorm(r, 3, 2); });
  add("rms_norm_last2", [](Rng &r) { return rmsNorm(r, 3, 1); });

  // Cross-entropy (gradient to the logits), some labels ignored.
  add("cross_entropy_mean", [](Rng &r) { return crossEntropy(r, "mean", {}, -100); });
  add("cross_entropy_sum", [](Rng &r) { return crossEntropy(r, "sum", {}, -100); });
  add("cross_entropy_mean_spatial", [](Rng &r) { return crossEntropy(r, "mean", {3}, -100); });
  add("cross_entropy_sum_spatial", [](Rng &r) { return crossEntropy(r, "sum", {2}, -1); });
  add("cross_entropy_mean_ignore_class", [](Rng &r) { return crossEntropy(r, "mean", {}, 1); });
  // The fused LM head (bias-free and Phi's biased head: dbias too).
  add("linear_cross_entropy_mean", [](Rng &r) { return linearCrossEntropy(r, "mean", false); });
  add("linear_cross_entropy_bias_mean", [](Rng &r) { return linearCrossEntropy(r, "mean", true); });
  add("linear_cross_entropy_bias_sum", [](Rng &r) { return linearCrossEntropy(r, "sum", true); });

  // Shape ops.
  add("reshape_merge", [](Rng &r) {
    Shape s = randShape(r, 3), y{s[0] * s[1], s[2]};
    return Case{{{"x", s}}, {"%y = graph.reshape %x : " + T(s) + " to " + T(y)}, {{"y", y}}};
  });
  add("reshape_split", [](Rng &r) {
    Shape s = randShape(r, 2), y{s[1], 1, s[0]};
    return Case{{{"x", s}}, {"%y = graph.reshape %x : " + T(s) + " to " + T(y)}, {{"y", y}}};
  });
  for (int rank : {3, 4})
    add("transpose_rank" + std::to_string(rank), [rank](Rng &r) {
      Shape s = randShape(r, rank);
      std::vector<int64_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      do
        std::shuffle(perm.begin(), perm.end(), r);
      while (std::is_sorted(perm.begin(), perm.end()));
      Shape y(rank);
      for (int i = 0; i < rank; ++i)
        y[i] = s[perm[i]];
      return Case{{{"x", s}},
                  {"%y = graph.transpose %x {permutation = " + arr(perm) + "} : " + sig({s}, y)},
                  {{"y", y}}};
    });
  add("expand_inner_and_new", [](Rng &r) {
    Shape y = randShape(r, 3), s{y[1], 1};
    return Case{{{"x", s}}, {"%y = graph.expand %x : " + T(s) + " to " + T(y)}, {{"y", y}}};
  });
  add("expand_leading_one", [](Rng &r) {
    Shape y = randShape(r, 2), s{1, y[1]};
    return Case{{{"x", s}}, {"%y = graph.expand %x : " + T(s) + " to " + T(y)}, {{"y", y}}};
  });
  add("expand_scalar", [](Rng &r) {
    Shape y = randShape(r, 2), s{};
    return Case{{{"x", s}}, {"%y = graph.expand %x : " + T(s) + " to " + T(y)}, {{"y", y}}};
  });
  add("concat_axis1_three", [](Rng &r) {
    Shape a = randShape(r, 3), b = a, c = a;
    b[1] = randInt(r, 1, 3);
    c[1] = randInt(r, 1, 3);
    Shape y = a;
    y[1] = a[1] + b[1] + c[1];
    return Case{{{"a", a}, {"b", b}, {"c", c}},
                {"%y = graph.concat %a, %b, %c {axis = 1 : i64} : " + sig({a, b, c}, y)},
                {{"y", y}}};
  });
  add("concat_axis0_frozen_operand", [](Rng &r) {
    Shape a = randShape(r, 2), b = a;
    b[0] = randInt(r, 1, 3);
    Shape y = a;
    y[0] += b[0];
    return Case{{{"a", a}, {"b", b, Dist::Uniform, /*wrt=*/false}},
                {"%y = graph.concat %a, %b {axis = 0 : i64} : " + sig({a, b}, y)},
                {{"y", y}}};
  });
  add("slice_unit_steps", [](Rng &) { return slice({4, 5, 3}, {0, 2}, {1, 0}, {3, 2}, {1, 1}); });
  add("slice_step2", [](Rng &) { return slice({3, 7}, {1}, {1}, {7}, {2}); });
  add("slice_reverse", [](Rng &) { return slice({3, 5}, {1}, {4}, {-1}, {-1}); });
  add("slice_negative_step2", [](Rng &) {
    return slice({6, 4}, {0, 1}, {5, 3}, {0, -1}, {-2, -1});
  });
  add("split_three", [](Rng &r) {
    Shape s = randShape(r, 3);
    s[1] = 6;
    Shape p0 = s, p1 = s, p2 = s;
    p0[1] = 1;
    p1[1] = 3;
    p2[1] = 2;
    return Case{{{"x", s}},
                {"%y:3 = graph.split %x {axis = 1 : i64, sizes = array<i64: 1, 3, 2>} : (" + T(s) +
                 ") -> (" + T(p0) + ", " + T(p1) + ", " + T(p2) + ")"},
                {{"y#0", p0}, {"y#1", p1}, {"y#2", p2}}};
  });
  add("split_unused_piece", [](Rng &r) {
    Shape s = randShape(r, 2);
    s[1] = 5;
    Shape p0 = s, p1 = s;
    p0[1] = 2;
    p1[1] = 3;
    return Case{{{"x", s}},
                {"%y:2 = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (" + T(s) +
                 ") -> (" + T(p0) + ", " + T(p1) + ")"},
                {{"y#1", p1}}};
  });
  add("gather_axis0_repeated", [](Rng &r) {
    return gather(r, {randInt(r, 3, 6), randInt(r, 2, 4)}, 0, {2, 3}, false);
  });
  add("gather_inner_axis", [](Rng &r) {
    return gather(r, {2, randInt(r, 3, 5), 3}, 1, {4}, false);
  });
  add("gather_negative_indices", [](Rng &r) {
    return gather(r, {randInt(r, 3, 6), 2}, 0, {5}, true);
  });
  add("gather_scalar_index", [](Rng &r) { return gather(r, {3, randInt(r, 3, 5)}, 1, {}, false); });
  add("gather_elements_axis0", [](Rng &r) { return gatherElements(r, {4, 3}, 0, {5, 3}); });
  add("gather_elements_axis1", [](Rng &r) { return gatherElements(r, {3, 5}, 1, {3, 4}); });
  add("gather_elements_smaller", [](Rng &r) { return gatherElements(r, {3, 4, 5}, 2, {2, 3, 2}); });
  add("scatter_elements_add_axis0", [](Rng &r) { return scatterElementsAdd(r, {4}, 0, {6}); });
  add("scatter_elements_add_axis1",
      [](Rng &r) { return scatterElementsAdd(r, {3, 4, 5}, 1, {2, 6, 3}); });
  // A mixture of experts' routing as the ONNX importer writes it: TopK's values are a
  // gather_elements by graph.top_k's indices (not differentiable; the inputs are Spread, so no
  // finite-difference step changes the choice), GatherND of expert weights by those indices a
  // graph.gather on axis 0 (repeated experts accumulate), Tile a reshape/expand/reshape, Clip a
  // compare/where pair per bound (the bounds lie off the inputs' grid).
  add("top_k_values", [](Rng &) {
    return Case{{{"x", {3, 6}, Dist::Spread}},
                {"%i = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<3x6xf32>) -> "
                 "tensor<3x2xi64>",
                 "%y = graph.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x6xf32>, "
                 "tensor<3x2xi64>) -> tensor<3x2xf32>"},
                {{"y", {3, 2}}}};
  });
  add("top_k_smallest_axis0", [](Rng &) {
    return Case{{{"x", {5, 3}, Dist::Spread}},
                {"%i = graph.top_k %x {axis = 0 : i64, k = 3 : i64, smallest} : "
                 "(tensor<5x3xf32>) -> tensor<3x3xi64>",
                 "%y = graph.gather_elements %x, %i {axis = 0 : i64} : (tensor<5x3xf32>, "
                 "tensor<3x3xi64>) -> tensor<3x3xf32>"},
                {{"y", {3, 3}}}};
  });
  add("routed_expert_rows", [](Rng &) {
    // 4 tokens pick 2 of 3 experts: some expert serves several tokens.
    return Case{{{"l", {4, 3}, Dist::Spread}, {"w", {3, 2, 5}}},
                {"%i = graph.top_k %l {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> "
                 "tensor<4x2xi64>",
                 "%p = graph.gather_elements %l, %i {axis = 1 : i64} : (tensor<4x3xf32>, "
                 "tensor<4x2xi64>) -> tensor<4x2xf32>",
                 "%y = graph.gather %w, %i {axis = 0 : i64} : (tensor<3x2x5xf32>, "
                 "tensor<4x2xi64>) -> tensor<4x2x2x5xf32>"},
                {{"p", {4, 2}}, {"y", {4, 2, 2, 5}}}};
  });
  // Routed experts in grouped form: 5 tokens pick 2 of 3 experts (expert 2 serves no token
  // in "grouped_*_empty_expert"); the sort is a constant routing, so positions and offsets
  // are fixed and every float operand is differentiated.
  auto routing = [](const std::vector<int64_t> &experts) {
    return std::vector<std::string>{
        intConstant("idx", {5, 2}, experts),
        "%pos, %off = graph.moe_sort %idx {num_experts = 3 : i64} : (tensor<5x2xi64>) -> "
        "(tensor<5x2xi64>, tensor<4xi64>)"};
  };
  const std::vector<int64_t> mixed = {2, 0, 0, 1, 1, 2, 0, 2, 1, 0};
  const std::vector<int64_t> noTwo = {1, 0, 0, 1, 1, 0, 0, 1, 1, 0};
  add("moe_dispatch", [=](Rng &) {
    std::vector<std::string> body = routing(mixed);
    body.push_back("%y = graph.moe_dispatch %x, %pos : (tensor<5x4xf32>, tensor<5x2xi64>) -> "
                   "tensor<10x4xf32>");
    return Case{{{"x", {5, 4}}}, body, {{"y", {10, 4}}}};
  });
  add("moe_combine", [=](Rng &) {
    std::vector<std::string> body = routing(mixed);
    body.push_back("%y = graph.moe_combine %r, %w, %pos : (tensor<10x3xf32>, tensor<5x2xf32>, "
                   "tensor<5x2xi64>) -> tensor<5x3xf32>");
    return Case{{{"r", {10, 3}}, {"w", {5, 2}}}, body, {{"y", {5, 3}}}};
  });
  for (bool tb : {false, true})
    for (bool empty : {false, true})
      add(std::string("grouped_matmul") + (tb ? "_transpose_b" : "") +
              (empty ? "_empty_expert" : ""),
          [=](Rng &) {
            std::vector<std::string> body = routing(empty ? noTwo : mixed);
            Shape w = tb ? Shape{3, 6, 4} : Shape{3, 4, 6};
            body.push_back(std::string("%y = graph.grouped_matmul %r, %w, %off") +
                           (tb ? " {transpose_b}" : "") + " : (tensor<10x4xf32>, " + T(w) +
                           ", tensor<4xi64>) -> tensor<10x6xf32>");
            return Case{{{"r", {10, 4}}, {"w", w}}, body, {{"y", {10, 6}}}};
          });
  add("grouped_matmul_wgrad_empty_expert", [=](Rng &) {
    std::vector<std::string> body = routing(noTwo);
    body.push_back("%y = graph.grouped_matmul_wgrad %a, %b, %off : (tensor<10x4xf32>, "
                   "tensor<10x3xf32>, tensor<4xi64>) -> tensor<3x4x3xf32>");
    return Case{{{"a", {10, 4}}, {"b", {10, 3}}}, body, {{"y", {3, 4, 3}}}};
  });
  // The whole grouped block as rp-fuse-routed-experts writes it: router top-k on the
  // logits, softmax over the k picked logits, gate/up and down grouped matmuls, combine.
  add("routed_experts_block", [](Rng &) {
    return Case{
        {{"x", {5, 4}}, {"l", {5, 3}, Dist::Spread}, {"wu", {3, 4, 6}}, {"wd", {3, 4, 6}}},
        {"%i = graph.top_k %l {axis = 1 : i64, k = 2 : i64} : (tensor<5x3xf32>) -> "
         "tensor<5x2xi64>",
         "%v = graph.gather_elements %l, %i {axis = 1 : i64} : (tensor<5x3xf32>, "
         "tensor<5x2xi64>) -> tensor<5x2xf32>",
         "%p = graph.softmax %v {axis = 1 : i64} : tensor<5x2xf32>",
         "%pos, %off = graph.moe_sort %i {num_experts = 3 : i64} : (tensor<5x2xi64>) -> "
         "(tensor<5x2xi64>, tensor<4xi64>)",
         "%r = graph.moe_dispatch %x, %pos : (tensor<5x4xf32>, tensor<5x2xi64>) -> "
         "tensor<10x4xf32>",
         "%h = graph.grouped_matmul %r, %wu, %off : (tensor<10x4xf32>, tensor<3x4x6xf32>, "
         "tensor<4xi64>) -> tensor<10x6xf32>",
         "%a = graph.tanh %h : tensor<10x6xf32>",
         "%o = graph.grouped_matmul %a, %wd, %off {transpose_b} : (tensor<10x6xf32>, "
         "tensor<3x4x6xf32>, tensor<4xi64>) -> tensor<10x4xf32>",
         "%y = graph.moe_combine %o, %p, %pos : (tensor<10x4xf32>, tensor<5x2xf32>, "
         "tensor<5x2xi64>) -> tensor<5x4xf32>"},
        {{"y", {5, 4}}}};
  });
  add("tile_rows", [](Rng &) {
    return Case{{{"x", {2, 3}}},
                {"%s = graph.reshape %x : tensor<2x3xf32> to tensor<1x2x1x3xf32>",
                 "%e = graph.expand %s : tensor<1x2x1x3xf32> to tensor<3x2x2x3xf32>",
                 "%y = graph.reshape %e : tensor<3x2x2x3xf32> to tensor<6x6xf32>"},
                {{"y", {6, 6}}}};
  });
  add("clip_both_bounds", [](Rng &) {
    return Case{{{"x", {4, 5}, Dist::Spread}},
                {"%lo = graph.constant dense<-0.7531> : tensor<f32>",
                 "%hi = graph.constant dense<0.9123> : tensor<f32>",
                 "%c1 = graph.compare le, %x, %lo : (tensor<4x5xf32>, tensor<f32>) -> "
                 "tensor<4x5xi1>",
                 "%y1 = graph.where %c1, %lo, %x : (tensor<4x5xi1>, tensor<f32>, "
                 "tensor<4x5xf32>) -> tensor<4x5xf32>",
                 "%c2 = graph.compare ge, %y1, %hi : (tensor<4x5xf32>, tensor<f32>) -> "
                 "tensor<4x5xi1>",
                 "%y = graph.where %c2, %hi, %y1 : (tensor<4x5xi1>, tensor<f32>, "
                 "tensor<4x5xf32>) -> tensor<4x5xf32>"},
                {{"y", {4, 5}}}};
  });
  add("scatter_add_axis0", [](Rng &r) { return scatterAdd(r, {5, 3}, 0, {2, 2}); });
  add("scatter_add_axis1", [](Rng &r) { return scatterAdd(r, {2, 4, 3}, 1, {3}); });
  add("scatter_rows", [](Rng &r) { return scatter(r, {6, 3}, 0, {3}, false); });
  add("scatter_rows_repeated", [](Rng &r) { return scatter(r, {6, 3}, 0, {3}, true); });
  add("scatter_axis1_2d_indices", [](Rng &r) { return scatter(r, {2, 7, 2}, 1, {2, 2}, false); });
  add("scatter_axis1_repeated", [](Rng &r) { return scatter(r, {2, 7, 2}, 1, {2, 2}, true); });
  add("scatter_elements_axis1", [](Rng &r) { return scatterElements(r, {3, 5}, 1, {3, 2}, false); });
  add("scatter_elements_axis1_repeated",
      [](Rng &r) { return scatterElements(r, {3, 5}, 1, {3, 2}, true); });
  add("scatter_elements_axis0_smaller",
      [](Rng &r) { return scatterElements(r, {4, 3, 2}, 0, {3, 2, 2}, false); });
  add("scatter_elements_axis0_repeated",
      [](Rng &r) { return scatterElements(r, {4, 3, 2}, 0, {3, 2, 2}, true); });
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      std::string n = std::string("cumsum") + (exclusive ? "_exclusive" : "") +
                      (reverse ? "_reverse" : "");
      add(n + "_axis1", [=](Rng &r) { return cumsum(r, 3, 1, exclusive, reverse); });
      add(n + "_axis0", [=](Rng &r) { return cumsum(r, 2, 0, exclusive, reverse); });
    }
  add("trilu_lower", [](Rng &r) { return trilu(r, 2, 0, false); });
  add("trilu_upper_k1", [](Rng &r) { return trilu(r, 2, 1, true); });
  add("trilu_lower_km1_batched", [](Rng &r) { return trilu(r, 3, -1, false); });
  add("trilu_upper_km2_batched", [](Rng &r) { return trilu(r, 4, -2, true); });

  // Fused ops (graph.swiglu, graph.rope): every operand differentiated.
  add("swiglu", [](Rng &r) {
    Shape s = randShape(r, 3);
    return Case{{{"a", s}, {"u", s}}, {"%y = graph.swiglu %a, %u : " + T(s)}, {{"y", s}}};
  });
  add("swiglu_1d", [](Rng &r) {
    Shape s{randInt(r, 3, 7)};
    return Case{{{"a", s}, {"u", s}}, {"%y = graph.swiglu %a, %u : " + T(s)}, {{"y", s}}};
  });
  add("rope_cos_sd", [](Rng &r) { return rope(r, false); });
  add("rope_cos_b1sd", [](Rng &r) { return rope(r, true); });
  add("rope_interleaved_cos_sd", [](Rng &r) { return rope(r, false, true); });
  add("rope_interleaved_cos_b1sd", [](Rng &r) { return rope(r, true, true); });
  add("attention_mha", [](Rng &r) { return attention(r, 2, 1, false); });
  add("attention_mha_causal", [](Rng &r) { return attention(r, 2, 1, true); });
  add("attention_gqa_causal", [](Rng &r) { return attention(r, 2, 2, true); });
  add("attention_mqa", [](Rng &r) { return attention(r, 1, 3, false); });
  // graph.attention_vjp (the fused backward): one position, and a longer causal GQA sequence.
  add("attention_seq1_causal", [](Rng &r) { return attention(r, 2, 2, true, 1); });
  add("attention_seq1", [](Rng &r) { return attention(r, 1, 1, false, 1); });
  add("attention_gqa_seq9_causal", [](Rng &r) { return attention(r, 2, 3, true, 9); });
  // Attention sinks (GPT-OSS): dsinks too; one position (no single-key shortcut with a sink).
  add("attention_sinks", [](Rng &r) { return attention(r, 2, 1, false, 0, true); });
  add("attention_sinks_gqa_causal", [](Rng &r) { return attention(r, 2, 2, true, 0, true); });
  add("attention_sinks_seq1_causal", [](Rng &r) { return attention(r, 1, 2, true, 1, true); });
  // Sliding windows (Mistral, GPT-OSS's sliding layers): 2 and 5 keys over 9 positions, one
  // key (every row's dS is 0), and with sinks.
  add("attention_window2_gqa", [](Rng &r) { return attention(r, 2, 2, true, 9, false, 2); });
  add("attention_window5", [](Rng &r) { return attention(r, 1, 2, true, 9, false, 5); });
  add("attention_window1", [](Rng &r) { return attention(r, 2, 1, true, 6, false, 1); });
  add("attention_window3_sinks", [](Rng &r) { return attention(r, 2, 2, true, 9, true, 3); });
  // A logit soft-cap (Gemma-2): the VJP's dS takes the cap's derivative.
  add("attention_softcap", [](Rng &r) { return attention(r, 2, 1, false, 0, false, 0, 1.5); });
  add("attention_softcap_gqa_causal",
      [](Rng &r) { return attention(r, 2, 2, true, 9, false, 0, 1.5); });
  add("attention_softcap_sinks_window",
      [](Rng &r) { return attention(r, 1, 2, true, 9, true, 4, 1.5); });
  // A value head size other than the query's (multi-head latent attention), below and above.
  add("attention_value_dim5_gqa_causal",
      [](Rng &r) { return attention(r, 2, 2, true, 9, false, 0, 0, 5); });
  add("attention_value_dim1_sinks_softcap",
      [](Rng &r) { return attention(r, 1, 2, false, 0, true, 0, 1.5, 1); });
  return cases;
}

//===----------------------------------------------------------------------===//
// The check
//===----------------------------------------------------------------------===//

/// Worst relative error per case, printed at the end.
std::map<std::string, double> &worstErrors() {
  static std::map<std::string, double> m;
  return m;
}

class SummaryPrinter : public ::testing::Environment {
public:
  void TearDown() override {
    if (worstErrors().empty())
      return;
    std::printf("\nworst relative error ||g - fd|| / ||fd|| per case (bound %.0e):\n", kTolerance);
    for (const auto &[name, err] : worstErrors())
      std::printf("  %-40s %.3e%s\n", name.c_str(), err, err < kTolerance ? "" : "  FAIL");
  }
};

[[maybe_unused]] const auto *const summaryEnv =
    ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

double sample(Dist d, Rng &rng) {
  std::uniform_real_distribution<double> u(0, 1);
  switch (d) {
  case Dist::Uniform:
    return -2 + 4 * u(rng);
  case Dist::Positive:
    return 0.5 + 1.5 * u(rng);
  case Dist::AwayFromZero:
    return (u(rng) < 0.5 ? -1 : 1) * (0.2 + 1.8 * u(rng));
  case Dist::Spread:
    break;
  }
  return 0;
}

HostTensor makeInput(const Input &in, Rng &rng) {
  if (in.dist != Dist::Spread)
    return randomF64(in.shape, rng, [&](Rng &r) { return sample(in.dist, r); });
  int64_t n = count(in.shape);
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  HostTensor t(DType::F64, in.shape);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < n; ++i)
    t.data<double>()[i] = -2 + 4 * (perm[i] + 0.3 + 0.4 * u(rng)) / n;
  return t;
}

std::string buildText(const Case &c) {
  std::ostringstream os;
  os << "func.func @forward(";
  for (size_t i = 0; i < c.inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << c.inputs[i].name << ": " << T(c.inputs[i].shape);
  for (size_t k = 0; k < c.outputs.size(); ++k)
    os << ", %w" << k << ": " << T(c.outputs[k].shape);
  os << ") -> tensor<f32> {\n";
  for (const std::string &line : c.body)
    os << "  " << line << "\n";
  std::vector<std::string> terms;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const Output &o = c.outputs[k];
    std::string t = T(o.shape), p = "%p" + std::to_string(k), l = "%l" + std::to_string(k);
    os << "  " << p << " = graph.mul %" << o.value << ", %w" << k << " : (" << t << ", " << t
       << ") -> " << t << "\n";
    if (o.shape.empty()) {
      terms.push_back(p);
      continue;
    }
    std::vector<int64_t> axes(o.shape.size());
    std::iota(axes.begin(), axes.end(), 0);
    os << "  " << l << " = graph.reduce_sum " << p << " {axes = " << arr(axes) << "} : (" << t
       << ") -> tensor<f32>\n";
    terms.push_back(l);
  }
  std::string loss = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) {
    std::string next = "%s" + std::to_string(k);
    os << "  " << next << " = graph.add " << loss << ", " << terms[k]
       << " : (tensor<f32>, tensor<f32>) -> tensor<f32>\n";
    loss = next;
  }
  os << "  return " << loss << " : tensor<f32>\n}\n";
  return os.str();
}

uint64_t seedOf(const std::string &name) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (char ch : name)
    h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

class VjpFiniteDifference : public ::testing::TestWithParam<CaseDef> {};

TEST_P(VjpFiniteDifference, Check) {
  const CaseDef &def = GetParam();
  Rng rng(seedOf(def.name));
  Case c = def.make(rng);
  std::string text = buildText(c);
  SCOPED_TRACE("forward:\n" + text);

  TestContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx.get());
  ASSERT_TRUE(module) << "the test's IR does not parse:\n" << ctx.takeDiagnostics();
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(forward);

  mlir::rp::AutodiffConfig config;
  std::vector<size_t> wrt; // input indices in wrtArgs order
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].wrt) {
      config.wrtArgs.push_back(static_cast<unsigned>(i));
      wrt.push_back(i);
    }
  mlir::FailureOr<mlir::func::FuncOp> step = mlir::rp::buildGradientFunction(forward, config);
  ASSERT_TRUE(mlir::succeeded(step)) << "buildGradientFunction failed:\n" << ctx.takeDiagnostics();
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*module)))
      << "the module with @train_step does not verify:\n"
      << ctx.takeDiagnostics();
  ASSERT_EQ(step->getNumResults(), 1 + wrt.size());
  for (size_t k = 0; k < wrt.size(); ++k) {
    auto attr = step->getResultAttrOfType<mlir::IntegerAttr>(1 + k, "graph.grad_of_arg");
    ASSERT_TRUE(attr) << "result " << 1 + k << " has no graph.grad_of_arg";
    EXPECT_EQ(attr.getInt(), static_cast<int64_t>(wrt[k]));
  }
  std::string stepText;
  {
    llvm::raw_string_ostream os(stepText);
    step->print(os);
  }
  SCOPED_TRACE("train_step:\n" + stepText);

  std::vector<HostTensor> args;
  for (const Input &in : c.inputs)
    args.push_back(makeInput(in, rng));
  for (const Output &o : c.outputs)
    args.push_back(randomF64(
        o.shape, rng, [](Rng &r) { return std::uniform_real_distribution<double>(-1, 1)(r); }));

  ParamLoader none = noParams();
  auto stepOut = runF64(*step, args, none);
  ASSERT_TRUE(stepOut) << "@train_step failed to run:\n" << ctx.takeDiagnostics();
  auto fwdOut = runF64(forward, args, none);
  ASSERT_TRUE(fwdOut) << "@forward failed to run:\n" << ctx.takeDiagnostics();
  EXPECT_EQ(at((*stepOut)[0], 0), at((*fwdOut)[0], 0)) << "@train_step's loss differs";

  auto loss = [&]() -> std::optional<double> {
    auto out = runF64(forward, args, none);
    if (!out)
      return std::nullopt;
    return at((*out)[0], 0);
  };
  double worst = 0;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Input &in = c.inputs[wrt[k]];
    HostTensor &x = args[wrt[k]];
    const HostTensor &g = (*stepOut)[1 + k];
    ASSERT_EQ(g.shape(), in.shape) << "gradient of %" << in.name;
    std::vector<double> grad, fd;
    for (int64_t j = 0; j < x.numElements(); ++j) {
      std::optional<double> d = centralDifference(&x.data<double>()[j], loss);
      ASSERT_TRUE(d) << "@forward failed to run:\n" << ctx.takeDiagnostics();
      fd.push_back(*d);
      grad.push_back(at(g, j));
    }
    double err = relativeError(grad, fd);
    worst = std::max(worst, err);
    std::printf("[ %s ] %%%s %s: relative error %.3e (||fd|| = %.3e)\n", def.name.c_str(),
                in.name.c_str(), ::rp::base::formatShape(in.shape).c_str(), err,
                std::sqrt(std::inner_product(fd.begin(), fd.end(), fd.begin(), 0.0)));
    EXPECT_LT(err, kTolerance) << "gradient of %" << in.name << " "
                               << ::rp::base::formatShape(in.shape)
                               << "\n  autodiff: " << describe(grad)
                               << "\n  finite difference: " << describe(fd);
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  worstErrors()[def.name] = worst;
}

INSTANTIATE_TEST_SUITE_P(OpVjp, VjpFiniteDifference, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<CaseDef> &info) {
                           return info.param.name;
                         });

} // namespace
