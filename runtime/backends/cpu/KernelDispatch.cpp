//===- KernelDispatch.cpp - Plan instructions onto the CPU reference kernels ----===//
//
// One table entry per kernel id: the dtype rule checked at decode time and a builder that
// parses the attributes and returns the bound kernel call. The calls follow
// dialects/Graph/Eval/Evaluator.cpp (evaluateOp) case by case.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/KernelDispatch.h"

#include "runtime/exec/InstructionDecoder.h"

#include "kernels/Registry.h"
#include "kernels/cpu/Kernels.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/plan/plan.pb.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace rp::runtime {
namespace {

namespace cpu = ::rp::kernels::cpu;
namespace pb = ::rp::plan;
using ::rp::kernels::AttrKind;
using ::rp::kernels::AttrSpec;
using ::rp::kernels::KernelInfo;
using Body = CpuKernel::Body;
using TensorSig = CpuKernel::TensorSig;
using Operands = std::vector<const HostTensor *>;
using Results = std::vector<HostTensor *>;

constexpr FloatPolicy kCpuFloats{false,
                                "the CPU backend runs fp32 plans; compile with --dtype fp32",
                                "f32 (the CPU backend runs fp32 plans)"};

using decode::Decoder;
using decode::DTypeRule;
using decode::typeText;

using Builder = std::function<StatusOr<Body>(const Decoder &)>;

/// One kernel id the CPU backend implements.
struct CpuImpl {
  std::string_view id;
  DTypeRule rule;
  Builder build;
};

Builder unaryBuilder(cpu::UnaryKind kind) {
  return [kind](const Decoder &) -> StatusOr<Body> {
    return Body([kind](const Operands &in, const Results &out) {
      return cpu::unary(kind, *in[0], *out[0]);
    });
  };
}

Builder binaryBuilder(cpu::BinaryKind kind) {
  return [kind](const Decoder &) -> StatusOr<Body> {
    return Body([kind](const Operands &in, const Results &out) {
      return cpu::binary(kind, *in[0], *in[1], *out[0]);
    });
  };
}

Builder reduceBuilder(cpu::ReduceKind kind) {
  return [kind](const Decoder &d) -> StatusOr<Body> {
    std::vector<int64_t> axes = d.ints("axes");
    bool keepdims = d.flag("keepdims");
    return Body([kind, axes = std::move(axes), keepdims](const Operands &in, const Results &out) {
      return cpu::reduce(kind, *in[0], axes, keepdims, *out[0]);
    });
  };
}

Builder softmaxBuilder(bool log) {
  return [log](const Decoder &d) -> StatusOr<Body> {
    int64_t axis = d.i64("axis");
    return Body([axis, log](const Operands &in, const Results &out) {
      return cpu::softmax(*in[0], axis, log, *out[0]);
    });
  };
}

/// A kernel taking (operand 0, operand 1, axis, result 0): gathers and scatters.
template <Status (*Kernel)(const HostTensor &, const HostTensor &, int64_t, HostTensor &)>
StatusOr<Body> axisPairBody(const Decoder &d) {
  int64_t axis = d.i64("axis");
  return Body([axis](const Operands &in, const Results &out) {
    return Kernel(*in[0], *in[1], axis, *out[0]);
  });
}

std::vector<CpuImpl> buildImpls() {
  using R = DTypeRule;
  std::vector<CpuImpl> t;
  // Elementwise unary and binary (Evaluator: unaryKind, binaryKind).
  decode::addElementwiseIds(t, unaryBuilder, binaryBuilder);
  t.push_back({"where", R::Where, [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::where(*in[0], *in[1], *in[2], *out[0]);
                 });
               }});
  t.push_back({"cast", R::Cast, [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::cast(*in[0], *out[0]);
                 });
               }});
  // Contractions, reductions, normalisations.
  t.push_back({"matmul", R::Numeric, [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::matmul(*in[0], *in[1], *out[0]);
                 });
               }});
  t.push_back({"reduce_sum", R::Numeric, reduceBuilder(cpu::ReduceKind::Sum)});
  t.push_back({"reduce_mean", R::Numeric, reduceBuilder(cpu::ReduceKind::Mean)});
  t.push_back({"reduce_max", R::Numeric, reduceBuilder(cpu::ReduceKind::Max)});
  t.push_back({"softmax", R::Float, softmaxBuilder(/*log=*/false)});
  t.push_back({"log_softmax", R::Float, softmaxBuilder(/*log=*/true)});
  t.push_back({"layer_norm", R::Float, [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 double epsilon = d.f64("epsilon");
                 return Body([axis, epsilon](const Operands &in, const Results &out) {
                   return cpu::layerNorm(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr, axis,
                                         epsilon, *out[0]);
                 });
               }});
  t.push_back({"rms_norm", R::Float, [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 double epsilon = d.f64("epsilon");
                 return Body([axis, epsilon](const Operands &in, const Results &out) {
                   return cpu::rmsNorm(*in[0], *in[1], axis, epsilon, *out[0]);
                 });
               }});
  t.push_back({"cross_entropy", R::FloatIndexed, [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(cpu::LossReduction reduction, decode::lossReduction(d));
                 int64_t ignoreIndex = d.i64("ignore_index");
                 return Body([reduction, ignoreIndex](const Operands &in, const Results &out) {
                   return cpu::crossEntropy(*in[0], *in[1], ignoreIndex, reduction, *out[0]);
                 });
               }});
  // Shape ops.
  auto copyBody = [](const Decoder &) -> StatusOr<Body> {
    return Body(
        [](const Operands &in, const Results &out) { return cpu::copyInto(*in[0], *out[0]); });
  };
  t.push_back({"reshape", R::Same, copyBody});
  t.push_back({"transpose", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 std::vector<int64_t> perm = d.ints("permutation");
                 return Body([perm = std::move(perm)](const Operands &in, const Results &out) {
                   return cpu::transpose(*in[0], perm, *out[0]);
                 });
               }});
  t.push_back({"expand", R::Same, [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::expand(*in[0], *out[0]);
                 });
               }});
  t.push_back({"concat", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 int64_t axis = d.i64("axis");
                 return Body([axis](const Operands &in, const Results &out) {
                   return cpu::concat(in, axis, *out[0]);
                 });
               }});
  t.push_back({"slice", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
                 return Body([s = std::move(s)](const Operands &in, const Results &out) {
                   return cpu::slice(*in[0], s.axes, s.starts, s.ends, s.steps, *out[0]);
                 });
               }});
  t.push_back({"split", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 // cpu::split takes the pieces' sizes from the results; `sizes` must agree.
                 RP_RETURN_IF_ERROR(decode::checkSplitSizes(d));
                 int64_t axis = d.i64("axis");
                 return Body([axis](const Operands &in, const Results &out) {
                   return cpu::split(*in[0], axis, out);
                 });
               }});
  t.push_back({"gather", R::Indexed, axisPairBody<cpu::gather>});
  t.push_back({"gather_elements", R::Indexed, axisPairBody<cpu::gatherElements>});
  // Scatters.
  t.push_back({"scatter_add", R::FloatIndexed, axisPairBody<cpu::scatterAdd>});
  t.push_back({"scatter_elements_add", R::FloatIndexed, axisPairBody<cpu::scatterElementsAdd>});
  t.push_back({"slice_scatter", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(decode::SliceAttrs s, decode::sliceAttrs(d));
                 return Body([s = std::move(s)](const Operands &in, const Results &out) {
                   return cpu::sliceScatter(*in[0], s.axes, s.starts, s.ends, s.steps, *out[0]);
                 });
               }});
  // Generators. graph.range (Ops.cpp RangeOp::verify): an integer result has integer bounds
  // and is computed exactly (rangeInt, which also checks the length); a float result takes
  // int or float bounds as doubles (Evaluator's RangeOp case).
  t.push_back({"range", R::Range, [](const Decoder &d) -> StatusOr<Body> {
                 const pb::Attribute &start = d.attr("start"), &limit = d.attr("limit"),
                                     &delta = d.attr("delta");
                 if (d.results()[0].dtype != DType::F32) {
                   RP_RETURN_IF_ERROR(decode::checkIntegerRangeBounds(d));
                   int64_t s = start.i(), l = limit.i(), dt = delta.i();
                   return Body([s, l, dt](const Operands &, const Results &out) {
                     return cpu::rangeInt(s, l, dt, *out[0]);
                   });
                 }
                 double s = decode::rangeBound(start), l = decode::rangeBound(limit),
                        dt = decode::rangeBound(delta);
                 return Body([s, l, dt](const Operands &, const Results &out) {
                   return cpu::range(s, l, dt, *out[0]);
                 });
               }});
  t.push_back({"trilu", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 int64_t k = d.i64("k");
                 bool upper = d.flag("upper");
                 return Body([k, upper](const Operands &in, const Results &out) {
                   return cpu::trilu(*in[0], k, upper, *out[0]);
                 });
               }});
  // Fused ops.
  t.push_back({"swiglu", R::Float, [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::swiglu(*in[0], *in[1], *out[0]);
                 });
               }});
  t.push_back({"rope", R::Float, [](const Decoder &) -> StatusOr<Body> {
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::rope(*in[0], *in[1], *in[2], *out[0]);
                 });
               }});
  t.push_back({"attention", R::Float, [](const Decoder &d) -> StatusOr<Body> {
                 double scale = d.f64("scale");
                 bool causal = d.flag("causal");
                 return Body([scale, causal](const Operands &in, const Results &out) {
                   return cpu::attention(*in[0], *in[1], *in[2], scale, causal, *out[0]);
                 });
               }});
  // Not a graph op: copies operand 0 into result 0 (the same type).
  t.push_back({"copy", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 if (d.results()[0].shape != d.operands()[0].shape)
                   return d.fail("result 0 is " + typeText(d.results()[0]) +
                                 "; a copy has its operand's type (" + typeText(d.operands()[0]) +
                                 ")");
                 return Body([](const Operands &in, const Results &out) {
                   return cpu::copyInto(*in[0], *out[0]);
                 });
               }});
  return t;
}

