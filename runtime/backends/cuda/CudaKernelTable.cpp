//===- CudaKernelTable.cpp - Kernel ids onto the CUDA kernels -------------===//
//
// One function per group of kernel families adds the families' ids. Each entry plans, then
// names the family's launcher and host replay once: inOrder(plan, launch, replay) when the
// kernel takes its operands in order, then result 0; otherwise both(f), with f written once
// against the exec interface (DeviceExec: the GPU; HostExec: the host replay). The attribute
// handling follows the CPU backend's table (runtime/backends/cpu/CpuKernelTable.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernelTable.h"

#include "kernels/cpu/KernelSupport.h"
#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/CudnnAttention.h"
#include "kernels/cuda/HostReplay.h"
#include "kernels/cuda/LinearCrossEntropy.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace rp::runtime {
namespace {

namespace kc = ::rp::kernels::cuda;
namespace pb = ::rp::plan;
using decode::Decoder;
using decode::typeText;
using Built = CudaBuilt;
using Operands = std::vector<const void *>;
using Results = std::vector<void *>;
using SliceGeometry = kernels::cpu::detail::SliceGeometry;

using Table = decode::KernelTable<CudaBuilder>::Entries;

Status launched(cudaError_t e) { return cudaStatus(e, "launch failed"); }

/// Runs planned work on the GPU: the family's launcher on the worker's stream.
class DeviceExec {
public:
  explicit DeviceExec(const CudaContext &ctx) : ctx_(ctx) {}
  /// launch(plan, ptrs..., stream).
  template <typename Plan, typename Launch, typename Replay, typename... Ptrs>
  Status run(const Plan &plan, Launch launch, Replay, Ptrs... ptrs) const {
    return launched(launch(plan, ptrs..., ctx_.stream));
  }
  /// graph.matmul on the worker's cuBLASLt runner.
  Status gemm(const kc::MatMulPlan &p, const void *a, const void *b, void *o) const {
    if (!ctx_.gemm)
      return internal("no cuBLASLt runner on this worker");
    return ctx_.gemm->run(p, a, b, o, ctx_.stream);
  }
  /// The device scratch (CudaKernel::launch checked that there is enough).
  void *scratch() const { return ctx_.scratch; }
  /// graph.attention: cuDNN SDPA when the worker has a runner and it takes the case
  /// (`declined` empty), else rpc's kernels (FlashAttention.h, Fused.h).
  /// `sinks` [Hq] or null (cuDNN declines sinks: `declined` is then non-empty).
  Status attention(const kc::AttentionPlan &p, const std::string &declined, const void *q,
                   const void *k, const void *v, void *o, const void *sinks) const {
    if (ctx_.sdpa) {
      RP_ASSIGN_OR_RETURN(bool ran, ctx_.sdpa->forward(p, declined, q, k, v, o, ctx_.stream));
      if (ran)
        return okStatus();
    }
    return launched(kc::launchAttention(p, q, k, v, o, ctx_.stream, sinks));
  }
  /// graph.attention_vjp, as attention; `dsinks` [Hq] with `sinks`, else null.
  Status attentionVjp(const kc::AttentionVjpPlan &p, const std::string &declined,
                      const void *q, const void *k, const void *v, const void *o,
                      const void *dout, void *dq, void *dk, void *dv, const void *sinks,
                      void *dsinks) const {
    if (ctx_.sdpa) {
      RP_ASSIGN_OR_RETURN(bool ran, ctx_.sdpa->backward(p.forward, declined, q, k, v, o, dout,
                                                        dq, dk, dv, ctx_.scratch, ctx_.stream));
      if (ran)
        return okStatus();
    }
    return launched(kc::launchAttentionVjp(p, q, k, v, o, dout, dq, dk, dv, ctx_.scratch,
                                           ctx_.stream, sinks, dsinks));
  }
  /// Copies `bytes` bytes (device to device).
  Status copyBytes(void *dst, const void *src, int64_t bytes) const {
    return launched(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                    ctx_.stream));
  }
  /// Zeroes `bytes` bytes.
  Status zero(void *dst, int64_t bytes) const {
    return launched(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), ctx_.stream));
  }

private:
  const CudaContext &ctx_;
};

