//===- ParamPattern.h - regexes over param names ----------------*- C++ -*-===//
//
// Shared by rp-freeze-params and rp-inject-lora: ECMAScript regexes (std::regex), searched in
// param names with std::regex_search.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_GRAPH_PARAMPATTERN_H
#define RP_PASSES_GRAPH_PARAMPATTERN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <regex>
#include <string>

namespace mlir::rp::detail {

/// Compiles `pattern`, or returns std::nullopt and sets `whyNot` to the regex library's
/// message. Never aborts on a bad pattern (ParamPattern.cpp is built with exceptions, the rest
/// of the compiler without).
std::optional<std::regex> compileParamPattern(llvm::StringRef pattern, std::string &whyNot);

/// "a, b, c" for the first `limit` names, then ", ... (N more)"; "(none)" for no names.
std::string joinNamesForMessage(llvm::ArrayRef<llvm::StringRef> names, size_t limit = 20);

} // namespace mlir::rp::detail

#endif // RP_PASSES_GRAPH_PARAMPATTERN_H