/// The CPU implementation of `id`, or null.
const CpuImpl *findImpl(std::string_view id) {
  static const std::vector<CpuImpl> impls = buildImpls();
  static const std::unordered_map<std::string_view, const CpuImpl *> index = [] {
    std::unordered_map<std::string_view, const CpuImpl *> m;
    for (const CpuImpl &impl : impls)
      m.emplace(impl.id, &impl);
    return m;
  }();
  auto it = index.find(id);
  return it == index.end() ? nullptr : it->second;
}

bool sameType(const HostTensor &t, const TensorSig &sig) {
  return t.dtype() == sig.dtype && t.shape() == sig.shape;
}

} // namespace

StatusOr<CpuKernel> CpuKernel::decode(const pb::Instruction &instruction) {
  CpuKernel k;
  k.id_ = instruction.kernel();
  k.location_ = instruction.location();
  k.where_ = decode::instructionWhere(instruction);
  RP_ASSIGN_OR_RETURN(const KernelInfo *info, decode::registryEntry(instruction, k.where_));
  const CpuImpl *impl = findImpl(k.id_);
  if (!impl)
    return invalidArgument(k.where_ + ": the CPU backend has no implementation of this kernel");
  Decoder d(instruction, *info, k.where_, kCpuFloats);
  RP_RETURN_IF_ERROR(decode::checkInstruction(d, impl->rule));
  RP_ASSIGN_OR_RETURN(k.body_, impl->build(d));
  k.operandTypes_ = std::move(d.operands());
  k.resultTypes_ = std::move(d.results());
  return k;
}

