//===- OptionEnums.cpp - spellings of the enum-valued pass options --------===//

#include "passes/Schedule/OptionEnums.h"

#include "runtime/partition/Partitioner.h"

namespace mlir::rp {

using schedule::RecomputeGrain;
using schedule::UpdateMode;

ArrayRef<OptionName<ComputeDType>> OptionEnum<ComputeDType>::names() {
  static const OptionName<ComputeDType> names[] = {{"f32", ComputeDType::F32},
                                                   {"fp32", ComputeDType::F32},
                                                   {"f16", ComputeDType::F16},
                                                   {"fp16", ComputeDType::F16},
                                                   {"bf16", ComputeDType::BF16}};
  return names;
}

std::string OptionEnum<ComputeDType>::unknown(StringRef name) {
  return "rp-lower-to-schedule: unknown compute dtype '" + name.str() +
         "': expected f32, f16 or bf16";
}

ArrayRef<OptionName<Partitioner>> OptionEnum<Partitioner>::names() {
  static const OptionName<Partitioner> names[] = {{"auto", Partitioner::Auto},
                                                  {"roundpipe", Partitioner::RoundPipe},
                                                  {"exact", Partitioner::Exact}};
  return names;
}

std::string OptionEnum<Partitioner>::unknown(StringRef name) {
  // The partition library's message for the algorithms it knows.
  return ::rp::partition::parsePartitionAlgorithm(name.str()).status().message() + " (or auto)";
}

ArrayRef<OptionName<UpdateMode>> OptionEnum<UpdateMode>::names() {
  static const OptionName<UpdateMode> names[] = {{"sync", UpdateMode::sync},
                                                 {"async", UpdateMode::async}};
  return names;
}

std::string OptionEnum<UpdateMode>::unknown(StringRef name) {
  return "rp-lower-to-schedule: unknown update mode '" + name.str() + "': expected sync or async";
}

ArrayRef<OptionName<RecomputeGrain>> OptionEnum<RecomputeGrain>::names() {
  static const OptionName<RecomputeGrain> names[] = {{"stage", RecomputeGrain::stage},
                                                     {"layer", RecomputeGrain::layer}};
  return names;
}

std::string OptionEnum<RecomputeGrain>::unknown(StringRef name) {
  return "rp-lower-to-schedule: unknown recomputation grain '" + name.str() +
         "': expected stage or layer";
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ComputeDType value) {
  return os << optionNameOf(value);
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, Partitioner value) {
  return os << optionNameOf(value);
}

} // namespace mlir::rp
