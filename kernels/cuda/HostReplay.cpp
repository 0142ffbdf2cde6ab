//===- HostReplay.cpp - The GPU kernels' work, replayed on the host -------===//
//
// Each function loops the kernel body of its family over every point the launch covers, in
// the launcher's dispatch (dtype, element size, index dtype). Host C++ (the RP_HD bodies
// compile as plain functions here).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/HostReplay.h"

#include "kernels/cuda/ElementwiseOps.h"

#include <algorithm>

namespace rp::kernels::cuda::replay {

using base::DType;

void unary(const UnaryPlan &p, const void *x, void *out) {
  visitDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.iter.numel; ++i)
      ops::unaryAt<decltype(d)::value>(p, x, out, i);
  });
}

void binary(const BinaryPlan &p, const void *a, const void *b, void *out) {
  visitDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.iter.numel; ++i)
      ops::binaryAt<decltype(d)::value>(p, a, b, out, i);
  });
}

void where(const WherePlan &p, const void *cond, const void *onTrue, const void *onFalse,
           void *out) {
  visitDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.iter.numel; ++i)
      ops::whereAt<decltype(d)::value>(p, cond, onTrue, onFalse, out, i);
  });
}

void cast(const CastPlan &p, const void *x, void *out) {
  visitDType(p.from, [&](auto from) {
    visitDType(p.to, [&](auto to) {
      for (int64_t i = 0; i < p.n; ++i)
        ops::castAt<decltype(from)::value, decltype(to)::value>(x, out, i);
    });
  });
}

void accumulate(DType dtype, const void *src, float *acc, int64_t n, bool first) {
  visitFloatDType(dtype, [&](auto d) {
    for (int64_t i = 0; i < n; ++i)
      ops::accumulateAt<decltype(d)::value>(src, acc, first, i);
  });
}

void flagNonFinite(const float *x, int64_t n, uint32_t *flag) {
  for (int64_t i = 0; i < n; ++i)
    if (ops::nonFiniteAt(x, i))
      *flag = 1;
}

void copy(const CopyPlan &p, const void *src, void *dst) {
  visitBits(static_cast<size_t>(p.elementBytes), [&](auto bits) {
    using E = decltype(bits);
    for (int64_t i = 0; i < p.iter.numel; ++i)
      copyAt(p.iter, static_cast<const E *>(src), static_cast<E *>(dst), i);
  });
}

void matmul(const MatMulPlan &p, const void *a, const void *b, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    if (p.k == 0) {
      for (int64_t i = 0; i < p.outElements; ++i)
        storeAs<D>(out, i, 0.0f);
      return;
    }
    for (const MatMulPlan::Call &c : p.calls)
      for (int64_t batch = 0; batch < p.batchCount; ++batch) {
        const int64_t aBase = c.aOffset + batch * p.aBatchStride;
        const int64_t bBase = c.bOffset + batch * p.bBatchStride;
        const int64_t outBase = c.outOffset + batch * p.outBatchStride;
        // Element strides of a(i, t) and b(t, j) in the stored (maybe transposed) layouts.
        const int64_t aRow = p.transA ? 1 : p.k, aCol = p.transA ? p.m : 1;
        const int64_t bRow = p.transB ? 1 : p.n, bCol = p.transB ? p.k : 1;
        for (int64_t i = 0; i < p.m; ++i)
          for (int64_t j = 0; j < p.n; ++j) {
            float acc = 0.0f; // cuBLASLt's CUBLAS_COMPUTE_32F
            for (int64_t t = 0; t < p.k; ++t)
              acc += static_cast<float>(loadAs<D>(a, aBase + i * aRow + t * aCol)) *
                     static_cast<float>(loadAs<D>(b, bBase + t * bRow + j * bCol));
            storeAs<D>(out, outBase + i * p.n + j, acc);
          }
      }
  });
}

void reduce(const ReducePlan &p, const void *x, void *out) {
  visitReduceDType(p.dtype,
                   [&](auto d) { reduceRows<decltype(d)::value>(p, p.threadsPerRow, x, out); });
}

void softmax(const SoftmaxPlan &p, const void *x, void *out) {
  visitFloatDType(p.dtype,
                  [&](auto d) { softmaxLines<decltype(d)::value>(p, p.threadsPerRow, x, out); });
}

void norm(const NormPlan &p, const void *x, const void *scale, const void *bias, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    normRows<decltype(d)::value>(p, p.threadsPerRow, x, scale, bias, out);
  });
}

void rmsNormVjp(const NormPlan &p, const void *x, const void *scale, const void *g, void *dx,
                void *dscaleRows) {
  visitFloatDType(p.dtype, [&](auto d) {
    rmsNormVjpRows<decltype(d)::value>(p, p.threadsPerRow, x, scale, g, dx, dscaleRows);
  });
}