Status CpuKernel::run(const std::vector<const HostTensor *> &operands,
                      const std::vector<HostTensor *> &results) const {
  if (operands.size() != operandTypes_.size() || results.size() != resultTypes_.size())
    return invalidArgument(where_ + ": called with " + std::to_string(operands.size()) +
                           " operands and " + std::to_string(results.size()) +
                           " results; the instruction has " + std::to_string(operandTypes_.size()) +
                           " and " + std::to_string(resultTypes_.size()));
  for (size_t j = 0; j < operands.size(); ++j)
    if (!operands[j] || !sameType(*operands[j], operandTypes_[j]))
      return invalidArgument(where_ + ": operand " + std::to_string(j) + " is " +
                             (operands[j] ? operands[j]->typeString() : std::string("null")) +
                             "; the instruction's buffer is " + typeText(operandTypes_[j]));
  for (size_t j = 0; j < results.size(); ++j)
    if (!results[j] || !sameType(*results[j], resultTypes_[j]))
      return invalidArgument(where_ + ": result " + std::to_string(j) + " is " +
                             (results[j] ? results[j]->typeString() : std::string("null")) +
                             "; the instruction's buffer is " + typeText(resultTypes_[j]));
  Status status = body_(operands, results);
  if (!status.ok())
    return Status(status.code(), where_ + ": " + status.message());
  return okStatus();
}

StatusOr<std::vector<CpuKernel>> decodeFunction(const pb::Function &function) {
  std::vector<CpuKernel> body;
  body.reserve(static_cast<size_t>(function.body_size()));
  for (int k = 0; k < function.body_size(); ++k) {
    StatusOr<CpuKernel> kernel = CpuKernel::decode(function.body(k));
    if (!kernel.ok())
      return Status(kernel.status().code(), "function '" + function.name() + "' instruction " +
                                                std::to_string(k) + ": " +
                                                kernel.status().message());
    body.push_back(std::move(kernel).value());
  }
  return body;
}

} // namespace rp::runtime
