//===- KernelDispatch.cpp - Plan instructions onto the CPU reference kernels ----===//
//
// One table entry per kernel id: the dtype rule checked at decode time and a builder that
// parses the attributes and returns the bound kernel call. The calls follow
// dialects/Graph/Eval/Evaluator.cpp (evaluateOp) case by case.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/KernelDispatch.h"

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

constexpr const char *kFp32Only = "the CPU backend runs fp32 plans; compile with --dtype fp32";

std::string typeText(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + formatShape(shape);
}
std::string typeText(const TensorSig &t) { return typeText(t.dtype, t.shape); }

/// What a plan attribute holds, for messages.
const char *attrValueName(pb::Attribute::ValueCase c) {
  switch (c) {
  case pb::Attribute::kI:
    return "an int";
  case pb::Attribute::kF:
    return "a float";
  case pb::Attribute::kS:
    return "a string";
  case pb::Attribute::kInts:
    return "ints";
  case pb::Attribute::kB:
    return "a bool";
  case pb::Attribute::VALUE_NOT_SET:
    break;
  }
  return "no value";
}

bool attrKindMatches(AttrKind kind, pb::Attribute::ValueCase c) {
  switch (kind) {
  case AttrKind::Int:
    return c == pb::Attribute::kI;
  case AttrKind::Float:
    return c == pb::Attribute::kF;
  case AttrKind::String:
    return c == pb::Attribute::kS;
  case AttrKind::Ints:
    return c == pb::Attribute::kInts;
  case AttrKind::Bool:
    return c == pb::Attribute::kB;
  case AttrKind::IntOrFloat:
    return c == pb::Attribute::kI || c == pb::Attribute::kF;
  }
  return false;
}

/// The dtypes a kernel takes, checked when decoding (the kernels check shapes when they run).
enum class DTypeRule {
  Same,         ///< every operand and result has one dtype (data movement: any dtype)
  Float,        ///< every operand and result is f32
  Numeric,      ///< every operand and result has one dtype, f32, i64 or i32 (not i1)
  Bool,         ///< every operand and result is i1
  Compare,      ///< the operands have one dtype; the result is i1
  Where,        ///< operand 0 is i1; operands 1, 2 and the result have one dtype
  Cast,         ///< any dtypes
  Indexed,      ///< operand 0 and the result have one dtype; operand 1 (indices) is i64 or i32
  FloatIndexed, ///< as Indexed with operand 0 and the result f32 (scatters, cross_entropy)
  Range,        ///< the result is f32, i64 or i32
};

/// The instruction being decoded: its types and checked attributes, and the message prefix.
class Decoder {
public:
  Decoder(const pb::Instruction &ins, const KernelInfo &info, std::string where)
      : ins_(ins), info_(info), where_(std::move(where)) {}

  Status fail(const std::string &what) const { return invalidArgument(where_ + ": " + what); }

  const pb::Instruction &instruction() const { return ins_; }
  const KernelInfo &info() const { return info_; }
  std::vector<TensorSig> &operands() { return operands_; }
  std::vector<TensorSig> &results() { return results_; }
  const std::vector<TensorSig> &operands() const { return operands_; }
  const std::vector<TensorSig> &results() const { return results_; }

  /// Converts the operand and result types; f16/bf16 are rejected here.
  Status decodeTypes() {
    auto convert = [&](const pb::BufferRef &ref, const std::string &what,
                       std::vector<TensorSig> &out) -> Status {
      std::optional<DType> dtype = fromPlanDType(ref.type().dtype());
      std::vector<int64_t> shape(ref.type().shape().begin(), ref.type().shape().end());
      if (!dtype)
        return fail(what + " has an unknown dtype (" + std::to_string(ref.type().dtype()) +
                    "); expected f32, i64, i32 or i1");
      if (*dtype == DType::F16 || *dtype == DType::BF16)
        return fail(what + " is " + typeText(*dtype, shape) + ": " + kFp32Only);
      for (int64_t d : shape)
        if (d < 0)
          return fail(what + " has a negative dimension: " + formatShape(shape));
      out.push_back(TensorSig{*dtype, std::move(shape)});
      return okStatus();
    };
    for (int j = 0; j < ins_.operands_size(); ++j)
      RP_RETURN_IF_ERROR(convert(ins_.operands(j), "operand " + std::to_string(j), operands_));
    for (int j = 0; j < ins_.results_size(); ++j)
      RP_RETURN_IF_ERROR(convert(ins_.results(j), "result " + std::to_string(j), results_));
    return okStatus();
  }

