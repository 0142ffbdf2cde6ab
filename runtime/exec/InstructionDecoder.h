//===- InstructionDecoder.h - Checks a plan instruction for a backend -*- C++ -*-===//
//
// The part of decoding a plan instruction (runtime/plan/plan.proto `Instruction`) that every
// backend shares: the operand and result types, the attributes against the kernel registry
// (kernels/Registry.h; required, kinds, no unknown names: runtime/plan/InstructionRules.h),
// enum keywords, and the registry's dtype rule of the kernel. The CPU backend
// (runtime/backends/cpu/KernelDispatch.cpp) runs fp32 only; the CUDA backend
// (runtime/backends/cuda/CudaKernel.cpp) also takes f16 and bf16 for the float kernels:
// FloatPolicy says which. Also the pieces of a backend's kernel table (KernelTable, the
// elementwise ids), the attribute readers both tables share, and the loops around decoding
// (decodeEach, checkCallCounts). Messages start with the decoder's `where` prefix
// ("kernel '<id>' at <location>").
//
// Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_INSTRUCTIONDECODER_H
#define RP_RUNTIME_EXEC_INSTRUCTIONDECODER_H

#include "kernels/OpKinds.h"
#include "kernels/Quantization.h"
#include "kernels/Registry.h"
#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/InstructionRules.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/plan/plan.pb.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rp::runtime {

/// A tensor type of an instruction: its dtype and shape.
struct TensorSig {
  DType dtype;
  std::vector<int64_t> shape;
};

/// Which float dtypes a backend's kernels take.
struct FloatPolicy {
  bool halfFloats = false;       ///< f16 and bf16 accepted wherever f32 is
  const char *fp32Only = "";     ///< when not: why (appended to "operand j is bf16[..]: ")
  const char *fp32Takes = "f32"; ///< when not: what a float kernel takes, for messages
};

namespace decode {

namespace pb = ::rp::plan;
using ::rp::kernels::AttrKind;
using ::rp::kernels::AttrSpec;
using ::rp::kernels::KernelInfo;

inline std::string typeText(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + formatShape(shape);
}
inline std::string typeText(const TensorSig &t) { return typeText(t.dtype, t.shape); }

/// The dtypes a kernel takes (the registry says which rule each kernel follows).
using DTypeRule = kernels::DTypeRule;

/// The instruction being decoded: its types and checked attributes, and the message prefix.
class Decoder {
public:
  Decoder(const pb::Instruction &ins, const KernelInfo &info, std::string where, FloatPolicy floats)
      : ins_(ins), info_(info), where_(std::move(where)), floats_(floats) {}

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
      std::optional<DType> dtype = dtypeOf(ref.type());
      std::vector<int64_t> shape = shapeOf(ref.type());
      if (!dtype)
        return fail(what + " has an unknown dtype (" + std::to_string(ref.type().dtype()) +
                    "); expected f32, i64, i32 or i1");
      if (!floats_.halfFloats && (*dtype == DType::F16 || *dtype == DType::BF16))
        return fail(what + " is " + typeText(*dtype, shape) + ": " + floats_.fp32Only);
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
  /// names (the plan validator's rules, runtime/plan/InstructionRules.h, so that decode
  /// stands alone).
  Status checkAttributes() const {
    if (std::optional<std::string> problem = attributeProblem(info_, ins_, ValueWording::Article))
      return fail(*problem);
    return okStatus();
  }