/// Runs planned work on the host (kernels/cuda/HostReplay.h): the kernels' bodies over every
/// point, on host memory, in the order the device combines them.
class HostExec {
public:
  explicit HostExec(void *scratch) : scratch_(scratch) {}
  /// replay(plan, ptrs...).
  template <typename Plan, typename Launch, typename Replay, typename... Ptrs>
  Status run(const Plan &plan, Launch, Replay replay, Ptrs... ptrs) const {
    replay(plan, ptrs...);
    return okStatus();
  }
  Status gemm(const kc::MatMulPlan &p, const void *a, const void *b, void *o) const {
    kc::replay::matmul(p, a, b, o);
    return okStatus();
  }
  void *scratch() const { return scratch_; }
  /// The host replay runs rpc's row kernels (cuDNN has no host replay).
  Status attention(const kc::AttentionPlan &p, const std::string &, const void *q,
                   const void *k, const void *v, void *o, const void *sinks) const {
    kc::replay::attention(p, q, k, v, o, sinks);
    return okStatus();
  }
  Status attentionVjp(const kc::AttentionVjpPlan &p, const std::string &, const void *q,
                      const void *k, const void *v, const void *o, const void *dout, void *dq,
                      void *dk, void *dv, const void *sinks, void *dsinks) const {
    kc::replay::attentionVjp(p, q, k, v, o, dout, dq, dk, dv, scratch_, sinks, dsinks);
    return okStatus();
  }
  Status copyBytes(void *dst, const void *src, int64_t bytes) const {
    std::memmove(dst, src, static_cast<size_t>(bytes));
    return okStatus();
  }
  Status zero(void *dst, int64_t bytes) const {
    std::memset(dst, 0, static_cast<size_t>(bytes));
    return okStatus();
  }

private:
  void *scratch_;
};

/// A decoded instruction: `f(exec, operands, results)` written once against the exec
/// interface, bound to the GPU (DeviceExec) and to the host replay (HostExec).
template <typename F> Built both(F f, int64_t scratchBytes = 0) {
  return Built{[f](const Operands &in, const Results &out, const CudaContext &ctx) {
                 return f(DeviceExec(ctx), in, out);
               },
               [f](const Operands &in, const Results &out, void *scratch) {
                 return f(HostExec(scratch), in, out);
               },
               scratchBytes, std::string(), nullptr};
}

/// CudaBuilt::prepare of an attention(_vjp): the worker's cuDNN graphs for the case.
std::function<Status(const CudaContext &)> prepareSdpa(const kc::AttentionPlan &plan,
                                                       const std::string &declined,
                                                       bool backward) {
  return [plan, declined, backward](const CudaContext &ctx) -> Status {
    if (ctx.sdpa)
      RP_RETURN_IF_ERROR(ctx.sdpa->prepare(plan, declined, backward).status());
    return okStatus();
  };
}

/// Operand j, or null when the instruction has fewer (layer_norm without a bias, rms_norm).
const void *operandOrNull(const Operands &in, size_t j) { return j < in.size() ? in[j] : nullptr; }

/// The pointers a host replay takes after its plan.
template <typename Replay> struct ReplayPointers;
template <typename Plan, typename... P>
struct ReplayPointers<void (*)(const Plan &, P...)> : std::integral_constant<size_t, sizeof...(P)> {
};

template <typename Plan, typename Launch, typename Replay, size_t... I>
Built bindInOrder(Plan plan, Launch launch, Replay replay, std::index_sequence<I...>) {
  return both([plan = std::move(plan), launch, replay](const auto &e, const Operands &in,
                                                       const Results &out) {
    return e.run(plan, launch, replay, operandOrNull(in, I)..., out[0]);
  });
}

/// A planned kernel of its operands in order, then result 0: launch(plan, in..., out[0],
/// stream) on the GPU, replay(plan, in..., out[0]) on the host. Errors: the planner's.
template <typename Plan, typename Launch, typename Replay>
StatusOr<Built> inOrder(StatusOr<Plan> plan, Launch launch, Replay replay) {
  if (!plan.ok())
    return plan.status();
  return bindInOrder(std::move(plan).value(), launch, replay,
                     std::make_index_sequence<ReplayPointers<Replay>::value - 1>{});
}

/// A gather or scatter launcher without the index error word: indices are not checked on the
/// GPU (reading an error word back would synchronise the stream), so an out-of-range index
/// gathers zeros and scatters nothing. The token ids, the only indices that come from data,
/// are checked against the vocabulary when rp-run loads the data file.
template <typename Plan, cudaError_t (*Launch)(const Plan &, const void *, const void *, void *,
                                               unsigned long long *, cudaStream_t)>
cudaError_t unchecked(const Plan &p, const void *data, const void *indices, void *out,
                      cudaStream_t stream) {
  return Launch(p, data, indices, out, nullptr, stream);
}

const kc::Shape &operandShape(const Decoder &d, size_t j) { return d.operands()[j].shape; }
const kc::Shape &resultShape(const Decoder &d, size_t j) { return d.results()[j].shape; }
DType operandDType(const Decoder &d, size_t j) { return d.operands()[j].dtype; }
int elementBytes(const Decoder &d) { return static_cast<int>(dtypeSize(d.results()[0].dtype)); }