  /// Every required attribute present, every present one of the registry's kind, no unknown
  /// names (the plan validator's rules, repeated so that decode stands alone).
  Status checkAttributes() const {
    for (const AttrSpec &spec : info_.attrs) {
      auto it = ins_.attrs().find(std::string(spec.name));
      if (it == ins_.attrs().end()) {
        if (spec.required)
          return fail("missing required attribute '" + std::string(spec.name) + "' (" +
                      kernels::attrKindName(spec.kind) + ")");
        continue;
      }
      if (!attrKindMatches(spec.kind, it->second.value_case()))
        return fail("attribute '" + std::string(spec.name) + "' holds " +
                    attrValueName(it->second.value_case()) + ", expected " +
                    kernels::attrKindName(spec.kind));
    }
    std::vector<std::string> names;
    for (const auto &entry : ins_.attrs())
      names.push_back(entry.first);
    std::sort(names.begin(), names.end()); // report the same name whatever the map order
    for (const std::string &name : names)
      if (!info_.findAttr(name)) {
        std::string takes;
        for (const AttrSpec &spec : info_.attrs)
          takes += (takes.empty() ? "" : ", ") + std::string(spec.name);
        return fail("unknown attribute '" + name + "' (the kernel takes " +
                    (takes.empty() ? std::string("none") : takes) + ")");
      }
    return okStatus();
  }