  // Attribute getters (runtime/plan/Instruction.h); checkAttributes has run, so required
  // attributes exist with their kind.
  const pb::Attribute &attr(std::string_view name) const {
    return ins_.attrs().at(std::string(name));
  }
  int64_t i64(std::string_view name) const { return intAttr(ins_, name); }
  double f64(std::string_view name) const { return floatAttr(ins_, name); }
  std::vector<int64_t> ints(std::string_view name) const { return intsAttr(ins_, name); }
  /// An optional int: `fallback` when absent.
  int64_t i64Or(std::string_view name, int64_t fallback) const {
    return intAttr(ins_, name, fallback);
  }
  /// An optional float: `fallback` when absent.
  double f64Or(std::string_view name, double fallback) const {
    auto it = ins_.attrs().find(std::string(name));
    return it == ins_.attrs().end() ? fallback : it->second.f();
  }
  /// An optional bool (a UnitAttr): absent = false.
  bool flag(std::string_view name) const { return boolAttr(ins_, name); }
  /// An enum keyword, looked up in `keywords`.
  template <typename E>
  StatusOr<E> keyword(std::string_view name,
                      std::initializer_list<std::pair<std::string_view, E>> keywords) const {
    const std::string text = stringAttr(ins_, name);
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
      if (!floats_.halfFloats)
        return every(DType::F32, floats_.fp32Takes);
      RP_RETURN_IF_ERROR(allSame(0));
      if (!isFloat16Or32(results_[0].dtype))
        return fail(item(true, 0) + "; the kernel takes f32, f16 or bf16");
      return okStatus();
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
      if (rule == DTypeRule::FloatIndexed &&
          (floats_.halfFloats ? !isFloat16Or32(operands_[0].dtype)
                              : operands_[0].dtype != DType::F32))
        return fail(item(false, 0) + "; the kernel takes " +
                    (floats_.halfFloats ? "f32, f16 or bf16" : floats_.fp32Takes));
      if (results_[0].dtype != operands_[0].dtype)
        return fail(item(true, 0) + "; expected " + dtypeName(operands_[0].dtype) +
                    " like operand 0");
      return okStatus();
    case DTypeRule::Scatter:
      RP_RETURN_IF_ERROR(indices(1));
      if (operands_[2].dtype != operands_[0].dtype)
        return fail(item(false, 2) + "; expected " + dtypeName(operands_[0].dtype) +
                    " like operand 0");
      if (results_[0].dtype != operands_[0].dtype)
        return fail(item(true, 0) + "; expected " + dtypeName(operands_[0].dtype) +
                    " like operand 0");
      return okStatus();
    case DTypeRule::LinearLoss: {
      RP_RETURN_IF_ERROR(indices(2));
      const DType want = operands_[0].dtype;
      if (floats_.halfFloats ? !isFloat16Or32(want) : want != DType::F32)
        return fail(item(false, 0) + "; the kernel takes " +
                    (floats_.halfFloats ? "f32, f16 or bf16" : floats_.fp32Takes));
      for (size_t j = 1; j < operands_.size(); ++j)
        if (j != 2 && operands_[j].dtype != want)
          return fail(item(false, j) + "; expected " + dtypeName(want) + " like operand 0");
      for (size_t j = 0; j < results_.size(); ++j)
        if (results_[j].dtype != want)
          return fail(item(true, j) + "; expected " + dtypeName(want) + " like operand 0");
      return okStatus();
    }
    case DTypeRule::FloatToIndex:
      if (floats_.halfFloats ? !isFloat16Or32(operands_[0].dtype)
                             : operands_[0].dtype != DType::F32)
        return fail(item(false, 0) + "; the kernel takes " +
                    (floats_.halfFloats ? "f32, f16 or bf16" : floats_.fp32Takes));
      if (results_[0].dtype != DType::I64)
        return fail(item(true, 0) + "; the kernel makes i64 indices");
      return okStatus();
    case DTypeRule::IndexOnly:
      return every(DType::I64, "i64");
    case DTypeRule::Dequantize:
      if (operands_[0].dtype != DType::U8)
        return fail(item(false, 0) + "; the kernel takes u8 quantized storage");
      if (floats_.halfFloats ? !isFloat16Or32(results_[0].dtype)
                             : results_[0].dtype != DType::F32)
        return fail(item(true, 0) + "; the kernel makes " +
                    (floats_.halfFloats ? "f32, f16 or bf16" : floats_.fp32Takes));
      return okStatus();
    case DTypeRule::FloatPairIndexed:
      if (operands_[2].dtype != DType::I64)
        return fail(item(false, 2) + "; the kernel takes i64 positions or offsets");
      if (floats_.halfFloats ? !isFloat16Or32(operands_[0].dtype)
                             : operands_[0].dtype != DType::F32)
        return fail(item(false, 0) + "; the kernel takes " +
                    (floats_.halfFloats ? "f32, f16 or bf16" : floats_.fp32Takes));
      if (operands_[1].dtype != operands_[0].dtype)
        return fail(item(false, 1) + "; expected " + dtypeName(operands_[0].dtype) +
                    " like operand 0");
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
  FloatPolicy floats_;
  std::vector<TensorSig> operands_, results_;

  static bool isFloat16Or32(DType d) {
    return d == DType::F32 || d == DType::F16 || d == DType::BF16;
  }
};

//===--- what both backends read from the same attributes -------------------===//

/// "kernel '<id>' at <location>": the prefix of every decode message of `ins`.
inline std::string instructionWhere(const pb::Instruction &ins) {
  return "kernel '" + ins.kernel() + "' at " +
         (ins.location().empty() ? std::string("<unknown location>") : ins.location());
}

/// The registry entry of `ins`'s kernel id. Errors: InvalidArgument "<where>: unknown kernel
/// id ...".
inline StatusOr<const KernelInfo *> registryEntry(const pb::Instruction &ins,
                                                  const std::string &where) {
  const KernelInfo *info = kernels::findKernel(ins.kernel());
  if (!info)
    return invalidArgument(where + ": unknown kernel id (not in the kernel registry, "
                                   "kernels/Registry.h)");
  return info;
}

/// Decodes every instruction of `function` in order, decodeOne(instruction) -> StatusOr<T>.
/// Errors: the first error, its code kept, prefixed with "function '<name>' instruction <k>: "
/// (k is the 0-based index in `body`).
template <typename T, typename DecodeOne>
StatusOr<std::vector<T>> decodeEach(const pb::Function &function, DecodeOne decodeOne) {
  std::vector<T> body;
  body.reserve(static_cast<size_t>(function.body_size()));
  for (int k = 0; k < function.body_size(); ++k) {
    StatusOr<T> decoded = decodeOne(function.body(k));
    if (!decoded.ok())
      return Status(decoded.status().code(), "function '" + function.name() + "' instruction " +
                                                 std::to_string(k) + ": " +
                                                 decoded.status().message());
    body.push_back(std::move(decoded).value());
  }
  return body;
}

/// A decoded instruction called with `operands` and `results` pointers: InvalidArgument
/// "<where>: called with 2 operands and 1 results; the instruction has 3 and 1" unless the
/// counts are the instruction's.
inline Status checkCallCounts(const std::string &where, size_t operands, size_t results,
                              size_t instructionOperands, size_t instructionResults) {
  if (operands == instructionOperands && results == instructionResults)
    return okStatus();
  return invalidArgument(where + ": called with " + std::to_string(operands) + " operands and " +
                         std::to_string(results) + " results; the instruction has " +
                         std::to_string(instructionOperands) + " and " +
                         std::to_string(instructionResults));
}

/// The checks every backend makes before binding an instruction: operand and result counts
/// against the registry, the types, the attributes, and the kernel's dtype rule.
inline Status checkInstruction(Decoder &d) {
  const pb::Instruction &ins = d.instruction();
  if (!d.info().acceptsOperands(ins.operands_size()) ||
      !d.info().acceptsResults(ins.results_size()))
    return d.fail("has " + std::to_string(ins.operands_size()) + " operands and " +
                  std::to_string(ins.results_size()) +
                  " results, which the kernel registry does not accept");
  RP_RETURN_IF_ERROR(d.decodeTypes());
  RP_RETURN_IF_ERROR(d.checkAttributes());
  return d.checkDTypes(d.info().dtypes);
}

/// graph.gelu's `approximate` keyword.
inline StatusOr<kernels::UnaryKind> geluKind(const Decoder &d) {
  using U = kernels::UnaryKind;
  return d.keyword<U>("approximate", {{"exact", U::GeluExact}, {"tanh", U::GeluTanh}});
}

/// graph.compare's `predicate` keyword.
inline StatusOr<kernels::BinaryKind> comparePredicate(const Decoder &d) {
  using B = kernels::BinaryKind;
  return d.keyword<B>("predicate",
                      {{"eq", B::Eq}, {"lt", B::Lt}, {"le", B::Le}, {"gt", B::Gt}, {"ge", B::Ge}});
}

/// graph.cross_entropy's `reduction` keyword.
inline StatusOr<kernels::LossReduction> lossReduction(const Decoder &d) {
  using L = kernels::LossReduction;
  return d.keyword<L>("reduction", {{"mean", L::Mean}, {"sum", L::Sum}});
}

/// graph.dequantize's `format` keyword.
inline StatusOr<kernels::QuantFormat> quantFormat(const Decoder &d) {
  using Q = kernels::QuantFormat;
  return d.keyword<Q>("format", {{"nf4", Q::NF4},
                                 {"nf4_fp32_absmax", Q::NF4Fp32Absmax},
                                 {"int8", Q::Int8},
                                 {"fp8", Q::Fp8}});
}

/// Slice bounds (graph.slice, graph.slice_scatter): axes, starts, ends, steps of one length.
struct SliceAttrs {
  std::vector<int64_t> axes, starts, ends, steps;
};
inline StatusOr<SliceAttrs> sliceAttrs(const Decoder &d) {
  SliceAttrs s{d.ints("axes"), d.ints("starts"), d.ints("ends"), d.ints("steps")};
  if (s.starts.size() != s.axes.size() || s.ends.size() != s.axes.size() ||
      s.steps.size() != s.axes.size())
    return d.fail("attributes 'axes', 'starts', 'ends' and 'steps' have " +
                  std::to_string(s.axes.size()) + ", " + std::to_string(s.starts.size()) + ", " +
                  std::to_string(s.ends.size()) + " and " + std::to_string(s.steps.size()) +
                  " entries; expected one length");
  return s;
}

/// graph.split: the `sizes` attribute has one entry per result, each the result's extent
/// along `axis` (the kernels take the pieces' sizes from the results).
inline Status checkSplitSizes(const Decoder &d) {
  const int64_t axis = d.i64("axis");
  const std::vector<int64_t> sizes = d.ints("sizes");
  if (sizes.size() != d.results().size())
    return d.fail("attribute 'sizes' has " + std::to_string(sizes.size()) +
                  " entries; expected one per result (" + std::to_string(d.results().size()) + ")");
  for (size_t j = 0; j < sizes.size(); ++j) {
    const std::vector<int64_t> &shape = d.results()[j].shape;
    if (axis >= 0 && axis < static_cast<int64_t>(shape.size()) &&
        shape[static_cast<size_t>(axis)] != sizes[j])
      return d.fail("result " + std::to_string(j) + " is " + typeText(d.results()[j]) +
                    "; attribute 'sizes' gives " + std::to_string(sizes[j]) + " along axis " +
                    std::to_string(axis));
  }
  return okStatus();
}

/// A backend's one table from kernel id to the builder of its implementation (a function of
/// a checked Decoder), filled once by one function per kernel family and indexed by id.
template <typename Builder> class KernelTable {
public:
  struct Entry {
    std::string_view id;
    Builder build;
  };
  using Entries = std::vector<Entry>;

  /// Runs every function of `families` on the table's entries; ids are unique.
  explicit KernelTable(std::initializer_list<void (*)(Entries &)> families) {
    for (void (*add)(Entries &) : families)
      add(entries_);
    for (const Entry &e : entries_)
      index_.emplace(e.id, &e.build);
  }
  KernelTable(const KernelTable &) = delete;
  KernelTable &operator=(const KernelTable &) = delete;

  /// The builder of `id`, or null when the backend does not implement it.
  const Builder *find(std::string_view id) const {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : it->second;
  }

private:
  Entries entries_;
  std::unordered_map<std::string_view, const Builder *> index_;
};

/// Adds the elementwise kernel ids (unary, gelu, binary arithmetic and logic, compare) to a
/// backend's dispatch table `t` of {id, builder} entries, their builders made by
/// `unary(kind)` and `binary(kind)` (each a function of a Decoder).
template <typename Table, typename UnaryBuilder, typename BinaryBuilder>
void addElementwiseIds(Table &t, UnaryBuilder unary, BinaryBuilder binary) {
  using U = kernels::UnaryKind;
  using B = kernels::BinaryKind;
  // Every kind but gelu's, the comparisons' and mod's is named as its kernel id
  // (kernels/OpKinds.h); mod's `fmod` flag picks Mod or Fmod.
  for (U kind : {U::Sqrt, U::Reciprocal, U::Exp, U::Log, U::Tanh, U::Sigmoid, U::Erf, U::Silu,
                 U::Softplus, U::Floor, U::Cos, U::Sin, U::Neg, U::Relu, U::LogicalNot})
    t.push_back({kernels::unaryKindName(kind), unary(kind)});
  for (B kind : {B::Add, B::Sub, B::Mul, B::Div, B::Pow, B::And, B::Or})
    t.push_back({kernels::binaryKindName(kind), binary(kind)});
  t.push_back({"gelu", [unary](const Decoder &d) -> decltype(unary(U::Sqrt)(d)) {
                 RP_ASSIGN_OR_RETURN(U kind, geluKind(d));
                 return unary(kind)(d);
               }});
  t.push_back({"compare", [binary](const Decoder &d) -> decltype(binary(B::Eq)(d)) {
                 RP_ASSIGN_OR_RETURN(B kind, comparePredicate(d));
                 return binary(kind)(d);
               }});
  t.push_back({"mod", [binary](const Decoder &d) -> decltype(binary(B::Mod)(d)) {
                 return binary(d.flag("fmod") ? B::Fmod : B::Mod)(d);
               }});
}

/// graph.range (Ops.cpp RangeOp::verify): an integer result needs int start, limit and delta.
inline Status checkIntegerRangeBounds(const Decoder &d) {
  for (const char *name : {"start", "limit", "delta"})
    if (d.attr(name).value_case() != pb::Attribute::kI)
      return d.fail("attribute '" + std::string(name) + "' holds " +
                    attrValueName(d.attr(name).value_case(), ValueWording::Article) +
                    "; an integer result (" + typeText(d.results()[0]) +
                    ") needs int start, limit and delta");
  return okStatus();
}

/// A graph.range bound as a double (an int or a float attribute).
inline double rangeBound(const pb::Attribute &a) {
  return a.value_case() == pb::Attribute::kI ? static_cast<double>(a.i()) : a.f();
}

} // namespace decode
} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_INSTRUCTIONDECODER_H
