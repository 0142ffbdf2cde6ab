//===- CudaKernel.cpp - Plan instructions onto the CUDA kernels -----------===//
//
// One table entry per kernel id: the dtype rule (checked by the shared decoder) and a builder
// that runs the family's planner on the instruction's shapes and attributes and returns the
// bound launch. The attribute handling follows runtime/backends/cpu/KernelDispatch.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernel.h"

#include "kernels/Registry.h"
#include "kernels/cpu/KernelSupport.h"
#include "kernels/cuda/CrossEntropy.h"
#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/Fused.h"
#include "kernels/cuda/Gather.h"
#include "kernels/cuda/Gemm.h"
#include "kernels/cuda/Generators.h"
#include "kernels/cuda/HostReplay.h"
#include "kernels/cuda/Layout.h"
#include "kernels/cuda/Norm.h"
#include "kernels/cuda/Reduce.h"
#include "kernels/cuda/Softmax.h"

#include <cstring>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <unordered_map>

namespace rp::runtime {
namespace {

namespace kc = ::rp::kernels::cuda;
namespace pb = ::rp::plan;
using decode::Decoder;
using decode::DTypeRule;
using decode::typeText;
using Body = CudaKernel::Body;
using Operands = std::vector<const void *>;
using Results = std::vector<void *>;

constexpr FloatPolicy kCudaFloats{true, "", "f32, f16 or bf16"};

/// A decoded instruction: its GPU launch, its host replay, and the scratch it needs.
struct Built {
  Body body;
  CudaKernel::HostBody hostBody;
  int64_t scratchBytes = 0;
};
using Builder = std::function<StatusOr<Built>(const Decoder &)>;

struct CudaImpl {
  std::string_view id;
  DTypeRule rule;
  Builder build;
};

Status launched(cudaError_t e) { return cudaStatus(e, "launch failed"); }

/// Runs planned work on the GPU: every run() enqueues its family's kernel on the stream.
class DeviceExec {
public:
  explicit DeviceExec(const CudaContext &ctx) : ctx_(ctx) {}
  Status run(const kc::UnaryPlan &p, const void *x, void *o) const {
    return launched(kc::launchUnary(p, x, o, ctx_.stream));
  }
  Status run(const kc::BinaryPlan &p, const void *a, const void *b, void *o) const {
    return launched(kc::launchBinary(p, a, b, o, ctx_.stream));
  }
  Status run(const kc::WherePlan &p, const void *c, const void *t, const void *f, void *o) const {
    return launched(kc::launchWhere(p, c, t, f, o, ctx_.stream));
  }
  Status run(const kc::CastPlan &p, const void *x, void *o) const {
    return launched(kc::launchCast(p, x, o, ctx_.stream));
  }
  Status run(const kc::CopyPlan &p, const void *x, void *o) const {
    return launched(kc::launchCopy(p, x, o, ctx_.stream));
  }
  Status run(const kc::MatMulPlan &p, const void *a, const void *b, void *o) const {
    if (!ctx_.gemm)
      return internal("no cuBLASLt runner on this worker");
    return ctx_.gemm->run(p, a, b, o, ctx_.stream);
  }
  Status run(const kc::ReducePlan &p, const void *x, void *o) const {
    return launched(kc::launchReduce(p, x, o, ctx_.stream));
  }
  Status run(const kc::SoftmaxPlan &p, const void *x, void *o) const {
    return launched(kc::launchSoftmax(p, x, o, ctx_.stream));
  }
  Status run(const kc::NormPlan &p, const void *x, const void *s, const void *b, void *o) const {
    return launched(kc::launchNorm(p, x, s, b, o, ctx_.stream));
  }
  Status run(const kc::CrossEntropyPlan &p, const void *x, const void *l, void *o) const {
    if (p.scratchBytes > 0 && !ctx_.scratch)
      return internal("cross_entropy needs device scratch; none was allocated");
    return launched(kc::launchCrossEntropy(p, x, l, o, ctx_.scratch, ctx_.stream));
  }
  Status run(const kc::GatherPlan &p, const void *x, const void *i, void *o) const {
    return launched(kc::launchGather(p, x, i, o, nullptr, ctx_.stream));
  }
  Status run(const kc::GatherElementsPlan &p, const void *x, const void *i, void *o) const {
    return launched(kc::launchGatherElements(p, x, i, o, nullptr, ctx_.stream));
  }
  Status run(const kc::ScatterAddPlan &p, const void *u, const void *i, void *o) const {
    if (p.workspaceBytes > 0 && !ctx_.scratch)
      return internal("scatter_add needs device scratch; none was allocated");
    return launched(kc::launchScatterAdd(p, u, i, o, ctx_.scratch, nullptr, ctx_.stream));
  }
  Status run(const kc::ScatterElementsAddPlan &p, const void *u, const void *i, void *o) const {
    return launched(kc::launchScatterElementsAdd(p, u, i, o, nullptr, ctx_.stream));
  }
  Status run(const kc::RangePlan &p, void *o) const {
    return launched(kc::launchRange(p, o, ctx_.stream));
  }
  Status run(const kc::TriluPlan &p, const void *x, void *o) const {
    return launched(kc::launchTrilu(p, x, o, ctx_.stream));
  }
  Status run(const kc::SwigluPlan &p, const void *g, const void *u, void *o) const {
    return launched(kc::launchSwiglu(p, g, u, o, ctx_.stream));
  }
  Status run(const kc::RopePlan &p, const void *x, const void *c, const void *s, void *o) const {
    return launched(kc::launchRope(p, x, c, s, o, ctx_.stream));
  }
  Status run(const kc::AttentionPlan &p, const void *q, const void *k, const void *v,
             void *o) const {
    return launched(kc::launchAttention(p, q, k, v, o, ctx_.stream));
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
  template <typename Plan, typename... Ptrs> Status run(const Plan &p, Ptrs... ptrs) const {
    if constexpr (std::is_same_v<Plan, kc::CrossEntropyPlan>)
      kc::replay::crossEntropy(p, ptrs..., scratch_);
    else if constexpr (std::is_same_v<Plan, kc::ScatterAddPlan>)
      kc::replay::scatterAdd(p, ptrs..., scratch_);
    else
      replayOf(p, ptrs...);
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
  static void replayOf(const kc::UnaryPlan &p, const void *x, void *o) {
    kc::replay::unary(p, x, o);
  }
  static void replayOf(const kc::BinaryPlan &p, const void *a, const void *b, void *o) {
    kc::replay::binary(p, a, b, o);
  }
  static void replayOf(const kc::WherePlan &p, const void *c, const void *t, const void *f,
                       void *o) {
    kc::replay::where(p, c, t, f, o);
  }
  static void replayOf(const kc::CastPlan &p, const void *x, void *o) { kc::replay::cast(p, x, o); }
  static void replayOf(const kc::CopyPlan &p, const void *x, void *o) { kc::replay::copy(p, x, o); }
  static void replayOf(const kc::MatMulPlan &p, const void *a, const void *b, void *o) {
    kc::replay::matmul(p, a, b, o);
  }
  static void replayOf(const kc::ReducePlan &p, const void *x, void *o) {
    kc::replay::reduce(p, x, o);
  }
  static void replayOf(const kc::SoftmaxPlan &p, const void *x, void *o) {
    kc::replay::softmax(p, x, o);
  }
  static void replayOf(const kc::NormPlan &p, const void *x, const void *s, const void *b,
                       void *o) {
    kc::replay::norm(p, x, s, b, o);
  }
  static void replayOf(const kc::GatherPlan &p, const void *x, const void *i, void *o) {
    kc::replay::gather(p, x, i, o);
  }
  static void replayOf(const kc::GatherElementsPlan &p, const void *x, const void *i, void *o) {
    kc::replay::gatherElements(p, x, i, o);
  }
  static void replayOf(const kc::ScatterElementsAddPlan &p, const void *u, const void *i, void *o) {
    kc::replay::scatterElementsAdd(p, u, i, o);
  }
  static void replayOf(const kc::RangePlan &p, void *o) { kc::replay::range(p, o); }
  static void replayOf(const kc::TriluPlan &p, const void *x, void *o) {
    kc::replay::trilu(p, x, o);
  }
  static void replayOf(const kc::SwigluPlan &p, const void *g, const void *u, void *o) {
    kc::replay::swiglu(p, g, u, o);
  }
  static void replayOf(const kc::RopePlan &p, const void *x, const void *c, const void *s,
                       void *o) {
    kc::replay::rope(p, x, c, s, o);
  }
  static void replayOf(const kc::AttentionPlan &p, const void *q, const void *k, const void *v,
                       void *o) {
    kc::replay::attention(p, q, k, v, o);
  }

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
               scratchBytes};
}

const std::vector<int64_t> &shapeOf(const Decoder &d, bool result, size_t j) {
  return result ? d.results()[j].shape : d.operands()[j].shape;
}
int elementBytes(const Decoder &d) { return static_cast<int>(dtypeSize(d.results()[0].dtype)); }

Builder unaryBuilder(kc::UnaryOp op) {
  return [op](const Decoder &d) -> StatusOr<Built> {
    RP_ASSIGN_OR_RETURN(
        kc::UnaryPlan plan,
        kc::planUnary(op, d.operands()[0].dtype, shapeOf(d, false, 0), shapeOf(d, true, 0)));
    return both([plan](const auto &e, const Operands &in, const Results &out) {
      return e.run(plan, in[0], out[0]);
    });
  };
}

Builder binaryBuilder(kc::BinaryOp op) {
  return [op](const Decoder &d) -> StatusOr<Built> {
    RP_ASSIGN_OR_RETURN(kc::BinaryPlan plan,
                        kc::planBinary(op, d.operands()[0].dtype, shapeOf(d, false, 0),
                                       shapeOf(d, false, 1), shapeOf(d, true, 0)));
    return both([plan](const auto &e, const Operands &in, const Results &out) {
      return e.run(plan, in[0], in[1], out[0]);
    });
  };
}

/// Several strided copies in order: operand j into result 0 (`operandsArePieces`, concat) or
/// operand 0 into result j (split, and the single copies).
Built copies(std::vector<kc::CopyPlan> plans, bool operandsArePieces) {
  return both([plans = std::move(plans), operandsArePieces](const auto &e, const Operands &in,
                                                            const Results &out) -> Status {
    for (size_t j = 0; j < plans.size(); ++j)
      RP_RETURN_IF_ERROR(
          e.run(plans[j], operandsArePieces ? in[j] : in[0], operandsArePieces ? out[0] : out[j]));
    return okStatus();
  });
}

/// Operand 0's bytes into result 0 (reshape, copy).
Built bytesCopy(const Decoder &d) {
  const int64_t bytes = kc::numElements(shapeOf(d, false, 0)) *
                        static_cast<int64_t>(dtypeSize(d.operands()[0].dtype));
  return both([bytes](const auto &e, const Operands &in, const Results &out) {
    return bytes == 0 || in[0] == out[0] ? okStatus() : e.copyBytes(out[0], in[0], bytes);
  });
}

Builder reduceBuilder(kc::ReduceKind kind) {
  return [kind](const Decoder &d) -> StatusOr<Built> {
    RP_ASSIGN_OR_RETURN(kc::ReducePlan plan,
                        kc::planReduce(kind, d.operands()[0].dtype, shapeOf(d, false, 0),
                                       d.ints("axes"), d.flag("keepdims"), shapeOf(d, true, 0)));
    return both([plan](const auto &e, const Operands &in, const Results &out) {
      return e.run(plan, in[0], out[0]);
    });
  };
}

Builder softmaxBuilder(bool log) {
  return [log](const Decoder &d) -> StatusOr<Built> {
    RP_ASSIGN_OR_RETURN(kc::SoftmaxPlan plan,
                        kc::planSoftmax(d.operands()[0].dtype, shapeOf(d, false, 0), d.i64("axis"),
                                        log, shapeOf(d, true, 0)));
    return both([plan](const auto &e, const Operands &in, const Results &out) {
      return e.run(plan, in[0], out[0]);
    });
  };
}

std::vector<CudaImpl> buildImpls() {
  using R = DTypeRule;
  std::vector<CudaImpl> t;
  // Elementwise unary and binary.
  decode::addElementwiseIds(t, unaryBuilder, binaryBuilder);
  t.push_back({"where", R::Where, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::WherePlan plan,
                                     kc::planWhere(d.results()[0].dtype, shapeOf(d, false, 0),
                                                   shapeOf(d, false, 1), shapeOf(d, false, 2),
                                                   shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], in[2], out[0]);
                 });
               }});
  t.push_back({"cast", R::Cast, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::CastPlan plan,
                                     kc::planCast(d.operands()[0].dtype, d.results()[0].dtype,
                                                  shapeOf(d, false, 0), shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], out[0]);
                 });
               }});
  // Contractions.
  t.push_back({"matmul", R::Numeric, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::MatMulPlan plan,
                                     kc::planMatMul(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                    shapeOf(d, false, 1), shapeOf(d, true, 0)));
                 auto shared = std::make_shared<const kc::MatMulPlan>(std::move(plan));
                 return both([shared](const auto &e, const Operands &in, const Results &out) {
                   return e.run(*shared, in[0], in[1], out[0]);
                 });
               }});
  // Reductions and normalisations.
  t.push_back({"reduce_sum", R::Numeric, reduceBuilder(kc::ReduceKind::Sum)});
  t.push_back({"reduce_mean", R::Numeric, reduceBuilder(kc::ReduceKind::Mean)});
  t.push_back({"reduce_max", R::Numeric, reduceBuilder(kc::ReduceKind::Max)});
  t.push_back({"softmax", R::Float, softmaxBuilder(/*log=*/false)});
  t.push_back({"log_softmax", R::Float, softmaxBuilder(/*log=*/true)});
  t.push_back(
      {"layer_norm", R::Float, [](const Decoder &d) -> StatusOr<Built> {
         const bool hasBias = d.operands().size() > 2;
         RP_ASSIGN_OR_RETURN(
             kc::NormPlan plan,
             kc::planLayerNorm(d.operands()[0].dtype, shapeOf(d, false, 0), shapeOf(d, false, 1),
                               hasBias ? &shapeOf(d, false, 2) : nullptr, d.i64("axis"),
                               d.f64("epsilon"), shapeOf(d, true, 0)));
         return both([plan, hasBias](const auto &e, const Operands &in, const Results &out) {
           return e.run(plan, in[0], in[1], hasBias ? in[2] : nullptr, out[0]);
         });
       }});
  t.push_back({"rms_norm", R::Float, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::NormPlan plan,
                                     kc::planRmsNorm(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                     shapeOf(d, false, 1), d.i64("axis"),
                                                     d.f64("epsilon"), shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], nullptr, out[0]);
                 });
               }});
  t.push_back(
      {"cross_entropy", R::FloatIndexed, [](const Decoder &d) -> StatusOr<Built> {
         RP_ASSIGN_OR_RETURN(kc::LossReduction reduction, decode::lossReduction(d));
         RP_ASSIGN_OR_RETURN(kc::CrossEntropyPlan plan,
                             kc::planCrossEntropy(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                  d.operands()[1].dtype, shapeOf(d, false, 1),
                                                  d.i64("ignore_index"), reduction,
                                                  shapeOf(d, true, 0)));
         const int64_t scratch = static_cast<int64_t>(plan.scratchBytes);
         return both([plan](const auto &e, const Operands &in,
                            const Results &out) { return e.run(plan, in[0], in[1], out[0]); },
                     scratch);
       }});
  // Shape ops (data movement).
  t.push_back({"reshape", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 if (kc::numElements(shapeOf(d, false, 0)) != kc::numElements(shapeOf(d, true, 0)))
                   return d.fail("result 0 is " + typeText(d.results()[0]) +
                                 "; a reshape keeps the element count of " +
                                 typeText(d.operands()[0]));
                 return bytesCopy(d);
               }});
  t.push_back({"copy", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 if (d.results()[0].shape != d.operands()[0].shape)
                   return d.fail("result 0 is " + typeText(d.results()[0]) +
                                 "; a copy has its operand's type (" + typeText(d.operands()[0]) +
                                 ")");
                 return bytesCopy(d);
               }});
  t.push_back({"transpose", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::CopyPlan plan,
                                     kc::planTranspose(elementBytes(d), shapeOf(d, false, 0),
                                                       d.ints("permutation"), shapeOf(d, true, 0)));
                 return copies({plan}, false);
               }});
  t.push_back({"expand", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(
                     kc::CopyPlan plan,
                     kc::planExpand(elementBytes(d), shapeOf(d, false, 0), shapeOf(d, true, 0)));
                 return copies({plan}, false);
               }});
  t.push_back({"concat", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 std::vector<kc::Shape> inputs;
                 for (const TensorSig &s : d.operands())
                   inputs.push_back(s.shape);
                 RP_ASSIGN_OR_RETURN(
                     std::vector<kc::CopyPlan> plans,
                     kc::planConcat(elementBytes(d), inputs, d.i64("axis"), shapeOf(d, true, 0)));
                 return copies(std::move(plans), true);
               }});
  t.push_back({"split", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 RP_RETURN_IF_ERROR(decode::checkSplitSizes(d));
                 const int64_t axis = d.i64("axis");
                 std::vector<kc::Shape> outs;
                 for (const TensorSig &s : d.results())
                   outs.push_back(s.shape);
                 RP_ASSIGN_OR_RETURN(
                     std::vector<kc::CopyPlan> plans,
                     kc::planSplit(elementBytes(d), shapeOf(d, false, 0), axis, outs));
                 return copies(std::move(plans), false);
               }});
  t.push_back(
      {"slice", R::Same, [](const Decoder &d) -> StatusOr<Built> {
         RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
         RP_ASSIGN_OR_RETURN(kernels::cpu::detail::SliceGeometry g,
                             kernels::cpu::detail::sliceGeometry(
                                 "slice", shapeOf(d, false, 0), s.axes, s.starts, s.ends, s.steps));
         if (g.shape != shapeOf(d, true, 0))
           return d.fail("result 0 is " + typeText(d.results()[0]) + "; the slice is " +
                         runtime::formatShape(g.shape));
         RP_ASSIGN_OR_RETURN(kc::CopyPlan plan,
                             kc::planStridedCopy("slice", elementBytes(d), g.shape, g.strides,
                                                 g.base, kc::contiguousStrides(g.shape), 0));
         return copies({plan}, false);
       }});
  t.push_back(
      {"slice_scatter", R::Same, [](const Decoder &d) -> StatusOr<Built> {
         // out = zeros of out's shape with the update written into the slice.
         RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
         const kc::Shape &outShape = shapeOf(d, true, 0);
         RP_ASSIGN_OR_RETURN(kernels::cpu::detail::SliceGeometry g,
                             kernels::cpu::detail::sliceGeometry("slice_scatter", outShape, s.axes,
                                                                 s.starts, s.ends, s.steps));
         if (g.shape != shapeOf(d, false, 0))
           return d.fail("operand 0 is " + typeText(d.operands()[0]) +
                         "; the slice of the result is " + runtime::formatShape(g.shape));
         RP_ASSIGN_OR_RETURN(kc::CopyPlan plan,
                             kc::planStridedCopy("slice_scatter", elementBytes(d), g.shape,
                                                 kc::contiguousStrides(g.shape), 0, g.strides,
                                                 g.base));
         const int64_t bytes = kc::numElements(outShape) * static_cast<int64_t>(elementBytes(d));
         return both(
             [plan, bytes](const auto &e, const Operands &in, const Results &out) -> Status {
               RP_RETURN_IF_ERROR(e.zero(out[0], bytes));
               return e.run(plan, in[0], out[0]);
             });
       }});
  // Gathers and scatters. Indices are not checked on the GPU (reading an error word back would
  // synchronise the stream): an out-of-range index gathers zeros and scatters nothing. The
  // token ids, the only indices that come from data, are checked against the vocabulary when
  // rp-run loads the data file.
  t.push_back({"gather", R::Indexed, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::GatherPlan plan,
                                     kc::planGather(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                    d.operands()[1].dtype, shapeOf(d, false, 1),
                                                    d.i64("axis"), shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], out[0]);
                 });
               }});
  t.push_back({"gather_elements", R::Indexed, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(
                     kc::GatherElementsPlan plan,
                     kc::planGatherElements(d.operands()[0].dtype, shapeOf(d, false, 0),
                                            d.operands()[1].dtype, shapeOf(d, false, 1),
                                            d.i64("axis"), shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], out[0]);
                 });
               }});
  t.push_back({"scatter_add", R::FloatIndexed, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::ScatterAddPlan plan,
                                     kc::planScatterAdd(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                        d.operands()[1].dtype, shapeOf(d, false, 1),
                                                        d.i64("axis"), shapeOf(d, true, 0)));
                 const int64_t scratch = static_cast<int64_t>(plan.workspaceBytes);
                 return both(
                     [plan](const auto &e, const Operands &in, const Results &out) {
                       return e.run(plan, in[0], in[1], out[0]);
                     },
                     scratch);
               }});
  t.push_back({"scatter_elements_add", R::FloatIndexed, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(
                     kc::ScatterElementsAddPlan plan,
                     kc::planScatterElementsAdd(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                d.operands()[1].dtype, shapeOf(d, false, 1),
                                                d.i64("axis"), shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], out[0]);
                 });
               }});
  // Generators (graph.range: an integer result has integer bounds, computed exactly).
  t.push_back({"range", R::Range, [](const Decoder &d) -> StatusOr<Built> {
                 const pb::Attribute &start = d.attr("start"), &limit = d.attr("limit"),
                                     &delta = d.attr("delta");
                 const DType dtype = d.results()[0].dtype;
                 kc::RangePlan plan;
                 if (dtype == DType::I64 || dtype == DType::I32) {
                   RP_RETURN_IF_ERROR(decode::checkIntegerRangeBounds(d));
                   RP_ASSIGN_OR_RETURN(plan, kc::planRangeInt(dtype, start.i(), limit.i(),
                                                              delta.i(), shapeOf(d, true, 0)));
                 } else {
                   RP_ASSIGN_OR_RETURN(plan, kc::planRange(dtype, decode::rangeBound(start),
                                                           decode::rangeBound(limit),
                                                           decode::rangeBound(delta),
                                                           shapeOf(d, true, 0)));
                 }
                 return both([plan](const auto &e, const Operands &, const Results &out) {
                   return e.run(plan, out[0]);
                 });
               }});
  t.push_back({"trilu", R::Same, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::TriluPlan plan,
                                     kc::planTrilu(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                   d.i64("k"), d.flag("upper"),
                                                   shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], out[0]);
                 });
               }});
  // Fused transformer ops.
  t.push_back({"swiglu", R::Float, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::SwigluPlan plan,
                                     kc::planSwiglu(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                    shapeOf(d, false, 1), shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], out[0]);
                 });
               }});
  t.push_back({"rope", R::Float, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::RopePlan plan,
                                     kc::planRope(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                  shapeOf(d, false, 1), shapeOf(d, false, 2),
                                                  shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], in[2], out[0]);
                 });
               }});
  t.push_back({"attention", R::Float, [](const Decoder &d) -> StatusOr<Built> {
                 RP_ASSIGN_OR_RETURN(kc::AttentionPlan plan,
                                     kc::planAttention(d.operands()[0].dtype, shapeOf(d, false, 0),
                                                       shapeOf(d, false, 1), shapeOf(d, false, 2),
                                                       d.f64("scale"), d.flag("causal"),
                                                       shapeOf(d, true, 0)));
                 return both([plan](const auto &e, const Operands &in, const Results &out) {
                   return e.run(plan, in[0], in[1], in[2], out[0]);
                 });
               }});
  return t;
}