  // Attribute getters; checkAttributes has run, so required attributes exist with their kind.
  const pb::Attribute &attr(std::string_view name) const {
    return ins_.attrs().at(std::string(name));
  }
  int64_t i64(std::string_view name) const { return attr(name).i(); }
  double f64(std::string_view name) const { return attr(name).f(); }
  std::vector<int64_t> ints(std::string_view name) const {
    const auto &v = attr(name).ints().values();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  /// An optional bool (a UnitAttr): absent = false.
  bool flag(std::string_view name) const {
    auto it = ins_.attrs().find(std::string(name));
    return it != ins_.attrs().end() && it->second.b();
  }
  /// An enum keyword, looked up in `keywords`.
  template <typename E>
  StatusOr<E> keyword(std::string_view name,
                      std::initializer_list<std::pair<std::string_view, E>> keywords) const {
    const std::string &text = attr(name).s();
    std::string known;
    for (const auto &[word, value] : keywords) {
      if (text == word)
        return value;
      known += (known.empty() ? "" : ", ") + std::string(word);
    }
    return fail("attribute '" + std::string(name) + "' is '" + text + "'; expected one of " +
                known);
  }

  /// Checks the operand and result dtypes against `rule`.
  Status checkDTypes(DTypeRule rule) const {
    auto item = [&](bool result, size_t j) {
      const TensorSig &t = result ? results_[j] : operands_[j];
      return std::string(result ? "result " : "operand ") + std::to_string(j) + " is " +
             typeText(t);
    };
    // Every operand in [first, ...) and result has operand first's dtype (or result 0's when
    // there is no such operand).
    auto allSame = [&](size_t first) -> Status {
      const DType want = first < operands_.size() ? operands_[first].dtype : results_[0].dtype;
      for (size_t j = first; j < operands_.size(); ++j)
        if (operands_[j].dtype != want)
          return fail(item(false, j) + "; expected " + dtypeName(want) + " like operand " +
                      std::to_string(first));
      for (size_t j = 0; j < results_.size(); ++j)
        if (results_[j].dtype != want)
          return fail(item(true, j) + "; expected " + dtypeName(want) + " like operand " +
                      std::to_string(first));
      return okStatus();
    };
    auto every = [&](DType want, const char *why) -> Status {
      for (size_t j = 0; j < operands_.size(); ++j)
        if (operands_[j].dtype != want)
          return fail(item(false, j) + "; the kernel takes " + why);
      for (size_t j = 0; j < results_.size(); ++j)
        if (results_[j].dtype != want)
          return fail(item(true, j) + "; the kernel takes " + why);
      return okStatus();
    };
    auto indices = [&](size_t j) -> Status {
      if (operands_[j].dtype != DType::I64 && operands_[j].dtype != DType::I32)
        return fail(item(false, j) + "; the kernel takes i64 or i32 indices");
      return okStatus();
    };
    switch (rule) {
    case DTypeRule::Same:
      return allSame(0);
    case DTypeRule::Float:
      return every(DType::F32, "f32 (the CPU backend runs fp32 plans)");
    case DTypeRule::Numeric:
      RP_RETURN_IF_ERROR(allSame(0));
      if (results_[0].dtype == DType::I1)
        return fail(item(true, 0) + "; the kernel takes f32, i64 or i32");
      return okStatus();
    case DTypeRule::Bool:
      return every(DType::I1, "i1");
    case DTypeRule::Compare:
      if (operands_[1].dtype != operands_[0].dtype)
        return fail(item(false, 1) + "; expected " + dtypeName(operands_[0].dtype) +
                    " like operand 0");
      if (results_[0].dtype != DType::I1)
        return fail(item(true, 0) + "; a comparison makes i1");
      return okStatus();
    case DTypeRule::Where:
      if (operands_[0].dtype != DType::I1)
        return fail(item(false, 0) + "; the condition is i1");
      return allSame(1);
    case DTypeRule::Cast:
      return okStatus();
    case DTypeRule::Indexed:
    case DTypeRule::FloatIndexed:
      RP_RETURN_IF_ERROR(indices(1));
      if (rule == DTypeRule::FloatIndexed && operands_[0].dtype != DType::F32)
        return fail(item(false, 0) + "; the kernel takes f32 (the CPU backend runs fp32 plans)");
      if (results_[0].dtype != operands_[0].dtype)
        return fail(item(true, 0) + "; expected " + dtypeName(operands_[0].dtype) +
                    " like operand 0");
      return okStatus();
    case DTypeRule::Range:
      if (results_[0].dtype != DType::F32 && results_[0].dtype != DType::I64 &&
          results_[0].dtype != DType::I32)
        return fail(item(true, 0) + "; the kernel makes f32, i64 or i32");
      return okStatus();
    }
    return okStatus();
  }

private:
  const pb::Instruction &ins_;
  const KernelInfo &info_;
  std::string where_;
  std::vector<TensorSig> operands_, results_;
};

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

/// Slice bounds: axes, starts, ends, steps of one length.
struct SliceAttrs {
  std::vector<int64_t> axes, starts, ends, steps;
};
StatusOr<SliceAttrs> sliceAttrs(const Decoder &d) {
  SliceAttrs s{d.ints("axes"), d.ints("starts"), d.ints("ends"), d.ints("steps")};
  if (s.starts.size() != s.axes.size() || s.ends.size() != s.axes.size() ||
      s.steps.size() != s.axes.size())
    return d.fail("attributes 'axes', 'starts', 'ends' and 'steps' have " +
                  std::to_string(s.axes.size()) + ", " + std::to_string(s.starts.size()) + ", " +
                  std::to_string(s.ends.size()) + " and " + std::to_string(s.steps.size()) +
                  " entries; expected one length");
  return s;
}

std::vector<CpuImpl> buildImpls() {
  using U = cpu::UnaryKind;
  using B = cpu::BinaryKind;
  using R = DTypeRule;
  std::vector<CpuImpl> t;
  // Elementwise unary (Evaluator: unaryKind).
  for (auto [id, kind] :
       std::initializer_list<std::pair<std::string_view, U>>{{"sqrt", U::Sqrt},
                                                             {"reciprocal", U::Reciprocal},
                                                             {"exp", U::Exp},
                                                             {"log", U::Log},
                                                             {"tanh", U::Tanh},
                                                             {"sigmoid", U::Sigmoid},
                                                             {"erf", U::Erf},
                                                             {"silu", U::Silu}})
    t.push_back({id, R::Float, unaryBuilder(kind)});
  t.push_back({"neg", R::Numeric, unaryBuilder(U::Neg)});
  t.push_back({"relu", R::Numeric, unaryBuilder(U::Relu)});
  t.push_back({"logical_not", R::Bool, unaryBuilder(U::LogicalNot)});
  t.push_back({"gelu", R::Float, [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(U kind, d.keyword<U>("approximate", {{"exact", U::GeluExact},
                                                                          {"tanh", U::GeluTanh}}));
                 return unaryBuilder(kind)(d);
               }});
  // Elementwise binary (Evaluator: binaryKind).
  for (auto [id, kind] : std::initializer_list<std::pair<std::string_view, B>>{
           {"add", B::Add}, {"sub", B::Sub}, {"mul", B::Mul}, {"div", B::Div}, {"pow", B::Pow}})
    t.push_back({id, R::Numeric, binaryBuilder(kind)});
  t.push_back({"logical_and", R::Bool, binaryBuilder(B::And)});
  t.push_back({"logical_or", R::Bool, binaryBuilder(B::Or)});
  t.push_back({"compare", R::Compare, [](const Decoder &d) -> StatusOr<Body> {
                 RP_ASSIGN_OR_RETURN(B kind, d.keyword<B>("predicate", {{"eq", B::Eq},
                                                                        {"lt", B::Lt},
                                                                        {"le", B::Le},
                                                                        {"gt", B::Gt},
                                                                        {"ge", B::Ge}}));
                 return binaryBuilder(kind)(d);
               }});
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
                 using L = cpu::LossReduction;
                 RP_ASSIGN_OR_RETURN(
                     L reduction, d.keyword<L>("reduction", {{"mean", L::Mean}, {"sum", L::Sum}}));
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
                 RP_ASSIGN_OR_RETURN(SliceAttrs s, sliceAttrs(d));
                 return Body([s = std::move(s)](const Operands &in, const Results &out) {
                   return cpu::slice(*in[0], s.axes, s.starts, s.ends, s.steps, *out[0]);
                 });
               }});
  t.push_back({"split", R::Same, [](const Decoder &d) -> StatusOr<Body> {
                 // cpu::split takes the pieces' sizes from the results; `sizes` must agree.
                 int64_t axis = d.i64("axis");
                 std::vector<int64_t> sizes = d.ints("sizes");
                 if (sizes.size() != d.results().size())
                   return d.fail("attribute 'sizes' has " + std::to_string(sizes.size()) +
                                 " entries; expected one per result (" +
                                 std::to_string(d.results().size()) + ")");
                 for (size_t j = 0; j < sizes.size(); ++j) {
                   const std::vector<int64_t> &shape = d.results()[j].shape;
                   if (axis >= 0 && axis < static_cast<int64_t>(shape.size()) &&
                       shape[static_cast<size_t>(axis)] != sizes[j])
                     return d.fail("result " + std::to_string(j) + " is " +
                                   typeText(d.results()[j]) + "; attribute 'sizes' gives " +
                                   std::to_string(sizes[j]) + " along axis " +
                                   std::to_string(axis));
                 }
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
                 RP_ASSIGN_OR_RETURN(SliceAttrs s, sliceAttrs(d));
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
                   for (const char *name : {"start", "limit", "delta"})
                     if (d.attr(name).value_case() != pb::Attribute::kI)
                       return d.fail("attribute '" + std::string(name) + "' holds " +
                                     attrValueName(d.attr(name).value_case()) +
                                     "; an integer result (" + typeText(d.results()[0]) +
                                     ") needs int start, limit and delta");
                   int64_t s = start.i(), l = limit.i(), dt = delta.i();
                   return Body([s, l, dt](const Operands &, const Results &out) {
                     return cpu::rangeInt(s, l, dt, *out[0]);
                   });
                 }
                 auto value = [](const pb::Attribute &a) {
                   return a.value_case() == pb::Attribute::kI ? static_cast<double>(a.i()) : a.f();
                 };
                 double s = value(start), l = value(limit), dt = value(delta);
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
  k.where_ = "kernel '" + k.id_ + "' at " +
             (k.location_.empty() ? std::string("<unknown location>") : k.location_);
  const KernelInfo *info = kernels::findKernel(k.id_);
  if (!info)
    return invalidArgument(k.where_ + ": unknown kernel id (not in the kernel registry, "
                                      "kernels/Registry.h)");
  const CpuImpl *impl = findImpl(k.id_);
  if (!impl)
    return invalidArgument(k.where_ + ": the CPU backend has no implementation of this kernel");
  Decoder d(instruction, *info, k.where_);
  if (!info->acceptsOperands(instruction.operands_size()) ||
      !info->acceptsResults(instruction.results_size()))
    return d.fail("has " + std::to_string(instruction.operands_size()) + " operands and " +
                  std::to_string(instruction.results_size()) +
                  " results, which the kernel registry does not accept");
  RP_RETURN_IF_ERROR(d.decodeTypes());
  RP_RETURN_IF_ERROR(d.checkAttributes());
  RP_RETURN_IF_ERROR(d.checkDTypes(impl->rule));
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