// Elementwise unary, binary, compare, where, cast.
void addElementwise(Table &t) {
  auto unary = [](kc::UnaryOp op) -> CudaBuilder {
    return [op](const Decoder &d) {
      return inOrder(kc::planUnary(op, operandDType(d, 0), operandShape(d, 0), resultShape(d, 0)),
                     kc::launchUnary, kc::replay::unary);
    };
  };
  auto binary = [](kc::BinaryOp op) -> CudaBuilder {
    return [op](const Decoder &d) {
      return inOrder(kc::planBinary(op, operandDType(d, 0), operandShape(d, 0), operandShape(d, 1),
                                    resultShape(d, 0)),
                     kc::launchBinary, kc::replay::binary);
    };
  };
  decode::addElementwiseIds(t, unary, binary);
  t.push_back({"where", [](const Decoder &d) {
                 return inOrder(kc::planWhere(d.results()[0].dtype, operandShape(d, 0),
                                              operandShape(d, 1), operandShape(d, 2),
                                              resultShape(d, 0)),
                                kc::launchWhere, kc::replay::where);
               }});
  t.push_back({"cast", [](const Decoder &d) {
                 return inOrder(kc::planCast(operandDType(d, 0), d.results()[0].dtype,
                                             operandShape(d, 0), resultShape(d, 0)),
                                kc::launchCast, kc::replay::cast);
               }});
}

// Contractions (cuBLASLt), reductions, normalisations, the loss.
void addRowOps(Table &t) {
  t.push_back({"matmul", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::MatMulPlan plan,
                                     kc::planMatMul(operandDType(d, 0), operandShape(d, 0),
                                                    operandShape(d, 1), resultShape(d, 0),
                                                    d.flag("transpose_a"), d.flag("transpose_b")));
                 auto shared = std::make_shared<const kc::MatMulPlan>(std::move(plan));
                 return both([shared](const auto &e, const Operands &in, const Results &out) {
                   return e.gemm(*shared, in[0], in[1], out[0]);
                 });
               }});
  for (auto [id, kind] : {std::pair{"reduce_sum", kc::ReduceKind::Sum},
                          std::pair{"reduce_mean", kc::ReduceKind::Mean},
                          std::pair{"reduce_max", kc::ReduceKind::Max}})
    t.push_back({id, [kind = kind](const Decoder &d) {
                   return inOrder(kc::planReduce(kind, operandDType(d, 0), operandShape(d, 0),
                                                 d.ints("axes"), d.flag("keepdims"),
                                                 resultShape(d, 0)),
                                  kc::launchReduce, kc::replay::reduce);
                 }});
  for (auto [id, log] : {std::pair{"softmax", false}, std::pair{"log_softmax", true}})
    t.push_back({id, [log = log](const Decoder &d) {
                   return inOrder(kc::planSoftmax(operandDType(d, 0), operandShape(d, 0),
                                                  d.i64("axis"), log, resultShape(d, 0)),
                                  kc::launchSoftmax, kc::replay::softmax);
                 }});
  t.push_back({"cumsum", [](const Decoder &d) {
                 return inOrder(kc::planCumSum(operandDType(d, 0), operandShape(d, 0),
                                               d.i64("axis"), d.flag("exclusive"),
                                               d.flag("reverse"), resultShape(d, 0)),
                                kc::launchCumSum, kc::replay::cumsum);
               }});
  t.push_back({"layer_norm", [](const Decoder &d) {
                 const bool hasBias = d.operands().size() > 2;
                 return inOrder(
                     kc::planLayerNorm(operandDType(d, 0), operandShape(d, 0), operandShape(d, 1),
                                       hasBias ? &operandShape(d, 2) : nullptr, d.i64("axis"),
                                       d.f64("epsilon"), resultShape(d, 0)),
                     kc::launchNorm, kc::replay::norm);
               }});
  t.push_back({"rms_norm", [](const Decoder &d) {
                 return inOrder(kc::planRmsNorm(operandDType(d, 0), operandShape(d, 0),
                                                operandShape(d, 1), d.i64("axis"), d.f64("epsilon"),
                                                resultShape(d, 0)),
                                kc::launchNorm, kc::replay::norm);
               }});
  t.push_back({"rms_norm_vjp", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(
                     kc::NormPlan plan,
                     kc::planRmsNormVjp(operandDType(d, 0), operandShape(d, 0), operandShape(d, 1),
                                        operandShape(d, 2), d.i64("axis"), d.f64("epsilon"),
                                        resultShape(d, 0), resultShape(d, 1)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, kc::launchRmsNormVjp, kc::replay::rmsNormVjp, in[0], in[1],
                                in[2], out[0], out[1]);
                 });
               }});
  t.push_back({"cross_entropy", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::LossReduction reduction, decode::lossReduction(d));
                 RP_ASSIGN_OR_RETURN(kc::CrossEntropyPlan plan,
                                     kc::planCrossEntropy(operandDType(d, 0), operandShape(d, 0),
                                                          operandDType(d, 1), operandShape(d, 1),
                                                          d.i64("ignore_index"), reduction,
                                                          resultShape(d, 0)));
                 const int64_t scratch = static_cast<int64_t>(plan.scratchBytes);
                 return both(
                     [plan](const auto &e, const Operands &in, const Results &out) {
                       return e.run(plan, kc::launchCrossEntropy, kc::replay::crossEntropy, in[0],
                                    in[1], out[0], e.scratch());
                     },
                     scratch);
               }});
}

