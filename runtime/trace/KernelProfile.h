//===- KernelProfile.h - Per-instruction time of a run -----------*- C++ -*-===//
//
// What `rp-run --profile-kernels FILE` collects: the time of every plan instruction a backend
// ran, summed per instruction (function + index) and per kernel id, so that a slow step can be
// traced to the kernels that make it slow. The Chrome trace (Trace.h) stops at whole calls (a
// stage's layer function); this goes one level down.
//
// How a backend measures is its own: the CUDA backend brackets each launch with CUDA events
// and synchronises the stream after each call (so a profiled run serialises a worker's calls
// with its copies: the per-kernel times are right, the step time is not the pipeline's); the
// CPU backend reads the steady clock around each kernel.
//
//   KernelProfile profile;
//   backend.setKernelProfile(&profile);          // false: the backend cannot
//   ... run ...
//   profile.add({"block_3_vjp", 12, "matmul", "loc(...)", "bf16[4096,2048] ..."}, 1.2e-3);
//   RP_RETURN_IF_ERROR(profile.write(path));     // JSON, largest first
//   std::fputs(profile.table(10).c_str(), stderr);
//
// Thread-safe: the feeders of several workers add concurrently.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRACE_KERNELPROFILE_H
#define RP_RUNTIME_TRACE_KERNELPROFILE_H

#include "base/Status.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace rp::runtime {

/// One plan instruction, as a profile names it.
struct ProfiledInstruction {
  std::string function;  ///< the plan function's name ("block_3_vjp")
  int index = 0;         ///< the instruction's position in the function
  std::string kernel;    ///< the kernel id ("matmul")
  std::string location;  ///< the instruction's source location (may be empty)
  std::string signature; ///< operand and result types, e.g. "bf16[4096,2048] -> f32[4096]"
};

class KernelProfile {
public:
  /// Adds one run of `instr` that took `seconds`. The descriptive fields of the first add of
  /// an instruction (function, index) are kept.
  void add(const ProfiledInstruction &instr, double seconds);

  /// Seconds over every instruction run.
  double totalSeconds() const;

  /// The profile as JSON: {"total_s", "by_kernel": [{"kernel", "count", "seconds",
  /// "fraction"}], "by_signature": [{"kernel", "signature", "count", "seconds", "fraction"}]
  /// (the same kernel on the same types, over every function: e.g. one projection of every
  /// layer), "by_instruction": [{"function", "index", "kernel", "location", "signature",
  /// "count", "seconds", "fraction"}]}, each list largest first.
  std::string json() const;

  /// Writes json() to `path`. Errors: Internal naming the path when it cannot be written.
  Status write(const std::string &path) const;

  /// A text table of the `top` largest kernel ids, kernel signatures and instructions, with
  /// their share of the total.
  std::string table(int top) const;

private:
  struct Sum {
    int64_t count = 0;
    double seconds = 0;
  };
  struct InstrSum {
    ProfiledInstruction instr;
    Sum sum;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Sum> byKernel_;
  std::map<std::pair<std::string, std::string>, Sum> bySignature_; // (kernel, signature)
  std::map<std::pair<std::string, int>, InstrSum> byInstruction_;
  double total_ = 0;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_TRACE_KERNELPROFILE_H
