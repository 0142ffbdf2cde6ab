//===- OptionEnums.h - the enum-valued options of rpc's passes ---*- C++ -*-===//
//
// The typed values of rp-lower-to-schedule's `dtype`, `update` and `recompute` and of
// rp-partition-stages' `partitioner`, and their llvm::cl parser (one specialization of
// llvm::cl::parser per enum), which pass options, pipeline options (compiler/Pipeline.h) and
// rpc-compile's flags (compiler/CompileOptions.h) all use. A bad value is reported with the
// message the passes gave when they checked the strings themselves.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_SCHEDULE_OPTIONENUMS_H
#define RP_PASSES_SCHEDULE_OPTIONENUMS_H

#include "dialects/Schedule/IR/ScheduleDialect.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::rp {

/// Compute dtype of weights and activations (rp-lower-to-schedule's `dtype`).
enum class ComputeDType { F32, F16, BF16 };

/// The stage partitioner (rp-partition-stages' `partitioner`): `Auto` runs both and keeps the
/// plan with the lower estimated step time.
enum class Partitioner { Auto, RoundPipe, Exact };

/// One accepted spelling of an enum option's value.
template <typename E>
struct OptionName {
  const char *name;
  E value;
};

/// The spellings of an enum option's values (the first one of a value is how it prints), the
/// placeholder --help shows, and the message for an unknown spelling. Specialized below for
/// every enum the parser handles.
template <typename E>
struct OptionEnum;

template <>
struct OptionEnum<ComputeDType> {
  static ArrayRef<OptionName<ComputeDType>> names();
  static constexpr const char *placeholder = "bf16|fp16|fp32";
  static std::string unknown(StringRef name);
};

template <>
struct OptionEnum<Partitioner> {
  static ArrayRef<OptionName<Partitioner>> names();
  static constexpr const char *placeholder = "roundpipe|exact|auto";
  static std::string unknown(StringRef name);
};

template <>
struct OptionEnum<schedule::UpdateMode> {
  static ArrayRef<OptionName<schedule::UpdateMode>> names();
  static constexpr const char *placeholder = "sync|async";
  static std::string unknown(StringRef name);
};

template <>
struct OptionEnum<schedule::RecomputeGrain> {
  static ArrayRef<OptionName<schedule::RecomputeGrain>> names();
  static constexpr const char *placeholder = "stage|layer";
  static std::string unknown(StringRef name);
};

/// The value spelled `name`, or false.
template <typename E>
bool lookupOptionName(StringRef name, E &value) {
  for (const OptionName<E> &n : OptionEnum<E>::names())
    if (name == n.name) {
      value = n.value;
      return true;
    }
  return false;
}

/// The first spelling of `value` (how options print it).
template <typename E>
StringRef optionNameOf(E value) {
  for (const OptionName<E> &n : OptionEnum<E>::names())
    if (n.value == value)
      return n.name;
  llvm_unreachable("an enum value without a spelling");
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ComputeDType value);
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, Partitioner value);

/// The llvm::cl parser of an OptionEnum type: the spellings of OptionEnum<E>::names(); an
/// unknown one is an error with OptionEnum<E>::unknown's message (Option::error prints it).
template <typename E>
class EnumOptionParser : public llvm::cl::basic_parser<E> {
public:
  using llvm::cl::basic_parser<E>::basic_parser;

  bool parse(llvm::cl::Option &option, StringRef, StringRef arg, E &value) {
    if (lookupOptionName(arg, value))
      return false;
    return option.error(OptionEnum<E>::unknown(arg));
  }

  StringRef getValueName() const override { return OptionEnum<E>::placeholder; }

  /// `--print-options`: the value and the default, as llvm::cl prints its basic types.
  void printOptionDiff(const llvm::cl::Option &option, E value,
                       const llvm::cl::OptionValue<E> &defaultValue, size_t globalWidth) const {
    this->printOptionName(option, globalWidth);
    llvm::outs() << "= " << optionNameOf(value) << " (default: ";
    if (defaultValue.hasValue())
      llvm::outs() << optionNameOf(defaultValue.getValue());
    else
      llvm::outs() << "*no default*";
    llvm::outs() << ")\n";
  }
};

} // namespace mlir::rp

namespace llvm::cl {
template <>
class parser<mlir::rp::ComputeDType> : public mlir::rp::EnumOptionParser<mlir::rp::ComputeDType> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::rp::Partitioner> : public mlir::rp::EnumOptionParser<mlir::rp::Partitioner> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::rp::schedule::UpdateMode>
    : public mlir::rp::EnumOptionParser<mlir::rp::schedule::UpdateMode> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::rp::schedule::RecomputeGrain>
    : public mlir::rp::EnumOptionParser<mlir::rp::schedule::RecomputeGrain> {
public:
  using EnumOptionParser::EnumOptionParser;
};
} // namespace llvm::cl

#endif // RP_PASSES_SCHEDULE_OPTIONENUMS_H