const CudaImpl *findImpl(std::string_view id) {
  static const std::vector<CudaImpl> impls = buildImpls();
  static const std::unordered_map<std::string_view, const CudaImpl *> index = [] {
    std::unordered_map<std::string_view, const CudaImpl *> m;
    for (const CudaImpl &impl : impls)
      m.emplace(impl.id, &impl);
    return m;
  }();
  auto it = index.find(id);
  return it == index.end() ? nullptr : it->second;
}

} // namespace

std::string cudaErrorText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

Status cudaStatus(cudaError_t error, const std::string &what) {
  if (error == cudaSuccess)
    return okStatus();
  return internal(what + ": " + cudaErrorText(error));
}

StatusOr<CudaKernel> CudaKernel::decode(const pb::Instruction &instruction) {
  CudaKernel k;
  k.id_ = instruction.kernel();
  k.location_ = instruction.location();
  k.where_ = decode::instructionWhere(instruction);
  RP_ASSIGN_OR_RETURN(const kernels::KernelInfo *info, decode::registryEntry(instruction, k.where_));
  const CudaImpl *impl = findImpl(k.id_);
  if (!impl)
    return invalidArgument(k.where_ + ": the CUDA backend has no implementation of this kernel");
  Decoder d(instruction, *info, k.where_, kCudaFloats);
  RP_RETURN_IF_ERROR(decode::checkInstruction(d, impl->rule));
  StatusOr<Built> built = impl->build(d);
  if (!built.ok()) {
    const std::string &m = built.status().message();
    // Planner messages name the op but not the instruction: add the location.
    if (m.rfind(k.where_, 0) == 0)
      return built.status();
    return Status(built.status().code(), k.where_ + ": " + m);
  }
  k.body_ = std::move(built.value().body);
  k.hostBody_ = std::move(built.value().hostBody);
  k.scratchBytes_ = built.value().scratchBytes;
  k.operandTypes_ = std::move(d.operands());
  k.resultTypes_ = std::move(d.results());
  return k;
}