void crossEntropy(const CrossEntropyPlan &p, const void *logits, const void *labels, void *out,
                  void *rowScratch) {
  visitFloatDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    crossEntropyRows<D>(p, p.threadsPerRow, logits, labels, out,
                        static_cast<LossCompute<D> *>(rowScratch));
  });
}

void topK(const TopKPlan &p, const void *x, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t r = 0; r < p.rows; ++r)
      topKRowAt<decltype(d)::value>(p, x, out, r);
  });
}

void moeSort(const MoeSortPlan &p, const void *indices, void *positions, void *offsets) {
  const auto *idx = static_cast<const int64_t *>(indices);
  auto *off = static_cast<int64_t *>(offsets);
  for (int64_t e = 0; e < p.experts; ++e)
    off[e + 1] = moeSortCountAt(p, idx, e);
  moeSortPrefix(p, off);
  for (int64_t e = 0; e < p.experts; ++e)
    moeSortPlaceAt(p, idx, off, static_cast<int64_t *>(positions), e);
}

void moeDispatch(const MoeRowsPlan &p, const void *x, const void *positions, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.tokens * p.k * p.width; ++i)
      moeDispatchAt<decltype(d)::value>(p, x, static_cast<const int64_t *>(positions), out, i);
  });
}

void moeCombine(const MoeRowsPlan &p, const void *rows, const void *weights,
                const void *positions, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.tokens * p.width; ++i)
      moeCombineAt<decltype(d)::value>(p, rows, weights, static_cast<const int64_t *>(positions),
                                       out, i);
  });
}

void groupedMatmul(const GroupedPlan &p, const void *rows, const void *weights,
                   const void *offsets, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.rows * p.n; ++i)
      groupedMatmulAt<decltype(d)::value>(p, rows, weights, static_cast<const int64_t *>(offsets),
                                          out, i);
  });
}

void groupedMatmulWgrad(const GroupedPlan &p, const void *lhs, const void *rhs,
                        const void *offsets, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.experts * p.k * p.n; ++i)
      groupedWgradAt<decltype(d)::value>(p, lhs, rhs, static_cast<const int64_t *>(offsets), out,
                                         i);
  });
}

void gather(const GatherPlan &p, const void *data, const void *indices, void *out) {
  visitBits(base::dtypeSize(p.dtype), [&](auto bits) {
    visitIndex(p.index.dtype, [&](auto index) {
      for (int64_t o = 0; o < p.numel; ++o)
        gatherAt<decltype(bits), decltype(index)::value>(p, data, indices, out, o);
    });
  });
}

void gatherElements(const GatherElementsPlan &p, const void *data, const void *indices, void *out) {
  visitBits(base::dtypeSize(p.dtype), [&](auto bits) {
    visitIndex(p.index.dtype, [&](auto index) {
      for (int64_t i = 0; i < p.numel; ++i)
        gatherElementsAt<decltype(bits), decltype(index)::value>(p, data, indices, out, i);
    });
  });
}

void scatterAdd(const ScatterAddPlan &p, const void *updates, const void *indices, void *out,
                void *workspace) {
  const ScatterAddWorkspace ws = scatterAddWorkspace(p, workspace);
  visitIndex(p.index.dtype, [&](auto index) {
    for (int64_t j = 0; j < p.count; ++j)
      scatterKeyAt<decltype(index)::value>(p, indices, ws.keys, j);
  });
  for (int64_t j = 0; j < p.count; ++j)
    scatterRankAt(p, ws.keys, ws.sorted, ws.order, j);
  visitFloatDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    if (p.inner >= kScatterAddRowMinInner) { // scatterAddRowsKernel: a block per row
      for (int64_t row = 0; row < p.outer * p.size; ++row) {
        int64_t begin = 0, end = 0;
        scatterAddGroup(p, ws.sorted, row % p.size, begin, end);
        scatterAddRowAt<D>(p, updates, ws.order, out, row, begin, end, 0, 1);
      }
    } else {
      for (int64_t e = 0; e < p.numel; ++e)
        scatterAddAt<D>(p, updates, ws.sorted, ws.order, out, e);
    }
  });
}

void scatterElementsAdd(const ScatterElementsAddPlan &p, const void *updates, const void *indices,
                        void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    visitIndex(p.index.dtype, [&](auto index) {
      for (int64_t e = 0; e < p.numel; ++e)
        scatterElementsAddAt<decltype(d)::value, decltype(index)::value>(p, updates, indices, out,
                                                                         e);
    });
  });
}

