//===- FlopRules.cpp - Floating-point operations of a kernel call ---------===//

#include "kernels/FlopRules.h"

#include <algorithm>

namespace rp::kernels {

namespace {

double elements(const Shape &shape) {
  double n = 1;
  for (int64_t d : shape)
    n *= static_cast<double>(d);
  return n;
}

double matmulFlops(const std::vector<Shape> &operands, const std::vector<Shape> &results,
                   bool transposeA) {
  if (operands.size() != 2 || results.size() != 1 || operands[0].empty())
    return 0;
  const Shape &a = operands[0];
  if (transposeA && a.size() < 2)
    return 0;
  const int64_t k = transposeA ? a[a.size() - 2] : a.back();
  return 2.0 * elements(results[0]) * static_cast<double>(k);
}

/// q, k, v and optional sinks (whose extra exponential per row is not counted).
double attentionFlops(const std::vector<Shape> &operands, bool causal, int64_t window) {
  if (operands.size() != 3 && operands.size() != 4)
    return 0;
  const Shape &q = operands[0], &k = operands[1], &v = operands[2];
  if (q.size() < 2 || k.size() < 2 || v.empty())
    return 0;
  const int64_t queries = q[q.size() - 2], d = q.back();
  const int64_t keys = k[k.size() - 2], dv = v.back();
  // The leading dims of q (batch, query heads) each run one attention.
  double heads = 1;
  for (size_t i = 0; i + 2 < q.size(); ++i)
    heads *= static_cast<double>(q[i]);
  const double pairs = causal ? windowPairs(queries, keys, window)
                              : static_cast<double>(queries) * static_cast<double>(keys);
  return 2.0 * heads * pairs * static_cast<double>(d + dv);
}

} // namespace

double causalPairs(int64_t queries, int64_t keys) {
  if (queries <= 0 || keys <= 0)
    return 0;
  const double full = static_cast<double>(std::min(queries, keys)); // rows i < keys: i + 1 keys
  const double rest = static_cast<double>(queries - std::min(queries, keys)); // rows with all keys
  return full * (full + 1) / 2 + rest * static_cast<double>(keys);
}

double windowPairs(int64_t queries, int64_t keys, int64_t window) {
  if (window <= 0 || window >= queries)
    return causalPairs(queries, keys);
  if (keys <= 0)
    return 0;
  // Rows i < window see keys 0..i (causalPairs of the first `window` rows); each later row i
  // sees keys i - window + 1 .. min(i, keys - 1), none once i - window + 1 >= keys.
  const double w = static_cast<double>(window);
  if (keys >= queries) // every row's keys exist
    return w * (w + 1) / 2 + static_cast<double>(queries - window) * w;
  double pairs = causalPairs(window, keys);
  for (int64_t i = window; i < queries; ++i) {
    const int64_t lo = i - window + 1, hi = std::min(i, keys - 1);
    if (lo > hi)
      break;
    pairs += static_cast<double>(hi - lo + 1);
  }
  return pairs;
}

double kernelFlops(std::string_view id, const std::vector<Shape> &operands,
                   const std::vector<Shape> &results, bool causal, bool transposeA,
                   int64_t window) {
  if (id == "matmul")
    return matmulFlops(operands, results, transposeA);
  if (id == "attention")
    return attentionFlops(operands, causal, window);
  if (id == "attention_vjp") // q, k, v, out, dout (, sinks): five products of the forward's size
    return operands.size() == 5 || operands.size() == 6
               ? 2.5 * attentionFlops({operands[0], operands[1], operands[2]}, causal, window)
               : 0;
  // rows [R, K] (grouped_matmul) or lhs [R, K], rhs [R, N] (wgrad): 2 R K N either way.
  if (id == "grouped_matmul" || id == "grouped_matmul_wgrad") {
    const bool forward = id == "grouped_matmul";
    if (operands.size() != 3 || operands[0].size() != 2 || results.size() != 1 ||
        results[0].empty() || (!forward && operands[1].empty()))
      return 0;
    const double n = static_cast<double>(forward ? results[0].back() : operands[1].back());
    return 2.0 * elements(operands[0]) * n;
  }
  if (id == "linear_cross_entropy" || id == "linear_cross_entropy_vjp") {
    if (operands.size() < 2 || operands[0].size() != 2 || operands[1].size() != 2)
      return 0;
    const double products = id == "linear_cross_entropy" ? 1 : 3; // logits (+ dhidden, dweight)
    const double logits = static_cast<double>(operands[0][0]) * static_cast<double>(operands[1][0]);
    // A head bias (operand 3 of the forward, 4 of the VJP): one add per logit, and the VJP's
    // dbias one more per logit.
    const bool bias = operands.size() == (id == "linear_cross_entropy" ? 4u : 5u);
    const double biasFlops = bias ? (id == "linear_cross_entropy" ? 1 : 2) * logits : 0;
    return products * 2.0 * logits * static_cast<double>(operands[0][1]) + biasFlops;
  }
  return 0;
}

} // namespace rp::kernels