/// Operand 0's bytes into result 0 (reshape, copy).
Built bytesCopy(const Decoder &d) {
  const int64_t bytes =
      kc::numElements(operandShape(d, 0)) * static_cast<int64_t>(dtypeSize(operandDType(d, 0)));
  return both([bytes](const auto &e, const Operands &in, const Results &out) {
    return bytes == 0 || in[0] == out[0] ? okStatus() : e.copyBytes(out[0], in[0], bytes);
  });
}

/// Several strided copies in order: operand j into result 0 (`operandsArePieces`, concat) or
/// operand 0 into result j (split, and the single copies).
Built copies(std::vector<kc::CopyPlan> plans, bool operandsArePieces) {
  return both([plans = std::move(plans), operandsArePieces](const auto &e, const Operands &in,
                                                            const Results &out) -> Status {
    for (size_t j = 0; j < plans.size(); ++j)
      RP_RETURN_IF_ERROR(e.run(plans[j], kc::launchCopy, kc::replay::copy,
                               operandsArePieces ? in[j] : in[0],
                               operandsArePieces ? out[0] : out[j]));
    return okStatus();
  });
}

/// The strided slice of a contiguous tensor of shape `sliced` that graph.slice's bounds
/// select (kernels/cpu/KernelSupport.h). Errors: the bounds'.
StatusOr<SliceGeometry> sliceOf(const Decoder &d, const char *op, const kc::Shape &sliced) {
  RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
  return kernels::cpu::detail::sliceGeometry(op, sliced, s.axes, s.starts, s.ends, s.steps);
}

// Data movement: reshape and copy (bytes), Layout's strided copies.
void addShapeOps(Table &t) {
  t.push_back({"reshape", [](const Decoder &d) -> StatusOr<Built> {
                 if (kc::numElements(operandShape(d, 0)) != kc::numElements(resultShape(d, 0)))
                   return d.fail("result 0 is " + typeText(d.results()[0]) +
                                 "; a reshape keeps the element count of " +
                                 typeText(d.operands()[0]));
                 return bytesCopy(d);
               }});
  t.push_back({"copy", [](const Decoder &d) -> StatusOr<Built> {
                 if (d.results()[0].shape != d.operands()[0].shape)
                   return d.fail("result 0 is " + typeText(d.results()[0]) +
                                 "; a copy has its operand's type (" + typeText(d.operands()[0]) +
                                 ")");
                 return bytesCopy(d);
               }});
  t.push_back({"transpose", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::CopyPlan plan,
                                     kc::planTranspose(elementBytes(d), operandShape(d, 0),
                                                       d.ints("permutation"), resultShape(d, 0)));
                 return copies({plan}, false);
               }});
  t.push_back({"expand", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(
                     kc::CopyPlan plan,
                     kc::planExpand(elementBytes(d), operandShape(d, 0), resultShape(d, 0)));
                 return copies({plan}, false);
               }});
  t.push_back({"concat", [](const Decoder &d) -> StatusOr<Built> {
                 std::vector<kc::Shape> inputs;
                 for (const TensorSig &s : d.operands())
                   inputs.push_back(s.shape);
                 RP_ASSIGN_OR_RETURN(
                     std::vector<kc::CopyPlan> plans,
                     kc::planConcat(elementBytes(d), inputs, d.i64("axis"), resultShape(d, 0)));
                 return copies(std::move(plans), true);
               }});
  t.push_back({"split", [](const Decoder &d) -> StatusOr<Built> {
                 RP_RETURN_IF_ERROR(decode::checkSplitSizes(d));
                 const int64_t axis = d.i64("axis");
                 std::vector<kc::Shape> outs;
                 for (const TensorSig &s : d.results())
                   outs.push_back(s.shape);
                 RP_ASSIGN_OR_RETURN(
                     std::vector<kc::CopyPlan> plans,
                     kc::planSplit(elementBytes(d), operandShape(d, 0), axis, outs));
                 return copies(std::move(plans), false);
               }});
  t.push_back({"slice", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(SliceGeometry g, sliceOf(d, "slice", operandShape(d, 0)));
                 if (g.shape != resultShape(d, 0))
                   return d.fail("result 0 is " + typeText(d.results()[0]) + "; the slice is " +
                                 base::formatShape(g.shape));
                 RP_ASSIGN_OR_RETURN(kc::CopyPlan plan,
                                     kc::planStridedCopy("slice", elementBytes(d), g.shape,
                                                         g.strides, g.base,
                                                         kc::contiguousStrides(g.shape), 0));
                 return copies({plan}, false);
               }});
  t.push_back({"slice_scatter", [](const Decoder &d) -> StatusOr<Built> {
                 // out = zeros of out's shape with the update written into the slice.
                 RP_ASSIGN_OR_RETURN(SliceGeometry g,
                                     sliceOf(d, "slice_scatter", resultShape(d, 0)));
                 if (g.shape != operandShape(d, 0))
                   return d.fail("operand 0 is " + typeText(d.operands()[0]) +
                                 "; the slice of the result is " + base::formatShape(g.shape));
                 RP_ASSIGN_OR_RETURN(kc::CopyPlan plan,
                                     kc::planStridedCopy("slice_scatter", elementBytes(d), g.shape,
                                                         kc::contiguousStrides(g.shape), 0,
                                                         g.strides, g.base));
                 const int64_t bytes = kc::numElements(resultShape(d, 0)) * elementBytes(d);
                 return both([plan, bytes](const auto &e, const Operands &in,
                                           const Results &out) -> Status {
                   RP_RETURN_IF_ERROR(e.zero(out[0], bytes));
                   return e.run(plan, kc::launchCopy, kc::replay::copy, in[0], out[0]);
                 });
               }});
}