void scatter(const ScatterPlan &p, const void *data, const void *indices, const void *updates,
             void *out, void *workspace) {
  int64_t *last = static_cast<int64_t *>(workspace);
  std::fill(last, last + p.size, int64_t(-1));
  visitIndex(p.index.dtype, [&](auto index) {
    for (int64_t j = 0; j < p.count; ++j)
      scatterLastAt<decltype(index)::value>(p, indices, last, j);
  });
  visitBits(base::dtypeSize(p.dtype), [&](auto bits) {
    for (int64_t e = 0; e < p.numel; ++e)
      scatterAt<decltype(bits)>(p, data, updates, last, out, e);
  });
}

void scatterElements(const ScatterElementsPlan &p, const void *data, const void *indices,
                     const void *updates, void *out) {
  visitBits(base::dtypeSize(p.dtype), [&](auto bits) {
    visitIndex(p.index.dtype, [&](auto index) {
      for (int64_t e = 0; e < p.numel; ++e)
        scatterElementsAt<decltype(bits), decltype(index)::value>(p, data, updates, indices, out,
                                                                  e);
    });
  });
}

void cumsum(const CumSumPlan &p, const void *x, void *out) {
  visitDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    if constexpr (D != DType::I1)
      for (int64_t lane = 0; lane < p.lanes; ++lane)
        cumsumLaneAt<D>(p, x, out, lane);
  });
}

void range(const RangePlan &p, void *out) {
  visitDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    if constexpr (D != DType::I1)
      for (int64_t i = 0; i < p.n; ++i)
        rangeAt<D>(p, out, i);
  });
}

void trilu(const TriluPlan &p, const void *x, void *out) {
  visitBits(base::dtypeSize(p.dtype), [&](auto bits) {
    for (int64_t e = 0; e < p.numel; ++e)
      triluAt<decltype(bits)>(p, x, out, e);
  });
}

void dequantize(const DequantizePlan &p, const void *q, void *out) {
  const auto *bytes = static_cast<const uint8_t *>(q);
  for (int64_t i = 0; i < p.layout.elements; ++i) {
    if (p.dtype == DType::BF16)
      dequantizeAt<DType::BF16>(p, bytes, out, i);
    else if (p.dtype == DType::F16)
      dequantizeAt<DType::F16>(p, bytes, out, i);
    else
      dequantizeAt<DType::F32>(p, bytes, out, i);
  }
}

void swiglu(const SwigluPlan &p, const void *gate, const void *up, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.numel; ++i)
      swigluAt<decltype(d)::value>(p, gate, up, out, i);
  });
}

void swigluVjp(const SwigluPlan &p, const void *gate, const void *up, const void *g, void *dgate,
               void *dup) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.numel; ++i)
      swigluVjpAt<decltype(d)::value>(p, gate, up, g, dgate, dup, i);
  });
}

void rope(const RopePlan &p, const void *x, const void *cos, const void *sin, void *out) {
  visitFloatDType(p.dtype, [&](auto d) {
    for (int64_t i = 0; i < p.numel; ++i)
      ropeAt<decltype(d)::value>(p, x, cos, sin, out, i);
  });
}

void attention(const AttentionPlan &p, const void *q, const void *k, const void *v, void *out,
               const void *sinks) {
  visitFloatDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    using C = typename DTypeTraits<D>::Compute;
    std::vector<C> scratch(static_cast<size_t>(p.dim + p.valueDim + 2 * p.tile));
    for (int64_t row = 0; row < p.rows; ++row)
      attentionRow<D>(p, q, k, v, out, row, SerialBlock{}, scratch.data(), sinks);
  });
}

void attentionVjp(const AttentionVjpPlan &p, const void *q, const void *k, const void *v,
                  const void *out, const void *dout, void *dq, void *dk, void *dv, void *scratch,
                  const void *sinks, void *dsinks) {
  visitFloatDType(p.forward.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    using C = typename DTypeTraits<D>::Compute;
    std::vector<C> shared(static_cast<size_t>(
        std::max<int64_t>(2 * p.forward.dim + 2 * p.forward.valueDim + 2 * p.tile,
                          kAttentionSinkLanes)));
    C *lse = static_cast<C *>(scratch), *delta = lse + p.forward.rows;
    for (int64_t row = 0; row < p.forward.rows; ++row)
      attentionVjpQueryRow<D>(p, q, k, v, out, dout, dq, lse, delta, row, SerialBlock{},
                              shared.data(), sinks);
    for (int64_t krow = 0; krow < p.keyRows; ++krow)
      attentionVjpKeyRow<D>(p, q, k, v, dout, dk, dv, lse, delta, krow, SerialBlock{},
                            shared.data());
    if (sinks)
      for (int64_t h = 0; h < p.forward.heads; ++h)
        attentionVjpSinkHead<D>(p.forward, sinks, dsinks, lse, delta, h, SerialBlock{},
                                shared.data());
  });
}

} // namespace rp::kernels::cuda::replay
