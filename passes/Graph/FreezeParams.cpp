//===- FreezeParams.cpp - freeze params by name ---------------------------===//
//
// rp-freeze-params clears `trainable` on the params whose name matches a regex (ECMAScript,
// searched in the name; passes/Graph/ParamPattern.h).
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Graph/ParamPattern.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <regex>
#include <string>

namespace mlir::rp {

#define GEN_PASS_DEF_FREEZEPARAMS
#include "passes/Graph/Passes.h.inc"

namespace {

struct FreezeParams : impl::FreezeParamsBase<FreezeParams> {
  using FreezeParamsBase::FreezeParamsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (pattern.empty()) {
      emitError(module.getLoc())
          << "rp-freeze-params: 'pattern' is empty; give a regex of the params to freeze "
             "(e.g. pattern=embed_tokens)";
      return signalPassFailure();
    }
    std::string whyNot;
    std::optional<std::regex> regex = detail::compileParamPattern(pattern, whyNot);
    if (!regex) {
      emitError(module.getLoc()) << "rp-freeze-params: bad pattern '" << pattern << "': " << whyNot;
      return signalPassFailure();
    }

    SmallVector<graph::ParamOp> matched;
    SmallVector<StringRef> names;
    for (graph::ParamOp param : module.getOps<graph::ParamOp>()) {
      names.push_back(param.getSymName());
      if (std::regex_search(param.getSymName().str(), *regex))
        matched.push_back(param);
    }
    if (matched.empty()) {
      emitError(module.getLoc()) << "rp-freeze-params: pattern '" << pattern
                                 << "' matches no param; params: "
                                 << detail::joinNamesForMessage(names);
      return signalPassFailure();
    }
    for (graph::ParamOp param : matched)
      param.setTrainable(false);
  }
};

} // namespace
} // namespace mlir::rp
