//===- ParamPattern.cpp - regexes over param names ------------------------===//
//
// Built with exceptions (passes/Graph/CMakeLists.txt): libstdc++'s std::regex reports a bad pattern
// only by throwing std::regex_error, which is caught here and turned into a message.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/ParamPattern.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::rp::detail {

std::optional<std::regex> compileParamPattern(llvm::StringRef pattern, std::string &whyNot) {
  try {
    return std::regex(pattern.str(), std::regex::ECMAScript);
  } catch (const std::regex_error &e) {
    whyNot = e.what();
    return std::nullopt;
  }
}

std::string joinNamesForMessage(llvm::ArrayRef<llvm::StringRef> names, size_t limit) {
  if (names.empty())
    return "(none)";
  std::string out;
  for (auto [i, name] : llvm::enumerate(names)) {
    if (i == limit) {
      out += ", ... (" + std::to_string(names.size() - limit) + " more)";
      break;
    }
    if (i)
      out += ", ";
    out += name.str();
  }
  return out;
}

} // namespace mlir::rp::detail