// Gathers and scatters (unchecked indices: see `unchecked`).
void addGathers(Table &t) {
  t.push_back({"gather", [](const Decoder &d) {
                 return inOrder(kc::planGather(operandDType(d, 0), operandShape(d, 0),
                                               operandDType(d, 1), operandShape(d, 1),
                                               d.i64("axis"), resultShape(d, 0)),
                                unchecked<kc::GatherPlan, kc::launchGather>, kc::replay::gather);
               }});
  t.push_back({"gather_elements", [](const Decoder &d) {
                 return inOrder(kc::planGatherElements(operandDType(d, 0), operandShape(d, 0),
                                                       operandDType(d, 1), operandShape(d, 1),
                                                       d.i64("axis"), resultShape(d, 0)),
                                unchecked<kc::GatherElementsPlan, kc::launchGatherElements>,
                                kc::replay::gatherElements);
               }});
  t.push_back({"top_k", [](const Decoder &d) {
                 return inOrder(kc::planTopK(operandDType(d, 0), operandShape(d, 0), d.i64("k"),
                                             d.i64("axis"), !d.flag("smallest"),
                                             d.results()[0].dtype, resultShape(d, 0)),
                                kc::launchTopK, kc::replay::topK);
               }});
  t.push_back({"scatter_add", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::ScatterAddPlan plan,
                                     kc::planScatterAdd(operandDType(d, 0), operandShape(d, 0),
                                                        operandDType(d, 1), operandShape(d, 1),
                                                        d.i64("axis"), resultShape(d, 0)));
                 const int64_t scratch = static_cast<int64_t>(plan.workspaceBytes);
                 auto launch = [](const kc::ScatterAddPlan &p, const void *u, const void *i,
                                  void *o, void *workspace, cudaStream_t stream) {
                   return kc::launchScatterAdd(p, u, i, o, workspace, nullptr, stream);
                 };
                 return both(
                     [plan, launch](const auto &e, const Operands &in, const Results &out) {
                       return e.run(plan, launch, kc::replay::scatterAdd, in[0], in[1], out[0],
                                    e.scratch());
                     },
                     scratch);
               }});
  t.push_back({"scatter_elements_add", [](const Decoder &d) {
                 return inOrder(kc::planScatterElementsAdd(operandDType(d, 0), operandShape(d, 0),
                                                           operandDType(d, 1), operandShape(d, 1),
                                                           d.i64("axis"), resultShape(d, 0)),
                                unchecked<kc::ScatterElementsAddPlan, kc::launchScatterElementsAdd>,
                                kc::replay::scatterElementsAdd);
               }});
  t.push_back({"scatter", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::ScatterPlan plan,
                                     kc::planScatter(operandDType(d, 0), operandShape(d, 0),
                                                     operandDType(d, 1), operandShape(d, 1),
                                                     operandShape(d, 2), d.i64("axis"),
                                                     resultShape(d, 0)));
                 const int64_t scratch = static_cast<int64_t>(plan.workspaceBytes);
                 auto launch = [](const kc::ScatterPlan &p, const void *data, const void *i,
                                  const void *u, void *o, void *workspace, cudaStream_t stream) {
                   return kc::launchScatter(p, data, i, u, o, workspace, nullptr, stream);
                 };
                 return both(
                     [plan, launch](const auto &e, const Operands &in, const Results &out) {
                       return e.run(plan, launch, kc::replay::scatter, in[0], in[1], in[2],
                                    out[0], e.scratch());
                     },
                     scratch);
               }});
  t.push_back({"scatter_elements", [](const Decoder &d) {
                 auto launch = [](const kc::ScatterElementsPlan &p, const void *data,
                                  const void *i, const void *u, void *o, cudaStream_t stream) {
                   return kc::launchScatterElements(p, data, i, u, o, nullptr, stream);
                 };
                 return inOrder(kc::planScatterElements(operandDType(d, 0), operandShape(d, 0),
                                                        operandDType(d, 1), operandShape(d, 1),
                                                        operandShape(d, 2), d.i64("axis"),
                                                        resultShape(d, 0)),
                                +launch, kc::replay::scatterElements);
               }});
}

