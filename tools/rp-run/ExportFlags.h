//===- ExportFlags.h - The --export-hf group (train, export) -----*- C++ -*-===//
//
// --export-hf DIR and its options (runtime/train/HfExport.h): `rp-run train` exports after
// training when --export-hf is given (its other export flags need it), `rp-run export`
// requires it.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TOOLS_RP_RUN_EXPORTFLAGS_H
#define RP_TOOLS_RP_RUN_EXPORTFLAGS_H

#include "base/Status.h"
#include "runtime/train/HfExport.h"

#include <CLI/CLI.hpp>

#include <string>

namespace rp::rprun {

/// The export group of one subcommand, bound to its HfExportOptions.
class ExportFlags {
public:
  /// Adds the group to `app`, bound to `options`. `required`: --export-hf must be given;
  /// otherwise the group's other flags need it.
  ExportFlags(CLI::App &app, runtime::HfExportOptions &options, bool required);

  /// Completes the options from the flags that need parsing (--export-dtype,
  /// --export-shard-size, --lora-alpha). Errors: InvalidArgument naming the flag.
  Status resolve() const;

private:
  runtime::HfExportOptions &options_;
  std::string dtype_ = "f32", shardSize_;
  double loraAlpha_ = 0;
  CLI::Option *shardSizeOption_ = nullptr, *loraAlphaOption_ = nullptr;
};

} // namespace rp::rprun

#endif // RP_TOOLS_RP_RUN_EXPORTFLAGS_H
