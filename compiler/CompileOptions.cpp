//===- CompileOptions.cpp - rpc-compile's flags for the compile options ---===//

#include "compiler/CompileOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <type_traits>

namespace mlir::rp {

namespace cl = llvm::cl;

namespace {

/// The value of an enum flag and the message for an unknown one: the option's (OptionEnums.h),
/// except for --dtype, which rpc-compile checked itself, with its own spellings and words,
/// before the pass did.
template <typename E>
bool lookupFlagValue(StringRef arg, E &value) {
  return lookupOptionName(arg, value);
}
template <typename E>
std::string badFlagValue(StringRef arg) {
  return OptionEnum<E>::unknown(arg);
}
template <>
bool lookupFlagValue<ComputeDType>(StringRef arg, ComputeDType &value) {
  return llvm::is_contained({"bf16", "fp16", "fp32"}, arg) && lookupOptionName(arg, value);
}
template <>
std::string badFlagValue<ComputeDType>(StringRef arg) {
  return ("unknown --dtype '" + arg + "': expected bf16, fp16 or fp32").str();
}

/// The parser of an enum flag: the options' parser (OptionEnums.h), reporting an unknown
/// value through `report` instead of llvm::cl's "for the --x option" line.
template <typename E>
class FlagEnumParser : public cl::parser<E> {
public:
  using cl::parser<E>::parser;

  bool parse(cl::Option &, StringRef, StringRef arg, E &value) {
    if (lookupFlagValue(arg, value))
      return false;
    report(badFlagValue<E>(arg));
    return true;
  }

  std::function<void(const std::string &)> report;
};

} // namespace

CompileCommandLine::CompileCommandLine(CompileOptions &options, StringRef tool,
                                       cl::OptionCategory &training,
                                       cl::OptionCategory &partitioning,
                                       cl::OptionCategory &iteration)
    : tool(tool.str()) {
  cl::OptionCategory *categories[] = {&training, &partitioning, &iteration};
  visitCompileOptions(options, [&](auto &field, const OptionInfo &info) {
    using T = std::decay_t<decltype(field)>;
    cl::OptionCategory &category = *categories[static_cast<int>(info.group)];
    std::unique_ptr<cl::Option> flag;
    if constexpr (std::is_enum_v<T>) {
      auto f = std::make_unique<cl::opt<T, true, FlagEnumParser<T>>>(
          StringRef(info.name), cl::desc(info.description), cl::location(field), cl::cat(category));
      f->getParser().report = [this](const std::string &message) {
        llvm::errs() << this->tool << ": error: " << message << "\n";
        badValue = true;
      };
      flag = std::move(f);
    } else {
      flag = std::make_unique<cl::opt<T, true>>(StringRef(info.name), cl::desc(info.description),
                                                cl::location(field), cl::cat(category));
    }
    if (info.valueName)
      flag->setValueStr(info.valueName);
    flags.push_back(std::move(flag));
  });
}

CompileCommandLine::~CompileCommandLine() {
  for (std::unique_ptr<cl::Option> &flag : flags)
    flag->removeArgument();
}

} // namespace mlir::rp