Status CudaKernel::checkCounts(size_t operands, size_t results) const {
  if (operands != operandTypes_.size() || results != resultTypes_.size())
    return invalidArgument(where_ + ": called with " + std::to_string(operands) + " operands and " +
                           std::to_string(results) + " results; the instruction has " +
                           std::to_string(operandTypes_.size()) + " and " +
                           std::to_string(resultTypes_.size()));
  return okStatus();
}

Status CudaKernel::launch(const std::vector<const void *> &operands,
                          const std::vector<void *> &results, const CudaContext &ctx) const {
  RP_RETURN_IF_ERROR(checkCounts(operands.size(), results.size()));
  Status status = body_(operands, results, ctx);
  if (!status.ok())
    return Status(status.code(), where_ + ": " + status.message());
  return okStatus();
}

Status CudaKernel::runOnHost(const std::vector<const void *> &operands,
                             const std::vector<void *> &results, void *scratch) const {
  RP_RETURN_IF_ERROR(checkCounts(operands.size(), results.size()));
  Status status = hostBody_(operands, results, scratch);
  if (!status.ok())
    return Status(status.code(), where_ + ": " + status.message());
  return okStatus();
}

StatusOr<std::vector<CudaInstr>> decodeCudaFunction(const pb::Function &function) {
  std::vector<CudaInstr> body;
  body.reserve(static_cast<size_t>(function.body_size()));
  for (int k = 0; k < function.body_size(); ++k) {
    const pb::Instruction &ins = function.body(k);
    StatusOr<CudaKernel> kernel = CudaKernel::decode(ins);
    if (!kernel.ok())
      return Status(kernel.status().code(), "function '" + function.name() + "' instruction " +
                                                std::to_string(k) + ": " +
                                                kernel.status().message());
    body.push_back(CudaInstr{std::move(kernel).value(),
                             {ins.operands().begin(), ins.operands().end()},
                             {ins.results().begin(), ins.results().end()}});
  }
  return body;
}

} // namespace rp::runtime