// Generators (graph.range: an integer result has integer bounds, computed exactly).
void addGenerators(Table &t) {
  t.push_back({"range", [](const Decoder &d) -> StatusOr<Built> {
                 const pb::Attribute &start = d.attr("start"), &limit = d.attr("limit"),
                                     &delta = d.attr("delta");
                 const DType dtype = d.results()[0].dtype;
                 if (dtype == DType::I64 || dtype == DType::I32) {
                   RP_RETURN_IF_ERROR(decode::checkIntegerRangeBounds(d));
                   return inOrder(
                       kc::planRangeInt(dtype, start.i(), limit.i(), delta.i(), resultShape(d, 0)),
                       kc::launchRange, kc::replay::range);
                 }
                 return inOrder(kc::planRange(dtype, decode::rangeBound(start),
                                              decode::rangeBound(limit), decode::rangeBound(delta),
                                              resultShape(d, 0)),
                                kc::launchRange, kc::replay::range);
               }});
  t.push_back({"dequantize", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kernels::QuantFormat format, decode::quantFormat(d));
                 return inOrder(kc::planDequantize(operandDType(d, 0), operandShape(d, 0), format,
                                                   d.i64Or("axis", 0), d.results()[0].dtype,
                                                   resultShape(d, 0)),
                                kc::launchDequantize, kc::replay::dequantize);
               }});
  t.push_back({"trilu", [](const Decoder &d) {
                 return inOrder(kc::planTrilu(operandDType(d, 0), operandShape(d, 0), d.i64("k"),
                                              d.flag("upper"), resultShape(d, 0)),
                                kc::launchTrilu, kc::replay::trilu);
               }});
}

/// CudaBuilt::variant of an attention(_vjp): which kernels --attention-kernel auto may run.
std::string attentionVariant(const std::string &declined) {
  if (!kc::cudnnSdpaBuilt())
    return "flash (this build has no cuDNN frontend)";
  return declined.empty() ? "cudnn-sdpa candidate" : "flash (cuDNN SDPA declines: " + declined + ")";
}

/// graph.attention: q, k, v and, with attention sinks (GPT-OSS), a fourth operand sinks [Hq].
/// cuDNN SDPA where it takes the case (it declines sinks, windows and soft-caps), else rpc's
/// kernels.
StatusOr<Built> attention(const Decoder &d) {
  RP_ASSIGN_OR_RETURN(kc::AttentionPlan plan,
                      kc::planAttention(operandDType(d, 0), operandShape(d, 0), operandShape(d, 1),
                                        operandShape(d, 2), d.f64("scale"), d.flag("causal"),
                                        resultShape(d, 0), d.i64Or("window", 0),
                                        d.f64Or("softcap", 0.0)));
  const bool sinks = d.operands().size() > 3;
  if (sinks)
    RP_RETURN_IF_ERROR(
        kc::planAttentionSinks("attention", plan, operandDType(d, 3), operandShape(d, 3)));
  const std::string declined =
      kc::cudnnSdpaDecline(plan, kc::SdpaExtras{sinks, plan.window, plan.softcap});
  Built built = both([plan, declined](const auto &e, const Operands &in, const Results &out) {
    return e.attention(plan, declined, in[0], in[1], in[2], out[0], operandOrNull(in, 3));
  });
  built.variant = attentionVariant(declined);
  built.prepare = prepareSdpa(plan, declined, /*backward=*/false);
  return built;
}

