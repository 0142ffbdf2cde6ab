//===- FuzzScratch.h - A scratch directory for file-reading fuzz targets -*- C++ -*-===//
//
// Most of rpc's readers take a path (they stat, map or pread the file), so a fuzz target writes
// its input to a file first and then calls the real reader: the code under test is exactly the
// code a tool runs. One scratch directory per fuzzer process, created on first use under
// $TMPDIR (default /tmp) as rp-fuzz-XXXXXX and removed with its files when the process exits
// normally (a crashing run leaves it behind for inspection).
//
//   const std::string path = rp::fuzz::scratch().write("input.safetensors", data, size);
//
// Plain C++17 (runtime world): no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_FUZZ_FUZZSCRATCH_H
#define RP_FUZZ_FUZZSCRATCH_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace rp::fuzz {

class Scratch {
public:
  Scratch();
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  /// The directory (absolute, no trailing '/').
  const std::string &dir() const { return dir_; }
  /// Writes `size` bytes to dir()/name, replacing the file; returns its path. A harness
  /// failure (the file cannot be written) aborts with a message: it is not a finding.
  std::string write(const std::string &name, const uint8_t *data, size_t size) const;
  std::string write(const std::string &name, const std::string &bytes) const {
    return write(name, reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }

private:
  std::string dir_;
};

/// The process's scratch directory.
Scratch &scratch();

} // namespace rp::fuzz

#endif // RP_FUZZ_FUZZSCRATCH_H