/// graph.attention_vjp: q, k, v, out, dout (then sinks [Hq]) to dq, dk, dv (then dsinks [Hq]).
StatusOr<Built> attentionVjp(const Decoder &d) {
  RP_ASSIGN_OR_RETURN(kc::AttentionVjpPlan plan,
                      kc::planAttentionVjp(operandDType(d, 0), operandShape(d, 0),
                                           operandShape(d, 1), operandShape(d, 2),
                                           operandShape(d, 3), operandShape(d, 4), d.f64("scale"),
                                           d.flag("causal"), resultShape(d, 0), resultShape(d, 1),
                                           resultShape(d, 2), d.i64Or("window", 0),
                                           d.f64Or("softcap", 0.0)));
  const bool sinks = d.operands().size() > 5;
  if (sinks != (d.results().size() > 3))
    return invalidArgument("attention_vjp: sinks and dsinks come together");
  if (sinks) {
    RP_RETURN_IF_ERROR(kc::planAttentionSinks("attention_vjp", plan.forward, operandDType(d, 5),
                                              operandShape(d, 5)));
    RP_RETURN_IF_ERROR(kernels::checkType("attention_vjp", "dsinks", d.results()[3].dtype,
                                          resultShape(d, 3), plan.forward.dtype,
                                          {plan.forward.heads}));
  }
  const std::string declined =
      kc::cudnnSdpaDecline(plan.forward,
                           kc::SdpaExtras{sinks, plan.forward.window, plan.forward.softcap});
  // The cuDNN path keeps its recomputed O' and log-sum-exp in the scratch.
  const int64_t scratch = static_cast<int64_t>(
      declined.empty() ? std::max(plan.scratchBytes, kc::cudnnSdpaBackwardScratchBytes(plan.forward))
                       : plan.scratchBytes);
  Built built = both(
      [plan, declined](const auto &e, const Operands &in, const Results &out) {
        return e.attentionVjp(plan, declined, in[0], in[1], in[2], in[3], in[4], out[0], out[1],
                              out[2], operandOrNull(in, 5), out.size() > 3 ? out[3] : nullptr);
      },
      scratch);
  built.variant = attentionVariant(declined);
  built.prepare = prepareSdpa(plan.forward, declined, /*backward=*/true);
  return built;
}

// Fused transformer ops.
void addFused(Table &t) {
  t.push_back({"swiglu", [](const Decoder &d) {
                 return inOrder(kc::planSwiglu(operandDType(d, 0), operandShape(d, 0),
                                               operandShape(d, 1), resultShape(d, 0)),
                                kc::launchSwiglu, kc::replay::swiglu);
               }});
  t.push_back({"rope", [](const Decoder &d) {
                 return inOrder(kc::planRope(operandDType(d, 0), operandShape(d, 0),
                                             operandShape(d, 1), operandShape(d, 2),
                                             resultShape(d, 0), d.flag("interleaved")),
                                kc::launchRope, kc::replay::rope);
               }});
  t.push_back({"swiglu_vjp", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::SwigluPlan plan,
                                     kc::planSwigluVjp(operandDType(d, 0), operandShape(d, 0),
                                                       operandShape(d, 1), operandShape(d, 2),
                                                       resultShape(d, 0), resultShape(d, 1)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, kc::launchSwigluVjp, kc::replay::swigluVjp, in[0], in[1],
                                in[2], out[0], out[1]);
                 });
               }});
  t.push_back({"rope_vjp", [](const Decoder &d) {
                 return inOrder(kc::planRopeVjp(operandDType(d, 0), operandShape(d, 0),
                                                operandShape(d, 1), operandShape(d, 2),
                                                resultShape(d, 0), d.flag("interleaved")),
                                kc::launchRope, kc::replay::rope);
               }});
  t.push_back({"attention", attention});
  t.push_back({"attention_vjp", attentionVjp});
}

/// graph.linear_cross_entropy(_vjp): per chunk cuBLASLt GEMMs and row kernels
/// (kernels/cuda/LinearCrossEntropy.h); `grads`: the VJP.
StatusOr<Built> linearCrossEntropy(const Decoder &d, bool grads) {
  RP_ASSIGN_OR_RETURN(kc::LossReduction reduction, decode::lossReduction(d));
  RP_ASSIGN_OR_RETURN(kc::LinearCrossEntropyPlan plan,
                      kc::planLinearCrossEntropy(
                          operandDType(d, 0), operandShape(d, 0), operandShape(d, 1),
                          operandDType(d, 2), operandShape(d, 2), d.i64("ignore_index"),
                          reduction, d.i64Or("chunk_rows", 0), grads));
  const std::string op = grads ? "linear_cross_entropy_vjp" : "linear_cross_entropy";
  RP_RETURN_IF_ERROR(kernels::checkShapeIs(op, "loss", plan.dtype, resultShape(d, 0), {}));
  if (grads) {
    RP_RETURN_IF_ERROR(kernels::checkShapeIs(op, "seed", plan.dtype, operandShape(d, 3), {}));
    RP_RETURN_IF_ERROR(
        kernels::checkShapeIs(op, "dhidden", plan.dtype, resultShape(d, 1), operandShape(d, 0)));
    RP_RETURN_IF_ERROR(
        kernels::checkShapeIs(op, "dweight", plan.dtype, resultShape(d, 2), operandShape(d, 1)));
  }
  // A head bias: operand 3 of the forward, 4 of the VJP (whose result 3 is dbias).
  const size_t biasAt = grads ? 4 : 3;
  const bool bias = d.operands().size() > biasAt;
  if (grads && bias != (d.results().size() > 3))
    return invalidArgument(op + ": bias and dbias come together");
  if (bias)
    RP_RETURN_IF_ERROR(kc::planLinearCrossEntropyBias(
        plan, operandDType(d, biasAt), operandShape(d, biasAt),
        grads ? d.results()[3].dtype : DType{}, grads ? resultShape(d, 3) : kc::Shape{}));
  const int64_t scratch = static_cast<int64_t>(plan.scratchBytes);
  auto shared = std::make_shared<const kc::LinearCrossEntropyPlan>(std::move(plan));
  return both(
      [shared, grads, biasAt](const auto &e, const Operands &in, const Results &out) {
        return kc::runLinearCrossEntropy(e, *shared, in[0], in[1], in[2],
                                         grads ? in[3] : nullptr, out[0],
                                         grads ? out[1] : nullptr, grads ? out[2] : nullptr,
                                         operandOrNull(in, biasAt),
                                         grads && out.size() > 3 ? out[3] : nullptr);
      },
      scratch);
}

void addLinearCrossEntropy(Table &t) {
  t.push_back({"linear_cross_entropy",
               [](const Decoder &d) { return linearCrossEntropy(d, /*grads=*/false); }});
  t.push_back({"linear_cross_entropy_vjp",
               [](const Decoder &d) { return linearCrossEntropy(d, /*grads=*/true); }});
}

// Routed experts in grouped form (kernels/cuda/RoutedExperts.h).
void addRoutedExperts(Table &t) {
  t.push_back({"moe_sort", [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::MoeSortPlan plan,
                                     kc::planMoeSort(operandDType(d, 0), operandShape(d, 0),
                                                     d.results()[0].dtype, resultShape(d, 0),
                                                     d.results()[1].dtype, resultShape(d, 1)));
                 if (plan.experts != d.i64("num_experts"))
                   return d.fail("offsets " + typeText(d.results()[1]) + " do not hold " +
                                 "num_experts + 1 = " + std::to_string(d.i64("num_experts") + 1) +
                                 " entries");
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, kc::launchMoeSort, kc::replay::moeSort, in[0], out[0],
                                out[1]);
                 });
               }});
  t.push_back({"moe_dispatch", [](const Decoder &d) {
                 return inOrder(kc::planMoeDispatch(operandDType(d, 0), operandShape(d, 0),
                                                    operandDType(d, 1), operandShape(d, 1),
                                                    d.results()[0].dtype, resultShape(d, 0)),
                                kc::launchMoeDispatch, kc::replay::moeDispatch);
               }});
  t.push_back({"moe_combine", [](const Decoder &d) {
                 return inOrder(kc::planMoeCombine(operandDType(d, 0), operandShape(d, 0),
                                                   operandDType(d, 1), operandShape(d, 1),
                                                   operandDType(d, 2), operandShape(d, 2),
                                                   d.results()[0].dtype, resultShape(d, 0)),
                                kc::launchMoeCombine, kc::replay::moeCombine);
               }});
  t.push_back({"grouped_matmul", [](const Decoder &d) {
                 return inOrder(kc::planGroupedMatmul(operandDType(d, 0), operandShape(d, 0),
                                                      operandDType(d, 1), operandShape(d, 1),
                                                      operandDType(d, 2), operandShape(d, 2),
                                                      d.flag("transpose_b"), d.results()[0].dtype,
                                                      resultShape(d, 0)),
                                kc::launchGroupedMatmul, kc::replay::groupedMatmul);
               }});
  t.push_back({"grouped_matmul_wgrad", [](const Decoder &d) {
                 return inOrder(kc::planGroupedMatmulWgrad(
                                    operandDType(d, 0), operandShape(d, 0), operandDType(d, 1),
                                    operandShape(d, 1), operandDType(d, 2), operandShape(d, 2),
                                    d.results()[0].dtype, resultShape(d, 0)),
                                kc::launchGroupedMatmulWgrad, kc::replay::groupedMatmulWgrad);
               }});
}

} // namespace

const CudaBuilder *findCudaBuilder(std::string_view id) {
  static const decode::KernelTable<CudaBuilder> table(
      {addElementwise, addRowOps, addShapeOps, addGathers, addGenerators, addFused,
       addLinearCrossEntropy, addRoutedExperts});
  return table.find(id);
}

} // namespace rp::runtime
